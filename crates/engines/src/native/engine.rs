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

use std::cell::Cell;
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, TryRecvError};
use std::sync::Arc;

use candle_core::Tensor;
use candle_transformers::generation::{LogitsProcessor, Sampling};
use tokio::sync::oneshot;

use super::kept;
use super::qwen2::{message, KvState, Qwen2, Segment};
use super::tokenizer::ChatTokenizer;
use hermes_core::llm::kept_prompt::write_whole;
use hermes_core::llm::prefix_cache::PrefixCache;
use hermes_core::llm::{ChatResponse, LlmError, Usage};

/// Prompt tokens evaluated per step when no other request is generating.
const PROMPT_CHUNK: usize = 64;
/// Prompt tokens per step while other requests generate: a long prompt
/// then slows their tokens less.
const SHARED_PROMPT_CHUNK: usize = 16;

/// One request as the engine thread receives it.
pub(super) struct Job {
    /// The templated prompt's tokens.
    pub(super) prompt: Vec<u32>,
    pub(super) max_tokens: usize,
    pub(super) sampling: Sampling,
    pub(super) seed: u64,
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
    output: Vec<u32>,
    /// The token sampled last, to evaluate in the next step.
    pending: Option<u32>,
}

impl Active {
    fn generating(&self) -> bool {
        self.next >= self.job.prompt.len()
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
            active.retain(|a| !a.job.reply.is_closed());
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

    /// A job's starting state: the longest cached prefix of its prompt,
    /// cut back so that at least its last prompt token is evaluated.
    fn start(&self, job: Job) -> Active {
        let mut kv = KvState::default();
        if let Some(hit) = self.states.lookup(&job.prompt) {
            let keep = hit.reused.min(job.prompt.len().saturating_sub(1));
            if let Ok(state) = hit.state.truncated(keep) {
                kv = state;
            }
        }
        let reused = kv.len();
        let sampler = LogitsProcessor::from_sampling(job.seed, job.sampling.clone());
        Active {
            next: reused,
            reused,
            kv,
            sampler,
            output: Vec::new(),
            pending: None,
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
            .iter()
            .map(|a| match a.pending {
                Some(token) => vec![token],
                None => {
                    let end = (a.next + chunk).min(a.job.prompt.len());
                    a.job.prompt[a.next..end].to_vec()
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
            if a.pending.take().is_none() {
                a.next += piece.len();
            }
            if a.generating() {
                let token = sample(&mut a.sampler, &logits, row)?;
                a.output.push(token);
                if !self.tokenizer.is_stop(token) {
                    a.pending = Some(token);
                }
            }
        }
        Ok(())
    }

    /// Whether a request has its answer: a stop token, its token budget,
    /// or the end of the context.
    fn done(&self, a: &Active) -> bool {
        a.generating()
            && (a.pending.is_none()
                || a.output.len() >= a.job.max_tokens
                || a.kv.len() + 1 >= self.model.context)
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

    /// Sends a finished request's answer and caches its state (and keeps
    /// it on disk when it is the first answer and read most of its prompt).
    fn finish(&self, a: Active) {
        let read_itself = a.reused * 2 < a.job.prompt.len();
        let first = self.first_answer.replace(false);
        let stopped = a.output.last().is_some_and(|&t| self.tokenizer.is_stop(t));
        let text_tokens = if stopped {
            &a.output[..a.output.len() - 1]
        } else {
            &a.output[..]
        };
        let content = self.tokenizer.decode(text_tokens);
        let mut held = a.job.prompt.clone();
        // The state holds the prompt and every generated token it evaluated
        // (all but the last sampled one).
        held.extend(&a.output[..a.output.len().saturating_sub(1)]);
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

fn sample(sampler: &mut LogitsProcessor, logits: &Tensor, row: usize) -> Result<u32, String> {
    let row = logits.get(row).map_err(message)?;
    if !Qwen2::finite(&row) {
        return Err("the model produced non-finite logits (a damaged model file?)".into());
    }
    sampler.sample(&row).map_err(message)
}
