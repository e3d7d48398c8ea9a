//! Tests of reading suite files: every field, every default, every error.
use super::super::check::FileExpect;
use super::*;
use crate::eval::RunStatus;
use hermes_core::limits::Limits;

fn parse(text: &str) -> Result<Suite, SuiteError> {
    Suite::parse(text, Path::new("evals/demo.toml"))
}

fn err(text: &str) -> SuiteError {
    parse(text).expect_err("the suite should not parse")
}

const GOOD: &str = r#"
[defaults]
max_rounds = 10
timeout_secs = 300

[[task]]
id = "admins"
category = "normal"
goal = "Count the admins."
[task.files]
"data/users.csv" = "name,role\nalice,admin\nbob,user\n"
[[task.check]]
file = "answer.txt"
equals = "1"
[[task.check]]
status = "finished"

[[task]]
id = "plan-it"
mode = "plan"
role = "analyst"
category = "multi-step"
goal = "Plan something."
max_rounds = 4
[[task.check]]
result_matches = "\\d+"
[[task.check]]
max_rounds = 30
"#;

#[test]
fn a_good_suite_parses_with_defaults_applied() {
    let suite = parse(GOOD).unwrap();
    assert_eq!(suite.name, "demo");
    assert_eq!(suite.memory, Memory::Fresh);
    assert_eq!(suite.tasks.len(), 2);
    let a = &suite.tasks[0];
    assert_eq!(a.id, "admins");
    assert_eq!(a.mode, Mode::Run);
    assert_eq!(
        a.limits,
        TaskLimits {
            max_rounds: Some(10),
            timeout_secs: Some(300),
            ..TaskLimits::default()
        }
    );
    assert_eq!(
        a.files["data/users.csv"],
        "name,role\nalice,admin\nbob,user\n"
    );
    assert_eq!(
        a.checks,
        vec![
            Check::File {
                path: "answer.txt".into(),
                expect: FileExpect::Equals("1".into())
            },
            Check::Status(RunStatus::Finished),
        ]
    );
    let b = &suite.tasks[1];
    assert_eq!(b.mode, Mode::Plan);
    assert_eq!(b.role.as_deref(), Some("analyst"));
    assert_eq!(b.limits.max_rounds, Some(4));
    assert_eq!(b.limits.timeout_secs, Some(300));
    assert_eq!(b.checks[1], Check::MaxRounds(30));
}

#[test]
fn name_and_memory_are_read() {
    let suite = parse(&format!("name = \"x\"\nmemory = \"shared\"\n{GOOD}")).unwrap();
    assert_eq!(suite.name, "x");
    assert_eq!(suite.memory, Memory::Shared);
    let e = err(&format!("memory = \"forever\"\n{GOOD}"));
    assert_eq!(e.field.as_deref(), Some("memory"));
}

#[test]
fn unknown_task_field_names_the_file_the_task_and_the_field() {
    let e = err(r#"
[[task]]
id = "admins"
goal = "g"
fiels = { "a.txt" = "x" }
[[task.check]]
status = "finished"
"#);
    assert_eq!(e.task.as_deref(), Some("admins"));
    assert_eq!(e.field.as_deref(), Some("fiels"));
    let msg = e.to_string();
    assert!(
        msg.starts_with(
            "evals/demo.toml: task `admins`: field `fiels`: unknown field (did you mean `files`?)"
        ),
        "{msg}"
    );
}

#[test]
fn unknown_check_and_defaults_fields_are_named() {
    let e = err(r#"
[[task]]
id = "t"
goal = "g"
[[task.check]]
file = "a.txt"
equal = "1"
"#);
    assert_eq!(
        (e.task.as_deref(), e.check, e.field.as_deref()),
        (Some("t"), Some(1), Some("equal"))
    );
    assert!(
        e.to_string().contains("task `t`, check 1: field `equal`"),
        "{e}"
    );

    let e = err("[defaults]\nid = \"x\"\n[[task]]\nid = \"t\"\ngoal = \"g\"\n[[task.check]]\nstatus = \"finished\"\n");
    assert_eq!(e.field.as_deref(), Some("defaults.id"));
    let e = err("[defaults]\nmode = \"swarm\"\n[[task]]\nid = \"t\"\ngoal = \"g\"\n[[task.check]]\nstatus = \"finished\"\n");
    assert_eq!(e.field.as_deref(), Some("defaults.mode"));
    let e = err(&format!("colour = 1\n{GOOD}"));
    assert_eq!((e.task, e.field.as_deref()), (None, Some("colour")));
}

#[test]
fn a_task_without_a_check_is_an_error() {
    let e = err("[[task]]\nid = \"lonely\"\ngoal = \"g\"\n");
    assert_eq!(
        (e.task.as_deref(), e.field.as_deref()),
        (Some("lonely"), Some("check"))
    );
    assert!(e.problem.contains("no checks"), "{e}");
    // Default checks do not count: a task needs a check of its own.
    let e =
        err("[[defaults.check]]\nstatus = \"finished\"\n[[task]]\nid = \"lonely\"\ngoal = \"g\"\n");
    assert_eq!(e.task.as_deref(), Some("lonely"));
}

#[test]
fn a_duplicate_id_is_an_error() {
    let e = err(r#"
[[task]]
id = "same"
goal = "g"
[[task.check]]
status = "finished"
[[task]]
id = "same"
goal = "h"
[[task.check]]
status = "finished"
"#);
    assert_eq!(
        (e.task.as_deref(), e.field.as_deref()),
        (Some("same"), Some("id"))
    );
    assert!(e.problem.contains("task #1 already uses it"), "{e}");
}

#[test]
fn fixture_paths_outside_the_workspace_are_errors_naming_the_task() {
    for path in ["../x", "/etc/passwd", "a/../../b"] {
        let e = err(&format!(
            "[[task]]\nid = \"escape\"\ngoal = \"g\"\n[task.files]\n{path:?} = \"x\"\n[[task.check]]\nstatus = \"finished\"\n"
        ));
        assert_eq!(e.task.as_deref(), Some("escape"), "{path}");
        assert_eq!(e.field.as_deref(), Some("files"));
        assert!(e.to_string().contains(path), "{e}");
    }
    let e = err("[[task]]\nid = \"t\"\ngoal = \"g\"\n[[task.check]]\nfile = \"../answer.txt\"\nexists = true\n");
    assert_eq!((e.check, e.field.as_deref()), (Some(1), Some("file")));
}

#[test]
fn a_bad_regex_is_an_error_naming_the_task() {
    let e = err("[[task]]\nid = \"re\"\ngoal = \"g\"\n[[task.check]]\nfile = \"a.txt\"\nmatches = \"(unclosed\"\n");
    assert_eq!(
        (e.task.as_deref(), e.check, e.field.as_deref()),
        (Some("re"), Some(1), Some("matches"))
    );
    assert!(e.problem.starts_with("bad regex \"(unclosed\""), "{e}");
    let e = err("[[task]]\nid = \"re\"\ngoal = \"g\"\n[[task.check]]\nresult_matches = \"[\"\n");
    assert_eq!(e.field.as_deref(), Some("result_matches"));
}

#[test]
fn a_check_has_exactly_one_kind() {
    let check = |body: &str| {
        err(&format!(
            "[[task]]\nid = \"k\"\ngoal = \"g\"\n[[task.check]]\n{body}\n"
        ))
    };
    let e = check("file = \"a\"\nequals = \"1\"\ncontains = \"1\"");
    assert_eq!(e.field.as_deref(), Some("contains"));
    let e = check("file = \"a\"");
    assert_eq!(e.field.as_deref(), Some("file"));
    let e = check("equals = \"1\"");
    assert_eq!(e.field.as_deref(), Some("equals"));
    assert!(e.problem.contains("needs `file`"));
    let e = check("status = \"finished\"\nresult_contains = \"x\"");
    assert_eq!(e.field.as_deref(), Some("result_contains"));
    let e = check("status = \"finished\"\nequals = \"x\"");
    assert_eq!(e.field.as_deref(), Some("equals"));
    let e = check("file = \"a\"\nstatus = \"finished\"\nexists = true");
    assert_eq!(e.field.as_deref(), Some("status"));
    let e = check("status = \"done\"");
    assert!(e.problem.contains("unknown status"), "{e}");
    let e = check("max_rounds = 0");
    assert_eq!(e.field.as_deref(), Some("max_rounds"));
    let e = check("file = \"a\"\nexists = \"yes\"");
    assert_eq!(e.field.as_deref(), Some("exists"));
    let e = check("status = \"failed\"");
    assert!(e.problem.contains("only happens in plan mode"), "{e}");
}

#[test]
fn missing_id_or_goal_and_bad_values_are_named() {
    let e = err("[[task]]\ngoal = \"g\"\n[[task.check]]\nstatus = \"finished\"\n");
    assert_eq!(
        (e.task.as_deref(), e.field.as_deref()),
        (Some("#1"), Some("id"))
    );
    assert!(e.to_string().contains("task #1: field `id`"), "{e}");
    let e = err("[[task]]\nid = \"t\"\n[[task.check]]\nstatus = \"finished\"\n");
    assert_eq!(e.field.as_deref(), Some("goal"));
    let e = err("[[task]]\nid = \"a/b\"\ngoal = \"g\"\n[[task.check]]\nstatus = \"finished\"\n");
    assert_eq!(e.field.as_deref(), Some("id"));
    let e = err("[[task]]\nid = \"t\"\ngoal = \"g\"\nmax_rounds = -1\n[[task.check]]\nstatus = \"finished\"\n");
    assert_eq!(e.field.as_deref(), Some("max_rounds"));
    let e = err("[[task]]\nid = \"t\"\ngoal = \"g\"\ntimeout_secs = \"300\"\n[[task.check]]\nstatus = \"finished\"\n");
    assert_eq!(e.field.as_deref(), Some("timeout_secs"));
    let e = err("name = \"x\"\n");
    assert_eq!(e.field.as_deref(), Some("task"));
    let e = err("[[task]\n");
    assert!(e.to_string().starts_with("evals/demo.toml: "), "{e}");
}

#[test]
fn default_files_and_checks_are_merged() {
    let suite = parse(
        r#"
[defaults]
category = "edge"
[defaults.files]
"shared.txt" = "base"
"a.txt" = "from defaults"
[[defaults.check]]
status = "finished"
[[task]]
id = "t"
goal = "g"
[task.files]
"a.txt" = "from task"
[[task.check]]
file = "out.txt"
exists = true
"#,
    )
    .unwrap();
    let t = &suite.tasks[0];
    assert_eq!(t.category, "edge");
    assert_eq!(t.files["shared.txt"], "base");
    assert_eq!(t.files["a.txt"], "from task");
    assert_eq!(t.checks.len(), 2);
    assert_eq!(t.checks[1], Check::Status(RunStatus::Finished));
}

#[test]
fn only_keeps_the_named_tasks_and_rejects_unknown_ids() {
    let suite = parse(GOOD).unwrap();
    let one = suite.only(&["plan-it"]).unwrap();
    assert_eq!(one.tasks.len(), 1);
    assert_eq!(one.tasks[0].id, "plan-it");
    let e = suite.only(&["admins", "nope"]).unwrap_err();
    assert_eq!(e.task.as_deref(), Some("nope"));
    assert!(e.problem.contains("admins, plan-it"), "{e}");
}

#[test]
fn fixtures_are_written_into_the_workspace() {
    let suite = parse(GOOD).unwrap();
    let dir = tempfile::tempdir().unwrap();
    suite.tasks[0].write_fixtures(dir.path()).unwrap();
    let written = std::fs::read_to_string(dir.path().join("data/users.csv")).unwrap();
    assert_eq!(written, "name,role\nalice,admin\nbob,user\n");
}

#[test]
fn task_limits_apply_over_a_base() {
    let limits = TaskLimits {
        max_rounds: Some(7),
        ..TaskLimits::default()
    };
    let base = Limits::default();
    let applied = limits.apply(&base);
    assert_eq!(applied.max_rounds, 7);
    assert_eq!(applied.timeout, base.timeout);
}

#[test]
fn steers_are_switched_by_defaults_and_tasks() {
    let suite = parse(
        "[defaults.steer]\nread_check = false\n\n[[task]]\nid = \"a\"\ngoal = \"g\"\n[task.steer]\nlabel_check = false\n[[task.check]]\nstatus = \"finished\"\n\n[[task]]\nid = \"b\"\ngoal = \"g\"\n[task.steer]\nread_check = true\n[[task.check]]\nstatus = \"finished\"\n",
    )
    .unwrap();
    let a = suite.tasks[0].limits.apply(&Limits::default());
    assert!(!a.steer.is_on("read_check") && !a.steer.is_on("label_check"));
    assert!(a.steer.is_on("finish_check"));
    let b = suite.tasks[1].limits.apply(&Limits::default());
    assert!(b.steer.is_on("read_check"));
    let e = err("[[task]]\nid = \"t\"\ngoal = \"g\"\n[task.steer]\nread_chek = false\n[[task.check]]\nstatus = \"finished\"\n");
    assert_eq!(e.field.as_deref(), Some("steer"));
    assert!(e.to_string().contains("read_check"), "{e}");
}

/// The suites shipped in `evals/` parse, and every plan task asks for at
/// least two of the roles in `agents/`.
#[test]
fn shipped_suites_parse() {
    // The workspace root, two folders above this crate.
    let root = &Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let files = Suite::load(&root.join("evals/files.toml")).unwrap();
    assert!(files.tasks.len() >= 40, "{}", files.tasks.len());
    // The held-out suite (never tuned on): at least 30 tasks.
    let test = Suite::load(&root.join("evals/test.toml")).unwrap();
    assert!(test.tasks.len() >= 30, "{}", test.tasks.len());
    assert!(files.tasks.iter().all(|t| t.mode == Mode::Run));
    for category in ["normal", "edge", "misleading", "multi-step", "chinese"] {
        assert!(
            files.tasks.iter().any(|t| t.category == category),
            "{category}"
        );
    }

    let roles: Vec<String> = std::fs::read_dir(root.join("agents"))
        .unwrap()
        .filter_map(|e| {
            let p = e.ok()?.path();
            (p.extension()? == "toml")
                .then(|| p.file_stem().unwrap().to_string_lossy().into_owned())
        })
        .collect();
    let plan = Suite::load(&root.join("evals/plan.toml")).unwrap();
    assert!(plan.tasks.len() >= 12, "{}", plan.tasks.len());
    // The held-out plan suite (session 34; never tuned on).
    let plan_test = Suite::load(&root.join("evals/plan-test.toml")).unwrap();
    assert!(plan_test.tasks.len() >= 12, "{}", plan_test.tasks.len());
    for task in plan.tasks.iter().chain(&plan_test.tasks) {
        assert_eq!(task.mode, Mode::Plan, "{}", task.id);
        let named = roles
            .iter()
            .filter(|r| task.goal.contains(r.as_str()))
            .count();
        // A goal in another language names the roles in its own words.
        assert!(
            named >= 2 || task.category == "non-english",
            "task {} names {named} roles",
            task.id
        );
    }
}
