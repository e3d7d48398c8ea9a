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
//!
//! Prefix reuse: after each request the model state (KV cache) is kept
//! with the tokens it holds ([`PrefixCache`]); the next request starts from
//! the state sharing its longest prefix and evaluates only the rest, so an
//! agent's later rounds re-read only the newest decision and observation.
//! The reused count is reported as `usage.cached_tokens`.

mod decode;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::SeqState;

use super::prefix_cache::PrefixCache;
use super::{ChatRequest, ChatResponse, Llm, LlmError};

/// Conversations whose model state is kept for prefix reuse by default
/// (each holds the KV cache of its tokens: about 28 KB per token for a
/// 1.5B model).
pub const DEFAULT_CACHED_CONVERSATIONS: usize = 8;

/// The states kept for prefix reuse.
type StateCache = PrefixCache<LlamaToken, SeqState>;

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
    /// How many conversations keep their model state for prefix reuse
    /// (0 turns reuse off: every request evaluates its whole prompt).
    pub cached_conversations: usize,
}

impl LocalConfig {
    /// Defaults for `model_path`: physical cores, 4096-token context, grammar
    /// on, prefix reuse on.
    pub fn new(model_path: impl Into<PathBuf>) -> Self {
        Self {
            model_path: model_path.into(),
            threads: physical_cores(),
            context_size: 4096,
            grammar: true,
            seed: 42,
            cached_conversations: DEFAULT_CACHED_CONVERSATIONS,
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
    states: Arc<StateCache>,
}

impl LocalLlm {
    /// Loads the model file (a few seconds for a small model).
    pub fn load(config: LocalConfig) -> Result<Self, LlmError> {
        let path = &config.model_path;
        let name = super::model_file_name(path)?;
        let model = LlamaModel::load_from_file(backend()?, path, &LlamaModelParams::default())
            .map_err(|e| LlmError::Other(format!("cannot load {}: {e}", path.display())))?;
        let states = Arc::new(PrefixCache::new(config.cached_conversations));
        Ok(Self {
            model: Arc::new(model),
            config,
            name,
            states,
        })
    }

    /// The model file.
    pub fn path(&self) -> &Path {
        &self.config.model_path
    }
}

/// Generations of this process still on a blocking thread (a cancelled one
/// runs on until its next check of the cancel flag).
static GENERATING: AtomicUsize = AtomicUsize::new(0);

/// Counts one generation from before it is queued until its closure is
/// dropped: run to its end, or discarded unstarted by a runtime shutdown.
struct Generating;

impl Generating {
    fn start() -> Self {
        GENERATING.fetch_add(1, Ordering::SeqCst);
        Self
    }
}

impl Drop for Generating {
    fn drop(&mut self) {
        GENERATING.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Waits up to `limit` until no in-process generation runs any more, and
/// says whether none does. Call it before the process exits: `exit` runs
/// llama.cpp's C++ static destructors, and a generation still decoding on
/// another thread (one whose request was dropped by a timeout stops only at
/// its next cancel check) can then crash the process after its work was
/// done. A cancelled generation stops within one prompt chunk or one token.
pub fn wait_for_generations(limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while GENERATING.load(Ordering::SeqCst) > 0 {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    true
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
        let states = Arc::clone(&self.states);
        let request = request.clone();
        let generating = Generating::start();
        tokio::task::spawn_blocking(move || {
            let answer = decode::generate(&model, &config, &states, &request, &cancel);
            // The model may be freed here (its last holder); that is
            // llama.cpp work too, so it comes before the count drops.
            drop((model, states));
            drop(generating);
            answer
        })
        .await
        .map_err(|e| LlmError::Other(format!("local generation crashed: {e}")))?
    }

    fn model(&self) -> &str {
        &self.name
    }
}
