//! The counters `GET /metrics` shows, in Prometheus's text format: tasks
//! by status (from the store), subtasks by how they ended, rounds, model
//! calls with a latency histogram (each executor round's wait on the
//! model), and tokens in and out (from each ended task's report). Counters
//! count from the server's start, as Prometheus counters do.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;

use crate::record::TaskState;

/// Upper bounds of the model-latency histogram, in seconds.
const BUCKETS: [f64; 10] = [0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0];

/// The service's counters since start.
#[derive(Default)]
pub struct Metrics {
    subtasks_finished: AtomicU64,
    subtasks_failed: AtomicU64,
    rounds: AtomicU64,
    /// Model calls by histogram bucket (the last: above every bound).
    latency_buckets: [AtomicU64; BUCKETS.len() + 1],
    latency_ms_sum: AtomicU64,
    tokens_in: AtomicU64,
    tokens_out: AtomicU64,
}

impl Metrics {
    /// Counts what an event says.
    pub fn on_event(&self, kind: &str, data: &Value) {
        match kind {
            "subtask_finished" => {
                self.subtasks_finished.fetch_add(1, Ordering::Relaxed);
            }
            "subtask_failed" => {
                self.subtasks_failed.fetch_add(1, Ordering::Relaxed);
            }
            "round" => {
                self.rounds.fetch_add(1, Ordering::Relaxed);
                let ms = data["llm_ms"].as_u64().unwrap_or(0);
                let seconds = ms as f64 / 1000.0;
                let bucket = BUCKETS
                    .iter()
                    .position(|&b| seconds <= b)
                    .unwrap_or(BUCKETS.len());
                self.latency_buckets[bucket].fetch_add(1, Ordering::Relaxed);
                self.latency_ms_sum.fetch_add(ms, Ordering::Relaxed);
            }
            _ => {}
        }
    }

    /// Counts an ended task's tokens (its report's `usage`).
    pub fn on_task_ended(&self, report: Option<&Value>) {
        let usage = report.map(|r| &r["usage"]);
        let tokens = |field: &str| usage.and_then(|u| u[field].as_u64()).unwrap_or(0);
        self.tokens_in
            .fetch_add(tokens("prompt_tokens"), Ordering::Relaxed);
        self.tokens_out
            .fetch_add(tokens("completion_tokens"), Ordering::Relaxed);
    }

    /// The Prometheus text for these counters and `tasks` (how many tasks
    /// the store holds in each status).
    pub fn render(&self, tasks: &[(TaskState, u64)]) -> String {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let mut out = String::new();
        out.push_str(
            "# HELP hermes_tasks Tasks in the store by status.\n# TYPE hermes_tasks gauge\n",
        );
        for (state, n) in tasks {
            let _ = writeln!(out, "hermes_tasks{{status=\"{}\"}} {n}", state.as_str());
        }
        out.push_str("# HELP hermes_subtasks_total Subtasks ended since start, by how.\n# TYPE hermes_subtasks_total counter\n");
        let _ = writeln!(
            out,
            "hermes_subtasks_total{{status=\"finished\"}} {}",
            get(&self.subtasks_finished)
        );
        let _ = writeln!(
            out,
            "hermes_subtasks_total{{status=\"failed\"}} {}",
            get(&self.subtasks_failed)
        );
        out.push_str("# HELP hermes_rounds_total Executor rounds since start.\n# TYPE hermes_rounds_total counter\n");
        let _ = writeln!(out, "hermes_rounds_total {}", get(&self.rounds));
        out.push_str("# HELP hermes_model_call_seconds Executor rounds' wait on the model.\n# TYPE hermes_model_call_seconds histogram\n");
        let mut cumulative = 0;
        for (i, bound) in BUCKETS.iter().enumerate() {
            cumulative += get(&self.latency_buckets[i]);
            let _ = writeln!(
                out,
                "hermes_model_call_seconds_bucket{{le=\"{bound}\"}} {cumulative}"
            );
        }
        cumulative += get(&self.latency_buckets[BUCKETS.len()]);
        let _ = writeln!(
            out,
            "hermes_model_call_seconds_bucket{{le=\"+Inf\"}} {cumulative}"
        );
        let _ = writeln!(
            out,
            "hermes_model_call_seconds_sum {}",
            get(&self.latency_ms_sum) as f64 / 1000.0
        );
        let _ = writeln!(out, "hermes_model_call_seconds_count {cumulative}");
        out.push_str("# HELP hermes_tokens_total Model tokens of ended tasks since start.\n# TYPE hermes_tokens_total counter\n");
        let _ = writeln!(
            out,
            "hermes_tokens_total{{direction=\"in\"}} {}",
            get(&self.tokens_in)
        );
        let _ = writeln!(
            out,
            "hermes_tokens_total{{direction=\"out\"}} {}",
            get(&self.tokens_out)
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_fill_the_histogram_cumulatively_and_tokens_add_up() {
        let metrics = Metrics::default();
        metrics.on_event("round", &serde_json::json!({"llm_ms": 200}));
        metrics.on_event("round", &serde_json::json!({"llm_ms": 3000}));
        metrics.on_event("subtask_finished", &Value::Null);
        metrics.on_task_ended(Some(
            &serde_json::json!({"usage": {"prompt_tokens": 10, "completion_tokens": 4}}),
        ));
        let text = metrics.render(&[(TaskState::Finished, 1)]);
        for line in [
            "hermes_tasks{status=\"finished\"} 1",
            "hermes_rounds_total 2",
            "hermes_model_call_seconds_bucket{le=\"0.25\"} 1",
            "hermes_model_call_seconds_bucket{le=\"5\"} 2",
            "hermes_model_call_seconds_bucket{le=\"+Inf\"} 2",
            "hermes_model_call_seconds_sum 3.2",
            "hermes_subtasks_total{status=\"finished\"} 1",
            "hermes_tokens_total{direction=\"in\"} 10",
            "hermes_tokens_total{direction=\"out\"} 4",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
        }
    }
}
