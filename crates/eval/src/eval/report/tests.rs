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
