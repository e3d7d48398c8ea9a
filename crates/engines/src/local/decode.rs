//! The pieces of decoding: the engine's context, the conversation as
//! tokens, and the sampler (checking each token against the grammar when
//! the request carries a schema).

use std::num::NonZeroU32;

use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::model::{LlamaChatMessage, LlamaModel};
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use llama_cpp_2::token::LlamaToken;

use super::{backend, LocalConfig};
use hermes_core::llm::{ChatRequest, LlmError};

/// Tokens evaluated per `decode` call while reading the prompt. The cancel
/// check runs between chunks (llama.cpp offers no safe way to interrupt
/// one `decode`), so a chunk bounds how long a cancelled request keeps a
/// core busy: 64 tokens take about 1 s on the two threads of a 2-core VM
/// for a 1.5B model. Chunks of 128 read an 893-token prompt 7% faster, but
/// greedy decisions with and without prefix reuse then parted within six
/// rounds of `tests/local_llm.rs`'s five-step task; with 64 they agree.
pub(super) const PROMPT_CHUNK: usize = 64;

/// Most fixed tokens a request feeds ahead in one step (see
/// [`hermes_core::llm::jump_forward`]); the rest follows in the next step.
pub(super) const FORCED_MAX: usize = 32;

/// Tokens one step's batch may hold: a prompt chunk or a chosen token with
/// the fixed text after it, for each of `sequences` requests.
pub(super) fn batch_capacity(sequences: usize) -> usize {
    (PROMPT_CHUNK + FORCED_MAX) * sequences
}

pub(super) fn fail(what: &str, e: &dyn std::fmt::Display) -> LlmError {
    LlmError::Other(format!("local model: {what}: {e}"))
}

/// The engine's one context: `sequences` conversations of `context_size`
/// tokens each, side by side in llama.cpp's KV cache, and batches of one
/// prompt chunk per conversation.
pub(super) fn new_context<'m>(
    model: &'m LlamaModel,
    config: &LocalConfig,
    sequences: usize,
) -> Result<LlamaContext<'m>, LlmError> {
    let threads = config.threads.max(1) as i32;
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(config.context_size * sequences as u32))
        .with_n_seq_max(sequences as u32)
        .with_kv_unified(false)
        .with_n_batch(batch_capacity(sequences) as u32)
        .with_n_threads(threads)
        .with_n_threads_batch(threads);
    model
        .new_context(backend()?, params)
        .map_err(|e| fail("context", &e))
}

/// The conversation in the model's chat template, as tokens, refused when
/// it and `max_tokens` do not fit one sequence.
pub(super) fn prompt_tokens(
    model: &LlamaModel,
    config: &LocalConfig,
    request: &ChatRequest,
) -> Result<Vec<LlamaToken>, LlmError> {
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
    let tokens = model.vocab().tokenize(prompt.as_bytes(), false, true);
    if tokens.is_empty() {
        // Nothing to evaluate means no logits to choose a first token from.
        return Err(LlmError::Other(
            "local model: the conversation is empty after templating".into(),
        ));
    }
    let needed = tokens.len() + request.max_tokens as usize;
    if needed > config.context_size as usize {
        return Err(LlmError::Other(format!(
            "the prompt has {} tokens; with max_tokens {} it exceeds the context size {} (raise --context-size)",
            tokens.len(),
            request.max_tokens,
            config.context_size
        )));
    }
    Ok(tokens)
}

/// Picks each token: greedy at temperature 0, else top-k/top-p/temperature
/// sampling; under the request's grammar when it has a schema.
///
/// The grammar is checked against the chosen token first and applied to the
/// whole vocabulary only when it rejects that token, as llama.cpp's own
/// server samples: masking ~150,000 candidates every token costs about a
/// quarter of the decode speed, and a model asked for JSON almost always
/// picks an allowed token anyway.
pub(super) struct Sampler {
    chain: LlamaSampler,
    grammar: Option<LlamaSampler>,
}

impl Sampler {
    pub(super) fn new(
        model: &LlamaModel,
        config: &LocalConfig,
        request: &ChatRequest,
    ) -> Result<Self, LlmError> {
        let grammar = match (&request.schema, config.grammar) {
            (Some(schema), true) => {
                let gbnf = llama_cpp_2::json_schema_to_grammar(&schema.to_string())
                    .map_err(|e| fail("grammar from schema", &e))?;
                Some(LlamaSampler::grammar(model, &gbnf, "root").map_err(|e| fail("grammar", &e))?)
            }
            _ => None,
        };
        let chain = if request.temperature <= 0.0 {
            LlamaSampler::greedy()
        } else {
            LlamaSampler::chain_simple([
                LlamaSampler::top_k(40),
                LlamaSampler::top_p(0.95, 1),
                LlamaSampler::temp(request.temperature),
                LlamaSampler::dist(request.seed.map_or(config.seed, |seed| seed as u32)),
            ])
        };
        Ok(Self { chain, grammar })
    }

    pub(super) fn sample(
        &mut self,
        model: &LlamaModel,
        ctx: &LlamaContext<'_>,
        index: i32,
    ) -> LlamaToken {
        let mut candidates = ctx.token_data_array_ith(index);
        candidates.apply_sampler(&mut self.chain);
        let mut token = candidates.selected_token();
        if let (Some(grammar), Some(chosen)) = (self.grammar.as_mut(), token) {
            if !allows(grammar, chosen) {
                let mut allowed = ctx.token_data_array_ith(index);
                allowed.apply_sampler(grammar);
                allowed.apply_sampler(&mut self.chain);
                token = allowed.selected_token();
            }
        }
        // No selection can only come from an empty vocabulary; end the
        // answer rather than panic.
        let token = token.unwrap_or_else(|| model.vocab().eos());
        if let Some(grammar) = self.grammar.as_mut() {
            grammar.accept(token);
        }
        self.chain.accept(token);
        token
    }

    /// Whether this request decodes under a grammar (and so may be fed
    /// the decision's fixed text, see [`hermes_core::llm::jump_forward`]).
    pub(super) fn constrained(&self) -> bool {
        self.grammar.is_some()
    }

    /// Takes `token` as chosen without sampling it (fixed text fed ahead),
    /// when the grammar allows it; false, and nothing taken, otherwise.
    pub(super) fn force(&mut self, token: LlamaToken) -> bool {
        let Some(grammar) = self.grammar.as_mut() else {
            return false;
        };
        if !allows(grammar, token) {
            return false;
        }
        grammar.accept(token);
        self.chain.accept(token);
        true
    }
}

/// Whether `grammar`, in its present state, allows `token` next.
fn allows(grammar: &mut LlamaSampler, token: LlamaToken) -> bool {
    let mut single = LlamaTokenDataArray::new(vec![LlamaTokenData::new(token, 1.0, 0.0)], false);
    single.apply_sampler(grammar);
    single
        .data
        .first()
        .is_some_and(|t| t.logit() != f32::NEG_INFINITY)
}
