//! **Steering**: the loop's small-model helpers, as one ordered list.
//!
//! A steer watches a run and nudges it without a model call: it may end
//! the system prompt with a block, add a block to the first prompt (before
//! round 1), add a sentence to the
//! closing request of each prompt, gate a decision before it acts (go,
//! refuse it with a note, or ask the model once more), narrow the
//! actions the next decision may name, or have other answers to a round's
//! conversation drawn in place of one whose result it rejects. Each steer is one
//! file here and one line in [`ALL`]; the loop ([`super::run`]) runs the
//! list and knows no steer by name.
//!
//! The order of [`ALL`] is the order of precedence: the first steer whose
//! gate does not say [`Gate::Go`] decides, and the first closing sentence
//! that is not empty is the one shown.
//!
//! Every steer has one switch, [`Steers`], set the same way everywhere:
//! `--steer NAME=on|off` or `--no-steer NAME` on `run`, `plan`, `node`,
//! `eval` (today's `--no-finish-check` and the like stay as aliases), a
//! role's `[steer]` table, a suite's `[defaults.steer]` or a task's
//! `[task.steer]`, and the cluster wire (inside [`Limits`]). `hermes
//! steers` lists them.
//!
//! What steers need is computed once per run: the goal's input and output
//! files ([`GoalFiles`]), the journal with each tool result's data kept as
//! JSON ([`JournalEntry::data`]), and what each tool declares it does
//! ([`ToolEffect`](crate::tools::ToolEffect)). A round a steer acted on
//! carries its name in [`JournalEntry::steered_by`] (held back),
//! [`JournalEntry::reasked_by`] (asked again),
//! [`JournalEntry::prompted_by`] (its closing sentence ended the prompt) or
//! [`JournalEntry::redraw`] (answers drawn again, or drawn to vote).

pub mod answer_check;
pub mod chain_merge;
pub mod code_judge;
pub mod code_reads;
pub mod code_redraw;
pub mod code_retry;
pub mod code_vote;
pub mod compute_check;
pub mod condition_check;
pub mod decimals_check;
pub mod edit_check;
pub mod edit_offer;
pub mod finish_check;
pub mod goal_files;
pub mod goal_folders;
pub mod input_preview;
pub mod inputs_check;
pub mod instructions_file;
pub mod label_check;
pub mod observation_text;
pub mod one_executor;
pub mod owned_files;
pub mod read_check;
pub mod repeat_guidance;
mod switches;
pub mod unread_files;
pub mod worked_example;
pub mod workspace_listing;
pub mod write_offer;

use async_trait::async_trait;

pub use goal_files::GoalFiles;
pub use switches::{SteerError, Steers};

use crate::decision::Decision;
use crate::journal::JournalEntry;
use crate::tools::{ToolResult, Toolbox};

/// What a steer sees of a run.
pub struct SteerContext<'a> {
    /// The text whose file names count (the goal, or an executor's own
    /// subtask).
    pub goal: &'a str,
    /// The goal's files, as they were before round 1.
    pub files: &'a GoalFiles,
    /// The run's tools (and through them, its workspace).
    pub toolbox: &'a Toolbox,
    /// The rounds played so far.
    pub history: &'a [JournalEntry],
    /// How many recent rounds a repeated call is looked for in (the run's
    /// `Limits::repetition_window`).
    pub repetition_window: usize,
    /// The files whose whole text the first prompt showed (see
    /// [`input_preview`]): the run has seen them without a call.
    pub shown: &'a [String],
    /// The files other subtasks of the task write (see
    /// [`crate::agent::Goal::others`]); empty for a run of its own.
    pub others: &'a [crate::agent::OwnedFile],
}

/// What a steer adds after the goal in the first prompt.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Opening {
    /// The block shown (empty for none).
    pub text: String,
    /// The workspace files whose whole text the block shows.
    pub shown: Vec<String>,
}

impl From<String> for Opening {
    fn from(text: String) -> Self {
        Self {
            text,
            shown: Vec::new(),
        }
    }
}

/// Whether the steer named `steer` already answered a round of `history`
/// (its `steered_by`): how a steer that acts once per run knows it did.
pub fn acted(history: &[JournalEntry], steer: &str) -> bool {
    history
        .iter()
        .any(|e| e.steered_by.as_deref() == Some(steer))
}

/// A steer's answer to a decision before it acts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gate {
    /// Carry the decision out.
    Go,
    /// Do not carry it out: the round's observation is this note (an
    /// error), and `repeat_of` names the round it repeats, if that is why.
    Refuse {
        /// What the model reads instead of the action's result.
        note: String,
        /// The earlier round the decision repeated exactly, if any.
        repeat_of: Option<u32>,
    },
    /// Ask the model once more, with this note after its answer. A steer
    /// that would re-ask an answer already re-asked refuses it instead.
    Reask {
        /// What the model reads after its first answer.
        note: String,
        /// The only actions the second answer may name (`None`: every
        /// action), as [`Steer::narrow`] does for a next decision.
        among: Option<Vec<String>>,
    },
}

impl Gate {
    /// A refusal with `note`.
    pub fn refuse(note: impl Into<String>) -> Self {
        Self::Refuse {
            note: note.into(),
            repeat_of: None,
        }
    }

    /// A re-ask with `note`, every action open to the second answer.
    pub fn reask(note: impl Into<String>) -> Self {
        Self::Reask {
            note: note.into(),
            among: None,
        }
    }
}

/// Other answers a steer wants drawn for a round whose action it rejects
/// ([`Steer::redraw`]). The loop asks the model for `draws` answers to the
/// same conversation at once (each with its own seed, at `temperature`,
/// only `among` open), runs those the steer finds eligible in turn, and
/// keeps the first whose call succeeds; when none is kept, the round keeps
/// the model's own answer and its result.
#[derive(Debug, Clone, PartialEq)]
pub struct Redraw {
    /// How many answers to draw.
    pub draws: u32,
    /// The temperature they are drawn at.
    pub temperature: f32,
    /// The only actions a drawn answer may name.
    pub among: Vec<String>,
    /// The draws are asked with the goal said once more at the end of the
    /// conversation ([`REREAD`]), so that they read it afresh rather than
    /// as the model's own answer did.
    pub reread: bool,
}

/// A contested vote put to the model ([`Steer::judge`]): the question
/// appended to the round's prompt and the schema of the reply, whose
/// `choice` is the letter (`A`, `B`, …) of the contender that acts.
#[derive(Debug, Clone, PartialEq)]
pub struct Judging {
    /// What the round's last prompt is extended with.
    pub question: String,
    /// The reply's schema: an object with a `choice` among the letters
    /// (and whatever else the steer asks for first, such as a reason).
    pub schema: serde_json::Value,
}

impl Judging {
    /// The contender `reply` chooses (0-based) and the reason it gives
    /// (empty without one); `None` when the reply is not JSON or names no
    /// letter the schema allows.
    pub fn choice(&self, reply: &str) -> Option<(usize, String)> {
        let reply: serde_json::Value = serde_json::from_str(reply.trim()).ok()?;
        let chosen = reply["choice"].as_str()?;
        let letters = self.schema["properties"]["choice"]["enum"].as_array()?;
        let index = letters.iter().position(|l| l.as_str() == Some(chosen))?;
        let reason = reply["reason"].as_str().unwrap_or_default().to_string();
        Some((index, reason))
    }
}

/// What ends a drawn answer's conversation when its [`Redraw`] rereads the
/// goal; the goal follows.
pub const REREAD: &str = "Read the goal again before you answer, and do all of it: ";

/// One helper of the loop. Every hook has a default that does nothing, so
/// a steer implements only the ones it uses.
#[async_trait]
pub trait Steer: Send + Sync {
    /// The name used by switches, journals and `hermes steers`.
    fn name(&self) -> &'static str;
    /// One line for `hermes steers`: what it does and when.
    fn about(&self) -> &'static str;
    /// Whether it is on when nothing switches it.
    fn on_by_default(&self) -> bool {
        true
    }
    /// A block for the end of the system prompt, given the run's tools
    /// (empty for none). It must depend on `toolbox` alone: the prompt is
    /// built once and shared by every run with the same tools and limits.
    fn system(&self, _toolbox: &Toolbox) -> String {
        String::new()
    }
    /// A block shown after the goal in the first prompt, computed before
    /// round `first_round` (empty for none).
    async fn opening(&self, _cx: &SteerContext<'_>, _first_round: u32) -> Opening {
        Opening::default()
    }
    /// A sentence for the closing request of the next prompt (empty for
    /// none).
    fn closing(&self, _cx: &SteerContext<'_>) -> String {
        String::new()
    }
    /// Whether `decision` may act. `reasked` says the model was already
    /// asked again this round.
    fn gate(&self, _cx: &SteerContext<'_>, _decision: &Decision, _reasked: bool) -> Gate {
        Gate::Go
    }
    /// The only actions the next decision may name, when this steer
    /// narrows them (`None`: every action stays open). The decision schema
    /// the model is asked with then lists only these, so an engine that
    /// constrains decoding (the grammar) cannot answer anything else; a
    /// model without constraints only reads them in the schema.
    fn narrow(&self, _cx: &SteerContext<'_>) -> Option<Vec<String>> {
        None
    }
    /// The run's work as the steers read it (the goal's files, the goal
    /// read again), when this steer extends `goal`, read once before
    /// round 1 (`None`: the work is the goal's own). The model's prompt
    /// is not changed by it.
    fn work(&self, _goal: &str, _toolbox: &Toolbox) -> Option<String> {
        None
    }
    /// After `decision` acted with `result`: the other answers to draw in
    /// its place, when this steer rejects that result (`None`: it stands).
    /// The first drawn answer that [`Steer::eligible`] allows and whose
    /// call succeeds is kept.
    fn redraw(
        &self,
        _cx: &SteerContext<'_>,
        _decision: &Decision,
        _result: &ToolResult,
    ) -> Option<Redraw> {
        None
    }
    /// Before `decision` acts: the other answers to draw and put to a
    /// vote with it, when this steer wants its outcome confirmed (`None`:
    /// it acts as it is). Each answer is tried first (its call run so that
    /// nothing lasts, see [`crate::tools::session::trial`]); the outcome
    /// that wins the count (more drawn answers give it than give the
    /// model's; a tie of two or more goes to the draws) has its first
    /// answer act in the model's place.
    fn vote(&self, _cx: &SteerContext<'_>, _decision: &Decision) -> Option<Redraw> {
        None
    }
    /// When a vote's answers disagree: the question that lets the model
    /// choose among `contenders` (one answer per outcome, each with its
    /// outcome as the vote compares it; the count's choice first), or
    /// `None` to leave the choice to the count.
    fn judge(&self, _cx: &SteerContext<'_>, _contenders: &[(&Decision, &str)]) -> Option<Judging> {
        None
    }
    /// Whether `candidate`, an answer drawn for this steer's [`Redraw`] of
    /// `decision`, may run in its place; asked of every drawn answer
    /// before any of them runs (so the workspace is as `decision` left it).
    fn eligible(
        &self,
        _cx: &SteerContext<'_>,
        _decision: &Decision,
        _candidate: &Decision,
    ) -> bool {
        true
    }
}

/// Every steer, in order of precedence. Adding a steer: one file in this
/// folder, one line here.
pub static ALL: &[&dyn Steer] = &[
    &instructions_file::InstructionsFile,
    &workspace_listing::WorkspaceListing,
    &input_preview::InputPreview,
    &code_reads::CodeReads,
    &owned_files::OwnedFiles,
    &chain_merge::ChainMerge,
    &one_executor::OneExecutor,
    &code_retry::CodeRetry,
    &code_redraw::CodeRedraw,
    &code_vote::CodeVote,
    &code_judge::CodeJudge,
    &finish_check::FinishCheck,
    &edit_check::EditCheck,
    &answer_check::AnswerCheck,
    &decimals_check::DecimalsCheck,
    &write_offer::WriteOffer,
    &edit_offer::EditOffer,
    &repeat_guidance::RepeatGuidance,
    &observation_text::ObservationText,
    &read_check::ReadCheck,
    &label_check::LabelCheck,
    &condition_check::ConditionCheck,
    &inputs_check::InputsCheck,
    &compute_check::ComputeCheck,
    &worked_example::WorkedExample,
];

/// The steer named `name`.
pub fn find(name: &str) -> Option<&'static dyn Steer> {
    ALL.iter().copied().find(|s| s.name() == name)
}

/// The steers `steers` turns on, in order.
pub fn active(steers: &Steers) -> impl Iterator<Item = &'static dyn Steer> + '_ {
    ALL.iter().copied().filter(|s| steers.is_on_steer(*s))
}

/// The first gate among the steers on that is not [`Gate::Go`], with the
/// steer's name.
pub fn gate(
    steers: &Steers,
    cx: &SteerContext<'_>,
    decision: &Decision,
    reasked: bool,
) -> Option<(&'static str, Gate)> {
    active(steers).find_map(|steer| match steer.gate(cx, decision, reasked) {
        Gate::Go => None,
        Gate::Reask { note, .. } if reasked => Some((steer.name(), Gate::refuse(note))),
        gate => Some((steer.name(), gate)),
    })
}

/// Only the tool that runs code, for the decision right after a round
/// that the steer named `steer` answered with its note (`None` otherwise,
/// or without such a tool): how a check that asks for code makes a small
/// model write it.
pub fn code_after_note(cx: &SteerContext<'_>, steer: &str) -> Option<Vec<String>> {
    let last = cx.history.last()?;
    if last.steered_by.as_deref() != Some(steer) {
        return None;
    }
    let runs_code = cx.toolbox.first_with(crate::tools::ToolEffect::RunsCode)?;
    Some(vec![runs_code.to_string()])
}

/// How many rounds of this run the steer named `steer` has had drawn
/// again or put to a vote (its [`JournalEntry::redraw`] records): what
/// bounds those steers per run.
pub fn redrawn_rounds(cx: &SteerContext<'_>, steer: &str) -> usize {
    cx.history
        .iter()
        .filter(|e| e.redraw.as_ref().is_some_and(|r| r.by == steer))
        .count()
}

/// File names as the steers' notes write them: each in backticks, joined
/// by commas (`` `a.txt`, `b.txt` ``).
pub fn quoted_names(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The first steer on that rejects `result` of `decision`, with the
/// answers it wants drawn in its place.
pub fn redraw(
    steers: &Steers,
    cx: &SteerContext<'_>,
    decision: &Decision,
    result: &ToolResult,
) -> Option<(&'static dyn Steer, Redraw)> {
    active(steers).find_map(|steer| Some((steer, steer.redraw(cx, decision, result)?)))
}

/// The first steer on that wants `decision` put to a vote, with the
/// answers to draw for it.
pub fn vote(
    steers: &Steers,
    cx: &SteerContext<'_>,
    decision: &Decision,
) -> Option<(&'static dyn Steer, Redraw)> {
    active(steers).find_map(|steer| Some((steer, steer.vote(cx, decision)?)))
}

/// The question of the first steer on that judges a contested vote among
/// `contenders`.
pub fn judge(
    steers: &Steers,
    cx: &SteerContext<'_>,
    contenders: &[(&Decision, &str)],
) -> Option<(&'static dyn Steer, Judging)> {
    active(steers).find_map(|steer| Some((steer, steer.judge(cx, contenders)?)))
}

/// The actions the first steer on that narrows the next decision allows.
pub fn narrowed(steers: &Steers, cx: &SteerContext<'_>) -> Option<Vec<String>> {
    active(steers).find_map(|steer| steer.narrow(cx))
}

/// The work as the first steer on that extends `goal` gives it (`None`:
/// the goal's own).
pub fn work(steers: &Steers, goal: &str, toolbox: &Toolbox) -> Option<String> {
    active(steers).find_map(|steer| steer.work(goal, toolbox))
}

/// The first closing sentence among the steers on that is not empty, with
/// the name of the steer that wrote it (`None` when no steer has one).
pub fn closing(steers: &Steers, cx: &SteerContext<'_>) -> Option<(&'static str, String)> {
    active(steers)
        .map(|steer| (steer.name(), steer.closing(cx)))
        .find(|(_, text)| !text.is_empty())
}

/// The opening blocks of the steers on, joined by blank lines, and the
/// files they showed.
pub async fn opening(steers: &Steers, cx: &SteerContext<'_>, first_round: u32) -> Opening {
    let mut blocks = Vec::new();
    let mut shown = Vec::new();
    for steer in active(steers) {
        let block = steer.opening(cx, first_round).await;
        if !block.text.is_empty() {
            blocks.push(block.text);
        }
        shown.extend(block.shown);
    }
    Opening {
        text: blocks.join("\n\n"),
        shown,
    }
}

/// A steer's view of a run for unit tests: `goal`, its `files`, the
/// `toolbox` and the rounds of `history`, nothing shown, a window of 5.
#[cfg(test)]
pub(crate) fn test_context<'a>(
    goal: &'a str,
    files: &'a GoalFiles,
    toolbox: &'a Toolbox,
    history: &'a [JournalEntry],
) -> SteerContext<'a> {
    SteerContext {
        goal,
        files,
        toolbox,
        history,
        repetition_window: 5,
        shown: &[],
        others: &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_each_has_a_line() {
        let mut names: Vec<&str> = ALL.iter().map(|s| s.name()).collect();
        assert!(ALL.iter().all(|s| !s.about().is_empty()));
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ALL.len());
        assert!(find("finish_check").is_some());
        assert!(find("nonesuch").is_none());
    }
}
