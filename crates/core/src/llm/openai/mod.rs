//! OpenAI-compatible chat-completions client over reqwest.
//!
//! Works with OpenAI, DeepSeek, Ollama (`/v1`), vLLM and llama.cpp's server.
//! Response types are deliberately lenient (`#[serde(default)]` everywhere,
//! unknown fields ignored, `finish_reason` optional) because real servers
//! disagree on the details. Retries (429, 5xx, connection errors, timeouts)
//! use `backon`'s exponential backoff.
//!
//! A request that wants JSON and carries a schema (every decision does) asks
//! for structured output, `response_format` `{"type": "json_schema"}`, which
//! llama.cpp's server, vLLM, Ollama and OpenAI turn into constrained
//! decoding, as the in-process engine's grammar does. A server that refuses
//! it (a 400 that names the response format or the schema) is asked again
//! with `json_object`, and one that refuses that too with no format; the
//! client remembers what the server took.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use backon::{ExponentialBuilder, Retryable};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{ChatRequest, ChatResponse, Llm, LlmError, Usage};

mod body;

use body::{
    Body, Messages, SchemaTexts, SystemTexts, FORMAT_NAMES, FORMAT_NONE, FORMAT_OBJECT,
    FORMAT_SCHEMA,
};

/// Default endpoint: Ollama's OpenAI-compatible API on this machine.
pub const DEFAULT_BASE_URL: &str = "http://localhost:11434/v1";

/// Settings for [`OpenAiClient`].
#[derive(Debug, Clone)]
pub struct OpenAiConfig {
    /// Base URL up to and including `/v1` (the client appends `/chat/completions`).
    pub base_url: String,
    /// Model name sent in each request.
    pub model: String,
    /// Bearer token, when the server needs one.
    pub api_key: Option<String>,
    /// Limit for one HTTP request.
    pub request_timeout: Duration,
    /// Attempts per request, first try included (retries = attempts - 1).
    pub max_attempts: usize,
    /// First backoff delay; it doubles on each retry.
    pub min_backoff: Duration,
    /// Says which flags or variables set `base_url`, for error messages.
    pub origin_hint: String,
    /// Send a request's JSON schema as `response_format` `json_schema`
    /// (constrained decoding on the server); off, JSON requests ask for
    /// `json_object` only.
    pub structured_output: bool,
}

impl OpenAiConfig {
    /// A config with sane defaults for the given server and model.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            model: model.into(),
            api_key: None,
            request_timeout: Duration::from_secs(120),
            max_attempts: 3,
            min_backoff: Duration::from_millis(500),
            origin_hint: "The URL is set by --base-url or HERMES_BASE_URL.".into(),
            structured_output: true,
        }
    }
}

/// A chat client for any OpenAI-compatible server.
pub struct OpenAiClient {
    config: OpenAiConfig,
    url: String,
    /// `url` parsed once (reqwest would parse the text on every request);
    /// `None` when it does not parse, so that sending reports why.
    endpoint: Option<reqwest::Url>,
    http: reqwest::Client,
    /// The strongest `response_format` the server still takes
    /// ([`FORMAT_SCHEMA`], [`FORMAT_OBJECT`] or [`FORMAT_NONE`]): lowered
    /// one step each time the server refuses one.
    format: AtomicU8,
    /// Set once the server has answered anything: until then a failed
    /// connection means nothing listens there, and is not retried.
    reached: AtomicBool,
    /// The JSON text of each schema sent lately, written once.
    schemas: SchemaTexts,
    /// The JSON text of each system message sent lately, written once.
    systems: SystemTexts,
}

impl OpenAiClient {
    /// Builds the client; fails only if the TLS backend cannot start.
    pub fn new(config: OpenAiConfig) -> Result<Self, LlmError> {
        let http = reqwest::Client::builder()
            .timeout(config.request_timeout)
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| LlmError::Other(format!("cannot build HTTP client: {e}")))?;
        let url = format!("{}/chat/completions", config.base_url.trim_end_matches('/'));
        let format = if config.structured_output {
            FORMAT_SCHEMA
        } else {
            FORMAT_OBJECT
        };
        let endpoint = reqwest::Url::parse(&url).ok();
        Ok(Self {
            config,
            url,
            endpoint,
            http,
            format: AtomicU8::new(format),
            reached: AtomicBool::new(false),
            schemas: SchemaTexts::default(),
            systems: SystemTexts::default(),
        })
    }

    /// The full chat-completions URL this client posts to.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The body posted for `request`, with the strongest response format
    /// the server still takes.
    fn body<'a>(&'a self, request: &'a ChatRequest) -> Body<'a> {
        Body {
            model: &self.config.model,
            messages: Messages {
                messages: &request.messages,
                kept: &self.systems,
            },
            temperature: request.temperature_f64(),
            max_tokens: request.max_tokens,
            stream: false,
            response_format: self
                .schemas
                .response_format(request, self.format.load(Ordering::Relaxed)),
            seed: request.seed,
        }
    }

    async fn send_once(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let builder = match &self.endpoint {
            Some(endpoint) => self.http.post(endpoint.clone()),
            None => self.http.post(&self.url),
        };
        let mut builder = builder.json(&self.body(request));
        if let Some(key) = &self.config.api_key {
            builder = builder.bearer_auth(key);
        }
        let response = builder.send().await.map_err(|e| self.transport_error(e))?;
        self.reached.store(true, Ordering::Relaxed);
        let status = response.status();
        // The bytes, read as JSON directly; text only for an error's body.
        let body = response
            .bytes()
            .await
            .map_err(|e| self.transport_error(e))?;
        if !status.is_success() {
            let text = String::from_utf8_lossy(&body);
            if status.as_u16() == 400 && refuses_format(&text) {
                // The prompt asks for JSON anyway: ask again with less.
                let sent = self.format.load(Ordering::Relaxed);
                if let Some(format) = self.schemas.response_format(request, sent) {
                    let weaker = if sent == FORMAT_SCHEMA && request.schema.is_some() {
                        FORMAT_OBJECT
                    } else {
                        FORMAT_NONE
                    };
                    if self
                        .format
                        .compare_exchange(sent, weaker, Ordering::Relaxed, Ordering::Relaxed)
                        .is_ok()
                    {
                        tracing::warn!(
                            "the server refused response_format {}; asking again with {}",
                            format.name(),
                            FORMAT_NAMES[usize::from(weaker)]
                        );
                    }
                    return Box::pin(self.send_once(request)).await;
                }
            }
            return Err(LlmError::Status {
                url: self.url.clone(),
                status: status.as_u16(),
                body: crate::text::clip(&text, 500),
            });
        }
        parse_completion(&body).map_err(|reason| LlmError::BadResponse {
            url: self.url.clone(),
            reason,
        })
    }

    fn transport_error(&self, e: reqwest::Error) -> LlmError {
        if e.is_timeout() {
            return LlmError::Timeout {
                url: self.url.clone(),
                timeout: self.config.request_timeout,
            };
        }
        let reason = crate::text::innermost_cause(&e);
        LlmError::Unreachable {
            url: self.url.clone(),
            reason,
            hint: self.config.origin_hint.clone(),
            connect: e.is_connect(),
        }
    }
}

#[async_trait]
impl Llm for OpenAiClient {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let backoff = ExponentialBuilder::default()
            .with_min_delay(self.config.min_backoff)
            .with_max_times(self.config.max_attempts.saturating_sub(1))
            .with_jitter();
        // A server never reached that refuses the connection is not
        // there: one error, not three. A connection that broke is retried.
        let worth_retrying = |e: &LlmError| {
            e.is_retryable()
                && (self.reached.load(Ordering::Relaxed)
                    || !matches!(e, LlmError::Unreachable { connect: true, .. }))
        };
        (|| self.send_once(request))
            .retry(backoff)
            .when(worth_retrying)
            .notify(|err, delay| tracing::warn!("{}", retry_warning(err, delay)))
            .await
    }

    fn model(&self) -> &str {
        &self.config.model
    }
}

/// Whether a 400 body says the server cannot follow the response format.
fn refuses_format(body: &str) -> bool {
    let body = body.to_ascii_lowercase();
    ["response_format", "json_schema", "schema", "grammar"]
        .iter()
        .any(|word| body.contains(word))
}

/// The log line for one retry: the error without its configuration hint
/// (the final error, shown once, carries it).
fn retry_warning(err: &LlmError, delay: Duration) -> String {
    format!(
        "model request failed ({}); retrying in {:.1}s",
        err.brief(),
        delay.as_secs_f64()
    )
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Completion {
    choices: Vec<Choice>,
    usage: Option<WireUsage>,
    timings: Option<Timings>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Choice {
    message: Option<WireMessage>,
    /// Legacy completions put the text here.
    text: Option<String>,
    finish_reason: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct WireMessage {
    content: Option<Value>,
    tool_calls: Option<Value>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct WireUsage {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    /// OpenAI, vLLM and recent llama.cpp servers: prompt tokens served from
    /// the server's prefix cache.
    prompt_tokens_details: Option<PromptTokensDetails>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct PromptTokensDetails {
    cached_tokens: Option<u64>,
}

/// llama.cpp's server reports its prefix reuse under `timings.cache_n`.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Timings {
    cache_n: Option<u64>,
}

/// Reads a chat-completion body, tolerating the variations real servers send.
fn parse_completion(body: &[u8]) -> Result<ChatResponse, String> {
    // Bytes that are not UTF-8 (a server that cut a character in two) are
    // read as their lossy text, as `Response::text` would have made them.
    let completion: Completion = serde_json::from_slice(body)
        .or_else(|_| serde_json::from_str(&String::from_utf8_lossy(body)))
        .map_err(|e| {
            let text = String::from_utf8_lossy(body);
            format!("{e} in {}", crate::text::clip(&text, 200))
        })?;
    let server_cached = completion.timings.and_then(|t| t.cache_n);
    let usage = completion
        .usage
        .map(|u| Usage {
            prompt_tokens: u.prompt_tokens.unwrap_or(0),
            completion_tokens: u.completion_tokens.unwrap_or(0),
            cached_tokens: u
                .prompt_tokens_details
                .and_then(|d| d.cached_tokens)
                .or(server_cached)
                .unwrap_or(0),
        })
        .unwrap_or_default();
    let choice = completion
        .choices
        .into_iter()
        .next()
        .ok_or("no choices in the answer")?;
    let content = match choice.message {
        Some(message) => message_text(message),
        None => choice.text.unwrap_or_default(),
    };
    Ok(ChatResponse {
        content,
        usage,
        finish_reason: choice.finish_reason,
    })
}

/// Text of a message: a string, an array of text parts, or native tool calls
/// rendered as JSON so the decision parser can read them.
fn message_text(message: WireMessage) -> String {
    let text = match message.content {
        Some(Value::String(s)) => s,
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str).or_else(|| p.as_str()))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    };
    match message.tool_calls {
        Some(calls @ Value::Array(_)) if text.trim().is_empty() => {
            json!({ "tool_calls": calls }).to_string()
        }
        _ => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_formats_are_recognised() {
        assert!(refuses_format("Unrecognized schema: oneOf"));
        assert!(refuses_format("'response_format' is not supported"));
        assert!(!refuses_format("context length exceeded"));
    }

    #[test]
    fn parses_minimal_completion_without_finish_reason_or_usage() {
        let r =
            parse_completion(r#"{"choices":[{"message":{"content":"hi"}}],"extra":1}"#.as_bytes())
                .unwrap();
        assert_eq!(r.content, "hi");
        assert_eq!(r.usage, Usage::default());
        assert_eq!(r.finish_reason, None);
    }

    #[test]
    fn reads_usage_and_content_parts() {
        let body = r#"{"choices":[{"message":{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},"finish_reason":"stop"}],"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10}}"#;
        let r = parse_completion(body.as_bytes()).unwrap();
        assert_eq!(r.content, "ab");
        assert_eq!(
            r.usage,
            Usage {
                prompt_tokens: 7,
                completion_tokens: 3,
                cached_tokens: 0,
            }
        );
        assert_eq!(r.finish_reason.as_deref(), Some("stop"));
    }

    #[test]
    fn reads_cached_prompt_tokens_from_openai_or_llama_cpp() {
        let openai = r#"{"choices":[{"message":{"content":"x"}}],"usage":{"prompt_tokens":100,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":64}}}"#;
        assert_eq!(
            parse_completion(openai.as_bytes())
                .unwrap()
                .usage
                .cached_tokens,
            64
        );
        let llama = r#"{"choices":[{"message":{"content":"x"}}],"usage":{"prompt_tokens":100,"completion_tokens":2},"timings":{"cache_n":90,"prompt_n":10}}"#;
        assert_eq!(
            parse_completion(llama.as_bytes())
                .unwrap()
                .usage
                .cached_tokens,
            90
        );
    }

    #[test]
    fn native_tool_calls_become_json_text() {
        let body = r#"{"choices":[{"message":{"content":null,"tool_calls":[{"function":{"name":"read_file","arguments":"{\"path\":\"a\"}"}}]}}]}"#;
        let r = parse_completion(body.as_bytes()).unwrap();
        assert!(r.content.contains("tool_calls"));
        assert!(r.content.contains("read_file"));
    }

    #[test]
    fn temperature_is_sent_as_written() {
        let client = OpenAiClient::new(OpenAiConfig::new("http://127.0.0.1:1/v1", "m")).unwrap();
        let request = ChatRequest {
            messages: vec![super::super::ChatMessage::user("hi")],
            temperature: 0.3,
            max_tokens: 10,
            json: false,
            schema: None,
            seed: None,
        };
        let body = serde_json::to_string(&client.body(&request)).unwrap();
        assert!(body.contains(r#""temperature":0.3,"#), "{body}");
        // A seed is sent only when the request has one (a redraw's draws).
        assert!(!body.contains("seed"), "{body}");
        let seeded = ChatRequest {
            seed: Some(1002),
            ..request
        };
        assert_eq!(
            serde_json::to_value(client.body(&seeded)).unwrap()["seed"],
            1002
        );
    }

    /// A writer the test's log subscriber appends to.
    #[derive(Clone, Default)]
    struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_server_never_reached_is_one_error_without_retries() {
        // A port that was just free: nothing listens there.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut config = OpenAiConfig::new(format!("http://127.0.0.1:{port}/v1"), "m");
        config.min_backoff = Duration::from_millis(1);
        config.origin_hint = "THE HINT".into();
        let client = OpenAiClient::new(config).unwrap();
        let request = ChatRequest {
            messages: vec![super::super::ChatMessage::user("hi")],
            temperature: 0.0,
            max_tokens: 10,
            json: false,
            schema: None,
            seed: None,
        };
        let logs = Captured::default();
        let writer = logs.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        let error = tracing::subscriber::with_default(subscriber, || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(client.chat(&request))
                .unwrap_err()
        });
        let logs = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
        // Never reached: not retried, so nothing is logged before the one error.
        assert_eq!(logs.matches("retrying in").count(), 0, "{logs}");
        assert!(
            error.to_string().contains(&format!("127.0.0.1:{port}")),
            "{error}"
        );
        assert_eq!(error.to_string().matches("THE HINT").count(), 1, "{error}");
    }

    #[test]
    fn retry_warnings_leave_out_the_hint() {
        let error = LlmError::Unreachable {
            url: "http://h/v1/chat/completions".into(),
            reason: "Connection refused".into(),
            hint: "Set --base-url.".into(),
            connect: true,
        };
        assert_eq!(
            retry_warning(&error, Duration::from_millis(1500)),
            "model request failed (http://h/v1/chat/completions: Connection refused); retrying in 1.5s"
        );
    }

    #[test]
    fn empty_choices_is_an_error_not_a_panic() {
        assert!(parse_completion(r#"{"choices":[]}"#.as_bytes()).is_err());
        assert!(parse_completion(b"not json").is_err());
        // A character cut in two still reads, as replacement characters.
        let cut = b"{\"choices\":[{\"message\":{\"content\":\"ok \xe4\xb8\"}}]}";
        assert_eq!(parse_completion(cut).unwrap().content, "ok \u{fffd}");
    }
}
