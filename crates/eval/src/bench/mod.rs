//! Benchmarks of the runtime's own cost, shared by `hermes bench` and
//! `benches/`: they run the real loop and the real tools against a model
//! whose answers are scripted (in-process with a fixed latency, or a
//! scripted server over HTTP), so that what is measured is Hermes and not
//! a model.
//!
//! - [`loops`]: N loops at once ([`LoopBench`]): rounds per second, CPU per
//!   round, per-round overhead (wall minus model and tool time), memory
//!   per agent.
//! - [`http`]: N tasks, C at a time, through the real HTTP client against
//!   the scripted server ([`HttpBench`]).
//! - [`server`]: that server, which also answers native tool-calling
//!   clients (the LangGraph peer in `bench/peer/`).
//! - [`plan`]: one task planned into N subtasks through the [`hermes_actors::Hermes`]
//!   API ([`PlanBench`]), against the [`plan_model`] model.
//! - [`context`]: prompt size per round over a long task, windowed and not
//!   ([`ContextBench`]).
//! - [`model`]: the [`LatencyModel`] and the script they all follow.
//! - [`workspace`]: the files `read_file` reads.
//! - [`process`]: CPU time and resident memory of this process.

pub mod context;
pub mod http;
pub mod loops;
pub mod model;
pub mod plan;
pub mod plan_model;
pub mod process;
pub mod server;
pub mod workspace;

pub use context::{ContextBench, ContextReport};
pub use http::{HttpBench, HttpBenchError, HttpReport};
pub use loops::{LoopBench, LoopReport};
pub use model::LatencyModel;
pub use plan::{PlanBench, PlanBenchError, PlanReport};
pub use server::{Script, ServerThread};
