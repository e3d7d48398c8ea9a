//! A GGUF model run in-process through llama.cpp (`llama-cpp-2`), behind the
//! `local-llm` cargo feature: no server, no API key.
//!
//! Decoding uses the model's own chat template and honours temperature and
//! `max_tokens`. When a request carries a JSON schema (the loop sends one
//! built from the live tool registry, the planner one with roles as an
//! enum), generation is constrained by the grammar llama.cpp derives from
//! it, so a malformed decision cannot be produced. The engine checks a
//! cancel flag between prompt chunks and after every token: dropping the
//! request (the wall clock firing) stops it within one chunk or token.
//!
//! One engine thread per loaded model owns it and a llama.cpp context
//! that keeps up to [`MAX_LIVE_CONVERSATIONS`] conversations alive, one
//! sequence each; the requests in hand are evaluated together, one prompt
//! chunk or one token each per step.
//! A request continues the sequence sharing the longest prefix with its
//! prompt and evaluates only the rest, so an agent's later rounds read only
//! the newest decision and observation. The reused count is reported as
//! `usage.cached_tokens`.

mod active;
mod decode;
mod engine;
mod kept;
mod slots;

pub use engine::MAX_LIVE_CONVERSATIONS;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::LlamaModel;
use tokio::sync::oneshot;

use hermes_core::llm::{ChatRequest, ChatResponse, Llm, LlmError};

/// One request for the engine.
struct Job {
    request: ChatRequest,
    /// Set when the caller stopped waiting (timeout, cancellation).
    cancel: Arc<AtomicBool>,
    reply: oneshot::Sender<Result<ChatResponse, LlmError>>,
    /// Counts the job until the engine is done with it.
    _generating: Generating,
}

/// Conversations kept alive for prefix reuse by default.
pub const DEFAULT_CACHED_CONVERSATIONS: usize = MAX_LIVE_CONVERSATIONS;

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
    /// How many conversations stay alive for prefix reuse, at most
    /// [`MAX_LIVE_CONVERSATIONS`], and fewer when `context_size` is above
    /// 4,096 so that together they reserve at most 16,384 tokens of KV
    /// cache (0 turns reuse off: every request evaluates its whole prompt).
    pub cached_conversations: usize,
    /// A folder where the KV cache of the engine's first conversation is
    /// kept between processes, so that the next process starts with its
    /// system prompt already read (`None`: nothing is kept; see
    /// `kept.rs`). Unused when `cached_conversations` is 0.
    pub kept_prompts: Option<PathBuf>,
    /// Feed a decision's fixed text (keys, punctuation, the chosen tool's
    /// required argument names, closing braces) in one batch instead of
    /// choosing it token by token, when the grammar is on (see
    /// [`hermes_core::llm::jump_forward`]).
    pub jump_forward: bool,
}

impl LocalConfig {
    /// Defaults for `model_path`: physical cores, 4096-token context, grammar
    /// on, prefix reuse on, jump-forward on.
    pub fn new(model_path: impl Into<PathBuf>) -> Self {
        Self {
            model_path: model_path.into(),
            threads: physical_cores(),
            context_size: 4096,
            grammar: true,
            seed: 42,
            cached_conversations: DEFAULT_CACHED_CONVERSATIONS,
            kept_prompts: None,
            jump_forward: true,
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

/// A GGUF model loaded in this process, answered by its engine thread.
pub struct LocalLlm {
    jobs: Option<mpsc::Sender<Job>>,
    engine: Option<JoinHandle<()>>,
    closing: Arc<AtomicBool>,
    path: PathBuf,
    name: String,
}

impl LocalLlm {
    /// Loads the model file (a few seconds for a small model) and starts
    /// its engine thread.
    pub fn load(config: LocalConfig) -> Result<Self, LlmError> {
        let path = config.model_path.clone();
        let name = crate::model_file_name(&path)?;
        let model = LlamaModel::load_from_file(backend()?, &path, &LlamaModelParams::default())
            .map_err(|e| LlmError::Other(format!("cannot load {}: {e}", path.display())))?;
        let (jobs, queue) = mpsc::channel();
        let (ready, started) = mpsc::sync_channel(1);
        let closing = Arc::new(AtomicBool::new(false));
        let stop = Arc::clone(&closing);
        let engine = std::thread::Builder::new()
            .name("hermes-llama".into())
            .spawn(move || engine::run(model, config, queue, ready, stop))
            .map_err(|e| LlmError::Other(format!("cannot start the local model's thread: {e}")))?;
        match started.recv() {
            Ok(Ok(())) => Ok(Self {
                jobs: Some(jobs),
                engine: Some(engine),
                closing,
                path,
                name,
            }),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(LlmError::Other(
                "the local model's thread stopped while starting".into(),
            )),
        }
    }

    /// The model file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for LocalLlm {
    /// Stops the request in hand, closes the queue and waits until the
    /// engine thread has freed the model: llama.cpp work must not outlive
    /// its owner (see [`wait_for_generations`]).
    fn drop(&mut self) {
        self.closing.store(true, Ordering::Relaxed);
        self.jobs.take();
        if let Some(engine) = self.engine.take() {
            let _ = engine.join();
        }
    }
}

/// Requests of this process queued or in the hands of an engine thread (a
/// cancelled one runs on until its next check of the cancel flag).
static GENERATING: AtomicUsize = AtomicUsize::new(0);

/// Counts one request from before it is queued until the engine is done
/// with it (answered, or skipped because its caller went away).
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
        let stopped = || LlmError::Other("the local model's engine has stopped".into());
        let cancel = Arc::new(AtomicBool::new(false));
        let _guard = CancelOnDrop(Arc::clone(&cancel));
        let (reply, answer) = oneshot::channel();
        let job = Job {
            request: request.clone(),
            cancel,
            reply,
            _generating: Generating::start(),
        };
        self.jobs
            .as_ref()
            .ok_or_else(stopped)?
            .send(job)
            .map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }

    fn model(&self) -> &str {
        &self.name
    }
}
