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

/// Parses a duration flag in seconds; fractions are allowed (`1.5`). Zero
/// means the shortest budget, one second, as it always has.
pub fn parse_seconds(text: &str) -> Result<Duration, String> {
    let secs: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a number of seconds (e.g. 30 or 1.5)"))?;
    if !secs.is_finite() || secs < 0.0 {
        return Err(format!("`{text}` must be a positive number of seconds"));
    }
    if secs == 0.0 {
        return Ok(Duration::from_secs(1));
    }
    Duration::try_from_secs_f64(secs).map_err(|e| format!("`{text}`: {e}"))
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
        assert!(parse_seconds("abc").unwrap_err().contains("not a number"));
    }
}
