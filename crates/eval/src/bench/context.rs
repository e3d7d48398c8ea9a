//! `hermes bench context`: how the prompt grows over a long task. One task
//! of R rounds (R − 1 `read_file` calls, then finish) runs through the real
//! loop against the in-process scripted model, which records the size of
//! every prompt it is sent (its messages' texts joined by newlines, in
//! characters). It runs twice in the same harness: with the loop's window
//! (the default [`Limits`]: the last `full_rounds` rounds whole, older ones
//! as one-line summaries), and as the naive baseline, with the window wider
//! than the task, so that every earlier decision and observation is
//! replayed verbatim.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde::Serialize;

use super::model::LatencyModel;
use super::workspace::BenchWorkspace;
use hermes_core::agent::{Agent, CancellationToken, StopStatus};
use hermes_core::limits::Limits;
use hermes_core::llm::{ChatRequest, ChatResponse, Llm, LlmError};
use hermes_core::tools::builtin::ReadFile;
use hermes_core::tools::Toolbox;

/// The rounds the headline ratio compares: the late one over the early one.
pub const LATE_ROUND: u32 = 30;
/// See [`LATE_ROUND`].
pub const EARLY_ROUND: u32 = 8;

/// What to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextBench {
    /// Rounds of the task (at least [`LATE_ROUND`]).
    pub rounds: u32,
}

/// One run's prompt sizes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PromptSeries {
    /// Whether the task finished.
    pub finished: bool,
    /// Prompt characters sent in each round, round 1 first.
    pub chars: Vec<usize>,
    /// Round [`LATE_ROUND`]'s prompt over round [`EARLY_ROUND`]'s.
    pub ratio_30_to_8: f64,
    /// Characters the prompt grew by per round between the two, on average.
    pub growth_per_round: f64,
}

/// What the context benchmark measured (`hermes bench context --json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ContextReport {
    /// Rounds of the task.
    pub rounds: u32,
    /// The window: rounds shown whole (the default `full_rounds`).
    pub full_rounds: usize,
    /// Hermes' loop, with its window.
    pub windowed: PromptSeries,
    /// The same loop replaying every earlier round verbatim.
    pub full_history: PromptSeries,
}

/// Records the size of every prompt, then lets the scripted model answer.
struct Measured {
    inner: LatencyModel,
    chars: Mutex<Vec<usize>>,
}

#[async_trait]
impl Llm for Measured {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        if let Ok(mut chars) = self.chars.lock() {
            chars.push(prompt_chars(request));
        }
        self.inner.chat(request).await
    }

    fn model(&self) -> &str {
        self.inner.model()
    }
}

/// The characters of a prompt: its messages' texts joined by newlines.
pub fn prompt_chars(request: &ChatRequest) -> usize {
    let texts: usize = request
        .messages
        .iter()
        .map(|m| m.content.chars().count())
        .sum();
    texts + request.messages.len().saturating_sub(1)
}

impl ContextBench {
    /// Runs the task with the window, then without; fails only when the
    /// temporary workspace cannot be made.
    pub async fn run(&self) -> std::io::Result<ContextReport> {
        let files = BenchWorkspace::create()?;
        let mut toolbox = Toolbox::new();
        toolbox.register(ReadFile::new(files.workspace.clone()));
        let toolbox = Arc::new(toolbox);
        let windowed = Limits {
            max_rounds: self.rounds + 1,
            timeout: Duration::from_secs(600),
            // The bench's model reads the same files again in turn: repeat
            // guidance would re-ask those rounds, and the series measures
            // prompt growth, not the steer.
            steer: hermes_core::agent::steer::Steers::defaults().with("repeat_guidance", false),
            ..Limits::default()
        };
        let full_history = Limits {
            full_rounds: self.rounds as usize + 1,
            ..windowed.clone()
        };
        Ok(ContextReport {
            rounds: self.rounds,
            full_rounds: windowed.full_rounds,
            windowed: self.series(&toolbox, windowed).await,
            full_history: self.series(&toolbox, full_history).await,
        })
    }

    /// One run of the task under `limits`, and its prompt sizes.
    async fn series(&self, toolbox: &Arc<Toolbox>, limits: Limits) -> PromptSeries {
        let model = Arc::new(Measured {
            inner: LatencyModel::new(Duration::ZERO, self.rounds),
            chars: Mutex::new(Vec::new()),
        });
        let outcome = Agent::new(model.clone(), Arc::clone(toolbox))
            .with_limits(limits)
            .run("Read the files in turn.", &CancellationToken::new())
            .await;
        let chars = model.chars.lock().map(|c| c.clone()).unwrap_or_default();
        let at = |round: u32| chars.get(round as usize - 1).copied().unwrap_or(0) as f64;
        let (late, early) = (at(LATE_ROUND), at(EARLY_ROUND));
        PromptSeries {
            finished: outcome.status == StopStatus::Finished,
            ratio_30_to_8: if early > 0.0 { late / early } else { 0.0 },
            growth_per_round: (late - early) / f64::from(LATE_ROUND - EARLY_ROUND),
            chars,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_window_keeps_the_prompt_smaller_than_the_full_history() {
        let report = ContextBench { rounds: 40 }.run().await.unwrap();
        for series in [&report.windowed, &report.full_history] {
            assert!(series.finished);
            assert_eq!(series.chars.len(), 40);
        }
        assert!(report.windowed.chars[29] < report.full_history.chars[29]);
        assert!(report.windowed.ratio_30_to_8 < report.full_history.ratio_30_to_8);
        // Both start from the same prompt.
        assert_eq!(report.windowed.chars[0], report.full_history.chars[0]);
    }
}
