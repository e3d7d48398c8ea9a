//! `hermes eval SUITE.toml`: run a suite of tasks K times each, with faults
//! if asked, check what each run left behind, and report success rate,
//! pass^k, rounds, time and tokens. `--compare OLD.json NEW.json` sets two
//! reports side by side.

use std::path::PathBuf;
use std::sync::Arc;

use clap::{ArgMatches, Args};
use hermes::actors::RoleRegistry;
use hermes::agent::CancellationToken;
use hermes::eval::{
    compare, render_text, run_suite, write_report_dir, EvalConfig, EvalMemory, Memory, Mode,
    ModelSource, Report, RunRecord, Script, Suite,
};
use hermes::memory::RedbStore;
use indicatif::{ProgressBar, ProgressStyle};

use super::approve_flags::ApproveArgs;
use super::exit;
use super::faults::FaultArgs;
use super::limits::LimitArgs;
use super::memory_flags::MemoryFlags;
use super::model::ModelArgs;
use super::output::print_result;
use super::tools::ToolArgs;

/// Options of `hermes eval`.
#[derive(Debug, Args)]
pub struct EvalArgs {
    /// The suite file (TOML).
    #[arg(required_unless_present = "compare", value_name = "SUITE.toml")]
    pub suite: Option<PathBuf>,
    /// Runs per task (K); pass^k is reported for every k up to K. Each run after
    /// the first samples with seeds of its own (the first keeps the model's).
    #[arg(long, default_value_t = 1, value_name = "K")]
    pub repeat: u32,
    /// Runs at once.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub concurrency: usize,
    /// Subtasks running at once inside one plan-mode run (as `hermes plan
    /// --concurrency`; 1 runs them one after another).
    #[arg(long, default_value_t = hermes::actors::DEFAULT_CONCURRENCY, value_name = "N")]
    pub subtask_concurrency: usize,
    #[command(flatten)]
    pub faults: FaultArgs,
    /// Run only these tasks (comma-separated ids).
    #[arg(long, value_delimiter = ',', value_name = "ID,ID")]
    pub only: Option<Vec<String>>,
    /// Run every task in these modes instead of the mode each sets
    /// (`run`, `plan`, or `run,plan`: each task both ways, its ids
    /// suffixed `@run` and `@plan`, and the report gains a `by_mode`
    /// summary and a table of plan against run).
    #[arg(long, value_delimiter = ',', value_name = "MODE,MODE", value_parser = parse_mode)]
    pub mode: Option<Vec<Mode>>,
    /// Print the report as one JSON object on the last line of stdout.
    #[arg(long)]
    pub json: bool,
    /// Write report.json, report.md, report.html and every run's workspace
    /// and journal (runs/<task>.<rep>/; a plan-mode run adds rounds.jsonl,
    /// every executor round with its subtask id) to this folder.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    /// Exit 3 when the success rate is below RATE (for CI), e.g. 0.6.
    #[arg(long, value_name = "RATE")]
    pub min_success: Option<f64>,
    /// Print every summary metric of two reports side by side, with its change.
    #[arg(long, num_args = 2, value_names = ["OLD.json", "NEW.json"], conflicts_with = "suite")]
    pub compare: Option<Vec<PathBuf>>,
    /// Answer with the scripted replies in this file instead of a model
    /// (tests, CI); see `evals/files.script.toml`.
    #[arg(long, value_name = "FILE")]
    pub script: Option<PathBuf>,
    /// Directory of executor role files (*.toml), for plan-mode tasks and
    /// tasks that name a role.
    #[arg(long, default_value = "agents", value_name = "DIR")]
    pub roles: PathBuf,
    #[command(flatten)]
    pub limits: LimitArgs,
    #[command(flatten)]
    pub approvals: ApproveArgs,
    /// Each run gets a fresh memory unless the suite says `memory =
    /// "shared"` (one memory for the suite, started empty and kept in the
    /// --report folder) or --memory FILE names one for every run.
    #[command(flatten)]
    pub memory: MemoryFlags,
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub tools: ToolArgs,
}

/// Runs the suite (or the comparison) and returns the exit code.
pub async fn execute(args: EvalArgs, matches: Option<&ArgMatches>) -> i32 {
    if let Some(paths) = &args.compare {
        return compare_reports(&paths[0], &paths[1]);
    }
    let (suite, config, _shared_memory_dir) = match setup(&args, matches).await {
        Ok(ready) => ready,
        Err(error) => {
            eprintln!("error: {error}");
            return exit::ERROR;
        }
    };
    let total = suite.tasks.len() as u64 * u64::from(args.repeat.max(1));
    let bar = progress_bar(total);
    let on_run = |record: &RunRecord| {
        let verdict = if record.passed { "pass" } else { "FAIL" };
        let mut line = format!(
            "{verdict} {}.{} {} in {} round(s), {:.1}s",
            record.task, record.rep, record.status, record.rounds, record.seconds
        );
        if let Some(first) = record.failed_checks.first() {
            line.push_str(&format!(": {first}"));
        }
        bar.suspend(|| eprintln!("{line}"));
        bar.inc(1);
        if record.passed {
            bar.set_message(bump(&bar.message(), true));
        } else {
            bar.set_message(bump(&bar.message(), false));
        }
    };
    // Ctrl-C stops the runs in flight; the report covers what ended.
    let cancel = CancellationToken::new();
    let on_interrupt = cancel.clone();
    let interrupt = tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("interrupted: stopping the runs in flight");
            on_interrupt.cancel();
        }
    });
    let report = run_suite(&suite, &config, &cancel, &on_run).await;
    interrupt.abort();
    bar.finish_and_clear();
    if let Some(error) = unreachable_model(&report) {
        eprintln!("error: {error}");
        return exit::ERROR;
    }
    eprintln!("{}", render_text(&report));
    if let Some(dir) = &args.report {
        match write_report_dir(dir, &report) {
            Ok(()) => eprintln!("report: {}", dir.join("report.html").display()),
            Err(e) => {
                eprintln!("error: cannot write the report to {}: {e}", dir.display());
                return exit::ERROR;
            }
        }
    }
    if args.json {
        print_result(Some(&report), "");
    }
    if cancel.is_cancelled() {
        return exit::INTERRUPTED;
    }
    match args.min_success {
        Some(min) if report.summary.success_rate < min => {
            eprintln!(
                "success rate {:.3} is below --min-success {min}",
                report.summary.success_rate
            );
            exit::STOPPED
        }
        _ => exit::OK,
    }
}

/// The suite and how to run it, from the flags; with the temporary folder
/// that holds a shared memory kept nowhere else (to be kept until the end).
async fn setup(
    args: &EvalArgs,
    matches: Option<&ArgMatches>,
) -> Result<(Suite, EvalConfig, Option<tempfile::TempDir>), String> {
    let path = args.suite.as_ref().ok_or("give a suite file")?;
    let mut suite = Suite::load(path).map_err(|e| e.to_string())?;
    if let Some(ids) = &args.only {
        suite = suite.only(ids).map_err(|e| e.to_string())?;
    }
    if let Some(modes) = &args.mode {
        let mut unique: Vec<Mode> = Vec::new();
        for mode in modes {
            if !unique.contains(mode) {
                unique.push(*mode);
            }
        }
        suite = suite.in_modes(&unique).map_err(|e| e.to_string())?;
    }
    if let Some(min) = args.min_success {
        if !(0.0..=1.0).contains(&min) {
            return Err(format!("--min-success {min}: give a rate between 0 and 1"));
        }
    }
    let tools = args.tools.options().map_err(|e| e.to_string())?;
    let roles = if args.roles.is_dir() {
        RoleRegistry::load_dir(&args.roles, hermes::tools::builtin::NAMES)
            .map_err(|e| e.to_string())?
    } else {
        RoleRegistry::new()
    };
    let model = match &args.script {
        Some(script) => {
            ModelSource::Script(Arc::new(Script::load(script).map_err(|e| e.to_string())?))
        }
        None => ModelSource::Model(args.model.llm(matches).await.map_err(|e| e.to_string())?),
    };
    let (memory, temp) = eval_memory(args, &suite).await?;
    let config = EvalConfig {
        memory,
        model,
        tools,
        roles,
        limits: args.limits.limits(),
        faults: args.faults.spec(),
        seed: args.faults.seed,
        request_timeout: args.model.request_timeout,
        repeat: args.repeat.max(1),
        concurrency: args.concurrency.max(1),
        subtask_concurrency: args.subtask_concurrency.max(1),
        report_dir: args.report.clone(),
        approvals: Some(
            args.approvals
                .with_approver(std::sync::Arc::new(hermes::approval::NobodyToAsk))?,
        ),
    };
    Ok((suite, config, temp))
}

/// The memory the suite's runs use (see [`EvalArgs::memory`]).
async fn eval_memory(
    args: &EvalArgs,
    suite: &Suite,
) -> Result<(EvalMemory, Option<tempfile::TempDir>), String> {
    let flags = &args.memory;
    if flags.no_memory {
        return Ok((EvalMemory::Off, None));
    }
    let (path, temp) = match (&flags.memory, suite.memory, &args.report) {
        (Some(path), _, _) => (path.clone(), None),
        (None, Memory::Shared, Some(dir)) => {
            // Each eval starts its shared memory empty: a report folder used
            // before must not make this run depend on that one.
            let path = dir.join("memory.redb");
            match std::fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(format!("cannot clear {}: {e}", path.display()));
                }
                _ => (path, None),
            }
        }
        (None, Memory::Shared, None) => {
            let temp = tempfile::tempdir()
                .map_err(|e| format!("cannot make a folder for the shared memory: {e}"))?;
            (temp.path().join("memory.redb"), Some(temp))
        }
        (None, Memory::Fresh, _) => {
            let embedder = flags.embedder(&args.model).map_err(|e| e.to_string())?;
            let fresh = EvalMemory::Fresh {
                ttl: flags.memory_ttl,
                embedder,
            };
            return Ok((fresh, None));
        }
    };
    let store = RedbStore::open_async(path.clone())
        .await
        .map_err(|e| format!("cannot open the suite's memory: {e}"))?;
    let memory = flags
        .around(store, &args.model)
        .map_err(|e| e.to_string())?;
    Ok((EvalMemory::Shared(memory), temp))
}

/// A model that was never reached makes the whole eval meaningless.
fn unreachable_model(report: &Report) -> Option<String> {
    report
        .runs
        .iter()
        .filter_map(|r| r.error.as_deref())
        .find(|e| e.contains("could not reach the model server"))
        .map(String::from)
}

fn progress_bar(total: u64) -> ProgressBar {
    let bar = ProgressBar::new(total);
    let style = ProgressStyle::with_template("{bar:30} {pos}/{len} runs  {msg}  [{elapsed}]")
        .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style);
    bar.set_message("0 passed, 0 failed");
    bar
}

/// "P passed, F failed" with one more pass or failure.
fn bump(message: &str, passed: bool) -> String {
    let numbers: Vec<u64> = message
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect();
    let (mut p, mut f) = (
        numbers.first().copied().unwrap_or(0),
        numbers.get(1).copied().unwrap_or(0),
    );
    if passed {
        p += 1;
    } else {
        f += 1;
    }
    format!("{p} passed, {f} failed")
}

fn compare_reports(old: &PathBuf, new: &PathBuf) -> i32 {
    let read = |path: &PathBuf| -> Result<Report, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        serde_json::from_str(&text)
            .map_err(|e| format!("{} is not an eval report: {e}", path.display()))
    };
    match (read(old), read(new)) {
        (Ok(old), Ok(new)) => {
            print_result(None::<&()>, &compare(&old, &new));
            exit::OK
        }
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("error: {e}");
            exit::ERROR
        }
    }
}

/// `--mode`'s values.
fn parse_mode(text: &str) -> Result<Mode, String> {
    Mode::parse(text)
}
