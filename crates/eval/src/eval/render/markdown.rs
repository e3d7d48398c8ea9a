//! `report.md`: the report as Markdown tables, with each run's failed
//! checks and a link to its journal.

use std::fmt::Write as _;

use super::*;

/// The report as Markdown: header, summary, pass^k, stops, categories,
/// faults, and the runs with their failed checks and journal links.
pub fn render_markdown(report: &Report) -> String {
    let s = &report.summary;
    let mut md = String::new();
    let _ = writeln!(md, "# Eval `{}`\n", md_code(&report.suite));
    let _ = writeln!(
        md,
        "Model `{}` · {} runs per task · seed {} · faults: {}\n",
        md_code(or_dash(&report.model)),
        report.repeat,
        report.seed,
        md_cell(&faults_spec(report))
    );

    md.push_str("## Summary\n\n| metric | value |\n|---|---:|\n");
    for (metric, value) in summary_rows(report) {
        let _ = writeln!(md, "| {metric} | {value} |");
    }

    md.push_str("\n## Stops\n\n| status | runs |\n|---|---:|\n");
    for (status, n) in stops_in_order(report) {
        let _ = writeln!(md, "| {status} | {n} |");
    }

    md.push_str(
        "\n## By category\n\n| category | runs | passed | success |\n|---|---:|---:|---:|\n",
    );
    for (cat, st) in &s.by_category {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} |",
            md_cell(cat),
            st.runs,
            st.passed,
            percent(st.success_rate())
        );
    }

    md.push_str("\n## By fault\n\n");
    if s.by_fault.is_empty() {
        md.push_str("No faults were injected.\n");
    } else {
        md.push_str("| fault | injected | runs hit | hit and passed | recovery |\n|---|---:|---:|---:|---:|\n");
        for (kind, f) in &s.by_fault {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} |",
                md_cell(kind),
                f.injected,
                f.runs_hit,
                f.runs_hit_passed,
                f.recovery_rate.map(percent).unwrap_or_else(|| "n/a".into())
            );
        }
    }

    if !s.by_steer.is_empty() {
        md.push_str("\n## By steer\n\n| steer | rounds acted in | runs | of them passed |\n|---|---:|---:|---:|\n");
        for (steer, st) in &s.by_steer {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} |",
                md_cell(steer),
                st.rounds,
                st.runs,
                st.runs_passed
            );
        }
    }

    if !s.by_mode.is_empty() {
        md.push_str(&modes_markdown(report));
    }

    md.push_str("\n## Runs\n\n| task | category | rep | passed | status | rounds | seconds | tokens | faults | failed checks | journal |\n|---|---|---:|:---:|---|---:|---:|---:|---|---|---|\n");
    for run in &report.runs {
        let mut problems = run.failed_checks.clone();
        problems.extend(run.error.iter().map(|e| format!("error: {e}")));
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {:.1} | {} | {} | {} | [journal]({}) |",
            md_cell(&run.task),
            md_cell(&run.category),
            run.rep,
            if run.passed { "✓" } else { "✗" },
            run.status,
            run.rounds,
            run.seconds,
            run.usage.total(),
            md_cell(&run_faults(run)),
            problems
                .iter()
                .map(|p| md_cell(p))
                .collect::<Vec<_>>()
                .join("<br>"),
            journal_href(run)
        );
    }
    md
}

/// `## By mode`: each mode's figures, then each task's passes and mean
/// seconds side by side (a suite run with `--mode run,plan`).
fn modes_markdown(report: &Report) -> String {
    let s = &report.summary;
    let mut md = String::from(
        "\n## By mode\n\n| mode | runs | passed | success | s/run | rounds/run | tokens/run |\n|---|---:|---:|---:|---:|---:|---:|\n",
    );
    for (mode, m) in &s.by_mode {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {:.1} | {:.1} | {:.0} |",
            md_cell(mode),
            m.runs,
            m.passed,
            percent(m.success_rate),
            m.mean_seconds,
            m.mean_rounds,
            m.mean_tokens
        );
    }
    let modes: Vec<&String> = s.by_mode.keys().collect();
    // task → mode → (passed, runs, seconds)
    let mut tasks: BTreeMap<&str, BTreeMap<&str, (u32, u32, f64)>> = BTreeMap::new();
    for run in &report.runs {
        let Some((task, mode)) = run.task.rsplit_once('@') else {
            continue;
        };
        let cell = tasks.entry(task).or_default().entry(mode).or_default();
        cell.0 += run.passed as u32;
        cell.1 += 1;
        cell.2 += run.seconds;
    }
    let _ = write!(md, "\n| task |");
    for mode in &modes {
        let _ = write!(md, " {} passed | {} s/run |", md_cell(mode), md_cell(mode));
    }
    let _ = write!(md, "\n|---|");
    for _ in &modes {
        md.push_str("---:|---:|");
    }
    md.push('\n');
    for (task, cells) in &tasks {
        let _ = write!(md, "| {} |", md_cell(task));
        for mode in &modes {
            match cells.get(mode.as_str()) {
                Some((passed, runs, secs)) => {
                    let _ = write!(md, " {passed}/{runs} | {:.0} |", secs / f64::from(*runs));
                }
                None => md.push_str(" - | - |"),
            }
        }
        md.push('\n');
    }
    md
}

/// Makes text safe inside a Markdown table cell: no column breaks, no line
/// breaks, no raw HTML.
fn md_cell(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('|', "\\|")
        .replace(['\n', '\r'], " ")
}

/// Text inside a Markdown code span: backticks would end it.
fn md_code(s: &str) -> String {
    s.replace('`', "'").replace(['\n', '\r'], " ")
}
