//! The blocking decode loop of the in-process model: template the
//! conversation, continue from the longest cached prefix, evaluate the
//! rest of the prompt, sample (under the grammar when the request carries a
//! schema), and keep the final state for the next request.

use std::num::NonZeroU32;
use std::sync::atomic::{AtomicBool, Ordering};

use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::{LlamaChatMessage, LlamaModel};
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::LlamaStateSeqFlags;

use super::{backend, LocalConfig, StateCache};
use crate::llm::{ChatRequest, ChatResponse, LlmError, Usage};

/// Tokens evaluated per `decode` call while reading the prompt. The cancel
/// flag is checked between chunks (llama.cpp offers no safe way to interrupt
/// one `decode`), so a chunk bounds how long a cancelled request keeps a
/// core busy: 64 tokens take well under 2 s on one thread of a 2-core VM
/// for a 1.5B model, and CPU matrix products are already efficient at
/// that width.
const PROMPT_CHUNK: usize = 64;

fn fail(what: &str, e: &dyn std::fmt::Display) -> LlmError {
    LlmError::Other(format!("local model: {what}: {e}"))
}

fn cancelled() -> LlmError {
    LlmError::Other("generation cancelled".into())
}

/// Answers one request; `cancel` is checked between batches and tokens.
pub(super) fn generate(
    model: &LlamaModel,
    config: &LocalConfig,
    states: &StateCache,
    request: &ChatRequest,
    cancel: &AtomicBool,
) -> Result<ChatResponse, LlmError> {
    let tokens = prompt_tokens(model, request)?;
    let needed = tokens.len() + request.max_tokens as usize;
    if needed > config.context_size as usize {
        return Err(LlmError::Other(format!(
            "the prompt has {} tokens; with max_tokens {} it exceeds the context size {} (raise --context-size)",
            tokens.len(),
            request.max_tokens,
            config.context_size
        )));
    }
    let threads = config.threads.max(1) as i32;
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(config.context_size))
        .with_n_batch(PROMPT_CHUNK as u32)
        .with_n_threads(threads)
        .with_n_threads_batch(threads);
    let mut ctx = model
        .new_context(backend()?, params)
        .map_err(|e| fail("context", &e))?;
    let reused = restore_prefix(&mut ctx, states, &tokens);
    let mut batch = LlamaBatch::new(PROMPT_CHUNK, 1);
    for (chunk_index, chunk) in tokens[reused..].chunks(PROMPT_CHUNK).enumerate() {
        if cancel.load(Ordering::Relaxed) {
            return Err(cancelled());
        }
        batch.clear();
        let base = reused + chunk_index * PROMPT_CHUNK;
        for (i, token) in chunk.iter().enumerate() {
            let last = base + i + 1 == tokens.len();
            batch
                .add(*token, (base + i) as i32, &[0], last)
                .map_err(|e| fail("batch", &e))?;
        }
        ctx.decode(&mut batch)
            .map_err(|e| fail("prompt decode", &e))?;
    }
    let mut sampler = sampler(model, config, request)?;
    let mut held = tokens.clone();
    let mut output = Vec::new();
    let mut generated = 0u64;
    let mut finish = "length";
    while generated < u64::from(request.max_tokens) {
        if cancel.load(Ordering::Relaxed) {
            return Err(cancelled());
        }
        // `sample` also accepts the token into every sampler (grammar
        // included); accepting it again would advance the grammar twice.
        let token = sampler.sample(&ctx, batch.n_tokens() - 1);
        generated += 1;
        if model.vocab().is_eog(token) {
            finish = "stop";
            break;
        }
        output.extend(model.vocab().token_to_piece(token, false, None));
        batch.clear();
        batch
            .add(token, held.len() as i32, &[0], true)
            .map_err(|e| fail("batch", &e))?;
        ctx.decode(&mut batch).map_err(|e| fail("decode", &e))?;
        held.push(token);
    }
    // Keep what the context now holds for the next round of this
    // conversation; a failed copy only costs that reuse.
    if let Ok(state) = ctx.state_seq_get(0, LlamaStateSeqFlags::empty()) {
        states.store(held, state);
    }
    Ok(ChatResponse {
        content: String::from_utf8_lossy(&output).into_owned(),
        usage: Usage {
            prompt_tokens: tokens.len() as u64,
            completion_tokens: generated,
            cached_tokens: reused as u64,
        },
        finish_reason: Some(finish.into()),
    })
}

/// The conversation in the model's chat template, as tokens.
fn prompt_tokens(model: &LlamaModel, request: &ChatRequest) -> Result<Vec<LlamaToken>, LlmError> {
    let template = model
        .chat_template(None)
        .map_err(|e| fail("no chat template in the model", &e))?;
    let messages = request
        .messages
        .iter()
        .map(|m| {
            let role = serde_json::to_value(m.role)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default();
            LlamaChatMessage::new(role, m.content.clone())
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| fail("bad message", &e))?;
    let prompt = model
        .apply_chat_template(&template, &messages, true)
        .map_err(|e| fail("chat template", &e))?;
    Ok(model.vocab().tokenize(prompt.as_bytes(), false, true))
}

/// Loads the cached state sharing the longest prefix with `tokens` and cuts
/// it back to that prefix. Returns how many tokens need no evaluation; at
/// least the last prompt token is always evaluated, for its logits. Any
/// failure falls back to evaluating everything.
fn restore_prefix(ctx: &mut LlamaContext<'_>, states: &StateCache, tokens: &[LlamaToken]) -> usize {
    let Some(hit) = states.lookup(tokens) else {
        return 0;
    };
    let keep = hit.reused.min(tokens.len().saturating_sub(1));
    let restored = ctx.state_seq_set(&hit.state, 0).is_ok()
        && ctx.kv_cache_seq_rm(0, Some(keep as u32), None).is_ok();
    if restored {
        keep
    } else {
        ctx.clear_kv_cache();
        0
    }
}

/// The sampler chain: the grammar from the request's schema (when on),
/// then greedy at temperature 0 or top-k/top-p/temperature sampling.
fn sampler(
    model: &LlamaModel,
    config: &LocalConfig,
    request: &ChatRequest,
) -> Result<LlamaSampler, LlmError> {
    let mut samplers = Vec::new();
    if config.grammar {
        if let Some(schema) = &request.schema {
            let gbnf = llama_cpp_2::json_schema_to_grammar(&schema.to_string())
                .map_err(|e| fail("grammar from schema", &e))?;
            samplers.push(
                LlamaSampler::grammar(model, &gbnf, "root").map_err(|e| fail("grammar", &e))?,
            );
        }
    }
    if request.temperature <= 0.0 {
        samplers.push(LlamaSampler::greedy());
    } else {
        samplers.push(LlamaSampler::top_k(40));
        samplers.push(LlamaSampler::top_p(0.95, 1));
        samplers.push(LlamaSampler::temp(request.temperature));
        samplers.push(LlamaSampler::dist(config.seed));
    }
    Ok(LlamaSampler::chain_simple(samplers))
}
