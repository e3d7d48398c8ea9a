//! Products by Q4_K and Q6_K weights on AVX-512 VNNI or AVX2, from tiles
//! that keep the weights as compact as the file has them.
//!
//! candle 0.11 multiplies these formats on such CPUs with tiles of 16 rows
//! (one `vpdpbusd` gives 16 outputs for 4 inputs on AVX-512 VNNI; two
//! halves of 8 rows on AVX2), but it widens each
//! row's scales to `f32` per sub-block and Q6_K's 6-bit values to bytes:
//! 6.0 bits a weight for Q4_K (the file: 4.5) and 10.0 for Q6_K (6.56),
//! kept beside the file's own copy. A decode step reads every weight once,
//! so it runs at the speed memory hands them over, and those extra bits
//! were a third more to read (1.37 GB a token for Qwen2.5-1.5B Q4_K_M
//! against the file's 0.98) and two copies of the model in memory.
//!
//! The tiles here keep candle's order of values (so the same instructions
//! multiply them) but the file's own 6-bit scales and mins as bytes and
//! Q6_K's top two bits packed four to a byte (for AVX2, spread over the
//! top bits of bytes that hold whole values, [`TileQ6KSix`]): 4.75 and
//! 6.63 bits a weight.
//! Scales are widened in registers, as candle widened them at load, with
//! the same `f32` operations in the same order: every product is the one
//! candle's kernel gives, bit for bit (the tests hold it to that), so no
//! model's path moves. As with candle's tiles, a row's result does not
//! depend on the rows multiplied beside it (what a repeatable path needs,
//! EVALS.md section 44); unlike them, one row takes the same kernel as
//! several, so a lone Q6_K row no longer has to be multiplied twice.

use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};

use super::qwen2::Result;

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
mod pack;
mod quantize;

use pack::{pack_q4k, pack_q6k, pack_q6k_six};
use quantize::quantize;

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
///
/// In every tile the scales come before the values: a kernel reads a
/// tile from its first byte to its last, so the memory it streams is read
/// in order (with the scales last, each tile began with a jump to its end
/// and back, and a decode step on AVX2 took about a third longer).
#[repr(C, align(64))]
struct TileQ4K {
    d: [f32; TILE_N],
    dmin: [f32; TILE_N],
    /// 6-bit scale of each sub-block of 32 values, per row.
    scales: [[u8; TILE_N]; 8],
    /// 6-bit min of each sub-block, per row.
    mins: [[u8; TILE_N]; 8],
    /// `[k8-group (32)][row (16)][4 bytes]`; byte `j` of a group `g` holds
    /// value `8g + j` in its low nibble and `8g + j + 4` in its high one.
    qs: [u8; QK_K / 8 * TILE_N * 4],
}

/// One superblock of 16 Q6_K rows (values `v - 32`, `v` in 0..64).
#[repr(C, align(64))]
struct TileQ6K {
    d: [f32; TILE_N],
    /// Signed scale of each sub-block of 16 values, per row.
    scales: [[i8; TILE_N]; 16],
    /// Low 4 bits, laid out as [`TileQ4K::qs`].
    low: [u8; QK_K / 8 * TILE_N * 4],
    /// High 2 bits: `[k16-group (16)][row (16)][4 bytes]`; byte `j` of a
    /// group `G` holds those of values `16G + j`, `+ 4`, `+ 8`, `+ 12`
    /// in its bit pairs from the lowest.
    high: [u8; QK_K / 16 * TILE_N * 4],
}

impl TileQ4K {
    fn zeroed() -> Self {
        Self {
            qs: [0; QK_K / 8 * TILE_N * 4],
            scales: [[0; TILE_N]; 8],
            mins: [[0; TILE_N]; 8],
            d: [0.0; TILE_N],
            dmin: [0.0; TILE_N],
        }
    }
}

/// One superblock of 16 Q6_K rows for the AVX2 kernel, where putting a
/// value's top two bits back beside its low four cost more instructions
/// than the products themselves: here three of every four values lie
/// whole in a byte, and the fourth is spread over those bytes' top bits
/// (the same 6.63 bits a weight as [`TileQ6K`]).
#[repr(C, align(64))]
struct TileQ6KSix {
    d: [f32; TILE_N],
    /// Signed scale of each sub-block of 16 values, per row.
    scales: [[i8; TILE_N]; 16],
    /// `[k16-group (16)][plane (3)][row (16)][4 bytes]`; byte `j` of plane
    /// `p` of group `G` holds value `16G + 4p + j` in its low six bits
    /// and bits `2p..2p + 2` of value `16G + 12 + j` in its top two.
    six: [u8; QK_K / 16 * 3 * TILE_N * 4],
}

/// A weight matrix in tiles.
enum Packed {
    Q4K(Vec<TileQ4K>),
    /// Q6_K for the AVX-512 kernel.
    Q6K(Vec<TileQ6K>),
    /// Q6_K for the AVX2 kernel.
    Q6KSix(Vec<TileQ6KSix>),
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

/// The instruction set the tiles' kernel runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Level {
    /// AVX-512 F, BW and VNNI: 16 rows in one register.
    Avx512Vnni,
    /// AVX2 and FMA: 16 rows in two registers of 8.
    Avx2,
}

/// The widest kernel this CPU runs, checked once (`None`: no tiles, as
/// on CPUs without AVX2 and FMA or other architectures, where candle's
/// own product is used).
pub(super) fn level() -> Option<Level> {
    #[cfg(target_arch = "x86_64")]
    {
        static LEVEL: std::sync::OnceLock<Option<Level>> = std::sync::OnceLock::new();
        *LEVEL.get_or_init(|| {
            if is_x86_feature_detected!("avx512f")
                && is_x86_feature_detected!("avx512bw")
                && is_x86_feature_detected!("avx512vnni")
            {
                Some(Level::Avx512Vnni)
            } else if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
                Some(Level::Avx2)
            } else {
                None
            }
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    None
}

/// Whether this CPU runs the tiles' kernel (see [`level`]).
#[cfg(test)]
pub(super) fn available() -> bool {
    level().is_some()
}

impl Tiled {
    /// `weight` in tiles, or `None` when this CPU or this weight does not
    /// take them (another format, rows not a multiple of 16, columns not
    /// of 256).
    pub(super) fn new(weight: &QTensor) -> Result<Option<Self>> {
        let (n, k) = weight.shape().dims2()?;
        let fits = n % TILE_N == 0 && k % QK_K == 0 && k > 0;
        let Some(level) = level().filter(|_| fits) else {
            return Ok(None);
        };
        let data = weight.data()?;
        let packed = match (weight.dtype(), level) {
            (GgmlDType::Q4K, _) => Packed::Q4K(pack_q4k(&data, n, k)?),
            (GgmlDType::Q6K, Level::Avx512Vnni) => Packed::Q6K(pack_q6k(&data, n, k)?),
            (GgmlDType::Q6K, Level::Avx2) => Packed::Q6KSix(pack_q6k_six(&data, n, k)?),
            _ => return Ok(None),
        };
        Ok(Some(Self { packed, n, k }))
    }

    /// `x` (`[rows, k]`, `f32`) times the weight: `[rows, n]`.
    pub(super) fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let [out] = Self::forward_many([self], x)?;
        Ok(out)
    }

    /// `x` times each of `weights` (all `k` wide): each product as
    /// [`Tiled::forward`] gives it, bit for bit, with `x` quantized once
    /// and every weight's tiles shared out in one parallel region (q, k
    /// and v of a layer; gate and up).
    pub(super) fn forward_many<const N: usize>(
        weights: [&Tiled; N],
        x: &Tensor,
    ) -> Result<[Tensor; N]> {
        let (m, k) = x.dims2()?;
        if let Some(w) = weights.iter().find(|w| w.k != k) {
            candle_core::bail!("a product of {k} inputs by a weight of {}", w.k);
        }
        let x = x.contiguous()?;
        let values = x.flatten_all()?.to_vec1::<f32>()?;
        let kb = k / QK_K;
        let acts: Vec<Q8K> = values.chunks_exact(QK_K).map(quantize).collect();
        let mut outs: [Vec<f32>; N] = std::array::from_fn(|i| vec![0f32; m * weights[i].n]);
        let m_units = m.div_ceil(MAX_MT);
        // Weight i's units start at firsts[i]; its output at dsts[i].
        let mut firsts = [0usize; N];
        let mut total = 0;
        for (first, w) in firsts.iter_mut().zip(&weights) {
            *first = total;
            total += w.n / TILE_N * m_units;
        }
        let dsts: [usize; N] = std::array::from_fn(|i| outs[i].as_mut_ptr() as usize);
        let acts = &acts;
        let level = level();
        candle_core::utils::barrier_pool().execute_chunked(total, |units| {
            for unit in units {
                let i = firsts.iter().rposition(|&f| unit >= f).unwrap_or(0);
                let (w, local) = (weights[i], unit - firsts[i]);
                let nt = local / m_units;
                let m0 = local % m_units * MAX_MT;
                let mt = (m - m0).min(MAX_MT);
                let rows: [&[Q8K]; MAX_MT] = std::array::from_fn(|r| {
                    let row = (m0 + r).min(m - 1);
                    &acts[row * kb..(row + 1) * kb]
                });
                let dst = dsts[i] as *mut f32;
                // SAFETY: `level()` found the kernel's instructions when
                // the tiles were made; each unit writes only its own rows
                // `m0..m0 + mt` of its own columns `nt * 16..` of its own
                // weight's output.
                #[cfg(target_arch = "x86_64")]
                #[allow(unsafe_code)]
                unsafe {
                    match level {
                        Some(Level::Avx512Vnni) => {
                            avx512::unit(&w.packed, &rows[..mt], kb, nt, dst, w.n, m0)
                        }
                        Some(Level::Avx2) => {
                            avx2::unit(&w.packed, &rows[..mt], kb, nt, dst, w.n, m0)
                        }
                        None => unreachable!("tiles are made only where a kernel runs"),
                    }
                }
                #[cfg(not(target_arch = "x86_64"))]
                let _ = (w, rows, kb, nt, dst, mt, level);
            }
        });
        let mut out = Vec::with_capacity(N);
        for (values, w) in outs.into_iter().zip(&weights) {
            out.push(Tensor::from_vec(values, (m, w.n), &Device::Cpu)?);
        }
        Ok(out
            .try_into()
            .unwrap_or_else(|_| unreachable!("one output per weight")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::native::test_util::{max_abs, quantized, random, rows};
    use candle_core::quantized::QMatMul;
    use candle_core::Module;

    #[test]
    fn tiles_multiply_as_candle_does_bit_for_bit_and_a_row_alike_alone() {
        if !available() {
            eprintln!("this CPU has neither AVX2 nor AVX-512 VNNI: the tiles are not used here");
            return;
        }
        let values = random(48, 512);
        for dtype in [GgmlDType::Q4K, GgmlDType::Q6K] {
            let weight = QTensor::quantize(&values, dtype).unwrap();
            let tiled = Tiled::new(&weight).unwrap().expect("tiles on this CPU");
            let candle = QMatMul::from_qtensor(weight).unwrap();
            // Several rows: candle's own tiles (one row of Q6_K it takes
            // elsewhere), and every row alone is the same row.
            for m in [2, 3, 4, 5, 9] {
                let x = random(m, 512);
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
    fn weights_multiplied_together_give_each_product_bit_for_bit() {
        if !available() {
            return;
        }
        let weight =
            |rows: usize, dtype| Tiled::new(&quantized(rows, 512, dtype)).unwrap().unwrap();
        let (q, k, v) = (
            weight(64, GgmlDType::Q4K),
            weight(16, GgmlDType::Q4K),
            weight(32, GgmlDType::Q6K),
        );
        for m in [1, 3, 6] {
            let x = random(m, 512);
            let together = Tiled::forward_many([&q, &k, &v], &x).unwrap();
            for (out, w) in together.iter().zip([&q, &k, &v]) {
                assert_eq!(rows(out), rows(&w.forward(&x).unwrap()), "{m} rows");
            }
        }
        let narrow = Tiled::new(&quantized(16, 256, GgmlDType::Q4K))
            .unwrap()
            .unwrap();
        let x = random(1, 512);
        let err = Tiled::forward_many([&q, &narrow], &x)
            .unwrap_err()
            .to_string();
        assert!(err.contains("512 inputs by a weight of 256"), "{err}");
    }

    #[test]
    fn products_are_close_to_the_dequantized_weights() {
        if !available() {
            return;
        }
        let cpu = Device::Cpu;
        let (values, x) = (random(32, 768), random(3, 768));
        for dtype in [GgmlDType::Q4K, GgmlDType::Q6K] {
            let weight = QTensor::quantize(&values, dtype).unwrap();
            let exact = x
                .matmul(&weight.dequantize(&cpu).unwrap().t().unwrap())
                .unwrap();
            let ours = Tiled::new(&weight).unwrap().unwrap().forward(&x).unwrap();
            let scale = max_abs(&exact);
            let moved = max_abs(&(ours - &exact).unwrap());
            assert!(moved <= 0.02 * scale, "{dtype:?}: moved {moved} of {scale}");
        }
    }

    #[test]
    fn weights_the_tiles_do_not_take_are_left_to_candle() {
        let q4k = quantized(24, 256, GgmlDType::Q4K);
        assert!(
            Tiled::new(&q4k).unwrap().is_none(),
            "24 rows are not whole tiles"
        );
        let q8 = quantized(32, 256, GgmlDType::Q8_0);
        assert!(Tiled::new(&q8).unwrap().is_none(), "Q8_0 is candle's");
    }
}
