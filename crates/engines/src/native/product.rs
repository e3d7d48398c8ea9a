//! Products by the model's quantized weights, on a vectorised kernel, with
//! each row's result independent of the other rows of the pass.
//!
//! The second property is what makes a prompt's path repeatable. The
//! engine stacks the new tokens of every active request into one product,
//! so a row shares its pass with a varying number of others (a decode step
//! of one request, of four, a prompt chunk of 64). candle 0.11 multiplies a
//! single row of Q6_K weights on x86 with a compact dot product and several
//! rows with repacked tiles, two kernels that round differently: the same
//! token then got other logits when another request was decoding beside
//! it, and at a sampling temperature above zero that moved the draws
//! (EVALS.md section 44). A lone row of such a weight is multiplied as two
//! (the row twice), so it takes the tiles' kernel as it would in company.

use std::sync::Arc;

use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
use candle_core::{Device, Module, Tensor};

use super::qwen2::Result;
use super::tiles::Tiled;

/// A product by one weight matrix.
pub(super) enum Product {
    /// Q4_K and Q6_K weights on a CPU with AVX-512 VNNI or AVX2: the
    /// weights in compact tiles of our own, the file's copy dropped
    /// ([`Tiled`]).
    Tiled(Tiled),
    /// Any other weight, or CPU: candle's product.
    Candle {
        weight: QMatMul,
        /// Whether a lone row takes another kernel than several rows (see
        /// the module).
        lone_row_kernel: bool,
    },
}

impl Product {
    /// The product by `weight`: in tiles where they take it, else
    /// candle's, requantized first when candle has only a scalar kernel
    /// for its format ([`slow_kernel`]).
    pub(super) fn new(weight: QTensor) -> Result<Self> {
        if let Some(tiled) = Tiled::new(&weight)? {
            return Ok(Self::Tiled(tiled));
        }
        let weight = if slow_kernel(weight.dtype()) {
            requantize(&weight)?
        } else {
            weight
        };
        let lone_row_kernel = lone_row_kernel(weight.dtype());
        Ok(Self::Candle {
            weight: QMatMul::from_qtensor(weight)?,
            lone_row_kernel,
        })
    }

    /// The product by a weight shared with another use (tied embeddings:
    /// the output projection is the embedding table), copied only when it
    /// must be requantized.
    pub(super) fn shared(weight: &Arc<QTensor>) -> Result<Self> {
        if let Some(tiled) = Tiled::new(weight)? {
            return Ok(Self::Tiled(tiled));
        }
        if slow_kernel(weight.dtype()) {
            return Self::new(requantize(weight)?);
        }
        Ok(Self::Candle {
            weight: QMatMul::from_arc(Arc::clone(weight))?,
            lone_row_kernel: lone_row_kernel(weight.dtype()),
        })
    }

    /// `x` (`[rows, in]`) times the weight: `[rows, out]`.
    pub(super) fn forward(&self, x: &Tensor) -> Result<Tensor> {
        match self {
            Self::Tiled(tiled) => tiled.forward(x),
            Self::Candle {
                weight,
                lone_row_kernel,
            } => {
                if *lone_row_kernel && x.dim(0)? == 1 {
                    let twice = Tensor::cat(&[x, x], 0)?;
                    return weight.forward(&twice)?.narrow(0, 0, 1);
                }
                weight.forward(x)
            }
        }
    }

    /// `x` times each weight of `products`: what [`Product::forward`] of
    /// each gives, bit for bit. Several rows (a prompt's chunk, requests
    /// decoding together) go in one pass when all weights are in tiles
    /// ([`Tiled::forward_many`]: `x` quantized once, one parallel region):
    /// the first read of a prompt ran 10–25 % faster so in 11 of 12 pairs
    /// of runs, the other equal (BENCHMARKS.md, session 51). One row goes
    /// one product after another: fused, a lone decode step was slower in
    /// 7 of 9 pairs.
    pub(super) fn together<const N: usize>(
        products: [&Product; N],
        x: &Tensor,
    ) -> Result<[Tensor; N]> {
        let tiled: Vec<&Tiled> = products
            .iter()
            .filter_map(|p| match p {
                Product::Tiled(t) => Some(t),
                Product::Candle { .. } => None,
            })
            .collect();
        if x.dim(0)? > 1 {
            if let Ok(all) = <[&Tiled; N]>::try_from(tiled) {
                return Tiled::forward_many(all, x);
            }
        }
        let mut out = Vec::with_capacity(N);
        for product in products {
            out.push(product.forward(x)?);
        }
        Ok(out
            .try_into()
            .unwrap_or_else(|_| unreachable!("one product per weight")))
    }
}

/// Whether candle multiplies by weights of `dtype` without SIMD on the
/// CPU: its legacy 4- and 5-bit formats with an offset or a fifth bit
/// (Q4_1, Q5_0, Q5_1) have only scalar dot products, an order of magnitude
/// slower than its vectorised Q4_0, Q8_0 and k-quant kernels. (Qwen's own
/// 0.5B Q4_K_M file stores most of its weights as Q5_0.)
fn slow_kernel(dtype: GgmlDType) -> bool {
    matches!(dtype, GgmlDType::Q4_1 | GgmlDType::Q5_0 | GgmlDType::Q5_1)
}

/// Whether candle takes another kernel for one row of `dtype` than for
/// several (x86: Q6_K's compact dot product against its repacked tiles).
fn lone_row_kernel(dtype: GgmlDType) -> bool {
    cfg!(target_arch = "x86_64") && dtype == GgmlDType::Q6K
}

/// `weight` in Q8_0 (8-bit values in blocks of 32, each block with its own
/// scale: finer than the 4 or 5 bits it came from, so the products move
/// only by that rounding), once at load.
fn requantize(weight: &QTensor) -> Result<QTensor> {
    let values = weight.dequantize(&Device::Cpu)?;
    QTensor::quantize(&values, GgmlDType::Q8_0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::native::test_util::{max_abs, quantized, random, rows};

    #[test]
    fn a_row_s_product_is_the_same_alone_or_among_others() {
        let values = random(64, 256);
        let input = random(5, 256);
        for dtype in [
            GgmlDType::Q4K,
            GgmlDType::Q6K,
            GgmlDType::Q8_0,
            GgmlDType::Q5_0,
        ] {
            let product = Product::new(QTensor::quantize(&values, dtype).unwrap()).unwrap();
            let together = rows(&product.forward(&input).unwrap());
            for (i, row) in together.iter().enumerate() {
                let alone = product.forward(&input.narrow(0, i, 1).unwrap()).unwrap();
                assert_eq!(&rows(&alone)[0], row, "{dtype:?} row {i}");
            }
        }
    }

    #[test]
    fn products_taken_together_are_each_product_bit_for_bit() {
        let weight = |rows: usize, dtype| Product::new(quantized(rows, 256, dtype)).unwrap();
        let (q4, q6, q8) = (
            weight(32, GgmlDType::Q4K),
            weight(16, GgmlDType::Q6K),
            weight(32, GgmlDType::Q8_0),
        );
        for m in [1, 4] {
            let x = random(m, 256);
            // All in tiles (where the CPU takes them), and one left to candle.
            let [a, b] = Product::together([&q4, &q6], &x).unwrap();
            let [c, d] = Product::together([&q4, &q8], &x).unwrap();
            assert_eq!(rows(&a), rows(&q4.forward(&x).unwrap()));
            assert_eq!(rows(&b), rows(&q6.forward(&x).unwrap()));
            assert_eq!(rows(&c), rows(&a));
            assert_eq!(rows(&d), rows(&q8.forward(&x).unwrap()));
        }
    }

    #[test]
    fn weights_in_a_scalar_only_format_are_requantized_and_multiply_as_before() {
        let values = random(64, 256);
        let input = random(3, 256);
        let q5 = || QTensor::quantize(&values, GgmlDType::Q5_0).unwrap();
        let before = QMatMul::from_qtensor(q5())
            .unwrap()
            .forward(&input)
            .unwrap();
        let fast = Product::new(q5()).unwrap();
        let Product::Candle {
            weight: QMatMul::QTensor(weight),
            ..
        } = &fast
        else {
            panic!("a quantized product");
        };
        assert_eq!(weight.dtype(), GgmlDType::Q8_0);
        let after = fast.forward(&input).unwrap();
        let (scale, moved) = (max_abs(&before), max_abs(&(after - &before).unwrap()));
        assert!(moved <= 0.02 * scale, "moved {moved} of {scale}");
        // A vectorised format is kept as it is (in tiles where they run).
        let q4k = QTensor::quantize(&values, GgmlDType::Q4K).unwrap();
        match Product::new(q4k).unwrap() {
            Product::Tiled(_) => assert!(super::super::tiles::available()),
            Product::Candle {
                weight: QMatMul::QTensor(kept),
                ..
            } => assert_eq!(kept.dtype(), GgmlDType::Q4K),
            Product::Candle { .. } => panic!("a quantized product"),
        }
    }
}
