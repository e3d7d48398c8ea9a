//! A GGUF model run in-process through llama.cpp (`llama-cpp-2`), behind the
//! `local-llm` cargo feature: no server, no API key.
//!
//! Decoding uses the model's own chat template and honours temperature and
//! `max_tokens`. When a request carries a JSON schema (the loop sends one
//! built from the live tool registry, the planner one with roles as an
//! enum), generation is constrained by the grammar llama.cpp derives from
//! it, so a malformed decision cannot be produced. Generation runs on a
//! blocking thread and checks a cancel flag after every token: dropping
//! the request (the wall clock firing) stops it within one token.

use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatMessage, LlamaModel};
use llama_cpp_2::sampling::LlamaSampler;

use super::{ChatRequest, ChatResponse, Llm, LlmError, Usage};

/// Settings of the in-process model.
#[derive(Debug, Clone)]
pub struct LocalConfig {
    /// The GGUF file.
    pub model_path: PathBuf,
    /// CPU threads for decoding (default: physical cores).
    pub threads: usize,
    /// Context window in tokens; a prompt plus `max_tokens` beyond it is an error.
    pub context_size: u32,
    /// Constrain output with the request's JSON schema (turn off to measure
    /// the lenient parser on free output).
    pub grammar: bool,
    /// Sampling seed, for repeatable runs.
    pub seed: u32,
}

impl LocalConfig {
    /// Defaults for `model_path`: physical cores, 4096-token context, grammar on.
    pub fn new(model_path: impl Into<PathBuf>) -> Self {
        Self {
            model_path: model_path.into(),
            threads: physical_cores(),
            context_size: 4096,
            grammar: true,
            seed: 42,
        }
    }
}

/// The number of physical CPU cores (hyper-threads counted once).
pub fn physical_cores() -> usize {
    let mut cores = std::collections::HashSet::new();
    if let Ok(cpus) = std::fs::read_dir("/sys/devices/system/cpu") {
        for cpu in cpus.flatten() {
            let topology = cpu.path().join("topology");
            let package =
                std::fs::read_to_string(topology.join("physical_package_id")).unwrap_or_default();
            if let Ok(core) = std::fs::read_to_string(topology.join("core_id")) {
                cores.insert((package.trim().to_string(), core.trim().to_string()));
            }
        }
    }
    if cores.is_empty() {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    } else {
        cores.len()
    }
}

/// llama.cpp's backend may be initialised once per process.
fn backend() -> Result<&'static LlamaBackend, LlmError> {
    static BACKEND: OnceLock<Result<LlamaBackend, String>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            LlamaBackend::init()
                .map(|mut b| {
                    b.void_logs();
                    b
                })
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| LlmError::Other(format!("llama.cpp did not start: {e}")))
}

/// A GGUF model loaded in this process.
pub struct LocalLlm {
    model: Arc<LlamaModel>,
    config: LocalConfig,
    name: String,
}

impl LocalLlm {
    /// Loads the model file (a few seconds for a small model).
    pub fn load(config: LocalConfig) -> Result<Self, LlmError> {
        let path = &config.model_path;
        if !path.is_file() {
            return Err(LlmError::Other(format!(
                "no model file at {} (set --model-path or HERMES_MODEL_PATH; scripts/fetch-model.sh fetches one)",
                path.display()
            )));
        }
        let model = LlamaModel::load_from_file(backend()?, path, &LlamaModelParams::default())
            .map_err(|e| LlmError::Other(format!("cannot load {}: {e}", path.display())))?;
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "local".into());
        Ok(Self {
            model: Arc::new(model),
            config,
            name,
        })
    }

    /// The model file.
    pub fn path(&self) -> &Path {
        &self.config.model_path
    }
}

/// Sets the flag when the request future is dropped (timeout, cancellation).
struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

#[async_trait]
impl Llm for LocalLlm {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let cancel = Arc::new(AtomicBool::new(false));
        let _guard = CancelOnDrop(Arc::clone(&cancel));
        let model = Arc::clone(&self.model);
        let config = self.config.clone();
        let request = request.clone();
        tokio::task::spawn_blocking(move || generate(&model, &config, &request, &cancel))
            .await
            .map_err(|e| LlmError::Other(format!("local generation crashed: {e}")))?
    }

    fn model(&self) -> &str {
        &self.name
    }
}

/// The blocking decode loop.
fn generate(
    model: &LlamaModel,
    config: &LocalConfig,
    request: &ChatRequest,
    cancel: &AtomicBool,
) -> Result<ChatResponse, LlmError> {
    let fail = |what: &str, e: &dyn std::fmt::Display| {
        LlmError::Other(format!("local model: {what}: {e}"))
    };
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
    let batch_size = 512usize;
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(config.context_size))
        .with_n_batch(batch_size as u32)
        .with_n_threads(threads)
        .with_n_threads_batch(threads);
    let mut ctx = model
        .new_context(backend()?, params)
        .map_err(|e| fail("context", &e))?;
    let mut batch = LlamaBatch::new(batch_size, 1);
    for (chunk_index, chunk) in tokens.chunks(batch_size).enumerate() {
        if cancel.load(Ordering::Relaxed) {
            return Err(LlmError::Other("generation cancelled".into()));
        }
        batch.clear();
        let base = chunk_index * batch_size;
        for (i, token) in chunk.iter().enumerate() {
            let last = base + i + 1 == tokens.len();
            batch
                .add(*token, (base + i) as i32, &[0], last)
                .map_err(|e| fail("batch", &e))?;
        }
        ctx.decode(&mut batch)
            .map_err(|e| fail("prompt decode", &e))?;
    }
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
    let mut sampler = LlamaSampler::chain_simple(samplers);
    let mut output = Vec::new();
    let mut generated = 0u64;
    let mut position = tokens.len() as i32;
    let mut finish = "length";
    while generated < u64::from(request.max_tokens) {
        if cancel.load(Ordering::Relaxed) {
            return Err(LlmError::Other("generation cancelled".into()));
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
            .add(token, position, &[0], true)
            .map_err(|e| fail("batch", &e))?;
        position += 1;
        ctx.decode(&mut batch).map_err(|e| fail("decode", &e))?;
    }
    Ok(ChatResponse {
        content: String::from_utf8_lossy(&output).into_owned(),
        usage: Usage {
            prompt_tokens: tokens.len() as u64,
            completion_tokens: generated,
        },
        finish_reason: Some(finish.into()),
    })
}
