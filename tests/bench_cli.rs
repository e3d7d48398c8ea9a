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
