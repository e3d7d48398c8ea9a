//! Tests of the DAG rules.
use super::*;
use crate::report::TaskStatus;
use hermes_core::agent::StopStatus;

fn sub(id: &str, deps: &[&str]) -> PlannedSubtask {
    PlannedSubtask {
        id: id.into(),
        role: "r".into(),
        goal: format!("do {id}"),
        outputs: vec![],
        depends_on: deps.iter().map(|d| d.to_string()).collect(),
    }
}

fn done(result: &str) -> Outcome {
    let mut o = Outcome::failed("g", "x");
    o.status = StopStatus::Finished;
    o.error = None;
    o.result = Some(result.into());
    o.rounds = 2;
    o
}

#[test]
fn a_subtask_that_finishes_at_the_deadline_keeps_its_result() {
    let mut run = Dag::new("t", 2, 2);
    run.add_subtasks(vec![sub("a", &[]), sub("b", &[])]);
    run.start_ready();
    run.time_out();
    assert!(run.finish("a", &done("A")));
    assert!(run.cancel("b", 1, "cut".into(), Usage::default()));
    let report = run.report(None, None);
    assert_eq!(report.status, TaskStatus::Timeout);
    assert_eq!(report.subtasks[0].status, SubtaskStatus::Finished);
    assert_eq!(report.subtasks[1].status, SubtaskStatus::Cancelled);
}

fn ids(subtasks: &[PlannedSubtask]) -> Vec<&str> {
    subtasks.iter().map(|s| s.id.as_str()).collect()
}

#[test]
fn dag_runs_in_dependency_order_under_the_concurrency_bound() {
    let mut run = Dag::new("t", 2, 2);
    run.add_subtasks(vec![
        sub("a", &[]),
        sub("b", &[]),
        sub("c", &[]),
        sub("d", &["a", "b"]),
    ]);
    assert_eq!(ids(&run.start_ready()), ["a", "b"]);
    assert!(run.start_ready().is_empty(), "bound of 2 reached");
    assert!(run.finish("a", &done("A")));
    assert_eq!(ids(&run.start_ready()), ["c"]);
    assert!(run.finish("b", &done("B")));
    assert_eq!(ids(&run.start_ready()), ["d"]);
    let goal = run.executor_goal(&sub("d", &["a", "b"])).text();
    assert!(
        goal.contains("[a — r] A") && goal.contains("[b — r] B"),
        "{goal}"
    );
    assert!(run.finish("c", &done("C")) && run.finish("d", &done("D")));
    assert!(run.is_settled());
    assert_eq!(run.status(), TaskStatus::Finished);
}

#[test]
fn a_resumed_dag_keeps_finished_results_and_runs_only_the_rest() {
    let mut run = Dag::new("t", 2, 2);
    run.add_subtasks(vec![sub("a", &[]), sub("b", &["a"])]);
    assert!(run.resume_finished("a", "A".into(), 3));
    assert!(
        !run.resume_finished("a", "again".into(), 1),
        "only a pending one"
    );
    assert!(!run.resume_finished("zzz", "x".into(), 1));
    assert_eq!(ids(&run.start_ready()), ["b"], "a is not run again");
    let goal = run.executor_goal(&sub("b", &["a"])).text();
    assert!(goal.contains("[a — r] A"), "b gets a's kept result: {goal}");
    assert!(run.finish("b", &done("B")));
    assert_eq!(run.status(), TaskStatus::Finished);
    assert_eq!(run.slot("a").unwrap().rounds, 3);
}

#[test]
fn outcomes_are_accepted_exactly_once() {
    let mut run = Dag::new("t", 4, 2);
    run.add_subtasks(vec![sub("a", &[])]);
    run.start_ready();
    assert!(run.finish("a", &done("A")));
    assert!(!run.finish("a", &done("again")));
    assert_eq!(run.fail("a", 1, "late".into(), Usage::default()), None);
    assert_eq!(run.slot("a").unwrap().result.as_deref(), Some("A"));
}

#[test]
fn failure_replans_then_replaces_the_subtask_and_its_dependents() {
    let mut run = Dag::new("t", 4, 1);
    run.add_subtasks(vec![
        sub("a", &[]),
        sub("b", &["a"]),
        sub("c", &["b"]),
        sub("x", &[]),
    ]);
    run.start_ready();
    assert!(run.finish("x", &done("X")));
    assert_eq!(
        run.fail("a", 3, "stuck".into(), Usage::default()),
        Some(AfterFailure::Replan)
    );
    assert_eq!(
        ids(&run.dependents("a").into_iter().cloned().collect::<Vec<_>>()),
        ["b", "c"]
    );
    assert!(!run.is_settled(), "waiting on the replan");
    run.apply_replan("a", Ok(vec![sub("a2", &["x"]), sub("b2", &["a2"])]));
    assert_eq!(run.slot("a").unwrap().state, SubtaskStatus::Replaced);
    assert_eq!(run.slot("c").unwrap().state, SubtaskStatus::Replaced);
    assert_eq!(ids(&run.start_ready()), ["a2"]);
    assert!(run.finish("a2", &done("A2")));
    assert_eq!(ids(&run.start_ready()), ["b2"]);
    assert!(run.finish("b2", &done("B2")));
    assert!(run.is_settled());
    assert_eq!(run.status(), TaskStatus::Finished);
    assert_eq!(run.replans, 1);
    assert_eq!(
        run.slot("x").unwrap().result.as_deref(),
        Some("X"),
        "completed work is kept"
    );
}

#[test]
fn no_replans_left_skips_dependents_and_fails_the_task() {
    let mut run = Dag::new("t", 4, 0);
    run.add_subtasks(vec![sub("a", &[]), sub("b", &["a"])]);
    run.start_ready();
    assert_eq!(
        run.fail("a", 3, "stuck".into(), Usage::default()),
        Some(AfterFailure::GiveUp)
    );
    assert_eq!(run.slot("b").unwrap().state, SubtaskStatus::Skipped);
    assert!(run.is_settled());
    let report = run.report(None, None);
    assert_eq!(report.status, TaskStatus::Failed);
    assert_eq!(report.subtasks[0].progress.as_deref(), Some("stuck"));
    assert_eq!(report.subtasks[1].status, SubtaskStatus::Skipped);
}

#[test]
fn a_crashed_subtask_restarts_once() {
    let mut run = Dag::new("t", 4, 0);
    run.add_subtasks(vec![sub("a", &[])]);
    run.start_ready();
    assert!(run.restart("a"));
    assert!(!run.restart("a"));
}

#[test]
fn deadline_cancels_running_and_skips_pending() {
    let mut run = Dag::new("t", 1, 2);
    run.add_subtasks(vec![sub("a", &[]), sub("b", &[])]);
    run.start_ready();
    assert_eq!(run.time_out(), vec!["a".to_string()]);
    assert!(
        !run.is_settled(),
        "the running subtask has not reported yet"
    );
    assert!(run.cancel("a", 2, "cancelled at round 2".into(), Usage::default()));
    assert!(run.is_settled());
    let report = run.report(None, None);
    assert_eq!(report.status, TaskStatus::Timeout);
    assert_eq!(report.subtasks[0].status, SubtaskStatus::Cancelled);
    assert_eq!(report.subtasks[0].rounds, 2);
    assert_eq!(report.subtasks[1].status, SubtaskStatus::Skipped);
    assert!(run.start_ready().is_empty());
}

#[test]
fn an_executor_is_told_its_outputs_and_where_its_inputs_wrote() {
    let mut run = Dag::new("t", 2, 2);
    let a = PlannedSubtask {
        outputs: vec!["totals.csv".into()],
        ..sub("a", &[])
    };
    let b = PlannedSubtask {
        outputs: vec!["report.md".into()],
        ..sub("b", &["a"])
    };
    run.add_subtasks(vec![a.clone(), b.clone()]);
    run.start_ready();
    let goal = run.executor_goal(&a);
    assert_eq!(goal.work, "do a\nFiles to write: totals.csv.");
    assert!(run.finish("a", &done("summed")));
    let text = run.executor_goal(&b).text();
    assert!(
        text.starts_with("do b\nFiles to write: report.md."),
        "{text}"
    );
    assert!(
        text.ends_with("[a — r] summed\n(its files: totals.csv)"),
        "{text}"
    );
}

#[test]
fn what_a_subtask_printed_and_left_out_of_its_result_reaches_its_dependents() {
    let mut run = Dag::new("t", 2, 2);
    run.add_subtasks(vec![sub("a", &[]), sub("b", &["a"])]);
    run.start_ready();
    let outcome = Outcome {
        printed: Some("north 1200\nsouth 800".into()),
        ..done("north")
    };
    assert!(run.finish("a", &outcome));
    run.start_ready();
    let text = run.executor_goal(&sub("b", &["a"])).text();
    assert!(
        text.ends_with("[a — r] north\n(its last program printed:\nnorth 1200\nsouth 800)"),
        "{text}"
    );
}

#[test]
fn an_executor_is_given_the_files_its_unfinished_siblings_write_as_theirs() {
    let mut run = Dag::new("t", 4, 2);
    let with = |id: &str, outputs: &[&str], deps: &[&str]| PlannedSubtask {
        outputs: outputs.iter().map(|o| o.to_string()).collect(),
        ..sub(id, deps)
    };
    let (a, b, c) = (
        with("a", &["summary.md"], &[]),
        with("b", &["top.txt"], &[]),
        with("c", &["report.md", "summary.md"], &["a"]),
    );
    run.add_subtasks(vec![a.clone(), b.clone(), c.clone()]);
    run.start_ready();
    let owned = |goal: Goal| -> Vec<(String, String)> {
        let others = goal.others.into_iter();
        others.map(|o| (o.path, o.subtask)).collect()
    };
    let pair = |p: &str, s: &str| (p.to_string(), s.to_string());
    // A file two subtasks name is each one's own; it is not refused to either.
    assert_eq!(
        owned(run.executor_goal(&a)),
        vec![pair("top.txt", "b"), pair("report.md", "c")]
    );
    assert_eq!(owned(run.executor_goal(&c)), vec![pair("top.txt", "b")]);
    // The others never reach the model's text.
    assert!(!run.executor_goal(&a).text().contains("top.txt"));
    // A failed subtask's files are free for the one that takes its place,
    // and a finished one's for a replan that redoes them.
    assert!(run
        .fail("b", 3, "gave up".into(), Usage::default())
        .is_some());
    assert_eq!(owned(run.executor_goal(&a)), vec![pair("report.md", "c")]);
    assert!(run.finish("a", &done("summed")));
    // b owns nothing of the finished a; c, still pending, keeps its two.
    assert_eq!(
        owned(run.executor_goal(&b)),
        vec![pair("report.md", "c"), pair("summary.md", "c")]
    );
}

/// Runs every subtask of `plan` to its end, each finishing with its id in
/// capitals.
fn all_finished(plan: Vec<PlannedSubtask>) -> Dag {
    let mut run = Dag::new("t", 8, 2);
    run.add_subtasks(plan);
    loop {
        let ready = run.start_ready();
        if ready.is_empty() {
            return run;
        }
        for spec in ready {
            assert!(run.finish(&spec.id, &done(&spec.id.to_uppercase())));
        }
    }
}

#[test]
fn the_closing_result_is_the_last_subtask_s_when_it_built_on_all_the_others() {
    // One subtask: its result.
    assert_eq!(
        all_finished(vec![sub("a", &[])]).closing_result(),
        Some("A")
    );
    // A chain, and a fan-in whose writer waits for both reads: the last.
    let chain = all_finished(vec![sub("a", &[]), sub("b", &["a"]), sub("c", &["b"])]);
    assert_eq!(chain.closing_result(), Some("C"));
    let fan_in = all_finished(vec![sub("a", &[]), sub("b", &[]), sub("w", &["a", "b"])]);
    assert_eq!(fan_in.closing_result(), Some("W"));
    // Results side by side, or a last one that did not see them all: the
    // model combines them.
    let side_by_side = all_finished(vec![sub("a", &[]), sub("b", &[])]);
    assert_eq!(side_by_side.closing_result(), None);
    let partial = all_finished(vec![sub("a", &[]), sub("b", &[]), sub("c", &["a"])]);
    assert_eq!(partial.closing_result(), None);
    assert_eq!(Dag::new("t", 1, 1).closing_result(), None);
}
