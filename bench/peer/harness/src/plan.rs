//! The multi-agent workload every peer runs the same way (bench/compare.sh,
//! `WORKLOAD=plan`): one task, planned by one model call into N independent
//! subtasks over R roles; every subtask at once, each run by an agent of
//! its role with `read_file` until its plain answer (the server's
//! `--rounds`); one last model call for the team's answer. The scripted
//! server (`hermes bench serve --latency-ms MS`) plans from the
//! `[bench-plan N ROLES]` marker and answers the final prompt by its system
//! message, as it does for Hermes' own planner (`hermes bench plan
//! --base-url`).
//!
//! This module holds what the peers share: the command line, the prompts,
//! reading the plan, and the one-line JSON report (the fields of `hermes
//! bench plan --json` that a peer can measure).

use std::future::Future;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::{number, percentile, rusage, walk_flags};

/// The roles, in the order `hermes bench plan` builds its own.
pub const ROLES: [&str; 4] = ["reader", "checker", "summariser", "archivist"];

/// The planner's system message (the server plans when it sees
/// `You are the planner`).
pub const PLANNER_SYSTEM: &str = "You are the planner of a team. Split the task into \
     subtasks for the team's roles and answer with JSON only: {\"subtasks\": [{\"id\": \
     \"s0\", \"role\": \"reader\", \"goal\": \"...\", \"depends_on\": []}]}.";

/// The final answer's system message (the server answers one line when it
/// sees `final answer of a team`).
pub const ANSWER_SYSTEM: &str =
    "You write the final answer of a team from its subtasks' results, in one line.";

/// The command line of a peer's plan program.
pub struct PlanArgs {
    /// The scripted server, with `/v1`.
    pub base_url: String,
    /// Subtasks in the plan.
    pub subtasks: usize,
    /// Roles the plan spreads them over.
    pub roles: Vec<String>,
    /// Tasks run one after another (each measured; the report gives the
    /// median wall time).
    pub repeat: usize,
}

/// Reads `--base-url URL [--subtasks N] [--roles R] [--repeat K]`; exits 0
/// after `--help`.
pub fn parse_plan_args(program: &str) -> Result<PlanArgs, String> {
    let mut base_url = None;
    let (mut subtasks, mut roles, mut repeat) = (100usize, 4usize, 1usize);
    let usage =
        format!("usage: {program} --base-url URL [--subtasks N] [--roles R (1-4)] [--repeat K]");
    walk_flags(&usage, |flag, value| {
        match flag {
            "--base-url" => base_url = Some(value()?),
            "--subtasks" => subtasks = number(flag, &value()?)?,
            "--roles" => roles = number(flag, &value()?)?,
            "--repeat" => repeat = number(flag, &value()?)?,
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    let base_url = base_url.ok_or("--base-url is required (the scripted server, with /v1)")?;
    if subtasks.min(repeat) < 1 || !(1..=ROLES.len()).contains(&roles) {
        return Err(format!(
            "--subtasks and --repeat must be at least 1, --roles 1 to {}",
            ROLES.len()
        ));
    }
    Ok(PlanArgs {
        base_url,
        subtasks,
        roles: ROLES[..roles].iter().map(|r| r.to_string()).collect(),
        repeat,
    })
}

/// The task text of run `t`, with the marker the server plans from (the
/// same text `hermes bench plan --base-url` submits).
pub fn task(args: &PlanArgs, t: usize) -> String {
    format!(
        "[bench-plan {} {}] Read every file, one subtask at a time (task {t}).",
        args.subtasks,
        args.roles.join(",")
    )
}

/// An executor's system message for `role`.
pub fn executor_system(role: &str) -> String {
    format!(
        "You are the {role} of a team. You read the files in the workspace with the read_file tool."
    )
}

/// The final answer's prompt: the task and each subtask's result.
pub fn answer_prompt(task: &str, results: &[(String, String)]) -> String {
    let mut prompt = format!("Task: {task}\n\nResults of the subtasks:");
    for (id, result) in results {
        prompt.push_str(&format!("\n[{id}] {result}"));
    }
    prompt
}

/// One subtask of the plan, as the planner's JSON gives it.
#[derive(Debug, Clone, Deserialize)]
pub struct PlannedSubtask {
    /// Its id (`s0`, `s1`, …).
    pub id: String,
    /// The role that runs it.
    pub role: String,
    /// What it is to do.
    pub goal: String,
    /// Ids it waits for (none in this workload).
    #[serde(default)]
    pub depends_on: Vec<String>,
}

#[derive(Deserialize)]
struct Plan {
    subtasks: Vec<PlannedSubtask>,
}

/// The subtasks of the planner's answer (JSON, possibly inside a code
/// fence or other text), or why it cannot be read.
pub fn parse_plan(content: &str) -> Result<Vec<PlannedSubtask>, String> {
    let start = content.find('{').ok_or("the plan has no JSON object")?;
    let end = content.rfind('}').ok_or("the plan has no JSON object")?;
    let plan: Plan = serde_json::from_str(&content[start..=end])
        .map_err(|e| format!("the plan is not the expected JSON: {e}"))?;
    if plan.subtasks.is_empty() {
        return Err("the plan has no subtasks".into());
    }
    Ok(plan.subtasks)
}

/// What one planned task did.
pub struct PlanRun {
    /// Subtasks whose agent ended with an answer.
    pub finished: usize,
    /// Executor rounds (model turns of the subtasks' agents), all together.
    pub rounds: usize,
    /// Model calls: the plan, the executors' turns and the answer.
    pub model_calls: usize,
    /// Why the task failed, if it did.
    pub error: Option<String>,
}

/// The one-line JSON report.
#[derive(Serialize)]
struct PlanReport<'a> {
    framework: &'a str,
    version: &'a str,
    workload: &'static str,
    fan_out: &'a str,
    subtasks: usize,
    roles: usize,
    repeat: usize,
    /// Subtasks that ended with an answer, every run together.
    finished_subtasks: usize,
    rounds: usize,
    model_calls: usize,
    /// The median run's wall time, plan call to answer, in seconds.
    seconds: f64,
    seconds_runs: Vec<f64>,
    /// Process CPU (user + system) over every run, per executor round.
    cpu_per_round_us: f64,
    peak_rss_mib: f64,
    error: Option<String>,
}

/// Which peer runs the workload, for its report.
pub struct PlanPeer<'a> {
    /// `framework` in the report.
    pub framework: &'a str,
    /// The framework's crates and versions.
    pub version: &'a str,
    /// How the peer fans the subtasks out, in a line.
    pub fan_out: &'a str,
}

/// Runs the task `args.repeat` times, one after another, each made by
/// `run(t)`, and prints the report; returns the exit code.
pub async fn measure_plan<F, Fut>(args: &PlanArgs, peer: &PlanPeer<'_>, mut run: F) -> i32
where
    F: FnMut(usize) -> Fut,
    Fut: Future<Output = PlanRun>,
{
    let (cpu_before, _) = rusage();
    let mut seconds_runs = Vec::with_capacity(args.repeat);
    let (mut finished, mut rounds, mut model_calls, mut error) = (0, 0, 0, None);
    for t in 0..args.repeat {
        let started = Instant::now();
        let done = run(t).await;
        seconds_runs.push(started.elapsed().as_secs_f64());
        finished += done.finished;
        rounds += done.rounds;
        model_calls += done.model_calls;
        if error.is_none() {
            error = done.error;
        }
    }
    let (cpu_after, maxrss_kib) = rusage();
    let mut sorted = seconds_runs.clone();
    sorted.sort_by(f64::total_cmp);
    let report = PlanReport {
        framework: peer.framework,
        version: peer.version,
        workload: "plan",
        fan_out: peer.fan_out,
        subtasks: args.subtasks,
        roles: args.roles.len(),
        repeat: args.repeat,
        finished_subtasks: finished,
        rounds,
        model_calls,
        seconds: percentile(&sorted, 0.5),
        seconds_runs,
        cpu_per_round_us: if rounds > 0 {
            (cpu_after - cpu_before) * 1e6 / rounds as f64
        } else {
            0.0
        },
        peak_rss_mib: maxrss_kib as f64 / 1024.0,
        error,
    };
    if let Some(why) = &report.error {
        eprintln!("warning: {why}");
    }
    match serde_json::to_string(&report) {
        Ok(line) => {
            println!("{line}");
            i32::from(finished < args.subtasks * args.repeat)
        }
        Err(e) => {
            eprintln!("error: cannot write the report: {e}");
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plan_is_read_from_json_inside_other_text() {
        let text = "Here:\n```json\n{\"subtasks\": [{\"id\": \"s0\", \"role\": \"reader\", \"goal\": \"g\", \"depends_on\": []}]}\n```";
        let plan = parse_plan(text).unwrap();
        assert_eq!(
            (plan[0].id.as_str(), plan[0].role.as_str()),
            ("s0", "reader")
        );
        assert!(parse_plan("{\"subtasks\": []}").is_err());
        assert!(parse_plan("no plan").is_err());
    }
}
