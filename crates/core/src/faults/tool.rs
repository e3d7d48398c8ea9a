//! `FaultyTool`: a tool wrapper that fails, hangs, or returns noise, at the
//! rates of a [`Faults`].

use std::sync::Arc;

use async_trait::async_trait;
use rand_chacha::rand_core::RngCore;
use serde_json::{Map, Value};

use super::{FaultKind, Faults};
use crate::tools::{Tool, ToolError, ToolSpec};

/// Length, in characters, of the noise a `tool_garbage` fault returns.
pub const GARBAGE_CHARS: usize = 5_000;

/// An injected hang lasts this many times the tool's timeout: long enough
/// that the [`crate::tools::Toolbox`] always ends it as a timeout.
const HANG_FACTOR: u32 = 4;

/// What the noise is made of: printable ASCII, including the quotes and
/// brackets that make it look almost like data.
const NOISE: &[u8] =
    b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 \n\t{}[]<>()\"':;,./\\|!?@#$%^&*-_=+~`";

/// A tool that suffers injected faults:
///
/// - `tool_error`: the call fails with a non-retryable error and the tool
///   does not run (the model sees an error envelope).
/// - `tool_timeout`: the call hangs well past the tool's timeout and the
///   tool does not run; under a `Toolbox` it ends as a timeout error (which
///   the toolbox retries for idempotent tools, drawing again each time).
/// - `tool_garbage`: the tool runs; if it succeeds, its data is replaced by
///   [`GARBAGE_CHARS`] characters of seeded noise (a failure passes through
///   untouched and nothing is recorded).
///
/// When several kinds fire on one call, the first listed applies; every
/// kind still draws once per call.
pub struct FaultyTool {
    inner: Arc<dyn Tool>,
    spec: ToolSpec,
    faults: Faults,
}

impl FaultyTool {
    /// Wraps `inner`; the wrapper has the same spec (name, parameters, timeout).
    pub fn new(inner: Arc<dyn Tool>, faults: Faults) -> Self {
        let spec = inner.spec();
        Self {
            inner,
            spec,
            faults,
        }
    }
}

#[async_trait]
impl Tool for FaultyTool {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    async fn call(&self, args: Map<String, Value>) -> Result<Value, ToolError> {
        let name = &self.spec.name;
        let error = self.faults.roll(FaultKind::ToolError);
        let hang = self.faults.roll(FaultKind::ToolTimeout);
        let garbage = self.faults.roll(FaultKind::ToolGarbage);
        if error {
            self.faults.record(FaultKind::ToolError);
            return Err(ToolError::new(format!(
                "tool `{name}` failed: service unavailable (injected tool_error)"
            )));
        }
        if hang {
            // Recorded before hanging: the toolbox aborts this task on timeout.
            self.faults.record(FaultKind::ToolTimeout);
            let timeout = self.spec.timeout;
            tokio::time::sleep(timeout.saturating_mul(HANG_FACTOR)).await;
            return Err(ToolError::transient(format!(
                "tool `{name}` timed out after {timeout:?} (injected tool_timeout)"
            )));
        }
        let data = self.inner.call(args).await?;
        if garbage {
            self.faults.record(FaultKind::ToolGarbage);
            return Ok(Value::String(noise(&self.faults, GARBAGE_CHARS)));
        }
        Ok(data)
    }
}

/// `len` characters of noise from the `tool_garbage` stream.
fn noise(faults: &Faults, len: usize) -> String {
    faults.with_rng(FaultKind::ToolGarbage, |rng| {
        (0..len)
            .map(|_| NOISE[rng.next_u32() as usize % NOISE.len()] as char)
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::faults::FaultSpec;
    use crate::tools::{ParamKind, ParamSpec, ToolStatus, Toolbox};

    /// Echoes its `text` argument and counts its runs.
    struct Echo {
        runs: Arc<AtomicUsize>,
    }

    #[async_trait]
    impl Tool for Echo {
        fn spec(&self) -> ToolSpec {
            ToolSpec::new("echo", "echoes text")
                .param(ParamSpec::new("text", ParamKind::String, "text").required())
                .timeout(Duration::from_millis(20))
        }
        async fn call(&self, args: Map<String, Value>) -> Result<Value, ToolError> {
            self.runs.fetch_add(1, Ordering::SeqCst);
            Ok(args["text"].clone())
        }
    }

    fn faulty_toolbox(spec: &str, seed: u64) -> (Toolbox, Arc<AtomicUsize>, Faults) {
        let runs = Arc::new(AtomicUsize::new(0));
        let mut toolbox = Toolbox::new();
        toolbox.register(Echo { runs: runs.clone() });
        let faults = Faults::new(FaultSpec::parse(spec).unwrap(), seed);
        (faults.wrap_toolbox(&toolbox), runs, faults)
    }

    #[tokio::test]
    async fn tool_error_returns_an_error_envelope_without_running() {
        let (toolbox, runs, faults) = faulty_toolbox("tool_error=1", 1);
        let result = toolbox.call("echo", &json!({"text": "hi"})).await;
        assert_eq!(result.status, ToolStatus::Error);
        assert!(result.error.unwrap().contains("tool_error"));
        assert_eq!(runs.load(Ordering::SeqCst), 0);
        assert_eq!(faults.take_injected(), vec![FaultKind::ToolError]);
    }

    #[tokio::test]
    async fn tool_timeout_ends_as_the_toolbox_timeout() {
        let (toolbox, runs, faults) = faulty_toolbox("tool_timeout=1", 1);
        let result = toolbox.call("echo", &json!({"text": "hi"})).await;
        assert_eq!(result.status, ToolStatus::Error);
        let error = result.error.unwrap();
        assert!(error.contains("timed out"), "{error}");
        assert!(
            !error.contains("injected"),
            "the toolbox, not the wrapper, ended it: {error}"
        );
        assert_eq!(runs.load(Ordering::SeqCst), 0);
        assert_eq!(faults.take_injected(), vec![FaultKind::ToolTimeout]);
    }

    #[tokio::test]
    async fn tool_garbage_replaces_the_data_with_seeded_noise() {
        let (toolbox, runs, faults) = faulty_toolbox("tool_garbage=1", 1);
        let result = toolbox.call("echo", &json!({"text": "hi"})).await;
        assert_eq!(result.status, ToolStatus::Ok);
        let data = result.data.as_str().unwrap().to_string();
        assert_eq!(data.chars().count(), GARBAGE_CHARS);
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        assert_eq!(faults.take_injected(), vec![FaultKind::ToolGarbage]);

        let (again, _, _) = faulty_toolbox("tool_garbage=1", 1);
        let same = again.call("echo", &json!({"text": "hi"})).await;
        assert_eq!(same.data.as_str(), Some(data.as_str()));
        let (other, _, _) = faulty_toolbox("tool_garbage=1", 2);
        let different = other.call("echo", &json!({"text": "hi"})).await;
        assert_ne!(different.data.as_str(), Some(data.as_str()));
    }

    #[tokio::test]
    async fn wrapped_toolbox_keeps_names_and_works_without_faults() {
        let (toolbox, runs, faults) = faulty_toolbox("llm_non_json=1", 1);
        assert_eq!(toolbox.names(), vec!["echo"]);
        let result = toolbox.call("echo", &json!({"text": "hi"})).await;
        assert_eq!(result.data, json!("hi"));
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        assert!(faults.take_injected().is_empty());

        let (toolbox, _, _) = faulty_toolbox("tool_error=0.5", 1);
        assert_eq!(toolbox.names(), vec!["echo"]);
        assert_eq!(
            toolbox.specs().next().unwrap().timeout,
            Duration::from_millis(20)
        );
    }
}
