//! Products by Q4_K and Q6_K weights on AVX-512 VNNI, from tiles that keep
//! the weights as compact as the file has them.
//!
//! candle 0.11 multiplies these formats on such CPUs with tiles of 16 rows
//! (one `vpdpbusd` gives 16 outputs for 4 inputs), but it widens each
//! row's scales to `f32` per sub-block and Q6_K's 6-bit values to bytes:
//! 6.0 bits a weight for Q4_K (the file: 4.5) and 10.0 for Q6_K (6.56),
//! kept beside the file's own copy. A decode step reads every weight once,
//! so it runs at the speed memory hands them over, and those extra bits
//! were a third more to read (1.37 GB a token for Qwen2.5-1.5B Q4_K_M
//! against the file's 0.98) and two copies of the model in memory.
//!
//! The tiles here keep candle's order of values (so the same instructions
//! multiply them) but the file's own 6-bit scales and mins as bytes and
//! Q6_K's top two bits packed four to a byte: 4.75 and 6.63 bits a weight.
//! Scales are widened in registers, as candle widened them at load, with
//! the same `f32` operations in the same order: every product is the one
//! candle's kernel gives, bit for bit (the tests hold it to that), so no
//! model's path moves. As with candle's tiles, a row's result does not
//! depend on the rows multiplied beside it (what a repeatable path needs,
//! EVALS.md section 44); unlike them, one row takes the same kernel as
//! several, so a lone Q6_K row no longer has to be multiplied twice.

use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};
use half::f16;

use super::qwen2::Result;

/// Weight rows per tile.
const TILE_N: usize = 16;
/// Values per superblock (the k-quants' block).
const QK_K: usize = 256;
/// Activation rows multiplied against one loaded tile.
const MAX_MT: usize = 4;
/// Bytes of one Q4_K block: `d`, `dmin` (f16), 12 bytes of 6-bit scales
/// and mins, 128 bytes of 4-bit values.
const Q4K_BLOCK: usize = 144;
/// Bytes of one Q6_K block: 128 bytes of low 4 bits, 64 of high 2 bits,
/// 16 signed scales, `d` (f16).
const Q6K_BLOCK: usize = 210;

/// One superblock of 16 Q4_K rows.
#[repr(C, align(64))]
struct TileQ4K {
    /// `[k8-group (32)][row (16)][4 bytes]`; byte `j` of a group `g` holds
    /// value `8g + j` in its low nibble and `8g + j + 4` in its high one.
    qs: [u8; QK_K / 8 * TILE_N * 4],
    /// 6-bit scale of each sub-block of 32 values, per row.
    scales: [[u8; TILE_N]; 8],
    /// 6-bit min of each sub-block, per row.
    mins: [[u8; TILE_N]; 8],
    d: [f32; TILE_N],
    dmin: [f32; TILE_N],
}

/// One superblock of 16 Q6_K rows (values `v - 32`, `v` in 0..64).
#[repr(C, align(64))]
struct TileQ6K {
    /// Low 4 bits, laid out as [`TileQ4K::qs`].
    low: [u8; QK_K / 8 * TILE_N * 4],
    /// High 2 bits: `[k16-group (16)][row (16)][4 bytes]`; byte `j` of a
    /// group `G` holds those of values `16G + j`, `+ 4`, `+ 8`, `+ 12`
    /// in its bit pairs from the lowest.
    high: [u8; QK_K / 16 * TILE_N * 4],
    /// Signed scale of each sub-block of 16 values, per row.
    scales: [[i8; TILE_N]; 16],
    d: [f32; TILE_N],
}

/// A weight matrix in tiles.
enum Packed {
    Q4K(Vec<TileQ4K>),
    Q6K(Vec<TileQ6K>),
}

/// A Q4_K or Q6_K weight `[n, k]` packed for [`Tiled::forward`].
pub(super) struct Tiled {
    packed: Packed,
    n: usize,
    k: usize,
}

/// An activation row's superblock in 8 bits (llama.cpp's and candle's
/// Q8_K): `qs × d`, with the sums of each 16 values.
#[derive(Clone)]
struct Q8K {
    d: f32,
    qs: [i8; QK_K],
    bsums: [i16; QK_K / 16],
}

/// Whether this CPU runs the tiles' kernel (AVX-512 with VNNI), checked
/// once.
pub(super) fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        static OK: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *OK.get_or_init(|| {
            is_x86_feature_detected!("avx512f")
                && is_x86_feature_detected!("avx512bw")
                && is_x86_feature_detected!("avx512vnni")
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

impl Tiled {
    /// `weight` in tiles, or `None` when this CPU or this weight does not
    /// take them (another format, rows not a multiple of 16, columns not
    /// of 256).
    pub(super) fn new(weight: &QTensor) -> Result<Option<Self>> {
        let (n, k) = weight.shape().dims2()?;
        let fits = n % TILE_N == 0 && k % QK_K == 0 && k > 0;
        if !available() || !fits {
            return Ok(None);
        }
        let data = weight.data()?;
        let packed = match weight.dtype() {
            GgmlDType::Q4K => Packed::Q4K(pack_q4k(&data, n, k)?),
            GgmlDType::Q6K => Packed::Q6K(pack_q6k(&data, n, k)?),
            _ => return Ok(None),
        };
        Ok(Some(Self { packed, n, k }))
    }

    /// `x` (`[rows, k]`, `f32`) times the weight: `[rows, n]`.
    pub(super) fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let (m, k) = x.dims2()?;
        if k != self.k {
            candle_core::bail!("a product of {k} inputs by a weight of {}", self.k);
        }
        let x = x.contiguous()?;
        let values = x.flatten_all()?.to_vec1::<f32>()?;
        let kb = k / QK_K;
        let acts: Vec<Q8K> = values.chunks_exact(QK_K).map(quantize).collect();
        let mut out = vec![0f32; m * self.n];
        let n_tiles = self.n / TILE_N;
        let m_units = m.div_ceil(MAX_MT);
        let dst = out.as_mut_ptr() as usize;
        let n = self.n;
        let packed = &self.packed;
        let acts = &acts;
        candle_core::utils::barrier_pool().execute_chunked(n_tiles * m_units, |units| {
            for unit in units {
                let nt = unit / m_units;
                let m0 = unit % m_units * MAX_MT;
                let mt = (m - m0).min(MAX_MT);
                let rows: [&[Q8K]; MAX_MT] = std::array::from_fn(|i| {
                    let row = (m0 + i).min(m - 1);
                    &acts[row * kb..(row + 1) * kb]
                });
                // SAFETY: `available()` held when the tiles were made;
                // each unit writes only its own rows `m0..m0 + mt` of
                // its own columns `nt * 16..`, inside `out`.
                #[cfg(target_arch = "x86_64")]
                #[allow(unsafe_code)]
                unsafe {
                    kernels::unit(packed, &rows[..mt], kb, nt, dst as *mut f32, n, m0);
                }
                #[cfg(not(target_arch = "x86_64"))]
                let _ = (packed, rows, kb, nt, dst, n, mt);
            }
        });
        Tensor::from_vec(out, (m, self.n), &Device::Cpu)
    }
}

/// One superblock of an activation row in 8 bits, exactly as candle's
/// `BlockQ8K::from_float` quantizes it (the products must be candle's).
fn quantize(xs: &[f32]) -> Q8K {
    let (mut max, mut amax) = (0f32, 0f32);
    for &x in xs {
        if amax < x.abs() {
            amax = x.abs();
            max = x;
        }
    }
    let mut block = Q8K {
        d: 0.0,
        qs: [0; QK_K],
        bsums: [0; QK_K / 16],
    };
    if amax == 0.0 {
        return block;
    }
    let iscale = -127f32 / max;
    for (q, &x) in block.qs.iter_mut().zip(xs) {
        *q = (iscale * x).round().clamp(-128.0, 127.0) as i8;
    }
    for (sum, values) in block.bsums.iter_mut().zip(block.qs.chunks_exact(16)) {
        *sum = values.iter().map(|&v| i32::from(v)).sum::<i32>() as i16;
    }
    block.d = 1.0 / iscale;
    block
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

fn pack_q4k(data: &[u8], n: usize, k: usize) -> Result<Vec<TileQ4K>> {
    let block = blocks(data, n, k, Q4K_BLOCK)?;
    let kb = k / QK_K;
    let mut out = Vec::with_capacity(n / TILE_N * kb);
    for t in 0..n / TILE_N {
        for b in 0..kb {
            let mut tile = TileQ4K {
                qs: [0; QK_K / 8 * TILE_N * 4],
                scales: [[0; TILE_N]; 8],
                mins: [[0; TILE_N]; 8],
                d: [0.0; TILE_N],
                dmin: [0.0; TILE_N],
            };
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
            out.push(tile);
        }
    }
    Ok(out)
}

fn pack_q6k(data: &[u8], n: usize, k: usize) -> Result<Vec<TileQ6K>> {
    let block = blocks(data, n, k, Q6K_BLOCK)?;
    let kb = k / QK_K;
    let mut out = Vec::with_capacity(n / TILE_N * kb);
    for t in 0..n / TILE_N {
        for b in 0..kb {
            let mut tile = TileQ6K {
                low: [0; QK_K / 8 * TILE_N * 4],
                high: [0; QK_K / 16 * TILE_N * 4],
                scales: [[0; TILE_N]; 16],
                d: [0.0; TILE_N],
            };
            for r in 0..TILE_N {
                let blk = block(t * TILE_N + r, b);
                let (ql, qh) = (&blk[..128], &blk[128..192]);
                for sub in 0..16 {
                    tile.scales[sub][r] = blk[192 + sub] as i8;
                }
                tile.d[r] = f16_at(blk, 208);
                // Each 128-value half: ql 64 bytes, qh 32 bytes.
                let mut values = [0u8; QK_K];
                for h in 0..2 {
                    let (ql, qh) = (&ql[h * 64..], &qh[h * 32..]);
                    for j in 0..32 {
                        let v = &mut values[h * 128..];
                        v[j] = (ql[j] & 0x0F) | ((qh[j] & 3) << 4);
                        v[j + 32] = (ql[j + 32] & 0x0F) | (((qh[j] >> 2) & 3) << 4);
                        v[j + 64] = (ql[j] >> 4) | (((qh[j] >> 4) & 3) << 4);
                        v[j + 96] = (ql[j + 32] >> 4) | (((qh[j] >> 6) & 3) << 4);
                    }
                }
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
            }
            out.push(tile);
        }
    }
    Ok(out)
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod kernels {
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
                    isum_a[m] =
                        _mm512_dpbusd_epi32(isum_a[m], hi_a, bcast4(act, sa * 32 + g4 * 8 + 4));
                    isum_b[m] = _mm512_dpbusd_epi32(isum_b[m], lo_b, bcast4(act, sb * 32 + g4 * 8));
                    isum_b[m] =
                        _mm512_dpbusd_epi32(isum_b[m], hi_b, bcast4(act, sb * 32 + g4 * 8 + 4));
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
            let w1 =
                _mm512_loadu_si512(tile.low.as_ptr().add((2 * sub + 1) * TILE_N * 4) as *const _);
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::quantized::QMatMul;
    use candle_core::Module;

    fn rows(t: &Tensor) -> Vec<Vec<f32>> {
        t.to_vec2::<f32>().unwrap()
    }

    #[test]
    fn tiles_multiply_as_candle_does_bit_for_bit_and_a_row_alike_alone() {
        if !available() {
            eprintln!("this CPU has no AVX-512 VNNI: the tiles are not used here");
            return;
        }
        let cpu = Device::Cpu;
        let values = Tensor::randn(0f32, 1.0, (48, 512), &cpu).unwrap();
        for dtype in [GgmlDType::Q4K, GgmlDType::Q6K] {
            let weight = QTensor::quantize(&values, dtype).unwrap();
            let tiled = Tiled::new(&weight).unwrap().expect("tiles on this CPU");
            let candle = QMatMul::from_qtensor(weight).unwrap();
            // Several rows: candle's own tiles (one row of Q6_K it takes
            // elsewhere), and every row alone is the same row.
            for m in [2, 3, 4, 5, 9] {
                let x = Tensor::randn(0f32, 1.0, (m, 512), &cpu).unwrap();
                let ours = rows(&tiled.forward(&x).unwrap());
                assert_eq!(
                    ours,
                    rows(&candle.forward(&x).unwrap()),
                    "{dtype:?}, {m} rows"
                );
                for (i, row) in ours.iter().enumerate() {
                    let alone = tiled.forward(&x.narrow(0, i, 1).unwrap()).unwrap();
                    assert_eq!(&rows(&alone)[0], row, "{dtype:?} row {i} of {m}");
                }
            }
        }
    }

    #[test]
    fn products_are_close_to_the_dequantized_weights() {
        if !available() {
            return;
        }
        let cpu = Device::Cpu;
        let values = Tensor::randn(0f32, 1.0, (32, 768), &cpu).unwrap();
        let x = Tensor::randn(0f32, 1.0, (3, 768), &cpu).unwrap();
        for dtype in [GgmlDType::Q4K, GgmlDType::Q6K] {
            let weight = QTensor::quantize(&values, dtype).unwrap();
            let exact = x
                .matmul(&weight.dequantize(&cpu).unwrap().t().unwrap())
                .unwrap();
            let ours = Tiled::new(&weight).unwrap().unwrap().forward(&x).unwrap();
            let scale = exact
                .abs()
                .unwrap()
                .max_all()
                .unwrap()
                .to_scalar::<f32>()
                .unwrap();
            let moved = (ours - &exact)
                .unwrap()
                .abs()
                .unwrap()
                .max_all()
                .unwrap()
                .to_scalar::<f32>()
                .unwrap();
            assert!(moved <= 0.02 * scale, "{dtype:?}: moved {moved} of {scale}");
        }
    }

    #[test]
    fn weights_the_tiles_do_not_take_are_left_to_candle() {
        let cpu = Device::Cpu;
        let odd_rows = Tensor::randn(0f32, 1.0, (24, 256), &cpu).unwrap();
        let q4k = QTensor::quantize(&odd_rows, GgmlDType::Q4K).unwrap();
        assert!(
            Tiled::new(&q4k).unwrap().is_none(),
            "24 rows are not whole tiles"
        );
        let square = Tensor::randn(0f32, 1.0, (32, 256), &cpu).unwrap();
        let q8 = QTensor::quantize(&square, GgmlDType::Q8_0).unwrap();
        assert!(Tiled::new(&q8).unwrap().is_none(), "Q8_0 is candle's");
    }

    #[test]
    fn a_wrong_width_is_an_error() {
        if !available() {
            return;
        }
        let cpu = Device::Cpu;
        let values = Tensor::randn(0f32, 1.0, (16, 256), &cpu).unwrap();
        let weight = QTensor::quantize(&values, GgmlDType::Q4K).unwrap();
        let tiled = Tiled::new(&weight).unwrap().unwrap();
        let x = Tensor::randn(0f32, 1.0, (1, 512), &cpu).unwrap();
        let err = tiled.forward(&x).unwrap_err().to_string();
        assert!(err.contains("512 inputs by a weight of 256"), "{err}");
    }
}
