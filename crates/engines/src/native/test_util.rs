//! What the engine's kernel tests share: random inputs and weights, and
//! the measures they compare products by.

use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};

/// `[rows, cols]` values drawn from a standard normal.
pub(super) fn random(rows: usize, cols: usize) -> Tensor {
    Tensor::randn(0f32, 1.0, (rows, cols), &Device::Cpu).expect("random values")
}

/// A random `[rows, cols]` weight quantized to `dtype`.
pub(super) fn quantized(rows: usize, cols: usize, dtype: GgmlDType) -> QTensor {
    QTensor::quantize(&random(rows, cols), dtype).expect("a quantized weight")
}

/// A `[rows, cols]` tensor's values, row by row (compared bit for bit).
pub(super) fn rows(t: &Tensor) -> Vec<Vec<f32>> {
    t.to_vec2::<f32>().expect("a 2-d float tensor")
}

/// The largest magnitude in `t` (how far a product moved).
pub(super) fn max_abs(t: &Tensor) -> f32 {
    t.abs()
        .and_then(|a| a.max_all())
        .and_then(|m| m.to_scalar::<f32>())
        .expect("a float tensor")
}
