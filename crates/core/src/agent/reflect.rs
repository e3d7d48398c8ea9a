//! Reflection: every few rounds, and whenever the same tool failed twice in
//! a row, one extra model call reviews the progress against the goal.
//!
//! The review is plain text (no schema, no JSON) and enters the next
//! prompt as a labelled note after the round it followed, never as a tool
//! observation. It does not use a round of the budget; its tokens count in
//! the run's usage. A reflection that fails (model error, empty answer, the
//! clock) is skipped with a warning and never stops the run.

use crate::journal::{JournalEntry, UNPARSED};
use crate::limits::Limits;
use crate::llm::{Author, ChatMessage};
use crate::text::clip;

/// Rounds between two scheduled reflections that `--reflect-every` users
/// start from (the default is off: see EVALS.md).
pub const SUGGESTED_REFLECT_EVERY: u32 = 4;

/// Longest reflection kept, in characters.
const REFLECTION_CHARS: usize = 600;

/// Most tokens a reflection may take.
pub const REFLECTION_MAX_TOKENS: u32 = 160;

/// What the model is asked, appended to the turn it would decide from.
pub const QUESTION: &str = "Before the next step, review your progress. In at most three short sentences of plain text (no JSON, no tool call): what of the goal is done, what is missing, and whether to change approach.";

/// A review made after a round.
#[derive(Debug, Clone, PartialEq)]
pub struct Reflection {
    /// The round it followed.
    pub round: u32,
    /// What the model wrote.
    pub text: String,
}

/// Whether a reflection is due after the last round of `history`: every
/// `limits.reflect_every` rounds, or when the same tool has just failed for
/// the second time in a row (once per streak: not again on the third).
/// `reflect_every` 0 turns reflection off.
pub fn due(history: &[JournalEntry], limits: &Limits) -> bool {
    let rounds = history.len() as u32;
    if rounds == 0 || limits.reflect_every == 0 {
        return false;
    }
    let streak = history
        .iter()
        .rev()
        .take_while(|e| {
            e.is_error() && e.action != UNPARSED && e.action == history[history.len() - 1].action
        })
        .count();
    rounds.is_multiple_of(limits.reflect_every) || streak == 2
}

/// The reflection request: the conversation the next decision would see,
/// with [`QUESTION`] added to its last user turn.
pub fn request(mut messages: Vec<ChatMessage>) -> Vec<ChatMessage> {
    match messages.last_mut() {
        Some(last) if last.role == Author::User => {
            last.content.push_str("\n\n");
            last.content.push_str(QUESTION);
        }
        _ => messages.push(ChatMessage::user(QUESTION)),
    }
    messages
}

/// The reflection as kept: trimmed and clipped; `None` when empty.
pub fn clean(reply: &str) -> Option<String> {
    let text = reply.trim();
    (!text.is_empty()).then(|| clip(text, REFLECTION_CHARS))
}

/// The note a later prompt shows for `reflection`.
pub fn note(reflection: &Reflection) -> String {
    format!(
        "Your reflection after round {} (a note to yourself, not a tool result): {}",
        reflection.round, reflection.text
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(round: u32, action: &str, ok: bool) -> JournalEntry {
        JournalEntry::finished_call(round, action, ok)
    }

    #[test]
    fn due_on_the_cadence_and_after_two_failures_of_the_same_tool() {
        let limits = Limits {
            reflect_every: 4,
            ..Limits::default()
        };
        let ok = |n: u32| {
            (1..=n)
                .map(|r| entry(r, "read_file", true))
                .collect::<Vec<_>>()
        };
        assert!(!due(&[], &limits));
        assert!(!due(&ok(3), &limits));
        assert!(due(&ok(4), &limits));
        assert!(!due(&ok(5), &limits));
        assert!(due(&ok(8), &limits));
        let mut h = ok(1);
        h.push(entry(2, "run_code", false));
        assert!(!due(&h, &limits));
        h.push(entry(3, "run_code", false));
        assert!(due(&h, &limits), "same tool failed twice in a row");
        h.push(entry(4, "run_code", false));
        assert!(due(&h, &limits), "round 4 is on the cadence");
        h.push(entry(5, "run_code", false));
        assert!(!due(&h, &limits), "once per streak of failures");
        let mut h = ok(1);
        h.push(entry(2, "run_code", false));
        h.push(entry(3, "read_file", false));
        assert!(!due(&h, &limits), "two different tools");
        let mut h = ok(1);
        h.push(entry(2, UNPARSED, false));
        h.push(entry(3, UNPARSED, false));
        assert!(!due(&h, &limits), "parse failures are not a tool failing");
        let off = Limits {
            reflect_every: 0,
            ..Limits::default()
        };
        assert!(!due(&ok(4), &off));
        assert!(!due(&h, &off));
    }

    #[test]
    fn the_question_joins_the_last_user_turn() {
        let asked = request(vec![ChatMessage::system("s"), ChatMessage::user("obs")]);
        assert_eq!(asked.len(), 2);
        assert!(asked[1].content.starts_with("obs\n\n") && asked[1].content.ends_with(QUESTION));
        assert_eq!(clean("  \n"), None);
        assert_eq!(
            clean(" done: read. missing: sum. ").as_deref(),
            Some("done: read. missing: sum.")
        );
    }
}
