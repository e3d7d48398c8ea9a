//! Reciprocal-rank fusion: one ranking from several, by rank alone, so BM25
//! scores and cosine similarities need no common scale.
//!
//! An item's fused score is the sum over the rankings that hold it of
//! `1 / (k + rank)`, rank counted from 1, with `k` = [`RRF_K`] (60, the
//! value of Cormack, Clarke and Büttcher's paper). An item in no ranking
//! gets nothing: the floor of a fused recall is "in at least one ranking",
//! and each ranking has its own floor (BM25 above zero, cosine at least
//! [`MIN_COSINE`]).

use std::collections::HashMap;
use std::hash::Hash;

/// The rank constant `k` of reciprocal-rank fusion.
pub const RRF_K: f32 = 60.0;

/// The least cosine similarity for an entry to enter the cosine ranking.
/// Below it, an entry is unrelated to the query; fusion would otherwise
/// give every embedded entry a score.
pub const MIN_COSINE: f32 = 0.3;

/// How deep each ranking goes into the fusion; items further down would add
/// under `1 / (RRF_K + FUSION_DEPTH)` each.
pub const FUSION_DEPTH: usize = 200;

/// Fuses `rankings` (each best first) into one, best first, with each
/// item's fused score. Ties keep the order in which items were first seen
/// (the first ranking first).
pub fn reciprocal_rank_fusion<T: Copy + Eq + Hash>(rankings: &[&[T]], k: f32) -> Vec<(T, f32)> {
    let mut scores: HashMap<T, (usize, f32)> = HashMap::new();
    for ranking in rankings {
        for (rank, item) in ranking.iter().enumerate() {
            let seen = scores.len();
            let slot = scores.entry(*item).or_insert((seen, 0.0));
            slot.1 += 1.0 / (k + rank as f32 + 1.0);
        }
    }
    let mut fused: Vec<(T, usize, f32)> = scores
        .into_iter()
        .map(|(item, (seen, score))| (item, seen, score))
        .collect();
    fused.sort_by(|a, b| b.2.total_cmp(&a.2).then(a.1.cmp(&b.1)));
    fused
        .into_iter()
        .map(|(item, _, score)| (item, score))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_item_high_in_both_rankings_wins() {
        let keyword = ["a", "b", "c"];
        let cosine = ["b", "d", "a"];
        let fused = reciprocal_rank_fusion(&[&keyword, &cosine], RRF_K);
        let order: Vec<&str> = fused.iter().map(|(item, _)| *item).collect();
        // b: 1/62 + 1/61; a: 1/61 + 1/63; then c (1/63) and d (1/62).
        assert_eq!(order, ["b", "a", "d", "c"]);
        assert!((fused[0].1 - (1.0 / 62.0 + 1.0 / 61.0)).abs() < 1e-6);
    }

    #[test]
    fn one_ranking_keeps_its_order_and_ties_keep_first_seen() {
        let fused = reciprocal_rank_fusion(&[&[3, 1, 2]], RRF_K);
        assert_eq!(fused.iter().map(|f| f.0).collect::<Vec<_>>(), [3, 1, 2]);
        // x is first in one list, y first in the other: a tie, x seen first.
        let fused = reciprocal_rank_fusion(&[&["x"], &["y"]], RRF_K);
        assert_eq!(fused[0].0, "x");
        assert_eq!(fused[0].1, fused[1].1);
        assert!(reciprocal_rank_fusion::<u8>(&[&[], &[]], RRF_K).is_empty());
    }

    #[test]
    fn a_smaller_k_favours_the_top_ranks_more() {
        let fused = reciprocal_rank_fusion(&[&["a", "b"]], 1.0);
        assert_eq!(fused[0].1, 0.5);
        assert!((fused[1].1 - 1.0 / 3.0).abs() < 1e-6);
    }
}
