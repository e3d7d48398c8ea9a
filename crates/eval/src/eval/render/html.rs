//! `report.html`: one self-contained page (inline CSS and SVG charts).

use std::fmt::Write as _;

use super::charts::{bins, histogram_chart, rate_chart, Bar};
use super::*;

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
