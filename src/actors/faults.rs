//! Fault injection for executors: make a chosen subtask's executor crash,
//! for real, after a given round. Used by tests and chaos runs to prove
//! that supervision, restart-from-journal and replanning work.

use std::sync::Arc;

use dashmap::DashMap;

use super::executor::TaskJournals;
use crate::llm::{ChatRequest, ChatResponse, Llm, LlmError};

/// Crashes to inject, by subtask id. Cheap to clone; shared by all executors.
#[derive(Debug, Clone, Default)]
pub struct Faults {
    crashes: Arc<DashMap<String, Crash>>,
}

#[derive(Debug, Clone, Copy)]
struct Crash {
    after_round: u32,
    remaining: u32,
}

impl Faults {
    /// No faults.
    pub fn none() -> Self {
        Self::default()
    }

    /// The executor of `subtask` panics right after recording round
    /// `after_round` or any later round, `times` times in all (a restarted
    /// executor that resumes past `after_round` crashes again while crashes
    /// remain).
    pub fn crash_after_round(&self, subtask: &str, after_round: u32, times: u32) {
        self.crashes.insert(
            subtask.to_string(),
            Crash {
                after_round,
                remaining: times,
            },
        );
    }

    /// Whether the executor of `subtask` must crash now, after `round`
    /// (consumes one crash when it says yes).
    pub fn should_crash(&self, subtask: &str, round: u32) -> bool {
        // The guard is dropped before returning; nothing awaits while it is held.
        match self.crashes.get_mut(subtask) {
            Some(mut crash) if round >= crash.after_round && crash.remaining > 0 => {
                crash.remaining -= 1;
                true
            }
            _ => false,
        }
    }
}

impl Faults {
    /// The model an executor of `subtask` uses: `llm` itself when no crash
    /// is scheduled, else a wrapper that panics at the start of the first
    /// model call after the scheduled round (so the crash consumes no model
    /// answer, and a restarted executor resumes exactly where it stopped).
    pub fn executor_llm(
        &self,
        llm: Arc<dyn Llm>,
        subtask: &str,
        journals: TaskJournals,
    ) -> Arc<dyn Llm> {
        if !self.crashes.contains_key(subtask) {
            return llm;
        }
        Arc::new(CrashingLlm {
            inner: llm,
            faults: self.clone(),
            subtask: subtask.to_string(),
            journals,
        })
    }
}

/// A model that makes its executor panic when the schedule says so.
struct CrashingLlm {
    inner: Arc<dyn Llm>,
    faults: Faults,
    subtask: String,
    journals: TaskJournals,
}

#[async_trait::async_trait]
impl Llm for CrashingLlm {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let rounds = self.journals.get(&self.subtask).map_or(0, |r| r.len()) as u32;
        if rounds > 0 && self.faults.should_crash(&self.subtask, rounds) {
            panic!(
                "injected crash in subtask {} after round {rounds}",
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
    use super::*;

    #[test]
    fn crashes_fire_the_given_number_of_times() {
        let faults = Faults::none();
        faults.crash_after_round("s1", 2, 2);
        assert!(!faults.should_crash("s1", 1));
        assert!(faults.should_crash("s1", 2));
        assert!(faults.should_crash("s1", 3));
        assert!(!faults.should_crash("s1", 4));
        assert!(!faults.should_crash("s2", 2));
    }
}
