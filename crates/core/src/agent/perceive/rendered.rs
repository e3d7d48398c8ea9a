//! The text of past rounds in the prompt: each journalled round rendered
//! once ([`RenderedRounds`]) as its log block or replayed reply, its
//! one-line summary, the line that counts the oldest rounds, and how many
//! rounds are summarised or counted as a run grows.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::OnceLock;

use serde_json::{json, Value};

use super::observation_text;
use crate::decision::Decision;
use crate::journal::{canonical_json, JournalEntry, UNPARSED};
use crate::limits::{HistoryLayout, Limits};
use crate::text::{clip, clip_cow, one_line_cow};

/// Longest string value of a past action's args replayed in the prompt.
pub(super) const HISTORY_ARG_CHARS: usize = 600;

/// The text of one past round that depends on its journal entry (and the
/// run's layout) alone: how it is shown whole, and its summary line once
/// it is shown as one. Entries never change once journalled, so a run
/// renders each once ([`RenderedRounds`]).
#[derive(Debug, Clone, PartialEq)]
pub struct RenderedRound {
    /// [`summary_line`] of the entry, written the first time the round is
    /// summarised (a long run's oldest rounds are only counted, and a short
    /// run's are never summarised).
    summary: OnceLock<String>,
    /// The entry shown whole: its block in the log
    /// ([`HistoryLayout::Log`]) or the assistant turn that replays its
    /// decision ([`HistoryLayout::Turns`]).
    pub whole: String,
}

impl RenderedRound {
    /// Renders `entry` for `layout`; `lines` shows the observation's texts
    /// of several lines as lines (see [`observation_text::shown`]).
    pub fn of(entry: &JournalEntry, layout: HistoryLayout, lines: bool) -> Self {
        Self {
            summary: OnceLock::new(),
            whole: match layout {
                HistoryLayout::Log => log_block(entry, lines),
                HistoryLayout::Turns => replayed_reply(entry),
            },
        }
    }

    /// The round's summary line; `entry` is the round's own entry.
    pub fn summary(&self, entry: &JournalEntry) -> &str {
        self.summary.get_or_init(|| summary_line(entry))
    }
}

/// Rendered rounds kept in step with a growing journal: each round is
/// rendered once, instead of every past round again on every round, and
/// the line that counts the oldest rounds is written again only when that
/// count moves (once per block of rounds).
#[derive(Debug, Default)]
pub struct RenderedRounds {
    rounds: Vec<RenderedRound>,
    /// How many of the oldest rounds [`Self::counted_line`] counts.
    counted: usize,
    counted_line: String,
}

impl RenderedRounds {
    /// Renders the rounds of `history` not rendered yet (the run's
    /// `limits` are the same for the whole run), and the counted line when
    /// its count moved.
    pub fn sync(&mut self, history: &[JournalEntry], limits: &Limits) -> &Self {
        if self.rounds.len() > history.len() {
            *self = Self::default();
        }
        let done = self.rounds.len();
        let lines = limits.steer.is_on(observation_text::NAME);
        self.rounds.extend(
            history[done..]
                .iter()
                .map(|entry| RenderedRound::of(entry, limits.history, lines)),
        );
        let summarised = summarised_rounds(history.len(), limits.full_rounds);
        let counted = counted_rounds(summarised, limits.full_rounds);
        if counted != self.counted {
            self.counted = counted;
            self.counted_line = if counted > 0 {
                counted_line(&history[..counted])
            } else {
                String::new()
            };
        }
        self
    }

    /// The rounds rendered so far, oldest first.
    pub fn rounds(&self) -> &[RenderedRound] {
        &self.rounds
    }

    /// The line counting the `counted` oldest rounds of `history`: the one
    /// kept when it counts as many, else written now.
    pub(super) fn counted_line<'a>(
        &'a self,
        history: &[JournalEntry],
        counted: usize,
    ) -> Cow<'a, str> {
        if counted == self.counted {
            Cow::Borrowed(&self.counted_line)
        } else {
            Cow::Owned(counted_line(&history[..counted]))
        }
    }
}

/// How many of `rounds` past rounds are shown as summary lines: none while
/// they fit in `full_rounds`, then whole blocks of half of it.
pub fn summarised_rounds(rounds: usize, full_rounds: usize) -> usize {
    if rounds <= full_rounds {
        return 0;
    }
    let block = (full_rounds / 2).max(1);
    (rounds - full_rounds).div_ceil(block) * block
}

/// How many of the `summarised` oldest rounds are only counted (one line
/// for all of them) so that at most `full_rounds` summary lines remain:
/// none until then, then whole blocks of half of it, like
/// [`summarised_rounds`], so the opening changes once per block. This keeps
/// a long run's prompt from growing a line per round.
pub fn counted_rounds(summarised: usize, full_rounds: usize) -> usize {
    summarised_rounds(summarised, full_rounds.max(1))
}

/// One line for the oldest rounds: their span and, per tool in order of
/// first use, how many calls and how many failed.
fn counted_line(entries: &[JournalEntry]) -> String {
    let mut tools: Vec<(&str, usize, usize)> = Vec::new();
    for entry in entries {
        let failed = usize::from(entry.is_error());
        match tools.iter_mut().find(|(name, _, _)| *name == entry.action) {
            Some((_, calls, errors)) => {
                *calls += 1;
                *errors += failed;
            }
            None => tools.push((&entry.action, 1, failed)),
        }
    }
    let calls: Vec<String> = tools
        .iter()
        .map(|(name, calls, errors)| match errors {
            0 => format!("{name} ×{calls}"),
            e => format!("{name} ×{calls} ({e} failed)"),
        })
        .collect();
    let (first, last) = (
        entries.first().map_or(0, |e| e.round),
        entries.last().map_or(0, |e| e.round),
    );
    format!("- rounds {first}–{last}: {}", calls.join(", "))
}

/// A past round in the log layout: the call made and what it returned
/// (an unreadable reply is named as such, not replayed); `lines` shows the
/// observation's texts of several lines as lines.
pub(super) fn log_block(entry: &JournalEntry, lines: bool) -> String {
    if entry.action == UNPARSED {
        return format!(
            "Round {}: your reply was not a readable decision.\nObservation: {}",
            entry.round, entry.observation
        );
    }
    let mut block = Vec::with_capacity(64 + entry.action.len() + entry.observation.len());
    let _ = write!(block, "Round {}: you called {} ", entry.round, entry.action);
    // The args as compact JSON with long strings cut, written in place
    // (no clipped copy of the args is built).
    let _ = serde_json::to_writer(&mut block, &Clipped(&entry.args));
    block.extend_from_slice(b"\nObservation: ");
    block.extend_from_slice(observation_text::for_prompt(lines, &entry.observation).as_bytes());
    // Every part is UTF-8 (serde_json writes UTF-8).
    String::from_utf8(block).unwrap_or_default()
}

/// One line for an older round: number, action, args digest, status.
pub fn summary_line(entry: &JournalEntry) -> String {
    let args = canonical_json(&entry.args);
    let args = one_line_cow(&args);
    let args = clip_cow(&args, 80);
    let status = entry.status.as_str();
    let mut line = String::with_capacity(24 + entry.action.len() + args.len() + status.len());
    let _ = write!(line, "- round {}: ", entry.round);
    line.push_str(&entry.action);
    line.push(' ');
    line.push_str(&args);
    line.push_str(" → ");
    line.push_str(status);
    if entry.is_error() {
        /// The envelope's error, read without building the rest.
        #[derive(serde::Deserialize)]
        struct Envelope<'a> {
            #[serde(borrow, default)]
            error: Option<Cow<'a, str>>,
        }
        if let Some(error) = serde_json::from_str::<Envelope<'_>>(&entry.observation)
            .ok()
            .and_then(|e| e.error)
        {
            line.push_str(" (");
            line.push_str(&clip_cow(&one_line_cow(&error), 80));
            line.push(')');
        }
    }
    line
}

/// The assistant turn for a past round: its decision as canonical JSON, or
/// the unreadable reply itself.
fn replayed_reply(entry: &JournalEntry) -> String {
    if entry.action == UNPARSED {
        return clip(entry.raw.as_deref().unwrap_or_default(), 500);
    }
    reply_json(&entry.thought, &entry.action, &entry.args)
}

/// A decision as the assistant turn that replays it.
pub fn decision_json(decision: &Decision) -> String {
    reply_json(
        &decision.thought,
        &decision.action.name,
        &decision.action.args,
    )
}

fn reply_json(thought: &str, action: &str, args: &Value) -> String {
    json!({
        "thought": clip(thought, 500),
        "action": {"name": action, "args": clip_strings(args)},
    })
    .to_string()
}

/// Args with long string values cut, so replayed history stays small.
pub(super) fn clip_strings(value: &Value) -> Value {
    match value {
        Value::String(s) => Value::String(clip(s, HISTORY_ARG_CHARS)),
        Value::Array(items) => Value::Array(items.iter().map(clip_strings).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), clip_strings(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// A value serialized as [`clip_strings`] of it would be, without building
/// that copy: strings longer than [`HISTORY_ARG_CHARS`] characters cut.
struct Clipped<'a>(&'a Value);

impl serde::Serialize for Clipped<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            // At most that many bytes is at most that many characters.
            Value::String(s) if s.len() <= HISTORY_ARG_CHARS => serializer.serialize_str(s),
            Value::String(s) => serializer.serialize_str(&clip(s, HISTORY_ARG_CHARS)),
            Value::Array(items) => serializer.collect_seq(items.iter().map(Clipped)),
            Value::Object(map) => {
                serializer.collect_map(map.iter().map(|(key, item)| (key, Clipped(item))))
            }
            other => other.serialize(serializer),
        }
    }
}
