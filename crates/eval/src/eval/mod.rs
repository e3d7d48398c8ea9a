//! `hermes eval`: suites of tasks, checks on what a run left behind, the
//! runner, and reports of many runs.
//!
//! Only `runner.rs` runs agents; the rest is plain code. The runner reads a [`Suite`], and for every
//! task and repetition writes the task's fixtures into a fresh workspace
//! ([`Task::write_fixtures`]), runs the agent (or the planner), turns the
//! outcome into a [`RunObservation`], asks [`evaluate`] which checks failed,
//! and keeps a [`RunRecord`]. [`Report::new`] then summarises the records,
//! and the writers in [`render`] turn the report into JSON, Markdown and a
//! self-contained HTML page; [`compare`] sets two reports side by side.
//!
//! | file | what it holds |
//! |---|---|
//! | `suite/` | the suite file (TOML): parsing, validation with errors that name the file, the task and the field; fixtures |
//! | `check.rs` | the checks a task declares and [`evaluate`], which looks at the workspace and the outcome, never at what the model claims |
//! | `report.rs` | the report's types (serialised as the `--json` contract) and [`Summary::compute`]: pass^k, percentiles, stops, categories, faults |
//! | `render/` | [`write_report_dir`] and the terminal summary (`mod.rs`), `report.md` (`markdown.rs`), `report.html` (`html.rs`) with inline SVG charts (`charts.rs`) |
//! | `compare.rs` | [`compare`]: every summary metric of two reports, side by side with its change |
//! | `runner.rs` | [`run_suite`]: every task K times in fresh workspaces, behind the injected faults |
//! | `plan_run.rs` | a plan-mode run: the planner, its executors' rounds kept in `rounds.jsonl`, the report as the run's observation |
//! | `script.rs` | [`Script`]: scripted replies per task and round, so a suite runs with no model (CI) |

pub mod check;
pub mod compare;
mod plan_run;
pub mod render;
pub mod report;
pub mod runner;
pub mod script;
pub mod suite;

pub use check::{evaluate, Check, FileExpect, Pattern, RunObservation, RunStatus};
pub use compare::compare;
pub use render::{render_html, render_markdown, render_text, write_report_dir};
pub use report::{CategoryStats, FaultStats, ModeStats, Report, RunRecord, Summary};
pub use runner::{run_suite, EvalConfig, EvalMemory, ModelSource};
pub use script::{RoundScriptedLlm, Script, ScriptError};
pub use suite::{Memory, Mode, Suite, SuiteError, Task, TaskLimits};
