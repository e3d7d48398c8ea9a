//! `hermes eval --compare OLD.json NEW.json`: every summary metric of two
//! reports side by side, with its change.
//!
//! Counts print as whole numbers and change as `+3` / `-3` / `0`; rates,
//! means and seconds print with 3 decimals and change as `+0.050`. A metric
//! one report lacks (a category only the new suite has, a pass^3 when the
//! old run used K = 2) prints `-` on that side and `n/a` as its change.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::check::RunStatus;
use super::report::{Report, Summary};

/// A metric's value: counts and measurements print differently.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Num {
    Count(i128),
    Real(f64),
}

impl Num {
    fn show(self) -> String {
        match self {
            Num::Count(n) => n.to_string(),
            Num::Real(x) => format!("{x:.3}"),
        }
    }

    fn change(old: Num, new: Num) -> String {
        match (old, new) {
            (Num::Count(a), Num::Count(b)) => match b - a {
                0 => "0".into(),
                d => format!("{d:+}"),
            },
            (a, b) => {
                let d = b.as_f64() - a.as_f64();
                // A change that rounds to zero shows as 0.000, without a sign.
                if (d * 1000.0).round() == 0.0 {
                    "0.000".into()
                } else {
                    format!("{d:+.3}")
                }
            }
        }
    }

    fn as_f64(self) -> f64 {
        match self {
            Num::Count(n) => n as f64,
            Num::Real(x) => x,
        }
    }
}

/// Every summary metric of `old` and `new` as an aligned table: metric,
/// old, new, change (new − old, with its sign). Rows: runs, passed, success
/// rate, pass^k for every k either report has, rounds, seconds, tokens,
/// stops, then `by_category.<name>.*` and `by_fault.<kind>.*`.
pub fn compare(old: &Report, new: &Report) -> String {
    let rows = rows(&old.summary, &new.summary);
    let header = ["metric", "old", "new", "change"];
    let cells: Vec<[String; 4]> = rows
        .into_iter()
        .map(|(metric, o, n)| {
            let change = match (o, n) {
                (Some(o), Some(n)) => Num::change(o, n),
                _ => "n/a".into(),
            };
            let show = |v: Option<Num>| v.map(Num::show).unwrap_or_else(|| "-".into());
            [metric, show(o), show(n), change]
        })
        .collect();
    let mut widths = header.map(|h| h.chars().count());
    for row in &cells {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }

    let mut out = String::new();
    let _ = writeln!(
        out,
        "old: {} · model {} · K={} · {} runs",
        old.suite, old.model, old.repeat, old.summary.runs
    );
    let _ = writeln!(
        out,
        "new: {} · model {} · K={} · {} runs",
        new.suite, new.model, new.repeat, new.summary.runs
    );
    out.push('\n');
    let line = |out: &mut String, row: [&str; 4]| {
        let mut text = pad_right(row[0], widths[0]);
        for (i, cell) in row.iter().enumerate().skip(1) {
            text.push_str("  ");
            text.push_str(&pad_left(cell, widths[i]));
        }
        out.push_str(text.trim_end());
        out.push('\n');
    };
    line(&mut out, header);
    let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    line(&mut out, [&rule[0], &rule[1], &rule[2], &rule[3]]);
    for row in &cells {
        line(&mut out, [&row[0], &row[1], &row[2], &row[3]]);
    }
    out
}

type Row = (String, Option<Num>, Option<Num>);

fn rows(old: &Summary, new: &Summary) -> Vec<Row> {
    let count = |n: u64| Some(Num::Count(n as i128));
    let real = |x: f64| Some(Num::Real(x));
    let mut rows: Vec<Row> = vec![
        ("runs".into(), count(old.runs), count(new.runs)),
        ("passed".into(), count(old.passed), count(new.passed)),
        (
            "success_rate".into(),
            real(old.success_rate),
            real(new.success_rate),
        ),
    ];
    let ks: BTreeSet<u32> = old
        .pass_hat_k
        .keys()
        .chain(new.pass_hat_k.keys())
        .copied()
        .collect();
    for k in ks {
        rows.push((
            format!("pass^{k}"),
            old.pass_hat_k.get(&k).copied().and_then(real),
            new.pass_hat_k.get(&k).copied().and_then(real),
        ));
    }
    rows.extend([
        (
            "mean_rounds".into(),
            real(old.mean_rounds),
            real(new.mean_rounds),
        ),
        (
            "p95_rounds".into(),
            count(old.p95_rounds as u64),
            count(new.p95_rounds as u64),
        ),
        (
            "mean_seconds".into(),
            real(old.mean_seconds),
            real(new.mean_seconds),
        ),
        (
            "p95_seconds".into(),
            real(old.p95_seconds),
            real(new.p95_seconds),
        ),
        (
            "tokens.prompt_tokens".into(),
            count(old.tokens.prompt_tokens),
            count(new.tokens.prompt_tokens),
        ),
        (
            "tokens.completion_tokens".into(),
            count(old.tokens.completion_tokens),
            count(new.tokens.completion_tokens),
        ),
    ]);

    // Stops in status order, then names this version does not know.
    let mut stops: Vec<String> = RunStatus::ALL
        .iter()
        .map(|s| s.as_str().to_string())
        .filter(|s| old.stops.contains_key(s) || new.stops.contains_key(s))
        .collect();
    let unknown: BTreeSet<&String> = old
        .stops
        .keys()
        .chain(new.stops.keys())
        .filter(|k| k.parse::<RunStatus>().is_err())
        .collect();
    stops.extend(unknown.into_iter().cloned());
    for stop in stops {
        // A status one report leaves out (failed, in a run-only suite) had no runs.
        let get = |s: &Summary| count(s.stops.get(&stop).copied().unwrap_or(0));
        rows.push((format!("stops.{stop}"), get(old), get(new)));
    }

    let categories: BTreeSet<&String> = old
        .by_category
        .keys()
        .chain(new.by_category.keys())
        .collect();
    for cat in categories {
        let (o, n) = (old.by_category.get(cat), new.by_category.get(cat));
        rows.push((
            format!("by_category.{cat}.runs"),
            o.and_then(|c| count(c.runs)),
            n.and_then(|c| count(c.runs)),
        ));
        rows.push((
            format!("by_category.{cat}.passed"),
            o.and_then(|c| count(c.passed)),
            n.and_then(|c| count(c.passed)),
        ));
        rows.push((
            format!("by_category.{cat}.success_rate"),
            o.and_then(|c| real(super::report::round3(c.success_rate()))),
            n.and_then(|c| real(super::report::round3(c.success_rate()))),
        ));
    }

    let kinds: BTreeSet<&String> = old.by_fault.keys().chain(new.by_fault.keys()).collect();
    for kind in kinds {
        let (o, n) = (old.by_fault.get(kind), new.by_fault.get(kind));
        rows.push((
            format!("by_fault.{kind}.injected"),
            o.and_then(|f| count(f.injected)),
            n.and_then(|f| count(f.injected)),
        ));
        rows.push((
            format!("by_fault.{kind}.runs_hit"),
            o.and_then(|f| count(f.runs_hit)),
            n.and_then(|f| count(f.runs_hit)),
        ));
        rows.push((
            format!("by_fault.{kind}.runs_hit_passed"),
            o.and_then(|f| count(f.runs_hit_passed)),
            n.and_then(|f| count(f.runs_hit_passed)),
        ));
        rows.push((
            format!("by_fault.{kind}.recovery_rate"),
            o.and_then(|f| f.recovery_rate).and_then(real),
            n.and_then(|f| f.recovery_rate).and_then(real),
        ));
    }
    rows
}

fn pad_right(s: &str, width: usize) -> String {
    let n = s.chars().count();
    format!("{s}{}", " ".repeat(width.saturating_sub(n)))
}

fn pad_left(s: &str, width: usize) -> String {
    let n = s.chars().count();
    format!("{}{s}", " ".repeat(width.saturating_sub(n)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::report::tests::{mixed_runs, run};
    use std::collections::BTreeMap;

    fn old_report() -> Report {
        let mut runs = mixed_runs();
        runs[0].faults.insert("tool_error".into(), 2);
        runs[4].faults.insert("tool_error".into(), 1);
        Report::new("files", "old-model", 3, BTreeMap::new(), 1, runs)
    }

    fn new_report() -> Report {
        let mut runs = mixed_runs();
        // c now passes once, and a new category appears.
        runs[2].passed = true;
        runs[2].status = RunStatus::Finished;
        runs[2].rounds = 9;
        for rep in 1..=3 {
            runs.push(run("d", "misleading", rep, true));
        }
        runs[0].faults.insert("tool_error".into(), 1);
        Report::new("files", "new-model", 3, BTreeMap::new(), 1, runs)
    }

    #[test]
    fn compare_prints_every_metric_with_its_signed_change() {
        let table = compare(&old_report(), &new_report());
        println!("{table}");
        let mut lines = table.lines();
        assert_eq!(
            lines.next(),
            Some("old: files · model old-model · K=3 · 9 runs")
        );
        assert_eq!(
            lines.next(),
            Some("new: files · model new-model · K=3 · 12 runs")
        );
        let line = |metric: &str| -> Vec<String> {
            table
                .lines()
                .find(|l| l.split_whitespace().next() == Some(metric))
                .unwrap_or_else(|| panic!("no row {metric} in\n{table}"))
                .split_whitespace()
                .map(String::from)
                .collect()
        };
        assert_eq!(line("runs"), ["runs", "9", "12", "+3"]);
        assert_eq!(line("passed"), ["passed", "5", "9", "+4"]);
        assert_eq!(
            line("success_rate"),
            ["success_rate", "0.556", "0.750", "+0.194"]
        );
        // pass^2: old (1 + 1/3 + 0)/3 = 0.444; new (1 + 1/3 + 0 + 1)/4 = 0.583.
        assert_eq!(line("pass^2"), ["pass^2", "0.444", "0.583", "+0.139"]);
        assert_eq!(line("p95_rounds"), ["p95_rounds", "4", "9", "+5"]);
        assert_eq!(line("pass^3"), ["pass^3", "0.333", "0.500", "+0.167"]);
        assert_eq!(
            line("mean_seconds"),
            ["mean_seconds", "10.000", "10.000", "0.000"]
        );
        assert_eq!(
            line("tokens.prompt_tokens"),
            ["tokens.prompt_tokens", "9000", "12000", "+3000"]
        );
        assert_eq!(
            line("stops.max_rounds"),
            ["stops.max_rounds", "4", "3", "-1"]
        );
        assert_eq!(line("stops.error"), ["stops.error", "0", "0", "0"]);
        assert_eq!(
            line("by_category.edge.passed"),
            ["by_category.edge.passed", "0", "1", "+1"]
        );
        assert_eq!(
            line("by_category.misleading.runs"),
            ["by_category.misleading.runs", "-", "3", "n/a"]
        );
        assert_eq!(
            line("by_fault.tool_error.injected"),
            ["by_fault.tool_error.injected", "3", "1", "-2"]
        );
        assert_eq!(
            line("by_fault.tool_error.recovery_rate"),
            [
                "by_fault.tool_error.recovery_rate",
                "0.500",
                "1.000",
                "+0.500"
            ]
        );
        // Columns line up: every data row is as wide as the rule or narrower,
        // and the change column ends at the same place on every row.
        let rule = table.lines().find(|l| l.starts_with("---")).unwrap();
        let end = rule.chars().count();
        for l in table.lines().skip_while(|l| !l.starts_with("metric")) {
            assert_eq!(l.chars().count(), end, "misaligned: {l:?}");
        }
    }
}
