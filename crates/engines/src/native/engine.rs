//! The engine thread: one per loaded model, serving every request for it.
//!
//! Requests wait in a channel. Each step of the thread takes every active
//! request once, in arrival order: a request still reading its prompt
//! contributes its next chunk, a generating one its last sampled token,
//! and one forward pass evaluates them all together ([`Qwen2::forward`]).
//! So concurrent executors share the weights and each matrix product, and
//! no request waits for another to finish: every active one advances every
//! step. A request whose caller went away (timeout, cancellation) is
//! dropped before the next step.
//!
//! Prefix reuse: a request starts from the cached state sharing the
//! longest prefix with its prompt and evaluates only the rest; its final
//! state is cached for the next round of its conversation.
//!
//! A request with a schema decodes under its grammar ([`super::constraint`])
//! and, when it is a decision, is fed the decision's fixed text after each
//! chosen token, evaluated with it in the same step (jump-forward, see
//! [`hermes_core::llm::jump_forward`]), as the llama.cpp engine does.

use std::cell::{Cell, OnceCell};
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, TryRecvError};
use std::sync::Arc;

use candle_core::Tensor;
use candle_transformers::generation::{LogitsProcessor, Sampling};
use tokio::sync::oneshot;

use super::constraint::{Constraint, Grammars};
use super::kept;
use super::qwen2::{message, KvState, Qwen2, Segment};
use super::runaway::{repeats_itself, ProseWatch};
use super::tokenizer::ChatTokenizer;
use hermes_core::llm::jump_forward::Template;
use hermes_core::llm::kept_prompt::write_whole;
use hermes_core::llm::prefix_cache::PrefixCache;
use hermes_core::llm::{ChatResponse, LlmError, Usage};

/// Prompt tokens evaluated per step when no other request is generating.
const PROMPT_CHUNK: usize = 64;
/// Prompt tokens per step while other requests generate: a long prompt
/// then slows their tokens less.
const SHARED_PROMPT_CHUNK: usize = 16;
/// Most fixed tokens a request is fed ahead in one step; the rest follows
/// in the next (as in the llama.cpp engine).
const FORCED_MAX: usize = 32;

/// One request as the engine thread receives it.
pub(super) struct Job {
    /// The templated prompt's tokens.
    pub(super) prompt: Vec<u32>,
    pub(super) max_tokens: usize,
    pub(super) sampling: Sampling,
    pub(super) seed: u64,
    /// The schema the answer is decoded under (`None`: free text).
    pub(super) schema: Option<std::sync::Arc<serde_json::Value>>,
    /// Whether a decision is fed its fixed text ahead (needs the schema).
    pub(super) jump_forward: bool,
    pub(super) reply: oneshot::Sender<Result<ChatResponse, LlmError>>,
}

/// A request being served.
struct Active {
    job: Job,
    kv: KvState,
    /// Prompt tokens the state already held when the request started.
    reused: usize,
    /// Next prompt token to evaluate; `prompt.len()` once generating.
    next: usize,
    sampler: LogitsProcessor,
    /// Every generated token: chosen, or fed as fixed text.
    output: Vec<u32>,
    /// The token chosen last and the fixed text fed after it, to evaluate
    /// in the next step.
    pending: Vec<u32>,
    /// The answer ended on its own: an end token, or a complete decision.
    stopped: bool,
    /// The answer was ended because it repeats itself ([`super::runaway`]).
    looping: bool,
    /// Watches the answer's program for prose ([`ProseWatch`]).
    prose: ProseWatch,
    /// The answer was ended because its program turned into prose.
    rambling: bool,
    /// The grammar of the request's schema.
    constraint: Option<Constraint>,
    /// The decision's fixed text, fed ahead under the grammar.
    template: Option<Template>,
}

impl Active {
    fn generating(&self) -> bool {
        self.next >= self.job.prompt.len()
    }

    /// Drops the grammar (and the fixed text that relies on it) after it
    /// failed: the answer goes on unconstrained, for the lenient parser.
    fn unconstrain(&mut self, error: &str) {
        tracing::warn!("the grammar failed ({error}); this answer goes on unconstrained");
        self.constraint = None;
        self.template = None;
    }
}

/// What the engine thread owns.
pub(super) struct Engine {
    pub(super) model: Qwen2,
    pub(super) tokenizer: Arc<ChatTokenizer>,
    pub(super) states: PrefixCache<u32, KvState>,
    /// Where the state that warms the next process is kept (see
    /// [`super::kept`]).
    pub(super) kept: Option<PathBuf>,
    /// No request has been answered yet.
    pub(super) first_answer: Cell<bool>,
    /// The model's grammar compiler, built on the first request with a
    /// schema (its error, when the vocabulary cannot be read).
    pub(super) grammars: OnceCell<Result<Grammars, String>>,
}

impl Engine {
    /// Serves jobs until every sender is gone.
    pub(super) fn run(self, jobs: Receiver<Job>) {
        let mut active: Vec<Active> = Vec::new();
        loop {
            if active.is_empty() {
                match jobs.recv() {
                    Ok(job) => active.push(self.start(job)),
                    Err(_) => return,
                }
            }
            loop {
                match jobs.try_recv() {
                    Ok(job) => active.push(self.start(job)),
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) if active.is_empty() => return,
                    Err(TryRecvError::Disconnected) => break,
                }
            }
            active.retain(|a| {
                let gone = a.job.reply.is_closed();
                if gone {
                    self.log_unfinished("the caller went away", a);
                }
                !gone
            });
            if active.is_empty() {
                continue;
            }
            if let Err(e) = self.step(&mut active) {
                let message = format!("local model: {e}");
                for a in active.drain(..) {
                    let _ = a.job.reply.send(Err(LlmError::Other(message.clone())));
                }
            }
            let (done, running): (Vec<_>, Vec<_>) = active.into_iter().partition(|a| self.done(a));
            active = running;
            for a in done {
                self.finish(a);
            }
        }
    }

    /// A job's starting state: its own copy of the longest cached prefix
    /// of its prompt, cut back so that at least its last prompt token is
    /// evaluated, with room for the rest of the prompt and the answer.
    fn start(&self, job: Job) -> Active {
        // Room for every token still to come, so the buffers never grow.
        let to_come = |held: usize| {
            (job.prompt.len() - held + job.max_tokens + FORCED_MAX)
                .min(self.model.context.saturating_sub(held))
        };
        let mut kv = KvState::with_room(to_come(0));
        if let Some(hit) = self.states.lookup(&job.prompt) {
            let keep = hit.reused.min(job.prompt.len().saturating_sub(1));
            if let Ok(state) = hit.state.owned(keep, to_come(keep)) {
                kv = state;
            }
        }
        let reused = kv.len();
        let sampler = LogitsProcessor::from_sampling(job.seed, job.sampling.clone());
        let constraint = job.schema.as_deref().and_then(|schema| {
            let grammars = self.grammars.get_or_init(|| Grammars::new(&self.tokenizer));
            match grammars
                .as_ref()
                .map_err(Clone::clone)
                .and_then(|g| g.constraint(schema))
            {
                Ok(constraint) => Some(constraint),
                Err(e) => {
                    tracing::warn!("no grammar for this request ({e}); it decodes unconstrained");
                    None
                }
            }
        });
        let template = job
            .schema
            .as_deref()
            .filter(|_| constraint.is_some() && job.jump_forward)
            .and_then(Template::from_schema);
        Active {
            next: reused,
            reused,
            kv,
            sampler,
            output: Vec::new(),
            pending: Vec::new(),
            stopped: false,
            looping: false,
            prose: ProseWatch::default(),
            rambling: false,
            constraint,
            template,
            job,
        }
    }

    /// One forward pass over every active request.
    fn step(&self, active: &mut [Active]) -> Result<(), String> {
        let chunk = if active.iter().any(Active::generating) {
            SHARED_PROMPT_CHUNK
        } else {
            PROMPT_CHUNK
        };
        let pieces: Vec<Vec<u32>> = active
            .iter_mut()
            .map(|a| {
                if a.pending.is_empty() {
                    let end = (a.next + chunk).min(a.job.prompt.len());
                    a.job.prompt[a.next..end].to_vec()
                } else {
                    std::mem::take(&mut a.pending)
                }
            })
            .collect();
        let mut segments: Vec<Segment<'_>> = active
            .iter_mut()
            .zip(&pieces)
            .map(|(a, tokens)| Segment {
                tokens,
                kv: &mut a.kv,
            })
            .collect();
        let logits = self.model.forward(&mut segments).map_err(message)?;
        for (row, (a, piece)) in active.iter_mut().zip(&pieces).enumerate() {
            if !a.generating() {
                a.next += piece.len();
            }
            if a.generating() {
                let token = choose(a, &logits, row)?;
                a.output.push(token);
                if self.tokenizer.is_stop(token) {
                    a.stopped = true;
                } else {
                    a.pending.push(token);
                    self.feed_fixed_text(a);
                    if a.constraint.as_ref().is_some_and(Constraint::complete) {
                        // Only the end may follow: no step to spend on it.
                        a.stopped = true;
                        a.pending.clear();
                    } else if repeats_itself(&a.output) {
                        a.looping = true;
                    } else {
                        let piece = self.tokenizer.decode(&a.output[a.prose.seen..]);
                        a.prose.seen = a.output.len();
                        a.rambling = a.prose.push(&piece);
                    }
                }
            }
        }
        Ok(())
    }

    /// Queues the fixed text that must follow the answer so far (at most
    /// [`FORCED_MAX`] tokens, each taken only if the grammar allows it) to
    /// be evaluated with the chosen token; a decision complete with it
    /// stops there.
    fn feed_fixed_text(&self, a: &mut Active) {
        let (Some(template), Some(constraint)) = (&a.template, a.constraint.as_mut()) else {
            return;
        };
        let Some(forced) = template.forced(&self.tokenizer.decode(&a.output)) else {
            return;
        };
        let Ok(tokens) = self.tokenizer.encode(&forced.text) else {
            return;
        };
        tracing::trace!(text = %forced.text, tokens = tokens.len(), "fixed text fed ahead");
        let mut all = tokens.len() <= FORCED_MAX;
        for token in tokens.into_iter().take(FORCED_MAX) {
            match constraint.take(token) {
                Ok(true) if a.output.len() < a.job.max_tokens => {
                    a.output.push(token);
                    a.pending.push(token);
                }
                Ok(_) => {
                    all = false;
                    break;
                }
                Err(e) => {
                    a.unconstrain(&e);
                    return;
                }
            }
        }
        if all && forced.complete {
            // Nothing may follow a complete decision: no step to spend.
            a.stopped = true;
            a.pending.clear();
        }
    }

    /// Whether a request has its answer: it stopped, is looping, used its
    /// token budget, or reached the end of the context.
    fn done(&self, a: &Active) -> bool {
        a.generating()
            && (a.stopped
                || a.looping
                || a.rambling
                || a.output.len() >= a.job.max_tokens
                || a.kv.len() + a.pending.len().max(1) >= self.model.context)
    }

    /// Loads the kept state into the prefix cache, where any new
    /// conversation may continue it; a file that does not load is left to
    /// be replaced.
    pub(super) fn warm_up(&self) {
        let Some(path) = self.kept.as_deref().filter(|p| p.is_file()) else {
            return;
        };
        match kept::load(&self.model, path) {
            Ok((tokens, state)) => self.states.store(tokens, state),
            Err(e) => {
                tracing::warn!(path = %path.display(), "the kept prompt did not load ({e}); it will be replaced")
            }
        }
    }

    /// Says at debug level what a request had written when it ended
    /// without its answer being complete (a runaway answer that ran into
    /// its token budget or the run's clock shows here, nowhere else).
    fn log_unfinished(&self, why: &str, a: &Active) {
        if tracing::enabled!(tracing::Level::DEBUG) {
            let text = self.tokenizer.decode(&a.output);
            let head: String = text.chars().take(300).collect();
            let tail: String = text
                .chars()
                .rev()
                .take(300)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            tracing::debug!(tokens = a.output.len(), %head, %tail, "answer unfinished: {why}");
        }
    }

    /// Sends a finished request's answer and caches its state (and keeps
    /// it on disk when it is the first answer and read most of its prompt).
    fn finish(&self, a: Active) {
        let read_itself = a.reused * 2 < a.job.prompt.len();
        let first = self.first_answer.replace(false);
        let stopped = a.stopped;
        if a.looping {
            self.log_unfinished("it repeats itself", &a);
        } else if a.rambling {
            self.log_unfinished("its program turned into prose", &a);
        } else if !stopped {
            self.log_unfinished("it ran out of tokens", &a);
        }
        let text_tokens = match a.output.split_last() {
            Some((&last, text)) if self.tokenizer.is_stop(last) => text,
            _ => &a.output[..],
        };
        let content = self.tokenizer.decode(text_tokens);
        // The state holds the prompt and every generated token it evaluated
        // (all but those chosen or fed in the last step).
        let mut held = a.job.prompt.clone();
        held.extend(&a.output);
        held.truncate(a.kv.len());
        debug_assert_eq!(held.len(), a.kv.len());
        let response = ChatResponse {
            content,
            usage: Usage {
                prompt_tokens: a.job.prompt.len() as u64,
                completion_tokens: a.output.len() as u64,
                cached_tokens: a.reused as u64,
            },
            finish_reason: Some(if stopped { "stop" } else { "length" }.into()),
        };
        if held.len() == a.kv.len() {
            // Kept before the answer goes out (once per process, ~0.1 s):
            // whoever got the answer finds the file.
            if let Some(path) = self.kept.as_deref().filter(|_| first && read_itself) {
                if let Err(e) = write_whole(path, |aside| kept::save(&a.kv, &held, aside)) {
                    tracing::warn!(path = %path.display(), "the prompt was not kept: {e}");
                }
            }
            self.states.store(held, a.kv);
        }
        let _ = a.job.reply.send(Ok(response));
    }
}

/// The request's next token from its row of `logits`: sampled, and under
/// its grammar when it has one. The grammar checks the sampled token first
/// and masks the row only when it refuses it (as llama.cpp's sampler
/// does): a model asked for JSON nearly always picks an allowed token, and
/// the greedy choice is the same either way.
fn choose(a: &mut Active, logits: &Tensor, row: usize) -> Result<u32, String> {
    let row = logits.get(row).map_err(message)?;
    if !Qwen2::finite(&row) {
        return Err("the model produced non-finite logits (a damaged model file?)".into());
    }
    let token = a.sampler.sample(&row).map_err(message)?;
    let Some(constraint) = a.constraint.as_mut() else {
        return Ok(token);
    };
    match constraint.take(token) {
        Ok(true) => return Ok(token),
        Ok(false) => {}
        Err(e) => {
            a.unconstrain(&e);
            return Ok(token);
        }
    }
    let mut values = row.to_vec1::<f32>().map_err(message)?;
    if let Err(e) = constraint.mask(&mut values) {
        a.unconstrain(&e);
        return Ok(token);
    }
    let size = values.len();
    let masked = Tensor::from_vec(values, size, row.device()).map_err(message)?;
    let allowed = a.sampler.sample(&masked).map_err(message)?;
    match constraint.take(allowed) {
        Ok(true) => Ok(allowed),
        Ok(false) => {
            a.unconstrain(&format!(
                "it allows no token after {} chosen",
                a.output.len()
            ));
            Ok(token)
        }
        Err(e) => {
            a.unconstrain(&e);
            Ok(token)
        }
    }
}
