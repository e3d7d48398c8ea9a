//! An activation row's superblocks in 8 bits (Q8_K), exactly as candle's
//! `BlockQ8K::from_float` makes them: the products must be candle's. A
//! decode step quantizes every product's input (some 380,000 values a
//! token for Qwen2.5-1.5B) on one thread while the pool's other threads
//! wait, and candle's loop calls libm's `roundf` once a value; on AVX2
//! the same values come eight at a time, rounded half away from zero as
//! `f32::round` rounds, bit for bit (the tests hold the two paths to the
//! same blocks).
#![allow(unsafe_code)]

use super::{Q8K, QK_K};

/// `xs` (one superblock, [`QK_K`] values) in 8 bits.
pub(super) fn quantize(xs: &[f32]) -> Q8K {
    #[cfg(target_arch = "x86_64")]
    if xs.len() == QK_K && is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 was found just above.
        if let Some(block) = unsafe { avx2(xs) } {
            return block;
        }
    }
    scalar(xs)
}

/// An empty block (all values zero).
fn zero() -> Q8K {
    Q8K {
        d: 0.0,
        qs: [0; QK_K],
        bsums: [0; QK_K / 16],
    }
}

/// Each 16 values' sum, as candle sums them.
fn sums(block: &mut Q8K) {
    for (sum, values) in block.bsums.iter_mut().zip(block.qs.chunks_exact(16)) {
        *sum = values.iter().map(|&v| i32::from(v)).sum::<i32>() as i16;
    }
}

/// candle's loop, value by value.
fn scalar(xs: &[f32]) -> Q8K {
    let (mut max, mut amax) = (0f32, 0f32);
    for &x in xs {
        if amax < x.abs() {
            amax = x.abs();
            max = x;
        }
    }
    let mut block = zero();
    if amax == 0.0 {
        return block;
    }
    let iscale = -127f32 / max;
    for (q, &x) in block.qs.iter_mut().zip(xs) {
        *q = (iscale * x).round().clamp(-128.0, 127.0) as i8;
    }
    sums(&mut block);
    block.d = 1.0 / iscale;
    block
}

/// [`scalar`] eight values at a time, or `None` for a block with a NaN or
/// an infinity (left to [`scalar`], whose handling of them is candle's).
///
/// # Safety
/// The CPU has AVX2; `xs` holds [`QK_K`] values.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn avx2(xs: &[f32]) -> Option<Q8K> {
    use core::arch::x86_64::*;
    let sign = _mm256_set1_ps(-0.0);
    let mut top = _mm256_setzero_ps();
    let mut unordered = _mm256_setzero_ps();
    for c in 0..QK_K / 8 {
        let x = _mm256_loadu_ps(xs.as_ptr().add(c * 8));
        unordered = _mm256_or_ps(unordered, _mm256_cmp_ps::<_CMP_UNORD_Q>(x, x));
        top = _mm256_max_ps(_mm256_andnot_ps(sign, x), top);
    }
    if _mm256_movemask_ps(unordered) != 0 {
        return None;
    }
    let mut lanes = [0f32; 8];
    _mm256_storeu_ps(lanes.as_mut_ptr(), top);
    let amax = lanes.iter().fold(0f32, |a, &b| a.max(b));
    if !amax.is_finite() {
        return None;
    }
    let mut block = zero();
    if amax == 0.0 {
        return Some(block);
    }
    // The first value of the largest size, as the scalar loop keeps it.
    let max = xs[xs.iter().position(|x| x.abs() == amax)?];
    let iscale = -127f32 / max;
    let scale = _mm256_set1_ps(iscale);
    let (half, one) = (_mm256_set1_ps(0.5), _mm256_set1_ps(1.0));
    let (low, high) = (_mm256_set1_ps(-128.0), _mm256_set1_ps(127.0));
    let order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    let rounded = |at: usize| {
        let v = _mm256_mul_ps(scale, _mm256_loadu_ps(xs.as_ptr().add(at)));
        // Half away from zero: the part cut off by truncation is exact,
        // and a half or more steps one further from zero.
        let cut = _mm256_round_ps::<{ _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC }>(v);
        let rest = _mm256_andnot_ps(sign, _mm256_sub_ps(v, cut));
        let away = _mm256_cmp_ps::<_CMP_GE_OQ>(rest, half);
        let step = _mm256_and_ps(away, _mm256_or_ps(_mm256_and_ps(v, sign), one));
        let r = _mm256_min_ps(_mm256_max_ps(_mm256_add_ps(cut, step), low), high);
        _mm256_cvttps_epi32(r)
    };
    for c in 0..QK_K / 32 {
        let at = c * 32;
        let a = _mm256_packs_epi32(rounded(at), rounded(at + 8));
        let b = _mm256_packs_epi32(rounded(at + 16), rounded(at + 24));
        let bytes = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(a, b), order);
        _mm256_storeu_si256(block.qs.as_mut_ptr().add(at) as *mut __m256i, bytes);
    }
    sums(&mut block);
    block.d = 1.0 / iscale;
    Some(block)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn same(a: &Q8K, b: &Q8K) -> bool {
        a.d.to_bits() == b.d.to_bits() && a.qs == b.qs && a.bsums == b.bsums
    }

    #[test]
    fn both_paths_give_the_same_block_bit_for_bit() {
        // A small generator of its own: values at many scales, exact
        // halves after scaling, repeated largest sizes of both signs.
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for case in 0..2000 {
            let scale = [1e-3f32, 0.1, 1.0, 37.0, 1e4][case % 5];
            let mut xs: Vec<f32> = (0..QK_K)
                .map(|_| ((next() % 20_001) as f32 / 10_000.0 - 1.0) * scale)
                .collect();
            match case % 7 {
                0 => xs[case % QK_K] = -scale * 2.0,
                1 => {
                    // Values that land on halves: -127 / max × x = k + 0.5.
                    xs[0] = -127.0;
                    for (i, x) in xs.iter_mut().enumerate().skip(1) {
                        *x = (i % 254) as f32 - 126.5;
                    }
                }
                2 => {
                    xs[3] = scale * 3.0;
                    xs[200] = -scale * 3.0;
                }
                3 => xs.iter_mut().step_by(2).for_each(|x| *x = 0.0),
                _ => {}
            }
            let (fast, slow) = (quantize(&xs), scalar(&xs));
            assert!(same(&fast, &slow), "case {case}");
        }
        let zeros = vec![0f32; QK_K];
        assert!(same(&quantize(&zeros), &scalar(&zeros)));
        for odd in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            let mut xs = vec![0.5f32; QK_K];
            xs[17] = odd;
            assert!(same(&quantize(&xs), &scalar(&xs)), "{odd}");
        }
    }
}
