//! One `llm.call` span per model request, with the OpenTelemetry GenAI
//! attributes: operation, model, temperature, max tokens, token usage and
//! finish reasons. Prompt and completion text are recorded only when
//! turned on (`--trace-content`), truncated.

use opentelemetry::{Array, StringValue, Value};
use tracing::Instrument;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use super::{ChatRequest, ChatResponse, Llm, LlmError};
use crate::telemetry::{record_content, set_error, CONTENT_CHARS};
use crate::text::{clip, clip_tail};

/// Sends `request` to `llm` inside an `llm.call` span.
pub async fn traced_chat(llm: &dyn Llm, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
    let span = tracing::info_span!(
        "llm.call",
        gen_ai.operation.name = "chat",
        gen_ai.request.model = %llm.model(),
        gen_ai.request.temperature = request.temperature_f64(),
        gen_ai.request.max_tokens = i64::from(request.max_tokens),
    );
    if record_content() {
        // The end of the conversation (latest observation, restated goal) is
        // what explains the next decision; the system prompt is the same every round.
        let prompt = serde_json::to_string(&request.messages).unwrap_or_default();
        span.set_attribute("gen_ai.prompt", clip_tail(&prompt, CONTENT_CHARS));
    }
    let result = llm.chat(request).instrument(span.clone()).await;
    // Unexported, the span is never built (`telemetry::ROUND_SPANS`), and
    // each attribute was still a subscriber lookup.
    if !crate::telemetry::exporting() {
        return result;
    }
    match &result {
        Ok(response) => {
            span.set_attribute(
                "gen_ai.usage.input_tokens",
                response.usage.prompt_tokens as i64,
            );
            span.set_attribute(
                "gen_ai.usage.output_tokens",
                response.usage.completion_tokens as i64,
            );
            let reasons: Vec<StringValue> = response
                .finish_reason
                .iter()
                .map(|r| StringValue::from(r.clone()))
                .collect();
            span.set_attribute(
                "gen_ai.response.finish_reasons",
                Value::Array(Array::String(reasons)),
            );
            if record_content() {
                span.set_attribute("gen_ai.completion", clip(&response.content, CONTENT_CHARS));
            }
        }
        Err(e) => set_error(&span, e.to_string()),
    }
    result
}
