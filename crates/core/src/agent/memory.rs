//! Long-term memory around one run: recall the notes of earlier tasks
//! before the first round, remember a finished run after the last.
//!
//! Neither step calls the model. Recall is the store's ranking (BM25 over
//! the entries, fused with cosine similarity when an embedder is set) with
//! its relevance floor, top [`RECALLED_NOTES`]; the notes go into the first
//! user turn under a line that says they come from earlier tasks
//! ([`notes_block`]). Only a run that ends with status `finished` is
//! remembered: its goal, its result and the observations the result rests
//! on ([`cited_observations`]), as [`finished_run_note`] writes them. Guard
//! stops, errors and unreadable replies leave nothing.
//!
//! Memory never fails a run: a store or embedder error is logged as a
//! warning and the run goes on without recalled notes (or is not stored).

use std::collections::HashSet;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use crate::journal::{canonical_json, JournalEntry, UNPARSED};
use crate::memory::bm25::{is_stopword, shares_enough_terms, tokenize};
use crate::memory::dedupe::cosine;
use crate::memory::{
    finished_run_note, Embedder, MemoryEntry, MemoryError, MemoryStore, MemoryWrite, DEFAULT_TTL,
};
use crate::text::{clip, one_line};

/// How many notes of earlier tasks a run is given at most.
pub const RECALLED_NOTES: usize = 3;

/// The most characters of one note shown in a prompt: three notes stay
/// well inside a small model's context.
pub const MAX_NOTE_CHARS: usize = 600;

/// A note found by meaning alone (it fails the keyword floor) is given
/// only at this cosine similarity or above: embedding models score
/// unrelated texts at 0.3 to 0.6.
pub const MIN_NOTE_COSINE: f32 = 0.6;

/// The longest a recall or a write may take (an embedder that hangs must
/// not eat the run); past it, the run goes on without.
pub const STEP_TIMEOUT: Duration = Duration::from_secs(15);

/// Tools whose observations are never stored as evidence: text from the
/// web would be carried into later, unrelated runs' prompts.
const UNSTORED_TOOLS: &[&str] = &["http_fetch", "web_search"];

/// Words of an observation that say nothing about its content: the
/// envelope's own keys and values.
const ENVELOPE_WORDS: &[&str] = &["data", "error", "false", "null", "ok", "status", "true"];

/// A long-term memory as runs use it: a store, an optional embedder for
/// semantic recall, the time-to-live of what is written, and the role that
/// writes. Cheap to clone; clones share the store.
#[derive(Clone)]
pub struct LongTermMemory {
    store: Arc<dyn MemoryStore>,
    embedder: Option<Arc<dyn Embedder>>,
    ttl: Duration,
    role: Option<String>,
}

impl std::fmt::Debug for LongTermMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LongTermMemory")
            .field("embedder", &self.embedder.as_ref().map(|e| e.model()))
            .field("ttl", &self.ttl)
            .field("role", &self.role)
            .finish_non_exhaustive()
    }
}

/// What a run did with long-term memory: the ids of the notes it was
/// given, and the id of the entry it wrote or refreshed (`null` unless it
/// finished). `hermes run --json` prints it as `"memory"`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct MemoryUse {
    /// Ids of the recalled entries, best first.
    pub recalled: Vec<String>,
    /// Id of the entry this run's result went into.
    pub stored: Option<String>,
}

/// Notes recalled for one run.
#[derive(Debug, Clone, Default)]
pub struct RecalledNotes {
    /// The entries' ids, best first.
    pub ids: Vec<String>,
    /// Their texts, in the same order.
    pub texts: Vec<String>,
}

impl LongTermMemory {
    /// Memory in `store`, keyword recall only, entries living [`DEFAULT_TTL`].
    pub fn new(store: Arc<dyn MemoryStore>) -> Self {
        Self {
            store,
            embedder: None,
            ttl: DEFAULT_TTL,
            role: None,
        }
    }

    /// Fuses semantic similarity from `embedder` into recall, and stores
    /// each entry's embedding.
    pub fn with_embedder(mut self, embedder: Arc<dyn Embedder>) -> Self {
        self.embedder = Some(embedder);
        self
    }

    /// Entries written from now on live `ttl` after their last use.
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// The same memory, writing entries as `role` (an executor's role).
    pub fn for_role(&self, role: impl Into<String>) -> Self {
        Self {
            role: Some(role.into()),
            ..self.clone()
        }
    }

    /// The store behind this memory.
    pub fn store(&self) -> &Arc<dyn MemoryStore> {
        &self.store
    }

    /// The notes nearest `goal`, at most [`RECALLED_NOTES`]: each shares
    /// enough of the goal's words, or is at least [`MIN_NOTE_COSINE`] near
    /// it by meaning. None when the store fails or takes longer than
    /// [`STEP_TIMEOUT`] (with a warning). Each recalled entry's
    /// time-to-live starts again.
    pub async fn recall(&self, goal: &str) -> RecalledNotes {
        let recalled = tokio::time::timeout(STEP_TIMEOUT, async {
            let embedding = self.embed(goal).await;
            let found = self
                .store
                .recall(goal, embedding.as_deref(), RECALLED_NOTES)
                .await?;
            let near = |entry: &MemoryEntry| {
                shares_enough_terms(goal, &entry.text)
                    || matches!(
                        (embedding.as_deref(), entry.embedding.as_deref()),
                        (Some(q), Some(e)) if cosine(q, e).is_some_and(|c| c >= MIN_NOTE_COSINE)
                    )
            };
            Ok::<_, MemoryError>(
                found
                    .into_iter()
                    .map(|r| r.entry)
                    .filter(|entry| near(entry))
                    .collect::<Vec<_>>(),
            )
        })
        .await;
        match within_step(recalled, "recall skipped") {
            Some(entries) => RecalledNotes {
                ids: entries.iter().map(|e| e.id.clone()).collect(),
                texts: entries.into_iter().map(|e| e.text).collect(),
            },
            None => RecalledNotes::default(),
        }
    }

    /// Remembers a run that finished `goal` with `result` after the rounds
    /// of `journal`; returns the id written or refreshed, or `None` (with a
    /// warning) when the store fails or takes over [`STEP_TIMEOUT`].
    pub async fn remember_finished(
        &self,
        goal: &str,
        result: &str,
        journal: &[JournalEntry],
    ) -> Option<String> {
        let text = finished_run_note(goal, result, &cited_observations(result, journal));
        let mut write = MemoryWrite::new(text.clone(), one_line(goal)).with_ttl(self.ttl);
        if let Some(role) = &self.role {
            write = write.with_role(role.clone());
        }
        let written = tokio::time::timeout(STEP_TIMEOUT, async move {
            if let Some(embedding) = self.embed(&text).await {
                write = write.with_embedding(embedding);
            }
            self.store.remember(write).await
        })
        .await;
        within_step(written, "the finished run was not stored").map(|w| w.id)
    }

    /// `text`'s embedding, when an embedder is set and answers.
    async fn embed(&self, text: &str) -> Option<Vec<f32>> {
        let embedder = self.embedder.as_ref()?;
        match embedder.embed(&[text.to_string()]).await {
            Ok(mut vectors) if vectors.len() == 1 => vectors.pop(),
            Ok(vectors) => {
                tracing::warn!(
                    "long-term memory: the embedder returned {} vectors for one text; keywords only",
                    vectors.len()
                );
                None
            }
            Err(e) => {
                tracing::warn!("long-term memory: keywords only, the embedder failed: {e}");
                None
            }
        }
    }
}

/// The value of a memory step bounded by [`STEP_TIMEOUT`], or `None` with
/// a warning that starts with `failed` when the store failed or the step
/// ran out of time.
fn within_step<T>(
    step: Result<Result<T, MemoryError>, tokio::time::error::Elapsed>,
    failed: &str,
) -> Option<T> {
    match step {
        Ok(Ok(value)) => Some(value),
        Ok(Err(e)) => {
            tracing::warn!("long-term memory: {failed}: {e}");
            None
        }
        Err(_) => {
            let limit = STEP_TIMEOUT.as_secs();
            tracing::warn!("long-term memory: {failed}: it took over {limit}s");
            None
        }
    }
}

/// The block that opens the first user turn when notes were recalled:
/// a line saying what they are, then each note, indented. Empty for none.
pub fn notes_block(notes: &[String]) -> String {
    if notes.is_empty() {
        return String::new();
    }
    let mut block = String::from(
        "Notes from earlier tasks (not the current goal; use them only where they help, and check what they say against the workspace):\n",
    );
    for note in notes {
        let note = clip(note, MAX_NOTE_CHARS);
        let mut lines = note.lines();
        let _ = writeln!(block, "- {}", lines.next().unwrap_or_default());
        for line in lines {
            let _ = writeln!(block, "  {line}");
        }
    }
    block.push('\n');
    block
}

/// The observations `result` rests on: those of the run's successful tool
/// rounds that share a word or number with it, most shared first (ties in
/// round order); the last successful observation when none shares any.
/// Web tools' observations are left out ([`UNSTORED_TOOLS`]). Each is
/// given as `action args: observation`.
pub fn cited_observations(result: &str, journal: &[JournalEntry]) -> Vec<String> {
    let words = content_words(result);
    let succeeded: Vec<&JournalEntry> = journal
        .iter()
        .filter(|e| !e.is_error() && e.action != UNPARSED && e.action != "finish")
        .filter(|e| !UNSTORED_TOOLS.contains(&e.action.as_str()))
        .collect();
    let mut cited: Vec<(usize, &JournalEntry)> = succeeded
        .iter()
        .map(|e| {
            (
                content_words(&e.observation).intersection(&words).count(),
                *e,
            )
        })
        .filter(|(shared, _)| *shared > 0)
        .collect();
    cited.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.round.cmp(&b.1.round)));
    let mut entries: Vec<&JournalEntry> = cited.into_iter().map(|(_, e)| e).collect();
    if entries.is_empty() {
        entries.extend(succeeded.last());
    }
    entries
        .into_iter()
        .map(|e| {
            let args = clip(&one_line(&canonical_json(&e.args)), 80);
            format!("{} {args}: {}", e.action, e.observation)
        })
        .collect()
}

/// The distinct words and numbers of `text` that carry content.
fn content_words(text: &str) -> HashSet<String> {
    tokenize(text)
        .into_iter()
        .filter(|t| !is_stopword(t) && !ENVELOPE_WORDS.contains(&t.as_str()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::{MemoryStore, RedbStore};
    use crate::tools::ToolStatus;
    use serde_json::json;

    fn entry(round: u32, action: &str, observation: &str, ok: bool) -> JournalEntry {
        JournalEntry {
            status: if ok {
                ToolStatus::Ok
            } else {
                ToolStatus::Error
            },
            observation: observation.into(),
            ..JournalEntry::new(round, "", action, json!({"path": "users.csv"}))
        }
    }

    #[test]
    fn the_cited_observations_share_words_with_the_result() {
        let journal = vec![
            entry(
                1,
                "list_dir",
                r#"{"status":"ok","data":["users.csv"]}"#,
                true,
            ),
            entry(
                2,
                "read_file",
                r#"{"status":"ok","data":"alice,admin\nbob,admin"}"#,
                true,
            ),
            entry(
                3,
                "run_code",
                r#"{"status":"error","error":"2 admins"}"#,
                false,
            ),
            entry(
                4,
                "run_code",
                r#"{"status":"ok","data":{"stdout":"2\n"}}"#,
                true,
            ),
        ];
        let cited = cited_observations("There are 2 admins: alice and bob.", &journal);
        assert_eq!(cited.len(), 2);
        assert!(
            cited[0].starts_with("read_file {\"path\":\"users.csv\"}: "),
            "{cited:?}"
        );
        assert!(cited[1].starts_with("run_code "), "{cited:?}");
        // No shared word: the last successful observation stands for the evidence.
        let cited = cited_observations("Done.", &journal);
        assert_eq!(cited.len(), 1);
        assert!(cited[0].contains("stdout"));
        assert!(cited_observations("Done.", &[]).is_empty());
    }

    #[test]
    fn the_notes_block_says_what_the_notes_are() {
        assert_eq!(notes_block(&[]), "");
        let block = notes_block(&["Task: a\nResult: b".into(), "Task: c".into()]);
        assert!(block.starts_with("Notes from earlier tasks (not the current goal"));
        assert!(block.contains("\n- Task: a\n  Result: b\n- Task: c\n"));
        assert!(block.ends_with("\n\n"));
    }

    #[tokio::test]
    async fn a_finished_run_is_recalled_by_a_related_goal_only() {
        let dir = tempfile::tempdir().unwrap();
        let store = RedbStore::open(dir.path().join("m.redb")).unwrap();
        let memory = LongTermMemory::new(Arc::new(store.clone())).for_role("analyst");
        let journal = vec![entry(
            1,
            "read_file",
            r#"{"status":"ok","data":"7 admins"}"#,
            true,
        )];
        let id = memory
            .remember_finished("Count the admins in users.csv", "7 admins", &journal)
            .await
            .unwrap();
        let stored = store.list().await.unwrap();
        assert_eq!(stored.len(), 1);
        assert_eq!(stored[0].role.as_deref(), Some("analyst"));
        assert!(stored[0].text.contains("Evidence:\n- read_file"));
        let notes = memory.recall("How many admins are in users.csv?").await;
        assert_eq!(notes.ids, vec![id]);
        assert!(notes.texts[0].starts_with("Task: Count the admins"));
        let notes = memory.recall("Write a haiku about the sea").await;
        assert!(notes.ids.is_empty());
    }
}
