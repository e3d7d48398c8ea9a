//! Tests of the attention kernel (`super`).

use super::*;
use crate::native::test_util::rows;

/// `[1, heads, len, dim]` random queries and `[1, kv heads, len, dim]`
/// keys and values.
fn inputs(heads: usize, kv_heads: usize, len: usize, dim: usize) -> [Tensor; 3] {
    let cpu = Device::Cpu;
    [heads, kv_heads, kv_heads].map(|h| Tensor::randn(0f32, 1.0, (1, h, len, dim), &cpu).unwrap())
}

#[test]
fn each_token_attends_alike_in_any_chunks_and_agrees_with_a_softmax_by_hand() {
    // A head size that is not a multiple of the lanes, and the two
    // that have loops of their own.
    for dim in [40, 64, 128] {
        attends_alike(dim);
    }
}

fn attends_alike(dim: usize) {
    // Two kv heads of three query heads each, 21 positions.
    let (heads, kv_heads, len) = (6, 2, 21);
    let [q, k, v] = inputs(heads, kv_heads, len, dim);
    let whole = rows(&attend(&q, &k, &v, 0).unwrap());
    // The same tokens in chunks 1, 7, 13: each chunk sees every key
    // before it (the cached prefix) and its own.
    let mut chunked = Vec::new();
    for (start, n) in [(0, 1), (1, 7), (8, 13)] {
        let chunk_q = q.narrow(2, start, n).unwrap();
        let seen = start + n;
        let (keys, values) = (k.narrow(2, 0, seen).unwrap(), v.narrow(2, 0, seen).unwrap());
        chunked.extend(rows(&attend(&chunk_q, &keys, &values, start).unwrap()));
    }
    assert_eq!(chunked, whole, "bit for bit in any chunks");
    // Keys held beyond what a token may see change nothing.
    let early = rows(&attend(&q.narrow(2, 0, 5).unwrap(), &k, &v, 0).unwrap());
    assert_eq!(early, whole[..5]);

    let (q, k, v) = (
        q.squeeze(0).unwrap().to_vec3::<f32>().unwrap(),
        k.squeeze(0).unwrap().to_vec3::<f32>().unwrap(),
        v.squeeze(0).unwrap().to_vec3::<f32>().unwrap(),
    );
    for (token, out) in whole.iter().enumerate() {
        for head in 0..heads {
            let kv = head / (heads / kv_heads);
            let query = &q[head][token];
            let s: Vec<f32> = (0..=token)
                .map(|j| {
                    (0..dim).map(|d| query[d] * k[kv][j][d]).sum::<f32>() / (dim as f32).sqrt()
                })
                .collect();
            let top = s.iter().cloned().fold(f32::MIN, f32::max);
            let e: Vec<f32> = s.iter().map(|x| (x - top).exp()).collect();
            let total: f32 = e.iter().sum();
            for d in 0..dim {
                let expected: f32 = (0..=token).map(|j| e[j] / total * v[kv][j][d]).sum();
                let got = out[head * dim + d];
                assert!(
                    (got - expected).abs() < 1e-4,
                    "token {token} head {head} [{d}]: {got} vs {expected}"
                );
            }
        }
    }
}

#[test]
fn the_heads_read_a_kv_head_together_or_apart_with_the_same_bits() {
    // Qwen2.5-1.5B's shape (six query heads per kv head), 150 keys:
    // tiles that end inside and at the end of the whole blocks, and a
    // tail after them.
    let (heads, kv_heads, len) = (12, 2, 150);
    for dim in [40, 128] {
        let [q, k, v] = inputs(heads, kv_heads, len, dim);
        let one = |n: usize, threads: usize, tile: usize| {
            let position = len - n;
            rows(
                &attend_in(
                    &q.narrow(2, position, n).unwrap(),
                    &k,
                    &v,
                    position,
                    threads,
                    tile,
                )
                .unwrap(),
            )
        };
        // One head per unit, every key in one tile: each head alone.
        let alone = one(1, 12, 1 << 20);
        for (threads, tile) in [(1, 64), (2, 64), (2, 4), (3, 8), (5, 20), (64, 64)] {
            assert_eq!(
                one(1, threads, tile),
                alone,
                "dim {dim}, {threads} threads, tiles of {tile}"
            );
        }
        let alone = one(7, 84, 1 << 20);
        assert_eq!(one(7, 2, 64), alone, "dim {dim}, 7 tokens");
    }
    // A decode step of Qwen2.5-1.5B on two threads: a unit per kv head.
    assert_eq!(Split::new(2, 6, 2), Split { parts: 1, heads: 6 });
    assert_eq!(Split::new(1, 6, 1), Split { parts: 1, heads: 6 });
    assert_eq!(Split::new(1, 6, 2), Split { parts: 2, heads: 3 });
    assert_eq!(Split::new(1, 6, 4), Split { parts: 3, heads: 2 });
    assert_eq!(Split::new(2, 6, 5), Split { parts: 3, heads: 2 });
    assert_eq!(Split::new(1, 6, 16), Split { parts: 6, heads: 1 });
    assert_eq!(Split::new(1, 1, 8), Split { parts: 1, heads: 1 });
}

#[test]
fn shapes_that_do_not_fit_are_refused() {
    let [q, k, v] = inputs(6, 4, 5, 8);
    let err = attend(&q, &k, &v, 0).unwrap_err().to_string();
    assert!(err.contains("6 heads over 4 kv heads"), "{err}");
    let [q, k, v] = inputs(4, 2, 5, 8);
    let err = attend(&q, &k, &v, 1).unwrap_err().to_string();
    assert!(err.contains("5 keys held for 6 tokens"), "{err}");
}
