//! The tiles' products on AVX2 with FMA (CPUs without AVX-512 VNNI, as
//! many cloud AMD EPYCs are): candle's `q4k_tile_avx2` and
//! `q6k_tile_avx2`, the same `f32` operations in the same order, with the
//! compact scales widened in registers, and Q6_K's values in a layout
//! of their own ([`super::TileQ6KSix`]). The integer dot products are
//! summed in another grouping than candle's (16-bit sums of up to four
//! `vpmaddubsw` before one `vpmaddwd`, where candle widens each): integer
//! sums are exact and
//! none of these can overflow (the bounds are below), so every product is
//! candle's, bit for bit, with about half the integer instructions.
//! Reached only after [`super::level`] found AVX2 and FMA.
#![allow(unsafe_code)]
// A half `h` indexes each row's accumulators and the tile's scales
// together, as candle's kernel does.
#![allow(clippy::needless_range_loop)]

use core::arch::x86_64::*;

use super::{Packed, TileQ4K, TileQ6KSix, MAX_MT, Q8K, TILE_N};

/// Activation row `act`'s four values from `off`, in every 32-bit lane.
#[inline(always)]
unsafe fn bcast4(act: &Q8K, off: usize) -> __m256i {
    _mm256_set1_epi32(std::ptr::read_unaligned(
        act.qs.as_ptr().add(off) as *const i32
    ))
}

/// 8 bytes widened to 8 `f32` lanes (`signed`: as `i8`).
#[inline(always)]
unsafe fn widen(bytes: *const u8, signed: bool) -> __m256 {
    let b = _mm_loadl_epi64(bytes as *const __m128i);
    let wide = if signed {
        _mm256_cvtepi8_epi32(b)
    } else {
        _mm256_cvtepu8_epi32(b)
    };
    _mm256_cvtepi32_ps(wide)
}

/// Half `h` (rows `8h..8h + 8`) of group `group` of a tile's bytes laid
/// out `[group][row (16)][4 bytes]`.
#[inline(always)]
unsafe fn half_group(bytes: *const u8, group: usize, h: usize) -> __m256i {
    _mm256_loadu_si256(bytes.add(group * TILE_N * 4 + h * 32) as *const __m256i)
}

/// Pairs of unsigned weights times signed activations, summed in 16 bits
/// (`vpmaddubsw`; exact while each pair stays within `i16`).
#[inline(always)]
unsafe fn pairs(w: __m256i, a: __m256i) -> __m256i {
    _mm256_maddubs_epi16(w, a)
}

/// 16-bit sums widened to 32 bits, neighbours added (`vpmaddwd` by 1).
#[inline(always)]
unsafe fn widen16(sums16: __m256i) -> __m256i {
    _mm256_madd_epi16(sums16, _mm256_set1_epi16(1))
}

/// 8 rows' `f32` values from `p` and 8 more from `p + 8` (a tile's 16).
#[inline(always)]
unsafe fn halves(p: *const f32) -> [__m256; 2] {
    [_mm256_loadu_ps(p), _mm256_loadu_ps(p.add(8))]
}

/// The products of tile column `nt` with `rows` (each `kb`
/// superblocks), written to `dst` rows `m0..` at columns `nt * 16..`.
///
/// # Safety
/// The CPU has AVX2 and FMA; `dst` holds `(m0 + rows) × n` values and no
/// other thread writes these.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn unit(
    packed: &Packed,
    rows: &[&[Q8K]],
    kb: usize,
    nt: usize,
    dst: *mut f32,
    n: usize,
    m0: usize,
) {
    // One body per row count: with the count known, each row's sums stay
    // in registers (with a loop over a slice they went through the stack
    // at every step, and a lone decode row paid for it).
    match *rows {
        [a] => rows_of::<1>(packed, [a], kb, nt, dst, n, m0),
        [a, b] => rows_of::<2>(packed, [a, b], kb, nt, dst, n, m0),
        [a, b, c] => rows_of::<3>(packed, [a, b, c], kb, nt, dst, n, m0),
        [a, b, c, d] => rows_of::<4>(packed, [a, b, c, d], kb, nt, dst, n, m0),
        _ => unreachable!("at most {MAX_MT} rows a unit"),
    }
}

/// [`unit`] for exactly `M` rows.
#[target_feature(enable = "avx2,fma")]
unsafe fn rows_of<const M: usize>(
    packed: &Packed,
    rows: [&[Q8K]; M],
    kb: usize,
    nt: usize,
    dst: *mut f32,
    n: usize,
    m0: usize,
) {
    let mut acc = [[_mm256_setzero_ps(); 2]; M];
    for b in 0..kb {
        let acts: [&Q8K; M] = std::array::from_fn(|m| &rows[m][b]);
        match packed {
            Packed::Q4K(tiles) => q4k(&tiles[nt * kb + b], &acts, &mut acc),
            Packed::Q6KSix(tiles) => q6k(&tiles[nt * kb + b], &acts, &mut acc),
            Packed::Q6K(_) => unreachable!("Q6_K tiles of two parts are packed for AVX-512 only"),
        }
    }
    for (i, row) in acc.iter().enumerate() {
        let at = dst.add((m0 + i) * n + nt * TILE_N);
        _mm256_storeu_ps(at, row[0]);
        _mm256_storeu_ps(at.add(8), row[1]);
    }
}

/// One Q4_K superblock tile against each activation row: candle's
/// `q4k_tile_avx2`. A sub-block's 32 values go into one 16-bit sum per
/// pair of lanes: 4 weights of at most 15 times activations of at most
/// 128 in size, twice per group, over 4 groups: at most 30,720 < 32,767.
#[inline(always)]
unsafe fn q4k<const M: usize>(tile: &TileQ4K, acts: &[&Q8K; M], acc: &mut [[__m256; 2]; M]) {
    let mask = _mm256_set1_epi8(0x0F);
    let d = halves(tile.d.as_ptr());
    let dmin = halves(tile.dmin.as_ptr());
    for sub in 0..8 {
        let mut sums16 = [[_mm256_setzero_si256(); 2]; M];
        for g4 in 0..4 {
            let g = sub * 4 + g4;
            for h in 0..2 {
                let w = half_group(tile.qs.as_ptr(), g, h);
                let lo = _mm256_and_si256(w, mask);
                let hi = _mm256_and_si256(_mm256_srli_epi16(w, 4), mask);
                for (m, act) in acts.iter().enumerate() {
                    let both = _mm256_add_epi16(
                        pairs(lo, bcast4(act, sub * 32 + g4 * 8)),
                        pairs(hi, bcast4(act, sub * 32 + g4 * 8 + 4)),
                    );
                    sums16[m][h] = _mm256_add_epi16(sums16[m][h], both);
                }
            }
        }
        for h in 0..2 {
            // candle's packed `d * scale` and `dmin * min`, each rounded
            // once as there.
            let scale = _mm256_mul_ps(d[h], widen(tile.scales[sub].as_ptr().add(h * 8), false));
            let min = _mm256_mul_ps(dmin[h], widen(tile.mins[sub].as_ptr().add(h * 8), false));
            for (m, act) in acts.iter().enumerate() {
                let dall = act.d;
                let f = _mm256_cvtepi32_ps(widen16(sums16[m][h]));
                acc[m][h] =
                    _mm256_fmadd_ps(f, _mm256_mul_ps(scale, _mm256_set1_ps(dall)), acc[m][h]);
                let bsum =
                    (i32::from(act.bsums[sub * 2]) + i32::from(act.bsums[sub * 2 + 1])) as f32;
                acc[m][h] = _mm256_fnmadd_ps(min, _mm256_set1_ps(dall * bsum), acc[m][h]);
            }
        }
    }
}

/// One Q6_K superblock tile against each activation row: candle's
/// `q6k_tile_avx2`. Values are at most 63, so a `vpmaddubsw` pair is at
/// most 16,128 in size and two of them still fit 16 bits: each
/// sub-block's four groups take two widenings.
///
/// candle subtracts `32 × bsum` from the `f32` sum; here it is taken from
/// the integer sum before the conversion, which is the same number: both
/// are integers below 2²⁴ in size (the sum at most 16 · 63 · 128, the
/// term 32 · 2,048), so the `f32` conversion and subtraction are exact.
#[inline(always)]
unsafe fn q6k<const M: usize>(tile: &TileQ6KSix, acts: &[&Q8K; M], acc: &mut [[__m256; 2]; M]) {
    let d = halves(tile.d.as_ptr());
    for sub in 0..16 {
        let mut isum = [[_mm256_setzero_si256(); 2]; M];
        for h in 0..2 {
            let plane = |p: usize| half_group(tile.six.as_ptr(), sub * 3 + p, h);
            let (x, y, z) = (plane(0), plane(1), plane(2));
            // Values 16·sub + 4·p + j, each 0..64, for p = 0..4; the
            // fourth from the top two bits of the other three's bytes.
            let bits = |v: __m256i, mask: i8| _mm256_and_si256(v, _mm256_set1_epi8(mask));
            let values = [
                bits(x, 0x3F),
                bits(y, 0x3F),
                bits(z, 0x3F),
                _mm256_or_si256(
                    _mm256_or_si256(
                        bits(_mm256_srli_epi16(x, 6), 0x03),
                        bits(_mm256_srli_epi16(y, 4), 0x0C),
                    ),
                    bits(_mm256_srli_epi16(z, 2), 0x30),
                ),
            ];
            for (m, act) in acts.iter().enumerate() {
                let a = sub * 16;
                let first = _mm256_add_epi16(
                    pairs(values[0], bcast4(act, a)),
                    pairs(values[1], bcast4(act, a + 4)),
                );
                let second = _mm256_add_epi16(
                    pairs(values[2], bcast4(act, a + 8)),
                    pairs(values[3], bcast4(act, a + 12)),
                );
                isum[m][h] = _mm256_add_epi32(widen16(first), widen16(second));
            }
        }
        for h in 0..2 {
            let scale = _mm256_mul_ps(
                d[h],
                widen(tile.scales[sub].as_ptr().add(h * 8) as *const u8, true),
            );
            for (m, act) in acts.iter().enumerate() {
                let offset = _mm256_set1_epi32(32 * i32::from(act.bsums[sub]));
                let f = _mm256_cvtepi32_ps(_mm256_sub_epi32(isum[m][h], offset));
                acc[m][h] =
                    _mm256_fmadd_ps(f, _mm256_mul_ps(scale, _mm256_set1_ps(act.d)), acc[m][h]);
            }
        }
    }
}
