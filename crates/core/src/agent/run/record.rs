//! How a round is recorded once its action has run: the journal entry
//! built from the decision and its result (the decision's parts moved,
//! not copied), the round span's attributes, the caller's callback, and
//! the journal itself.

use tracing_opentelemetry::OpenTelemetrySpanExt;

use super::Run;
use crate::agent::observe;
use crate::decision::Decision;
use crate::journal::{JournalEntry, KEPT_DATA_CHARS};
use crate::limits::Limits;
use crate::telemetry;
use crate::tools::{ToolResult, ToolStatus};

impl Run<'_> {
    /// Records a round: span attributes, the caller's callback, the journal.
    pub(super) async fn record(&mut self, mut entry: JournalEntry) {
        if let Some(faults) = &self.agent.faults {
            let injected: Vec<&str> = faults.take_injected().iter().map(|k| k.as_str()).collect();
            if !injected.is_empty() {
                entry.injected = Some(injected.join(","));
            }
        }
        // The round's span is built only when exported
        // (`telemetry::ROUND_SPANS`); unexported, each attribute was still a
        // subscriber lookup.
        if telemetry::exporting() {
            let span = tracing::Span::current();
            span.set_attribute("hermes.action", entry.action.clone());
            span.set_attribute("hermes.args_hash", entry.args_hash.clone());
            span.set_attribute("hermes.status", entry.status.as_str());
            span.set_attribute("hermes.parse.repaired", entry.repaired);
            span.set_attribute("hermes.parse.regenerated", entry.regenerated);
            if entry.is_error() {
                telemetry::set_error(&span, crate::text::clip(&entry.observation, 300));
            }
        }
        // A log line for `RUST_LOG=hermes=debug`; at `debug` it is not a
        // span event too (the round's span has the same three as attributes),
        // which cost about a tenth of the loop's own CPU per round.
        tracing::debug!(round = entry.round, action = %entry.action, status = %entry.status.as_str(), "round done");
        if let Some(callback) = &self.agent.on_round {
            callback(&entry);
        }
        self.journal.record(entry).await;
    }
}

/// A journal entry for a decision and the result its action produced. Both
/// are taken, not copied: the thought, action, args and kept data move into
/// the entry (a round's entry is built once, from a decision used up).
pub(super) fn entry_for(
    round: u32,
    decision: Decision,
    result: ToolResult,
    limits: &Limits,
) -> JournalEntry {
    let kept = |data: &serde_json::Value| !data.is_null() && fits(data, KEPT_DATA_CHARS);
    let Decision {
        thought,
        action,
        repaired,
        ..
    } = decision;
    let observation = observe::observation_text(&result, limits);
    let status = result.status;
    JournalEntry {
        status,
        observation,
        repaired,
        data: Some(result.data).filter(|data| status == ToolStatus::Ok && kept(data)),
        ..JournalEntry::owned(round, thought, action.name, action.args)
    }
}

/// Whether `data` as JSON text is at most `limit` bytes, found by writing
/// it to a counter that gives up past the limit (no text is built).
fn fits(data: &serde_json::Value, limit: usize) -> bool {
    // A string's JSON text is at most six bytes a byte (`\u00XX`) and its
    // quotes: a short one fits without being written out.
    if let serde_json::Value::String(text) = data {
        if text.len().saturating_mul(6).saturating_add(2) <= limit {
            return true;
        }
    }
    struct Counter {
        left: usize,
    }
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.left = self
                .left
                .checked_sub(buf.len())
                .ok_or(std::io::ErrorKind::FileTooLarge)?;
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    serde_json::to_writer(Counter { left: limit }, data).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_fits_when_its_json_text_is_at_most_the_limit() {
        let data = serde_json::json!({"text": "abcd"});
        let len = data.to_string().len();
        assert!(fits(&data, len));
        assert!(!fits(&data, len - 1));
    }
}
