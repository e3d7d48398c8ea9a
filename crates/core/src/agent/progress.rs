//! The progress report every run returns, built from the journal alone.
//!
//! A forced stop (max rounds, repetition, timeout, error) must still leave
//! the user, or a planner deciding whether to replan, with what was done,
//! where it stands, and the last thing observed.

use std::fmt::Write as _;
use std::time::Duration;

use super::guard::StopStatus;
use super::perceive::summary_line;
use crate::journal::JournalEntry;
use crate::text::{clip, one_line};

/// Most rounds listed one per line; earlier ones are counted.
const LISTED_ROUNDS: usize = 20;

/// Writes the report for a run that ended with `status`.
pub fn progress_report(
    goal: &str,
    status: StopStatus,
    entries: &[JournalEntry],
    elapsed: Duration,
    error: Option<&str>,
    missing: &[String],
) -> String {
    let mut r = format!("Goal: {goal}\n");
    let rounds = entries.len();
    let secs = elapsed.as_secs_f64();
    let _ = match status {
        StopStatus::Finished => {
            writeln!(r, "Status: finished after {rounds} rounds in {secs:.1}s.")
        }
        StopStatus::Error => writeln!(
            r,
            "Status: stopped by an error after {rounds} rounds in {secs:.1}s: {}",
            error.unwrap_or("unknown error")
        ),
        StopStatus::Cancelled => {
            writeln!(r, "Status: cancelled after {rounds} rounds in {secs:.1}s.")
        }
        StopStatus::Budget => writeln!(
            r,
            "Status: the task's budget was spent after {rounds} rounds in {secs:.1}s."
        ),
        StopStatus::Incomplete => writeln!(
            r,
            "Status: incomplete after {rounds} rounds in {secs:.1}s: the model finished, but the goal's {} still missing: {}.",
            if missing.len() == 1 { "file is" } else { "files are" },
            missing.join(", ")
        ),
        other => writeln!(
            r,
            "Status: stopped by the {} guard after {rounds} rounds in {secs:.1}s.",
            other.as_str()
        ),
    };
    if entries.is_empty() {
        r.push_str("Done so far: nothing; no round completed.");
        return r;
    }
    r.push_str("Done so far:\n");
    let skipped = rounds.saturating_sub(LISTED_ROUNDS);
    if skipped > 0 {
        let _ = writeln!(r, "- ({skipped} earlier rounds)");
    }
    for entry in &entries[skipped..] {
        let _ = writeln!(r, "{}", summary_line(entry));
    }
    let ok = entries.iter().filter(|e| !e.is_error()).count();
    let _ = writeln!(r, "Where it stands: {ok} of {rounds} actions succeeded.");
    if let Some(thought) = entries
        .iter()
        .rev()
        .map(|e| e.thought.trim())
        .find(|t| !t.is_empty())
    {
        let _ = writeln!(r, "Last thought: {}", clip(&one_line(thought), 300));
    }
    if let Some(last) = entries.last() {
        let _ = write!(
            r,
            "Last observation (round {}): {}",
            last.round,
            clip(&last.observation, 500)
        );
    }
    // Kept with the outcome as long as its task lives: without the slack
    // `write!` grew it by (a million executors' reports, BENCHMARKS.md).
    r.shrink_to_fit();
    r
}
