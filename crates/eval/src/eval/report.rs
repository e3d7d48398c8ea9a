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
pub(crate) mod tests {
    use super::*;

    /// A run for tests: everything but what the test looks at is plain.
    pub(crate) fn run(task: &str, category: &str, rep: u32, passed: bool) -> RunRecord {
        RunRecord {
            task: task.into(),
            category: category.into(),
            rep,
            passed,
            status: if passed {
                RunStatus::Finished
            } else {
                RunStatus::MaxRounds
            },
            rounds: 4,
            seconds: 10.0,
            usage: Usage {
                prompt_tokens: 1000,
                completion_tokens: 100,
                cached_tokens: 0,
            },
            failed_checks: if passed {
                vec![]
            } else {
                vec![r#"file answer.txt: expected "7", found "8""#.into()]
            },
            faults: BTreeMap::new(),
            error: None,
            steered: BTreeMap::new(),
        }
    }

    #[test]
    fn by_steer_counts_the_rounds_and_runs_each_steer_answered() {
        let mut a = run("a", "normal", 1, true);
        a.steered = BTreeMap::from([
            ("compute_check".to_string(), 1),
            ("read_check".to_string(), 2),
        ]);
        let mut b = run("b", "normal", 1, false);
        b.steered = BTreeMap::from([("compute_check".to_string(), 1)]);
        let s = Summary::compute(&[a, b, run("c", "normal", 1, true)], 1);
        assert_eq!(
            s.by_steer["compute_check"],
            SteerStats {
                rounds: 2,
                runs: 2,
                runs_passed: 1
            }
        );
        assert_eq!(
            s.by_steer["read_check"],
            SteerStats {
                rounds: 2,
                runs: 1,
                runs_passed: 1
            }
        );
        // Absent from the JSON when no steer acted.
        let quiet = Summary::compute(&[run("c", "normal", 1, true)], 1);
        assert!(serde_json::to_value(&quiet)
            .unwrap()
            .get("by_steer")
            .is_none());
    }

    /// Task A 3/3, task B 2/3, task C 0/3.
    pub(crate) fn mixed_runs() -> Vec<RunRecord> {
        let mut runs = Vec::new();
        for rep in 1..=3 {
            runs.push(run("a", "normal", rep, true));
            runs.push(run("b", "normal", rep, rep != 2));
            runs.push(run("c", "edge", rep, false));
        }
        runs
    }

    #[test]
    fn pass_hat_k_matches_the_hand_computation_for_k_3() {
        let s = Summary::compute(&mixed_runs(), 3);
        // pass^1 = (3/3 + 2/3 + 0/3) / 3 = 5/9
        // pass^2 = (C(3,2)/C(3,2) + C(2,2)/C(3,2) + 0) / 3 = (1 + 1/3 + 0) / 3 = 4/9
        // pass^3 = (1 + 0 + 0) / 3 = 1/3
        assert_eq!(s.pass_hat_k.len(), 3);
        assert_eq!(s.pass_hat_k[&1], round3(5.0 / 9.0));
        assert_eq!(s.pass_hat_k[&2], round3((1.0 + 1.0 / 3.0) / 3.0));
        assert_eq!(s.pass_hat_k[&3], round3(1.0 / 3.0));
        assert_eq!(s.success_rate, s.pass_hat_k[&1]);
        assert_eq!((s.runs, s.passed), (9, 5));
    }

    #[test]
    fn pass_hat_k_serialises_with_string_keys_and_reads_back() {
        let s = Summary::compute(&mixed_runs(), 3);
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["pass_hat_k"]["1"], serde_json::json!(0.556));
        assert_eq!(json["pass_hat_k"]["3"], serde_json::json!(0.333));
        let back: Summary = serde_json::from_value(json).unwrap();
        assert_eq!(back, s);
    }

    #[test]
    fn choose_ratio_is_exact_on_small_cases() {
        assert_eq!(choose_ratio(3, 3, 2), 1.0);
        assert!((choose_ratio(2, 3, 2) - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(choose_ratio(1, 3, 2), 0.0);
        assert!((choose_ratio(4, 5, 2) - 6.0 / 10.0).abs() < 1e-12);
    }

    #[test]
    fn a_task_with_fewer_runs_is_left_out_of_larger_k() {
        let mut runs = mixed_runs();
        runs.retain(|r| !(r.task == "c" && r.rep == 3));
        let s = Summary::compute(&runs, 3);
        // k = 3: only a (1) and b (0) have 3 runs.
        assert_eq!(s.pass_hat_k[&3], 0.5);
    }

    #[test]
    fn stops_count_every_status_and_always_list_the_run_ones() {
        let mut runs = mixed_runs();
        runs[2].status = RunStatus::Timeout;
        runs[5].status = RunStatus::Failed;
        let s = Summary::compute(&runs, 3);
        let expect: BTreeMap<String, u64> = [
            ("error", 0),
            ("failed", 1),
            ("finished", 5),
            ("incomplete", 0),
            ("max_rounds", 2),
            ("repetition", 0),
            ("timeout", 1),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        assert_eq!(s.stops, expect);
    }

    #[test]
    fn by_category_counts_runs_and_passes() {
        let s = Summary::compute(&mixed_runs(), 3);
        assert_eq!(
            s.by_category["normal"],
            CategoryStats { runs: 6, passed: 5 }
        );
        assert_eq!(s.by_category["edge"], CategoryStats { runs: 3, passed: 0 });
        assert_eq!(s.by_category.len(), 2);
    }

    #[test]
    fn by_fault_counts_injections_hits_and_recovery() {
        let mut runs = mixed_runs();
        // a.1 passed with 2 tool errors, b.2 failed with 1, c.1 failed with
        // 1 tool error and 1 non-JSON reply; a.2 lists a kind never injected.
        runs[0].faults.insert("tool_error".into(), 2);
        runs[4].faults.insert("tool_error".into(), 1);
        runs[2].faults.insert("tool_error".into(), 1);
        runs[2].faults.insert("llm_non_json".into(), 1);
        runs[3].faults.insert("llm_timeout".into(), 0);
        let s = Summary::compute(&runs, 3);
        assert_eq!(
            s.by_fault["tool_error"],
            FaultStats {
                injected: 4,
                runs_hit: 3,
                runs_hit_passed: 1,
                recovery_rate: Some(0.333)
            }
        );
        assert_eq!(
            s.by_fault["llm_non_json"],
            FaultStats {
                injected: 1,
                runs_hit: 1,
                runs_hit_passed: 0,
                recovery_rate: Some(0.0)
            }
        );
        assert_eq!(s.by_fault["llm_timeout"].recovery_rate, None);
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(
            json["by_fault"]["llm_timeout"]["recovery_rate"],
            Value::Null
        );
    }

    #[test]
    fn means_percentiles_and_tokens() {
        let mut runs = Vec::new();
        for i in 1..=20u32 {
            let mut r = run("t", "normal", i, true);
            r.rounds = i;
            r.seconds = i as f64 * 1.5;
            runs.push(r);
        }
        let s = Summary::compute(&runs, 20);
        assert_eq!(s.mean_rounds, 10.5);
        // Nearest rank: ⌈0.95 · 20⌉ = 19th value.
        assert_eq!(s.p95_rounds, 19);
        assert_eq!(s.p95_seconds, 28.5);
        assert_eq!(s.mean_seconds, 15.75);
        assert_eq!(s.tokens.prompt_tokens, 20_000);
        assert_eq!(s.tokens.completion_tokens, 2_000);
        let per_pass = 22_000.0 / s.passed as f64;
        assert_eq!(s.tokens_per_pass, Some(per_pass.round()));
    }

    #[test]
    fn an_empty_report_summarises_to_zeros() {
        let s = Summary::compute(&[], 3);
        assert_eq!(
            (s.runs, s.passed, s.success_rate, s.p95_rounds),
            (0, 0, 0.0, 0)
        );
        assert!(s.pass_hat_k.is_empty());
        assert_eq!(s.stops.len(), 6);
    }

    #[test]
    fn reports_read_back_and_tolerate_extra_fields() {
        let report = Report::new("files", "qwen", 3, BTreeMap::new(), 7, mixed_runs());
        let mut json = serde_json::to_value(&report).unwrap();
        json["new_field"] = serde_json::json!(1);
        json["runs"][0]["extra"] = serde_json::json!("x");
        json["summary"]["later_metric"] = serde_json::json!(2.0);
        let back: Report = serde_json::from_value(json).unwrap();
        assert_eq!(back, report);
    }

    #[test]
    fn the_report_json_has_the_contract_fields() {
        let mut runs = mixed_runs();
        runs[0].faults.insert("tool_error".into(), 1);
        let faults = [("tool_error".to_string(), serde_json::json!(0.2))].into();
        let report = Report::new("files", "qwen", 3, faults, 7, runs);
        let json = serde_json::to_value(&report).unwrap();
        for key in [
            "suite", "model", "repeat", "faults", "seed", "runs", "summary",
        ] {
            assert!(json.get(key).is_some(), "{key}");
        }
        let run = &json["runs"][0];
        for key in [
            "task",
            "category",
            "rep",
            "passed",
            "status",
            "rounds",
            "seconds",
            "usage",
            "failed_checks",
            "faults",
        ] {
            assert!(run.get(key).is_some(), "runs[0].{key}");
        }
        assert!(run.get("error").is_none());
        assert_eq!(run["usage"]["prompt_tokens"], 1000);
        let summary = &json["summary"];
        for key in [
            "runs",
            "passed",
            "success_rate",
            "pass_hat_k",
            "mean_rounds",
            "p95_rounds",
            "mean_seconds",
            "p95_seconds",
            "tokens",
            "stops",
            "by_category",
            "by_fault",
        ] {
            assert!(summary.get(key).is_some(), "summary.{key}");
        }
        assert_eq!(summary["by_fault"]["tool_error"]["runs_hit"], 1);
        assert_eq!(json["faults"]["tool_error"], 0.2);
    }

    #[test]
    fn journal_paths_are_relative_to_the_report_folder() {
        assert_eq!(
            run("admins", "normal", 2, true).journal_path(),
            "runs/admins.2/journal.jsonl"
        );
    }
}
