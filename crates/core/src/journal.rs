//! The journal: one JSON line per round of the loop.
//!
//! It is the loop's memory of what happened (the prompt's history and the
//! progress report are built from it) and the user's record of the run
//! (`--journal FILE`). Each line holds the round, thought, action, args, a
//! canonical args hash, the observation status, the observation as the
//! model saw it, tokens and durations.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use tokio::io::{AsyncWriteExt, BufWriter};

use crate::llm::Usage;
use crate::tools::ToolStatus;

/// Action name recorded for a round whose reply could not be parsed.
pub const UNPARSED: &str = "(unparsed)";

/// One round of the loop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JournalEntry {
    /// 1-based round number.
    pub round: u32,
    /// The model's reasoning for this round.
    pub thought: String,
    /// The action name (`(unparsed)` when no decision could be read).
    pub action: String,
    /// The action's arguments.
    pub args: Value,
    /// Canonical hash of name and args; equal calls have equal hashes.
    pub args_hash: String,
    /// `ok` or `error`.
    pub status: ToolStatus,
    /// The observation as shown to the model (already truncated).
    pub observation: String,
    /// Tokens used by this round's model calls.
    pub tokens: Usage,
    /// Time spent waiting on the model, in milliseconds.
    pub llm_ms: u64,
    /// Time spent in the tool, in milliseconds.
    pub tool_ms: u64,
    /// Whether the reply needed repair to be read.
    #[serde(default)]
    pub repaired: bool,
    /// Whether the reply had to be regenerated once.
    #[serde(default)]
    pub regenerated: bool,
    /// The earlier round whose call this decision repeated exactly, when
    /// repeat guidance answered it (see `agent::repeat`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat_of: Option<u32>,
    /// Whether the model was asked again because its decision repeated a
    /// recent call.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reasked: bool,
    /// The steer that asked the model again (see `reasked`), so a report
    /// can count the rounds each steer answered even when the second
    /// answer went ahead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasked_by: Option<String>,
    /// `flagged: <why>` when the evidence check flagged this round's thought
    /// or answer (see `agent::evidence`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
    /// The unreadable reply, for rounds without a decision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
    /// Faults injected during this round (`tool_error`, or several joined
    /// by commas), so a report tells injected failures from real ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub injected: Option<String>,
    /// The steer that answered this round's decision instead of letting it
    /// act (`finish_check`, `read_check`, ...; see `agent::steer`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steered_by: Option<String>,
    /// The steer whose sentence closed the prompt this round's decision
    /// was asked from (`write_offer`, `finish_check`; see
    /// `agent::steer::Steer::closing`), so a report can count the rounds a
    /// closing sentence was shown in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompted_by: Option<String>,
    /// The tool result's `data` as JSON, for a call that succeeded and
    /// whose data fits [`KEPT_DATA_CHARS`] (the observation may be cut;
    /// this is what steers read, never the printed text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// The decision on this round's call, when the approval policy asked
    /// a person (see `approval`). Boxed: rarely set, and every entry of a
    /// million executors' journals carried its room (BENCHMARKS.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<Box<crate::approval::ApprovalRecord>>,
    /// Other answers drawn in place of the model's own, when a steer
    /// rejected its result (see `agent::steer::Steer::redraw`); the round's
    /// thought, action and observation are then the kept answer's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redraw: Option<Box<RedrawRecord>>,
}

/// What a redraw did in a round (see [`JournalEntry::redraw`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RedrawRecord {
    /// The steer that asked for it.
    pub by: String,
    /// How many answers were drawn.
    pub drawn: u32,
    /// How many of them were run (the others could not be read, named
    /// another action, were not eligible, or came after the one kept).
    pub ran: u32,
    /// Which draw was kept (1-based); `None` when none succeeded and the
    /// round kept the model's own answer.
    pub kept: Option<u32>,
    /// The model's own call and what it got, shortened, when a draw
    /// replaced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaced: Option<String>,
    /// A vote's count (a steer's [`Steer::vote`](crate::agent::steer::Steer::vote)):
    /// the answers that gave each outcome, the model's own first, then
    /// the draws' other outcomes in the order drawn (a draw whose call
    /// failed or showed nothing counts for none). Empty for a redraw.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tally: Vec<u32>,
    /// What the model chose when a contested vote was put to it (a
    /// steer's [`Steer::judge`](crate::agent::steer::Steer::judge)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<JudgeRecord>,
}

/// A contested vote's judging, in its [`RedrawRecord`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JudgeRecord {
    /// The steer that asked the model to choose.
    pub by: String,
    /// The outcome chosen, as an index into the record's `tally` (0 is
    /// the model's own); `None` when the reply named none.
    pub chose: Option<usize>,
    /// The reason the reply gave, or why there was no choice.
    pub reason: String,
}

impl RedrawRecord {
    /// The record of `drawn` answers drawn for the steer named `by`,
    /// before any of them ran.
    pub fn new(by: &str, drawn: u32) -> Self {
        Self {
            by: by.to_string(),
            drawn,
            ran: 0,
            kept: None,
            replaced: None,
            tally: Vec::new(),
            judge: None,
        }
    }
}

/// Most characters of a result's data kept whole in its journal line.
pub const KEPT_DATA_CHARS: usize = 16 * 1024;

impl JournalEntry {
    /// An entry for `action` with `args` (hash computed), status `ok`, and
    /// empty observation, tokens and timings for the caller to fill in.
    pub fn new(round: u32, thought: &str, action: &str, args: Value) -> Self {
        Self::owned(round, thought.to_string(), action.to_string(), args)
    }

    /// [`JournalEntry::new`] from owned text: what a decision used up moves
    /// in without a copy.
    pub fn owned(round: u32, thought: String, action: String, args: Value) -> Self {
        Self {
            round,
            args_hash: action_hash(&action, &args),
            thought,
            action,
            args,
            status: ToolStatus::Ok,
            observation: String::new(),
            tokens: Usage::default(),
            llm_ms: 0,
            tool_ms: 0,
            repaired: false,
            regenerated: false,
            repeat_of: None,
            reasked: false,
            reasked_by: None,
            evidence: None,
            raw: None,
            injected: None,
            steered_by: None,
            prompted_by: None,
            data: None,
            approval: None,
            redraw: None,
        }
    }

    /// A round of `action` with empty args whose call succeeded (`ok`) or
    /// failed: the shape unit tests of the loop's mechanisms start from.
    #[cfg(test)]
    pub(crate) fn finished_call(round: u32, action: &str, ok: bool) -> Self {
        Self {
            status: if ok {
                ToolStatus::Ok
            } else {
                ToolStatus::Error
            },
            ..Self::new(round, "", action, Value::Object(Default::default()))
        }
    }

    /// Whether the observation was an error.
    pub fn is_error(&self) -> bool {
        self.status != ToolStatus::Ok
    }
}

/// The rounds of one run, optionally mirrored to a JSONL file as they happen.
///
/// The file is written through tokio's file API (a blocking-pool thread), so
/// a slow disk never stalls the runtime thread the loop runs on.
#[derive(Default)]
pub struct Journal {
    entries: Vec<JournalEntry>,
    sink: Option<BufWriter<tokio::fs::File>>,
}

impl Journal {
    /// A journal kept in memory only.
    pub fn new() -> Self {
        Self::default()
    }

    /// A journal that also appends each round to `path` as one JSON line.
    pub async fn to_file(path: &Path) -> std::io::Result<Self> {
        let file = tokio::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .await?;
        Ok(Self {
            entries: Vec::new(),
            sink: Some(BufWriter::new(file)),
        })
    }

    /// An in-memory journal that starts with `entries` (a resumed run).
    pub fn from_entries(entries: Vec<JournalEntry>) -> Self {
        Self {
            entries,
            sink: None,
        }
    }

    /// This journal with `entries` as its earlier rounds (not written again).
    pub fn with_entries(mut self, entries: Vec<JournalEntry>) -> Self {
        self.entries = entries;
        self
    }

    /// Records a round (and writes its line, flushed, when a file is
    /// attached: a crash loses no recorded round).
    pub async fn record(&mut self, entry: JournalEntry) {
        self.write_line(&entry, entry.round).await;
        push_round(&mut self.entries, entry);
    }

    /// Writes a reflection made after `round` as its own line,
    /// `{"kind": "reflection", "round": N, "text": "..."}` (file only: the
    /// rounds stay what [`Journal::entries`] returns).
    pub async fn note_reflection(&mut self, round: u32, text: &str) {
        let line = serde_json::json!({"kind": "reflection", "round": round, "text": text});
        self.write_line(&line, round).await;
    }

    /// Appends one JSON line to the file, flushed; a failed write disables
    /// the file with a warning and never stops the run.
    async fn write_line(&mut self, value: &impl Serialize, round: u32) {
        let Some(sink) = &mut self.sink else {
            return;
        };
        let written = match serde_json::to_vec(value) {
            Ok(mut line) => {
                line.push(b'\n');
                match sink.write_all(&line).await {
                    Ok(()) => sink.flush().await,
                    Err(e) => Err(e),
                }
            }
            Err(e) => Err(std::io::Error::from(e)),
        };
        if let Err(e) = written {
            tracing::warn!(
                "journal line for round {round} not written: {e}; journal file disabled"
            );
            self.sink = None;
        }
    }

    /// Flushes and closes the file, if any (the entries stay readable).
    pub async fn close(&mut self) {
        if let Some(mut sink) = self.sink.take() {
            if let Err(e) = sink.shutdown().await {
                tracing::warn!("journal file not closed cleanly: {e}");
            }
        }
    }

    /// Every round so far, oldest first.
    pub fn entries(&self) -> &[JournalEntry] {
        &self.entries
    }

    /// The rounds, taking them out of the journal.
    pub fn into_entries(self) -> Vec<JournalEntry> {
        self.entries
    }

    /// Reads a JSONL journal file back (lines that do not parse are skipped).
    pub fn read(path: &Path) -> std::io::Result<Vec<JournalEntry>> {
        let text = std::fs::read_to_string(path)?;
        Ok(text
            .lines()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect())
    }
}

/// Appends a round to a list of rounds. The first four rounds grow the
/// list by one slot at a time instead of `Vec::push`'s minimum of four:
/// most subtasks take a few rounds, and four empty entries are about 1 KiB
/// per run (100 MiB at 100,000 executors, each with its journal and the
/// planner's copy). Longer runs grow by doubling as usual (one slot at a
/// time up to eight cost a copy of the list on each of those rounds).
pub fn push_round(rounds: &mut Vec<JournalEntry>, entry: JournalEntry) {
    if rounds.len() < 4 {
        rounds.reserve_exact(1);
    }
    rounds.push(entry);
}

/// A stable hash of an action: its name and its args with keys sorted, so
/// `{"a":1,"b":2}` and `{"b":2,"a":1}` hash the same.
pub fn action_hash(name: &str, args: &Value) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut hasher = Sha256::new();
    hasher.update(name.as_bytes());
    hasher.update([0]);
    hasher.update(canonical_json(args).as_bytes());
    let digest = hasher.finalize();
    let mut hex = String::with_capacity(16);
    for byte in &digest[..8] {
        hex.push(char::from(HEX[usize::from(byte >> 4)]));
        hex.push(char::from(HEX[usize::from(byte & 0xf)]));
    }
    hex
}

/// JSON text with object keys sorted at every level (compact, as
/// `Value::to_string` writes it), written in one pass without building a
/// sorted copy of the value.
pub fn canonical_json(value: &Value) -> String {
    fn write(value: &Value, out: &mut Vec<u8>) {
        match value {
            Value::Object(map) => {
                let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
                out.push(b'{');
                for (i, (key, item)) in entries.into_iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    // Writing a string or a scalar to a Vec cannot fail.
                    let _ = serde_json::to_writer(&mut *out, key);
                    out.push(b':');
                    write(item, out);
                }
                out.push(b'}');
            }
            Value::Array(items) => {
                out.push(b'[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    write(item, out);
                }
                out.push(b']');
            }
            scalar => {
                let _ = serde_json::to_writer(&mut *out, scalar);
            }
        }
    }
    let mut out = Vec::with_capacity(64);
    write(value, &mut out);
    // serde_json writes UTF-8 only.
    String::from_utf8(out).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn canonical_json_sorts_keys_at_every_level_and_is_compact_json() {
        let value = json!({"b": [{"z": 1, "a": "x\"y"}, null, 1.5], "a": {"d": true, "c": "é"}});
        let text = canonical_json(&value);
        assert_eq!(
            text,
            r#"{"a":{"c":"é","d":true},"b":[{"a":"x\"y","z":1},null,1.5]}"#
        );
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), value);
        assert_eq!(action_hash("t", &value).len(), 16);
        // The first 8 bytes of SHA-256 over `name NUL canonical-args`, in
        // hex: journals written by earlier versions keep their hashes.
        assert_eq!(
            action_hash("read_file", &json!({"path": "a.txt"})),
            "cd952692b6735beb"
        );
    }

    #[test]
    fn hash_ignores_key_order_but_not_values() {
        let a = action_hash("t", &json!({"a": 1, "b": {"x": 1, "y": 2}}));
        let b = action_hash("t", &json!({"b": {"y": 2, "x": 1}, "a": 1}));
        assert_eq!(a, b);
        assert_ne!(a, action_hash("t", &json!({"a": 2, "b": {"x": 1, "y": 2}})));
        assert_ne!(a, action_hash("u", &json!({"a": 1, "b": {"x": 1, "y": 2}})));
    }

    #[tokio::test]
    async fn journal_file_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.jsonl");
        let mut journal = Journal::to_file(&path).await.unwrap();
        for round in 1..=2 {
            journal
                .record(JournalEntry {
                    llm_ms: 1,
                    tool_ms: 2,
                    ..JournalEntry::new(round, "t", "read_file", json!({"path": "中文"}))
                })
                .await;
        }
        let back = Journal::read(&path).unwrap();
        assert_eq!(back, journal.entries());
        assert!(std::fs::read_to_string(&path).unwrap().contains("中文"));
    }
}
