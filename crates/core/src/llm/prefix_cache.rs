//! Prefix reuse for an in-process model: the model states of recent
//! conversations, keyed by the tokens they hold, so that a new request
//! evaluates only the tokens after its longest common prefix with one of
//! them.
//!
//! An agent's prompt grows by one decision and one observation per round
//! while the system prompt, the tool list and the goal stay byte-identical
//! in front; without reuse every round re-reads all of it. The cache is
//! plain code over any token and state type, so its rules (longest match,
//! superseded entries dropped, least recently used evicted) are tested
//! without a model.

use std::sync::{Arc, Mutex, PoisonError};

/// How many tokens a stored state must share with a prompt before loading
/// it is worth its copy: shorter matches (a chat template's header) are
/// evaluated again.
pub const MIN_REUSE: usize = 32;

/// The model states of recent conversations (at most `capacity`).
pub struct PrefixCache<T, S> {
    capacity: usize,
    inner: Mutex<Entries<T, S>>,
}

struct Entries<T, S> {
    clock: u64,
    list: Vec<Entry<T, S>>,
}

struct Entry<T, S> {
    tokens: Vec<T>,
    state: Arc<S>,
    used: u64,
}

/// A stored state that a prompt can continue from.
pub struct Hit<S> {
    /// How many of the prompt's first tokens the state already holds.
    pub reused: usize,
    /// The model state after those tokens (and maybe more, to be cut).
    pub state: Arc<S>,
}

impl<T: PartialEq + Clone, S> PrefixCache<T, S> {
    /// An empty cache keeping at most `capacity` states (0 turns it off).
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity,
            inner: Mutex::new(Entries {
                clock: 0,
                list: Vec::new(),
            }),
        }
    }

    /// The stored state sharing the longest prefix with `prompt`, when that
    /// prefix is at least [`MIN_REUSE`] tokens. The state is shared, not
    /// taken: concurrent requests with the same system prompt can all start
    /// from it.
    pub fn lookup(&self, prompt: &[T]) -> Option<Hit<S>> {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.clock += 1;
        let now = inner.clock;
        let best = inner
            .list
            .iter_mut()
            .map(|entry| (common_prefix(&entry.tokens, prompt), entry))
            .filter(|(shared, _)| *shared >= MIN_REUSE)
            .max_by_key(|(shared, entry)| (*shared, entry.used))?;
        let (reused, entry) = best;
        entry.used = now;
        Some(Hit {
            reused,
            state: Arc::clone(&entry.state),
        })
    }

    /// Keeps the state after `tokens`. Entries whose tokens are a prefix of
    /// `tokens` are dropped (this one continues them), then the least
    /// recently used go until `capacity` remain.
    pub fn store(&self, tokens: Vec<T>, state: S) {
        if self.capacity == 0 || tokens.is_empty() {
            return;
        }
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.clock += 1;
        let now = inner.clock;
        inner
            .list
            .retain(|e| !(e.tokens.len() <= tokens.len() && tokens.starts_with(&e.tokens)));
        inner.list.push(Entry {
            tokens,
            state: Arc::new(state),
            used: now,
        });
        while inner.list.len() > self.capacity {
            let oldest = inner
                .list
                .iter()
                .enumerate()
                .min_by_key(|(_, e)| e.used)
                .map(|(i, _)| i)
                .unwrap_or(0);
            inner.list.remove(oldest);
        }
    }

    /// How many states are kept now.
    pub fn len(&self) -> usize {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .list
            .len()
    }

    /// Whether no state is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The length of the longest common prefix of two token lists.
pub fn common_prefix<T: PartialEq>(a: &[T], b: &[T]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(prefix: u32, len: usize) -> Vec<u32> {
        (0..len as u32).map(|i| prefix * 10_000 + i).collect()
    }

    #[test]
    fn finds_the_longest_shared_prefix() {
        let cache = PrefixCache::new(4);
        let base = tokens(1, 100);
        cache.store(base[..50].to_vec(), "short");
        let mut other = base[..80].to_vec();
        other.extend(tokens(2, 10));
        cache.store(other, "long");
        let mut prompt = base.clone();
        prompt.extend(tokens(3, 5));
        let hit = cache.lookup(&prompt).expect("a hit");
        assert_eq!(hit.reused, 80);
        assert_eq!(*hit.state, "long");
    }

    #[test]
    fn short_matches_are_not_worth_loading() {
        let cache = PrefixCache::new(4);
        cache.store(tokens(1, MIN_REUSE - 1), ());
        assert!(cache.lookup(&tokens(1, 200)).is_none());
        cache.store(tokens(1, MIN_REUSE), ());
        assert_eq!(cache.lookup(&tokens(1, 200)).unwrap().reused, MIN_REUSE);
    }

    #[test]
    fn a_continuation_replaces_the_state_it_continues() {
        let cache = PrefixCache::new(4);
        cache.store(tokens(1, 100), 1);
        cache.store(tokens(1, 150), 2);
        assert_eq!(cache.len(), 1);
        // A branch that diverges keeps both.
        let mut branch = tokens(1, 120);
        branch.extend(tokens(4, 3));
        cache.store(branch, 3);
        assert_eq!(cache.len(), 2);
    }

    #[test]
    fn the_least_recently_used_state_is_evicted() {
        let cache = PrefixCache::new(2);
        cache.store(tokens(1, 40), 'a');
        cache.store(tokens(2, 40), 'b');
        assert!(cache.lookup(&tokens(1, 40)).is_some()); // 'a' used last
        cache.store(tokens(3, 40), 'c');
        assert_eq!(cache.len(), 2);
        assert!(cache.lookup(&tokens(2, 40)).is_none());
        assert_eq!(*cache.lookup(&tokens(1, 40)).unwrap().state, 'a');
        assert_eq!(*cache.lookup(&tokens(3, 40)).unwrap().state, 'c');
    }

    #[test]
    fn capacity_zero_keeps_nothing() {
        let cache = PrefixCache::new(0);
        cache.store(tokens(1, 100), ());
        assert!(cache.is_empty());
        assert!(cache.lookup(&tokens(1, 100)).is_none());
    }
}
