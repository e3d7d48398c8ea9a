//! **One executor** (the planner's, not the loop's): a task with at most
//! one deliverable runs as one subtask, without a planning call.
//!
//! A plan pays for each split with a hand-over, and with a small model the
//! hand-over is where work is lost (EVALS.md §49: the planner split 37 of
//! the dev suite's 45 one-file tasks and passed 15 where one loop passed
//! 29). A task's deliverables are known before any model call: the files
//! its goal names that the workspace lacks, and the files it asks to change
//! in place ([`super::goal_files`]). With one or none, the whole task goes
//! to one executor of the widest role that can produce it
//! (`hermes_actors::plan::one_executor_plan`); with two or more, the
//! planner plans. This file is its switch: the planner reads
//! `--steer one_executor=on|off` from the limits its executors get; no
//! round of a loop is touched.

use super::Steer;

/// The steer's name (switches).
pub const NAME: &str = "one_executor";

/// The one-executor route's switch.
pub struct OneExecutor;

impl Steer for OneExecutor {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_by_default(&self) -> bool {
        false
    }

    fn about(&self) -> &'static str {
        "plan mode: a task whose goal has at most one deliverable (one file to write or change) runs as one subtask of the widest role, with no planning call"
    }
}
