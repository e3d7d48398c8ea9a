//! The quantized products timed against candle's own, in one process, for
//! `benches/kernels.rs` (not an API: the engine's kernels are private, and
//! this is the one door a benchmark has to them).

use std::time::Instant;

use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
use candle_core::{Device, Module, Tensor};

use super::tiles::{self, Tiled};

/// What one product shape measured.
#[derive(Debug, Clone)]
pub struct ProductFigures {
    /// The tiles' kernel on this CPU (`"avx512-vnni"`, `"avx2"`).
    pub kernel: &'static str,
    /// Best time of one of candle's products as the engine took them
    /// before its own tiles, seconds (a lone Q6_K row as two rows, so it
    /// takes the kernel several rows take: `product.rs`).
    pub candle: f64,
    /// Best time of one of the engine's products, seconds.
    pub tiles: f64,
    /// Bytes of the engine's tiles (what one product reads).
    pub tile_bytes: usize,
}

/// `rows` random activations times a random `[n, k]` weight of `dtype`
/// (`"q4k"` or `"q6k"`), each product timed `calls` times, both engines
/// taking turns; `None` where this CPU has no tiles' kernel or the shape
/// does not fit tiles (rows of 16, columns of 256).
pub fn products(
    n: usize,
    k: usize,
    dtype: &str,
    rows: usize,
    calls: usize,
) -> Option<ProductFigures> {
    let kernel = match tiles::level()? {
        tiles::Level::Avx512Vnni => "avx512-vnni",
        tiles::Level::Avx2 => "avx2",
    };
    let (dtype, bits) = match dtype {
        "q4k" => (GgmlDType::Q4K, 4.75),
        "q6k" => (GgmlDType::Q6K, 6.625),
        _ => return None,
    };
    let cpu = Device::Cpu;
    let values = Tensor::randn(0f32, 1.0, (n, k), &cpu).ok()?;
    let weight = QTensor::quantize(&values, dtype).ok()?;
    let tiled = Tiled::new(&weight).ok()??;
    let candle = QMatMul::from_qtensor(weight).ok()?;
    let x = Tensor::randn(0f32, 1.0, (rows, k), &cpu).ok()?;
    let candle_x = if dtype == GgmlDType::Q6K && rows == 1 {
        Tensor::cat(&[&x, &x], 0).ok()?
    } else {
        x.clone()
    };
    let (mut best_candle, mut best_tiles) = (f64::MAX, f64::MAX);
    for _ in 0..calls {
        let started = Instant::now();
        candle.forward(&candle_x).ok()?;
        best_candle = best_candle.min(started.elapsed().as_secs_f64());
        let started = Instant::now();
        tiled.forward(&x).ok()?;
        best_tiles = best_tiles.min(started.elapsed().as_secs_f64());
    }
    Some(ProductFigures {
        kernel,
        candle: best_candle,
        tiles: best_tiles,
        tile_bytes: (n as f64 * k as f64 * bits / 8.0) as usize,
    })
}
