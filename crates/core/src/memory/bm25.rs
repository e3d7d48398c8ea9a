//! Keyword ranking: Okapi BM25 over an inverted index, with a tokenizer for
//! English-like words and CJK text.
//!
//! Written here rather than taken from a crate: the index must take single
//! documents in and out as entries are written, merged and forgotten, and
//! expose the terms two texts share (the near-duplicate check reuses it);
//! that is under 200 lines.
//!
//! Tokens: runs of letters and digits, lowercased (`read_file` is `read`
//! and `file`); in CJK text, which has no spaces, every ideograph, kana or
//! hangul syllable is a token, and so is every pair of neighbours (`机器学习`
//! gives `机 器 学 习 机器 器学 学习`): single characters find a word however
//! it is cut, and pairs rank the texts that hold the phrase first.

use std::collections::{HashMap, HashSet};

/// BM25's term-frequency saturation.
pub const K1: f32 = 1.2;
/// BM25's document-length normalisation.
pub const B: f32 = 0.75;

/// How many distinct query terms a document must hold to be found, or all
/// of them when the query has fewer: one shared word ("file", "count") is
/// not enough to make an earlier task relevant.
pub const MIN_SHARED_TERMS: usize = 2;

/// The share of a query's distinct terms a document must hold, when that
/// is more than [`MIN_SHARED_TERMS`]: goals repeat words such as "answer"
/// and "txt", and a long goal must match in more than those.
pub const MIN_SHARED_FRACTION: f32 = 0.3;

/// English function words a query ignores: they match nearly every text
/// and would let any entry pass the [`MIN_SHARED_TERMS`] floor.
pub const STOPWORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "do", "does", "for", "from", "how", "i", "in",
    "is", "it", "its", "just", "me", "my", "of", "on", "or", "that", "the", "then", "there",
    "this", "to", "was", "what", "when", "where", "which", "who", "with", "write", "you", "your",
];

/// A document's key in the index (the caller's slot number).
pub type DocId = u32;

/// The tokens of `text`, in order (see the module comment).
pub fn tokenize(text: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    let mut word = String::new();
    let mut previous_cjk: Option<char> = None;
    for c in text.chars() {
        if is_cjk(c) {
            flush(&mut word, &mut tokens);
            tokens.push(c.to_string());
            if let Some(previous) = previous_cjk {
                tokens.push(format!("{previous}{c}"));
            }
            previous_cjk = Some(c);
            continue;
        }
        previous_cjk = None;
        if c.is_alphanumeric() {
            word.extend(c.to_lowercase());
        } else {
            flush(&mut word, &mut tokens);
        }
    }
    flush(&mut word, &mut tokens);
    tokens
}

fn flush(word: &mut String, tokens: &mut Vec<String>) {
    if !word.is_empty() {
        tokens.push(std::mem::take(word));
    }
}

/// Whether `c` is written without spaces between words: CJK ideographs,
/// kana and hangul syllables.
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF      // hiragana, katakana
        | 0x3400..=0x4DBF    // CJK extension A
        | 0x4E00..=0x9FFF    // CJK unified ideographs
        | 0xAC00..=0xD7AF    // hangul syllables
        | 0xF900..=0xFAFF    // CJK compatibility ideographs
        | 0x20000..=0x2FA1F) // CJK extensions B–F, compatibility supplement
}

#[derive(Debug, Clone)]
struct Doc {
    len: u32,
    /// (term id, frequency) for each distinct term.
    terms: Vec<(u32, u32)>,
}

/// An inverted index that ranks documents against a query by BM25.
#[derive(Debug, Clone, Default)]
pub struct Bm25Index {
    term_ids: HashMap<String, u32>,
    /// For each term id, the documents holding it and how often.
    postings: Vec<Vec<(DocId, u32)>>,
    docs: HashMap<DocId, Doc>,
    total_len: u64,
}

impl Bm25Index {
    /// An empty index.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many documents it holds.
    pub fn len(&self) -> usize {
        self.docs.len()
    }

    /// Whether it holds no documents.
    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// Indexes `text` as document `doc`, replacing what `doc` held.
    pub fn insert(&mut self, doc: DocId, text: &str) {
        self.remove(doc);
        let tokens = tokenize(text);
        let mut counts: HashMap<u32, u32> = HashMap::new();
        for token in &tokens {
            let next = self.term_ids.len() as u32;
            let id = *self.term_ids.entry(token.clone()).or_insert(next);
            if id as usize == self.postings.len() {
                self.postings.push(Vec::new());
            }
            *counts.entry(id).or_default() += 1;
        }
        let terms: Vec<(u32, u32)> = counts.into_iter().collect();
        for &(term, tf) in &terms {
            self.postings[term as usize].push((doc, tf));
        }
        self.total_len += tokens.len() as u64;
        self.docs.insert(
            doc,
            Doc {
                len: tokens.len() as u32,
                terms,
            },
        );
    }

    /// Drops document `doc`; false if it was not indexed.
    pub fn remove(&mut self, doc: DocId) -> bool {
        let Some(old) = self.docs.remove(&doc) else {
            return false;
        };
        for (term, _) in old.terms {
            self.postings[term as usize].retain(|&(d, _)| d != doc);
        }
        self.total_len -= u64::from(old.len);
        true
    }

    /// The documents sharing enough distinct terms with `query` (see
    /// [`shared_terms_needed`]), best first,
    /// with their BM25 scores (all above zero). Repeated query terms count
    /// once and [`STOPWORDS`] not at all. Ties go to the lower `DocId`.
    pub fn search(&self, query: &str) -> Vec<(DocId, f32)> {
        if self.docs.is_empty() {
            return Vec::new();
        }
        let n = self.docs.len() as f32;
        let avg_len = (self.total_len as f32 / n).max(1.0);
        let terms = self.query_terms(query);
        let needed = shared_terms_needed(content_terms(query));
        let mut scores: HashMap<DocId, (f32, usize)> = HashMap::new();
        for term in terms {
            let postings = &self.postings[term as usize];
            if postings.is_empty() {
                continue;
            }
            let df = postings.len() as f32;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            for &(doc, tf) in postings {
                let len = self.docs.get(&doc).map_or(0, |d| d.len) as f32;
                let tf = tf as f32;
                let norm = tf + K1 * (1.0 - B + B * len / avg_len);
                let (score, shared) = scores.entry(doc).or_default();
                *score += idf * tf * (K1 + 1.0) / norm;
                *shared += 1;
            }
        }
        let mut ranked: Vec<(DocId, f32)> = scores
            .into_iter()
            .filter(|&(_, (score, shared))| score > 0.0 && shared >= needed)
            .map(|(doc, (score, _))| (doc, score))
            .collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        ranked
    }

    /// How many distinct terms `text` has, and for each document sharing
    /// some: (doc, shared distinct terms, the doc's distinct terms). The
    /// near-duplicate check computes token-set Jaccard from these.
    pub fn shared_terms(&self, text: &str) -> (usize, Vec<(DocId, usize, usize)>) {
        let tokens = tokenize(text);
        let distinct: HashSet<&str> = tokens.iter().map(String::as_str).collect();
        let mut shared: HashMap<DocId, usize> = HashMap::new();
        for token in &distinct {
            if let Some(&term) = self.term_ids.get(*token) {
                for &(doc, _) in &self.postings[term as usize] {
                    *shared.entry(doc).or_default() += 1;
                }
            }
        }
        let overlaps = shared
            .into_iter()
            .map(|(doc, count)| (doc, count, self.docs.get(&doc).map_or(0, |d| d.terms.len())))
            .collect();
        (distinct.len(), overlaps)
    }

    /// The distinct term ids of `query` that the index knows, stopwords left out.
    fn query_terms(&self, query: &str) -> HashSet<u32> {
        tokenize(query)
            .iter()
            .filter(|token| !is_stopword(token))
            .filter_map(|token| self.term_ids.get(token).copied())
            .collect()
    }
}

/// Whether `token` (already lowercased) is one of the [`STOPWORDS`].
pub fn is_stopword(token: &str) -> bool {
    STOPWORDS.binary_search(&token).is_ok()
}

/// How many distinct terms a document must share with a query of `terms`
/// distinct terms (stopwords left out): [`MIN_SHARED_TERMS`], or all of
/// them when fewer, or [`MIN_SHARED_FRACTION`] of them when that is more.
pub fn shared_terms_needed(terms: usize) -> usize {
    let share = (terms as f32 * MIN_SHARED_FRACTION).ceil() as usize;
    MIN_SHARED_TERMS.min(terms).max(share)
}

/// Whether `text` shares enough of `query`'s distinct terms to be found by
/// it (the floor [`Bm25Index::search`] applies, for one text).
pub fn shares_enough_terms(query: &str, text: &str) -> bool {
    let wanted: HashSet<String> = tokenize(query)
        .into_iter()
        .filter(|token| !is_stopword(token))
        .collect();
    if wanted.is_empty() {
        return false;
    }
    let held: HashSet<String> = tokenize(text).into_iter().collect();
    wanted.intersection(&held).count() >= shared_terms_needed(wanted.len())
}

/// How many distinct terms of `query` are not stopwords.
fn content_terms(query: &str) -> usize {
    tokenize(query)
        .into_iter()
        .filter(|token| !is_stopword(token))
        .collect::<HashSet<_>>()
        .len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(docs: &[&str]) -> Bm25Index {
        let mut index = Bm25Index::new();
        for (i, text) in docs.iter().enumerate() {
            index.insert(i as DocId, text);
        }
        index
    }

    #[test]
    fn tokens_are_lowercased_words_and_cjk_characters_with_pairs() {
        assert_eq!(
            tokenize("Read_file: notes.TXT, v2!"),
            ["read", "file", "notes", "txt", "v2"]
        );
        assert_eq!(
            tokenize("用Rust写机器学习"),
            [
                "用", "rust", "写", "机", "写机", "器", "机器", "学", "器学", "习", "学习"
            ]
        );
        assert!(tokenize("  ,. ").is_empty());
    }

    #[test]
    fn english_ranking_prefers_the_document_about_the_query() {
        let index = index(&[
            "The parser failed on trailing commas in JSON arrays.",
            "Deploy the web server with nginx and a TLS certificate.",
            "Fixed the JSON parser: trailing commas in objects and arrays are now accepted by the parser.",
            "Cooking pasta needs salted water.",
        ]);
        let ranked = index.search("json parser trailing commas");
        let order: Vec<DocId> = ranked.iter().map(|&(doc, _)| doc).collect();
        assert_eq!(order.len(), 2, "only documents sharing a term: {ranked:?}");
        assert!(order.contains(&0) && order.contains(&2));
        assert!(ranked.iter().all(|&(_, score)| score > 0.0));
        // A rare term outweighs a common one.
        let ranked = index.search("nginx the");
        assert_eq!(ranked[0].0, 1);
        assert!(index.search("quantum chromodynamics").is_empty());
    }

    #[test]
    fn chinese_ranking_finds_words_without_spaces() {
        let docs = index(&[
            "今天天气很好，我们去公园散步。",
            "机器学习模型需要大量的训练数据。",
            "深度学习是机器学习的一个分支。",
            "这家餐厅的饭菜很好吃。",
        ]);
        let ranked = docs.search("机器学习");
        let order: Vec<DocId> = ranked.iter().map(|&(doc, _)| doc).collect();
        assert_eq!(order.len(), 2, "{ranked:?}");
        assert_eq!(
            order.iter().copied().collect::<HashSet<_>>(),
            HashSet::from([1, 2])
        );
        // A phrase's pairs rank the text that holds the phrase over one
        // that only shares its characters.
        let docs = index(&["学习机器很难", "机器学习很难"]);
        assert_eq!(docs.search("机器学习")[0].0, 1);
    }

    #[test]
    fn longer_documents_score_lower_for_the_same_term_frequency() {
        let index = index(&[
            "redb store",
            "redb store with many other words that dilute the match a lot",
        ]);
        let ranked = index.search("redb");
        assert_eq!(ranked[0].0, 0);
        assert!(ranked[0].1 > ranked[1].1);
    }

    #[test]
    fn removed_and_replaced_documents_leave_no_trace() {
        let mut index = index(&["alpha beta", "gamma delta"]);
        assert!(index.remove(0));
        assert!(!index.remove(0));
        assert!(index.search("alpha").is_empty());
        index.insert(1, "alpha");
        assert_eq!(index.search("alpha")[0].0, 1);
        assert!(index.search("gamma").is_empty());
        assert_eq!(index.len(), 1);
    }

    #[test]
    fn shared_terms_count_distinct_tokens() {
        let index = index(&["a b c d", "x y"]);
        let (distinct, overlaps) = index.shared_terms("a b b e");
        assert_eq!(distinct, 3);
        assert_eq!(overlaps, vec![(0, 2, 4)]);
    }

    #[test]
    fn stopwords_are_sorted_for_binary_search() {
        assert!(STOPWORDS.windows(2).all(|w| w[0] < w[1]));
        assert!(is_stopword("the") && !is_stopword("csv"));
    }

    #[test]
    fn one_shared_word_does_not_make_a_document_relevant() {
        let index = index(&[
            "Count the admins in users.csv",
            "Sum the prices in orders.csv",
            "Write a poem",
        ]);
        // "the" and "in" are ignored; "csv" alone is one shared term of two.
        let found: Vec<DocId> = index
            .search("count rows in the csv")
            .iter()
            .map(|d| d.0)
            .collect();
        assert_eq!(found, vec![0]);
        // A one-word query needs its one word.
        let found: Vec<DocId> = index.search("csv").iter().map(|d| d.0).collect();
        assert_eq!(found.len(), 2);
        // Nothing but stopwords finds nothing.
        assert!(index.search("the of in").is_empty());
    }

    #[test]
    fn one_text_passes_the_floor_as_search_would() {
        assert!(shares_enough_terms(
            "count the admins in users.csv",
            "Task: Count the admins in users.csv"
        ));
        assert!(!shares_enough_terms(
            "count the admins in users.csv",
            "Sum the prices in orders.csv"
        ));
        assert!(!shares_enough_terms("the of in", "the of in"));
    }

    #[test]
    fn long_queries_must_share_a_third_of_their_terms() {
        assert_eq!(shared_terms_needed(0), 0);
        assert_eq!(shared_terms_needed(1), 1);
        assert_eq!(shared_terms_needed(5), 2);
        assert_eq!(shared_terms_needed(10), 3);
        assert_eq!(shared_terms_needed(11), 4);
        let index = index(&["answer txt", "answer txt admins users csv"]);
        let found = index.search("count the admins of users csv and put the number in answer txt");
        assert_eq!(found.iter().map(|d| d.0).collect::<Vec<_>>(), vec![1]);
    }
}
