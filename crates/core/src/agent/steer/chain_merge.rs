//! **Chain merge** (the planner's, not the loop's): a chain of subtasks
//! that one executor role can do alone runs as one subtask.
//!
//! A plan splits work between roles; each split is a hand-over, and with a
//! small model the hand-over is where plans lose work that one loop keeps
//! (EVALS.md §28 and §40: a reader's result without the values its writer
//! needs, a detail of the goal lost in a paraphrase). Where splitting buys
//! nothing — a subtask whose only dependent is the next one, so nothing
//! runs beside it, and a role that has every tool both need — the planner
//! joins them (`hermes_actors::plan::merge_chains`) before any executor
//! starts. Independent subtasks, roles with tools the other lacks, other
//! models, budgets or approval rules stay apart. This file is its switch:
//! the planner reads `--steer chain_merge=on|off` from the limits its
//! executors get; no round of a loop is touched.
//!
//! **Off** (EVALS.md §49): on the plan suite it acted in 11 of 12 plans
//! and passed 4 of 12 against 6 of 12 split, +2 −5. The joined chains
//! lost the hand-over's failures (two tasks passed for the first time) but
//! five tasks that two executors did well failed on the second goal of a
//! long one: for a 1.5B executor a short goal is worth more than the
//! hand-over costs.

use super::Steer;

/// The steer's name (switches).
pub const NAME: &str = "chain_merge";

/// The chain-merge rule's switch.
pub struct ChainMerge;

impl Steer for ChainMerge {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_by_default(&self) -> bool {
        false
    }

    fn about(&self) -> &'static str {
        "plan mode: a chain of subtasks (each the only dependent of the one before) that one role has every tool for runs as one subtask of that role"
    }
}
