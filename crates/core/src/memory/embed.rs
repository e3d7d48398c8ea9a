//! Embeddings for memory: the [`Embedder`] trait and [`OpenAiEmbedder`], a
//! client for any OpenAI-compatible `POST {base_url}/embeddings` (OpenAI,
//! Ollama's `/v1`, vLLM, llama.cpp's server with `--embedding`).
//!
//! Like the chat client it reads responses leniently (unknown fields
//! ignored, items put back in `index` order) and retries 429, 5xx,
//! connection errors and timeouts with `backon`'s exponential backoff.
//! The in-process all-MiniLM-L6-v2 embedder is `memory::minilm`, behind
//! the `local-embed` feature.

use std::path::PathBuf;
use std::time::Duration;

use async_trait::async_trait;
use backon::{ExponentialBuilder, Retryable};
use serde::Deserialize;
use serde_json::json;

/// Turns texts into vectors for cosine ranking.
#[async_trait]
pub trait Embedder: Send + Sync {
    /// One vector per text, in the order of `texts`, all of one length.
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError>;

    /// The model's name, to keep vectors of different models apart.
    fn model(&self) -> &str;
}

/// Why an embedding request failed. A server's errors name the URL
/// tried, a local model's the file.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// No connection to the server.
    #[error("could not reach the embedding server at {url}: {reason}")]
    Unreachable {
        /// The URL posted to.
        url: String,
        /// The innermost transport error.
        reason: String,
    },
    /// The server did not answer in time.
    #[error("the embedding server at {url} did not answer within {}s", timeout.as_secs_f64())]
    Timeout {
        /// The URL posted to.
        url: String,
        /// The limit for one request.
        timeout: Duration,
    },
    /// The server answered with an error status.
    #[error("the embedding server at {url} answered HTTP {status}: {body}")]
    Status {
        /// The URL posted to.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The start of the body.
        body: String,
    },
    /// The server's answer was not the embeddings asked for.
    #[error("the embedding server at {url} sent an unusable answer: {reason}")]
    BadResponse {
        /// The URL posted to.
        url: String,
        /// What was wrong with it.
        reason: String,
    },
    /// The HTTP client could not be built.
    #[error("cannot build the embedding HTTP client: {0}")]
    Client(String),
    /// A file the local model needs is not there.
    #[error("{} is missing; {hint}", path.display())]
    MissingFile {
        /// The file looked for.
        path: PathBuf,
        /// How to get it.
        hint: String,
    },
    /// A local model file could not be read or is not what was expected.
    #[error("cannot load {}: {reason}", path.display())]
    BadFile {
        /// The file.
        path: PathBuf,
        /// What was wrong with it.
        reason: String,
    },
    /// The local model failed while embedding.
    #[error("the local embedding model failed: {0}")]
    Local(String),
}

impl EmbedError {
    /// Whether trying again may help: transport errors, timeouts, 429, 5xx.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Unreachable { .. } | Self::Timeout { .. } => true,
            Self::Status { status, .. } => *status == 429 || *status >= 500,
            Self::BadResponse { .. }
            | Self::Client(_)
            | Self::MissingFile { .. }
            | Self::BadFile { .. }
            | Self::Local(_) => false,
        }
    }
}

/// Settings for [`OpenAiEmbedder`].
#[derive(Debug, Clone)]
pub struct EmbedConfig {
    /// Base URL up to and including `/v1` (`/embeddings` is appended).
    pub base_url: String,
    /// Model name sent in each request, e.g. `text-embedding-3-small` or
    /// `nomic-embed-text`.
    pub model: String,
    /// Bearer token, when the server needs one.
    pub api_key: Option<String>,
    /// Limit for one HTTP request.
    pub request_timeout: Duration,
    /// Attempts per request, first try included.
    pub max_attempts: usize,
    /// First backoff delay; it doubles on each retry.
    pub min_backoff: Duration,
}

impl EmbedConfig {
    /// Settings for `model` at `base_url`, no key, 60 s per request, 3
    /// attempts.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            model: model.into(),
            api_key: None,
            request_timeout: Duration::from_secs(60),
            max_attempts: 3,
            min_backoff: Duration::from_millis(500),
        }
    }

    /// Sets the bearer token.
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }
}

/// An [`Embedder`] over an OpenAI-compatible `/embeddings` endpoint.
pub struct OpenAiEmbedder {
    config: EmbedConfig,
    url: String,
    http: reqwest::Client,
}

impl OpenAiEmbedder {
    /// Builds the client; fails only if the TLS backend cannot start.
    pub fn new(config: EmbedConfig) -> Result<Self, EmbedError> {
        let http = reqwest::Client::builder()
            .timeout(config.request_timeout)
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| EmbedError::Client(e.to_string()))?;
        let url = format!("{}/embeddings", config.base_url.trim_end_matches('/'));
        Ok(Self { config, url, http })
    }

    /// The full URL this client posts to.
    pub fn url(&self) -> &str {
        &self.url
    }

    async fn send_once(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let body = json!({ "model": self.config.model, "input": texts });
        let mut request = self.http.post(&self.url).json(&body);
        if let Some(key) = &self.config.api_key {
            request = request.bearer_auth(key);
        }
        let response = request.send().await.map_err(|e| self.transport_error(e))?;
        let status = response.status();
        let text = response.text().await.map_err(|e| self.transport_error(e))?;
        if !status.is_success() {
            return Err(EmbedError::Status {
                url: self.url.clone(),
                status: status.as_u16(),
                body: crate::text::clip(&text, 500),
            });
        }
        parse_embeddings(&text, texts.len()).map_err(|reason| EmbedError::BadResponse {
            url: self.url.clone(),
            reason,
        })
    }

    fn transport_error(&self, e: reqwest::Error) -> EmbedError {
        if e.is_timeout() {
            return EmbedError::Timeout {
                url: self.url.clone(),
                timeout: self.config.request_timeout,
            };
        }
        let reason = crate::text::innermost_cause(&e);
        EmbedError::Unreachable {
            url: self.url.clone(),
            reason,
        }
    }
}

#[async_trait]
impl Embedder for OpenAiEmbedder {
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let backoff = ExponentialBuilder::default()
            .with_min_delay(self.config.min_backoff)
            .with_max_times(self.config.max_attempts.saturating_sub(1))
            .with_jitter();
        (|| self.send_once(texts))
            .retry(backoff)
            .when(EmbedError::is_retryable)
            .notify(|err, delay| {
                tracing::warn!(
                    "embedding request failed ({err}); retrying in {:.1}s",
                    delay.as_secs_f64()
                )
            })
            .await
    }

    fn model(&self) -> &str {
        &self.config.model
    }
}

#[derive(Deserialize)]
struct EmbeddingList {
    data: Vec<EmbeddingItem>,
}

#[derive(Deserialize)]
struct EmbeddingItem {
    embedding: Vec<f32>,
    #[serde(default)]
    index: Option<usize>,
}

/// The vectors in an `/embeddings` answer, in input order; `expected` is
/// how many texts were sent.
fn parse_embeddings(body: &str, expected: usize) -> Result<Vec<Vec<f32>>, String> {
    let list: EmbeddingList = serde_json::from_str(body).map_err(|e| {
        format!(
            "expected {{\"data\": [{{\"embedding\": [...]}}]}} ({e}): {}",
            crate::text::clip(body, 200)
        )
    })?;
    if list.data.len() != expected {
        return Err(format!(
            "{} embeddings for {expected} texts",
            list.data.len()
        ));
    }
    let mut items: Vec<(usize, Vec<f32>)> = list
        .data
        .into_iter()
        .enumerate()
        .map(|(position, item)| (item.index.unwrap_or(position), item.embedding))
        .collect();
    items.sort_by_key(|(index, _)| *index);
    if items.iter().enumerate().any(|(i, (index, _))| i != *index) {
        return Err("the items' `index` fields are not 0..n".into());
    }
    let vectors: Vec<Vec<f32>> = items.into_iter().map(|(_, v)| v).collect();
    let dims = vectors[0].len();
    if dims == 0 || vectors.iter().any(|v| v.len() != dims) {
        return Err("the vectors are empty or of different lengths".into());
    }
    Ok(vectors)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_put_back_in_input_order() {
        let body = r#"{"object":"list","data":[
            {"object":"embedding","index":1,"embedding":[0.0,1.0]},
            {"object":"embedding","index":0,"embedding":[1.0,0.0]}],
            "model":"m","usage":{"prompt_tokens":2,"total_tokens":2}}"#;
        assert_eq!(
            parse_embeddings(body, 2).unwrap(),
            vec![vec![1.0, 0.0], vec![0.0, 1.0]]
        );
    }

    #[test]
    fn wrong_counts_and_shapes_are_refused() {
        let one = r#"{"data":[{"embedding":[1.0]}]}"#;
        assert!(parse_embeddings(one, 2)
            .unwrap_err()
            .contains("1 embeddings for 2"));
        let ragged = r#"{"data":[{"embedding":[1.0]},{"embedding":[1.0,2.0]}]}"#;
        assert!(parse_embeddings(ragged, 2).is_err());
        assert!(parse_embeddings("<html>", 1)
            .unwrap_err()
            .contains("expected"));
    }
}
