//! One `Limits` value bounds every run of the agent loop.
//!
//! Defaults come from [`Limits::default`]; [`LimitsOverlay`] is the one
//! way to change them, applied in one order: defaults < command line <
//! role < task. Every guard in
//! `agent::guard` reads its bound from here, so there is exactly one place to
//! look when asking "why did the agent stop?".

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::agent::steer::Steers;

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
    /// Tell the model to cite the round of any result it relies on, and warn
    /// it in the next prompt when the evidence check flags a round (flags
    /// are journalled either way). See `agent::evidence`.
    pub evidence_warnings: bool,
    /// Review the progress with one extra model call every this many rounds
    /// and after the same tool failed twice in a row; 0 turns reflection
    /// off. See `agent::reflect`.
    pub reflect_every: u32,
    /// Which of the loop's steers are on (see `agent::steer`): each
    /// steer's default with the switches set here on top.
    pub steer: Steers,
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
            // Off by default: on the 1.5B model it made runs longer and no
            // more successful (EVALS.md, section 3). Evidence flags are
            // journalled and counted either way.
            evidence_warnings: false,
            reflect_every: 0,
            // Each steer's own default (agent::steer, and EVALS.md).
            steer: Steers::defaults(),
        }
    }
}

/// Changes to [`Limits`], every field optional: what a role file, a suite
/// task or its `[defaults]`, or an API caller sets. `None` (and a switch
/// not set) keeps the value below; [`LimitsOverlay::apply`] applies it.
/// The order is always: defaults < command line < role < task.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsOverlay {
    /// Round budget of one loop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rounds: Option<u32>,
    /// Wall-clock budget of one loop, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// `max_tokens` of each decision request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Rounds between reflections (0: none); see `agent::reflect`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reflect_every: Option<u32>,
    /// How past rounds are laid out in the prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<HistoryLayout>,
    /// Whether the model is asked to cite rounds and warned on flags.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence_warnings: Option<bool>,
    /// Steers switched on or off (see `agent::steer`).
    #[serde(default, skip_serializing_if = "Steers::is_empty")]
    pub steer: Steers,
}

/// A field of a [`LimitsOverlay`] that is out of range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {problem}")]
pub struct OverlayError {
    /// The field, as written in files (`max_rounds`, `steer.read_chek`).
    pub field: String,
    /// What is wrong with it.
    pub problem: String,
}

impl LimitsOverlay {
    /// `base` with what this overlay sets.
    pub fn apply(&self, base: &Limits) -> Limits {
        Limits {
            max_rounds: self.max_rounds.unwrap_or(base.max_rounds),
            timeout: self
                .timeout_secs
                .map(Duration::from_secs)
                .unwrap_or(base.timeout),
            temperature: self.temperature.unwrap_or(base.temperature),
            max_tokens: self.max_tokens.unwrap_or(base.max_tokens),
            reflect_every: self.reflect_every.unwrap_or(base.reflect_every),
            history: self.history.unwrap_or(base.history),
            evidence_warnings: self.evidence_warnings.unwrap_or(base.evidence_warnings),
            steer: base.steer.overlaid(&self.steer),
            ..base.clone()
        }
    }

    /// This overlay, then `over` on top of it (what `over` sets wins).
    pub fn then(&self, over: &LimitsOverlay) -> LimitsOverlay {
        LimitsOverlay {
            max_rounds: over.max_rounds.or(self.max_rounds),
            timeout_secs: over.timeout_secs.or(self.timeout_secs),
            temperature: over.temperature.or(self.temperature),
            max_tokens: over.max_tokens.or(self.max_tokens),
            reflect_every: over.reflect_every.or(self.reflect_every),
            history: over.history.or(self.history),
            evidence_warnings: over.evidence_warnings.or(self.evidence_warnings),
            steer: self.steer.overlaid(&over.steer),
        }
    }

    /// Whether it changes nothing.
    pub fn is_empty(&self) -> bool {
        self == &LimitsOverlay::default()
    }

    /// An error naming the first field out of range: a zero budget, a
    /// temperature outside 0–2, a switch that names no steer.
    pub fn check(&self) -> Result<(), OverlayError> {
        let bad = |field: &str, problem: String| {
            Err(OverlayError {
                field: field.into(),
                problem,
            })
        };
        if self.max_rounds == Some(0) {
            return bad("max_rounds", "must be at least 1".into());
        }
        if self.timeout_secs == Some(0) {
            return bad("timeout_secs", "must be at least 1".into());
        }
        if let Some(t) = self.temperature {
            if !(0.0..=2.0).contains(&t) {
                return bad("temperature", format!("must be between 0 and 2, got {t}"));
            }
        }
        if self.max_tokens == Some(0) {
            return bad("max_tokens", "must be at least 1".into());
        }
        if let Err(e) = self.steer.check() {
            return bad("steer", e.to_string());
        }
        Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_overlay_changes_only_what_it_sets_and_later_ones_win() {
        let base = Limits::default();
        assert_eq!(LimitsOverlay::default().apply(&base), base);
        let role = LimitsOverlay {
            max_rounds: Some(7),
            timeout_secs: Some(2),
            steer: Steers::defaults().with("read_check", false),
            ..LimitsOverlay::default()
        };
        let task = LimitsOverlay {
            max_rounds: Some(3),
            steer: Steers::defaults().with("label_check", false),
            ..LimitsOverlay::default()
        };
        let applied = role.then(&task).apply(&base);
        assert_eq!(applied.max_rounds, 3);
        assert_eq!(applied.timeout, Duration::from_secs(2));
        assert_eq!(applied.temperature, base.temperature);
        assert!(!applied.steer.is_on("read_check"));
        assert!(!applied.steer.is_on("label_check"));
        assert!(applied.steer.is_on("finish_check"));
    }

    #[test]
    fn out_of_range_fields_are_named() {
        let zero = LimitsOverlay {
            max_rounds: Some(0),
            ..LimitsOverlay::default()
        };
        assert_eq!(zero.check().unwrap_err().field, "max_rounds");
        let hot = LimitsOverlay {
            temperature: Some(9.0),
            ..LimitsOverlay::default()
        };
        assert_eq!(hot.check().unwrap_err().field, "temperature");
        let unknown: LimitsOverlay = toml::from_str("[steer]\nread_chek = false").unwrap();
        let e = unknown.check().unwrap_err();
        assert_eq!(e.field, "steer");
        assert!(e.problem.contains("read_check"), "{e}");
        assert!(toml::from_str::<LimitsOverlay>("max_round = 3").is_err());
    }

    #[test]
    fn limits_from_an_older_node_keep_their_steers_at_default() {
        let old = r#"{"max_rounds": 5, "finish_check": false}"#;
        let limits: Limits = serde_json::from_str(old).unwrap();
        assert_eq!(limits.max_rounds, 5);
        assert_eq!(limits.steer, Steers::defaults());
    }
}
