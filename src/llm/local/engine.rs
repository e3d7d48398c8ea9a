//! The engine thread of one loaded model: it owns the model and one
//! llama.cpp context that keeps several conversations alive (one sequence
//! each, see [`super::slots`]), and answers requests one at a time in the
//! order they came.
//!
//! Keeping the context is what makes a later round cheap: the sequence
//! still holds the conversation's KV cache, so a request only cuts it back
//! to the shared prefix and evaluates the new tokens. Building a context
//! and copying a saved state in and out for every request (what this engine
//! did before) cost about 100 ms per request before the first token.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::Arc;

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;
use tokio::sync::oneshot;

use super::decode::{self, fail, Placed};
use super::slots::Slots;
use super::{Generating, LocalConfig};
use crate::llm::{ChatRequest, ChatResponse, LlmError};

/// Conversations kept alive in the context at most (each reserves
/// `context_size` tokens of KV cache: about 115 MB at 4,096 tokens for a
/// 1.5B model).
pub const MAX_LIVE_CONVERSATIONS: usize = 4;

/// KV cache cells the live conversations may reserve together when more
/// than one is kept: four conversations of 4,096 tokens. A larger context
/// keeps fewer alive (one at 16,384 tokens or more), so raising
/// `--context-size` does not multiply the memory reserved at load.
const LIVE_TOKENS: usize = 4 * 4096;

/// How many conversations the context keeps alive for `config`.
fn live_conversations(config: &LocalConfig) -> usize {
    let fit = LIVE_TOKENS / (config.context_size as usize).max(1);
    config
        .cached_conversations
        .min(MAX_LIVE_CONVERSATIONS)
        .min(fit)
        .max(1)
}

/// One request for the engine.
pub(super) struct Job {
    pub request: ChatRequest,
    /// Set when the caller stopped waiting (timeout, cancellation).
    pub cancel: Arc<AtomicBool>,
    pub reply: oneshot::Sender<Result<ChatResponse, LlmError>>,
    /// Counts the job until the engine is done with it.
    pub generating: Generating,
}

/// Runs the engine on this thread until `jobs` closes. `ready` hears once
/// whether the context could be made. `closing` stops the job in hand.
pub(super) fn run(
    model: LlamaModel,
    config: LocalConfig,
    jobs: Receiver<Job>,
    ready: SyncSender<Result<(), LlmError>>,
    closing: Arc<AtomicBool>,
) {
    let sequences = live_conversations(&config);
    let ctx = match decode::new_context(&model, &config, sequences) {
        Ok(ctx) => ctx,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let _ = ready.send(Ok(()));
    let mut engine = Engine {
        model: &model,
        ctx,
        slots: Slots::new(sequences, config.cached_conversations > 0),
        config: &config,
    };
    while let Ok(job) = jobs.recv() {
        let Job {
            request,
            cancel,
            reply,
            generating,
        } = job;
        let cancelled = || cancel.load(Ordering::Relaxed) || closing.load(Ordering::Relaxed);
        if cancelled() {
            continue;
        }
        let answer = catch_unwind(AssertUnwindSafe(|| engine.answer(&request, &cancelled)))
            .unwrap_or_else(|_| {
                // The context may hold half a request: start over empty.
                engine.reset();
                Err(LlmError::Other(
                    "local model: the engine panicked on this request; its cache was cleared"
                        .into(),
                ))
            });
        let _ = reply.send(answer);
        drop(generating);
    }
}

struct Engine<'m> {
    model: &'m LlamaModel,
    ctx: LlamaContext<'m>,
    slots: Slots<LlamaToken>,
    config: &'m LocalConfig,
}

impl Engine<'_> {
    fn answer(
        &mut self,
        request: &ChatRequest,
        cancelled: &dyn Fn() -> bool,
    ) -> Result<ChatResponse, LlmError> {
        let tokens = decode::prompt_tokens(self.model, self.config, request)?;
        let pick = self.slots.pick(&tokens);
        let seq = pick.seq as i32;
        if let Err(e) = self
            .ctx
            .kv_cache_seq_rm(seq, Some(pick.reused as u32), None)
        {
            self.reset();
            return Err(fail("cache", &e));
        }
        match decode::generate(
            self.model,
            &mut self.ctx,
            Placed {
                seq,
                tokens,
                reused: pick.reused,
            },
            self.config,
            request,
            cancelled,
        ) {
            Ok(done) => {
                self.slots.hold(pick.seq, done.held);
                Ok(done.response)
            }
            Err(e) => {
                // What the sequence holds now is unknown: empty it.
                if self.ctx.kv_cache_seq_rm(seq, None, None).is_err() {
                    self.reset();
                }
                self.slots.hold(pick.seq, Vec::new());
                Err(e)
            }
        }
    }

    fn reset(&mut self) {
        self.ctx.clear_kv_cache();
        self.slots.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(cached_conversations: usize, context_size: u32) -> LocalConfig {
        LocalConfig {
            cached_conversations,
            context_size,
            ..LocalConfig::new("model.gguf")
        }
    }

    #[test]
    fn larger_contexts_keep_fewer_conversations_alive() {
        assert_eq!(live_conversations(&config(4, 4096)), 4);
        assert_eq!(live_conversations(&config(8, 4096)), MAX_LIVE_CONVERSATIONS);
        assert_eq!(live_conversations(&config(4, 8192)), 2);
        assert_eq!(live_conversations(&config(4, 32768)), 1);
        assert_eq!(live_conversations(&config(2, 2048)), 2);
        // Reuse off still needs one sequence to work in.
        assert_eq!(live_conversations(&config(0, 4096)), 1);
    }
}
