//! Q4_K and Q6_K weights, as the GGUF file stores them, into tiles of 16
//! rows ([`TileQ4K`]; [`TileQ6K`] or [`TileQ6KSix`]), on candle's threads.

use half::f16;

use super::{TileQ4K, TileQ6K, TileQ6KSix, Q4K_BLOCK, Q6K_BLOCK, QK_K, TILE_N};
use crate::native::qwen2::Result;

/// `make(0..count)` in order, made on as many threads as candle's pool
/// has, each a contiguous share (packing the 1.5B model on one thread
/// added a second to every load).
fn in_parallel<T: Send>(count: usize, zero: fn() -> T, make: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let mut out: Vec<T> = (0..count).map(|_| zero()).collect();
    let share = count
        .div_ceil(candle_core::utils::get_num_threads().max(1))
        .max(1);
    std::thread::scope(|scope| {
        for (part, slots) in out.chunks_mut(share).enumerate() {
            let make = &make;
            scope.spawn(move || {
                for (i, slot) in slots.iter_mut().enumerate() {
                    *slot = make(part * share + i);
                }
            });
        }
    });
    out
}

/// The f16 at `bytes[at..at + 2]`, widened.
fn f16_at(bytes: &[u8], at: usize) -> f32 {
    f16::from_le_bytes([bytes[at], bytes[at + 1]]).to_f32()
}

/// The blocks of `data` for a weight `[n, k]` of `block` bytes each, or
/// an error when the tensor holds another number of bytes.
fn blocks<'a>(
    data: &'a [u8],
    n: usize,
    k: usize,
    block: usize,
) -> Result<impl Fn(usize, usize) -> &'a [u8] + 'a> {
    let kb = k / QK_K;
    if data.len() != n * kb * block {
        candle_core::bail!(
            "a weight [{n}, {k}] of {} bytes, not {}",
            data.len(),
            n * kb * block
        );
    }
    Ok(move |row: usize, b: usize| &data[(row * kb + b) * block..][..block])
}

/// 6-bit scale and min `j` of a Q4_K block's 12 packed bytes.
fn scale_min_k4(j: usize, q: &[u8]) -> (u8, u8) {
    if j < 4 {
        (q[j] & 63, q[j + 4] & 63)
    } else {
        (
            (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4),
            (q[j + 4] >> 4) | ((q[j] >> 6) << 4),
        )
    }
}

pub(super) fn pack_q4k(data: &[u8], n: usize, k: usize) -> Result<Vec<TileQ4K>> {
    let block = blocks(data, n, k, Q4K_BLOCK)?;
    let kb = k / QK_K;
    Ok(in_parallel(n / TILE_N * kb, TileQ4K::zeroed, |i| {
        let (t, b) = (i / kb, i % kb);
        let mut tile = TileQ4K::zeroed();
        for r in 0..TILE_N {
            let blk = block(t * TILE_N + r, b);
            tile.d[r] = f16_at(blk, 0);
            tile.dmin[r] = f16_at(blk, 2);
            let (packed_scales, qs) = (&blk[4..16], &blk[16..]);
            for sub in 0..8 {
                let (scale, min) = scale_min_k4(sub, packed_scales);
                tile.scales[sub][r] = scale;
                tile.mins[sub][r] = min;
            }
            // 32-byte chunk c: values 64c.. in the low nibbles,
            // 64c + 32.. in the high ones.
            let value = |i: usize| {
                let byte = qs[i / 64 * 32 + i % 32];
                if i % 64 < 32 {
                    byte & 0x0F
                } else {
                    byte >> 4
                }
            };
            for g in 0..QK_K / 8 {
                for j in 0..4 {
                    tile.qs[(g * TILE_N + r) * 4 + j] =
                        value(g * 8 + j) | (value(g * 8 + j + 4) << 4);
                }
            }
        }
        tile
    }))
}

/// The 256 values of a Q6_K block in order, each 0..64 (the weight's
/// quantized value plus 32).
fn q6k_values(blk: &[u8]) -> [u8; QK_K] {
    let (ql, qh) = (&blk[..128], &blk[128..192]);
    let mut values = [0u8; QK_K];
    // Each 128-value half: ql 64 bytes, qh 32 bytes.
    for h in 0..2 {
        let (ql, qh) = (&ql[h * 64..], &qh[h * 32..]);
        let v = &mut values[h * 128..];
        for j in 0..32 {
            v[j] = (ql[j] & 0x0F) | ((qh[j] & 3) << 4);
            v[j + 32] = (ql[j + 32] & 0x0F) | (((qh[j] >> 2) & 3) << 4);
            v[j + 64] = (ql[j] >> 4) | (((qh[j] >> 4) & 3) << 4);
            v[j + 96] = (ql[j + 32] >> 4) | (((qh[j] >> 6) & 3) << 4);
        }
    }
    values
}

/// What both Q6_K layouts hold alike: each row's 16 signed sub-block
/// scales and its `d`, filled by [`pack_q6k_with`] for either.
trait Q6KTile: Send {
    /// A tile of zeros, to be filled.
    fn zeroed() -> Self;
    /// The tile's scales and `d`.
    fn header(&mut self) -> (&mut [[i8; TILE_N]; 16], &mut [f32; TILE_N]);
}

impl Q6KTile for TileQ6K {
    fn zeroed() -> Self {
        Self {
            d: [0.0; TILE_N],
            scales: [[0; TILE_N]; 16],
            low: [0; QK_K / 8 * TILE_N * 4],
            high: [0; QK_K / 16 * TILE_N * 4],
        }
    }
    fn header(&mut self) -> (&mut [[i8; TILE_N]; 16], &mut [f32; TILE_N]) {
        (&mut self.scales, &mut self.d)
    }
}

impl Q6KTile for TileQ6KSix {
    fn zeroed() -> Self {
        Self {
            d: [0.0; TILE_N],
            scales: [[0; TILE_N]; 16],
            six: [0; QK_K / 16 * 3 * TILE_N * 4],
        }
    }
    fn header(&mut self) -> (&mut [[i8; TILE_N]; 16], &mut [f32; TILE_N]) {
        (&mut self.scales, &mut self.d)
    }
}

/// Q6_K weights in tiles of layout `T`: the scales (`blk[192..208]`) and
/// `d` (`blk[208..210]`) of each row here, its values where `fill` lays
/// them out.
fn pack_q6k_with<T: Q6KTile>(
    data: &[u8],
    n: usize,
    k: usize,
    fill: impl Fn(&mut T, usize, &[u8; QK_K]) + Sync,
) -> Result<Vec<T>> {
    let block = blocks(data, n, k, Q6K_BLOCK)?;
    let kb = k / QK_K;
    Ok(in_parallel(n / TILE_N * kb, T::zeroed, |i| {
        let (t, b) = (i / kb, i % kb);
        let mut tile = T::zeroed();
        for r in 0..TILE_N {
            let blk = block(t * TILE_N + r, b);
            let (scales, d) = tile.header();
            for (sub, row) in scales.iter_mut().enumerate() {
                row[r] = blk[192 + sub] as i8;
            }
            d[r] = f16_at(blk, 208);
            fill(&mut tile, r, &q6k_values(blk));
        }
        tile
    }))
}

/// Q6_K weights in [`TileQ6K`]s (low four bits as Q4_K's, the top two
/// packed four to a byte): the AVX-512 kernel's.
pub(super) fn pack_q6k(data: &[u8], n: usize, k: usize) -> Result<Vec<TileQ6K>> {
    pack_q6k_with(data, n, k, |tile: &mut TileQ6K, r, values| {
        for g in 0..QK_K / 8 {
            for j in 0..4 {
                tile.low[(g * TILE_N + r) * 4 + j] =
                    (values[g * 8 + j] & 0x0F) | ((values[g * 8 + j + 4] & 0x0F) << 4);
            }
        }
        for g in 0..QK_K / 16 {
            for j in 0..4 {
                let top = |i: usize| values[g * 16 + i * 4 + j] >> 4;
                tile.high[(g * TILE_N + r) * 4 + j] =
                    top(0) | (top(1) << 2) | (top(2) << 4) | (top(3) << 6);
            }
        }
    })
}

/// Q6_K weights in [`TileQ6KSix`]s (three values whole in a byte each,
/// the fourth in their top bits): the AVX2 kernel's.
pub(super) fn pack_q6k_six(data: &[u8], n: usize, k: usize) -> Result<Vec<TileQ6KSix>> {
    pack_q6k_with(data, n, k, |tile: &mut TileQ6KSix, r, values| {
        for g in 0..QK_K / 16 {
            for j in 0..4 {
                let fourth = values[g * 16 + 12 + j];
                for plane in 0..3 {
                    tile.six[((g * 3 + plane) * TILE_N + r) * 4 + j] =
                        values[g * 16 + plane * 4 + j] | ((fourth >> (2 * plane)) & 3) << 6;
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::native::test_util::quantized;
    use candle_core::quantized::GgmlDType;

    /// Both Q6_K layouts hold every value, scale and `d` of the file's
    /// blocks (the AVX-512 one is otherwise tested only on such CPUs).
    #[test]
    fn both_q6k_layouts_hold_the_file_s_blocks() {
        let (n, k) = (32, 512);
        let weight = quantized(n, k, GgmlDType::Q6K);
        let data = weight.data().unwrap();
        let block = blocks(&data, n, k, Q6K_BLOCK).unwrap();
        let (two, six) = (
            pack_q6k(&data, n, k).unwrap(),
            pack_q6k_six(&data, n, k).unwrap(),
        );
        let kb = k / QK_K;
        for row in 0..n {
            for b in 0..kb {
                let (blk, i, r) = (block(row, b), row / TILE_N * kb + b, row % TILE_N);
                let (t2, t6) = (&two[i], &six[i]);
                for (sub, scale) in blk[192..208].iter().enumerate() {
                    assert_eq!(t2.scales[sub][r], *scale as i8);
                    assert_eq!(t6.scales[sub][r], *scale as i8);
                }
                assert_eq!(t2.d[r], f16_at(blk, 208));
                assert_eq!(t6.d[r], f16_at(blk, 208));
                for (v, &want) in q6k_values(blk).iter().enumerate() {
                    let (g, j) = (v / 8, v % 8);
                    let low = t2.low[(g * TILE_N + r) * 4 + j % 4] >> (4 * (j / 4)) & 0x0F;
                    let (g16, j16) = (v / 16, v % 16);
                    let top = t2.high[(g16 * TILE_N + r) * 4 + j16 % 4] >> (2 * (j16 / 4)) & 3;
                    assert_eq!(low | top << 4, want, "two-part tile, value {v}");
                    let byte =
                        |plane: usize| t6.six[((g16 * 3 + plane) * TILE_N + r) * 4 + j16 % 4];
                    let got = match j16 / 4 {
                        3 => (0..3)
                            .map(|p| (byte(p) >> 6) << (2 * p))
                            .fold(0, |a, x| a | x),
                        plane => byte(plane) & 0x3F,
                    };
                    assert_eq!(got, want, "six-bit tile, value {v}");
                }
            }
        }
    }
}
