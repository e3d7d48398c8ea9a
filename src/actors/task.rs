//! The state of one task inside the planner, as plain code: which subtasks
//! are waiting, running, done or failed, what may start next, what a
//! failure or a replan changes, and the final report.
//!
//! The planner actor only moves messages in and out of this; every rule of
//! the DAG (dependencies, bounded concurrency, exactly one outcome per
//! subtask, completed work never rerun) lives and is tested here.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::time::Instant;

use super::messages::{SubtaskReport, TaskId, TaskReport};
use super::plan::PlannedSubtask;
use crate::agent::Outcome;
use crate::llm::Usage;
use crate::text::clip;

/// Where one subtask stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotState {
    /// Waiting for its dependencies or a free executor.
    Pending,
    /// An executor is running it.
    Running,
    /// Done; its result is available to dependents.
    Finished,
    /// Stopped without finishing; a replan may replace it.
    Failed,
    /// Replaced by a replan (itself failed, or depended on a failure).
    Replaced,
    /// Never run: a dependency failed for good, or the deadline passed first.
    Skipped,
    /// Stopped by the task deadline while running.
    Cancelled,
}

impl SlotState {
    fn as_str(self) -> &'static str {
        match self {
            SlotState::Pending | SlotState::Skipped => "skipped",
            SlotState::Running | SlotState::Cancelled => "cancelled",
            SlotState::Finished => "finished",
            SlotState::Failed => "failed",
            SlotState::Replaced => "replaced",
        }
    }
}

/// One subtask and its fate.
#[derive(Debug, Clone)]
pub struct Slot {
    /// The subtask as planned.
    pub spec: PlannedSubtask,
    /// Where it stands.
    pub state: SlotState,
    /// Rounds run, over all attempts.
    pub rounds: u32,
    /// Result, once finished.
    pub result: Option<String>,
    /// Progress report, once failed, skipped or cancelled.
    pub progress: Option<String>,
    /// Restarts after executor crashes.
    pub restarts: u32,
}

/// What the planner must do after a failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AfterFailure {
    /// Ask the model for a revised plan for this subtask and its dependents.
    Replan,
    /// No replans left: the failure stands and its dependents are skipped.
    GiveUp,
}

/// One task's subtasks and bookkeeping.
#[derive(Debug)]
pub struct TaskRun {
    /// Task id inside the planner.
    pub id: TaskId,
    /// The task text.
    pub task: String,
    /// When the task was submitted.
    pub started: Instant,
    slots: Vec<Slot>,
    concurrency: usize,
    max_replans: u32,
    /// Replans made so far.
    pub replans: u32,
    replans_in_flight: usize,
    /// Tokens of every model call so far.
    pub usage: Usage,
    /// Whether the deadline passed.
    pub timed_out: bool,
}

impl TaskRun {
    /// A task with no plan yet.
    pub fn new(id: TaskId, task: impl Into<String>, concurrency: usize, max_replans: u32) -> Self {
        Self {
            id,
            task: task.into(),
            started: Instant::now(),
            slots: Vec::new(),
            concurrency: concurrency.max(1),
            max_replans,
            replans: 0,
            replans_in_flight: 0,
            usage: Usage::default(),
            timed_out: false,
        }
    }

    /// Adds planned subtasks (validated beforehand).
    pub fn add_subtasks(&mut self, subtasks: Vec<PlannedSubtask>) {
        self.slots.extend(subtasks.into_iter().map(|spec| Slot {
            spec,
            state: SlotState::Pending,
            rounds: 0,
            result: None,
            progress: None,
            restarts: 0,
        }));
    }

    /// Every subtask so far.
    pub fn slots(&self) -> &[Slot] {
        &self.slots
    }

    /// The slot of subtask `id`.
    pub fn slot(&self, id: &str) -> Option<&Slot> {
        self.slots.iter().find(|s| s.spec.id == id)
    }

    fn slot_mut(&mut self, id: &str) -> Option<&mut Slot> {
        self.slots.iter_mut().find(|s| s.spec.id == id)
    }

    fn is(&self, id: &str, state: SlotState) -> bool {
        self.slot(id).is_some_and(|s| s.state == state)
    }

    /// Subtasks that may start now (dependencies finished, under the
    /// concurrency bound), marked running.
    pub fn start_ready(&mut self) -> Vec<PlannedSubtask> {
        if self.timed_out {
            return Vec::new();
        }
        let running = self
            .slots
            .iter()
            .filter(|s| s.state == SlotState::Running)
            .count();
        let free = self.concurrency.saturating_sub(running);
        let ready: Vec<usize> = (0..self.slots.len())
            .filter(|&i| {
                let slot = &self.slots[i];
                slot.state == SlotState::Pending
                    && slot
                        .spec
                        .depends_on
                        .iter()
                        .all(|d| self.is(d, SlotState::Finished))
            })
            .take(free)
            .collect();
        ready
            .into_iter()
            .map(|i| {
                self.slots[i].state = SlotState::Running;
                self.slots[i].spec.clone()
            })
            .collect()
    }

    /// The goal given to an executor: the subtask's goal, the whole task for
    /// orientation, and the results of its dependencies.
    pub fn executor_goal(&self, spec: &PlannedSubtask) -> String {
        let mut goal = format!(
            "{}\n\nThis is one subtask of a larger task: {}",
            spec.goal, self.task
        );
        if !spec.depends_on.is_empty() {
            goal.push_str("\n\nResults of the subtasks this one depends on:");
            for dep in &spec.depends_on {
                if let Some(slot) = self.slot(dep) {
                    let _ = write!(
                        goal,
                        "\n[{} — {}] {}",
                        dep,
                        slot.spec.role,
                        clip(slot.result.as_deref().unwrap_or(""), 4000)
                    );
                }
            }
        }
        goal
    }

    /// Records a finished subtask. Returns false (and changes nothing) when
    /// the subtask is not running: an outcome is accepted exactly once.
    pub fn finish(&mut self, id: &str, outcome: &Outcome) -> bool {
        let Some(slot) = self.slot_mut(id).filter(|s| s.state == SlotState::Running) else {
            return false;
        };
        slot.state = SlotState::Finished;
        slot.rounds = outcome.rounds;
        slot.result = Some(outcome.result.clone().unwrap_or_default());
        self.usage += outcome.usage;
        true
    }

    /// Records a failed subtask and says whether to replan. `None` when the
    /// subtask was not running (a duplicate or late outcome).
    pub fn fail(
        &mut self,
        id: &str,
        rounds: u32,
        progress: String,
        usage: Usage,
    ) -> Option<AfterFailure> {
        let slot = self
            .slot_mut(id)
            .filter(|s| s.state == SlotState::Running)?;
        slot.state = SlotState::Failed;
        slot.rounds = rounds;
        slot.progress = Some(progress);
        self.usage += usage;
        if self.replans < self.max_replans && !self.timed_out {
            self.replans += 1;
            self.replans_in_flight += 1;
            Some(AfterFailure::Replan)
        } else {
            self.skip_dependents(id);
            Some(AfterFailure::GiveUp)
        }
    }

    /// Marks a running subtask for a restart after its executor crashed.
    /// Returns false when it was already restarted once (or is not running).
    pub fn restart(&mut self, id: &str) -> bool {
        match self.slot_mut(id) {
            Some(slot) if slot.state == SlotState::Running && slot.restarts == 0 => {
                slot.restarts = 1;
                true
            }
            _ => false,
        }
    }

    /// The pending subtasks that depend on `id`, directly or not.
    pub fn dependents(&self, id: &str) -> Vec<&PlannedSubtask> {
        let mut found: HashSet<&str> = HashSet::from([id]);
        let mut out = Vec::new();
        // Slots are appended in plan order, but replans may add dependencies
        // on later slots, so repeat until nothing new is found.
        loop {
            let before = found.len();
            for slot in &self.slots {
                if slot.state == SlotState::Pending
                    && !found.contains(slot.spec.id.as_str())
                    && slot
                        .spec
                        .depends_on
                        .iter()
                        .any(|d| found.contains(d.as_str()))
                {
                    found.insert(&slot.spec.id);
                    out.push(&slot.spec);
                }
            }
            if found.len() == before {
                return out;
            }
        }
    }

    /// Ids a replan may depend on: finished subtasks and live ones that are
    /// not being replaced.
    pub fn settled_ids(&self, replaced: &HashSet<String>) -> HashSet<String> {
        self.slots
            .iter()
            .filter(|s| {
                matches!(
                    s.state,
                    SlotState::Finished | SlotState::Pending | SlotState::Running
                )
            })
            .map(|s| s.spec.id.clone())
            .filter(|id| !replaced.contains(id))
            .collect()
    }

    /// Every id ever used in this task.
    pub fn all_ids(&self) -> HashSet<String> {
        self.slots.iter().map(|s| s.spec.id.clone()).collect()
    }

    /// Applies a replan's answer for `failed`: on success the failed subtask
    /// and its pending dependents are replaced by `subtasks`; otherwise the
    /// failure stands and the dependents are skipped.
    pub fn apply_replan(&mut self, failed: &str, plan: Result<Vec<PlannedSubtask>, String>) {
        self.replans_in_flight = self.replans_in_flight.saturating_sub(1);
        match plan {
            Ok(subtasks) if !self.timed_out => {
                let replaced: Vec<String> = self
                    .dependents(failed)
                    .iter()
                    .map(|s| s.id.clone())
                    .collect();
                let new_ids: Vec<&str> = subtasks.iter().map(|s| s.id.as_str()).collect();
                let note = format!("replaced by the revised plan ({})", new_ids.join(", "));
                if let Some(slot) = self.slot_mut(failed) {
                    slot.state = SlotState::Replaced;
                }
                for id in replaced {
                    if let Some(slot) = self.slot_mut(&id) {
                        slot.state = SlotState::Replaced;
                        slot.progress = Some(note.clone());
                    }
                }
                self.add_subtasks(subtasks);
            }
            Ok(_) => self.skip_dependents(failed),
            Err(reason) => {
                if let Some(slot) = self.slot_mut(failed) {
                    let progress = slot.progress.take().unwrap_or_default();
                    slot.progress = Some(format!("{progress}\nReplan failed: {reason}"));
                }
                self.skip_dependents(failed);
            }
        }
    }

    fn skip_dependents(&mut self, failed: &str) {
        let ids: Vec<String> = self
            .dependents(failed)
            .iter()
            .map(|s| s.id.clone())
            .collect();
        for id in ids {
            if let Some(slot) = self.slot_mut(&id) {
                slot.state = SlotState::Skipped;
                slot.progress = Some(format!("not run: it depends on `{failed}`, which failed"));
            }
        }
    }

    /// The deadline passed: running subtasks are cancelled (their ids are
    /// returned so their executors can be stopped), pending ones skipped.
    pub fn time_out(&mut self) -> Vec<String> {
        self.timed_out = true;
        let mut cancelled = Vec::new();
        for slot in &mut self.slots {
            match slot.state {
                SlotState::Running => {
                    slot.state = SlotState::Cancelled;
                    slot.progress =
                        Some("cancelled: the task deadline passed while it was running".into());
                    cancelled.push(slot.spec.id.clone());
                }
                SlotState::Pending => {
                    slot.state = SlotState::Skipped;
                    slot.progress = Some("not started before the task deadline".into());
                }
                _ => {}
            }
        }
        cancelled
    }

    /// Records a cancelled subtask's rounds and progress from its journal.
    pub fn note_cancelled(&mut self, id: &str, rounds: u32, progress: String, usage: Usage) {
        if let Some(slot) = self
            .slot_mut(id)
            .filter(|s| s.state == SlotState::Cancelled)
        {
            slot.rounds = rounds;
            slot.progress = Some(progress);
            self.usage += usage;
        }
    }

    /// Whether nothing is running, waiting to run, or waiting on a replan.
    pub fn is_settled(&self) -> bool {
        self.replans_in_flight == 0
            && !self
                .slots
                .iter()
                .any(|s| matches!(s.state, SlotState::Running))
            && (self.timed_out || !self.slots.iter().any(|s| s.state == SlotState::Pending))
    }

    /// Pending subtasks that can never start (should not happen after
    /// validation; kept as a safety net so a task always ends).
    pub fn skip_stuck(&mut self) {
        if self.replans_in_flight > 0 || self.slots.iter().any(|s| s.state == SlotState::Running) {
            return;
        }
        for slot in &mut self.slots {
            if slot.state == SlotState::Pending {
                slot.state = SlotState::Skipped;
                slot.progress = Some("not run: its dependencies never finished".into());
            }
        }
    }

    /// `finished`, `timeout` or `failed`, once settled.
    pub fn status(&self) -> &'static str {
        if self.timed_out {
            "timeout"
        } else if self
            .slots
            .iter()
            .all(|s| matches!(s.state, SlotState::Finished | SlotState::Replaced))
        {
            "finished"
        } else {
            "failed"
        }
    }

    /// Finished subtasks and their results, in plan order.
    pub fn results(&self) -> Vec<(&PlannedSubtask, &str)> {
        self.slots
            .iter()
            .filter(|s| s.state == SlotState::Finished)
            .map(|s| (&s.spec, s.result.as_deref().unwrap_or("")))
            .collect()
    }

    /// The report, with `result` as the final answer.
    pub fn report(&self, result: Option<String>, error: Option<String>) -> TaskReport {
        let status = if error.is_some() {
            "error"
        } else {
            self.status()
        };
        TaskReport {
            status: status.to_string(),
            result,
            subtasks: self
                .slots
                .iter()
                .map(|s| SubtaskReport {
                    id: s.spec.id.clone(),
                    role: s.spec.role.clone(),
                    goal: s.spec.goal.clone(),
                    status: s.state.as_str().to_string(),
                    rounds: s.rounds,
                    result: s.result.clone().filter(|_| s.state == SlotState::Finished),
                    progress: s
                        .progress
                        .clone()
                        .filter(|_| s.state != SlotState::Finished),
                })
                .collect(),
            replans: self.replans,
            usage: self.usage,
            error,
            trace_id: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::StopStatus;

    fn sub(id: &str, deps: &[&str]) -> PlannedSubtask {
        PlannedSubtask {
            id: id.into(),
            role: "r".into(),
            goal: format!("do {id}"),
            depends_on: deps.iter().map(|d| d.to_string()).collect(),
        }
    }

    fn done(result: &str) -> Outcome {
        let mut o = Outcome::failed("g", "x");
        o.status = StopStatus::Finished;
        o.error = None;
        o.result = Some(result.into());
        o.rounds = 2;
        o
    }

    fn ids(subtasks: &[PlannedSubtask]) -> Vec<&str> {
        subtasks.iter().map(|s| s.id.as_str()).collect()
    }

    #[test]
    fn dag_runs_in_dependency_order_under_the_concurrency_bound() {
        let mut run = TaskRun::new(1, "t", 2, 2);
        run.add_subtasks(vec![
            sub("a", &[]),
            sub("b", &[]),
            sub("c", &[]),
            sub("d", &["a", "b"]),
        ]);
        assert_eq!(ids(&run.start_ready()), ["a", "b"]);
        assert!(run.start_ready().is_empty(), "bound of 2 reached");
        assert!(run.finish("a", &done("A")));
        assert_eq!(ids(&run.start_ready()), ["c"]);
        assert!(run.finish("b", &done("B")));
        assert_eq!(ids(&run.start_ready()), ["d"]);
        let goal = run.executor_goal(&sub("d", &["a", "b"]));
        assert!(
            goal.contains("[a — r] A") && goal.contains("[b — r] B"),
            "{goal}"
        );
        assert!(run.finish("c", &done("C")) && run.finish("d", &done("D")));
        assert!(run.is_settled());
        assert_eq!(run.status(), "finished");
    }

    #[test]
    fn outcomes_are_accepted_exactly_once() {
        let mut run = TaskRun::new(1, "t", 4, 2);
        run.add_subtasks(vec![sub("a", &[])]);
        run.start_ready();
        assert!(run.finish("a", &done("A")));
        assert!(!run.finish("a", &done("again")));
        assert_eq!(run.fail("a", 1, "late".into(), Usage::default()), None);
        assert_eq!(run.slot("a").unwrap().result.as_deref(), Some("A"));
    }

    #[test]
    fn failure_replans_then_replaces_the_subtask_and_its_dependents() {
        let mut run = TaskRun::new(1, "t", 4, 1);
        run.add_subtasks(vec![
            sub("a", &[]),
            sub("b", &["a"]),
            sub("c", &["b"]),
            sub("x", &[]),
        ]);
        run.start_ready();
        assert!(run.finish("x", &done("X")));
        assert_eq!(
            run.fail("a", 3, "stuck".into(), Usage::default()),
            Some(AfterFailure::Replan)
        );
        assert_eq!(
            ids(&run.dependents("a").into_iter().cloned().collect::<Vec<_>>()),
            ["b", "c"]
        );
        assert!(!run.is_settled(), "waiting on the replan");
        run.apply_replan("a", Ok(vec![sub("a2", &["x"]), sub("b2", &["a2"])]));
        assert_eq!(run.slot("a").unwrap().state, SlotState::Replaced);
        assert_eq!(run.slot("c").unwrap().state, SlotState::Replaced);
        assert_eq!(ids(&run.start_ready()), ["a2"]);
        assert!(run.finish("a2", &done("A2")));
        assert_eq!(ids(&run.start_ready()), ["b2"]);
        assert!(run.finish("b2", &done("B2")));
        assert!(run.is_settled());
        assert_eq!(run.status(), "finished");
        assert_eq!(run.replans, 1);
        assert_eq!(
            run.slot("x").unwrap().result.as_deref(),
            Some("X"),
            "completed work is kept"
        );
    }

    #[test]
    fn no_replans_left_skips_dependents_and_fails_the_task() {
        let mut run = TaskRun::new(1, "t", 4, 0);
        run.add_subtasks(vec![sub("a", &[]), sub("b", &["a"])]);
        run.start_ready();
        assert_eq!(
            run.fail("a", 3, "stuck".into(), Usage::default()),
            Some(AfterFailure::GiveUp)
        );
        assert_eq!(run.slot("b").unwrap().state, SlotState::Skipped);
        assert!(run.is_settled());
        let report = run.report(None, None);
        assert_eq!(report.status, "failed");
        assert_eq!(report.subtasks[0].progress.as_deref(), Some("stuck"));
        assert_eq!(report.subtasks[1].status, "skipped");
    }

    #[test]
    fn a_crashed_subtask_restarts_once() {
        let mut run = TaskRun::new(1, "t", 4, 0);
        run.add_subtasks(vec![sub("a", &[])]);
        run.start_ready();
        assert!(run.restart("a"));
        assert!(!run.restart("a"));
    }

    #[test]
    fn deadline_cancels_running_and_skips_pending() {
        let mut run = TaskRun::new(1, "t", 1, 2);
        run.add_subtasks(vec![sub("a", &[]), sub("b", &[])]);
        run.start_ready();
        assert_eq!(run.time_out(), vec!["a".to_string()]);
        assert!(run.is_settled());
        let report = run.report(None, None);
        assert_eq!(report.status, "timeout");
        assert_eq!(report.subtasks[0].status, "cancelled");
        assert_eq!(report.subtasks[1].status, "skipped");
        assert!(run.start_ready().is_empty());
    }
}
