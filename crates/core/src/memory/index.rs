//! The in-memory index over a store's entries: every entry by id, by
//! normalised text, by keyword (BM25) and by embedding. A store loads it on
//! open and updates it after each commit, so recall and the duplicate check
//! never read the file.

use std::collections::HashMap;

use super::bm25::{Bm25Index, DocId};
use super::dedupe::{self, DUPLICATE_COSINE, DUPLICATE_JACCARD};
use super::entry::MemoryEntry;
use super::fuse::{self, FUSION_DEPTH, MIN_COSINE, RRF_K};

#[derive(Debug)]
struct Slot {
    entry: MemoryEntry,
    normalised: String,
    /// The embedding's length (0 without one), kept for cosine.
    norm: f32,
}

/// Entries by id, normalised text, keyword and embedding.
#[derive(Debug, Default)]
pub(crate) struct MemoryIndex {
    slots: HashMap<DocId, Slot>,
    by_id: HashMap<String, DocId>,
    by_normalised: HashMap<String, DocId>,
    keywords: Bm25Index,
    next_slot: DocId,
}

impl MemoryIndex {
    /// An index of `entries`.
    pub fn of(entries: impl IntoIterator<Item = MemoryEntry>) -> Self {
        let mut index = Self::default();
        for entry in entries {
            index.insert(entry);
        }
        index
    }

    /// Adds `entry`, or replaces the entry with its id.
    pub fn insert(&mut self, entry: MemoryEntry) {
        let normalised = dedupe::normalise(&entry.text);
        let norm = entry.embedding.as_deref().map_or(0.0, dedupe::norm);
        let slot = match self.by_id.get(&entry.id) {
            Some(&slot) => {
                let old = &self.slots[&slot];
                if old.entry.text != entry.text {
                    self.keywords.insert(slot, &entry.text);
                }
                self.unlink_normalised(slot);
                slot
            }
            None => {
                let slot = self.next_slot;
                self.next_slot += 1;
                self.by_id.insert(entry.id.clone(), slot);
                self.keywords.insert(slot, &entry.text);
                slot
            }
        };
        self.by_normalised.insert(normalised.clone(), slot);
        self.slots.insert(
            slot,
            Slot {
                entry,
                normalised,
                norm,
            },
        );
    }

    /// Drops the entry `id`, returning it.
    pub fn remove(&mut self, id: &str) -> Option<MemoryEntry> {
        let slot = self.by_id.remove(id)?;
        self.unlink_normalised(slot);
        self.keywords.remove(slot);
        self.slots.remove(&slot).map(|s| s.entry)
    }

    fn unlink_normalised(&mut self, slot: DocId) {
        if let Some(old) = self.slots.get(&slot) {
            if self.by_normalised.get(&old.normalised) == Some(&slot) {
                self.by_normalised.remove(&old.normalised);
            }
        }
    }

    /// The entry `id`, expired or not.
    pub fn get(&self, id: &str) -> Option<&MemoryEntry> {
        self.by_id.get(id).map(|slot| &self.slots[slot].entry)
    }

    /// Every entry, expired ones included.
    pub fn all(&self) -> impl Iterator<Item = &MemoryEntry> {
        self.slots.values().map(|slot| &slot.entry)
    }

    /// The entries live at `now`.
    pub fn live(&self, now: u64) -> impl Iterator<Item = &MemoryEntry> {
        self.all().filter(move |entry| !entry.is_expired(now))
    }

    /// The ids of the entries expired at `now`.
    pub fn expired_ids(&self, now: u64) -> Vec<String> {
        self.all()
            .filter(|entry| entry.is_expired(now))
            .map(|entry| entry.id.clone())
            .collect()
    }

    fn live_slot(&self, slot: DocId, now: u64) -> Option<&Slot> {
        self.slots
            .get(&slot)
            .filter(|slot| !slot.entry.is_expired(now))
    }

    /// The live entry that a write of `text` (normalised: `normalised`,
    /// embedded: `embedding`) repeats, if any: the same normalised text,
    /// else the best token-set Jaccard at or above the bar, else the best
    /// cosine at or above its bar.
    pub fn find_duplicate(
        &self,
        text: &str,
        normalised: &str,
        embedding: Option<&[f32]>,
        now: u64,
    ) -> Option<&MemoryEntry> {
        if let Some(slot) = self
            .by_normalised
            .get(normalised)
            .and_then(|&slot| self.live_slot(slot, now))
        {
            return Some(&slot.entry);
        }
        let (distinct, overlaps) = self.keywords.shared_terms(text);
        let by_tokens = overlaps
            .into_iter()
            .filter_map(|(slot, shared, theirs)| {
                let similarity = dedupe::jaccard(shared, distinct, theirs);
                (similarity >= DUPLICATE_JACCARD).then_some((slot, similarity))
            })
            .filter_map(|(slot, similarity)| Some((self.live_slot(slot, now)?, similarity)))
            .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.entry.id.cmp(&a.0.entry.id)));
        if let Some((slot, _)) = by_tokens {
            return Some(&slot.entry);
        }
        let query = embedding?;
        self.cosine_ranking(query, now, DUPLICATE_COSINE)
            .first()
            .map(|&(slot, _)| &self.slots[&slot].entry)
    }

    /// Up to `k` live entries for `query`, best first, with their scores:
    /// BM25 alone, or fused with the cosine ranking by reciprocal-rank
    /// fusion when `query_embedding` finds entries at or above
    /// [`MIN_COSINE`]. Only entries in some ranking are returned.
    pub fn rank(
        &self,
        query: &str,
        query_embedding: Option<&[f32]>,
        k: usize,
        now: u64,
    ) -> Vec<(String, f32)> {
        if k == 0 {
            return Vec::new();
        }
        let depth = FUSION_DEPTH.max(k);
        let keyword: Vec<(DocId, f32)> = self
            .keywords
            .search(query)
            .into_iter()
            .filter(|&(slot, _)| self.live_slot(slot, now).is_some())
            .take(depth)
            .collect();
        let mut cosine = query_embedding
            .map(|q| self.cosine_ranking(q, now, MIN_COSINE))
            .unwrap_or_default();
        cosine.truncate(depth);
        let ranked = if cosine.is_empty() {
            keyword
        } else {
            let keyword: Vec<DocId> = keyword.iter().map(|&(slot, _)| slot).collect();
            let cosine: Vec<DocId> = cosine.iter().map(|&(slot, _)| slot).collect();
            fuse::reciprocal_rank_fusion(&[&keyword, &cosine], RRF_K)
        };
        ranked
            .into_iter()
            .take(k)
            .map(|(slot, score)| (self.slots[&slot].entry.id.clone(), score))
            .collect()
    }

    /// Live entries whose embedding has `query`'s length and a cosine
    /// similarity of at least `floor` with it, best first.
    fn cosine_ranking(&self, query: &[f32], now: u64, floor: f32) -> Vec<(DocId, f32)> {
        let query_norm = dedupe::norm(query);
        if query.is_empty() || query_norm == 0.0 {
            return Vec::new();
        }
        let mut ranked: Vec<(DocId, f32)> = self
            .slots
            .iter()
            .filter(|(_, slot)| slot.norm > 0.0 && !slot.entry.is_expired(now))
            .filter_map(|(&id, slot)| {
                let embedding = slot.entry.embedding.as_deref()?;
                if embedding.len() != query.len() {
                    return None;
                }
                let similarity = dedupe::dot(embedding, query) / (slot.norm * query_norm);
                (similarity >= floor).then_some((id, similarity))
            })
            .collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        ranked
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: &str, text: &str, embedding: Option<Vec<f32>>) -> MemoryEntry {
        MemoryEntry {
            id: id.into(),
            text: text.into(),
            embedding,
            task: String::new(),
            role: None,
            created: 0,
            last_used: 0,
            ttl_secs: 100,
            hits: 0,
        }
    }

    #[test]
    fn rank_skips_expired_entries_and_ranks_by_keyword() {
        let mut old = entry("old", "redb crash safety notes", None);
        old.ttl_secs = 5;
        let index = MemoryIndex::of([old, entry("new", "redb is crash safe", None)]);
        let ids: Vec<String> = index
            .rank("redb crash", None, 5, 10)
            .into_iter()
            .map(|r| r.0)
            .collect();
        assert_eq!(ids, ["new"]);
        assert_eq!(index.rank("redb", None, 5, 1).len(), 2);
        assert!(index.rank("redb", None, 0, 1).is_empty());
    }

    #[test]
    fn embeddings_fuse_with_keywords() {
        let index = MemoryIndex::of([
            entry("kw", "the deploy script uses rsync", Some(vec![0.0, 1.0])),
            entry(
                "vec",
                "shipping the site to production",
                Some(vec![1.0, 0.05]),
            ),
            entry("none", "unrelated gardening tips", Some(vec![-1.0, 0.0])),
        ]);
        // Keywords alone find only "kw".
        let ids = |ranked: Vec<(String, f32)>| ranked.into_iter().map(|r| r.0).collect::<Vec<_>>();
        assert_eq!(ids(index.rank("deploy", None, 5, 0)), ["kw"]);
        // The embedding adds "vec"; "none" stays below the cosine floor.
        let fused = ids(index.rank("deploy", Some(&[1.0, 0.0]), 5, 0));
        assert_eq!(fused.len(), 2);
        assert!(fused.contains(&"kw".to_string()) && fused.contains(&"vec".to_string()));
        // A vector of another length is ignored.
        assert_eq!(
            ids(index.rank("deploy", Some(&[1.0, 0.0, 0.0]), 5, 0)),
            ["kw"]
        );
    }

    #[test]
    fn duplicates_by_normalised_text_tokens_and_embedding() {
        let index = MemoryIndex::of([
            entry(
                "a",
                "Fix the parser: trailing commas in arrays",
                Some(vec![1.0, 0.0]),
            ),
            entry(
                "b",
                "one two three four five six seven eight nine ten",
                None,
            ),
        ]);
        let dup = |text: &str, embedding: Option<&[f32]>| {
            index
                .find_duplicate(text, &dedupe::normalise(text), embedding, 0)
                .map(|e| e.id.clone())
        };
        assert_eq!(
            dup("fix the PARSER trailing commas in arrays!", None).as_deref(),
            Some("a")
        );
        // 10 of 11 distinct tokens shared: Jaccard 0.91.
        assert_eq!(
            dup(
                "one two three four five six seven eight nine ten eleven",
                None
            )
            .as_deref(),
            Some("b")
        );
        assert_eq!(dup("one two three four five", None), None);
        assert_eq!(
            dup("something else entirely", Some(&[0.99, 0.01])).as_deref(),
            Some("a")
        );
        assert_eq!(dup("something else entirely", Some(&[0.5, 0.5])), None);
    }

    #[test]
    fn replacing_an_entry_reindexes_its_text() {
        let mut index = MemoryIndex::of([entry("a", "alpha", None)]);
        index.insert(entry("a", "beta", None));
        assert!(index.rank("alpha", None, 5, 0).is_empty());
        assert_eq!(index.rank("beta", None, 5, 0).len(), 1);
        assert!(index.find_duplicate("alpha", "alpha", None, 0).is_none());
        assert_eq!(index.remove("a").map(|e| e.text), Some("beta".into()));
        assert!(index.rank("beta", None, 5, 0).is_empty());
    }
}
