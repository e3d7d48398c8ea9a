//! One request in the engine's hands: its sequence, the prompt still to
//! read, the tokens it generated, and its sampler. Each engine step it puts
//! its next piece into the shared batch (a prompt chunk, or the token it
//! chose last, with the decision's fixed text after it) and, once the
//! batch is evaluated, chooses its next token from its row of logits.

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;

use super::decode::{fail, Sampler, FORCED_MAX, PROMPT_CHUNK};
use super::Job;
use hermes_core::llm::jump_forward::Template;
use hermes_core::llm::{ChatResponse, LlmError, Usage};

/// A request being answered on sequence `seq`.
pub(super) struct Active {
    pub job: Job,
    pub seq: usize,
    /// The prompt, then every generated token once evaluated: what the
    /// sequence holds up to `evaluated`.
    tokens: Vec<LlamaToken>,
    prompt_len: usize,
    evaluated: usize,
    reused: usize,
    sampler: Sampler,
    output: Vec<u8>,
    generated: u64,
    /// The token chosen last and the fixed text fed after it, to be
    /// evaluated in the next step.
    pending: Vec<LlamaToken>,
    /// The decision's fixed text, when the request is a decision decoded
    /// under its grammar (see [`hermes_core::llm::jump_forward`]).
    template: Option<Template>,
    /// This request's row of logits in the batch just built.
    row: Option<i32>,
}

impl Active {
    /// A request whose sequence already holds `tokens[..reused]`.
    pub fn new(
        job: Job,
        seq: usize,
        tokens: Vec<LlamaToken>,
        reused: usize,
        sampler: Sampler,
    ) -> Self {
        Self {
            job,
            seq,
            prompt_len: tokens.len(),
            tokens,
            evaluated: reused,
            reused,
            sampler,
            output: Vec::new(),
            generated: 0,
            pending: Vec::new(),
            template: None,
            row: None,
        }
    }

    /// This request with the decision template it is fed fixed text from.
    pub fn with_template(mut self, template: Option<Template>) -> Self {
        self.template = template;
        self
    }

    /// Adds this request's next piece to `batch`: the prompt up to the next
    /// multiple of [`PROMPT_CHUNK`] positions (so a position is read beside
    /// the same neighbours whatever was reused), or the token chosen last.
    pub fn feed(&mut self, batch: &mut LlamaBatch<'_>) -> Result<(), LlmError> {
        self.row = None;
        let seq = self.seq as i32;
        if self.evaluated < self.prompt_len {
            let end = ((self.evaluated / PROMPT_CHUNK + 1) * PROMPT_CHUNK).min(self.prompt_len);
            for position in self.evaluated..end {
                let last = position + 1 == self.prompt_len;
                batch
                    .add(self.tokens[position], position as i32, &[seq], last)
                    .map_err(|e| fail("batch", &e))?;
                if last {
                    self.row = Some(batch.n_tokens() - 1);
                }
            }
            self.evaluated = end;
        } else if !self.pending.is_empty() {
            let count = self.pending.len();
            for (i, token) in self.pending.drain(..).enumerate() {
                batch
                    .add(token, self.tokens.len() as i32, &[seq], i + 1 == count)
                    .map_err(|e| fail("batch", &e))?;
                self.tokens.push(token);
            }
            self.row = Some(batch.n_tokens() - 1);
            self.evaluated += count;
        }
        Ok(())
    }

    /// After the batch was evaluated: chooses the next token when this
    /// request had a row of logits in it, and returns the answer once it is
    /// complete (an end-of-generation token, or `max_tokens` reached).
    pub fn advance(&mut self, model: &LlamaModel, ctx: &LlamaContext<'_>) -> Option<ChatResponse> {
        let row = self.row.take()?;
        let max_tokens = u64::from(self.job.request.max_tokens);
        if self.generated >= max_tokens {
            return Some(self.answer("length"));
        }
        let token = self.sampler.sample(model, ctx, row);
        self.generated += 1;
        if model.vocab().is_eog(token) {
            return Some(self.answer("stop"));
        }
        self.output
            .extend(model.vocab().token_to_piece(token, false, None));
        if self.generated >= max_tokens {
            // Evaluating it would only cost a step nobody reads.
            return Some(self.answer("length"));
        }
        self.pending.push(token);
        if self.feed_fixed_text(model) {
            // The decision is complete: nothing left to evaluate.
            return Some(self.answer("stop"));
        }
        None
    }

    /// Queues the fixed text that must follow the output so far (at most
    /// [`FORCED_MAX`] tokens, each taken only if the grammar allows it) to
    /// be evaluated with the chosen token; whether the decision is complete
    /// with it.
    fn feed_fixed_text(&mut self, model: &LlamaModel) -> bool {
        let Some(template) = &self.template else {
            return false;
        };
        let Some(forced) = template.forced(&String::from_utf8_lossy(&self.output)) else {
            return false;
        };
        let tokens = model.vocab().tokenize(forced.text.as_bytes(), false, false);
        let max_tokens = u64::from(self.job.request.max_tokens);
        let mut all = tokens.len() <= FORCED_MAX;
        tracing::trace!(text = %forced.text, tokens = tokens.len(), "fixed text fed ahead");
        for token in tokens.into_iter().take(FORCED_MAX) {
            if self.generated >= max_tokens || !self.sampler.force(token) {
                all = false;
                break;
            }
            self.generated += 1;
            self.output
                .extend(model.vocab().token_to_piece(token, false, None));
            self.pending.push(token);
        }
        all && forced.complete
    }

    /// Whether this request read more than half of its prompt itself
    /// (what its sequence held before covered less than half).
    pub fn read_most_of_its_prompt(&self) -> bool {
        self.reused * 2 < self.prompt_len
    }

    /// What the sequence holds now (every evaluated token), for reuse.
    pub fn held(self) -> (usize, Vec<LlamaToken>, Job) {
        let mut tokens = self.tokens;
        tokens.truncate(self.evaluated);
        (self.seq, tokens, self.job)
    }

    fn answer(&self, finish: &str) -> ChatResponse {
        ChatResponse {
            content: String::from_utf8_lossy(&self.output).into_owned(),
            usage: Usage {
                prompt_tokens: self.prompt_len as u64,
                completion_tokens: self.generated,
                cached_tokens: self.reused as u64,
            },
            finish_reason: Some(finish.into()),
        }
    }
}
