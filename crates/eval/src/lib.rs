//! hermes-eval: measuring agents. [`eval`] runs suites of checked tasks
//! (`hermes eval`: success, pass^k, faults, reports); [`bench`] times the
//! loop and the planner against a scripted OpenAI-compatible server
//! (`hermes bench`).
//!
//! Must not depend on: `hermes-cluster`, `hermes-engines` (the CLI hands
//! it a model).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod bench;
pub mod eval;
