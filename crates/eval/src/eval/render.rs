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

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::check::RunStatus;
use super::report::{task_order, Report, RunRecord};

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

/// The report as one self-contained HTML page (inline CSS and SVG, no
/// script, nothing fetched).
pub fn render_html(report: &Report) -> String {
    let s = &report.summary;
    let mut h = String::new();
    let title = format!("Hermes eval: {}", report.suite);
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>{CSS}</style>\n</head>\n<body>\n",
        escape_html(&title)
    );
    let _ = writeln!(
        h,
        "<h1>Eval <code>{}</code></h1>",
        escape_html(&report.suite)
    );
    let _ = writeln!(
        h,
        "<p class=\"meta\">model <code>{}</code> · {} runs per task · seed {} · faults: {}</p>",
        escape_html(or_dash(&report.model)),
        report.repeat,
        report.seed,
        escape_html(&faults_spec(report))
    );

    h.push_str("<section id=\"summary\">\n<h2>Summary</h2>\n<table class=\"metrics\">\n<tbody>\n");
    for (metric, value) in summary_rows(report) {
        let _ = writeln!(
            h,
            "<tr><th scope=\"row\">{}</th><td>{}</td></tr>",
            escape_html(&metric),
            escape_html(&value)
        );
    }
    h.push_str("</tbody>\n</table>\n</section>\n");

    h.push_str("<section id=\"charts\">\n<h2>Charts</h2>\n<div class=\"charts\">\n");
    let categories: Vec<Bar> = s
        .by_category
        .iter()
        .map(|(cat, st)| Bar {
            label: cat.clone(),
            value: st.success_rate(),
            note: format!("{}/{}", st.passed, st.runs),
        })
        .collect();
    figure(
        &mut h,
        "chart-category",
        "Success rate by category",
        rate_chart(&categories),
    );
    let faults: Vec<Bar> = s
        .by_fault
        .iter()
        .filter_map(|(kind, f)| {
            f.recovery_rate.map(|rate| Bar {
                label: kind.clone(),
                value: rate,
                note: format!("{}/{}", f.runs_hit_passed, f.runs_hit),
            })
        })
        .collect();
    if faults.is_empty() {
        let _ = writeln!(
            h,
            "<figure id=\"chart-fault\" class=\"chart empty\"><figcaption>Success rate by fault kind</figcaption>\
             <p>No faults were injected.</p></figure>"
        );
    } else {
        figure(
            &mut h,
            "chart-fault",
            "Success rate of runs hit by each fault kind",
            rate_chart(&faults),
        );
    }
    let rounds: Vec<f64> = report.runs.iter().map(|r| r.rounds as f64).collect();
    figure(
        &mut h,
        "chart-rounds",
        "Rounds per run",
        histogram_chart(&bins(&rounds, true), "rounds", "runs"),
    );
    let seconds: Vec<f64> = report.runs.iter().map(|r| r.seconds).collect();
    figure(
        &mut h,
        "chart-seconds",
        "Seconds per run",
        histogram_chart(&bins(&seconds, false), "seconds", "runs"),
    );
    h.push_str("</div>\n</section>\n");

    h.push_str("<section id=\"stops\">\n<h2>Stops</h2>\n<table>\n<thead><tr><th>status</th><th>runs</th></tr></thead>\n<tbody>\n");
    for (status, n) in stops_in_order(report) {
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td class=\"num\">{n}</td></tr>",
            escape_html(&status)
        );
    }
    h.push_str("</tbody>\n</table>\n</section>\n");

    h.push_str("<section id=\"categories\">\n<h2>By category</h2>\n<table>\n<thead><tr><th>category</th><th>runs</th><th>passed</th><th>success</th></tr></thead>\n<tbody>\n");
    for (cat, st) in &s.by_category {
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            escape_html(cat),
            st.runs,
            st.passed,
            percent(st.success_rate())
        );
    }
    h.push_str("</tbody>\n</table>\n</section>\n");

    h.push_str("<section id=\"faults\">\n<h2>By fault</h2>\n");
    if s.by_fault.is_empty() {
        h.push_str("<p>No faults were injected.</p>\n");
    } else {
        h.push_str("<table>\n<thead><tr><th>fault</th><th>injected</th><th>runs hit</th><th>hit and passed</th><th>recovery</th></tr></thead>\n<tbody>\n");
        for (kind, f) in &s.by_fault {
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
                escape_html(kind),
                f.injected,
                f.runs_hit,
                f.runs_hit_passed,
                f.recovery_rate.map(percent).unwrap_or_else(|| "n/a".into())
            );
        }
        h.push_str("</tbody>\n</table>\n");
    }
    h.push_str("</section>\n");

    h.push_str(
        "<section id=\"runs\">\n<h2>Runs</h2>\n<table id=\"runs-table\">\n<thead><tr>\
         <th>task</th><th>category</th><th>rep</th><th>passed</th><th>status</th><th>rounds</th>\
         <th>seconds</th><th>tokens</th><th>faults</th><th>failed checks</th><th>journal</th>\
         </tr></thead>\n<tbody>\n",
    );
    for run in &report.runs {
        let mut problems: Vec<String> = run.failed_checks.iter().map(|c| escape_html(c)).collect();
        problems.extend(
            run.error
                .iter()
                .map(|e| format!("error: {}", escape_html(e))),
        );
        let problems = if problems.is_empty() {
            String::new()
        } else {
            format!("<ul><li>{}</li></ul>", problems.join("</li><li>"))
        };
        let _ = writeln!(
            h,
            "<tr class=\"{}\"><td>{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{:.1}</td><td class=\"num\">{}</td><td>{}</td>\
             <td class=\"checks\">{}</td><td><a class=\"journal\" href=\"{}\">journal</a></td></tr>",
            if run.passed { "pass" } else { "fail" },
            escape_html(&run.task),
            escape_html(&run.category),
            run.rep,
            if run.passed { "✓" } else { "✗" },
            run.status,
            run.rounds,
            run.seconds,
            run.usage.total(),
            escape_html(&run_faults(run)),
            problems,
            escape_html(&journal_href(run))
        );
    }
    h.push_str("</tbody>\n</table>\n</section>\n</body>\n</html>\n");
    h
}

const CSS: &str = "
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2rem auto;max-width:1200px;padding:0 1rem;color:#1f2328}
h1{font-size:1.6rem}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #d0d7de;padding-bottom:.3rem}
.meta{color:#59636e}code{background:#f6f8fa;padding:.1rem .3rem;border-radius:4px}
table{border-collapse:collapse;font-size:.9rem}th,td{border:1px solid #d0d7de;padding:.3rem .6rem;text-align:left;vertical-align:top}
thead th{background:#f6f8fa}.num{text-align:right;font-variant-numeric:tabular-nums}
table.metrics td{text-align:right;font-variant-numeric:tabular-nums}
tr.pass td:nth-child(4){color:#1a7f37}tr.fail td:nth-child(4){color:#cf222e}
td.checks ul{margin:0;padding-left:1.1rem}td.checks{max-width:32rem;overflow-wrap:anywhere}
.charts{display:flex;flex-wrap:wrap;gap:1.5rem}figure.chart{margin:0}figcaption{font-weight:600;margin-bottom:.4rem}
svg{max-width:100%;height:auto}
";

/// One bar of a rate chart: a label, a rate in 0..=1, and a note drawn
/// above the bar (`5/6`).
struct Bar {
    label: String,
    value: f64,
    note: String,
}

const BAR_COLOR: RGBColor = RGBColor(0x2f, 0x81, 0xf7);
const HIST_COLOR: RGBColor = RGBColor(0x8c, 0x6b, 0xd1);
// plotters draws text at size / 1.24; 16 comes out near 13 px.
const AXIS_FONT: (&str, u32) = ("sans-serif", 16);

fn figure(h: &mut String, id: &str, caption: &str, svg: Result<String, String>) {
    match svg {
        Ok(svg) => {
            let _ = writeln!(
                h,
                "<figure id=\"{id}\" class=\"chart\"><figcaption>{}</figcaption>\n{svg}\n</figure>",
                escape_html(caption)
            );
        }
        // Drawing into a string does not fail in practice; if it ever does,
        // the page says so instead of losing the whole report.
        Err(e) => {
            let _ = writeln!(
                h,
                "<figure id=\"{id}\" class=\"chart empty\"><figcaption>{}</figcaption><p>chart unavailable: {}</p></figure>",
                escape_html(caption),
                escape_html(&e)
            );
        }
    }
}

/// Width of a chart with `n` bars: room for each label, within reason.
fn chart_width(n: usize) -> u32 {
    (120 + 90 * n as u32).clamp(420, 1100)
}

/// A vertical bar chart of rates (0–100 %), one bar per label.
fn rate_chart(bars: &[Bar]) -> Result<String, String> {
    let mut svg = String::new();
    {
        let root =
            SVGBackend::with_string(&mut svg, (chart_width(bars.len()), 300)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        // Integer ranges are inclusive in plotters: 0..last gives one segment per bar.
        let last = bars.len().saturating_sub(1) as u32;
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(56)
            .build_cartesian_2d((0..last).into_segmented(), 0f64..1.12)
            .map_err(|e| e.to_string())?;
        let labels: Vec<String> = bars.iter().map(|b| short(&b.label, 14)).collect();
        let x_label = |v: &SegmentValue<u32>| match v {
            SegmentValue::CenterOf(i) => labels.get(*i as usize).cloned().unwrap_or_default(),
            _ => String::new(),
        };
        chart
            .configure_mesh()
            .disable_x_mesh()
            .light_line_style(TRANSPARENT)
            .x_labels(bars.len() + 1)
            .x_label_formatter(&x_label)
            .y_labels(6)
            .y_label_formatter(&|y| format!("{:.0}%", y * 100.0))
            .y_desc("passed")
            .label_style(AXIS_FONT)
            .draw()
            .map_err(|e| e.to_string())?;
        chart
            .draw_series(
                Histogram::vertical(&chart)
                    .style(BAR_COLOR.filled())
                    .margin(14)
                    .data(bars.iter().enumerate().map(|(i, b)| (i as u32, b.value))),
            )
            .map_err(|e| e.to_string())?;
        let note_style =
            TextStyle::from(AXIS_FONT.into_font()).pos(Pos::new(HPos::Center, VPos::Bottom));
        chart
            .draw_series(bars.iter().enumerate().map(|(i, b)| {
                Text::new(
                    format!("{} ({})", percent(b.value), b.note),
                    (SegmentValue::CenterOf(i as u32), b.value + 0.02),
                    note_style.clone(),
                )
            }))
            .map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

/// A histogram of counts per bin; `x_desc` names the binned quantity and
/// `unit` what is counted.
fn histogram_chart(bins: &[(String, u64)], x_desc: &str, unit: &str) -> Result<String, String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (chart_width(bins.len()).max(520), 300))
            .into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let last = bins.len().saturating_sub(1) as u32;
        let top = bins.iter().map(|b| b.1).max().unwrap_or(0).max(1);
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .x_label_area_size(52)
            .y_label_area_size(48)
            .build_cartesian_2d((0..last).into_segmented(), 0u64..top + top.div_ceil(8))
            .map_err(|e| e.to_string())?;
        let x_label = |v: &SegmentValue<u32>| match v {
            SegmentValue::CenterOf(i) => bins
                .get(*i as usize)
                .map(|b| b.0.clone())
                .unwrap_or_default(),
            _ => String::new(),
        };
        chart
            .configure_mesh()
            .disable_x_mesh()
            .light_line_style(TRANSPARENT)
            .x_labels(bins.len() + 1)
            .x_label_formatter(&x_label)
            .y_labels((top as usize + 1).min(8))
            .y_label_formatter(&|y| format!("{y}"))
            .x_desc(x_desc)
            .y_desc(unit)
            .label_style(AXIS_FONT)
            .draw()
            .map_err(|e| e.to_string())?;
        chart
            .draw_series(
                Histogram::vertical(&chart)
                    .style(HIST_COLOR.filled())
                    .margin(3)
                    .data(bins.iter().enumerate().map(|(i, b)| (i as u32, b.1))),
            )
            .map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

/// Bins for a histogram of `values`: one per whole number for small
/// integer ranges (rounds), else about ten bins of a round width (1, 2, 5
/// times a power of ten), labelled by their lower bound.
fn bins(values: &[f64], integers: bool) -> Vec<(String, u64)> {
    let max = values.iter().copied().fold(0.0f64, f64::max);
    if integers && max <= 30.0 {
        let top = max as usize;
        let mut counts = vec![0u64; top + 1];
        for v in values {
            counts[(*v as usize).min(top)] += 1;
        }
        // Leading empty bins below the smallest value say nothing.
        let first = counts.iter().position(|&c| c > 0).unwrap_or(0);
        return counts
            .into_iter()
            .enumerate()
            .skip(first)
            .map(|(i, c)| (i.to_string(), c))
            .collect();
    }
    let width = nice_width(max / 10.0, integers);
    let count = ((max / width).floor() as usize) + 1;
    let mut counts = vec![0u64; count];
    for v in values {
        counts[((v / width).floor() as usize).min(count - 1)] += 1;
    }
    counts
        .into_iter()
        .enumerate()
        .map(|(i, c)| {
            let lo = i as f64 * width;
            let label = if width >= 1.0 {
                format!("{lo:.0}–{:.0}", lo + width)
            } else {
                format!("{lo:.1}–{:.1}", lo + width)
            };
            (label, c)
        })
        .collect()
}

/// The smallest of 1, 2, 5 × 10^n at least `raw` (at least 1 for integers).
fn nice_width(raw: f64, integers: bool) -> f64 {
    if raw <= 0.0 || !raw.is_finite() {
        return 1.0;
    }
    let power = 10f64.powf(raw.log10().floor());
    let width = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * power)
        .find(|w| *w >= raw)
        .unwrap_or(10.0 * power);
    if integers {
        width.max(1.0).ceil()
    } else {
        width
    }
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

#[cfg(test)]
mod tests {
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
        assert!(
            html.contains("href=\"runs/c%3Cscript%3Ealert%281%29%3C/script%3E.1/journal.jsonl\"")
        );
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
}
