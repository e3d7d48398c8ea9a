//! The report of an eval: one [`RunRecord`] per run and a [`Summary`].
//!
//! The types serialise to the `--json` / `report.json` contract and read it
//! back (for `--compare`); unknown fields are ignored and most fields have
//! defaults, so reports from other versions still load.
//!
//! Numbers: every float in [`Summary`] is rounded to 3 decimals when it is
//! computed, so the JSON holds what the tables show and two runs of the same
//! data give byte-identical reports. Run records keep what the runner measured.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::check::RunStatus;
use hermes_core::llm::Usage;

/// A whole eval: what ran, every run, and the summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// The suite's name.
    pub suite: String,
    /// The model the runs used.
    #[serde(default)]
    pub model: String,
    /// Runs per task (K).
    pub repeat: u32,
    /// The fault-injection spec, as given (for example `{"tool_error": 0.2}`); empty when none.
    #[serde(default)]
    pub faults: BTreeMap<String, Value>,
    /// Seed of the fault injection's random choices.
    #[serde(default)]
    pub seed: u64,
    /// Every run, in the order they ran.
    #[serde(default)]
    pub runs: Vec<RunRecord>,
    /// Aggregates over `runs`.
    pub summary: Summary,
}

impl Report {
    /// A report over `runs`, with the summary computed from them.
    pub fn new(
        suite: impl Into<String>,
        model: impl Into<String>,
        repeat: u32,
        faults: BTreeMap<String, Value>,
        seed: u64,
        runs: Vec<RunRecord>,
    ) -> Report {
        let summary = Summary::compute(&runs, repeat);
        Report {
            suite: suite.into(),
            model: model.into(),
            repeat,
            faults,
            seed,
            runs,
            summary,
        }
    }
}

/// One run of one task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// The task's id.
    pub task: String,
    /// The task's category.
    #[serde(default)]
    pub category: String,
    /// Which repetition, from 1 to K.
    pub rep: u32,
    /// Whether every check held.
    pub passed: bool,
    /// How the run ended.
    pub status: RunStatus,
    /// Rounds used (plan mode: summed over executors).
    #[serde(default)]
    pub rounds: u32,
    /// Wall-clock seconds of the run.
    #[serde(default)]
    pub seconds: f64,
    /// Tokens the run used.
    #[serde(default)]
    pub usage: Usage,
    /// One line per failed check (see [`crate::eval::evaluate`]); empty when passed.
    #[serde(default)]
    pub failed_checks: Vec<String>,
    /// Faults injected into this run, by kind (for example `{"llm_non_json": 1}`).
    #[serde(default)]
    pub faults: BTreeMap<String, u64>,
    /// Why the run could not be carried out, for status `error` (runner
    /// failure, model unreachable); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Rounds each steer acted in during this run, by steer name: rounds
    /// it held back (its journal's `steered_by`), asked again
    /// (`reasked_by`) or whose prompt its closing sentence ended
    /// (`prompted_by`), each round once per steer; absent when none did.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub steered: BTreeMap<String, u64>,
}

impl RunRecord {
    /// The run's journal, relative to the report folder:
    /// `runs/<task>.<rep>/journal.jsonl`. The runner writes it there.
    pub fn journal_path(&self) -> String {
        format!("{}/journal.jsonl", self.run_dir())
    }

    /// The run's folder, relative to the report folder: `runs/<task>.<rep>`.
    pub fn run_dir(&self) -> String {
        format!("runs/{}.{}", self.task, self.rep)
    }
}

/// Runs and passes of one category.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CategoryStats {
    /// Runs of tasks in this category.
    pub runs: u64,
    /// Those that passed.
    pub passed: u64,
}

impl CategoryStats {
    /// `passed / runs`, 0 for no runs.
    pub fn success_rate(&self) -> f64 {
        ratio(self.passed, self.runs)
    }
}

/// How runs fared when a kind of fault was injected into them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct FaultStats {
    /// Injections of this kind over all runs.
    pub injected: u64,
    /// Runs where it was injected at least once.
    pub runs_hit: u64,
    /// Those runs that still passed.
    pub runs_hit_passed: u64,
    /// `runs_hit_passed / runs_hit`; `null` when no run was hit (a kind the
    /// runner listed with zero injections), never a made-up 0 or 1.
    pub recovery_rate: Option<f64>,
}

/// How runs fared where a steer acted: how often a helper fires on a suite,
/// and what became of those runs, without reading their journals.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct SteerStats {
    /// Rounds it acted in, over all runs.
    pub rounds: u64,
    /// Runs where it acted in at least one round.
    pub runs: u64,
    /// Those runs that passed.
    pub runs_passed: u64,
}

/// Aggregates over all runs of a report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Number of runs.
    pub runs: u64,
    /// Runs that passed.
    pub passed: u64,
    /// `passed / runs`.
    pub success_rate: f64,
    /// τ-bench's pass^k for k = 1..K, keyed `"1"`..`"K"`: the mean over
    /// tasks of C(c, k) / C(n, k), where a task passed c of its n runs. The
    /// chance that k runs of a task, drawn without replacement, all pass.
    #[serde(default)]
    pub pass_hat_k: BTreeMap<u32, f64>,
    /// Mean rounds per run.
    #[serde(default)]
    pub mean_rounds: f64,
    /// 95th percentile of rounds, nearest-rank.
    #[serde(default)]
    pub p95_rounds: u32,
    /// Mean seconds per run.
    #[serde(default)]
    pub mean_seconds: f64,
    /// 95th percentile of seconds, nearest-rank.
    #[serde(default)]
    pub p95_seconds: f64,
    /// Tokens over all runs.
    #[serde(default)]
    pub tokens: Usage,
    /// Prompt + completion tokens of all runs over the passed ones: what a
    /// pass costs (`null` when none passed).
    #[serde(default)]
    pub tokens_per_pass: Option<f64>,
    /// Runs by how they ended: always `finished`, `max_rounds`,
    /// `repetition`, `timeout`, `error`; `failed` and `cancelled` when any
    /// run ended so.
    #[serde(default)]
    pub stops: BTreeMap<String, u64>,
    /// Runs and passes by task category.
    #[serde(default)]
    pub by_category: BTreeMap<String, CategoryStats>,
    /// Outcomes by injected fault kind; every kind that appears in any
    /// run's `faults`.
    #[serde(default)]
    pub by_fault: BTreeMap<String, FaultStats>,
    /// Runs by mode, when the suite ran in several (`--mode run,plan`:
    /// task ids `<id>@run`, `<id>@plan`); absent otherwise.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub by_mode: BTreeMap<String, ModeStats>,
    /// Runs by the steers that acted in them (see [`RunRecord::steered`]);
    /// absent when none did.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub by_steer: BTreeMap<String, SteerStats>,
}

/// What the runs of one mode did (`--mode run,plan`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModeStats {
    /// Runs in this mode.
    pub runs: u64,
    /// Of them, passed.
    pub passed: u64,
    /// `passed / runs`.
    pub success_rate: f64,
    /// Mean seconds per run.
    pub mean_seconds: f64,
    /// Mean rounds per run (plan mode: summed over executors).
    pub mean_rounds: f64,
    /// Mean prompt + completion tokens per run.
    pub mean_tokens: f64,
}

impl ModeStats {
    fn of(runs: &[&RunRecord]) -> ModeStats {
        let n = runs.len() as u64;
        let passed = runs.iter().filter(|r| r.passed).count() as u64;
        ModeStats {
            runs: n,
            passed,
            success_rate: round3(ratio(passed, n)),
            mean_seconds: round3(mean(runs.iter().map(|r| r.seconds), n)),
            mean_rounds: round3(mean(runs.iter().map(|r| r.rounds as f64), n)),
            mean_tokens: round3(mean(runs.iter().map(|r| r.usage.total() as f64), n)),
        }
    }
}

/// Runs grouped by the mode their task id names (see [`super::suite::mode_of`]).
fn by_mode(runs: &[RunRecord]) -> BTreeMap<String, ModeStats> {
    let mut groups: BTreeMap<String, Vec<&RunRecord>> = BTreeMap::new();
    for run in runs {
        if let Some(mode) = super::suite::mode_of(&run.task) {
            groups.entry(mode.to_string()).or_default().push(run);
        }
    }
    groups
        .into_iter()
        .map(|(mode, runs)| (mode, ModeStats::of(&runs)))
        .collect()
}

impl Summary {
    /// Summarises `runs`, K = `repeat` runs per task.
    ///
    /// pass^k: a task with n runs contributes C(c, k) / C(n, k) for k ≤ n.
    /// With complete runs n = K for every task, which is τ-bench's
    /// definition; a task cut short (fewer than k runs) is left out of that
    /// k's mean, and a k no task reached is left out of the map.
    pub fn compute(runs: &[RunRecord], repeat: u32) -> Summary {
        let n = runs.len() as u64;
        let passed = runs.iter().filter(|r| r.passed).count() as u64;

        let mut rounds: Vec<u32> = runs.iter().map(|r| r.rounds).collect();
        rounds.sort_unstable();
        let mut seconds: Vec<f64> = runs.iter().map(|r| r.seconds).collect();
        seconds.sort_by(f64::total_cmp);

        // Plan-only stops, and `budget` (an eval sets no budget), are
        // listed only when a run ended that way.
        let mut stops: BTreeMap<String, u64> = RunStatus::ALL
            .iter()
            .filter(|s| !s.plan_only() && **s != RunStatus::Budget)
            .map(|s| (s.as_str().to_string(), 0))
            .collect();
        for run in runs {
            *stops.entry(run.status.as_str().to_string()).or_default() += 1;
        }

        let mut by_category: BTreeMap<String, CategoryStats> = BTreeMap::new();
        for run in runs {
            let stats = by_category.entry(run.category.clone()).or_default();
            stats.runs += 1;
            stats.passed += run.passed as u64;
        }

        let mut by_fault: BTreeMap<String, FaultStats> = BTreeMap::new();
        for run in runs {
            for (kind, &count) in &run.faults {
                let stats = by_fault.entry(kind.clone()).or_default();
                stats.injected += count;
                if count > 0 {
                    stats.runs_hit += 1;
                    stats.runs_hit_passed += run.passed as u64;
                }
            }
        }
        for stats in by_fault.values_mut() {
            stats.recovery_rate =
                (stats.runs_hit > 0).then(|| round3(ratio(stats.runs_hit_passed, stats.runs_hit)));
        }

        let mut by_steer: BTreeMap<String, SteerStats> = BTreeMap::new();
        for run in runs {
            for (steer, &rounds) in &run.steered {
                let stats = by_steer.entry(steer.clone()).or_default();
                stats.rounds += rounds;
                stats.runs += 1;
                stats.runs_passed += run.passed as u64;
            }
        }

        Summary {
            runs: n,
            passed,
            success_rate: round3(ratio(passed, n)),
            pass_hat_k: pass_hat_k(runs, repeat),
            mean_rounds: round3(mean(rounds.iter().map(|&r| r as f64), n)),
            p95_rounds: nearest_rank(&rounds, 0.95).unwrap_or(0),
            mean_seconds: round3(mean(seconds.iter().copied(), n)),
            p95_seconds: round3(nearest_rank(&seconds, 0.95).unwrap_or(0.0)),
            tokens: runs.iter().map(|r| r.usage).sum(),
            tokens_per_pass: (passed > 0).then(|| {
                let total: u64 = runs.iter().map(|r| r.usage.total()).sum();
                (total as f64 / passed as f64).round()
            }),
            stops,
            by_category,
            by_fault,
            by_mode: by_mode(runs),
            by_steer,
        }
    }
}

/// pass^k for k = 1..=repeat (see [`Summary::pass_hat_k`]).
fn pass_hat_k(runs: &[RunRecord], repeat: u32) -> BTreeMap<u32, f64> {
    // (runs, passed) per task, in a stable order.
    let mut tasks: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for run in runs {
        let t = tasks.entry(run.task.as_str()).or_default();
        t.0 += 1;
        t.1 += run.passed as u64;
    }
    let mut out = BTreeMap::new();
    for k in 1..=repeat as u64 {
        let values: Vec<f64> = tasks
            .values()
            .filter(|(n, _)| *n >= k)
            .map(|&(n, c)| choose_ratio(c, n, k))
            .collect();
        if !values.is_empty() {
            let mean = values.iter().sum::<f64>() / values.len() as f64;
            out.insert(k as u32, round3(mean));
        }
    }
    out
}

/// C(c, k) / C(n, k) for k ≤ n, as the product of (c - i) / (n - i) over
/// i < k: exact enough, and no factorial overflows.
fn choose_ratio(c: u64, n: u64, k: u64) -> f64 {
    if c < k {
        return 0.0;
    }
    (0..k).map(|i| (c - i) as f64 / (n - i) as f64).product()
}

/// Nearest-rank percentile of sorted `values`: the value at rank ⌈p·N⌉.
fn nearest_rank<T: Copy>(sorted: &[T], p: f64) -> Option<T> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (p * sorted.len() as f64).ceil().max(1.0) as usize;
    Some(sorted[rank.min(sorted.len()) - 1])
}

fn mean(values: impl Iterator<Item = f64>, n: u64) -> f64 {
    if n == 0 {
        0.0
    } else {
        values.sum::<f64>() / n as f64
    }
}

fn ratio(num: u64, den: u64) -> f64 {
    if den == 0 {
        0.0
    } else {
        num as f64 / den as f64
    }
}

/// Rounds to 3 decimals, the precision every summary float is kept at.
pub(crate) fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// The task ids of `runs`, in first-seen order.
pub(crate) fn task_order(runs: &[RunRecord]) -> Vec<&str> {
    let mut seen = BTreeSet::new();
    runs.iter()
        .map(|r| r.task.as_str())
        .filter(|t| seen.insert(*t))
        .collect()
}

#[cfg(test)]
pub(crate) mod tests;
