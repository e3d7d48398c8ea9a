//! The rules of one task's DAG of subtasks, as plain code with no actor
//! inside: which subtasks wait, run, finished or failed; what may start
//! next; what a failure, a replan or the deadline changes; and what it
//! all adds up to ([`summary`]: the status, the results, the report).
//!
//! What can be asked of it without changing it is in [`queries`].
//!
//! The live task (`live_task.rs`) feeds events in and acts on what comes
//! out; every rule (dependencies, bounded concurrency, exactly one outcome
//! per subtask, completed work never rerun) lives and is tested here.

use std::time::Instant;

use super::plan::{PlanError, PlannedSubtask};
use super::report::SubtaskStatus;
use hermes_core::agent::{Goal, GoalInput, Outcome, OwnedFile};
use hermes_core::llm::Usage;

mod queries;
mod summary;

/// One subtask and its fate.
#[derive(Debug, Clone)]
pub struct Slot {
    /// The subtask as planned.
    pub spec: PlannedSubtask,
    /// Where it stands.
    pub state: SubtaskStatus,
    /// Rounds run, over all attempts.
    pub rounds: u32,
    /// Result, once finished.
    pub result: Option<String>,
    /// What its last program printed and its result left out, once
    /// finished (handed to its dependents: `Outcome::printed`).
    pub printed: Option<String>,
    /// Progress report, once failed, skipped or cancelled.
    pub progress: Option<String>,
    /// Restarts after executor crashes.
    pub restarts: u32,
    /// Where its last attempt ran: `local` or a worker node's name.
    pub node: Option<String>,
    /// Tokens of its loop's model calls (its last attempt's).
    pub usage: Usage,
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
pub struct Dag {
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
    /// Tokens of the planner's own calls (plan, replans, final answer).
    pub planner_usage: Usage,
    /// Whether the task's budget was spent (its status is then `budget`).
    pub over_budget: bool,
    /// Whether the deadline passed.
    pub timed_out: bool,
}

impl Dag {
    /// A task with no plan yet.
    pub fn new(task: impl Into<String>, concurrency: usize, max_replans: u32) -> Self {
        Self {
            task: task.into(),
            started: Instant::now(),
            slots: Vec::new(),
            concurrency: concurrency.max(1),
            max_replans,
            replans: 0,
            replans_in_flight: 0,
            usage: Usage::default(),
            planner_usage: Usage::default(),
            over_budget: false,
            timed_out: false,
        }
    }

    /// Adds planned subtasks (validated beforehand).
    pub fn add_subtasks(&mut self, subtasks: Vec<PlannedSubtask>) {
        self.slots.extend(subtasks.into_iter().map(|spec| Slot {
            spec,
            state: SubtaskStatus::Pending,
            rounds: 0,
            result: None,
            printed: None,
            progress: None,
            restarts: 0,
            node: None,
            usage: Usage::default(),
        }));
    }

    fn slot_mut(&mut self, id: &str) -> Option<&mut Slot> {
        self.slots.iter_mut().find(|s| s.spec.id == id)
    }

    fn is(&self, id: &str, state: SubtaskStatus) -> bool {
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
            .filter(|s| s.state == SubtaskStatus::Running)
            .count();
        let free = self.concurrency.saturating_sub(running);
        let ready: Vec<usize> = (0..self.slots.len())
            .filter(|&i| {
                let slot = &self.slots[i];
                slot.state == SubtaskStatus::Pending
                    && slot
                        .spec
                        .depends_on
                        .iter()
                        .all(|d| self.is(d, SubtaskStatus::Finished))
            })
            .take(free)
            .collect();
        ready
            .into_iter()
            .map(|i| {
                self.slots[i].state = SubtaskStatus::Running;
                self.slots[i].spec.clone()
            })
            .collect()
    }

    /// The goal given to an executor: the subtask's own work, part of the
    /// whole task, building on the results of its dependencies (the loop
    /// decides how the model sees them: [`Goal::text`]).
    pub fn executor_goal(&self, spec: &PlannedSubtask) -> Goal {
        // The outputs join the work, where the loop reads the files a run
        // must write (and holds its finish to them).
        let mut work = spec.goal.clone();
        if !spec.outputs.is_empty() {
            work.push_str(&format!("\nFiles to write: {}.", spec.outputs.join(", ")));
        }
        let mut goal = Goal::new(work).part_of(self.task.clone());
        // The files the subtasks still to run or running write are theirs
        // (the `owned_files` steer refuses a write to one). A finished
        // subtask's files are free: a replan's subtask may have to redo them
        // (EVALS.md §41), and so are a failed or replaced one's.
        let live = |s: &&Slot| {
            s.spec.id != spec.id
                && matches!(s.state, SubtaskStatus::Pending | SubtaskStatus::Running)
        };
        for slot in self.slots.iter().filter(live) {
            for path in &slot.spec.outputs {
                if !spec.outputs.contains(path) && !goal.others.iter().any(|o| &o.path == path) {
                    goal = goal.with_other(OwnedFile {
                        path: path.clone(),
                        subtask: slot.spec.id.clone(),
                        role: slot.spec.role.clone(),
                    });
                }
            }
        }
        for dep in &spec.depends_on {
            if let Some(slot) = self.slot(dep) {
                goal = goal.with_input(GoalInput {
                    id: dep.clone(),
                    role: slot.spec.role.clone(),
                    result: slot.result.clone().unwrap_or_default(),
                    files: slot.spec.outputs.clone(),
                    printed: slot.printed.clone(),
                });
            }
        }
        goal
    }

    /// Records a finished subtask. Returns false (and changes nothing) when
    /// the subtask is not running: an outcome is accepted exactly once.
    pub fn finish(&mut self, id: &str, outcome: &Outcome) -> bool {
        let Some(slot) = self
            .slot_mut(id)
            .filter(|s| s.state == SubtaskStatus::Running)
        else {
            return false;
        };
        slot.state = SubtaskStatus::Finished;
        slot.rounds = outcome.rounds;
        slot.result = Some(outcome.result.clone().unwrap_or_default());
        slot.printed = outcome.printed.clone();
        slot.usage = outcome.usage;
        self.usage += outcome.usage;
        true
    }

    /// Marks a pending subtask finished with `result` without running it
    /// (a resumed task's subtask that had finished before); false when it
    /// is not pending.
    pub fn resume_finished(&mut self, id: &str, result: String, rounds: u32) -> bool {
        let Some(slot) = self
            .slot_mut(id)
            .filter(|s| s.state == SubtaskStatus::Pending)
        else {
            return false;
        };
        slot.state = SubtaskStatus::Finished;
        slot.rounds = rounds;
        slot.result = Some(result);
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
            .filter(|s| s.state == SubtaskStatus::Running)?;
        slot.state = SubtaskStatus::Failed;
        slot.rounds = rounds;
        slot.progress = Some(progress);
        slot.usage = usage;
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

    /// Records where subtask `id` runs now (`local` or a node's name).
    pub fn place(&mut self, id: &str, node: String) {
        if let Some(slot) = self.slot_mut(id) {
            slot.node = Some(node);
        }
    }

    /// Marks a running subtask for a restart after its executor crashed.
    /// Returns false when it was already restarted once (or is not running).
    pub fn restart(&mut self, id: &str) -> bool {
        match self.slot_mut(id) {
            Some(slot) if slot.state == SubtaskStatus::Running && slot.restarts == 0 => {
                slot.restarts = 1;
                true
            }
            _ => false,
        }
    }

    /// Applies a replan's answer for `failed`: on success the failed subtask
    /// and its pending dependents are replaced by `subtasks`; otherwise the
    /// failure stands and the dependents are skipped.
    pub fn apply_replan(&mut self, failed: &str, plan: Result<Vec<PlannedSubtask>, PlanError>) {
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
                    slot.state = SubtaskStatus::Replaced;
                }
                for id in replaced {
                    if let Some(slot) = self.slot_mut(&id) {
                        slot.state = SubtaskStatus::Replaced;
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
                slot.state = SubtaskStatus::Skipped;
                slot.progress = Some(format!("not run: it depends on `{failed}`, which failed"));
            }
        }
    }

    /// The deadline passed: pending subtasks are skipped and nothing starts
    /// any more. Running subtasks stay running until their cancelled loops
    /// report (`cancelled`); their ids are returned.
    pub fn time_out(&mut self) -> Vec<String> {
        self.timed_out = true;
        let mut running = Vec::new();
        for slot in &mut self.slots {
            match slot.state {
                SubtaskStatus::Running => running.push(slot.spec.id.clone()),
                SubtaskStatus::Pending => {
                    slot.state = SubtaskStatus::Skipped;
                    slot.progress = Some("not started before the task deadline".into());
                }
                _ => {}
            }
        }
        running
    }

    /// Records a running subtask that was cancelled, with the rounds and
    /// progress report its loop returned (or its journal held). Returns false
    /// when it was not running.
    pub fn cancel(&mut self, id: &str, rounds: u32, progress: String, usage: Usage) -> bool {
        let Some(slot) = self
            .slot_mut(id)
            .filter(|s| s.state == SubtaskStatus::Running)
        else {
            return false;
        };
        slot.state = SubtaskStatus::Cancelled;
        slot.rounds = rounds;
        slot.progress = Some(progress);
        slot.usage = usage;
        self.usage += usage;
        true
    }

    /// Pending subtasks that can never start (should not happen after
    /// validation; kept as a safety net so a task always ends).
    pub fn skip_stuck(&mut self) {
        if self.replans_in_flight > 0
            || self.slots.iter().any(|s| s.state == SubtaskStatus::Running)
        {
            return;
        }
        for slot in &mut self.slots {
            if slot.state == SubtaskStatus::Pending {
                slot.state = SubtaskStatus::Skipped;
                slot.progress = Some("not run: its dependencies never finished".into());
            }
        }
    }
}

#[cfg(test)]
mod tests;
