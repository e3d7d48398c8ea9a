//! `hermes eval` end to end: the real binary against a scripted
//! OpenAI-compatible server on loopback (and, for fault injection, against
//! `--script`), asserting on the `--json` report, the exit codes, the
//! report folder and `--compare`.

mod common;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use common::{decision, finish, hermes, messages_text, Reply, ScriptedServer};
use regex::Regex;
use serde_json::{json, Value};

/// Three tasks for K = 3: `task-a` always passes, `task-b` passes on its
/// 1st and 3rd run (the server writes a wrong answer on the 2nd), `task-c`
/// never passes (it never writes c.txt and runs out of its 2 rounds).
const MIXED_SUITE: &str = r#"
name = "mixed"

[defaults]
max_rounds = 5

[[defaults.check]]
status = "finished"

[[task]]
id = "task-a"
category = "normal"
goal = "MARK-A: write alpha to a.txt."
[[task.check]]
file = "a.txt"
equals = "alpha"

[[task]]
id = "task-b"
category = "normal"
goal = "MARK-B: write beta to b.txt."
[[task.check]]
file = "b.txt"
equals = "beta"

[[task]]
id = "task-c"
category = "edge"
goal = "MARK-C: write gamma to c.txt."
max_rounds = 2
[[task.check]]
file = "c.txt"
equals = "gamma"
"#;

/// The round a prompt is on: the last `Round N of` in its messages.
fn round_of(request: &Value) -> u32 {
    static ROUND: OnceLock<Regex> = OnceLock::new();
    let round = ROUND.get_or_init(|| Regex::new(r"Round (\d+) of \d+").unwrap());
    round
        .captures_iter(&messages_text(request))
        .last()
        .map_or(1, |c| c[1].parse().unwrap())
}

/// A server that plays the model for [`MIXED_SUITE`]: it tells the tasks
/// apart by the marker in their goals and counts task B's runs by their
/// first round. Needs `--concurrency 1` so the count follows rep order.
async fn mixed_server() -> ScriptedServer {
    let b_runs = Arc::new(AtomicUsize::new(0));
    ScriptedServer::with_responder(move |request| {
        let prompt = messages_text(request);
        let round = round_of(request);
        if prompt.contains("MARK-A") {
            match round {
                1 => decision("write_file", json!({"path": "a.txt", "content": "alpha"})),
                _ => finish("wrote a.txt"),
            }
        } else if prompt.contains("MARK-B") {
            match round {
                1 => {
                    let run = b_runs.fetch_add(1, Ordering::SeqCst) + 1;
                    let content = if run == 2 { "bta" } else { "beta" };
                    decision("write_file", json!({"path": "b.txt", "content": content}))
                }
                _ => finish("wrote b.txt"),
            }
        } else if prompt.contains("MARK-C") {
            // Looks around and never writes: stopped by its 2-round budget.
            decision("list_dir", json!({"path": format!("d{round}")}))
        } else {
            Reply::Status(400, format!("unexpected prompt: {prompt}"))
        }
    })
    .await
}

/// A temporary folder holding `suite.toml` with `text`.
fn suite_dir(text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("suite.toml");
    std::fs::write(&suite, text).unwrap();
    (dir, suite)
}

/// `hermes eval SUITE --repeat 3 --concurrency 1 EXTRA…` against a fresh
/// [`mixed_server`].
async fn eval_mixed(suite: &Path, extra: &[&str]) -> common::Run {
    let server = mixed_server().await;
    eval_three_times(suite, &server.base_url, extra).await
}

/// `hermes eval SUITE --repeat 3 --concurrency 1 EXTRA…` against the
/// server at `base_url`, the runs one after another.
async fn eval_three_times(suite: &Path, base_url: &str, extra: &[&str]) -> common::Run {
    let mut args = vec![
        "eval",
        suite.to_str().unwrap(),
        "--repeat",
        "3",
        "--concurrency",
        "1",
    ];
    args.extend_from_slice(extra);
    hermes(&args, base_url).await
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

#[tokio::test(flavor = "multi_thread")]
async fn json_report_counts_passes_pass_hat_k_categories_and_stops() {
    let (_dir, suite) = suite_dir(MIXED_SUITE);
    let run = eval_mixed(&suite, &["--json"]).await;
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let report = run.outcome();
    assert_eq!(report["suite"], "mixed");
    assert_eq!(report["model"], "scripted");
    assert_eq!(report["repeat"], 3);
    assert_eq!(report["seed"], 0);
    assert_eq!(report["faults"], json!({}));

    let summary = &report["summary"];
    assert_eq!(summary["runs"], 9);
    assert_eq!(summary["passed"], 5);
    assert_eq!(summary["success_rate"], json!(round3(5.0 / 9.0)));
    // pass^k = mean over tasks of C(c, k) / C(n, k), with (n, c) = (3, 3),
    // (3, 2), (3, 0): k = 1: (1 + 2/3 + 0) / 3; k = 2: (1 + 1/3 + 0) / 3;
    // k = 3: (1 + 0 + 0) / 3.
    assert_eq!(
        summary["pass_hat_k"],
        json!({
            "1": round3(5.0 / 9.0),
            "2": round3((1.0 + 1.0 / 3.0 + 0.0) / 3.0),
            "3": round3(1.0 / 3.0),
        })
    );
    assert_eq!(
        summary["by_category"],
        json!({
            "normal": {"runs": 6, "passed": 5},
            "edge": {"runs": 3, "passed": 0},
        })
    );
    assert_eq!(
        summary["stops"],
        json!({"finished": 6, "incomplete": 0, "max_rounds": 3, "repetition": 0, "timeout": 0, "error": 0})
    );
    // Every run took 2 rounds, i.e. 2 requests of 10 + 5 tokens.
    assert_eq!(summary["mean_rounds"], json!(2.0));
    assert_eq!(summary["p95_rounds"], 2);
    assert_eq!(
        summary["tokens"],
        json!({"prompt_tokens": 180, "completion_tokens": 90, "cached_tokens": 0})
    );
    assert_eq!(summary["by_fault"], json!({}));

    // Suite order, then repetition; failed checks listed iff not passed.
    let runs = report["runs"].as_array().unwrap();
    let seen: Vec<(String, u64, bool, String)> = runs
        .iter()
        .map(|r| {
            (
                r["task"].as_str().unwrap().to_string(),
                r["rep"].as_u64().unwrap(),
                r["passed"].as_bool().unwrap(),
                r["status"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let expected: Vec<(String, u64, bool, String)> = [
        ("task-a", 1, true, "finished"),
        ("task-a", 2, true, "finished"),
        ("task-a", 3, true, "finished"),
        ("task-b", 1, true, "finished"),
        ("task-b", 2, false, "finished"),
        ("task-b", 3, true, "finished"),
        ("task-c", 1, false, "max_rounds"),
        ("task-c", 2, false, "max_rounds"),
        ("task-c", 3, false, "max_rounds"),
    ]
    .into_iter()
    .map(|(t, rep, p, s)| (t.to_string(), rep, p, s.to_string()))
    .collect();
    assert_eq!(seen, expected);
    for r in runs {
        let failed = r["failed_checks"].as_array().unwrap();
        assert_eq!(
            failed.is_empty(),
            r["passed"].as_bool().unwrap(),
            "failed_checks must be non-empty exactly when the run failed: {r}"
        );
        assert_eq!(r["rounds"], 2, "{r}");
        assert_eq!(r["faults"], json!({}), "{r}");
        assert_eq!(
            r["usage"],
            json!({"prompt_tokens": 20, "completion_tokens": 10, "cached_tokens": 0}),
            "{r}"
        );
        assert_eq!(
            r["category"],
            if r["task"] == "task-c" {
                "edge"
            } else {
                "normal"
            }
        );
    }
    let b2 = runs[4]["failed_checks"].to_string();
    assert!(b2.contains("b.txt") && b2.contains("bta"), "{b2}");
    let c1 = runs[6]["failed_checks"].to_string();
    assert!(c1.contains("c.txt") && c1.contains("max_rounds"), "{c1}");
}

/// `hermes eval` on a suite written to a temp folder; it must fail before
/// any model is asked.
async fn eval_bad_suite(text: &str) -> common::Run {
    let (_dir, suite) = suite_dir(text);
    let run = hermes(
        &["eval", suite.to_str().unwrap(), "--json"],
        "http://127.0.0.1:1/v1",
    )
    .await;
    assert_eq!(
        run.code, 1,
        "stdout: {}\nstderr: {}",
        run.stdout, run.stderr
    );
    assert!(run.stdout.trim().is_empty(), "no report: {}", run.stdout);
    run
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_suites_exit_1_naming_the_task_and_the_field() {
    let run = eval_bad_suite(
        "[[task]]\nid = \"typo\"\ngoal = \"g\"\nfiels = { \"a.txt\" = \"x\" }\n\
         [[task.check]]\nstatus = \"finished\"\n",
    )
    .await;
    for needle in [
        "suite.toml",
        "task `typo`",
        "field `fiels`",
        "unknown field",
    ] {
        assert!(run.stderr.contains(needle), "{needle}: {}", run.stderr);
    }

    let run = eval_bad_suite("[[task]]\nid = \"lonely\"\ngoal = \"g\"\n").await;
    for needle in ["task `lonely`", "field `check`"] {
        assert!(run.stderr.contains(needle), "{needle}: {}", run.stderr);
    }

    let run = eval_bad_suite(
        "[[task]]\nid = \"same\"\ngoal = \"g\"\n[[task.check]]\nstatus = \"finished\"\n\
         [[task]]\nid = \"same\"\ngoal = \"h\"\n[[task.check]]\nstatus = \"finished\"\n",
    )
    .await;
    for needle in ["task `same`", "field `id`", "duplicate id"] {
        assert!(run.stderr.contains(needle), "{needle}: {}", run.stderr);
    }

    let run = eval_bad_suite(
        "[[task]]\nid = \"escape\"\ngoal = \"g\"\n[task.files]\n\"../x\" = \"x\"\n\
         [[task.check]]\nstatus = \"finished\"\n",
    )
    .await;
    for needle in ["task `escape`", "field `files`", "../x"] {
        assert!(run.stderr.contains(needle), "{needle}: {}", run.stderr);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn min_success_exits_3_below_the_rate_and_0_at_or_above_it() {
    let (_dir, suite) = suite_dir(MIXED_SUITE);
    // The suite's success rate is 5/9 = 0.556.
    let below = eval_mixed(&suite, &["--json", "--min-success", "0.9"]).await;
    assert_eq!(below.code, 3, "stderr: {}", below.stderr);
    assert!(
        below.stderr.contains("below --min-success 0.9"),
        "{}",
        below.stderr
    );
    // The report is still printed.
    assert_eq!(below.outcome()["summary"]["passed"], 5);

    let above = eval_mixed(&suite, &["--json", "--min-success", "0.5"]).await;
    assert_eq!(above.code, 0, "stderr: {}", above.stderr);
    assert_eq!(above.outcome()["summary"]["passed"], 5);
}

#[tokio::test(flavor = "multi_thread")]
async fn unreachable_model_exits_1_naming_the_url() {
    let (_dir, suite) = suite_dir(MIXED_SUITE);
    let url = "http://127.0.0.1:1/v1";
    // The flag wins over the variable, which names another dead port.
    let run = hermes(
        &[
            "eval",
            suite.to_str().unwrap(),
            "--only",
            "task-a",
            "--json",
            "--base-url",
            url,
        ],
        "http://127.0.0.1:9/v1",
    )
    .await;
    assert_eq!(
        run.code, 1,
        "stdout: {}\nstderr: {}",
        run.stdout, run.stderr
    );
    assert!(
        run.stderr.contains("could not reach the model server"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains(url), "{}", run.stderr);
    assert!(!run.stderr.contains("127.0.0.1:9/"), "{}", run.stderr);
}

#[tokio::test(flavor = "multi_thread")]
async fn report_folder_holds_reports_and_journals_and_compare_shows_the_changes() {
    let (dir, suite) = suite_dir(MIXED_SUITE);
    let old = dir.path().join("old");
    let run = eval_mixed(&suite, &["--report", old.to_str().unwrap()]).await;
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    for file in ["report.json", "report.md", "report.html"] {
        let path = old.join(file);
        assert!(
            std::fs::metadata(&path)
                .map(|m| m.len() > 0)
                .unwrap_or(false),
            "{} is missing or empty",
            path.display()
        );
    }
    for task in ["task-a", "task-b", "task-c"] {
        for rep in 1..=3 {
            let journal = old.join(format!("runs/{task}.{rep}/journal.jsonl"));
            let text = std::fs::read_to_string(&journal)
                .unwrap_or_else(|e| panic!("{}: {e}", journal.display()));
            let lines: Vec<Value> = text
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
            assert_eq!(lines.len(), 2, "{}", journal.display());
            assert_eq!(lines[0]["round"], 1);
        }
    }
    // The run's workspace is kept next to its journal.
    assert_eq!(
        std::fs::read_to_string(old.join("runs/task-b.2/workspace/b.txt")).unwrap(),
        "bta"
    );
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(old.join("report.json")).unwrap()).unwrap();
    assert_eq!(written["summary"]["passed"], 5);

    // A second eval: only task A (3 runs, all passing).
    let new = dir.path().join("new");
    let run = eval_mixed(
        &suite,
        &["--report", new.to_str().unwrap(), "--only", "task-a"],
    )
    .await;
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);

    let old_json = old.join("report.json");
    let new_json = new.join("report.json");
    let compared = hermes(
        &[
            "eval",
            "--compare",
            old_json.to_str().unwrap(),
            new_json.to_str().unwrap(),
        ],
        "http://127.0.0.1:1/v1",
    )
    .await;
    assert_eq!(compared.code, 0, "stderr: {}", compared.stderr);
    let out = &compared.stdout;
    for metric in [
        "runs",
        "passed",
        "success_rate",
        "pass^1",
        "pass^2",
        "pass^3",
        "mean_rounds",
        "p95_rounds",
        "mean_seconds",
        "p95_seconds",
        "tokens.prompt_tokens",
        "tokens.completion_tokens",
        "stops.finished",
        "stops.max_rounds",
        "by_category.normal.runs",
        "by_category.edge.runs",
    ] {
        assert!(
            out.lines().any(|l| l.starts_with(metric)),
            "{metric} missing:\n{out}"
        );
    }
    // The cells of one row: metric, old, new, change.
    let row = |metric: &str| -> Vec<String> {
        out.lines()
            .map(|l| l.split_whitespace().map(String::from).collect::<Vec<_>>())
            .find(|cells| cells.first().map(String::as_str) == Some(metric))
            .unwrap_or_else(|| panic!("no row {metric}:\n{out}"))
    };
    assert_eq!(row("runs"), ["runs", "9", "3", "-6"]);
    assert_eq!(row("passed"), ["passed", "5", "3", "-2"]);
    assert_eq!(
        row("success_rate"),
        ["success_rate", "0.556", "1.000", "+0.444"]
    );
    assert_eq!(row("pass^3"), ["pass^3", "0.333", "1.000", "+0.667"]);
    assert_eq!(
        row("by_category.edge.runs"),
        ["by_category.edge.runs", "3", "-", "n/a"]
    );
    assert_eq!(
        row("stops.max_rounds"),
        ["stops.max_rounds", "3", "0", "-3"]
    );
}

/// One task whose script writes out.txt, then finishes.
const ONE_TASK_SUITE: &str = r#"
[[task]]
id = "write-one"
goal = "Write done to out.txt."
[[task.check]]
file = "out.txt"
equals = "done"
"#;

const ONE_TASK_SCRIPT: &str = r#"
[write-one]
replies = [
  '{"thought": "write it", "action": {"name": "write_file", "args": {"path": "out.txt", "content": "done"}}}',
  '{"thought": "done", "action": {"name": "finish", "args": {"result": "wrote out.txt"}}}',
]
"#;

/// `hermes eval` of [`ONE_TASK_SUITE`] with [`ONE_TASK_SCRIPT`], `--json`
/// and `--report DIR` plus `extra`; returns the report.
async fn eval_scripted(dir: &Path, report: &Path, extra: &[&str]) -> Value {
    let suite = dir.join("one.toml");
    let script = dir.join("one.script.toml");
    std::fs::write(&suite, ONE_TASK_SUITE).unwrap();
    std::fs::write(&script, ONE_TASK_SCRIPT).unwrap();
    let mut args = vec![
        "eval",
        suite.to_str().unwrap(),
        "--script",
        script.to_str().unwrap(),
        "--json",
        "--report",
        report.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let run = hermes(&args, "http://127.0.0.1:1/v1").await;
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    run.outcome()
}

/// Each run's `faults`, in report order.
fn run_faults(report: &Value) -> Vec<Value> {
    report["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["faults"].clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn injected_tool_errors_are_journalled_reported_and_reproducible() {
    let dir = tempfile::tempdir().unwrap();
    let faults = ["--faults", "tool_error=1", "--seed", "1"];
    let first = eval_scripted(dir.path(), &dir.path().join("r1"), &faults).await;

    assert_eq!(first["faults"], json!({"tool_error": 1.0}));
    assert_eq!(first["seed"], 1);
    let run = &first["runs"][0];
    let injected = run["faults"]["tool_error"].as_u64().unwrap_or(0);
    assert!(injected > 0, "{run}");
    assert_eq!(run["passed"], false, "the write failed: {run}");
    let by_fault = &first["summary"]["by_fault"]["tool_error"];
    assert!(by_fault["injected"].as_u64().unwrap() > 0, "{by_fault}");
    assert_eq!(by_fault["runs_hit"], 1);
    assert_eq!(by_fault["runs_hit_passed"], 0);

    let journal =
        std::fs::read_to_string(dir.path().join("r1/runs/write-one.1/journal.jsonl")).unwrap();
    let lines: Vec<Value> = journal
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["action"], "write_file");
    assert_eq!(lines[0]["injected"], "tool_error", "{journal}");
    let journalled = lines
        .iter()
        .filter(|l| l["injected"] == "tool_error")
        .count() as u64;
    assert_eq!(journalled, injected, "{journal}");

    // The same seed injects the same faults.
    let second = eval_scripted(dir.path(), &dir.path().join("r2"), &faults).await;
    assert_eq!(run_faults(&first), run_faults(&second));
    assert_eq!(first["summary"]["by_fault"], second["summary"]["by_fault"]);

    // Also at rates where the draws matter, over several runs.
    let mixed = [
        "--faults",
        "tool_error=0.5,llm_non_json=0.5",
        "--seed",
        "1",
        "--repeat",
        "6",
    ];
    let a = eval_scripted(dir.path(), &dir.path().join("r3"), &mixed).await;
    let b = eval_scripted(dir.path(), &dir.path().join("r4"), &mixed).await;
    assert_eq!(run_faults(&a), run_faults(&b));
    assert_eq!(a["summary"]["by_fault"], b["summary"]["by_fault"]);
    assert_eq!(a["summary"]["passed"], b["summary"]["passed"]);
    assert!(
        run_faults(&a).iter().any(|f| f != &json!({})),
        "some run was hit: {a}"
    );
}

/// `hermes eval evals/files.toml --script evals/files.script.toml` plus
/// `extra`; returns the report. Needs bubblewrap (one task runs a script).
async fn eval_shipped(extra: &[&str]) -> Value {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let suite = root.join("evals/files.toml");
    let script = root.join("evals/files.script.toml");
    let mut args = vec![
        "eval",
        suite.to_str().unwrap(),
        "--script",
        script.to_str().unwrap(),
        "--json",
    ];
    args.extend_from_slice(extra);
    let run = hermes(&args, "http://127.0.0.1:1/v1").await;
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    run.outcome()
}

#[tokio::test(flavor = "multi_thread")]
async fn shipped_script_solves_every_shipped_task_and_seeded_faults_give_a_fixed_rate() {
    let clean = eval_shipped(&[]).await;
    let failed: Vec<&Value> = clean["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["passed"] != true)
        .collect();
    assert!(failed.is_empty(), "{failed:#?}");
    assert_eq!(clean["summary"]["success_rate"], json!(1.0));

    // CI runs this with `--min-success` at this rate: a change here means
    // the runtime recovers differently, and CI's floor needs a look too.
    // (0.75 until the read check was on by default: it refuses empty-csv's
    // write after the read hit a fault, and a script cannot read again;
    // 0.688 on the 16 tasks before the suite grew to 45; 0.622 until the
    // input preview: a file shown before round 1 counts as read, so a write
    // after a read that hit a fault is no longer refused; EVALS.md, section 1.)
    let faults = ["--faults", "tool_error=0.2,llm_non_json=0.2", "--seed", "7"];
    let a = eval_shipped(&faults).await;
    let b = eval_shipped(&faults).await;
    assert_eq!(
        a["summary"]["success_rate"],
        json!(0.711),
        "{}",
        a["summary"]
    );
    assert_eq!(run_faults(&a), run_faults(&b));
    assert_eq!(a["summary"]["by_fault"], b["summary"]["by_fault"]);
    let passed = |r: &Value| -> Vec<Value> {
        r["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["passed"].clone())
            .collect()
    };
    assert_eq!(passed(&a), passed(&b));
}

/// `hermes eval` of the suite `text` with one role, `worker`, and a report
/// folder (returned with the suite's folder, which holds it, and the run).
async fn eval_with_workers(
    text: &str,
    extra: &[&str],
    base_url: &str,
) -> (tempfile::TempDir, PathBuf, common::Run) {
    let (dir, suite) = suite_dir(text);
    let roles = common::roles_dir(
        "name = \"NAME\"\ndescription = \"Does small jobs.\"\nsystem_prompt = \"You work.\"\n",
        &["worker"],
    );
    let out = dir.path().join("out");
    let mut args = vec![
        "eval",
        suite.to_str().unwrap(),
        "--roles",
        roles.path().to_str().unwrap(),
        "--report",
        out.to_str().unwrap(),
        "--json",
    ];
    args.extend_from_slice(extra);
    let run = hermes(&args, base_url).await;
    (dir, out, run)
}

/// `--subtask-concurrency 1` runs a plan's independent subtasks one after
/// another: every round of one executor comes before the other's first.
#[tokio::test(flavor = "multi_thread")]
async fn subtask_concurrency_one_runs_independent_subtasks_one_after_another() {
    let server = ScriptedServer::with_responder(|request| {
        let prompt = messages_text(request);
        if prompt.contains("You are the planner") {
            return Reply::Content(
                json!({"subtasks": [
                    {"id": "s1", "role": "worker", "goal": "MARK-A: write alpha to a.txt.", "outputs": ["a.txt"], "depends_on": []},
                    {"id": "s2", "role": "worker", "goal": "MARK-B: write beta to b.txt.", "outputs": ["b.txt"], "depends_on": []}
                ]})
                .to_string(),
            );
        }
        if prompt.contains("final answer of a team") {
            return common::text("a.txt and b.txt written");
        }
        // An executor's goal opens its turn; the other subtask's may be
        // named further on.
        let (path, content) = if prompt.contains("Goal: MARK-A") {
            ("a.txt", "alpha")
        } else if prompt.contains("Goal: MARK-B") {
            ("b.txt", "beta")
        } else {
            return Reply::Status(400, format!("unexpected prompt: {prompt}"));
        };
        match round_of(request) {
            1 => decision("write_file", json!({"path": path, "content": content})),
            _ => finish(&format!("wrote {path}")),
        }
    })
    .await;
    let (_dir, out, run) = eval_with_workers(
        "name = \"two\"\n[[task]]\nid = \"two-files\"\nmode = \"plan\"\ntimeout_secs = 60\ngoal = \"Write alpha to a.txt and beta to b.txt.\"\n[[task.check]]\nfile = \"a.txt\"\nequals = \"alpha\"\n[[task.check]]\nfile = \"b.txt\"\nequals = \"beta\"\n",
        &["--subtask-concurrency", "1"],
        &server.base_url,
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.outcome()["runs"][0]["passed"], true, "{}", run.stdout);
    let rounds = std::fs::read_to_string(out.join("runs/two-files.1/rounds.jsonl")).unwrap();
    let subtasks: Vec<String> = rounds
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["subtask"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(subtasks.len(), 4, "{rounds}");
    assert_eq!(subtasks[0], subtasks[1], "{rounds}");
    assert_eq!(subtasks[2], subtasks[3], "{rounds}");
    assert_ne!(subtasks[1], subtasks[2], "{rounds}");
}

#[tokio::test(flavor = "multi_thread")]
async fn mode_run_plan_runs_each_task_both_ways_and_reports_them_side_by_side() {
    let server = ScriptedServer::with_responder(|request| {
        let system = request["messages"][0]["content"]
            .as_str()
            .unwrap_or_default();
        if system.contains("You are the planner") {
            return Reply::Content(
                json!({"subtasks": [{"id": "s1", "role": "worker", "goal": "MARK-A: write alpha to a.txt.", "outputs": ["a.txt"], "depends_on": []}]})
                    .to_string(),
            );
        }
        if system.contains("final answer of a team") {
            return common::text("a.txt written");
        }
        match round_of(request) {
            1 => decision("write_file", json!({"path": "a.txt", "content": "alpha"})),
            _ => finish("wrote a.txt"),
        }
    })
    .await;
    let (dir, out, run) = eval_with_workers(
        "name = \"modes\"\n[[task]]\nid = \"task-a\"\ngoal = \"MARK-A: write alpha to a.txt.\"\n[[task.check]]\nfile = \"a.txt\"\nequals = \"alpha\"\n",
        &["--mode", "run,plan"],
        &server.base_url,
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report = run.outcome();
    let ids: Vec<&str> = report["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["task"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["task-a@run", "task-a@plan"], "{report}");
    let by_mode = &report["summary"]["by_mode"];
    assert_eq!(by_mode["run"]["passed"], 1, "{report}");
    assert_eq!(by_mode["plan"]["passed"], 1, "{report}");
    assert!(by_mode["plan"]["mean_rounds"].as_f64().unwrap() >= 2.0);
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("## By mode"), "{md}");
    assert!(md.contains("| task-a | 1/1 |"), "{md}");
    assert!(out.join("runs/task-a@plan.1/workspace/a.txt").exists());
    // A plan-mode run keeps its executors' rounds beside its journal, each
    // with its subtask's id; a run-mode run has none.
    let rounds = std::fs::read_to_string(out.join("runs/task-a@plan.1/rounds.jsonl")).unwrap();
    let rounds: Vec<Value> = rounds
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let actions: Vec<(&str, &str)> = rounds
        .iter()
        .map(|r| {
            (
                r["subtask"].as_str().unwrap(),
                r["action"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        actions,
        [("s1", "write_file"), ("s1", "finish")],
        "{rounds:?}"
    );
    assert!(!out.join("runs/task-a@run.1/rounds.jsonl").exists());

    // A plain report has no `by_mode`; an unknown mode is a usage error.
    let suite = dir.path().join("suite.toml");
    let one = hermes(
        &["eval", suite.to_str().unwrap(), "--mode", "run", "--json"],
        &server.base_url,
    )
    .await;
    assert_eq!(one.code, 0, "{}", one.stderr);
    assert!(one.outcome()["summary"].get("by_mode").is_none());
    assert_eq!(one.outcome()["runs"][0]["task"], "task-a");
    let bad = hermes(
        &["eval", suite.to_str().unwrap(), "--mode", "swarm"],
        &server.base_url,
    )
    .await;
    assert_eq!(bad.code, 1, "{}", bad.stderr);
    assert!(
        bad.stderr.contains("mode `swarm`: use `run` or `plan`"),
        "{}",
        bad.stderr
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn each_repetition_after_the_first_samples_with_seeds_of_its_own() {
    let (_dir, suite) = suite_dir(
        r#"
name = "seeds"
[[task]]
id = "one"
goal = "Write alpha to a.txt."
max_rounds = 3
[[task.check]]
file = "a.txt"
equals = "alpha"
"#,
    );
    let seeds = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = Arc::clone(&seeds);
    let server = ScriptedServer::with_responder(move |request| {
        seen.lock()
            .unwrap()
            .push(request.get("seed").and_then(Value::as_u64));
        match round_of(request) {
            1 => decision("write_file", json!({"path": "a.txt", "content": "alpha"})),
            _ => finish("wrote a.txt"),
        }
    })
    .await;
    let run = eval_three_times(&suite, &server.base_url, &["--json"]).await;
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    assert_eq!(run.outcome()["summary"]["passed"], 3, "{}", run.stdout);
    let seeds = seeds.lock().unwrap().clone();
    // Two requests a run (write, finish), the runs one after another.
    assert_eq!(seeds.len(), 6, "{seeds:?}");
    assert_eq!(
        &seeds[..2],
        &[None, None],
        "the first run keeps the model's seed"
    );
    let second = seeds[2].expect("the second run sends a seed");
    let third = seeds[4].expect("the third run sends a seed");
    assert_eq!(seeds[3], Some(second));
    assert_eq!(seeds[5], Some(third));
    assert_ne!(second, third);
}
