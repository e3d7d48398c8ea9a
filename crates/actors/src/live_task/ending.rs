//! How a live task ends: the final answer (one model call, or the result
//! of the subtask that built on all the others passed through), a partial report, or an error; and the one
//! reply, which stops what is left and closes the task's spans.

use tracing_opentelemetry::OpenTelemetrySpanExt;

use super::{Cx, LiveTask};
use crate::messages::TaskEvent;
use crate::model_call::ask_then_tell;
use crate::plan;
use crate::report::{TaskReport, TaskStatus};
use hermes_core::telemetry;

impl LiveTask {
    /// Everything has ended: write the answer (one model call, or the
    /// closing subtask's result passed through, see
    /// [`Dag::closing_result`](crate::dag::Dag::closing_result)) or report
    /// the partial state.
    pub(super) fn finalise(&mut self, cx: &mut Cx<'_>) {
        let results = self.dag.results();
        if self.dag.status() != TaskStatus::Finished {
            let partial = self.joined_results();
            return self.finish(Some(partial).filter(|p| !p.is_empty()));
        }
        // One subtask, or a last one that built on all the others: its
        // result is the answer, and no model call restates it.
        if let Some(result) = self.dag.closing_result() {
            let result = result.to_string();
            return self.finish(Some(result));
        }
        self.answering = true;
        let messages = plan::final_messages(&self.dag.task, &results);
        let llm = super::budget::budgeted(cx.config.models.default_model(), self.budget.as_ref());
        let temperature = cx.config.limits.temperature;
        let span = tracing::info_span!(parent: &self.span, "answer");
        ask_then_tell(
            cx.myself,
            self.id,
            span,
            async move {
                TaskEvent::Answered(plan::request_answer(llm.as_ref(), messages, temperature).await)
            },
            TaskEvent::answer_failed,
        );
    }

    pub(super) fn finish(&mut self, result: Option<String>) {
        let report = self.dag.report(result, None);
        self.reply(report);
    }

    pub(super) fn reply_error(&mut self, error: String) {
        let report = self.dag.report(None, Some(error));
        self.reply(report);
    }

    /// Sends the report once, stops anything still running, closes the spans.
    fn reply(&mut self, mut report: TaskReport) {
        let Some(reply) = self.reply.take() else {
            return;
        };
        self.cancel.cancel();
        for (_, running) in self.executors.drain() {
            running.actor.stop(Some("task ended".into()));
        }
        for (_, span) in self.subtask_spans.drain() {
            telemetry::set_error(&span, "the task ended before this subtask");
        }
        let span = &self.span;
        span.set_attribute("hermes.status", report.status.as_str());
        span.set_attribute("hermes.replans", i64::from(report.replans));
        span.set_attribute(
            "gen_ai.usage.input_tokens",
            report.usage.prompt_tokens as i64,
        );
        span.set_attribute(
            "gen_ai.usage.output_tokens",
            report.usage.completion_tokens as i64,
        );
        if report.status != TaskStatus::Finished {
            let why = report
                .error
                .clone()
                .unwrap_or_else(|| format!("task {}", report.status));
            telemetry::set_error(span, why);
        }
        report.trace_id = telemetry::trace_id(span);
        let _ = reply.send(report);
    }

    /// The finished subtasks' results, labelled, for partial reports.
    pub(super) fn joined_results(&self) -> String {
        self.dag
            .results()
            .iter()
            .map(|(s, r)| format!("[{}] {}", s.id, r))
            .collect::<Vec<_>>()
            .join("\n\n")
    }
}
