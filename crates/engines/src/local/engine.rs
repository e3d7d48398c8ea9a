//! The engine thread of one loaded model: it owns the model and one
//! llama.cpp context that keeps several conversations alive (one sequence
//! each, see [`super::slots`]), and answers the requests in hand together:
//! each step evaluates every request's next piece (a prompt chunk or its
//! last token) in one batch, so no request waits for another to finish.
//!
//! Keeping the context is what makes a later round cheap: the sequence
//! still holds the conversation's KV cache, so a request only cuts it back
//! to the shared prefix and evaluates the new tokens. Building a context
//! and copying a saved state in and out for every request (what this engine
//! did before) cost about 100 ms per request before the first token.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TryRecvError};
use std::sync::Arc;

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;

use super::active::Active;
use super::decode::{self, fail, Sampler};
use super::kept::KeptPrompt;
use super::slots::Slots;
use super::{Job, LocalConfig};
use hermes_core::llm::jump_forward::Template;
use hermes_core::llm::LlmError;

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

/// Runs the engine on this thread until `jobs` closes and every request
/// taken is answered. `ready` hears once whether the context could be made.
/// `closing` stops the requests in hand.
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
    let kept = config
        .kept_prompts
        .as_deref()
        .filter(|_| config.cached_conversations > 0)
        .and_then(|dir| KeptPrompt::for_model(dir, &config.model_path));
    let mut engine = Engine {
        model: &model,
        ctx,
        slots: Slots::new(sequences, config.cached_conversations > 0),
        config: &config,
        batch: LlamaBatch::new(decode::batch_capacity(sequences), 1),
        kept,
        first_answer: true,
    };
    if let Some(kept) = &engine.kept {
        let tokens = kept.load(&mut engine.ctx, 0, config.context_size as usize);
        engine.slots.hold(0, tokens);
    }
    let mut active: Vec<Active> = Vec::new();
    let mut open = true;
    loop {
        // Wait for work when there is none; take what has queued up while
        // a sequence is free.
        if active.is_empty() {
            if !open {
                break;
            }
            match jobs.recv() {
                Ok(job) => engine.admit(job, &mut active),
                Err(_) => break,
            }
        }
        while open && active.len() < sequences {
            match jobs.try_recv() {
                Ok(job) => engine.admit(job, &mut active),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => open = false,
            }
        }
        let closing = closing.load(Ordering::Relaxed);
        active.retain(|request| {
            let gone = closing || request.job.cancel.load(Ordering::Relaxed);
            if gone {
                engine.forget(request.seq);
            }
            !gone
        });
        if active.is_empty() {
            continue;
        }
        let step = catch_unwind(AssertUnwindSafe(|| engine.step(&mut active)));
        let failure = match step {
            Ok(Ok(())) => continue,
            Ok(Err(e)) => e.to_string(),
            Err(_) => "local model: the engine panicked; its cache was cleared".to_string(),
        };
        // The context may hold half of any request in hand: start over.
        engine.reset();
        for request in active.drain(..) {
            let _ = request
                .job
                .reply
                .send(Err(LlmError::Other(failure.clone())));
        }
    }
}

struct Engine<'m> {
    model: &'m LlamaModel,
    ctx: LlamaContext<'m>,
    slots: Slots<LlamaToken>,
    config: &'m LocalConfig,
    batch: LlamaBatch<'m>,
    /// Where the conversation that warms the next process is kept.
    kept: Option<KeptPrompt>,
    /// No request has been answered yet.
    first_answer: bool,
}

impl Engine<'_> {
    /// Places a new request on a free sequence, cut back to the prefix it
    /// shares with the prompt; a request that cannot start is answered
    /// with its error at once.
    fn admit(&mut self, job: Job, active: &mut Vec<Active>) {
        if job.cancel.load(Ordering::Relaxed) {
            return;
        }
        let busy: Vec<usize> = active.iter().map(|a| a.seq).collect();
        let started =
            decode::prompt_tokens(self.model, self.config, &job.request).and_then(|tokens| {
                let sampler = Sampler::new(self.model, self.config, &job.request)?;
                let template = job
                    .request
                    .schema
                    .as_deref()
                    .filter(|_| sampler.constrained() && self.config.jump_forward)
                    .and_then(Template::from_schema);
                let pick = self
                    .slots
                    .pick(&tokens, &busy)
                    .ok_or_else(|| LlmError::Other("local model: no free sequence".into()))?;
                if let Err(e) =
                    self.ctx
                        .kv_cache_seq_rm(pick.seq as i32, Some(pick.reused as u32), None)
                {
                    self.forget(pick.seq);
                    return Err(fail("cache", &e));
                }
                Ok((pick, tokens, sampler, template))
            });
        match started {
            Ok((pick, tokens, sampler, template)) => {
                let active_request = Active::new(job, pick.seq, tokens, pick.reused, sampler);
                active.push(active_request.with_template(template));
            }
            Err(e) => {
                let _ = job.reply.send(Err(e));
            }
        }
    }

    /// One step: every request's next piece evaluated in one batch, then
    /// each chooses its next token; finished ones are answered and leave.
    fn step(&mut self, active: &mut Vec<Active>) -> Result<(), LlmError> {
        self.batch.clear();
        for request in active.iter_mut() {
            request.feed(&mut self.batch)?;
        }
        if self.batch.n_tokens() > 0 {
            self.ctx
                .decode(&mut self.batch)
                .map_err(|e| fail("decode", &e))?;
        }
        let mut i = 0;
        while i < active.len() {
            match active[i].advance(self.model, &self.ctx) {
                Some(answer) => {
                    let read_itself = active[i].read_most_of_its_prompt();
                    let (seq, held, job) = active.remove(i).held();
                    // Kept before the answer goes out (once per process,
                    // tens of ms): whoever got the answer finds the file.
                    if std::mem::take(&mut self.first_answer) && read_itself {
                        if let Some(kept) = &self.kept {
                            kept.save(&self.ctx, seq, &held);
                        }
                    }
                    self.slots.hold(seq, held);
                    let _ = job.reply.send(Ok(answer));
                }
                None => i += 1,
            }
        }
        Ok(())
    }

    /// Empties sequence `seq` (a request on it stopped half way).
    fn forget(&mut self, seq: usize) {
        if self.ctx.kv_cache_seq_rm(seq as i32, None, None).is_err() {
            self.reset();
        }
        self.slots.hold(seq, Vec::new());
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
