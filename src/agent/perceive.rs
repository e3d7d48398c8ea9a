//! **Perceive**: build what the model sees before it decides.
//!
//! The system prompt says who the agent is, its limits, every tool with its
//! parameters (rendered from the same specs that validate calls), how to
//! finish, and what to do on errors. The conversation then restates the
//! goal, gives older rounds as one-line summaries built without a model
//! call, replays the last few rounds whole (decision, then observation), and
//! ends by restating the goal and the remaining budget. The prompt therefore
//! stays bounded however long the run is. Text goes in as it is: non-ASCII
//! is never `\u`-escaped, so Chinese goals and files stay readable.

use std::fmt::Write as _;
use std::time::Duration;

use serde_json::{json, Value};

use crate::decision::EXPECTED_SHAPE;
use crate::journal::{canonical_json, JournalEntry, UNPARSED};
use crate::limits::Limits;
use crate::llm::ChatMessage;
use crate::text::{clip, one_line};
use crate::tools::Toolbox;

/// Who the agent is when no role says otherwise.
pub const DEFAULT_IDENTITY: &str =
    "You are Hermes, an autonomous agent that completes the user's goal step by step by calling tools.";

/// Longest string value of a past action's args replayed in the prompt.
const HISTORY_ARG_CHARS: usize = 600;

/// The system prompt: identity, reply format, tools, finishing, errors, limits.
pub fn system_prompt(identity: &str, toolbox: &Toolbox, limits: &Limits) -> String {
    let mut p = String::new();
    let _ = writeln!(p, "{}\n", identity.trim());
    let _ = writeln!(
        p,
        "Reply with exactly one JSON object and nothing else, in this shape:\n{EXPECTED_SHAPE}\n"
    );
    p.push_str("Tools (use only these names and parameters):\n");
    p.push_str(&toolbox.render());
    p.push_str(
                "- finish: End the run and give the final answer. Call it only after the goal is done.\n    result (string, required): the final answer itself, written out in full (not a placeholder); if the goal cannot be reached, a progress report of what was done and what is missing\n\n",
    );
    p.push_str("How to work:\n");
    p.push_str("- One action per reply. After it you receive an observation: {\"status\": \"ok\"|\"error\", \"data\": ..., \"error\": ...}.\n");
    p.push_str("- Base your answer on observations, not guesses. Read what you need before you write or answer.\n");
    p.push_str("- On an error, read the message: fix the arguments and retry, or change approach. Never repeat an identical call; the same call 3 times in 5 rounds stops the run.\n");
    p.push_str("- When the goal is reached, call finish with the answer in args.result. If you cannot reach it, call finish with a progress report.\n");
    // No bare character counts here: small models read "2000 characters"
    // as a length the answer must reach.
    let _ = write!(
        p,
        "- Limits: at most {} rounds and {} seconds in total. A long observation is cut, and a note at its end says what was left out.",
        limits.max_rounds,
        limits.timeout.as_secs(),
    );
    p
}

/// The conversation for the next decision.
pub fn messages(
    system: &str,
    goal: &str,
    history: &[JournalEntry],
    limits: &Limits,
    time_left: Duration,
) -> Vec<ChatMessage> {
    let split = history.len().saturating_sub(limits.full_rounds);
    let (older, recent) = history.split_at(split);
    let mut opening = format!("Goal: {goal}");
    if !older.is_empty() {
        opening.push_str("\n\nEarlier rounds (summarised):\n");
        for entry in older {
            let _ = writeln!(opening, "{}", summary_line(entry));
        }
    }
    let mut out = vec![ChatMessage::system(system)];
    let next_round = history.len() + 1;
    let mut next = format!(
        "Round {next_round} of {}; {}s left.",
        limits.max_rounds,
        time_left.as_secs()
    );
    if let Some(last) = history.last().filter(|e| !e.is_error()) {
        // Small models tend to redo the step that just worked; say it is done.
        let _ = write!(
            next,
            " Round {} ({}) succeeded and its result is in the observation above: do not repeat it; use that result for the next step toward the goal, or finish if the goal is reached.",
            last.round, last.action
        );
    }
    next.push_str(" Reply with one JSON object.");
    if recent.is_empty() {
        out.push(ChatMessage::user(format!("{opening}\n\n{next}")));
        return out;
    }
    out.push(ChatMessage::user(opening));
    for (i, entry) in recent.iter().enumerate() {
        out.push(ChatMessage::assistant(replayed_reply(entry)));
        let observation = format!("Observation (round {}): {}", entry.round, entry.observation);
        if i + 1 == recent.len() {
            // The latest turn opens with the goal, then the news, then what to do.
            out.push(ChatMessage::user(format!(
                "Goal: {goal}\n\n{observation}\n\n{next}"
            )));
        } else {
            out.push(ChatMessage::user(observation));
        }
    }
    out
}

/// One line for an older round: number, action, args digest, status.
pub fn summary_line(entry: &JournalEntry) -> String {
    let args = clip(&one_line(&canonical_json(&entry.args)), 80);
    let mut line = format!(
        "- round {}: {} {} → {}",
        entry.round,
        entry.action,
        args,
        entry.status.as_str()
    );
    if entry.is_error() {
        if let Some(error) = serde_json::from_str::<Value>(&entry.observation)
            .ok()
            .and_then(|v| v["error"].as_str().map(String::from))
        {
            let _ = write!(line, " ({})", clip(&one_line(&error), 80));
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
    json!({
        "thought": clip(&entry.thought, 500),
        "action": {"name": entry.action, "args": clip_strings(&entry.args)},
    })
    .to_string()
}

/// Args with long string values cut, so replayed history stays small.
fn clip_strings(value: &Value) -> Value {
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
