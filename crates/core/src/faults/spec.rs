//! What `--faults` says: which kinds of fault to inject, and how often.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// One kind of fault the runtime can inject. The names are the ones
/// `--faults` takes and journals show (`"injected": "tool_error"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum FaultKind {
    /// The model's reply is replaced by prose that holds no JSON.
    #[serde(rename = "llm_non_json")]
    LlmNonJson,
    /// The model's reply is cut in the middle.
    #[serde(rename = "llm_truncated")]
    LlmTruncated,
    /// The model call hangs past its request timeout.
    #[serde(rename = "llm_timeout")]
    LlmTimeout,
    /// The model server answers HTTP 500.
    #[serde(rename = "llm_http_500")]
    LlmHttp500,
    /// The tool returns an error envelope without running.
    #[serde(rename = "tool_error")]
    ToolError,
    /// The tool hangs past its timeout.
    #[serde(rename = "tool_timeout")]
    ToolTimeout,
    /// The tool runs, then its data is replaced by 5,000 characters of noise.
    #[serde(rename = "tool_garbage")]
    ToolGarbage,
    /// Plan mode: the executor actor panics mid-loop.
    #[serde(rename = "executor_panic")]
    ExecutorPanic,
}

impl FaultKind {
    /// Every kind, in the order reports list them.
    pub const ALL: [FaultKind; 8] = [
        FaultKind::LlmNonJson,
        FaultKind::LlmTruncated,
        FaultKind::LlmTimeout,
        FaultKind::LlmHttp500,
        FaultKind::ToolError,
        FaultKind::ToolTimeout,
        FaultKind::ToolGarbage,
        FaultKind::ExecutorPanic,
    ];

    /// The name used by `--faults`, journals and reports (`"llm_http_500"`).
    pub fn as_str(self) -> &'static str {
        match self {
            FaultKind::LlmNonJson => "llm_non_json",
            FaultKind::LlmTruncated => "llm_truncated",
            FaultKind::LlmTimeout => "llm_timeout",
            FaultKind::LlmHttp500 => "llm_http_500",
            FaultKind::ToolError => "tool_error",
            FaultKind::ToolTimeout => "tool_timeout",
            FaultKind::ToolGarbage => "tool_garbage",
            FaultKind::ExecutorPanic => "executor_panic",
        }
    }

    /// Whether the fault is injected at the model boundary ([`super::FaultyLlm`]).
    pub fn is_llm(self) -> bool {
        matches!(
            self,
            FaultKind::LlmNonJson
                | FaultKind::LlmTruncated
                | FaultKind::LlmTimeout
                | FaultKind::LlmHttp500
        )
    }

    /// Whether the fault is injected around tools ([`super::FaultyTool`]).
    pub fn is_tool(self) -> bool {
        matches!(
            self,
            FaultKind::ToolError | FaultKind::ToolTimeout | FaultKind::ToolGarbage
        )
    }

    /// All names, comma-separated, for error messages.
    fn valid_names() -> String {
        FaultKind::ALL.map(FaultKind::as_str).join(", ")
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for FaultKind {
    type Err = FaultSpecError;

    /// Reads a kind by its exact name; an unknown name lists the valid ones.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        FaultKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| FaultSpecError::UnknownKind {
                pair: s.to_string(),
                kind: s.to_string(),
                valid: FaultKind::valid_names(),
            })
    }
}

/// Why a `--faults` value could not be read. Every variant names the pair
/// at fault, as the user wrote it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FaultSpecError {
    /// A pair between two commas (or at either end) is empty.
    #[error("--faults: empty pair at position {position} in `{spec}` (write kind=rate pairs separated by commas)")]
    EmptyPair {
        /// The whole value.
        spec: String,
        /// 1-based position of the empty pair.
        position: usize,
    },
    /// A pair has no `=`.
    #[error("--faults: `{pair}` is not a kind=rate pair (for example tool_error=0.2)")]
    MissingRate {
        /// The pair as written.
        pair: String,
    },
    /// The kind is not one Hermes can inject.
    #[error("--faults: unknown fault kind `{kind}` in `{pair}`; valid kinds: {valid}")]
    UnknownKind {
        /// The pair as written.
        pair: String,
        /// The unknown name.
        kind: String,
        /// Every valid name, comma-separated.
        valid: String,
    },
    /// The rate is not a number.
    #[error(
        "--faults: rate `{rate}` in `{pair}` is not a number (write a probability between 0 and 1)"
    )]
    BadRate {
        /// The pair as written.
        pair: String,
        /// The rate as written.
        rate: String,
    },
    /// The rate is a number outside `[0, 1]` (or NaN).
    #[error("--faults: rate {rate} in `{pair}` is outside [0, 1]")]
    RateOutOfRange {
        /// The pair as written.
        pair: String,
        /// The rate read.
        rate: f64,
    },
    /// The same kind appears twice.
    #[error("--faults: `{kind}` is given twice (second time in `{pair}`)")]
    Duplicate {
        /// The second pair naming the kind.
        pair: String,
        /// The repeated kind.
        kind: FaultKind,
    },
}

/// Injection rates by kind: the probability, in `[0, 1]`, that one draw of
/// that kind injects the fault. Kinds not listed are never injected.
///
/// Written as `kind=rate` pairs separated by commas
/// (`tool_error=0.2,llm_non_json=0.2`); serialised as a JSON object
/// (`{"llm_non_json": 0.2, "tool_error": 0.2}`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(
    try_from = "BTreeMap<FaultKind, f64>",
    into = "BTreeMap<FaultKind, f64>"
)]
pub struct FaultSpec {
    rates: BTreeMap<FaultKind, f64>,
}

impl FaultSpec {
    /// No faults.
    pub fn none() -> Self {
        Self::default()
    }

    /// Reads `kind=rate` pairs separated by commas. Blank input means no
    /// faults; spaces around names and rates are ignored.
    pub fn parse(spec: &str) -> Result<Self, FaultSpecError> {
        let mut rates = BTreeMap::new();
        if spec.trim().is_empty() {
            return Ok(Self { rates });
        }
        for (index, raw) in spec.split(',').enumerate() {
            let pair = raw.trim();
            if pair.is_empty() {
                return Err(FaultSpecError::EmptyPair {
                    spec: spec.to_string(),
                    position: index + 1,
                });
            }
            let Some((name, rate_text)) = pair.split_once('=') else {
                return Err(FaultSpecError::MissingRate { pair: pair.into() });
            };
            let kind = name.trim().parse::<FaultKind>().map_err(|e| match e {
                FaultSpecError::UnknownKind { kind, valid, .. } => FaultSpecError::UnknownKind {
                    pair: pair.into(),
                    kind,
                    valid,
                },
                other => other,
            })?;
            let rate_text = rate_text.trim();
            let rate: f64 = rate_text.parse().map_err(|_| FaultSpecError::BadRate {
                pair: pair.into(),
                rate: rate_text.into(),
            })?;
            if !(0.0..=1.0).contains(&rate) {
                return Err(FaultSpecError::RateOutOfRange {
                    pair: pair.into(),
                    rate,
                });
            }
            if rates.insert(kind, rate).is_some() {
                return Err(FaultSpecError::Duplicate {
                    pair: pair.into(),
                    kind,
                });
            }
        }
        Ok(Self { rates })
    }

    /// The same spec with `kind` injected at `rate` (clamped to `[0, 1]`),
    /// for tests and code that builds a spec without parsing one.
    pub fn with(mut self, kind: FaultKind, rate: f64) -> Self {
        let rate = if rate.is_nan() {
            0.0
        } else {
            rate.clamp(0.0, 1.0)
        };
        self.rates.insert(kind, rate);
        self
    }

    /// The rate of `kind` (0 when it is not listed).
    pub fn rate(&self, kind: FaultKind) -> f64 {
        self.rates.get(&kind).copied().unwrap_or(0.0)
    }

    /// Every listed kind with its rate, in [`FaultKind::ALL`] order.
    pub fn rates(&self) -> impl Iterator<Item = (FaultKind, f64)> + '_ {
        self.rates.iter().map(|(k, r)| (*k, *r))
    }

    /// Whether no kind has a rate above 0.
    pub fn is_empty(&self) -> bool {
        self.rates.values().all(|r| *r <= 0.0)
    }

    /// Whether some model-boundary kind has a rate above 0.
    pub fn has_llm_faults(&self) -> bool {
        self.rates().any(|(k, r)| k.is_llm() && r > 0.0)
    }

    /// Whether some tool kind has a rate above 0.
    pub fn has_tool_faults(&self) -> bool {
        self.rates().any(|(k, r)| k.is_tool() && r > 0.0)
    }
}

impl fmt::Display for FaultSpec {
    /// The `--faults` form, which [`FaultSpec::parse`] reads back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pairs: Vec<String> = self.rates().map(|(k, r)| format!("{k}={r}")).collect();
        f.write_str(&pairs.join(","))
    }
}

impl TryFrom<BTreeMap<FaultKind, f64>> for FaultSpec {
    type Error = FaultSpecError;

    /// Checks every rate, as [`FaultSpec::parse`] does (used when reading JSON).
    fn try_from(rates: BTreeMap<FaultKind, f64>) -> Result<Self, Self::Error> {
        match rates.iter().find(|(_, r)| !(0.0..=1.0).contains(*r)) {
            Some((kind, rate)) => Err(FaultSpecError::RateOutOfRange {
                pair: format!("{kind}={rate}"),
                rate: *rate,
            }),
            None => Ok(Self { rates }),
        }
    }
}

impl From<FaultSpec> for BTreeMap<FaultKind, f64> {
    fn from(spec: FaultSpec) -> Self {
        spec.rates
    }
}

impl FromStr for FaultSpec {
    type Err = FaultSpecError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        FaultSpec::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_names_match_serde_display_and_from_str() {
        for kind in FaultKind::ALL {
            let json = serde_json::to_value(kind).unwrap();
            assert_eq!(json, serde_json::json!(kind.as_str()));
            assert_eq!(kind.to_string(), kind.as_str());
            assert_eq!(kind.as_str().parse::<FaultKind>().unwrap(), kind);
        }
        assert_eq!(FaultKind::LlmHttp500.as_str(), "llm_http_500");
    }

    #[test]
    fn parses_pairs_and_round_trips_through_display() {
        let spec =
            FaultSpec::parse(" tool_error=0.2, llm_non_json = 0.25 ,executor_panic=1").unwrap();
        assert_eq!(spec.rate(FaultKind::ToolError), 0.2);
        assert_eq!(spec.rate(FaultKind::LlmNonJson), 0.25);
        assert_eq!(spec.rate(FaultKind::ExecutorPanic), 1.0);
        assert_eq!(spec.rate(FaultKind::ToolTimeout), 0.0);
        assert_eq!(FaultSpec::parse(&spec.to_string()).unwrap(), spec);
        assert!(FaultSpec::parse("").unwrap().is_empty());
    }

    #[test]
    fn serialises_as_a_json_object_of_rates() {
        let spec = FaultSpec::parse("tool_error=0.2,llm_http_500=0.5").unwrap();
        let json = serde_json::to_value(&spec).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"llm_http_500": 0.5, "tool_error": 0.2})
        );
        assert_eq!(serde_json::from_value::<FaultSpec>(json).unwrap(), spec);
        let out_of_range = serde_json::json!({"tool_error": 2.0});
        assert!(serde_json::from_value::<FaultSpec>(out_of_range).is_err());
    }

    #[test]
    fn bad_pairs_are_named_in_the_error() {
        let err = FaultSpec::parse("tool_error=0.2,tool_eror=0.1").unwrap_err();
        assert!(
            matches!(&err, FaultSpecError::UnknownKind { pair, .. } if pair == "tool_eror=0.1")
        );
        let message = err.to_string();
        assert!(message.contains("tool_eror=0.1"), "{message}");
        assert!(message.contains("llm_http_500"), "{message}");

        let err = FaultSpec::parse("tool_error=lots").unwrap_err();
        assert!(matches!(&err, FaultSpecError::BadRate { pair, .. } if pair == "tool_error=lots"));

        for bad in ["tool_error=1.5", "tool_error=-0.1", "tool_error=NaN"] {
            let err = FaultSpec::parse(bad).unwrap_err();
            assert!(
                matches!(&err, FaultSpecError::RateOutOfRange { pair, .. } if pair == bad),
                "{err}"
            );
        }

        let err = FaultSpec::parse("tool_error=0.1,tool_error=0.2").unwrap_err();
        assert_eq!(
            err,
            FaultSpecError::Duplicate {
                pair: "tool_error=0.2".into(),
                kind: FaultKind::ToolError
            }
        );

        let err = FaultSpec::parse("tool_error=0.1,,llm_timeout=0.1").unwrap_err();
        assert!(matches!(err, FaultSpecError::EmptyPair { position: 2, .. }));
        assert!(matches!(
            FaultSpec::parse("tool_error=0.1,").unwrap_err(),
            FaultSpecError::EmptyPair { position: 2, .. }
        ));

        assert_eq!(
            FaultSpec::parse("tool_error").unwrap_err(),
            FaultSpecError::MissingRate {
                pair: "tool_error".into()
            }
        );
    }
}
