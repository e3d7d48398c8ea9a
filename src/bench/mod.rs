//! Benchmarks of the runtime's own cost, shared by `hermes bench` and
//! `benches/`: they run the real loop and the real tools against an
//! in-process model whose latency is fixed, so that what is measured is
//! Hermes and not a model.
//!
//! - [`loops`]: N loops at once ([`LoopBench`]): rounds per second, CPU per
//!   round, per-round overhead (wall minus model and tool time), memory
//!   per agent.
//! - [`model`]: the [`LatencyModel`] they talk to.
//! - [`process`]: CPU time and resident memory of this process.

pub mod loops;
pub mod model;
pub mod process;

pub use loops::{LoopBench, LoopReport};
pub use model::LatencyModel;
