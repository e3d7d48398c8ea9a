//! When two texts say the same thing: identical after [`normalise`], or a
//! token-set Jaccard similarity of at least [`DUPLICATE_JACCARD`], or a
//! cosine similarity of their embeddings of at least [`DUPLICATE_COSINE`].
//! A write that matches a live entry refreshes it instead of adding one.

/// Token-set Jaccard similarity at or above which two texts are the same
/// memory (9 of every 10 distinct tokens shared).
pub const DUPLICATE_JACCARD: f32 = 0.9;

/// Cosine similarity of embeddings at or above which two texts are the same
/// memory. Higher than the Jaccard bar: related but different texts often
/// embed above 0.9.
pub const DUPLICATE_COSINE: f32 = 0.95;

/// `text` lowercased, punctuation and symbols removed, whitespace collapsed
/// to single spaces: `"Fix  the Parser!"` and `"fix the parser"` are equal.
pub fn normalise(text: &str) -> String {
    let kept: String = text
        .chars()
        .filter(|c| c.is_alphanumeric() || c.is_whitespace())
        .flat_map(char::to_lowercase)
        .collect();
    kept.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Jaccard similarity of two token sets given as sizes: `shared` distinct
/// tokens in common, `a` and `b` distinct tokens in each. 0 when both are
/// empty.
pub fn jaccard(shared: usize, a: usize, b: usize) -> f32 {
    let union = a + b - shared.min(a + b);
    if union == 0 {
        0.0
    } else {
        shared as f32 / union as f32
    }
}

/// Cosine similarity of `a` and `b`; `None` when their lengths differ or
/// either is all zeros.
pub fn cosine(a: &[f32], b: &[f32]) -> Option<f32> {
    if a.len() != b.len() || a.is_empty() {
        return None;
    }
    let (norm_a, norm_b) = (norm(a), norm(b));
    if norm_a == 0.0 || norm_b == 0.0 {
        return None;
    }
    Some(dot(a, b) / (norm_a * norm_b))
}

/// The Euclidean length of `v`.
pub fn norm(v: &[f32]) -> f32 {
    dot(v, v).sqrt()
}

/// The dot product of two equally long vectors (extra items are ignored).
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let len = a.len().min(b.len());
    let (a, b) = (&a[..len], &b[..len]);
    // Eight running sums instead of one: a single float sum must be added
    // in order, which keeps the compiler from using SIMD lanes.
    let mut lanes = [0.0f32; 8];
    let (a_chunks, b_chunks) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = a_chunks
        .remainder()
        .iter()
        .zip(b_chunks.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in a_chunks.zip(b_chunks) {
        for ((lane, x), y) in lanes.iter_mut().zip(x).zip(y) {
            *lane += x * y;
        }
    }
    lanes.iter().sum::<f32>() + tail
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalise_lowercases_strips_punctuation_and_collapses_whitespace() {
        assert_eq!(normalise("  Fix  the\tParser!\n"), "fix the parser");
        assert_eq!(normalise("Fix the parser."), normalise("fix THE parser"));
        assert_eq!(normalise("notes.txt: 3 items"), "notestxt 3 items");
        assert_eq!(normalise("你好，世界！"), "你好世界");
        assert_eq!(normalise("?!"), "");
    }

    #[test]
    fn jaccard_is_shared_over_union() {
        assert_eq!(jaccard(2, 2, 2), 1.0);
        assert_eq!(jaccard(1, 2, 2), 1.0 / 3.0);
        assert_eq!(jaccard(0, 0, 0), 0.0);
        assert!(jaccard(9, 10, 9) >= DUPLICATE_JACCARD);
        assert!(jaccard(8, 10, 9) < DUPLICATE_JACCARD);
    }

    #[test]
    fn cosine_of_parallel_orthogonal_and_mismatched_vectors() {
        assert!((cosine(&[1.0, 2.0], &[2.0, 4.0]).unwrap() - 1.0).abs() < 1e-6);
        assert_eq!(cosine(&[1.0, 0.0], &[0.0, 1.0]), Some(0.0));
        assert_eq!(cosine(&[1.0], &[1.0, 0.0]), None);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 0.0]), None);
    }

    #[test]
    fn dot_matches_the_plain_sum_past_the_lane_width() {
        let a: Vec<f32> = (0..19).map(|i| i as f32).collect();
        let b: Vec<f32> = (0..19).map(|i| (i % 3) as f32).collect();
        let plain: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        assert_eq!(dot(&a, &b), plain);
        assert_eq!(dot(&a[..3], &b), dot(&a[..3], &b[..3]));
    }
}
