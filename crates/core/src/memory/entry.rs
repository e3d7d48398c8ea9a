//! What the store keeps ([`MemoryEntry`]), what a caller writes
//! ([`MemoryWrite`]), and what writes and recalls return ([`Written`],
//! [`Recalled`]).

use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::DEFAULT_TTL;

/// One remembered fact: usually a finished run's goal, result and evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryEntry {
    /// Short stable id: 12 hex characters of a hash of the normalised text
    /// (see [`entry_id`]); merging keeps the first id.
    pub id: String,
    /// What is remembered.
    pub text: String,
    /// The text's embedding, when the writer had an embedder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedding: Option<Vec<f32>>,
    /// The goal of the task that wrote it.
    #[serde(default)]
    pub task: String,
    /// The executor role that wrote it, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// When it was first written (unix seconds).
    pub created: u64,
    /// When it was last written, merged into or recalled (unix seconds).
    pub last_used: u64,
    /// Seconds it lives after `last_used`.
    pub ttl_secs: u64,
    /// How often it was recalled or written again.
    #[serde(default)]
    pub hits: u64,
}

impl MemoryEntry {
    /// When it expires (unix seconds): `ttl_secs` after its last use.
    pub fn expires_at(&self) -> u64 {
        self.last_used.saturating_add(self.ttl_secs)
    }

    /// Whether it has expired at `now`; an expired entry is never returned.
    pub fn is_expired(&self, now: u64) -> bool {
        now >= self.expires_at()
    }

    /// The same entry without its embedding, for listings.
    pub fn without_embedding(&self) -> Self {
        Self {
            embedding: None,
            ..self.clone()
        }
    }
}

/// A request to remember something. Build it with [`MemoryWrite::new`] and
/// the `with_*` methods, or fill the fields.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MemoryWrite {
    /// What to remember (must not be blank).
    pub text: String,
    /// The goal of the task that writes it.
    pub task: String,
    /// The executor role that writes it, if any.
    pub role: Option<String>,
    /// The text's embedding, if the writer has an embedder.
    pub embedding: Option<Vec<f32>>,
    /// How long it lives after its last use; `None` means [`DEFAULT_TTL`].
    pub ttl: Option<Duration>,
}

impl MemoryWrite {
    /// A write of `text` for the task `task`, with the default TTL.
    pub fn new(text: impl Into<String>, task: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            task: task.into(),
            ..Self::default()
        }
    }

    /// Sets the writing role.
    pub fn with_role(mut self, role: impl Into<String>) -> Self {
        self.role = Some(role.into());
        self
    }

    /// Sets the text's embedding.
    pub fn with_embedding(mut self, embedding: Vec<f32>) -> Self {
        self.embedding = Some(embedding);
        self
    }

    /// Sets the time-to-live.
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// The time-to-live in whole seconds (the default when unset).
    pub fn ttl_secs(&self) -> u64 {
        self.ttl.unwrap_or(DEFAULT_TTL).as_secs()
    }
}

/// What a write did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Written {
    /// The id of the entry written or merged into.
    pub id: String,
    /// True when the write refreshed an existing near-duplicate entry
    /// instead of adding one.
    pub merged: bool,
}

/// One recalled entry with its ranking score.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Recalled {
    /// The entry, as updated by the recall (hit count, last use).
    pub entry: MemoryEntry,
    /// The BM25 score when ranked by keywords alone; the reciprocal-rank
    /// fusion score when cosine similarity took part. Higher is nearer.
    pub score: f32,
}

/// The id for a text whose normalised form is `normalised`: the first 12 hex
/// characters of its SHA-256. `attempt` > 0 salts it, for the rare clash of
/// two different texts.
pub fn entry_id(normalised: &str, attempt: u32) -> String {
    let mut hasher = Sha256::new();
    hasher.update(normalised.as_bytes());
    if attempt > 0 {
        hasher.update(format!("#{attempt}").as_bytes());
    }
    hasher.finalize()[..6]
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_twelve_hex_chars_and_stable() {
        let id = entry_id("fix the parser", 0);
        assert_eq!(id.len(), 12);
        assert!(id.chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(id, entry_id("fix the parser", 0));
        assert_ne!(id, entry_id("fix the parser", 1));
        assert_ne!(id, entry_id("fix the lexer", 0));
    }

    #[test]
    fn an_entry_expires_ttl_after_its_last_use() {
        let entry = MemoryEntry {
            id: "a".into(),
            text: "t".into(),
            embedding: None,
            task: String::new(),
            role: None,
            created: 100,
            last_used: 200,
            ttl_secs: 10,
            hits: 0,
        };
        assert!(!entry.is_expired(209));
        assert!(entry.is_expired(210));
    }

    #[test]
    fn a_write_defaults_to_thirty_days() {
        let write = MemoryWrite::new("x", "goal");
        assert_eq!(write.ttl_secs(), 30 * 24 * 3600);
        assert_eq!(write.with_ttl(Duration::from_secs(5)).ttl_secs(), 5);
    }
}
