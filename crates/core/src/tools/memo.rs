//! What is built from a toolbox and can be shared by every agent that uses
//! it: the decision schema, system prompts, and the subsets handed to
//! roles. A planner's executors of one role share one toolbox, so each of
//! these is built once per role instead of once per executor (at 100,000
//! executors that was most of an executor's memory).

use std::sync::{Arc, Mutex, OnceLock};

use serde_json::Value;

use super::Toolbox;

/// Most entries kept in each keyed memo; the oldest goes first. A role has
/// one key in practice; the bound only keeps a long-lived process with
/// many distinct prompts from growing without end.
const MAX_ENTRIES: usize = 32;

/// The shared builds of one toolbox. Cleared when a tool is registered.
#[derive(Default)]
pub(crate) struct Memo {
    schema: OnceLock<Arc<Value>>,
    prompts: Keyed<String, Arc<str>>,
    subsets: Keyed<Vec<String>, Arc<Toolbox>>,
}

impl Memo {
    /// The decision schema, built by `build` the first time.
    pub(crate) fn schema(&self, build: impl FnOnce() -> Value) -> Arc<Value> {
        Arc::clone(self.schema.get_or_init(|| Arc::new(build())))
    }

    /// The system prompt for `key` (everything it is rendered from besides
    /// the tools), built by `build` the first time.
    pub(crate) fn prompt(&self, key: &str, build: impl FnOnce() -> String) -> Arc<str> {
        self.prompts
            .get_or_insert_with(|k| k == key, || (key.to_owned(), Arc::from(build())))
    }

    /// The subset of the toolbox with the tools `names`, built by `build`
    /// the first time.
    pub(crate) fn subset(&self, names: &[String], build: impl FnOnce() -> Toolbox) -> Arc<Toolbox> {
        self.subsets.get_or_insert_with(
            |k| k.as_slice() == names,
            || (names.to_vec(), Arc::new(build())),
        )
    }
}

/// A small map from keys to shared values, at most [`MAX_ENTRIES`] long.
struct Keyed<K, V>(Mutex<Vec<(K, V)>>);

impl<K, V> Default for Keyed<K, V> {
    fn default() -> Self {
        Self(Mutex::new(Vec::new()))
    }
}

impl<K, V: Clone> Keyed<K, V> {
    /// The value whose key `matches`, or the entry `build` makes (added).
    /// A poisoned lock only costs the sharing: the value is built anyway.
    fn get_or_insert_with(
        &self,
        matches: impl Fn(&K) -> bool,
        build: impl FnOnce() -> (K, V),
    ) -> V {
        let Ok(mut entries) = self.0.lock() else {
            return build().1;
        };
        if let Some((_, value)) = entries.iter().find(|(k, _)| matches(k)) {
            return value.clone();
        }
        if entries.len() >= MAX_ENTRIES {
            entries.remove(0);
        }
        let (key, value) = build();
        entries.push((key, value.clone()));
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_build_runs_once_per_key_and_is_shared() {
        let memo = Memo::default();
        let mut built = 0;
        let a = memo.prompt("k1", || {
            built += 1;
            "prompt one".into()
        });
        let b = memo.prompt("k1", || unreachable!("built once"));
        assert!(Arc::ptr_eq(&a, &b));
        let c = memo.prompt("k2", || "prompt two".into());
        assert_eq!((built, &*c), (1, "prompt two"));
        let s1 = memo.schema(|| json!({"a": 1}));
        let s2 = memo.schema(|| unreachable!("built once"));
        assert!(Arc::ptr_eq(&s1, &s2));
        let names = vec!["read_file".to_string()];
        let t1 = memo.subset(&names, Toolbox::new);
        let t2 = memo.subset(&names, || unreachable!("built once"));
        assert!(Arc::ptr_eq(&t1, &t2));
    }

    #[test]
    fn the_oldest_entry_goes_when_full() {
        let memo = Memo::default();
        for k in 0..=MAX_ENTRIES {
            memo.prompt(&k.to_string(), || k.to_string());
        }
        let rebuilt = memo.prompt("0", || "again".into());
        assert_eq!(&*rebuilt, "again", "the first key was dropped");
        let kept = memo.prompt(&MAX_ENTRIES.to_string(), || unreachable!("kept"));
        assert_eq!(&*kept, MAX_ENTRIES.to_string());
    }
}
