//! Hermes: a runtime that makes LLM agents finish real multi-step work.
//!
//! This crate is the `hermes` binary's library face: it re-exports the
//! workspace's crates under one name, so `hermes::agent::Agent` and
//! `hermes::actors::Hermes` are all a program needs to import.
//!
//! One agent runs one loop ([`agent`]): perceive → decide → act →
//! observe, repeated until a guard stops it. The model boundary is [`llm`],
//! the lenient reader of model output is [`decision`], tools live in
//! [`tools`], and every round leaves a line in the [`journal`]
//! (`hermes-core`). Many agents run under a planner ([`actors`], whose
//! handle is [`actors::Hermes`]; `hermes-actors`), and on other machines
//! through [`cluster`] (`hermes-cluster`). [`faults`] injects failures at
//! the model, tool and executor boundaries, [`eval`] measures how often
//! agents finish real work (`hermes-eval`), [`memory`] keeps what finished
//! runs learned, and [`model_files`] fetches the models the in-process
//! engines ([`llm::native`], [`llm::local`]; `hermes-engines`) run.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub use hermes_actors as actors;
pub use hermes_cluster as cluster;
pub use hermes_core::{
    agent, approval, decision, faults, journal, limits, memory, schemars, telemetry, text, tools,
};
pub use hermes_engines::model_files;
pub use hermes_eval::{bench, eval};
pub use hermes_serve as serve;

/// The model boundary (`hermes_core::llm`) and the in-process engines
/// (`hermes-engines`), under one path.
pub mod llm {
    pub use hermes_core::llm::*;
    #[cfg(feature = "local-llm")]
    pub use hermes_engines::local;
    #[cfg(feature = "native-llm")]
    pub use hermes_engines::native;
}
