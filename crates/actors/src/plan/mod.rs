//! Plans, as plain code: what a plan is and how it is read from the model's
//! reply (`subtask.rs`), the repairs made to it without a model call
//! (`repair.rs`), the checks it must pass (`validate.rs`), the chains one
//! role can do alone joined into one subtask (`merge.rs`), the one-subtask plan of a task
//! with one deliverable (`route.rs`), the prompts that
//! ask for one (`prompts.rs`), and the model calls that ask, repair,
//! validate and re-ask (`ask.rs`). Nothing here knows about actors.

mod ask;
mod merge;
mod prompts;
mod repair;
mod route;
mod subtask;
mod validate;

pub use ask::{plan_schema, request_answer, request_plan, AnswerError, Asked, IdRules, PlanError};
pub use merge::{merge_chains, merge_chains_if_on};
pub use prompts::{
    final_messages, plan_errors_message, plan_messages, replan_messages, ReplanContext,
};
pub use repair::repair_plan;
pub use route::{one_executor_if_on, one_executor_plan};
pub use subtask::{parse_plan, NoPlanFound, PlannedSubtask, PLAN_SHAPE};
pub use validate::{rename_clashes, validate_plan, MAX_SUBTASKS};

#[cfg(test)]
mod tests;
