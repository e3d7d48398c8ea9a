//! A GGUF model run in-process in pure Rust (candle): the engine of the
//! default build, needing no server, no API key and no system packages.
//!
//! It runs Qwen2-architecture models (the default Qwen2.5-Coder-Instruct
//! among them) from their GGUF file alone: weights, tokenizer and chat
//! template all come from the file. llama.cpp (`--features local-llm`)
//! runs more architectures, constrains decisions with a grammar and maps
//! the file instead of reading it into memory, but needs cmake
//! and clang to build.
//!
//! **One model, many executors.** Every [`NativeLlm`] on the same file
//! shares one loaded model and one engine thread ([`engine`]), which
//! decodes all concurrent requests together in one batch and advances each
//! of them every step, so no executor starves. [`model_loads`] counts the
//! loads.
//!
//! **Prefix reuse.** A request continues from the cached state sharing its
//! longest prefix (an agent's earlier round) and evaluates only the rest;
//! the reused count is `usage.cached_tokens`.
//!
//! **Constrained decoding.** A request with a JSON schema (a decision, a
//! plan) is decoded under the schema's grammar ([`constraint`], with
//! llguidance), and a decision is fed its fixed text ahead
//! (jump-forward), as on llama.cpp; [`NativeConfig::grammar`] and
//! [`NativeConfig::jump_forward`] turn them off.

mod architecture;
mod attention;
mod constraint;
mod engine;
mod kept;
#[doc(hidden)]
pub mod kernel_bench;
mod kv;
mod product;
mod qwen2;
mod runaway;
#[cfg(test)]
mod test_util;
mod tiles;
mod tokenizer;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use async_trait::async_trait;
use candle_core::quantized::gguf_file;
use candle_transformers::generation::Sampling;
use tokio::sync::oneshot;

pub use self::architecture::runs_model;
use self::engine::{Engine, Job};
use self::tokenizer::ChatTokenizer;
use hermes_core::llm::prefix_cache::PrefixCache;
use hermes_core::llm::{ChatRequest, ChatResponse, Llm, LlmError};

/// The engine's name in its kept-state files, changed whenever the
/// engine's numerics change, so that a state an older build kept, whose
/// last bits differ, is not loaded: `candle2` when its products and
/// attention became row-invariant (EVALS.md section 44), `candle3` when
/// its attention became a kernel of its own (`attention/`).
const KEPT_ENGINE: &str = "candle3";

/// Conversations whose state is kept for prefix reuse by default (each
/// holds about 56 KB per token for a 1.5B model).
pub const DEFAULT_CACHED_CONVERSATIONS: usize = 4;

/// Settings of the built-in engine.
#[derive(Debug, Clone)]
pub struct NativeConfig {
    /// The GGUF file.
    pub model_path: PathBuf,
    /// Context window in tokens; a reply gets what a prompt leaves of it, up
    /// to `max_tokens` (see `reply_room`).
    pub context_size: u32,
    /// Sampling seed, for repeatable runs.
    pub seed: u64,
    /// How many conversations keep their state for prefix reuse (0 turns
    /// reuse off: every request evaluates its whole prompt).
    pub cached_conversations: usize,
    /// A folder where the state of the engine's first conversation is kept
    /// between processes, so that the next process starts with its system
    /// prompt already read (`None`: nothing is kept; see
    /// [`kept_prompt`](hermes_core::llm::kept_prompt)). Unused when
    /// `cached_conversations` is 0.
    pub kept_prompts: Option<PathBuf>,
    /// Decode an answer under its request's JSON schema (default on).
    pub grammar: bool,
    /// Feed a decision's fixed text (keys, punctuation, closing braces)
    /// ahead in one batch instead of choosing it token by token (default
    /// on; needs the grammar; see
    /// [`jump_forward`](hermes_core::llm::jump_forward)).
    pub jump_forward: bool,
}

impl NativeConfig {
    /// Defaults for `model_path`: 4096-token context, prefix reuse, grammar
    /// and jump-forward on.
    pub fn new(model_path: impl Into<PathBuf>) -> Self {
        Self {
            model_path: model_path.into(),
            context_size: 4096,
            seed: 42,
            cached_conversations: DEFAULT_CACHED_CONVERSATIONS,
            kept_prompts: None,
            grammar: true,
            jump_forward: true,
        }
    }
}

/// A loaded model and the channel to its engine thread; the thread ends
/// when the last handle is dropped.
struct Loaded {
    jobs: Sender<Job>,
    tokenizer: Arc<ChatTokenizer>,
    context: usize,
}

/// Models loaded in this process, by file, context size and cache size.
type Registry = HashMap<(PathBuf, u32, usize), Weak<Loaded>>;

static LOADED: Mutex<Option<Registry>> = Mutex::new(None);
static LOADS: AtomicUsize = AtomicUsize::new(0);

/// How many times this process has loaded a model file into the built-in
/// engine (handles on an already loaded file share it and do not count).
pub fn model_loads() -> usize {
    LOADS.load(Ordering::SeqCst)
}

/// Sets the CPU threads of the engine's matrix products, unless
/// `CANDLE_NUM_THREADS` already does. candle reads the count once, at the
/// first model use, so only a call before the first load takes effect.
/// Default: every logical core.
pub fn set_threads(threads: usize) {
    if std::env::var_os("CANDLE_NUM_THREADS").is_none() {
        std::env::set_var("CANDLE_NUM_THREADS", threads.max(1).to_string());
    }
}

/// A GGUF model served by the built-in engine.
pub struct NativeLlm {
    loaded: Arc<Loaded>,
    config: NativeConfig,
    name: String,
}

impl NativeLlm {
    /// Loads the model file, or shares it when this process already has it
    /// loaded with the same settings (loading takes seconds and about the
    /// file's size in memory).
    pub fn load(config: NativeConfig) -> Result<Self, LlmError> {
        let path = &config.model_path;
        let name = crate::model_file_name(path)?;
        let key = (
            path.canonicalize().unwrap_or_else(|_| path.clone()),
            config.context_size,
            config.cached_conversations,
        );
        let mut registry = LOADED.lock().unwrap_or_else(PoisonError::into_inner);
        let registry = registry.get_or_insert_with(HashMap::new);
        registry.retain(|_, loaded| loaded.strong_count() > 0);
        let loaded = match registry.get(&key).and_then(Weak::upgrade) {
            Some(loaded) => loaded,
            None => {
                let loaded = Arc::new(start_engine(&config)?);
                registry.insert(key, Arc::downgrade(&loaded));
                loaded
            }
        };
        Ok(Self {
            loaded,
            config,
            name,
        })
    }

    /// The model file.
    pub fn path(&self) -> &Path {
        &self.config.model_path
    }
}

/// Reads the file and starts its engine thread.
fn start_engine(config: &NativeConfig) -> Result<Loaded, LlmError> {
    let path = &config.model_path;
    let unreadable =
        |e: &dyn std::fmt::Display| LlmError::Other(format!("cannot load {}: {e}", path.display()));
    let mut file = std::fs::File::open(path).map_err(|e| unreadable(&e))?;
    let content =
        gguf_file::Content::read(&mut file).map_err(|e| unreadable(&qwen2::message(e)))?;
    let tokenizer = Arc::new(ChatTokenizer::from_gguf(&content).map_err(|e| unreadable(&e))?);
    let model = qwen2::Qwen2::load(&content, &mut file, config.context_size as usize)
        .map_err(|e| unreadable(&qwen2::message(e)))?;
    LOADS.fetch_add(1, Ordering::SeqCst);
    let context = model.context;
    let kept = config
        .kept_prompts
        .as_deref()
        .filter(|_| config.cached_conversations > 0)
        .and_then(|dir| hermes_core::llm::kept_prompt::kept_prompt_file(dir, path, KEPT_ENGINE));
    let engine = Engine {
        model,
        tokenizer: Arc::clone(&tokenizer),
        states: PrefixCache::new(config.cached_conversations),
        kept,
        first_answer: std::cell::Cell::new(true),
        grammars: std::cell::OnceCell::new(),
    };
    engine.warm_up();
    let (jobs, receiver) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("hermes-engine".into())
        .spawn(move || engine.run(receiver))
        .map_err(|e| unreadable(&e))?;
    Ok(Loaded {
        jobs,
        tokenizer,
        context,
    })
}

#[async_trait]
impl Llm for NativeLlm {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let prompt = self
            .loaded
            .tokenizer
            .encode(&tokenizer::chatml(&request.messages))
            .map_err(LlmError::Other)?;
        let max_tokens = crate::reply_room(prompt.len(), request.max_tokens, self.loaded.context)?;
        let sampling = if request.temperature <= 0.0 {
            Sampling::ArgMax
        } else {
            Sampling::TopKThenTopP {
                k: 40,
                p: 0.95,
                temperature: f64::from(request.temperature),
            }
        };
        let (reply, answer) = oneshot::channel();
        let job = Job {
            prompt,
            max_tokens,
            sampling,
            seed: request.seed.unwrap_or(self.config.seed),
            schema: request.schema.clone().filter(|_| self.config.grammar),
            jump_forward: self.config.jump_forward,
            reply,
        };
        let gone = || LlmError::Other("the local model's engine thread has stopped".into());
        self.loaded.jobs.send(job).map_err(|_| gone())?;
        answer.await.map_err(|_| gone())?
    }

    fn model(&self) -> &str {
        &self.name
    }
}
