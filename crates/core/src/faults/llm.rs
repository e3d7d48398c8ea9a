//! `FaultyLlm`: a model wrapper that answers prose, cuts replies short,
//! hangs, or fails with HTTP 500, at the rates of a [`Faults`].

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use rand_chacha::rand_core::RngCore;

use super::{FaultKind, Faults};
use crate::llm::{ChatRequest, ChatResponse, Llm, LlmError};

/// Attempts per model request, first included. Mirrors the HTTP client's
/// policy (`OpenAiConfig::new(..).max_attempts`, retried by `backon` on
/// 429/5xx/connection errors/timeouts in `crates/core/src/llm/openai/`), so an
/// injected 500 or timeout gets the same recovery a real one would.
pub const LLM_ATTEMPTS: usize = 3;

/// First wait between attempts, doubling after each one: the client's
/// `OpenAiConfig::new(..).min_backoff`.
pub const LLM_BACKOFF: Duration = Duration::from_millis(500);

/// Stands in for the server's URL in injected errors.
const INJECTED_URL: &str = "(fault injection)";

/// Replies that read like a model thinking aloud and hold no JSON (no `{`
/// or `[`), so the decision parser has nothing to repair.
const PROSE: [&str; 4] = [
    "I think the best next step is to look at the files in the workspace \
     first, then decide what to change. Let me consider the options carefully \
     before acting.",
    "Sure! To solve this task I would start by reading the relevant input, \
     then work through it step by step until the result is complete.",
    "Let me think about this. The goal seems clear, but I want to make sure I \
     understand the requirements before I choose a tool.",
    "Okay, I have gathered enough information. The answer follows from what \
     I saw in the previous observation, so I will summarise it now.",
];

/// A model that suffers injected faults before or after the real call:
///
/// - `llm_http_500`, `llm_timeout`: drawn on each of up to [`LLM_ATTEMPTS`]
///   attempts. An injected 500 fails the attempt at once, an injected
///   timeout after waiting the request timeout; while attempts remain the
///   wrapper waits a backoff and tries again, as the HTTP client does. An
///   attempt that draws neither calls the inner model. When every attempt
///   fails, the last error is returned (`LlmError::Status` 500 or
///   `LlmError::Timeout`).
/// - `llm_non_json`: the reply is replaced by prose with no JSON in it.
/// - `llm_truncated`: the reply is cut in the middle (at a character
///   boundary) and `finish_reason` becomes `length`.
///
/// When both kinds of a pair fire on the same attempt, the first listed
/// applies; every kind still draws once, so its stream stays aligned.
pub struct FaultyLlm {
    inner: Arc<dyn Llm>,
    faults: Faults,
    request_timeout: Duration,
    backoff: Duration,
}

impl FaultyLlm {
    /// Wraps `inner`; an injected timeout waits `request_timeout` (pass the
    /// model client's own request timeout).
    pub fn new(inner: Arc<dyn Llm>, faults: Faults, request_timeout: Duration) -> Self {
        Self {
            inner,
            faults,
            request_timeout,
            backoff: LLM_BACKOFF,
        }
    }

    /// Uses `backoff` as the first wait between attempts instead of
    /// [`LLM_BACKOFF`] (as `OpenAiConfig::min_backoff` does for the client).
    pub fn with_backoff(mut self, backoff: Duration) -> Self {
        self.backoff = backoff;
        self
    }

    /// The failure injected into one attempt, after waiting as long as that
    /// failure takes; `None` when the attempt should reach the model.
    async fn failed_attempt(&self) -> Option<LlmError> {
        let http_500 = self.faults.roll(FaultKind::LlmHttp500);
        let timeout = self.faults.roll(FaultKind::LlmTimeout);
        if http_500 {
            self.faults.record(FaultKind::LlmHttp500);
            return Some(LlmError::Status {
                url: INJECTED_URL.into(),
                status: 500,
                body: "Internal Server Error (injected llm_http_500)".into(),
            });
        }
        if timeout {
            self.faults.record(FaultKind::LlmTimeout);
            tokio::time::sleep(self.request_timeout).await;
            return Some(LlmError::Timeout {
                url: INJECTED_URL.into(),
                timeout: self.request_timeout,
            });
        }
        None
    }

    /// Calls the inner model and spoils its reply when a reply fault fires.
    async fn answer(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let mut response = self.inner.chat(request).await?;
        let non_json = self.faults.roll(FaultKind::LlmNonJson);
        let truncated = self.faults.roll(FaultKind::LlmTruncated);
        if non_json {
            self.faults.record(FaultKind::LlmNonJson);
            let pick = self.faults.with_rng(FaultKind::LlmNonJson, |rng| {
                rng.next_u32() as usize % PROSE.len()
            });
            response.content = PROSE[pick].to_string();
        } else if truncated {
            self.faults.record(FaultKind::LlmTruncated);
            response.content = cut_in_half(&response.content);
            response.finish_reason = Some("length".into());
        }
        Ok(response)
    }
}

#[async_trait]
impl Llm for FaultyLlm {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let mut backoff = self.backoff;
        let mut attempt = 1;
        loop {
            let Some(error) = self.failed_attempt().await else {
                return self.answer(request).await;
            };
            if attempt >= LLM_ATTEMPTS {
                return Err(error);
            }
            tracing::warn!("model request failed ({error}); retrying in {backoff:?}");
            tokio::time::sleep(backoff).await;
            backoff = backoff.saturating_mul(2);
            attempt += 1;
        }
    }

    fn model(&self) -> &str {
        self.inner.model()
    }
}

/// The first half of `text`'s characters.
fn cut_in_half(text: &str) -> String {
    let half = text.chars().count() / 2;
    text.chars().take(half).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faults::FaultSpec;
    use crate::llm::{ChatMessage, OpenAiConfig, ScriptedLlm};

    const DECISION: &str = r#"{"thought": "écrire le fichier", "action": {"name": "write_file", "args": {"path": "a.txt"}}}"#;

    fn request() -> ChatRequest {
        ChatRequest {
            messages: vec![ChatMessage::user("do it")],
            temperature: 0.0,
            max_tokens: 100,
            json: true,
            schema: None,
            seed: None,
        }
    }

    fn faulty(spec: &str, seed: u64, answers: &[&str]) -> (FaultyLlm, Arc<ScriptedLlm>, Faults) {
        let model = Arc::new(ScriptedLlm::new(answers.iter().copied()));
        let faults = Faults::new(FaultSpec::parse(spec).unwrap(), seed);
        let llm = FaultyLlm::new(model.clone(), faults.clone(), Duration::from_millis(1))
            .with_backoff(Duration::ZERO);
        (llm, model, faults)
    }

    #[test]
    fn retry_policy_matches_the_http_client() {
        let client = OpenAiConfig::new("http://localhost/v1", "m");
        assert_eq!(LLM_ATTEMPTS, client.max_attempts);
        assert_eq!(LLM_BACKOFF, client.min_backoff);
    }

    #[tokio::test]
    async fn non_json_replaces_the_reply_with_prose() {
        let (llm, _, faults) = faulty("llm_non_json=1", 1, &[DECISION]);
        let reply = llm.chat(&request()).await.unwrap();
        assert!(!reply.content.is_empty());
        assert!(!reply.content.contains(['{', '[']), "{}", reply.content);
        assert_eq!(faults.take_injected(), vec![FaultKind::LlmNonJson]);
    }

    #[tokio::test]
    async fn truncated_cuts_the_reply_in_the_middle() {
        let (llm, _, faults) = faulty("llm_truncated=1", 1, &[DECISION]);
        let reply = llm.chat(&request()).await.unwrap();
        assert!(DECISION.starts_with(&reply.content));
        assert_eq!(reply.content.chars().count(), DECISION.chars().count() / 2);
        assert!(serde_json::from_str::<serde_json::Value>(&reply.content).is_err());
        assert_eq!(reply.finish_reason.as_deref(), Some("length"));
        assert_eq!(faults.take_injected(), vec![FaultKind::LlmTruncated]);
        // Multi-byte characters are never split.
        assert_eq!(cut_in_half("héé中文字"), "héé");
    }

    #[tokio::test]
    async fn http_500_is_retried_until_the_model_answers() {
        let answers = vec![DECISION; 100];
        let (llm, model, faults) = faulty("llm_http_500=0.5", 4, &answers);
        let (mut recovered, mut failed, mut answered) = (0, 0, 0);
        for _ in 0..100 {
            let result = llm.chat(&request()).await;
            let injected = faults.take_injected();
            assert!(injected.len() <= LLM_ATTEMPTS);
            match result {
                Ok(reply) => {
                    assert_eq!(reply.content, DECISION);
                    answered += 1;
                    if !injected.is_empty() {
                        recovered += 1;
                    }
                }
                Err(LlmError::Status { status: 500, .. }) => {
                    assert_eq!(injected.len(), LLM_ATTEMPTS);
                    failed += 1;
                }
                Err(other) => panic!("unexpected error {other}"),
            }
        }
        assert!(recovered > 0, "no call recovered from a 500");
        assert!(failed < 100);
        assert_eq!(model.requests().len(), answered);
    }

    #[tokio::test]
    async fn http_500_on_every_attempt_is_an_error() {
        let (llm, model, faults) = faulty("llm_http_500=1", 1, &[DECISION]);
        let err = llm.chat(&request()).await.unwrap_err();
        assert!(matches!(err, LlmError::Status { status: 500, .. }), "{err}");
        assert!(err.is_retryable());
        assert_eq!(
            faults.take_injected(),
            vec![FaultKind::LlmHttp500; LLM_ATTEMPTS]
        );
        assert!(model.requests().is_empty());
    }

    #[tokio::test]
    async fn timeout_on_every_attempt_reports_the_request_timeout() {
        let (llm, model, faults) = faulty("llm_timeout=1", 1, &[DECISION]);
        let err = llm.chat(&request()).await.unwrap_err();
        assert!(
            matches!(err, LlmError::Timeout { timeout, .. } if timeout == Duration::from_millis(1)),
            "{err}"
        );
        assert_eq!(
            faults.take_injected(),
            vec![FaultKind::LlmTimeout; LLM_ATTEMPTS]
        );
        assert!(model.requests().is_empty());
    }

    #[tokio::test]
    async fn without_llm_faults_the_model_is_not_wrapped() {
        let model: Arc<dyn Llm> = Arc::new(ScriptedLlm::new([DECISION]));
        let faults = Faults::new(FaultSpec::parse("tool_error=1").unwrap(), 1);
        let wrapped = faults.wrap_llm(Arc::clone(&model), Duration::from_secs(1));
        assert!(Arc::ptr_eq(&model, &wrapped));
        assert_eq!(wrapped.chat(&request()).await.unwrap().content, DECISION);
    }
}
