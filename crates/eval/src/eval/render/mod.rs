//! Turning a [`Report`] into files people read: `report.md`, a
//! self-contained `report.html`, and a short summary for the terminal.
//!
//! The HTML needs nothing but a browser: inline CSS, no script, no network,
//! and the charts (success by category, recovery by fault kind, the
//! distributions of rounds and seconds) are SVG drawn in Rust and inlined.
//! They are drawn with `plotters` through its SVG backend only: with default
//! features off it pulls no font library (text goes into the SVG as `<text>`
//! for the browser to lay out) and it escapes the text it writes, so a
//! category named `<b>` stays text. Everything else we write is escaped by
//! [`escape_html`]: task ids, categories and check messages are user data.
//!
//! The runs table links every run to its journal at
//! `runs/<task>.<rep>/journal.jsonl`, relative to the report folder, so the
//! folder can be moved or zipped whole.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use super::check::RunStatus;
use super::report::{task_order, Report, RunRecord};

mod charts;
mod html;
mod markdown;
#[cfg(test)]
mod tests;

pub use html::render_html;
pub use markdown::render_markdown;

/// Writes `report.json` (pretty-printed), `report.md` and `report.html`
/// into `dir`, creating it if needed. The runner writes the runs' journals
/// under `dir/runs/<task>.<rep>/` for the links to work.
pub fn write_report_dir(dir: &Path, report: &Report) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut json = serde_json::to_string_pretty(report).map_err(std::io::Error::other)?;
    json.push('\n');
    std::fs::write(dir.join("report.json"), json)?;
    std::fs::write(dir.join("report.md"), render_markdown(report))?;
    std::fs::write(dir.join("report.html"), render_html(report))?;
    Ok(())
}

/// A few lines for the terminal at the end of an eval: pass rate, pass^k,
/// rounds, seconds, tokens, stops, categories and faults.
pub fn render_text(report: &Report) -> String {
    let s = &report.summary;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "suite {} · model {} · {} tasks × {} = {} runs",
        report.suite,
        or_dash(&report.model),
        task_order(&report.runs).len(),
        report.repeat,
        s.runs
    );
    let pass_k: Vec<String> = s
        .pass_hat_k
        .iter()
        .map(|(k, v)| format!("pass^{k} {v:.3}"))
        .collect();
    let _ = writeln!(
        out,
        "passed {}/{} ({})   {}",
        s.passed,
        s.runs,
        percent(s.success_rate),
        pass_k.join("  ")
    );
    let _ = writeln!(
        out,
        "rounds mean {:.1}, p95 {}   seconds mean {:.1}, p95 {:.1}   tokens {} prompt + {} completion ({} per pass)",
        s.mean_rounds,
        s.p95_rounds,
        s.mean_seconds,
        s.p95_seconds,
        s.tokens.prompt_tokens,
        s.tokens.completion_tokens,
        s.tokens_per_pass
            .map_or_else(|| "none passed".to_string(), |t| format!("{t:.0}"))
    );
    let stops: Vec<String> = stops_in_order(report)
        .into_iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    let _ = writeln!(out, "stops: {}", stops.join(", "));
    let cats: Vec<String> = s
        .by_category
        .iter()
        .map(|(c, st)| format!("{c} {}/{}", st.passed, st.runs))
        .collect();
    let _ = writeln!(out, "by category: {}", cats.join(", "));
    for (kind, f) in &s.by_fault {
        let _ = writeln!(
            out,
            "fault {kind}: injected {}, hit {} runs, {} of them passed ({})",
            f.injected,
            f.runs_hit,
            f.runs_hit_passed,
            f.recovery_rate.map(percent).unwrap_or_else(|| "n/a".into())
        );
    }
    for (steer, st) in &s.by_steer {
        let _ = writeln!(
            out,
            "steer {steer}: acted in {} rounds of {} runs, {} of them passed",
            st.rounds, st.runs, st.runs_passed
        );
    }
    out
}

/// The summary as (metric, value) rows, shared by Markdown and HTML.
fn summary_rows(report: &Report) -> Vec<(String, String)> {
    let s = &report.summary;
    let mut rows = vec![
        ("runs".to_string(), s.runs.to_string()),
        ("passed".into(), s.passed.to_string()),
        ("success rate".into(), percent(s.success_rate)),
    ];
    for (k, v) in &s.pass_hat_k {
        rows.push((format!("pass^{k}"), format!("{v:.3}")));
    }
    rows.extend([
        ("mean rounds".into(), format!("{:.1}", s.mean_rounds)),
        ("p95 rounds".into(), s.p95_rounds.to_string()),
        ("mean seconds".into(), format!("{:.1}", s.mean_seconds)),
        ("p95 seconds".into(), format!("{:.1}", s.p95_seconds)),
        ("prompt tokens".into(), s.tokens.prompt_tokens.to_string()),
        (
            "completion tokens".into(),
            s.tokens.completion_tokens.to_string(),
        ),
        (
            "tokens per pass".into(),
            s.tokens_per_pass
                .map_or_else(|| "-".to_string(), |t| format!("{t:.0}")),
        ),
    ]);
    rows
}

/// Stops in status order (finished first), then any name this version does
/// not know, alphabetically.
pub(crate) fn stops_in_order(report: &Report) -> Vec<(String, u64)> {
    let stops = &report.summary.stops;
    let mut out: Vec<(String, u64)> = RunStatus::ALL
        .iter()
        .filter_map(|s| stops.get(s.as_str()).map(|n| (s.as_str().to_string(), *n)))
        .collect();
    for (name, n) in stops {
        if name.parse::<RunStatus>().is_err() {
            out.push((name.clone(), *n));
        }
    }
    out
}

fn faults_spec(report: &Report) -> String {
    if report.faults.is_empty() {
        return "none".into();
    }
    report
        .faults
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn run_faults(run: &RunRecord) -> String {
    run.faults
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(k, n)| format!("{k}×{n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The journal link of a run, with every byte outside `A-Z a-z 0-9 - _ . ~ /`
/// percent-encoded (task ids from a suite are already plain, but a report
/// read from disk may hold anything).
fn journal_href(run: &RunRecord) -> String {
    let mut out = String::new();
    for b in run.journal_path().bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~/".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

fn percent(rate: f64) -> String {
    format!("{:.1}%", rate * 100.0)
}

fn or_dash(s: &str) -> &str {
    if s.is_empty() {
        "-"
    } else {
        s
    }
}

fn short(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let head: String = s.chars().take(max - 1).collect();
        format!("{head}…")
    }
}

/// Escapes text for HTML content and attribute values.
pub fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}
