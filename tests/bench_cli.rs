//! `hermes bench loop` end to end: the real binary runs many loops through
//! the real read_file tool and reports what they cost (figures are
//! reported, never asserted: only that they were measured).

mod common;

use serde_json::Value;

#[test]
fn the_loop_bench_runs_every_loop_and_reports_its_costs() {
    let output = std::process::Command::new(common::hermes_bin())
        .args([
            "bench",
            "loop",
            "--agents",
            "30",
            "--model-latency-ms",
            "5",
            "--rounds",
            "6",
            "--json",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    let report: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(report["agents"], 30);
    assert_eq!(report["finished"], 30, "{report}");
    assert_eq!(report["rounds"], 180);
    for field in [
        "seconds",
        "rounds_per_sec",
        "cpu_per_round_us",
        "overhead_p50_us",
        "overhead_p99_us",
        "peak_rss_mib",
    ] {
        assert!(report[field].as_f64().unwrap() > 0.0, "{field}: {report}");
    }
    let bad = std::process::Command::new(common::hermes_bin())
        .args(["bench", "loop", "--agents", "0"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(1));
}

/// Runs `hermes bench ARGS --json`; its report (the last line of stdout).
fn bench_json(args: &[&str]) -> Value {
    let output = std::process::Command::new(common::hermes_bin())
        .arg("bench")
        .args(args)
        .arg("--json")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{args:?}: {stderr}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    serde_json::from_str(stdout.lines().last().unwrap()).unwrap()
}

#[test]
fn the_http_bench_runs_every_task_through_its_own_server() {
    let report = bench_json(&[
        "http",
        "--tasks",
        "12",
        "--concurrency",
        "4",
        "--rounds",
        "5",
    ]);
    assert_eq!(report["tasks"], 12);
    assert_eq!(report["concurrency"], 4);
    assert_eq!(report["finished"], 12, "{report}");
    assert_eq!(report["rounds"], 60, "rounds = tasks x rounds");
    assert_eq!(report["server_in_process"], true);
    for field in [
        "seconds",
        "rounds_per_sec",
        "cpu_per_round_us",
        "server_cpu_per_round_us",
        "latency_p50_ms",
        "latency_p99_ms",
        "peak_rss_mib",
    ] {
        assert!(report[field].as_f64().unwrap() > 0.0, "{field}: {report}");
    }
}

/// A `hermes bench serve` process, stopped when dropped (also when a test fails).
struct Served(std::process::Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_http_bench_against_a_served_script_and_one_that_is_not_there() {
    let mut server = Served(
        std::process::Command::new(common::hermes_bin())
            .args(["bench", "serve", "--port", "0", "--rounds", "4"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut url = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(server.0.stdout.take().unwrap()),
        &mut url,
    )
    .unwrap();
    let url = url.trim().to_string();
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with("/v1"),
        "{url}"
    );
    let served = std::process::Command::new(common::hermes_bin())
        .args(["bench", "http", "--base-url", &url, "--tasks", "6"])
        .args(["--concurrency", "3", "--rounds", "4", "--json"])
        .output()
        .unwrap();
    drop(server);
    let stdout = String::from_utf8_lossy(&served.stdout);
    let report: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(report["rounds"], 24, "{report}");
    assert_eq!(report["server_in_process"], false);
    assert!(report["server_cpu_per_round_us"].is_null());

    // The server is gone now: one clear error, exit 1.
    let gone = std::process::Command::new(common::hermes_bin())
        .args(["bench", "http", "--base-url", &url, "--tasks", "5"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&gone.stderr);
    assert_eq!(gone.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.matches("error:").count(), 1, "{stderr}");
    assert!(stderr.contains("--base-url"), "{stderr}");
}

#[test]
fn the_plan_bench_finishes_every_subtask() {
    let report = bench_json(&[
        "plan",
        "--subtasks",
        "16",
        "--roles",
        "4",
        "--model-latency-ms",
        "40",
    ]);
    assert_eq!(report["subtasks"], 16);
    assert_eq!(report["status"], "finished", "{report}");
    assert_eq!(report["finished_subtasks"], 16, "{report}");
    // Half the subtasks take 2 rounds, half 3.
    assert_eq!(report["rounds"], 40);
    for field in [
        "rounds_per_sec",
        "cpu_per_round_us",
        "model_path_ms",
        "peak_rss_mib",
    ] {
        assert!(report[field].as_f64().unwrap() > 0.0, "{field}: {report}");
    }
    // All 16 are dispatched at once and each lives at least two 40 ms
    // model calls, so the 20 ms sampler sees them alive together.
    let live = report["peak_live_executors"].as_u64().unwrap();
    assert!((1..=16).contains(&live), "{report}");
}

#[test]
fn the_context_bench_prints_the_ratio_of_round_30_to_round_8() {
    let output = std::process::Command::new(common::hermes_bin())
        .args(["bench", "context"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(text.contains("round 30 / round 8: windowed"), "{text}");
    let report = bench_json(&["context", "--rounds", "40"]);
    for series in ["windowed", "full_history"] {
        assert_eq!(report[series]["chars"].as_array().unwrap().len(), 40);
        assert!(report[series]["ratio_30_to_8"].as_f64().unwrap() > 0.0);
    }
}
