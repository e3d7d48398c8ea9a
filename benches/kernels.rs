//! The engine's quantized products against candle's own, in one process:
//! the shapes of Qwen2.5-1.5B's weights, one row (a decode step) and four
//! (a prompt's chunk, or four requests decoding together), in cache and
//! out of it (the output projection, 151,936 rows: what a decode step
//! streams from memory). Figures are printed, never checked.
//!
//! ```sh
//! cargo bench --bench kernels
//! ```
//!
//! candle's product is the baseline: on AVX2 and AVX-512 VNNI it is the
//! same tiles' arithmetic on weights widened to 6.0 (Q4_K) and 10.0 (Q6_K)
//! bits, where the engine reads 4.75 and 6.63 (BENCHMARKS.md, "The compact
//! tiles"). A lone Q6_K row takes another kernel in candle, which rounds
//! differently, so the engine's old path multiplied it as two rows: the
//! baseline here does the same.

use hermes::llm::native::kernel_bench::products;

const SHAPES: [(&str, usize, usize, &str); 4] = [
    ("ffn gate/up", 8960, 1536, "q4k"),
    ("ffn down", 1536, 8960, "q6k"),
    ("attention q/o", 1536, 1536, "q4k"),
    ("output (out of cache)", 151_936, 1536, "q6k"),
];

fn main() {
    println!(
        "{:<24} {:>4} {:>11} {:>11} {:>7} {:>9}",
        "weight", "rows", "candle ms", "engine ms", "ratio", "GB/s"
    );
    for (name, n, k, dtype) in SHAPES {
        for rows in [1, 4] {
            let calls = if n > 100_000 { 8 } else { 40 };
            let Some(f) = products(n, k, dtype, rows, calls) else {
                println!("skipped: this CPU has no tiles' kernel (AVX2 + FMA or AVX-512 VNNI)");
                return;
            };
            println!(
                "{:<24} {:>4} {:>11.3} {:>11.3} {:>6.2}x {:>9.1}   ({n}x{k} {dtype}, {})",
                name,
                rows,
                f.candle * 1e3,
                f.tiles * 1e3,
                f.candle / f.tiles,
                f.tile_bytes as f64 / f.tiles / 1e9,
                f.kernel
            );
        }
    }
}
