//! The eval report folder as a browser sees it: `report.html` is written
//! from a known report, opened in headless Chromium, and the rendered DOM
//! (not the file text) must hold the SVG charts, the runs table with a
//! journal link per run that resolves inside the folder, and user text as
//! text, never as markup.
//!
//! Needs Debian's `chromium` (`apt-get install chromium`; CI installs it).
//! `HERMES_SKIP_BROWSER=1` skips the browser part with a note.

mod common;

use std::collections::BTreeMap;

use hermes::eval::{write_report_dir, Report, RunRecord, RunStatus};
use hermes::llm::Usage;
use regex::Regex;

fn run(task: &str, category: &str, rep: u32, passed: bool, rounds: u32, seconds: f64) -> RunRecord {
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
        rounds,
        seconds,
        usage: Usage {
            prompt_tokens: 800 * rounds as u64,
            completion_tokens: 60 * rounds as u64,
            cached_tokens: 0,
        },
        failed_checks: if passed {
            vec![]
        } else {
            vec![r#"file answer.txt: expected "7", found "<script>alert(1)</script>""#.into()]
        },
        faults: BTreeMap::new(),
        error: None,
        steered: BTreeMap::new(),
    }
}

/// Three tasks × K = 2: categories normal, edge and a hostile `<b>bold</b>`;
/// tool errors injected into two runs.
fn known_report() -> Report {
    let mut runs = vec![
        run("admins", "normal", 1, true, 4, 12.5),
        run("admins", "normal", 2, true, 5, 14.0),
        run("empty-csv", "edge", 1, false, 12, 61.0),
        run("empty-csv", "edge", 2, true, 6, 20.2),
        run("sneaky", "<b>bold</b>", 1, false, 9, 33.3),
        run("sneaky", "<b>bold</b>", 2, false, 12, 80.0),
    ];
    runs[1].faults.insert("tool_error".into(), 2);
    runs[2].faults.insert("tool_error".into(), 1);
    runs[2].faults.insert("llm_non_json".into(), 1);
    let spec = [("tool_error".to_string(), serde_json::json!(0.2))].into();
    Report::new("files", "qwen2.5-coder:1.5b", 2, spec, 42, runs)
}

/// The `<figure id="…">` element of the dumped DOM.
fn figure<'a>(dom: &'a str, id: &str) -> &'a str {
    let start = dom
        .find(&format!("<figure id=\"{id}\""))
        .unwrap_or_else(|| panic!("no figure {id} in the DOM"));
    let end = dom[start..].find("</figure>").unwrap();
    &dom[start..start + end]
}

#[test]
fn report_html_renders_charts_and_a_runs_table_with_journal_links_in_chromium() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report");
    let report = known_report();
    write_report_dir(&out, &report).unwrap();
    // The runner writes each run's journal here; the links must reach them.
    for r in &report.runs {
        let journal = out.join(r.journal_path());
        std::fs::create_dir_all(journal.parent().unwrap()).unwrap();
        std::fs::write(&journal, "{\"round\":1}\n").unwrap();
    }
    for name in ["report.json", "report.md", "report.html"] {
        assert!(out.join(name).is_file(), "{name} missing");
    }
    let back: Report =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    assert_eq!(back, report);

    let Some(chromium) = common::browser::chromium_or_skip("the browser checks of report.html")
    else {
        return;
    };
    let profile = tempfile::tempdir().unwrap();
    let url = format!("file://{}", out.join("report.html").display());
    let dom = common::browser::dump_dom(&chromium, &url, profile.path(), &[]);

    // Four charts, each an inline SVG with drawn bars (rect) and labels (text).
    for id in [
        "chart-category",
        "chart-fault",
        "chart-rounds",
        "chart-seconds",
    ] {
        let fig = figure(&dom, id);
        assert!(fig.contains("<svg"), "{id} has no svg:\n{fig}");
        assert!(
            fig.matches("<rect").count() >= 2,
            "{id} has no bars:\n{fig}"
        );
        assert!(fig.contains("<text"), "{id} has no labels");
    }
    // The category chart labels its bars with the categories, as text.
    let categories = figure(&dom, "chart-category");
    for label in ["normal", "edge", "&lt;b&gt;bold&lt;/b&gt;"] {
        let text = Regex::new(&format!(
            r"<text[^>]*>\s*{}\s*</text>",
            regex::escape(label)
        ))
        .unwrap();
        assert!(text.is_match(categories), "no label {label}:\n{categories}");
    }
    // Bars for 3 categories, the fault chart for 2 kinds.
    let bars = |fig: &str| {
        Regex::new(r##"<rect[^>]*fill="#2F81F7""##)
            .unwrap()
            .find_iter(fig)
            .count()
    };
    assert_eq!(bars(categories), 3, "{categories}");
    assert_eq!(bars(figure(&dom, "chart-fault")), 2);

    // The runs table: one row per run, each with its journal link.
    let table_start = dom.find("<table id=\"runs-table\">").expect("runs table");
    let table = &dom[table_start..table_start + dom[table_start..].find("</table>").unwrap()];
    let body = &table[table.find("<tbody>").unwrap()..];
    assert_eq!(body.matches("<tr").count(), report.runs.len());
    let href = Regex::new(r#"<a class="journal" href="([^"]+)">journal</a>"#).unwrap();
    let links: Vec<&str> = href
        .captures_iter(body)
        .map(|c| c.get(1).unwrap().as_str())
        .collect();
    let expected: Vec<String> = report.runs.iter().map(|r| r.journal_path()).collect();
    assert_eq!(links, expected);
    for link in &links {
        assert!(
            !link.starts_with('/') && !link.contains(".."),
            "not relative: {link}"
        );
        assert!(
            out.join(link).is_file(),
            "the link {link} does not reach a file"
        );
    }

    // User text stays text: no element came from a category, a task or a check.
    assert!(
        !dom.contains("<script"),
        "a script element made it into the DOM"
    );
    assert!(!dom.contains("<b>bold"), "a category became markup");
    assert!(dom.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    // Nothing in the page points outside it.
    let external = Regex::new(r#"(?:src|href)="(?:https?:)?//"#).unwrap();
    assert!(!external.is_match(&dom), "the page references the network");
}
