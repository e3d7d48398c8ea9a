//! Executor crashes, injected at the executor's model boundary.
//!
//! The executor shell hands its model to [`Faults::executor_llm`]. When a
//! crash is scheduled (`crash_after_round`) or the `executor_panic` rate is
//! set, the model it gets back panics at the start of a model call once the
//! loop has recorded the scheduled round: before any answer is consumed, so
//! a restarted executor resumes exactly where the crashed one stopped. The
//! panic ends the executor's loop, the executor actor fails, and its
//! supervisor sees `ActorFailed`, as with any real crash.

use std::sync::Arc;

use async_trait::async_trait;

use super::{FaultKind, Faults};
use crate::llm::{ChatRequest, ChatResponse, Llm, LlmError};

/// How many rounds the executor's loop has recorded so far.
pub type RoundsDone = Arc<dyn Fn() -> u32 + Send + Sync>;

impl Faults {
    /// The model the `attempt`-th executor of `subtask` should use (0 for
    /// the first, 1 after a restart): `llm` itself when no crash can happen,
    /// else a wrapper that panics when one is due after `rounds_done()`.
    pub fn executor_llm(
        &self,
        llm: Arc<dyn Llm>,
        subtask: &str,
        attempt: u32,
        rounds_done: RoundsDone,
    ) -> Arc<dyn Llm> {
        let scheduled = self.shared.crashes.contains_key(subtask);
        if !scheduled && self.spec().rate(FaultKind::ExecutorPanic) <= 0.0 {
            return llm;
        }
        Arc::new(PanickingLlm {
            inner: llm,
            faults: self.clone(),
            subtask: subtask.to_string(),
            attempt,
            rounds_done,
        })
    }
}

/// A model that makes its executor panic when a crash is due.
struct PanickingLlm {
    inner: Arc<dyn Llm>,
    faults: Faults,
    subtask: String,
    attempt: u32,
    rounds_done: RoundsDone,
}

#[async_trait]
impl Llm for PanickingLlm {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let rounds = (self.rounds_done)();
        if rounds > 0
            && self
                .faults
                .should_crash_executor_attempt(&self.subtask, self.attempt, rounds)
        {
            panic!(
                "injected executor_panic in subtask {} after round {rounds}",
                self.subtask
            );
        }
        self.inner.chat(request).await
    }

    fn model(&self) -> &str {
        self.inner.model()
    }
}

#[cfg(test)]
mod tests {
    use std::panic::AssertUnwindSafe;
    use std::sync::atomic::{AtomicU32, Ordering};

    use futures::FutureExt;

    use super::*;
    use crate::llm::ScriptedLlm;

    fn request() -> ChatRequest {
        ChatRequest {
            messages: vec![crate::llm::ChatMessage::user("hi")],
            temperature: 0.0,
            max_tokens: 10,
            json: false,
            schema: None,
            seed: None,
        }
    }

    #[tokio::test]
    async fn a_scheduled_crash_panics_before_the_call_after_its_round() {
        let faults = Faults::none();
        faults.crash_after_round("s1", 1, 1);
        let rounds = Arc::new(AtomicU32::new(0));
        let seen = Arc::clone(&rounds);
        let llm = faults.executor_llm(
            Arc::new(ScriptedLlm::new(["a", "b"])),
            "s1",
            0,
            Arc::new(move || seen.load(Ordering::SeqCst)),
        );
        assert_eq!(llm.chat(&request()).await.unwrap().content, "a");
        rounds.store(1, Ordering::SeqCst);
        let crashed = AssertUnwindSafe(llm.chat(&request())).catch_unwind().await;
        assert!(crashed.is_err(), "the call after round 1 panics");
        assert_eq!(faults.injected_counts()[&FaultKind::ExecutorPanic], 1);
    }

    #[tokio::test]
    async fn no_crash_no_wrapper() {
        let llm: Arc<dyn Llm> = Arc::new(ScriptedLlm::new(["a"]));
        let same = Faults::none().executor_llm(Arc::clone(&llm), "s1", 0, Arc::new(|| 5));
        assert!(Arc::ptr_eq(&llm, &same));
    }
}
