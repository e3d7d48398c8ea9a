//! One `Limits` value bounds every run of the agent loop.
//!
//! Defaults come from [`Limits::default`]; a role file may override some of
//! them, and a single run (CLI flags, API) overrides again. Every guard in
//! `agent::guard` reads its bound from here, so there is exactly one place to
//! look when asking "why did the agent stop?".

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Bounds and sampling settings for one agent run. Serialized (with the
/// timeout in milliseconds) when a subtask travels to another node; a
/// field missing from the other side takes its default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Limits {
    /// Most decision rounds before the run is stopped (`max_rounds`).
    pub max_rounds: u32,
    /// Wall-clock budget for the whole run, enforced while waiting on the
    /// model or a tool.
    #[serde(with = "millis")]
    pub timeout: Duration,
    /// How many recent rounds the repetition guard looks at.
    pub repetition_window: usize,
    /// How many identical actions inside the window stop the run.
    pub repetition_threshold: usize,
    /// Sampling temperature sent to the model.
    pub temperature: f32,
    /// `max_tokens` for each decision request.
    pub max_tokens: u32,
    /// Observation budget in characters before truncation.
    pub observation_chars: usize,
    /// Observation budget in lines before truncation.
    pub observation_lines: usize,
    /// How many most recent rounds are shown to the model whole; older ones
    /// are shown as one-line summaries.
    pub full_rounds: usize,
    /// How past rounds are laid out in the prompt (see
    /// `agent::perceive::messages`).
    pub history: HistoryLayout,
    /// Answer a decision that repeats a recent call exactly: ask the model
    /// once more with a note on what that call returned, and refuse the
    /// call (without running it) if the second answer repeats it too. See
    /// `agent::repeat`.
    pub repeat_guidance: bool,
    /// Tell the model to cite the round of any result it relies on, and warn
    /// it in the next prompt when the evidence check flags a round (flags
    /// are journalled either way). See `agent::evidence`.
    pub evidence_warnings: bool,
    /// Review the progress with one extra model call every this many rounds
    /// and after the same tool failed twice in a row; 0 turns reflection
    /// off. See `agent::reflect`.
    pub reflect_every: u32,
    /// Show the files of the workspace after the goal in the first prompt,
    /// listed by the loop before round 1 (see `agent::survey`).
    pub workspace_listing: bool,
    /// Answer the first `finish` of a run with a note instead of ending it
    /// while a file the goal names is missing from the workspace (see
    /// `agent::finish_check`).
    pub finish_check: bool,
    /// Answer the first `write_file` of a run with a note instead of
    /// carrying it out while no call has read the files the goal names as
    /// its inputs (see `agent::read_check`).
    pub read_check: bool,
    /// When a `run_code` printed a value, or the finish check refused a
    /// `finish` whose result is a value, and one file the goal names is
    /// missing, spell out in the next request the `write_file` reply that
    /// saves the value there (see `agent::write_offer`).
    pub write_offer: bool,
    /// Answer the first `write_file` of a labelled value (`code: X`) into a
    /// file the goal names, where the goal asks for just the value, with
    /// the write of the value alone spelled out (see `agent::label_check`).
    pub label_check: bool,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_rounds: 20,
            timeout: Duration::from_secs(300),
            repetition_window: 5,
            repetition_threshold: 3,
            temperature: 0.3,
            max_tokens: 1024,
            observation_chars: 2000,
            observation_lines: 50,
            full_rounds: 6,
            // The log: on the 1.5B model replayed decisions became a
            // template the model copied verbatim (EVALS.md, section 9).
            history: HistoryLayout::Log,
            // Off by default: on the 1.5B model they made runs longer and
            // no more successful (EVALS.md, section 3). Evidence flags are
            // journalled and counted either way.
            repeat_guidance: false,
            evidence_warnings: false,
            reflect_every: 0,
            // On: see EVALS.md, section 12.
            workspace_listing: true,
            finish_check: true,
            // On: with the write offer, the runs it stops from writing a
            // guess go on to read, compute and write the value (EVALS.md,
            // section 14; alone, in section 13, it turned none into a pass).
            read_check: true,
            // On: offered only for values, the model copies the reply and
            // writes the file (EVALS.md, section 14; offered for any answer,
            // in section 13, it copied sentences too).
            write_offer: true,
            // On: see EVALS.md, section 15.
            label_check: true,
        }
    }
}

/// How the prompt shows the rounds already played.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HistoryLayout {
    /// One user turn holds the goal and a log of the rounds: "Round N: you
    /// called TOOL ARGS" and its observation. No past decision is replayed
    /// as an assistant turn, so there is no reply for the model to copy.
    #[default]
    Log,
    /// Each round replayed as a pair of turns: the decision as the
    /// assistant's JSON, then the observation as the user's.
    Turns,
}

impl std::str::FromStr for HistoryLayout {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "log" => Ok(Self::Log),
            "turns" => Ok(Self::Turns),
            other => Err(format!(
                "unknown history layout `{other}` (expected log or turns)"
            )),
        }
    }
}

/// `Duration` as whole milliseconds on the wire.
mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_millis().min(u64::MAX as u128) as u64)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_millis)
    }
}
