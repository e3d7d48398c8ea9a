//! Tracing for humans and for Jaeger: logs on stderr (`RUST_LOG`), spans
//! exported over OTLP/HTTP (protobuf), and W3C trace context carried in
//! actor messages so one task is one trace across every agent.
//!
//! Lessons this module encodes (see `../shared/STACK.md`): the batch span
//! processor runs on its own OS thread, so the exporter uses reqwest's
//! *blocking* client (the async one panics there with "no reactor
//! running"); an endpoint set in code is used verbatim, so `/v1/traces` is
//! appended here; ractor's in-process span propagation does not cross
//! nodes, so the context travels inside the messages; the provider must be
//! shut down before exit or the last spans are lost.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{Status, TraceContextExt, TracerProvider as _};
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};
use opentelemetry_sdk::Resource;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::filter::{filter_fn, EnvFilter, FilterExt, LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::Layer;

/// Whether prompt and completion text are recorded on `llm.call` spans.
static RECORD_CONTENT: AtomicBool = AtomicBool::new(false);

/// Whether spans are exported: true until [`init`] says otherwise, so
/// that a subscriber installed some other way (a test's own) sees every
/// span.
static EXPORTING: AtomicBool = AtomicBool::new(true);

/// How much prompt or completion text a span keeps when content is on.
pub const CONTENT_CHARS: usize = 2000;

/// How long one export (and the final flush) may take.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(3);

/// Where spans go and what they hold.
#[derive(Debug, Clone, Default)]
pub struct TelemetryConfig {
    /// OTLP/HTTP traces endpoint; `None` keeps spans in-process only
    /// (trace ids are still assigned and printed).
    pub otlp_endpoint: Option<String>,
    /// `service.name` resource attribute.
    pub service_name: String,
    /// Record prompt and completion text (truncated) on `llm.call` spans.
    pub record_content: bool,
}

impl TelemetryConfig {
    /// Reads the standard variables: `--otlp URL` (given as `flag`) wins,
    /// then `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as is), then
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` (`/v1/traces` appended); the service
    /// name comes from `OTEL_SERVICE_NAME`, default `hermes`.
    pub fn from_env(flag: Option<&str>, record_content: bool) -> Self {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let otlp_endpoint = flag
            .map(traces_url)
            .or_else(|| var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
            .or_else(|| var("OTEL_EXPORTER_OTLP_ENDPOINT").map(|base| traces_url(&base)));
        Self {
            otlp_endpoint,
            service_name: var("OTEL_SERVICE_NAME").unwrap_or_else(|| "hermes".into()),
            record_content,
        }
    }
}

/// `base` with `/v1/traces` appended unless it already ends with it.
pub fn traces_url(base: &str) -> String {
    let base = base.trim().trim_end_matches('/');
    if base.ends_with("/v1/traces") {
        base.to_string()
    } else {
        format!("{base}/v1/traces")
    }
}

/// Keeps the tracer provider alive; call [`Telemetry::shutdown`] before exit
/// so buffered spans are flushed.
pub struct Telemetry {
    provider: SdkTracerProvider,
}

impl Telemetry {
    /// Flushes and stops span export (bounded by the export timeout).
    pub fn shutdown(&self) {
        if let Err(e) = self.provider.shutdown_with_timeout(EXPORT_TIMEOUT) {
            tracing::debug!("span exporter shutdown: {e}");
        }
    }
}

/// Why tracing could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// The OTLP exporter could not be built for the endpoint.
    #[error("cannot export traces to {endpoint}: {reason}. Check --otlp, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT and OTEL_EXPORTER_OTLP_ENDPOINT (an http:// or https:// URL such as http://localhost:4318), or unset them to run without exporting spans")]
    Exporter {
        /// The traces endpoint that was configured.
        endpoint: String,
        /// What the exporter builder said.
        reason: String,
    },
    /// Another global tracing subscriber is already installed.
    #[error("cannot install the tracing subscriber: {0}. Call telemetry::init once, before any other subscriber is set")]
    Subscriber(String),
}

/// A tracer provider for `config` (exporting over OTLP when an endpoint is set).
pub fn provider(config: &TelemetryConfig) -> Result<SdkTracerProvider, TelemetryError> {
    RECORD_CONTENT.store(config.record_content, Ordering::Relaxed);
    let resource = Resource::builder()
        .with_service_name(config.service_name.clone())
        .build();
    let mut builder = SdkTracerProvider::builder().with_resource(resource);
    if let Some(endpoint) = &config.otlp_endpoint {
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_endpoint(endpoint.clone())
            .with_timeout(EXPORT_TIMEOUT)
            .build()
            .map_err(|e| TelemetryError::Exporter {
                endpoint: endpoint.clone(),
                reason: e.to_string(),
            })?;
        builder = builder.with_batch_exporter(WarnOnce {
            inner: exporter,
            endpoint: endpoint.clone(),
            warned: AtomicBool::new(false),
        });
    }
    Ok(builder.build())
}

/// Log filter when `RUST_LOG` is unset: warnings, except ractor_cluster's
/// own session warnings, which Hermes reports in its own words (a node
/// lost, a peer refused).
pub const DEFAULT_LOG_FILTER: &str = "warn,ractor_cluster=error";

/// The spans every round opens (the round, its model call, its tool call).
/// When no endpoint is set nothing reads them, and building their
/// OpenTelemetry data was about a third of the loop's own CPU per round
/// (BENCHMARKS.md, session 29), so they are only built when exported; the
/// spans whose trace ids are reported (a run's, a task's) are always built
/// (a subtask's are [`EXPORTED_ONLY`]).
pub const ROUND_SPANS: &[&str] = &["round", "llm.call", "tool.call"];

/// The target of spans built only when exported: one per executor (a
/// subtask's, and its loop's `executor.run`). Unexported, their
/// OpenTelemetry data was 1.4 KB of each of a million executors'
/// memory (BENCHMARKS.md); the trace ids they would report are their
/// task's, read from the trace context instead ([`trace_id_in`]).
pub const EXPORTED_ONLY: &str = "hermes::exported";

/// Installs the global subscriber: human logs on stderr filtered by
/// `RUST_LOG` (default [`DEFAULT_LOG_FILTER`]), and every Hermes span to OpenTelemetry
/// whatever `RUST_LOG` says ([`ROUND_SPANS`] only when an endpoint is set).
pub fn init(config: &TelemetryConfig) -> Result<Telemetry, TelemetryError> {
    let provider = provider(config)?;
    let tracer = provider.tracer("hermes");
    let logs = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_filter(
            EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| EnvFilter::new(DEFAULT_LOG_FILTER)),
        );
    // No busy/idle timing per span: nobody reads `busy_ns`/`idle_ns`, and
    // tracking them took a clock read on every poll of every span and an
    // extension per span (BENCHMARKS.md, 100,000 executors).
    // No OpenTelemetry context activated on span entry either: nothing in
    // Hermes reads `Context::current()` (parents come from the tracing
    // spans, propagation from `inject`), and activating started every span's
    // SDK record at its first poll instead of at its end, a guard per entry.
    let exporting = config.otlp_endpoint.is_some();
    EXPORTING.store(exporting, Ordering::Relaxed);
    let spans = tracing_opentelemetry::layer()
        .with_tracked_inactivity(false)
        .with_context_activation(false)
        .with_tracer(tracer)
        .with_filter(
            Targets::new()
                .with_target("hermes", LevelFilter::INFO)
                .and(filter_fn(move |meta| {
                    exporting
                        || !(ROUND_SPANS.contains(&meta.name()) || meta.target() == EXPORTED_ONLY)
                })),
        );
    tracing_subscriber::registry()
        .with(logs)
        .with(spans)
        .try_init()
        .map_err(|e| TelemetryError::Subscriber(e.to_string()))?;
    Ok(Telemetry { provider })
}

/// Whether spans are exported (false once [`init`] found no endpoint):
/// when not, the spans of [`EXPORTED_ONLY`] are not built, and trace
/// context is taken from the span above them.
pub fn exporting() -> bool {
    EXPORTING.load(Ordering::Relaxed)
}

/// Whether prompt and completion text should be recorded.
pub fn record_content() -> bool {
    RECORD_CONTENT.load(Ordering::Relaxed)
}

/// The trace id of `span` as 32 hex characters, when it is being traced.
pub fn trace_id(span: &Span) -> Option<String> {
    let context = span.context();
    let span_context = context.span().span_context().clone();
    span_context
        .is_valid()
        .then(|| span_context.trace_id().to_string())
}

/// The W3C trace context of `span` (`traceparent`, `tracestate`), for a message.
pub fn inject(span: &Span) -> HashMap<String, String> {
    let mut carrier = HashMap::new();
    TraceContextPropagator::new().inject_context(&span.context(), &mut carrier);
    carrier
}

/// The trace id of the context in `carrier` (a message's trace context,
/// see [`inject`]), when it holds a valid one.
pub fn trace_id_in(carrier: &HashMap<String, String>) -> Option<String> {
    let context = extracted(carrier)?;
    Some(context.span().span_context().trace_id().to_string())
}

/// Makes `span` a child of the context in `carrier`. Call before entering it.
pub fn set_parent(span: &Span, carrier: &HashMap<String, String>) {
    if let Some(context) = extracted(carrier) {
        let _ = span.set_parent(context);
    }
}

/// The context `carrier` holds, when it holds a valid one.
fn extracted(carrier: &HashMap<String, String>) -> Option<opentelemetry::Context> {
    if carrier.is_empty() {
        return None;
    }
    let context = TraceContextPropagator::new().extract(carrier);
    context.span().span_context().is_valid().then_some(context)
}

/// Marks `span` as failed, with `message`.
pub fn set_error(span: &Span, message: impl Into<String>) {
    span.set_status(Status::error(message.into()));
}

/// Wraps an exporter so a missing collector is reported once, on stderr,
/// instead of on every batch; the run itself never waits on it beyond the
/// export timeout.
#[derive(Debug)]
struct WarnOnce<E> {
    inner: E,
    endpoint: String,
    warned: AtomicBool,
}

impl<E: SpanExporter> SpanExporter for WarnOnce<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let result = self.inner.export(batch).await;
        if let Err(e) = &result {
            if !self.warned.swap(true, Ordering::Relaxed) {
                eprintln!(
                    "warning: cannot send traces to {} ({e}); spans are dropped, the run goes on",
                    self.endpoint
                );
            }
        }
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_get_the_traces_path_once() {
        assert_eq!(
            traces_url("http://localhost:4318"),
            "http://localhost:4318/v1/traces"
        );
        assert_eq!(
            traces_url("http://localhost:4318/"),
            "http://localhost:4318/v1/traces"
        );
        assert_eq!(
            traces_url("http://h:4318/v1/traces"),
            "http://h:4318/v1/traces"
        );
    }
}
