//! The tiles' products on AVX-512 VNNI: candle's `q4k_tile` and
//! `q6k_tile`, operation for operation, with the compact scales widened
//! in registers. With [`super::avx2`], the only unsafe code of
//! hermes-engines: SIMD intrinsics, reached only after [`super::level`]
//! found them.
#![allow(unsafe_code)]

use core::arch::x86_64::*;

use super::{Packed, TileQ4K, TileQ6K, MAX_MT, Q8K, TILE_N};

/// Activation row `m`'s four values from `off`, in every 32-bit lane.
#[inline(always)]
unsafe fn bcast4(act: &Q8K, off: usize) -> __m512i {
    _mm512_set1_epi32(std::ptr::read_unaligned(
        act.qs.as_ptr().add(off) as *const i32
    ))
}

/// 16 bytes of a tile widened to 16 `f32` lanes (`signed`: as `i8`).
#[inline(always)]
unsafe fn widen(bytes: *const u8, signed: bool) -> __m512 {
    let b = _mm_loadu_si128(bytes as *const __m128i);
    let wide = if signed {
        _mm512_cvtepi8_epi32(b)
    } else {
        _mm512_cvtepu8_epi32(b)
    };
    _mm512_cvtepi32_ps(wide)
}

/// The products of tile column `nt` with `rows` (each `kb`
/// superblocks), written to `dst` rows `m0..` at columns `nt * 16..`.
///
/// # Safety
/// The CPU has AVX-512 F, BW and VNNI; `dst` holds `(m0 + rows) × n`
/// values and no other thread writes these.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
pub(super) unsafe fn unit(
    packed: &Packed,
    rows: &[&[Q8K]],
    kb: usize,
    nt: usize,
    dst: *mut f32,
    n: usize,
    m0: usize,
) {
    let mut acc = [_mm512_setzero_ps(); MAX_MT];
    let mut acts: [&Q8K; MAX_MT] = [&rows[0][0]; MAX_MT];
    for b in 0..kb {
        for (a, row) in acts.iter_mut().zip(rows) {
            *a = &row[b];
        }
        let acts = &acts[..rows.len()];
        match packed {
            Packed::Q4K(tiles) => q4k(&tiles[nt * kb + b], acts, &mut acc),
            Packed::Q6K(tiles) => q6k(&tiles[nt * kb + b], acts, &mut acc),
            Packed::Q6KSix(_) => unreachable!("six-bit Q6_K tiles are packed for AVX2 only"),
        }
    }
    for (i, row) in acc[..rows.len()].iter().enumerate() {
        _mm512_storeu_ps(dst.add((m0 + i) * n + nt * TILE_N), *row);
    }
}

/// One Q4_K superblock tile against each activation row: candle's
/// `q4k_tile`, operation for operation, with the scales widened here.
#[inline(always)]
unsafe fn q4k(tile: &TileQ4K, acts: &[&Q8K], acc: &mut [__m512; MAX_MT]) {
    let mask = _mm512_set1_epi8(0x0F);
    let d = _mm512_loadu_ps(tile.d.as_ptr());
    let dmin = _mm512_loadu_ps(tile.dmin.as_ptr());
    for sub2 in 0..4 {
        let sa = sub2 * 2;
        let sb = sa + 1;
        let mut isum_a = [_mm512_setzero_si512(); MAX_MT];
        let mut isum_b = [_mm512_setzero_si512(); MAX_MT];
        for g4 in 0..4 {
            let ga = sa * 4 + g4;
            let gb = sb * 4 + g4;
            let wa = _mm512_loadu_si512(tile.qs.as_ptr().add(ga * TILE_N * 4) as *const _);
            let wb = _mm512_loadu_si512(tile.qs.as_ptr().add(gb * TILE_N * 4) as *const _);
            let lo_a = _mm512_and_si512(wa, mask);
            let hi_a = _mm512_and_si512(_mm512_srli_epi16(wa, 4), mask);
            let lo_b = _mm512_and_si512(wb, mask);
            let hi_b = _mm512_and_si512(_mm512_srli_epi16(wb, 4), mask);
            for (m, act) in acts.iter().enumerate() {
                isum_a[m] = _mm512_dpbusd_epi32(isum_a[m], lo_a, bcast4(act, sa * 32 + g4 * 8));
                isum_a[m] = _mm512_dpbusd_epi32(isum_a[m], hi_a, bcast4(act, sa * 32 + g4 * 8 + 4));
                isum_b[m] = _mm512_dpbusd_epi32(isum_b[m], lo_b, bcast4(act, sb * 32 + g4 * 8));
                isum_b[m] = _mm512_dpbusd_epi32(isum_b[m], hi_b, bcast4(act, sb * 32 + g4 * 8 + 4));
            }
        }
        for (sub, isum) in [(sa, &isum_a), (sb, &isum_b)] {
            // candle's packed `d * scale` and `dmin * min`, each
            // rounded once as there.
            let scale = _mm512_mul_ps(d, widen(tile.scales[sub].as_ptr(), false));
            let min = _mm512_mul_ps(dmin, widen(tile.mins[sub].as_ptr(), false));
            for (m, act) in acts.iter().enumerate() {
                let dall = act.d;
                let f = _mm512_cvtepi32_ps(isum[m]);
                acc[m] = _mm512_fmadd_ps(f, _mm512_mul_ps(scale, _mm512_set1_ps(dall)), acc[m]);
                let bsum =
                    (i32::from(act.bsums[sub * 2]) + i32::from(act.bsums[sub * 2 + 1])) as f32;
                acc[m] = _mm512_fnmadd_ps(min, _mm512_set1_ps(dall * bsum), acc[m]);
            }
        }
    }
}

/// One Q6_K superblock tile against each activation row: candle's
/// `q6k_tile`, operation for operation, with each value's top two bits
/// put back beside its low four here.
#[inline(always)]
unsafe fn q6k(tile: &TileQ6K, acts: &[&Q8K], acc: &mut [__m512; MAX_MT]) {
    let low4 = _mm512_set1_epi8(0x0F);
    let top2 = _mm512_set1_epi8(0x30);
    let d = _mm512_loadu_ps(tile.d.as_ptr());
    for sub in 0..16 {
        let high = _mm512_loadu_si512(tile.high.as_ptr().add(sub * TILE_N * 4) as *const _);
        let w0 = _mm512_loadu_si512(tile.low.as_ptr().add(2 * sub * TILE_N * 4) as *const _);
        let w1 = _mm512_loadu_si512(tile.low.as_ptr().add((2 * sub + 1) * TILE_N * 4) as *const _);
        // Values 16·sub + 4·g4 + j, each 0..64, for g4 = 0..4.
        let values = [
            _mm512_or_si512(
                _mm512_and_si512(w0, low4),
                _mm512_and_si512(_mm512_slli_epi16(high, 4), top2),
            ),
            _mm512_or_si512(
                _mm512_and_si512(_mm512_srli_epi16(w0, 4), low4),
                _mm512_and_si512(_mm512_slli_epi16(high, 2), top2),
            ),
            _mm512_or_si512(_mm512_and_si512(w1, low4), _mm512_and_si512(high, top2)),
            _mm512_or_si512(
                _mm512_and_si512(_mm512_srli_epi16(w1, 4), low4),
                _mm512_and_si512(_mm512_srli_epi16(high, 2), top2),
            ),
        ];
        let mut isum = [_mm512_setzero_si512(); MAX_MT];
        for (g4, w) in values.iter().enumerate() {
            for (m, act) in acts.iter().enumerate() {
                isum[m] = _mm512_dpbusd_epi32(isum[m], *w, bcast4(act, sub * 16 + g4 * 4));
            }
        }
        let scale = _mm512_mul_ps(d, widen(tile.scales[sub].as_ptr() as *const u8, true));
        for (m, act) in acts.iter().enumerate() {
            let dall = act.d;
            let bsum = f32::from(act.bsums[sub]);
            let f = _mm512_sub_ps(_mm512_cvtepi32_ps(isum[m]), _mm512_set1_ps(32.0 * bsum));
            acc[m] = _mm512_fmadd_ps(f, _mm512_mul_ps(scale, _mm512_set1_ps(dall)), acc[m]);
        }
    }
}
