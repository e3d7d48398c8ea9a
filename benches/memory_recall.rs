//! What the in-memory index buys: recall over 10,000 entries in a redb
//! store, against two baselines measured in the same run: the same
//! queries by a naive linear scan (BM25 recomputed over every text, as a
//! store without an index would), and recall over 1,000 entries.
//!
//! ```sh
//! cargo bench --bench memory_recall
//! ```
//!
//! The texts are synthetic run notes over a 3,000-word vocabulary with a
//! Zipf-like skew; the embeddings (384 numbers, as MiniLM's) are sums of
//! per-word random vectors, so cosine follows word overlap. No test asserts
//! on these timings.

use std::collections::{HashMap, HashSet};
use std::hint::black_box;
use std::time::{Duration, Instant};

use hermes::memory::bm25::{tokenize, B, K1};
use hermes::memory::{finished_run_note, MemoryWrite, RedbStore};

const DIMS: usize = 384;
const VOCABULARY: usize = 3000;
const QUERIES: usize = 50;
const K: usize = 5;

/// A small deterministic generator (xorshift64*), so runs compare.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// A word index skewed toward the frequent end, like real text.
    fn word(&mut self) -> usize {
        let u = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        ((VOCABULARY as f64).powf(u) as usize).saturating_sub(1)
    }

    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
    }
}

struct Corpus {
    words: Vec<String>,
    vectors: Vec<Vec<f32>>,
}

impl Corpus {
    fn new(rng: &mut Rng) -> Self {
        let words = (0..VOCABULARY)
            .map(|i| {
                let letters: String = (0..4 + rng.below(5))
                    .map(|_| (b'a' + rng.below(26) as u8) as char)
                    .collect();
                format!("{letters}{i}")
            })
            .collect();
        let vectors = (0..VOCABULARY)
            .map(|_| (0..DIMS).map(|_| rng.unit()).collect())
            .collect();
        Self { words, vectors }
    }

    fn sentence(&self, rng: &mut Rng, len: usize) -> (String, Vec<f32>) {
        let picked: Vec<usize> = (0..len).map(|_| rng.word()).collect();
        let text = picked
            .iter()
            .map(|&w| self.words[w].as_str())
            .collect::<Vec<_>>()
            .join(" ");
        let mut vector = vec![0.0; DIMS];
        for &w in &picked {
            for (sum, x) in vector.iter_mut().zip(&self.vectors[w]) {
                *sum += x;
            }
        }
        (text, vector)
    }

    fn write(&self, rng: &mut Rng) -> MemoryWrite {
        let (goal, _) = self.sentence(rng, 8);
        let (result, vector) = self.sentence(rng, 25);
        let (evidence, _) = self.sentence(rng, 15);
        MemoryWrite::new(finished_run_note(&goal, &result, &[evidence]), goal)
            .with_embedding(vector)
    }
}

fn fill(dir: &std::path::Path, name: &str, corpus: &Corpus, n: usize) -> RedbStore {
    let store = RedbStore::open(dir.join(name)).expect("open the store");
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let writes: Vec<MemoryWrite> = (0..n).map(|_| corpus.write(&mut rng)).collect();
    for batch in writes.chunks(1000) {
        store
            .remember_all_blocking(batch.to_vec())
            .expect("write a batch");
    }
    store
}

/// The median time of `f` over `rounds` passes of every query.
fn median(
    rounds: usize,
    queries: &[(String, Vec<f32>)],
    mut f: impl FnMut(&str, &[f32]),
) -> Duration {
    let mut times = Vec::with_capacity(rounds * queries.len());
    for _ in 0..rounds {
        for (text, vector) in queries {
            let started = Instant::now();
            f(text, vector);
            times.push(started.elapsed());
        }
    }
    times.sort();
    times[times.len() / 2]
}

/// BM25 top-k the way a store without an index would: tokenise every text
/// and count document frequencies for each query.
fn naive_bm25(texts: &[String], query: &str, k: usize) -> Vec<(usize, f32)> {
    let docs: Vec<Vec<String>> = texts.iter().map(|t| tokenize(t)).collect();
    let terms: HashSet<String> = tokenize(query).into_iter().collect();
    let n = docs.len() as f32;
    let avg = docs.iter().map(Vec::len).sum::<usize>() as f32 / n;
    let df: HashMap<&String, f32> = terms
        .iter()
        .map(|t| (t, docs.iter().filter(|d| d.contains(t)).count() as f32))
        .collect();
    let mut scored: Vec<(usize, f32)> = docs
        .iter()
        .enumerate()
        .map(|(i, doc)| {
            let score = terms
                .iter()
                .map(|t| {
                    let tf = doc.iter().filter(|w| *w == t).count() as f32;
                    let idf = (1.0 + (n - df[t] + 0.5) / (df[t] + 0.5)).ln();
                    idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * doc.len() as f32 / avg))
                })
                .sum();
            (i, score)
        })
        .filter(|&(_, s)| s > 0.0)
        .collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1));
    scored.truncate(k);
    scored
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut rng = Rng(42);
    let corpus = Corpus::new(&mut rng);

    let started = Instant::now();
    let big = fill(dir.path(), "big.redb", &corpus, 10_000);
    let fill_time = started.elapsed();
    let small = fill(dir.path(), "small.redb", &corpus, 1_000);
    println!(
        "filled 10,000 entries in {:.1} s ({} live; batches of 1,000, one commit each)",
        fill_time.as_secs_f64(),
        big.len()
    );

    let mut query_rng = Rng(7);
    let queries: Vec<(String, Vec<f32>)> = (0..QUERIES)
        .map(|_| corpus.sentence(&mut query_rng, 4))
        .collect();

    let recall = median(10, &queries, |q, _| {
        black_box(big.recall_blocking(q, None, K).expect("recall"));
    });
    let hybrid = median(10, &queries, |q, v| {
        black_box(big.recall_blocking(q, Some(v), K).expect("recall"));
    });
    let search = median(10, &queries, |q, _| {
        black_box(big.search_blocking(q, None, K).expect("search"));
    });
    let small_recall = median(10, &queries, |q, _| {
        black_box(small.recall_blocking(q, None, K).expect("recall"));
    });
    let texts: Vec<String> = big.list_blocking().into_iter().map(|e| e.text).collect();
    let naive = median(1, &queries[..10], |q, _| {
        black_box(naive_bm25(&texts, q, K));
    });

    println!("median over {QUERIES} queries of 4 words, k = {K}:");
    println!(
        "  recall, 10,000 entries, keywords (BM25 index):         {:>8.3} ms",
        ms(recall)
    );
    println!(
        "  recall, 10,000 entries, keywords + {DIMS}-d cosine (RRF): {:>8.3} ms",
        ms(hybrid)
    );
    println!(
        "  search, 10,000 entries, keywords, no hit recorded:      {:>8.3} ms",
        ms(search)
    );
    println!(
        "baseline: naive scan, BM25 recomputed over 10,000 texts: {:>8.3} ms  (the index is {:.0}x faster)",
        ms(naive),
        naive.as_secs_f64() / recall.as_secs_f64()
    );
    println!(
        "baseline: recall, 1,000 entries, keywords:               {:>8.3} ms  (10x the entries cost {:.1}x)",
        ms(small_recall),
        recall.as_secs_f64() / small_recall.as_secs_f64()
    );
}
