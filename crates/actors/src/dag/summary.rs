//! What a task's DAG adds up to once it settles: its status, the
//! finished subtasks' results, the result that already answers the task
//! (so no closing model call is made), and the task's report.

use std::collections::HashSet;

use super::{Dag, Slot};
use crate::plan::PlannedSubtask;
use crate::report::{SubtaskReport, SubtaskStatus, TaskReport, TaskStatus, UsageBy};

impl Dag {
    /// `finished`, `timeout` or `failed`, once settled.
    pub fn status(&self) -> TaskStatus {
        if self.over_budget {
            TaskStatus::Budget
        } else if self.timed_out {
            TaskStatus::Timeout
        } else if self
            .slots
            .iter()
            .all(|s| matches!(s.state, SubtaskStatus::Finished | SubtaskStatus::Replaced))
        {
            TaskStatus::Finished
        } else {
            TaskStatus::Failed
        }
    }

    /// Finished subtasks and their results, in plan order.
    pub fn results(&self) -> Vec<(&PlannedSubtask, &str)> {
        self.slots
            .iter()
            .filter(|s| s.state == SubtaskStatus::Finished)
            .map(|s| (&s.spec, s.result.as_deref().unwrap_or("")))
            .collect()
    }

    /// The result that answers the task without another model call: the
    /// one finished subtask's, or that of the one finished subtask every
    /// other finished subtask leads to through `depends_on` (it was given
    /// their results, so its own already builds on all of them). `None`
    /// when the results stand side by side and must be combined.
    pub fn closing_result(&self) -> Option<&str> {
        let finished: Vec<&Slot> = self
            .slots
            .iter()
            .filter(|s| s.state == SubtaskStatus::Finished)
            .collect();
        let is_needed = |id: &str| {
            finished
                .iter()
                .any(|s| s.spec.depends_on.iter().any(|d| d == id))
        };
        let mut sinks = finished.iter().filter(|s| !is_needed(&s.spec.id));
        let (Some(sink), None) = (sinks.next(), sinks.next()) else {
            return None;
        };
        let mut reached: HashSet<&str> = HashSet::new();
        let mut frontier: Vec<&str> = sink.spec.depends_on.iter().map(String::as_str).collect();
        while let Some(id) = frontier.pop() {
            if reached.insert(id) {
                if let Some(slot) = self.slot(id) {
                    frontier.extend(slot.spec.depends_on.iter().map(String::as_str));
                }
            }
        }
        finished
            .iter()
            .all(|s| s.spec.id == sink.spec.id || reached.contains(s.spec.id.as_str()))
            .then(|| sink.result.as_deref().unwrap_or(""))
    }

    /// The report, with `result` as the final answer.
    pub fn report(&self, result: Option<String>, error: Option<String>) -> TaskReport {
        let status = if error.is_some() {
            TaskStatus::Error
        } else {
            self.status()
        };
        TaskReport {
            status,
            result,
            subtasks: self
                .slots
                .iter()
                .map(|s| SubtaskReport {
                    id: s.spec.id.clone(),
                    role: s.spec.role.clone(),
                    goal: s.spec.goal.clone(),
                    outputs: s.spec.outputs.clone(),
                    status: s.state,
                    rounds: s.rounds,
                    result: s
                        .result
                        .clone()
                        .filter(|_| s.state == SubtaskStatus::Finished),
                    progress: s
                        .progress
                        .clone()
                        .filter(|_| s.state != SubtaskStatus::Finished),
                    node: s.node.clone(),
                    usage: s.usage,
                })
                .collect(),
            replans: self.replans,
            usage: self.usage,
            usage_by: UsageBy::of(
                self.planner_usage,
                self.slots.iter().map(|s| (s.spec.role.as_str(), s.usage)),
            ),
            error,
            trace_id: None,
        }
    }
}
