//! [`RedbStore`]: the default [`MemoryStore`], one redb file per workspace.
//!
//! redb commits are atomic and, at the default durability, on disk when
//! `commit` returns, so a process killed mid-write leaves the file as of
//! its last commit (`tests/memory_store.rs` kills a writer with SIGKILL to
//! check). Entries are JSON values keyed by id in one table, beside a
//! format version. Every live entry is also held in a `MemoryIndex`,
//! loaded on open and updated after each commit, so reads never touch the
//! file. Recall records hits with eventual durability: a crash may lose a
//! hit count, never an entry. redb locks the file while a store is open, so
//! one process at a time uses it (others get [`MemoryError::Locked`]).
//!
//! The inherent `*_blocking` methods do the work on the calling thread;
//! the [`MemoryStore`] impl runs them on tokio's blocking pool.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use redb::{Database, Durability, ReadableTable, TableDefinition};

use super::clock::{Clock, SystemClock};
use super::dedupe::normalise;
use super::entry::{entry_id, MemoryEntry, MemoryWrite, Recalled, Written};
use super::error::MemoryError;
use super::index::MemoryIndex;
use super::store::MemoryStore;

/// Entries as JSON, keyed by id.
const ENTRIES: TableDefinition<&str, &[u8]> = TableDefinition::new("entries");
/// `version` → [`FORMAT_VERSION`].
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");

/// The layout of the file this build reads and writes.
pub const FORMAT_VERSION: u64 = 1;

/// redb's page cache; a memory file is small.
const CACHE_BYTES: usize = 64 * 1024 * 1024;

/// A memory store in one redb file, with an in-memory index. Cloning is
/// cheap and shares the open file.
#[derive(Clone)]
pub struct RedbStore {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    db: Database,
    index: Mutex<MemoryIndex>,
    clock: Arc<dyn Clock>,
    purged_on_open: usize,
}

impl std::fmt::Debug for RedbStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedbStore")
            .field("path", &self.inner.path)
            .field("clock", &self.inner.clock)
            .finish_non_exhaustive()
    }
}

impl RedbStore {
    /// Opens the store at `path`, creating the file and its folders if
    /// missing, and deletes expired entries. Blocks (a file that was not
    /// closed cleanly is repaired first): from async code use
    /// [`RedbStore::open_async`].
    pub fn open(path: impl AsRef<Path>) -> Result<Self, MemoryError> {
        Self::open_with_clock(path, Arc::new(SystemClock))
    }

    /// [`RedbStore::open`] on a blocking thread.
    pub async fn open_async(path: impl Into<PathBuf>) -> Result<Self, MemoryError> {
        let path = path.into();
        let shown = path.clone();
        tokio::task::spawn_blocking(move || Self::open(path))
            .await
            .map_err(|e| MemoryError::Interrupted {
                path: shown,
                reason: e.to_string(),
            })?
    }

    /// Opens the store at `path` like [`RedbStore::open`], but fails with
    /// [`MemoryError::Missing`] instead of creating a file.
    pub fn open_existing(path: impl AsRef<Path>) -> Result<Self, MemoryError> {
        let path = path.as_ref();
        match std::fs::metadata(path) {
            Ok(_) => Self::open(path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(MemoryError::Missing {
                path: path.to_path_buf(),
            }),
            Err(source) => Err(MemoryError::Io {
                path: path.to_path_buf(),
                source,
            }),
        }
    }

    /// Opens the store at `path` reading the time from `clock` (tests).
    pub fn open_with_clock(
        path: impl AsRef<Path>,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, MemoryError> {
        let path = path.as_ref().to_path_buf();
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|source| MemoryError::Io {
                path: path.clone(),
                source,
            })?;
        }
        let mut builder = Database::builder();
        // The v3 format is the one redb 3 and later read without an upgrade.
        builder
            .create_with_file_format_v3(true)
            .set_cache_size(CACHE_BYTES);
        let db = builder
            .create(&path)
            .map_err(|e| MemoryError::from_redb(&path, e))?;
        let (entries, purged_on_open) = load(&db, &path, clock.now())?;
        Ok(Self {
            inner: Arc::new(Inner {
                path,
                db,
                index: Mutex::new(MemoryIndex::of(entries)),
                clock,
                purged_on_open,
            }),
        })
    }

    /// The file this store lives in.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// How many expired entries opening the store deleted.
    pub fn purged_on_open(&self) -> usize {
        self.inner.purged_on_open
    }

    /// How many live entries the store holds.
    pub fn len(&self) -> usize {
        self.index().live(self.now()).count()
    }

    /// Whether the store holds no live entry.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// [`MemoryStore::remember`] on this thread.
    pub fn remember_blocking(&self, write: MemoryWrite) -> Result<Written, MemoryError> {
        let mut written = self.remember_all_blocking(vec![write])?;
        Ok(written.remove(0))
    }

    /// [`MemoryStore::remember_all`] on this thread.
    pub fn remember_all_blocking(
        &self,
        writes: Vec<MemoryWrite>,
    ) -> Result<Vec<Written>, MemoryError> {
        let writes = writes
            .into_iter()
            .map(checked)
            .collect::<Result<Vec<_>, _>>()?;
        if writes.is_empty() {
            return Ok(Vec::new());
        }
        let now = self.now();
        let mut index = self.index();
        let result = self.write_batch(&mut index, writes, now);
        if result.is_err() {
            // The index took writes that did not commit: read it back.
            if let Ok(entries) = read_all(&self.inner.db, &self.inner.path) {
                *index = MemoryIndex::of(entries);
            }
        }
        result
    }

    /// [`MemoryStore::recall`] on this thread.
    pub fn recall_blocking(
        &self,
        query: &str,
        query_embedding: Option<&[f32]>,
        k: usize,
    ) -> Result<Vec<Recalled>, MemoryError> {
        let now = self.now();
        let mut index = self.index();
        let ranked = index.rank(query, query_embedding, k, now);
        if ranked.is_empty() {
            return Ok(Vec::new());
        }
        let recalled: Vec<Recalled> = ranked
            .into_iter()
            .filter_map(|(id, score)| {
                let mut entry = index.get(&id)?.clone();
                entry.hits += 1;
                entry.last_used = now;
                Some(Recalled { entry, score })
            })
            .collect();
        let db_error = |e: redb::Error| MemoryError::from_redb(&self.inner.path, e);
        let mut txn = self
            .inner
            .db
            .begin_write()
            .map_err(|e| db_error(e.into()))?;
        // A lost hit count is no loss: no fsync here (it costs milliseconds).
        // The next write, or dropping the store, makes this commit durable.
        txn.set_durability(Durability::None);
        {
            let mut table = txn.open_table(ENTRIES).map_err(|e| db_error(e.into()))?;
            for hit in &recalled {
                put(&mut table, &hit.entry).map_err(|e| db_error(e.into()))?;
            }
        }
        txn.commit().map_err(|e| db_error(e.into()))?;
        for hit in &recalled {
            index.insert(hit.entry.clone());
        }
        Ok(recalled)
    }

    /// [`MemoryStore::search`] on this thread.
    pub fn search_blocking(
        &self,
        query: &str,
        query_embedding: Option<&[f32]>,
        k: usize,
    ) -> Result<Vec<Recalled>, MemoryError> {
        let now = self.now();
        let index = self.index();
        Ok(index
            .rank(query, query_embedding, k, now)
            .into_iter()
            .filter_map(|(id, score)| {
                let entry = index.get(&id)?.clone();
                Some(Recalled { entry, score })
            })
            .collect())
    }

    /// [`MemoryStore::list`] on this thread.
    pub fn list_blocking(&self) -> Vec<MemoryEntry> {
        let now = self.now();
        let mut entries: Vec<MemoryEntry> = self.index().live(now).cloned().collect();
        entries.sort_by(|a, b| {
            b.last_used
                .cmp(&a.last_used)
                .then(b.created.cmp(&a.created))
                .then(a.id.cmp(&b.id))
        });
        entries
    }

    /// [`MemoryStore::forget`] on this thread.
    pub fn forget_blocking(&self, id: &str) -> Result<MemoryEntry, MemoryError> {
        let now = self.now();
        let mut index = self.index();
        // An expired entry is as good as gone (purging deletes it).
        if index.get(id).is_none_or(|entry| entry.is_expired(now)) {
            return Err(MemoryError::UnknownId {
                id: id.to_string(),
                path: self.inner.path.clone(),
            });
        }
        self.delete(&[id.to_string()])?;
        index.remove(id).ok_or_else(|| MemoryError::UnknownId {
            id: id.to_string(),
            path: self.inner.path.clone(),
        })
    }

    /// [`MemoryStore::purge_expired`] on this thread.
    pub fn purge_expired_blocking(&self) -> Result<usize, MemoryError> {
        let mut index = self.index();
        let expired = index.expired_ids(self.now());
        if expired.is_empty() {
            return Ok(0);
        }
        self.delete(&expired)?;
        for id in &expired {
            index.remove(id);
        }
        Ok(expired.len())
    }

    /// [`MemoryStore::clear`] on this thread.
    pub fn clear_blocking(&self) -> Result<usize, MemoryError> {
        let mut index = self.index();
        let ids: Vec<String> = index.all().map(|e| e.id.clone()).collect();
        self.delete(&ids)?;
        *index = MemoryIndex::default();
        Ok(ids.len())
    }

    fn now(&self) -> u64 {
        self.inner.clock.now()
    }

    /// The index; a panic elsewhere while it was held does not poison it
    /// for good (every change to it follows a commit).
    fn index(&self) -> MutexGuard<'_, MemoryIndex> {
        self.inner
            .index
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn write_batch(
        &self,
        index: &mut MemoryIndex,
        writes: Vec<MemoryWrite>,
        now: u64,
    ) -> Result<Vec<Written>, MemoryError> {
        let db_error = |e: redb::Error| MemoryError::from_redb(&self.inner.path, e);
        let txn = self
            .inner
            .db
            .begin_write()
            .map_err(|e| db_error(e.into()))?;
        let mut written = Vec::with_capacity(writes.len());
        {
            let mut table = txn.open_table(ENTRIES).map_err(|e| db_error(e.into()))?;
            for write in writes {
                let (entry, merged) = apply(index, write, now);
                put(&mut table, &entry).map_err(|e| db_error(e.into()))?;
                written.push(Written {
                    id: entry.id.clone(),
                    merged,
                });
                index.insert(entry);
            }
        }
        txn.commit().map_err(|e| db_error(e.into()))?;
        Ok(written)
    }

    /// Deletes `ids` from the file in one transaction.
    fn delete(&self, ids: &[String]) -> Result<(), MemoryError> {
        let db_error = |e: redb::Error| MemoryError::from_redb(&self.inner.path, e);
        let txn = self
            .inner
            .db
            .begin_write()
            .map_err(|e| db_error(e.into()))?;
        {
            let mut table = txn.open_table(ENTRIES).map_err(|e| db_error(e.into()))?;
            for id in ids {
                table.remove(id.as_str()).map_err(|e| db_error(e.into()))?;
            }
        }
        txn.commit().map_err(|e| db_error(e.into()))
    }

    async fn blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce(&RedbStore) -> Result<T, MemoryError> + Send + 'static,
    ) -> Result<T, MemoryError> {
        let store = self.clone();
        tokio::task::spawn_blocking(move || work(&store))
            .await
            .map_err(|e| MemoryError::Interrupted {
                path: self.inner.path.clone(),
                reason: e.to_string(),
            })?
    }
}

/// `write` with blank text refused, and an embedding of non-finite numbers
/// refused (JSON cannot hold them); an empty embedding counts as none.
fn checked(mut write: MemoryWrite) -> Result<MemoryWrite, MemoryError> {
    if write.text.trim().is_empty() {
        return Err(MemoryError::EmptyText);
    }
    if write.embedding.as_ref().is_some_and(Vec::is_empty) {
        write.embedding = None;
    }
    if let Some(embedding) = &write.embedding {
        if let Some(position) = embedding.iter().position(|x| !x.is_finite()) {
            return Err(MemoryError::BadEmbedding {
                reason: format!("item {position} is {}", embedding[position]),
            });
        }
    }
    Ok(write)
}

/// The entry that `write` leaves at `now`, and whether it merged into the
/// live entry it repeats.
fn apply(index: &MemoryIndex, write: MemoryWrite, now: u64) -> (MemoryEntry, bool) {
    let normalised = normalise(&write.text);
    let ttl_secs = write.ttl_secs();
    let duplicate = index.find_duplicate(&write.text, &normalised, write.embedding.as_deref(), now);
    if let Some(existing) = duplicate {
        let mut entry = existing.clone();
        if visible_len(&write.text) > visible_len(&entry.text) {
            // The longer text wins, with the embedding and source that go with it.
            entry.text = write.text;
            entry.embedding = write.embedding.or(entry.embedding);
            entry.task = write.task;
            entry.role = write.role;
        } else if entry.embedding.is_none() {
            entry.embedding = write.embedding;
        }
        entry.hits += 1;
        entry.last_used = now;
        entry.ttl_secs = ttl_secs;
        return (entry, true);
    }
    let entry = MemoryEntry {
        id: fresh_id(index, &normalised, now),
        text: write.text,
        embedding: write.embedding,
        task: write.task,
        role: write.role,
        created: now,
        last_used: now,
        ttl_secs,
        hits: 0,
    };
    (entry, false)
}

/// A text's length with runs of whitespace counted once: extra spaces do
/// not make a text longer.
fn visible_len(text: &str) -> usize {
    crate::text::one_line(text).chars().count()
}

/// The id for a new entry: the hash of its text, salted past any live
/// entry that holds it (an expired one is overwritten).
fn fresh_id(index: &MemoryIndex, normalised: &str, now: u64) -> String {
    (0..)
        .map(|attempt| entry_id(normalised, attempt))
        .find(|id| index.get(id).is_none_or(|held| held.is_expired(now)))
        .unwrap_or_default()
}

fn put(
    table: &mut redb::Table<&str, &[u8]>,
    entry: &MemoryEntry,
) -> Result<(), redb::StorageError> {
    // Serialising plain strings, integers and finite floats cannot fail.
    let json = serde_json::to_vec(entry).unwrap_or_default();
    table.insert(entry.id.as_str(), json.as_slice())?;
    Ok(())
}

/// Checks the format version (writing it into a new file), reads every
/// entry and deletes the ones expired at `now`. Returns the live entries
/// and how many were deleted.
fn load(db: &Database, path: &Path, now: u64) -> Result<(Vec<MemoryEntry>, usize), MemoryError> {
    let db_error = |e: redb::Error| MemoryError::from_redb(path, e);
    let txn = db.begin_write().map_err(|e| db_error(e.into()))?;
    let (live, expired) = {
        let mut meta = txn.open_table(META).map_err(|e| db_error(e.into()))?;
        let version = meta
            .get("version")
            .map_err(|e| db_error(e.into()))?
            .map(|v| v.value());
        match version {
            Some(FORMAT_VERSION) => {}
            Some(found) => {
                return Err(MemoryError::Version {
                    path: path.to_path_buf(),
                    found,
                    supported: FORMAT_VERSION,
                })
            }
            None => {
                meta.insert("version", FORMAT_VERSION)
                    .map_err(|e| db_error(e.into()))?;
            }
        }
        let mut table = txn.open_table(ENTRIES).map_err(|e| db_error(e.into()))?;
        let (expired, live): (Vec<MemoryEntry>, Vec<MemoryEntry>) = entries(&table, path)?
            .into_iter()
            .partition(|entry| entry.is_expired(now));
        for entry in &expired {
            table
                .remove(entry.id.as_str())
                .map_err(|e| db_error(e.into()))?;
        }
        (live, expired.len())
    };
    txn.commit().map_err(|e| db_error(e.into()))?;
    Ok((live, expired))
}

/// Every entry in the file, expired ones included.
fn read_all(db: &Database, path: &Path) -> Result<Vec<MemoryEntry>, MemoryError> {
    let db_error = |e: redb::Error| MemoryError::from_redb(path, e);
    let txn = db.begin_read().map_err(|e| db_error(e.into()))?;
    let table = txn.open_table(ENTRIES).map_err(|e| db_error(e.into()))?;
    entries(&table, path)
}

fn entries(
    table: &impl ReadableTable<&'static str, &'static [u8]>,
    path: &Path,
) -> Result<Vec<MemoryEntry>, MemoryError> {
    let mut entries = Vec::new();
    for item in table.iter().map_err(|e| MemoryError::from_redb(path, e))? {
        let (key, value) = item.map_err(|e| MemoryError::from_redb(path, e))?;
        let mut entry: MemoryEntry =
            serde_json::from_slice(value.value()).map_err(|e| MemoryError::Corrupt {
                path: path.to_path_buf(),
                reason: format!("entry {}: {e}", key.value()),
            })?;
        entry.id = key.value().to_string();
        entries.push(entry);
    }
    Ok(entries)
}

#[async_trait]
impl MemoryStore for RedbStore {
    async fn remember(&self, write: MemoryWrite) -> Result<Written, MemoryError> {
        self.blocking(move |store| store.remember_blocking(write))
            .await
    }

    async fn remember_all(&self, writes: Vec<MemoryWrite>) -> Result<Vec<Written>, MemoryError> {
        self.blocking(move |store| store.remember_all_blocking(writes))
            .await
    }

    async fn recall(
        &self,
        query: &str,
        query_embedding: Option<&[f32]>,
        k: usize,
    ) -> Result<Vec<Recalled>, MemoryError> {
        let query = query.to_string();
        let embedding = query_embedding.map(<[f32]>::to_vec);
        self.blocking(move |store| store.recall_blocking(&query, embedding.as_deref(), k))
            .await
    }

    async fn search(
        &self,
        query: &str,
        query_embedding: Option<&[f32]>,
        k: usize,
    ) -> Result<Vec<Recalled>, MemoryError> {
        let query = query.to_string();
        let embedding = query_embedding.map(<[f32]>::to_vec);
        self.blocking(move |store| store.search_blocking(&query, embedding.as_deref(), k))
            .await
    }

    async fn list(&self) -> Result<Vec<MemoryEntry>, MemoryError> {
        self.blocking(|store| Ok(store.list_blocking())).await
    }

    async fn forget(&self, id: &str) -> Result<MemoryEntry, MemoryError> {
        let id = id.to_string();
        self.blocking(move |store| store.forget_blocking(&id)).await
    }

    async fn purge_expired(&self) -> Result<usize, MemoryError> {
        self.blocking(|store| store.purge_expired_blocking()).await
    }

    async fn clear(&self) -> Result<usize, MemoryError> {
        self.blocking(|store| store.clear_blocking()).await
    }
}
