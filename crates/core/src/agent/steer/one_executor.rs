//! **One executor** (the planner's, not the loop's): a task with exactly
//! one deliverable runs as one subtask, without a planning call.
//!
//! A plan pays for each split with a hand-over, and with a small model the
//! hand-over is where work is lost (EVALS.md §49: the planner split 37 of
//! the dev suite's 45 one-file tasks and passed 15 where one loop passed
//! 29). A task's deliverables are known before any model call: the files
//! its goal names that the workspace lacks, and the files it asks to change
//! in place ([`super::goal_files`]). With exactly one, the whole task goes
//! to one executor of the widest role that can write it
//! (`hermes_actors::plan::one_executor_plan`); with two or more, or none
//! named, the planner plans. This file is its switch: the planner reads
//! `--steer one_executor=on|off` from the limits its executors get; no
//! round of a loop is touched.
//!
//! **On** (EVALS.md §50): the dev suite in plan mode passed 26 of 45
//! against 15 planned (+14 −3, one loop 29) at 121 s a run against 226;
//! the plan suite 6 of 12 either way at 307 s a run against 384; on the
//! held-out plan suite it acted in 3 of 15 tasks, passing 1 as the plans
//! did, in 378 s against 1,061.

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
        true
    }

    fn about(&self) -> &'static str {
        "plan mode: a task whose goal names exactly one deliverable (one file to write or to change) runs as one subtask of the widest role that can write, with no planning call"
    }
}
