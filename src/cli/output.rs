//! What `run` and `plan` print when they end, written once: with `--json`
//! the outcome as one JSON object on the last line of stdout, else the
//! answer (or progress report) as text. Diagnostics go to stderr.

use std::io::Write;
use std::time::Duration;

use serde::Serialize;

/// Prints the final result. A closed stdout (piped into `head`, say) is
/// not worth a panic, so write errors are ignored.
pub fn print_result(json: Option<&impl Serialize>, text: &str) {
    let mut out = std::io::stdout().lock();
    let written = match json {
        Some(value) => serde_json::to_string(value)
            .map_err(std::io::Error::from)
            .and_then(|line| writeln!(out, "{line}")),
        None => writeln!(out, "{}", text.trim_end()),
    };
    let _ = written.and_then(|_| out.flush());
}

/// Why a number of seconds on the command line was refused.
#[derive(Debug, PartialEq, thiserror::Error)]
#[error("`{0}` is not a number of seconds; give a positive number such as 30 or 1.5")]
pub struct BadSeconds(String);

/// Parses every duration flag in seconds; fractions are allowed (`1.5`).
/// Zero means the shortest budget, one second, as it always has.
pub fn parse_seconds(text: &str) -> Result<Duration, BadSeconds> {
    let secs = text
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|secs| secs.is_finite() && *secs >= 0.0)
        .ok_or_else(|| BadSeconds(text.to_string()))?;
    if secs == 0.0 {
        return Ok(Duration::from_secs(1));
    }
    Duration::try_from_secs_f64(secs).map_err(|_| BadSeconds(text.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_may_be_fractional_but_not_negative() {
        assert_eq!(parse_seconds("1.5"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_seconds("300"), Ok(Duration::from_secs(300)));
        assert!(parse_seconds("-1").is_err());
        assert_eq!(parse_seconds("0"), Ok(Duration::from_secs(1)));
        for bad in ["-1", "NaN", "inf", "2m", ""] {
            assert!(parse_seconds(bad).is_err(), "{bad}");
        }
        assert!(parse_seconds("abc")
            .unwrap_err()
            .to_string()
            .contains("not a number"));
    }
}
