//! Hermes: a runtime that makes LLM agents finish real multi-step work.
//!
//! One agent runs one loop ([`agent`]): perceive → decide → act →
//! observe, repeated until a guard stops it. The model boundary is [`llm`],
//! the lenient reader of model output is [`decision`], tools live in
//! [`tools`], and every round leaves a line in the [`journal`]. Many agents
//! run under a planner ([`actors`], whose handle is [`actors::Hermes`]);
//! [`faults`] injects failures at the model, tool and executor boundaries,
//! [`eval`] measures how often agents finish real work, [`memory`] keeps
//! what finished runs learned, and [`model_files`] fetches the models the
//! in-process engine runs.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod actors;
pub mod agent;
pub mod bench;
pub mod cluster;
pub mod decision;
pub mod eval;
pub mod faults;
pub mod journal;
pub mod limits;
pub mod llm;
pub mod memory;
pub mod model_files;
pub mod telemetry;
pub mod text;
pub mod tools;

/// Re-exported so custom tools derive `JsonSchema` with the same version Hermes reads.
pub use schemars;
