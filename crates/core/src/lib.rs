//! hermes-core: one agent, end to end, with no actor, cluster or engine in
//! it.
//!
//! The loop ([`agent`]: perceive → decide → act → observe, and the steers
//! that keep a small model on course) talks to a model only through the
//! [`llm::Llm`] trait (the OpenAI-compatible client and the scripted model
//! live here; the in-process engines live in `hermes-engines`). Model
//! output is read leniently by [`decision`]; tools, their schemas, the
//! sandbox and MCP are [`tools`]; each round leaves a line in the
//! [`journal`]; [`memory`] keeps what finished runs learned; [`limits`]
//! bounds a run; [`faults`] injects failures; [`telemetry`] exports spans.
//!
//! Must not depend on: `hermes-actors`, `hermes-cluster`, `hermes-engines`,
//! `hermes-eval` (the crate graph enforces it).
// No unsafe code, but in one module: the built-in sandbox
// (`tools::sandbox::namespaces`) enters its namespaces between fork and
// exec, which only unsafe system calls can do; it allows it for itself.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod agent;
pub mod approval;
pub mod decision;
pub mod faults;
pub mod journal;
pub mod limits;
pub mod llm;
pub mod memory;
pub mod telemetry;
pub mod text;
pub mod tools;

pub use schemars;
