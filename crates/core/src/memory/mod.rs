//! Long-term memory: what earlier runs learned, kept across runs in one
//! crash-safe file per workspace and recalled into a new run's first prompt.
//!
//! A finished run leaves one [`MemoryEntry`]: its goal, its result and the
//! observations the result cites ([`finished_run_note`]), written with
//! [`MemoryStore::remember`] (no model call). A new run asks
//! [`MemoryStore::recall`] for the entries nearest its goal: BM25 over the
//! entries' text ([`bm25`]), fused with cosine similarity by reciprocal-rank
//! fusion ([`fuse`]) when the caller has embeddings ([`Embedder`]).
//!
//! Entries expire after a time-to-live counted from their last use
//! ([`DEFAULT_TTL`]: 30 days); an expired entry is never returned, and the
//! store deletes expired entries when it opens. A write that repeats an
//! entry (the same text after [`dedupe::normalise`], or a near-duplicate by
//! token-set Jaccard or cosine similarity) refreshes that entry instead of
//! adding one.
//!
//! The default store is [`RedbStore`], at [`default_path`] under the
//! workspace. It keeps an in-memory index of every live entry (loaded on
//! open, updated on each write), so recall never reads the file;
//! `benches/memory_recall.rs` measures it over 10,000 entries.
//!
//! Two embedders: [`OpenAiEmbedder`] calls any OpenAI-compatible
//! `/v1/embeddings` server, and `minilm::MiniLmEmbedder` (the `local-embed`
//! feature) runs all-MiniLM-L6-v2 in-process from files on disk.
//!
//! This module imports only [`crate::text`]; the loop uses it through
//! [`crate::agent::memory`] (recall before the first round, a write after a
//! finished run).

pub mod bm25;
pub mod clock;
pub mod dedupe;
pub mod embed;
pub mod entry;
pub mod error;
pub mod fuse;
mod index;
#[cfg(feature = "local-embed")]
pub mod minilm;
pub mod note;
pub mod redb_store;
pub mod store;

use std::path::{Path, PathBuf};
use std::time::Duration;

pub use clock::{Clock, ManualClock, SystemClock};
pub use embed::{EmbedConfig, EmbedError, Embedder, OpenAiEmbedder};
pub use entry::{MemoryEntry, MemoryWrite, Recalled, Written};
pub use error::MemoryError;
pub use note::finished_run_note;
pub use redb_store::RedbStore;
pub use store::MemoryStore;

/// How long an entry lives after its last use (write, merge or recall)
/// unless its write says otherwise: 30 days.
pub const DEFAULT_TTL: Duration = Duration::from_secs(30 * 24 * 60 * 60);

/// Where a workspace keeps its memory: `.hermes/memory.redb` under it.
pub fn default_path(workspace: &Path) -> PathBuf {
    workspace.join(".hermes").join("memory.redb")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_path_is_under_the_workspace() {
        assert_eq!(
            default_path(Path::new("/tmp/ws")),
            PathBuf::from("/tmp/ws/.hermes/memory.redb")
        );
    }
}
