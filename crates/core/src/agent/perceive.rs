//! **Perceive**: build what the model sees before it decides.
//!
//! The system prompt says who the agent is, its limits, every tool with its
//! parameters (rendered from the same specs that validate calls), how to
//! finish, and what to do on errors. The conversation then states the goal,
//! gives older rounds as one-line summaries built without a model call,
//! shows the last few rounds whole (by default as a log of the calls made
//! and their observations, see [`HistoryLayout`]), and only ever grows at
//! its end between summary blocks, so a model that keeps its state re-reads
//! only the newest round.
//! The prompt stays bounded however long the run is. Text goes in as it is: non-ASCII
//! is never `\u`-escaped, so Chinese goals and files stay readable.

use std::fmt::Write as _;
use std::sync::Arc;

use super::evidence;
use super::reflect::{self, Reflection};
use super::steer::{self, observation_text};
use crate::decision::EXPECTED_SHAPE;
use crate::journal::{JournalEntry, UNPARSED};
use crate::limits::{HistoryLayout, Limits};
use crate::llm::ChatMessage;
use crate::tools::Toolbox;

mod kept_turn;
mod rendered;
pub use kept_turn::KeptTurn;
pub use rendered::{
    counted_rounds, decision_json, summarised_rounds, summary_line, RenderedRound, RenderedRounds,
};

/// Who the agent is when no role says otherwise.
pub const DEFAULT_IDENTITY: &str =
    "You are Hermes, an autonomous agent that completes the user's goal step by step by calling tools.";

/// The system prompt of an agent with `identity`, `toolbox` and `limits`,
/// built once and shared by every run with the same three (a role's
/// executors): see [`system_prompt`].
pub fn shared_system_prompt(identity: &str, toolbox: &Toolbox, limits: &Limits) -> Arc<str> {
    // Everything `system_prompt` reads besides the toolbox.
    let key = format!(
        "{identity}\u{0}{}\u{0}{}\u{0}{}\u{0}{:?}",
        limits.max_rounds,
        limits.timeout.as_secs(),
        limits.evidence_warnings,
        system_steers(limits)
            .iter()
            .map(|s| s.name())
            .collect::<Vec<_>>()
    );
    toolbox
        .memo()
        .prompt(&key, || system_prompt(identity, toolbox, limits))
}

/// The system prompt: identity, reply format, tools, finishing, errors, limits.
/// (What it reads of `identity` and `limits` must be in the key of
/// [`shared_system_prompt`].)
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
    if toolbox.names().contains(&"run_code") {
        p.push_str("- Count, sum, sort and compute with run_code and print the result; do not do arithmetic in your head.\n");
    }
    p.push_str(
        "- When the goal asks for a value (a number, a name) in a file, write just that value.\n",
    );
    if limits.evidence_warnings {
        p.push_str("- When you rely on an earlier result, cite its round (for example \"round 2 shows ...\").\n");
    }
    p.push_str("- When the goal is reached, call finish with the answer in args.result. If you cannot reach it, call finish with a progress report.\n");
    // No bare character counts here: small models read "2000 characters"
    // as a length the answer must reach.
    let _ = write!(
        p,
        "- Limits: at most {} rounds and {} seconds in total. A long observation is cut, and a note at its end says what was left out.",
        limits.max_rounds,
        limits.timeout.as_secs(),
    );
    for steer in system_steers(limits) {
        let block = steer.system(toolbox);
        if !block.is_empty() {
            p.push_str("\n\n");
            p.push_str(block.trim_end());
        }
    }
    p
}

/// The steers on for `limits`, in order: any of them may end the system
/// prompt with a block (most add none), so their names key the shared
/// prompt.
fn system_steers(limits: &Limits) -> Vec<&'static dyn steer::Steer> {
    steer::active(&limits.steer).collect()
}

/// The conversation for the next decision.
///
/// It only ever grows at its end between two rounds, so that a model that
/// keeps its state (the in-process one, a server with a prefix cache)
/// re-reads only the newest decision and observation: every turn's text is
/// a function of the journal alone (no clock readings), and older rounds
/// move into the summary in blocks of half the window rather than one by
/// one, so the opening changes once every few rounds instead of every round.
/// `notes` (the recalled notes of earlier tasks, see
/// [`notes_block`](super::memory::notes_block); empty for none) open the
/// first user turn, before the goal. (A run also shows its workspace after
/// the goal: [`messages_rendered`] with an [`Opening`].)
pub fn messages(
    system: &str,
    notes: &str,
    goal: &str,
    history: &[JournalEntry],
    reflections: &[Reflection],
    limits: &Limits,
) -> Vec<ChatMessage> {
    let mut rendered = RenderedRounds::default();
    rendered.sync(history, limits);
    let opening = Opening {
        notes,
        goal,
        workspace: "",
    };
    messages_rendered(PromptParts {
        system,
        opening,
        history,
        rendered: &rendered,
        reflections,
        limits,
        written: "",
    })
}

/// What opens the first user turn, fixed for the whole run: the recalled
/// notes of earlier tasks (before the goal), the goal, and what the
/// workspace held before the first round (after it; see
/// [`survey`](super::survey)). Either block may be empty.
#[derive(Debug, Clone, Copy, Default)]
pub struct Opening<'a> {
    /// The notes block, ending in a blank line, or empty.
    pub notes: &'a str,
    /// The goal as the user gave it.
    pub goal: &'a str,
    /// The workspace block, or empty.
    pub workspace: &'a str,
}

/// Everything one round's conversation is written from: the system
/// prompt, the run's [`Opening`], the journal so far with its rounds
/// already rendered (`rendered`'s rounds are `history`'s), the
/// reflections, the run's limits, and `written`: when not empty, what the
/// closing request says after the last round, in place of the usual "do
/// not repeat it" after a success (the run's output files are all there,
/// see [`finish_check::written_note`](super::steer::finish_check::written_note);
/// or a value to write, see
/// [`write_offer::offer`](super::steer::write_offer::offer)).
#[derive(Clone, Copy)]
pub struct PromptParts<'a> {
    /// The system prompt.
    pub system: &'a str,
    /// What opens the first user turn.
    pub opening: Opening<'a>,
    /// The journal so far.
    pub history: &'a [JournalEntry],
    /// `history`'s rounds, rendered.
    pub rendered: &'a RenderedRounds,
    /// Reflections kept so far.
    pub reflections: &'a [Reflection],
    /// The run's limits (window, layout, steers).
    pub limits: &'a Limits,
    /// What the closing request says after the last round, or empty.
    pub written: &'a str,
}

/// [`messages`] from its [`PromptParts`], with the rounds already rendered.
pub fn messages_rendered(parts: PromptParts<'_>) -> Vec<ChatMessage> {
    messages_and_body(parts).0
}

/// [`messages_rendered`], and in the log layout the bytes of the user turn
/// before its closing request (what [`KeptTurn`] keeps of it).
fn messages_and_body(parts: PromptParts<'_>) -> (Vec<ChatMessage>, Option<usize>) {
    let PromptParts {
        system,
        opening: opening_text,
        history,
        rendered,
        reflections,
        limits,
        written,
    } = parts;
    let reflected = |round: u32| {
        reflections
            .iter()
            .rev()
            .find(|r| r.round == round)
            .map(|r| format!("{}\n\n", reflect::note(r)))
    };
    let split = summarised_rounds(history.len(), limits.full_rounds);
    let (older, recent) = history.split_at(split);
    let (older_text, recent_text) = rendered.rounds().split_at(split);
    let counted = counted_rounds(older.len(), limits.full_rounds);
    let counted_line = (counted > 0).then(|| rendered.counted_line(history, counted));
    let summaries: Vec<&str> = older_text[counted..]
        .iter()
        .zip(&older[counted..])
        .map(|(text, entry)| text.summary(entry))
        .collect();
    let Opening {
        notes,
        goal,
        workspace,
    } = opening_text;
    // Room for all of it at once: the text is rebuilt every round, and
    // growing it by doubling copied it several times over.
    let rendered_len: usize = summaries.iter().map(|t| t.len() + 1).sum::<usize>()
        + counted_line.as_ref().map_or(0, |line| line.len() + 1)
        + recent_text.iter().map(|t| t.whole.len() + 2).sum::<usize>();
    let mut opening = String::with_capacity(
        notes.len() + goal.len() + workspace.len() + written.len() + rendered_len + 1024,
    );
    opening.push_str(notes);
    opening.push_str("Goal: ");
    opening.push_str(goal);
    if !workspace.is_empty() {
        opening.push_str("\n\n");
        opening.push_str(workspace);
    }
    if !older.is_empty() {
        opening.push_str("\n\nEarlier rounds (summarised):\n");
        if let Some(line) = &counted_line {
            opening.push_str(line);
            opening.push('\n');
        }
        for summary in &summaries {
            opening.push_str(summary);
            opening.push('\n');
        }
    }
    opening.push_str("\n\n");
    if let Some(note) = older.last().and_then(|e| reflected(e.round)) {
        opening.push_str(&note);
    }
    match limits.history {
        HistoryLayout::Log => {
            // One turn: the opening, then each recent round as a log block,
            // then what to do. It grows at its end like the turns do.
            for (entry, text) in recent.iter().zip(recent_text) {
                opening.push_str(&text.whole);
                opening.push_str("\n\n");
                if let Some(note) = reflected(entry.round) {
                    opening.push_str(&note);
                }
            }
            let body = opening.len();
            next_step(&mut opening, history.last(), limits, written);
            (
                vec![ChatMessage::system(system), ChatMessage::user(opening)],
                Some(body),
            )
        }
        HistoryLayout::Turns => {
            next_step(&mut opening, older.last(), limits, "");
            let mut out = vec![ChatMessage::system(system), ChatMessage::user(opening)];
            for (i, (entry, text)) in recent.iter().zip(recent_text).enumerate() {
                let written = if i + 1 == recent.len() { written } else { "" };
                out.push(ChatMessage::assistant(text.whole.clone()));
                // The goal first, then the news, then what to do: the model
                // reads the success note last (with the goal last, small
                // models redo it).
                let observation = observation_text::for_prompt(
                    limits.steer.is_on(observation_text::NAME),
                    &entry.observation,
                );
                let mut turn = format!(
                    "Goal: {goal}\n\nObservation (round {}): {}\n\n{}",
                    entry.round,
                    observation,
                    reflected(entry.round).unwrap_or_default(),
                );
                next_step(&mut turn, Some(entry), limits, written);
                out.push(ChatMessage::user(turn));
            }
            (out, None)
        }
    }
}

/// What the model is asked after `previous` (none: the first round),
/// written at the end of `out`; `written` (may be empty) replaces the usual
/// advice after a success, and follows the round number after a failed
/// round.
fn next_step(out: &mut String, previous: Option<&JournalEntry>, limits: &Limits, written: &str) {
    let round = previous.map_or(1, |e| e.round + 1);
    let _ = write!(out, "Round {round} of {}.", limits.max_rounds);
    if previous.is_some_and(|e| e.is_error()) && !written.is_empty() {
        out.push(' ');
        out.push_str(written);
    }
    if let Some(last) = previous.filter(|e| !e.is_error() && e.action != UNPARSED) {
        // Small models tend to redo the step that just worked; say it is done.
        let _ = write!(out, " Round {} ({}) succeeded", last.round, last.action);
        if written.is_empty() {
            out.push_str(" and its result is in the observation above: do not repeat it; use that result for the next step toward the goal, or finish if the goal is reached.");
        } else {
            out.push_str(". ");
            out.push_str(written);
        }
    }
    let flagged = previous.filter(|_| limits.evidence_warnings).and_then(|e| {
        let flag = e.evidence.as_deref()?;
        Some((e.round, flag.strip_prefix("flagged: ").unwrap_or(flag)))
    });
    if let Some((round, flag)) = flagged {
        out.push(' ');
        out.push_str(&evidence::warning(round, flag));
    }
    out.push_str(" Reply with one JSON object.");
}

#[cfg(test)]
mod tests;
