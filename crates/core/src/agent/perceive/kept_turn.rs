//! The conversation kept from one round to the next (log layout).
//!
//! In the log layout a round's prompt is two messages: the system prompt,
//! the same for the whole run, and one user turn that only grows at its
//! end between two rounds (the newest round's block), apart from its
//! closing request and the rounds that move into the summary once per
//! block. Built again from its parts every round, the turn and the system
//! prompt were copied in full each time (issue 33: the largest copy of a
//! loop round). [`KeptTurn`] keeps the messages the model was last asked
//! with and, for the next round, cuts the closing request off, appends the
//! new rounds' blocks and the new closing request: the same text as
//! [`messages_rendered`](super::messages_rendered), which it falls back to
//! whenever anything before the new rounds may have changed (the summary
//! moved, a reflection came, the turns layout, or no messages were handed
//! back).

use super::{messages_and_body, next_step, reflect, summarised_rounds, PromptParts};
use crate::limits::HistoryLayout;
use crate::llm::{Author, ChatMessage};

/// What the kept messages were built from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Built {
    /// Bytes of the user turn before its closing request.
    body: usize,
    /// Bytes of the whole user turn as handed out.
    turn: usize,
    /// Journal entries its blocks show.
    rounds: usize,
    /// Of those, how many were summarised.
    summarised: usize,
    /// Reflections there were.
    reflections: usize,
    /// Bytes of the system prompt (the same text for a whole run).
    system: usize,
}

/// The last round's conversation, kept to build the next one from.
#[derive(Debug, Default)]
pub struct KeptTurn {
    /// Messages handed back ([`Self::give_back`]) and what they were built
    /// from.
    kept: Option<Vec<ChatMessage>>,
    /// What the messages last handed out were built from.
    built: Option<Built>,
    /// Rounds built from kept messages (the tests check the path is taken).
    #[cfg(test)]
    reused: usize,
}

impl KeptTurn {
    /// The conversation for the next decision, as
    /// [`messages_rendered`](super::messages_rendered) writes it (same
    /// arguments), built from the kept messages when they can be.
    pub fn messages(&mut self, parts: PromptParts<'_>) -> Vec<ChatMessage> {
        let (history, reflections, limits) = (parts.history, parts.reflections, parts.limits);
        let kept = self.kept.take();
        let built = self.built.take();
        let summarised = summarised_rounds(history.len(), limits.full_rounds);
        let (messages, body) = match (kept, built) {
            (Some(mut messages), Some(built))
                if limits.history == HistoryLayout::Log
                    && built.summarised == summarised
                    && built.reflections == reflections.len()
                    && built.rounds <= history.len()
                    && parts.rendered.rounds().len() >= history.len()
                    && built.system == parts.system.len()
                    && is_turn(&messages, built.body) =>
            {
                let user = &mut messages[1].content;
                user.truncate(built.body);
                let new = built.rounds..history.len();
                for (entry, text) in history[new.clone()]
                    .iter()
                    .zip(&parts.rendered.rounds()[new])
                {
                    user.push_str(&text.whole);
                    user.push_str("\n\n");
                    if let Some(r) = reflections.iter().rev().find(|r| r.round == entry.round) {
                        user.push_str(&reflect::note(r));
                        user.push_str("\n\n");
                    }
                }
                let body = user.len();
                next_step(user, history.last(), limits, parts.written);
                #[cfg(test)]
                {
                    self.reused += 1;
                }
                (messages, Some(body))
            }
            _ => messages_and_body(parts),
        };
        let turn = messages.get(1).map_or(0, |m| m.content.len());
        self.built = body.map(|body| Built {
            body,
            turn,
            rounds: history.len(),
            summarised,
            reflections: reflections.len(),
            system: parts.system.len(),
        });
        messages
    }

    /// Keeps `messages`, the last ones [`Self::messages`] handed out, for
    /// the next round, when they came back as they went (a system message
    /// and a user turn of the length it had: nothing was appended to them).
    pub fn give_back(&mut self, messages: Vec<ChatMessage>) {
        if self.built.is_some_and(|built| {
            is_turn(&messages, built.body) && messages[1].content.len() == built.turn
        }) {
            self.kept = Some(messages);
        }
    }
}

/// Whether `messages` are a system message and a user turn of at least
/// `body` bytes, cut at a character boundary there.
fn is_turn(messages: &[ChatMessage], body: usize) -> bool {
    matches!(messages, [system, user]
        if system.role == Author::System
            && user.role == Author::User
            && user.content.is_char_boundary(body))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::perceive::{messages_rendered, Opening, Reflection, RenderedRounds};
    use crate::journal::JournalEntry;
    use crate::limits::Limits;
    use crate::tools::ToolStatus;
    use serde_json::json;

    fn entry(round: u32) -> JournalEntry {
        let failed = round.is_multiple_of(3);
        JournalEntry {
            status: if failed {
                ToolStatus::Error
            } else {
                ToolStatus::Ok
            },
            observation: if failed {
                r#"{"status":"error","data":null,"error":"no such file"}"#.to_string()
            } else {
                format!(r#"{{"status":"ok","data":"text of file {round} — ü","error":null}}"#)
            },
            ..JournalEntry::new(
                round,
                "reading",
                "read_file",
                json!({"path": format!("f{round}.txt")}),
            )
        }
    }

    /// Round after round, handing the messages back each time, the kept
    /// conversation is the one built from its parts, through summary
    /// moves, reflections and closings that change.
    #[test]
    fn the_kept_conversation_is_the_one_built_from_its_parts() {
        for full_rounds in [1, 2, 4, 6] {
            let limits = Limits {
                full_rounds,
                ..Limits::default()
            };
            let opening = Opening {
                notes: "Notes.\n\n",
                goal: "Read the files.",
                workspace: "Files in the workspace: f1.txt",
            };
            let mut history = Vec::new();
            let mut reflections = Vec::new();
            let mut rendered = RenderedRounds::default();
            let mut kept = KeptTurn::default();
            for round in 1..=20u32 {
                rendered.sync(&history, &limits);
                let written = if round % 4 == 0 {
                    "answer.txt is written now."
                } else {
                    ""
                };
                let parts = PromptParts {
                    system: "system",
                    opening,
                    history: &history,
                    rendered: &rendered,
                    reflections: &reflections,
                    limits: &limits,
                    written,
                };
                let (got, want) = (kept.messages(parts), messages_rendered(parts));
                assert_eq!(got, want, "full_rounds {full_rounds}, round {round}");
                assert!(got[1].content.contains("Goal: Read the files."));
                // Every fifth round's messages are not handed back (a
                // re-ask appended to them).
                if round % 5 != 0 {
                    kept.give_back(got);
                }
                history.push(entry(round));
                if round % 7 == 0 {
                    reflections.push(Reflection {
                        round,
                        text: format!("reflection after round {round}"),
                    });
                }
            }
            // Most rounds were built from the kept messages: all but the
            // first, those after one not handed back, and those where the
            // summary moved or a reflection came.
            assert!(
                full_rounds < 4 || kept.reused >= 8,
                "full_rounds {full_rounds}: {}",
                kept.reused
            );
        }
    }

    #[test]
    fn messages_with_more_turns_are_not_kept() {
        let limits = Limits::default();
        let rendered = RenderedRounds::default();
        let mut kept = KeptTurn::default();
        let mut messages = kept.messages(PromptParts {
            system: "system",
            opening: Opening::default(),
            history: &[],
            rendered: &rendered,
            reflections: &[],
            limits: &limits,
            written: "",
        });
        let mut longer = messages.clone();
        messages.push(ChatMessage::assistant("{}"));
        kept.give_back(messages);
        assert!(kept.kept.is_none());
        // Nor a turn that was written to after it was handed out.
        longer[1].content.push_str("\n\nRead the goal again.");
        kept.give_back(longer);
        assert!(kept.kept.is_none());
    }
}
