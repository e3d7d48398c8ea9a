//! Budgets for a whole task: the prompt + completion tokens and the model
//! calls of every model client that shares one [`Budget`] (a run's loop, a
//! plan's planner and all its executors, reflections and the final answer
//! included), added up as the calls return. At a cap the budget's
//! `spent` token fires; whoever runs the task stops it there (status
//! `budget`). A call already under way when the cap is reached finishes
//! and is counted: a task can overshoot by the calls in flight.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::{ChatRequest, ChatResponse, Llm, LlmError};

/// The caps of one task; `None`: no cap.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Caps {
    /// Most prompt + completion tokens.
    pub tokens: Option<u64>,
    /// Most model calls.
    pub calls: Option<u64>,
}

impl Caps {
    /// Whether any cap is set.
    pub fn is_set(&self) -> bool {
        self.tokens.is_some() || self.calls.is_some()
    }
}

/// What a task has spent against its caps.
#[derive(Debug, Default)]
pub struct Budget {
    caps: Caps,
    tokens: AtomicU64,
    calls: AtomicU64,
    spent: CancellationToken,
}

impl Budget {
    /// A budget with these caps.
    pub fn new(caps: Caps) -> Arc<Self> {
        Arc::new(Self {
            caps,
            ..Self::default()
        })
    }

    /// Counts one call's tokens; fires `spent` at a cap.
    pub fn record(&self, tokens: u64) {
        let tokens = self.tokens.fetch_add(tokens, Ordering::Relaxed) + tokens;
        let calls = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        let over = self.caps.tokens.is_some_and(|cap| tokens >= cap)
            || self.caps.calls.is_some_and(|cap| calls >= cap);
        if over {
            self.spent.cancel();
        }
    }

    /// Whether a cap has been reached.
    pub fn exhausted(&self) -> bool {
        self.spent.is_cancelled()
    }

    /// Fires when a cap is reached.
    pub fn spent(&self) -> CancellationToken {
        self.spent.clone()
    }

    /// Tokens and calls spent so far.
    pub fn used(&self) -> (u64, u64) {
        (
            self.tokens.load(Ordering::Relaxed),
            self.calls.load(Ordering::Relaxed),
        )
    }

    /// The caps, in words (for reports).
    pub fn describe(&self) -> String {
        let (tokens, calls) = self.used();
        let mut parts = Vec::new();
        if let Some(cap) = self.caps.tokens {
            parts.push(format!("{tokens} of {cap} tokens"));
        }
        if let Some(cap) = self.caps.calls {
            parts.push(format!("{calls} of {cap} model calls"));
        }
        format!("budget spent: {}", parts.join(", "))
    }
}

/// A model client whose calls count against a [`Budget`]; once it is
/// spent, further calls are refused without reaching the model.
pub struct BudgetedLlm {
    inner: Arc<dyn Llm>,
    budget: Arc<Budget>,
}

impl BudgetedLlm {
    /// `inner`, counted against `budget`.
    pub fn wrap(inner: Arc<dyn Llm>, budget: &Arc<Budget>) -> Arc<dyn Llm> {
        Arc::new(Self {
            inner,
            budget: Arc::clone(budget),
        })
    }
}

#[async_trait]
impl Llm for BudgetedLlm {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        if self.budget.exhausted() {
            return Err(LlmError::Budget(self.budget.describe()));
        }
        let answer = self.inner.chat(request).await;
        match &answer {
            Ok(response) => self.budget.record(response.usage.total()),
            // A failed call spent no tokens we know of, but it was a call.
            Err(_) => self.budget.record(0),
        }
        answer
    }

    fn model(&self) -> &str {
        self.inner.model()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ScriptedLlm;

    fn request() -> ChatRequest {
        // 40 characters: 10 prompt tokens; each answer below is 20
        // characters, 5 completion tokens.
        ChatRequest {
            messages: vec![crate::llm::ChatMessage::user("x".repeat(40))],
            temperature: 0.0,
            max_tokens: 10,
            json: false,
            schema: None,
            seed: None,
        }
    }

    #[tokio::test]
    async fn calls_add_up_and_the_cap_refuses_the_next_one() {
        let budget = Budget::new(Caps {
            tokens: Some(30),
            calls: None,
        });
        let llm = BudgetedLlm::wrap(
            Arc::new(ScriptedLlm::new(["aaaaaaaaaaaaaaaaaaaa"; 3])),
            &budget,
        );
        llm.chat(&request()).await.unwrap();
        assert!(!budget.exhausted());
        llm.chat(&request()).await.unwrap();
        // ScriptedLlm reports 10 + 5 tokens a call: 30 after two.
        assert!(budget.exhausted(), "{:?}", budget.used());
        let refused = llm.chat(&request()).await.unwrap_err();
        assert!(refused.to_string().contains("30 of 30 tokens"), "{refused}");
        assert_eq!(budget.used(), (30, 2));
        let calls = Budget::new(Caps {
            tokens: None,
            calls: Some(1),
        });
        let llm = BudgetedLlm::wrap(Arc::new(ScriptedLlm::new(["aaaaaaaaaaaaaaaaaaaa"])), &calls);
        llm.chat(&request()).await.unwrap();
        assert!(calls.exhausted() && calls.describe().contains("1 of 1 model calls"));
    }
}
