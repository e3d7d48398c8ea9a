//! Read-only questions about one task's DAG: its slots, the dependents
//! of a subtask, the ids a replan may build on, what is running, and
//! whether the task has settled. Nothing here changes the DAG; the rules
//! that do are in the module above.

use std::collections::HashSet;

use super::{Dag, Slot};
use crate::plan::PlannedSubtask;
use crate::report::SubtaskStatus;

impl Dag {
    /// Every subtask so far.
    pub fn slots(&self) -> &[Slot] {
        &self.slots
    }

    /// The slot of subtask `id`.
    pub fn slot(&self, id: &str) -> Option<&Slot> {
        self.slots.iter().find(|s| s.spec.id == id)
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
                if slot.state == SubtaskStatus::Pending
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
                    SubtaskStatus::Finished | SubtaskStatus::Pending | SubtaskStatus::Running
                )
            })
            .map(|s| s.spec.id.clone())
            .filter(|id| !replaced.contains(id))
            .collect()
    }

    /// The plans of the subtasks that finished.
    pub fn finished_specs(&self) -> Vec<PlannedSubtask> {
        self.slots
            .iter()
            .filter(|s| s.state == SubtaskStatus::Finished)
            .map(|s| s.spec.clone())
            .collect()
    }

    /// Every id ever used in this task.
    pub fn all_ids(&self) -> HashSet<String> {
        self.slots.iter().map(|s| s.spec.id.clone()).collect()
    }

    /// Ids of the running subtasks.
    pub fn running(&self) -> Vec<String> {
        self.slots
            .iter()
            .filter(|s| s.state == SubtaskStatus::Running)
            .map(|s| s.spec.id.clone())
            .collect()
    }

    /// Whether nothing is running, waiting to run, or waiting on a replan.
    pub fn is_settled(&self) -> bool {
        self.replans_in_flight == 0
            && !self
                .slots
                .iter()
                .any(|s| matches!(s.state, SubtaskStatus::Running))
            && (self.timed_out || !self.slots.iter().any(|s| s.state == SubtaskStatus::Pending))
    }
}
