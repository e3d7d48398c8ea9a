use super::*;

fn obs(status: RunStatus, result: Option<&str>, rounds: u32) -> RunObservation {
    RunObservation {
        status,
        result: result.map(String::from),
        rounds,
    }
}

fn file(path: &str, expect: FileExpect) -> Check {
    Check::File {
        path: path.into(),
        expect,
    }
}

fn workspace(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, content) in files {
        let full = dir.path().join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, content).unwrap();
    }
    dir
}

fn finished() -> RunObservation {
    obs(RunStatus::Finished, Some("done"), 3)
}

#[test]
fn file_equals_trims_whitespace_and_reports_what_it_found() {
    let ws = workspace(&[("answer.txt", "  7\n"), ("wrong.txt", "8\n")]);
    let pass = evaluate(
        &[file("answer.txt", FileExpect::Equals("7".into()))],
        ws.path(),
        &finished(),
    );
    assert!(pass.is_empty(), "{pass:?}");
    let fail = evaluate(
        &[file("wrong.txt", FileExpect::Equals("7".into()))],
        ws.path(),
        &finished(),
    );
    assert_eq!(fail, vec![r#"file wrong.txt: expected "7", found "8""#]);
}

#[test]
fn file_equals_ignores_crlf_line_endings() {
    let ws = workspace(&[("a.txt", "x\r\ny\r\n")]);
    let failed = evaluate(
        &[file("a.txt", FileExpect::Equals("x\ny".into()))],
        ws.path(),
        &finished(),
    );
    assert!(failed.is_empty(), "{failed:?}");
}

#[test]
fn a_missing_file_says_it_is_missing() {
    let ws = workspace(&[]);
    let failed = evaluate(
        &[file("answer.txt", FileExpect::Equals("7".into()))],
        ws.path(),
        &finished(),
    );
    assert_eq!(failed, vec![r#"file answer.txt: missing (expected "7")"#]);
}

#[test]
fn file_contains_and_matches() {
    let ws = workspace(&[("out/report.md", "# Owners\n- alice\n- bob\n")]);
    let checks = [
        file("out/report.md", FileExpect::Contains("alice".into())),
        file(
            "out/report.md",
            FileExpect::Matches(Pattern::new(r"(?m)^- bob$").unwrap()),
        ),
        file("out/report.md", FileExpect::Contains("carol".into())),
        file(
            "out/report.md",
            FileExpect::Matches(Pattern::new(r"dave").unwrap()),
        ),
    ];
    let failed = evaluate(&checks, ws.path(), &finished());
    assert_eq!(failed.len(), 2, "{failed:?}");
    assert!(failed[0]
        .starts_with(r##"file out/report.md: expected to contain "carol", found "# Owners"##));
    assert!(failed[1].starts_with("file out/report.md: expected to match /dave/, found"));
}

#[test]
fn file_exists_both_ways() {
    let ws = workspace(&[("here.txt", "")]);
    let checks = [
        file("here.txt", FileExpect::Exists(true)),
        file("gone.txt", FileExpect::Exists(false)),
        file("gone.txt", FileExpect::Exists(true)),
        file("here.txt", FileExpect::Exists(false)),
    ];
    let failed = evaluate(&checks, ws.path(), &finished());
    assert_eq!(
        failed,
        vec![
            "file gone.txt: missing".to_string(),
            "file here.txt: exists but should not".to_string()
        ]
    );
}

#[test]
fn a_long_found_value_is_cut_in_the_message() {
    let long = "x".repeat(500);
    let ws = workspace(&[("big.txt", &long)]);
    let failed = evaluate(
        &[file("big.txt", FileExpect::Equals("y".into()))],
        ws.path(),
        &finished(),
    );
    assert!(failed[0].ends_with("… (500 characters)"), "{failed:?}");
    assert!(failed[0].len() < 250);
}

#[test]
fn a_hand_built_check_cannot_read_outside_the_workspace() {
    let ws = workspace(&[]);
    let failed = evaluate(
        &[file("../etc/passwd", FileExpect::Exists(false))],
        ws.path(),
        &finished(),
    );
    assert_eq!(failed.len(), 1);
    assert!(failed[0].contains("leaves the workspace"), "{failed:?}");
}

#[test]
fn status_check() {
    let ws = workspace(&[]);
    let checks = [Check::Status(RunStatus::Finished)];
    assert!(evaluate(&checks, ws.path(), &finished()).is_empty());
    let failed = evaluate(&checks, ws.path(), &obs(RunStatus::MaxRounds, None, 10));
    assert_eq!(failed, vec!["status: expected finished, found max_rounds"]);
}

#[test]
fn result_checks_look_at_the_final_answer() {
    let ws = workspace(&[]);
    let checks = [
        Check::ResultContains("7".into()),
        Check::ResultMatches(Pattern::new(r"^\D*7\D*$").unwrap()),
    ];
    assert!(evaluate(
        &checks,
        ws.path(),
        &obs(RunStatus::Finished, Some("There are 7."), 2)
    )
    .is_empty());
    let failed = evaluate(&checks, ws.path(), &obs(RunStatus::Finished, Some("8"), 2));
    assert_eq!(
        failed,
        vec![
            r#"result: expected to contain "7", found "8""#.to_string(),
            r#"result: expected to match /^\D*7\D*$/, found "8""#.to_string()
        ]
    );
    let failed = evaluate(&checks, ws.path(), &obs(RunStatus::Timeout, None, 2));
    assert_eq!(failed.len(), 2);
    assert!(
        failed[0].contains("gave no result (status timeout)"),
        "{failed:?}"
    );
}

#[test]
fn max_rounds_check() {
    let ws = workspace(&[]);
    let checks = [Check::MaxRounds(6)];
    assert!(evaluate(&checks, ws.path(), &obs(RunStatus::Finished, Some(""), 6)).is_empty());
    let failed = evaluate(&checks, ws.path(), &obs(RunStatus::Finished, Some(""), 9));
    assert_eq!(failed, vec!["rounds: expected at most 6, used 9"]);
}

#[test]
fn statuses_round_trip_through_their_names() {
    for status in RunStatus::ALL {
        assert_eq!(status.as_str().parse::<RunStatus>(), Ok(status));
        let json = serde_json::to_string(&status).unwrap();
        assert_eq!(json, format!("\"{}\"", status.as_str()));
    }
    assert!("done"
        .parse::<RunStatus>()
        .unwrap_err()
        .contains("max_rounds"));
}

#[test]
fn relative_paths_are_validated() {
    assert_eq!(
        relative_path("./data/a.csv").unwrap(),
        PathBuf::from("data/a.csv")
    );
    assert!(relative_path("../x").is_err());
    assert!(relative_path("a/../../x").is_err());
    assert!(relative_path("/etc/passwd").is_err());
    assert!(relative_path("").is_err());
    assert!(relative_path(".").is_err());
}
