//! The `hermes` command line: argument types shared by subcommands.

pub mod approve_flags;
pub mod bench;
pub mod budget_flags;
pub mod cluster_flags;
pub mod daemon;
pub mod eval;
pub mod exit;
pub mod faults;
pub mod limits;
pub mod mcp;
pub mod memory;
pub mod memory_flags;
pub mod model;
pub mod model_files;
pub mod node;
pub mod output;
pub mod plan;
pub mod roles;
pub mod run;
pub mod serve;
pub mod steers;
pub mod submit;
pub mod team;
pub mod tools;
pub mod trace;

use clap::{Parser, Subcommand};

/// Hermes: LLM agents that finish real multi-step work.
#[derive(Debug, Parser)]
#[command(name = "hermes", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one agent on a task until it finishes or a guard stops it.
    Run(run::RunArgs),
    /// Split a task into subtasks and run them on supervised executor agents.
    Plan(plan::PlanArgs),
    /// Run a suite of tasks K times each, with injected faults if asked, and
    /// report success rate, pass^k, rounds, time and tokens.
    Eval(Box<eval::EvalArgs>),
    /// List the executor roles defined in a roles directory.
    Roles(roles::RolesArgs),
    /// List the loop's steers (its small-model helpers), each with its
    /// default and what it does.
    Steers(steers::SteersArgs),
    /// Look at and tidy the long-term memory: list, search, forget, purge, clear.
    Memory(memory::MemoryArgs),
    /// Fetch the models the in-process engine runs (pull), and see what is cached (list).
    Model(model_files::ModelCmdArgs),
    /// Serve the roles of this machine to planners on other machines
    /// (a worker node of a Hermes cluster).
    Node(node::NodeArgs),
    /// Run the planner as a service: submit tasks over HTTP, stream their
    /// events, cancel them; tasks and events are kept in a durable store.
    Serve(Box<serve::ServeArgs>),
    /// Submit a task to a running `hermes serve` and follow it as `hermes
    /// plan` would (or --detach).
    Submit(submit::SubmitArgs),
    /// Hermes as an MCP server on stdio (`hermes mcp serve`): other agents
    /// and IDEs hand it tasks through the tools submit_task, task_status
    /// and list_roles.
    Mcp(mcp::McpArgs),
    /// List the tasks of a running `hermes serve`.
    Tasks(submit::TasksArgs),
    /// Cancel a queued or running task of a `hermes serve`.
    Cancel(submit::CancelArgs),
    /// Measure what the runtime itself costs: loops (loop), the HTTP path
    /// (http, serve), the actors (plan) and prompt growth (context).
    Bench(bench::BenchArgs),
}
