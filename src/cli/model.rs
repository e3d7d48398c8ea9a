//! Model options shared by every subcommand that talks to a model.

use std::time::Duration;

use clap::parser::ValueSource;
use clap::{ArgMatches, Args};
use hermes::llm::openai::DEFAULT_BASE_URL;
use std::sync::Arc;

use hermes::llm::{Llm, LlmError, OpenAiClient, OpenAiConfig};

use super::output::parse_seconds;

/// Why no model could be set up from the model flags.
#[derive(Debug, thiserror::Error)]
pub enum ModelConfigError {
    /// The default model could not be fetched or is damaged.
    #[error(transparent)]
    Fetch(#[from] hermes::model_files::FetchError),
    /// The local provider (or the engine asked for) was not compiled in.
    #[error("this hermes was built without the {0} engine; {1}")]
    EngineNotBuilt(&'static str, &'static str),
    /// The model (local file or HTTP client) could not be set up.
    #[error(transparent)]
    Llm(#[from] LlmError),
}

/// The model a command runs on.
pub struct ResolvedModel {
    /// The model.
    pub llm: Arc<dyn Llm>,
    /// Whether it runs in-process (one engine serves every role).
    pub local: bool,
}

/// `--engine` for the built-in pure-Rust engine.
const ENGINE_CANDLE: &str = "candle";
/// `--engine` for llama.cpp.
const ENGINE_LLAMA: &str = "llama.cpp";

/// How to get llama.cpp.
const REBUILD_LLAMA: &str =
    "rebuild with `cargo build --release --features local-llm` (needs cmake, clang and libclang-dev)";
/// How to get the built-in engine.
const REBUILD_CANDLE: &str = "rebuild with the default features (they include `native-llm`)";

/// Whether this build has an in-process engine at all.
const ANY_ENGINE: bool = cfg!(any(feature = "local-llm", feature = "native-llm"));

/// Which model the flags ask for.
enum Choice {
    Server,
    Local,
    LocalBecauseNoServer,
}

/// Whether something accepts connections at `base_url`'s host and port
/// within half a second.
async fn answers(base_url: &str) -> bool {
    let Ok(url) = reqwest::Url::parse(base_url) else {
        return false;
    };
    let (Some(host), Some(port)) = (url.host_str(), url.port_or_known_default()) else {
        return false;
    };
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let connect = tokio::net::TcpStream::connect((host, port));
    matches!(
        tokio::time::timeout(Duration::from_millis(500), connect).await,
        Ok(Ok(_))
    )
}

/// Where the model is and how to reach it.
#[derive(Debug, Clone, Args)]
pub struct ModelArgs {
    /// OpenAI-compatible base URL, up to and including /v1.
    #[arg(long, env = "HERMES_BASE_URL", default_value = DEFAULT_BASE_URL)]
    pub base_url: String,
    /// Model name as the server knows it.
    #[arg(long, env = "HERMES_MODEL", default_value = "qwen2.5:7b")]
    pub model: String,
    /// API key (falls back to OPENAI_API_KEY). Not needed for Ollama.
    #[arg(long, env = "HERMES_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Seconds to wait for one model request (fractions allowed).
    #[arg(long, default_value = "120", value_parser = parse_seconds, value_name = "SECS")]
    pub request_timeout: Duration,
    /// `openai` (any OpenAI-compatible server) or `local` (a GGUF file run
    /// in-process, on the engine `--engine` names). Default: local when a
    /// model path is set and no base URL is; openai when a base URL is set;
    /// with neither, openai if something answers at the default URL, else
    /// local with the default model (fetched on first use).
    #[arg(long, value_parser = ["openai", "local"])]
    pub provider: Option<String>,
    /// GGUF model file for the local provider.
    #[arg(long, env = "HERMES_MODEL_PATH", value_name = "FILE")]
    pub model_path: Option<std::path::PathBuf>,
    /// CPU threads for the local provider (default: physical cores).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// Context window of the local provider, in tokens.
    #[arg(long, default_value_t = 4096, value_name = "TOKENS")]
    pub context_size: u32,
    /// The in-process engine: `candle` (built in, pure Rust, Qwen2 models)
    /// or `llama.cpp` (`--features local-llm`; most GGUF models). Both
    /// decode under the grammar with jump-forward. Default: candle for a
    /// Qwen2 model (the faster of the two on CPU: BENCHMARKS.md), llama.cpp
    /// for other models when compiled in.
    #[arg(long, value_parser = [ENGINE_CANDLE, ENGINE_LLAMA])]
    pub engine: Option<String>,
    /// Let the model write freely instead of constraining it to the
    /// decision's (or plan's) JSON schema: no grammar in-process (either
    /// engine), and `response_format` `json_object` instead of
    /// `json_schema` to a server (to measure the lenient parser).
    #[arg(long)]
    pub no_grammar: bool,
    /// Make the local model evaluate every prompt whole instead of
    /// continuing from the cached state of an earlier round (to measure
    /// what prefix reuse saves).
    #[arg(long)]
    pub no_prefix_cache: bool,
    /// Make the in-process engine choose every token of a decision itself
    /// instead of feeding the decision's fixed text (keys, punctuation,
    /// closing braces) in one batch (to measure what jump-forward saves;
    /// see BENCHMARKS.md). Jump-forward needs the grammar.
    #[arg(long)]
    pub no_jump_forward: bool,
}

impl ModelArgs {
    /// The model to use: the in-process one or an HTTP client, as
    /// `--provider` (or its default) says.
    pub async fn llm(
        &self,
        matches: Option<&ArgMatches>,
    ) -> Result<Arc<dyn Llm>, ModelConfigError> {
        Ok(self.resolve(matches).await?.llm)
    }

    /// The model to use and whether it runs in-process. Without
    /// `--provider`: a model path and no base URL mean in-process; a base
    /// URL (flag or `HERMES_BASE_URL`) means that server; neither means the
    /// default server when something answers there, else the in-process
    /// engine with the default model (fetched on first use), said in one
    /// line on stderr.
    pub async fn resolve(
        &self,
        matches: Option<&ArgMatches>,
    ) -> Result<ResolvedModel, ModelConfigError> {
        let choice = match self.provider.as_deref() {
            Some("local") => Choice::Local,
            Some(_) => Choice::Server,
            None if self.model_path.is_some() && !self.base_url_given(matches) => Choice::Local,
            None if self.base_url_given(matches) || self.model_path.is_some() => Choice::Server,
            None if ANY_ENGINE && !answers(&self.base_url).await => Choice::LocalBecauseNoServer,
            None => Choice::Server,
        };
        match choice {
            Choice::Server => Ok(ResolvedModel {
                llm: Arc::new(self.client(matches)?),
                local: false,
            }),
            Choice::Local | Choice::LocalBecauseNoServer => {
                let why = matches!(choice, Choice::LocalBecauseNoServer).then(|| {
                    format!(
                        "no --base-url or HERMES_BASE_URL is set and nothing answers at {}",
                        self.base_url
                    )
                });
                Ok(ResolvedModel {
                    llm: self.local(why).await?,
                    local: true,
                })
            }
        }
    }

    /// Whether `--base-url` or `HERMES_BASE_URL` set the base URL.
    fn base_url_given(&self, matches: Option<&ArgMatches>) -> bool {
        matches
            .and_then(|m| m.value_source("base_url"))
            .is_some_and(|s| matches!(s, ValueSource::CommandLine | ValueSource::EnvVariable))
    }

    /// The in-process model: `--model-path`, else the known model `--model`
    /// names (`0.5b`, `1.5b`), else the default one, fetched into the cache
    /// when missing, on the engine `--engine` names. `why` (when the engine
    /// was chosen for the user) is said with the model's name in one line.
    async fn local(&self, why: Option<String>) -> Result<Arc<dyn Llm>, ModelConfigError> {
        let asked = self.engine.as_deref();
        if asked == Some(ENGINE_LLAMA) && !cfg!(feature = "local-llm") {
            return Err(ModelConfigError::EngineNotBuilt("llama.cpp", REBUILD_LLAMA));
        }
        let candle_missing = match asked {
            Some(engine) => engine == ENGINE_CANDLE && !cfg!(feature = "native-llm"),
            None => !cfg!(any(feature = "native-llm", feature = "local-llm")),
        };
        if candle_missing {
            return Err(ModelConfigError::EngineNotBuilt("candle", REBUILD_CANDLE));
        }
        let path = match &self.model_path {
            Some(path) => path.clone(),
            None => {
                let name = hermes::model_files::find(&self.model)
                    .map_or(hermes::model_files::DEFAULT_MODEL, |m| m.name);
                let model = super::model_files::known(name)?;
                let cache = hermes::model_files::ModelCache::from_env();
                let bar = super::model_files::BarProgress::new();
                let sources = hermes::model_files::Sources::from_env();
                let fetched = cache.ensure(model, &sources, &bar).await;
                bar.finish();
                fetched?
            }
        };
        let engine = asked.unwrap_or_else(|| default_engine(&path));
        eprintln!("{}", self.notice(&path, engine, why.as_deref()));
        if engine == ENGINE_LLAMA {
            self.llama_cpp(path)
        } else {
            self.candle(path)
        }
    }

    /// The one line that says which model runs in-process, on which
    /// engine, whether under the grammar and with jump-forward, and why
    /// in-process when Hermes chose it.
    fn notice(&self, path: &std::path::Path, engine: &str, why: Option<&str>) -> String {
        let name = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        let decoding = match (self.no_grammar, self.no_jump_forward) {
            (true, _) => "no grammar",
            (false, true) => "grammar",
            (false, false) => "grammar, jump-forward",
        };
        let because = why
            .map(|why| format!(", because {why}"))
            .unwrap_or_default();
        format!("model: {name} in-process ({engine}, {decoding}){because}")
    }

    #[cfg(feature = "local-llm")]
    fn llama_cpp(&self, path: std::path::PathBuf) -> Result<Arc<dyn Llm>, ModelConfigError> {
        use hermes::llm::local::{LocalConfig, LocalLlm};
        let mut config = LocalConfig::new(path);
        if let Some(threads) = self.threads {
            config.threads = threads.max(1);
        }
        config.context_size = self.context_size.max(256);
        config.grammar = !self.no_grammar;
        config.jump_forward = !self.no_jump_forward;
        if self.no_prefix_cache {
            config.cached_conversations = 0;
        }
        config.kept_prompts = Some(hermes::model_files::ModelCache::from_env().prompts_dir());
        Ok(Arc::new(LocalLlm::load(config)?))
    }

    #[cfg(not(feature = "local-llm"))]
    fn llama_cpp(&self, _path: std::path::PathBuf) -> Result<Arc<dyn Llm>, ModelConfigError> {
        Err(ModelConfigError::EngineNotBuilt("llama.cpp", REBUILD_LLAMA))
    }

    #[cfg(feature = "native-llm")]
    fn candle(&self, path: std::path::PathBuf) -> Result<Arc<dyn Llm>, ModelConfigError> {
        use hermes::llm::native::{NativeConfig, NativeLlm};
        if let Some(threads) = self.threads {
            hermes::llm::native::set_threads(threads);
        }
        let mut config = NativeConfig::new(path);
        config.context_size = self.context_size.max(256);
        config.grammar = !self.no_grammar;
        config.jump_forward = !self.no_jump_forward;
        if self.no_prefix_cache {
            config.cached_conversations = 0;
        }
        config.kept_prompts = Some(hermes::model_files::ModelCache::from_env().prompts_dir());
        Ok(Arc::new(NativeLlm::load(config)?))
    }

    #[cfg(not(feature = "native-llm"))]
    fn candle(&self, _path: std::path::PathBuf) -> Result<Arc<dyn Llm>, ModelConfigError> {
        Err(ModelConfigError::EngineNotBuilt("candle", REBUILD_CANDLE))
    }

    /// Builds the HTTP client; `matches` tells where `--base-url` came
    /// from, for the error shown when nothing answers there.
    pub fn client(&self, matches: Option<&ArgMatches>) -> Result<OpenAiClient, ModelConfigError> {
        let mut config = OpenAiConfig::new(self.base_url.clone(), self.model.clone());
        config.api_key = self.api_key();
        config.request_timeout = self.request_timeout;
        config.origin_hint = origin_hint(matches.and_then(|m| m.value_source("base_url")));
        config.structured_output = !self.no_grammar;
        Ok(OpenAiClient::new(config)?)
    }
}

impl ModelArgs {
    /// The API key: `--api-key` / `HERMES_API_KEY`, else `OPENAI_API_KEY`.
    pub fn api_key(&self) -> Option<String> {
        self.api_key
            .clone()
            .or_else(|| std::env::var("OPENAI_API_KEY").ok())
            .filter(|k| !k.is_empty())
    }
}

fn origin_hint(source: Option<ValueSource>) -> String {
    let origin = match source {
        Some(ValueSource::CommandLine) => "The URL came from --base-url.".to_string(),
        Some(ValueSource::EnvVariable) => "The URL came from HERMES_BASE_URL.".to_string(),
        _ => format!(
            "Neither --base-url nor HERMES_BASE_URL is set, so the default {DEFAULT_BASE_URL} (Ollama) was used{}.",
            if ANY_ENGINE { "" } else { "; with no server at all, build with the default features to run a model in-process" }
        ),
    };
    format!(
        "{origin} Start the server, or point --base-url / HERMES_BASE_URL at one; the model is set by --model / HERMES_MODEL and the key by --api-key / HERMES_API_KEY / OPENAI_API_KEY."
    )
}

/// The engine for `path` when `--engine` names none: candle for a model it
/// runs (Qwen2: faster than llama.cpp in-process on the agent file task,
/// 0.68x its time on AVX2, BENCHMARKS.md session 58), llama.cpp for any
/// other model when compiled in; the one engine built in otherwise.
fn default_engine(path: &std::path::Path) -> &'static str {
    #[cfg(all(feature = "native-llm", feature = "local-llm"))]
    {
        if hermes::llm::native::runs_model(path) {
            ENGINE_CANDLE
        } else {
            ENGINE_LLAMA
        }
    }
    #[cfg(not(all(feature = "native-llm", feature = "local-llm")))]
    {
        let _ = path;
        if cfg!(feature = "local-llm") {
            ENGINE_LLAMA
        } else {
            ENGINE_CANDLE
        }
    }
}
