//! Tracing options shared by every subcommand that runs agents.

use clap::Args;

/// Where to send spans and what they hold.
#[derive(Debug, Clone, Default, Args)]
pub struct TraceArgs {
    /// Export spans over OTLP/HTTP to this collector (e.g. Jaeger at
    /// http://localhost:4318); `/v1/traces` is appended when missing.
    /// Default: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT.
    #[arg(long, value_name = "URL")]
    pub otlp: Option<String>,
    /// Record prompt and completion text (truncated) on llm.call spans.
    #[arg(long)]
    pub trace_content: bool,
}
