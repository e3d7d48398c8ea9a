//! [`MemoryStore`]: what the loop and the CLI ask of a long-term memory.

use async_trait::async_trait;

use super::entry::{MemoryEntry, MemoryWrite, Recalled, Written};
use super::error::MemoryError;

/// A persistent long-term memory. Methods are async and never block the
/// runtime: implementations run file work on blocking threads.
///
/// Every read skips expired entries; implementations delete them on open
/// and on [`purge_expired`](MemoryStore::purge_expired).
#[async_trait]
pub trait MemoryStore: Send + Sync {
    /// Remembers `write`, or refreshes the live entry it repeats (same text
    /// after normalisation, or a near-duplicate): that entry keeps its id
    /// and creation time, takes the longer text, gets a hit, and its
    /// time-to-live starts again. Returns the id and whether it merged.
    async fn remember(&self, write: MemoryWrite) -> Result<Written, MemoryError>;

    /// [`remember`](MemoryStore::remember) for many writes in one
    /// transaction, in order (a later write may merge into an earlier one).
    async fn remember_all(&self, writes: Vec<MemoryWrite>) -> Result<Vec<Written>, MemoryError>;

    /// Up to `k` live entries nearest `query`, best first: BM25 over the
    /// entries' text, fused by reciprocal-rank fusion with cosine
    /// similarity when `query_embedding` is given and entries have
    /// embeddings of its length. Only entries that share a keyword with the
    /// query, or whose cosine similarity reaches
    /// [`MIN_COSINE`](super::fuse::MIN_COSINE), are returned. Each returned
    /// entry gets a hit and a new last use (which restarts its TTL).
    async fn recall(
        &self,
        query: &str,
        query_embedding: Option<&[f32]>,
        k: usize,
    ) -> Result<Vec<Recalled>, MemoryError>;

    /// Ranks like [`recall`](MemoryStore::recall) but records no use: for
    /// people looking at the store (`hermes memory search`).
    async fn search(
        &self,
        query: &str,
        query_embedding: Option<&[f32]>,
        k: usize,
    ) -> Result<Vec<Recalled>, MemoryError>;

    /// Every live entry, most recently used first.
    async fn list(&self) -> Result<Vec<MemoryEntry>, MemoryError>;

    /// Deletes entry `id` and returns it; [`MemoryError::UnknownId`] if no
    /// live entry has that id.
    async fn forget(&self, id: &str) -> Result<MemoryEntry, MemoryError>;

    /// Deletes every expired entry; returns how many.
    async fn purge_expired(&self) -> Result<usize, MemoryError>;

    /// Deletes every entry; returns how many.
    async fn clear(&self) -> Result<usize, MemoryError>;
}
