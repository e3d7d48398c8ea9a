//! One request in the engine's hands: its sequence, the prompt still to
//! read, the tokens it generated, and its sampler. Each engine step it puts
//! its next piece into the shared batch (a prompt chunk, or the token it
//! chose last) and, once the batch is evaluated, chooses its next token
//! from its row of logits.

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;

use super::decode::{fail, Sampler, PROMPT_CHUNK};
use super::engine::Job;
use crate::llm::{ChatResponse, LlmError, Usage};

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
    /// The token chosen last, to be evaluated in the next step.
    pending: Option<LlamaToken>,
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
            pending: None,
            row: None,
        }
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
        } else if let Some(token) = self.pending.take() {
            batch
                .add(token, self.tokens.len() as i32, &[seq], true)
                .map_err(|e| fail("batch", &e))?;
            self.row = Some(batch.n_tokens() - 1);
            self.tokens.push(token);
            self.evaluated += 1;
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
        self.pending = Some(token);
        None
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
