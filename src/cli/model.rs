//! Model options shared by every subcommand that talks to a model.

use std::time::Duration;

use clap::parser::ValueSource;
use clap::{ArgMatches, Args};
use hermes::llm::openai::DEFAULT_BASE_URL;
use hermes::llm::{OpenAiClient, OpenAiConfig};

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
    /// Seconds to wait for one model request.
    #[arg(long, default_value_t = 120, value_name = "SECS")]
    pub request_timeout: u64,
}

impl ModelArgs {
    /// Builds the client; `matches` tells where `--base-url` came from, for
    /// the error shown when nothing answers there.
    pub fn client(&self, matches: Option<&ArgMatches>) -> Result<OpenAiClient, String> {
        let mut config = OpenAiConfig::new(self.base_url.clone(), self.model.clone());
        config.api_key = self
            .api_key
            .clone()
            .or_else(|| std::env::var("OPENAI_API_KEY").ok())
            .filter(|k| !k.is_empty());
        config.request_timeout = Duration::from_secs(self.request_timeout.max(1));
        config.origin_hint = origin_hint(matches.and_then(|m| m.value_source("base_url")));
        OpenAiClient::new(config).map_err(|e| e.to_string())
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
