//! **Guard**: decide whether the loop may run another round.
//!
//! Four things stop a run: the model calls `finish`; the round budget is
//! spent; the same action (name plus canonical args hash) shows up in 3 of
//! the last 5 rounds — a round with no readable decision counts as one and
//! the same action, so a model that cannot produce JSON is stopped early;
//! and the wall clock, which the loop enforces around every model and tool
//! call (see `run.rs`), as it does the caller's cancellation.

use serde::{Deserialize, Serialize};

use crate::journal::JournalEntry;
use crate::limits::Limits;

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopStatus {
    /// The model called `finish`, and every file the goal asks the run to
    /// write is there.
    Finished,
    /// The model called `finish` while a file the goal asks the run to
    /// write is missing (named in the outcome's `missing`): the model's
    /// result is kept, the status says the work is not done.
    Incomplete,
    /// The round budget ran out.
    MaxRounds,
    /// The model kept repeating the same action.
    Repetition,
    /// The wall-clock budget ran out.
    Timeout,
    /// The caller cancelled the run (a planner's deadline or shutdown, Ctrl-C).
    Cancelled,
    /// The run could not go on (the model was unreachable, for example).
    Error,
    /// The task's token or call budget was spent (`--token-budget`,
    /// `--call-budget`).
    Budget,
}

impl StopStatus {
    /// The snake_case name used in JSON and messages.
    pub fn as_str(self) -> &'static str {
        match self {
            StopStatus::Finished => "finished",
            StopStatus::Incomplete => "incomplete",
            StopStatus::MaxRounds => "max_rounds",
            StopStatus::Repetition => "repetition",
            StopStatus::Timeout => "timeout",
            StopStatus::Cancelled => "cancelled",
            StopStatus::Error => "error",
            StopStatus::Budget => "budget",
        }
    }
}

/// Checks the round-count and repetition guards after a round was recorded.
pub fn check(entries: &[JournalEntry], limits: &Limits) -> Option<StopStatus> {
    if is_repeating(entries, limits) {
        return Some(StopStatus::Repetition);
    }
    if entries.len() as u32 >= limits.max_rounds {
        return Some(StopStatus::MaxRounds);
    }
    None
}

/// Whether the latest action occurs `repetition_threshold` times within the
/// last `repetition_window` rounds.
fn is_repeating(entries: &[JournalEntry], limits: &Limits) -> bool {
    let Some(last) = entries.last() else {
        return false;
    };
    let window = &entries[entries.len().saturating_sub(limits.repetition_window)..];
    let same = window
        .iter()
        .filter(|e| e.action == last.action && e.args_hash == last.args_hash)
        .count();
    same >= limits.repetition_threshold
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn entry(round: u32, action: &str, args: serde_json::Value) -> JournalEntry {
        JournalEntry::new(round, "", action, args)
    }

    #[test]
    fn repetition_stops_after_three_identical_calls_in_five_rounds() {
        let limits = Limits::default();
        let a = || json!({"path": "a"});
        let mut entries = vec![
            entry(1, "read_file", a()),
            entry(2, "list_dir", json!({})),
            entry(3, "read_file", a()),
        ];
        assert_eq!(check(&entries, &limits), None);
        entries.push(entry(4, "read_file", json!({"path": "b"})));
        assert_eq!(check(&entries, &limits), None);
        entries.push(entry(5, "read_file", a()));
        assert_eq!(check(&entries, &limits), Some(StopStatus::Repetition));
    }

    #[test]
    fn identical_calls_spread_wider_than_the_window_do_not_stop() {
        let limits = Limits::default();
        let a = || json!({"path": "a"});
        let entries: Vec<_> = (1..=7)
            .map(|r| {
                if r % 3 == 1 {
                    entry(r, "read_file", a())
                } else {
                    entry(r, "list_dir", json!({"path": r.to_string()}))
                }
            })
            .collect();
        assert_eq!(check(&entries, &limits), None);
    }

    #[test]
    fn max_rounds_stops_at_the_limit() {
        let limits = Limits {
            max_rounds: 2,
            ..Limits::default()
        };
        let entries = vec![entry(1, "a", json!({})), entry(2, "b", json!({}))];
        assert_eq!(check(&entries, &limits), Some(StopStatus::MaxRounds));
    }
}
