//! Exit codes: the CLI's contract with scripts, in one place.
//!
//! 0: the agent finished. 3: stopped by a guard or a deadline, or ended
//! `incomplete` (a file the goal asks for is missing), with partial
//! results (a progress report is printed). 1: an error (bad flags, bad
//! config, unreachable model, no plan). 130: interrupted with Ctrl-C.

use hermes::actors::TaskStatus;
use hermes::agent::StopStatus;

/// The run finished.
pub const OK: i32 = 0;
/// An error: bad input, bad configuration, an unreachable model.
pub const ERROR: i32 = 1;
/// Stopped before finishing, with partial results.
pub const STOPPED: i32 = 3;
/// Interrupted by the user (Ctrl-C), as shells report SIGINT.
pub const INTERRUPTED: i32 = 130;

/// The exit code of `hermes run` for a loop that ended with `status`.
pub fn for_run(status: StopStatus) -> i32 {
    match status {
        StopStatus::Finished => OK,
        StopStatus::MaxRounds
        | StopStatus::Repetition
        | StopStatus::Timeout
        | StopStatus::Incomplete
        | StopStatus::Budget => STOPPED,
        StopStatus::Cancelled => INTERRUPTED,
        StopStatus::Error => ERROR,
    }
}

/// The exit code of `hermes plan` for a task that ended with `status`.
pub fn for_task(status: TaskStatus) -> i32 {
    match status {
        TaskStatus::Finished => OK,
        TaskStatus::Failed | TaskStatus::Timeout | TaskStatus::Budget => STOPPED,
        TaskStatus::Error => ERROR,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_match_the_cli_contract() {
        assert_eq!(for_run(StopStatus::Finished), 0);
        assert_eq!(for_run(StopStatus::Repetition), 3);
        assert_eq!(for_run(StopStatus::Timeout), 3);
        assert_eq!(for_run(StopStatus::MaxRounds), 3);
        assert_eq!(for_run(StopStatus::Incomplete), 3);
        assert_eq!(for_run(StopStatus::Error), 1);
        assert_eq!(for_run(StopStatus::Cancelled), 130);
        assert_eq!(for_task(TaskStatus::Finished), 0);
        assert_eq!(for_task(TaskStatus::Failed), 3);
        assert_eq!(for_task(TaskStatus::Timeout), 3);
        assert_eq!(for_task(TaskStatus::Error), 1);
    }
}
