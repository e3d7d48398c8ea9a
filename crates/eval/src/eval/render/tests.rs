//! The report renderers' tests.

use super::charts::{bins, histogram_chart, rate_chart, Bar};
use super::*;
use crate::eval::report::tests::mixed_runs;

fn report() -> Report {
    let mut runs = mixed_runs();
    runs[0].faults.insert("tool_error".into(), 2);
    runs[2].faults.insert("tool_error".into(), 1);
    runs[2].task = "c<script>alert(1)</script>".into();
    runs[2].failed_checks = vec!["file a|b.txt: expected \"<7>\"".into()];
    let faults = [("tool_error".to_string(), serde_json::json!(0.2))].into();
    Report::new("files", "qwen2.5:7b", 3, faults, 7, runs)
}

#[test]
fn html_escapes_user_text_and_links_journals() {
    let html = render_html(&report());
    assert!(!html.contains("<script>"), "unescaped task id");
    assert!(html.contains("c&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(html.contains("expected &quot;&lt;7&gt;&quot;"));
    assert!(html.contains("href=\"runs/a.1/journal.jsonl\""));
    assert!(html.contains("href=\"runs/c%3Cscript%3Ealert%281%29%3C/script%3E.1/journal.jsonl\""));
    assert_eq!(html.matches("<svg").count(), 4);
    assert!(!html.contains("<script"));
}

#[test]
fn html_without_faults_says_so() {
    let mut r = report();
    for run in &mut r.runs {
        run.faults.clear();
    }
    r.summary = crate::eval::Summary::compute(&r.runs, 3);
    let html = render_html(&r);
    assert_eq!(html.matches("<svg").count(), 3);
    assert!(html.contains("No faults were injected."));
}

#[test]
fn markdown_has_every_section_and_safe_cells() {
    let md = render_markdown(&report());
    for heading in [
        "## Summary",
        "## Stops",
        "## By category",
        "## By fault",
        "## Runs",
    ] {
        assert!(md.contains(heading), "{heading}");
    }
    assert!(md.contains("| pass^2 | 0.444 |"), "{md}");
    assert!(md.contains("file a\\|b.txt"));
    assert!(md.contains("[journal](runs/a.1/journal.jsonl)"));
    assert!(md.contains("| tool_error | 3 | 2 | 1 | 50.0% |"), "{md}");
}

#[test]
fn text_summary_is_short() {
    let text = render_text(&Report::new(
        "files",
        "qwen",
        3,
        Default::default(),
        1,
        mixed_runs(),
    ));
    assert!(text.contains("passed 5/9 (55.6%)"), "{text}");
    assert!(
        text.starts_with("suite files · model qwen · 3 tasks × 3 = 9 runs"),
        "{text}"
    );
    assert!(text.contains("pass^3 0.333"));
    assert!(text.lines().count() < 10);
}

#[test]
fn report_dir_holds_three_files_and_the_json_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let r = report();
    write_report_dir(&dir.path().join("out"), &r).unwrap();
    let json = std::fs::read_to_string(dir.path().join("out/report.json")).unwrap();
    let back: Report = serde_json::from_str(&json).unwrap();
    assert_eq!(back, r);
    assert!(dir.path().join("out/report.md").is_file());
    assert!(dir.path().join("out/report.html").is_file());
}

#[test]
fn charts_draw_with_one_bar_and_with_many() {
    for n in [1usize, 2, 12] {
        let bars: Vec<Bar> = (0..n)
            .map(|i| Bar {
                label: format!("cat{i}"),
                value: i as f64 / n as f64,
                note: format!("{i}/{n}"),
            })
            .collect();
        let svg = rate_chart(&bars).unwrap();
        assert_eq!(svg.matches("fill=\"#2F81F7\"").count(), n, "{svg}");
        assert!(svg.contains(&format!("cat{}", n - 1)));
        let counts: Vec<(String, u64)> = (0..n).map(|i| (i.to_string(), i as u64)).collect();
        let svg = histogram_chart(&counts, "rounds", "runs").unwrap();
        assert_eq!(svg.matches("fill=\"#8C6BD1\"").count(), n, "{svg}");
    }
    let empty = histogram_chart(&bins(&[], true), "rounds", "runs").unwrap();
    assert!(empty.starts_with("<svg"));
}

#[test]
fn bins_are_whole_numbers_for_rounds_and_round_widths_for_seconds() {
    let rounds = bins(&[2.0, 3.0, 3.0, 7.0], true);
    assert_eq!(rounds.first(), Some(&("2".to_string(), 1)));
    assert_eq!(rounds.len(), 6);
    assert_eq!(rounds.iter().map(|b| b.1).sum::<u64>(), 4);
    let secs = bins(&[0.5, 12.0, 33.0, 95.0], false);
    assert_eq!(secs[0].0, "0–10");
    assert_eq!(secs.iter().map(|b| b.1).sum::<u64>(), 4);
    assert!(bins(&[], false).iter().all(|b| b.1 == 0));
}
