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
    /// `--provider local` without a model file.
    #[cfg(feature = "local-llm")]
    #[error("--provider local needs --model-path FILE.gguf (or HERMES_MODEL_PATH)")]
    NoModelPath,
    /// The local provider was asked for but not compiled in.
    #[cfg(not(feature = "local-llm"))]
    #[error("this hermes was built without the local model provider; rebuild with `cargo build --release --features local-llm` (needs cmake, clang, libclang-dev)")]
    LocalNotBuilt,
    /// The model (local file or HTTP client) could not be set up.
    #[error(transparent)]
    Llm(#[from] LlmError),
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
    /// in-process; needs the local-llm feature). Default: local when a
    /// model path is set and no base URL is, else openai.
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
    /// Let the local model write freely instead of constraining it to the
    /// decision grammar (to measure the lenient parser).
    #[arg(long)]
    pub no_grammar: bool,
    /// Make the local model evaluate every prompt whole instead of
    /// continuing from the cached state of an earlier round (to measure
    /// what prefix reuse saves).
    #[arg(long)]
    pub no_prefix_cache: bool,
}

impl ModelArgs {
    /// The model to use: the in-process one or an HTTP client, as
    /// `--provider` (or its default) says.
    pub fn llm(&self, matches: Option<&ArgMatches>) -> Result<Arc<dyn Llm>, ModelConfigError> {
        if self.is_local(matches) {
            return self.local();
        }
        Ok(Arc::new(self.client(matches)?))
    }

    /// Whether the in-process model is used: `--provider local`, or a model
    /// path with no base URL given by flag or environment.
    pub fn is_local(&self, matches: Option<&ArgMatches>) -> bool {
        let base_url_given = matches
            .and_then(|m| m.value_source("base_url"))
            .is_some_and(|s| matches!(s, ValueSource::CommandLine | ValueSource::EnvVariable));
        match self.provider.as_deref() {
            Some(p) => p == "local",
            None => self.model_path.is_some() && !base_url_given,
        }
    }

    #[cfg(feature = "local-llm")]
    fn local(&self) -> Result<Arc<dyn Llm>, ModelConfigError> {
        use hermes::llm::local::{LocalConfig, LocalLlm};
        let path = self
            .model_path
            .clone()
            .ok_or(ModelConfigError::NoModelPath)?;
        let mut config = LocalConfig::new(path);
        if let Some(threads) = self.threads {
            config.threads = threads.max(1);
        }
        config.context_size = self.context_size.max(256);
        config.grammar = !self.no_grammar;
        if self.no_prefix_cache {
            config.cached_conversations = 0;
        }
        Ok(Arc::new(LocalLlm::load(config)?))
    }

    #[cfg(not(feature = "local-llm"))]
    fn local(&self) -> Result<Arc<dyn Llm>, ModelConfigError> {
        Err(ModelConfigError::LocalNotBuilt)
    }

    /// Builds the HTTP client; `matches` tells where `--base-url` came
    /// from, for the error shown when nothing answers there.
    pub fn client(&self, matches: Option<&ArgMatches>) -> Result<OpenAiClient, ModelConfigError> {
        let mut config = OpenAiConfig::new(self.base_url.clone(), self.model.clone());
        config.api_key = self
            .api_key
            .clone()
            .or_else(|| std::env::var("OPENAI_API_KEY").ok())
            .filter(|k| !k.is_empty());
        config.request_timeout = self.request_timeout;
        config.origin_hint = origin_hint(matches.and_then(|m| m.value_source("base_url")));
        Ok(OpenAiClient::new(config)?)
    }
}

fn origin_hint(source: Option<ValueSource>) -> String {
    let origin = match source {
        Some(ValueSource::CommandLine) => "The URL came from --base-url.".to_string(),
        Some(ValueSource::EnvVariable) => "The URL came from HERMES_BASE_URL.".to_string(),
        _ => format!(
            "Neither --base-url nor HERMES_BASE_URL is set, so the default {DEFAULT_BASE_URL} (Ollama) was used."
        ),
    };
    format!(
        "{origin} Start the server, or point --base-url / HERMES_BASE_URL at one; the model is set by --model / HERMES_MODEL and the key by --api-key / HERMES_API_KEY / OPENAI_API_KEY."
    )
}
