//! hermes-engines: models in-process, behind `hermes_core::llm::Llm`.
//!
//! [`native`] (feature `native-llm`, the default build's engine) runs Qwen2
//! GGUF models on candle in pure Rust; [`local`] (feature `local-llm`) runs
//! them on llama.cpp, with the decision grammar and jump-forward;
//! [`model_files`] fetches and checks the model files both read.
//!
//! Must not depend on: `hermes-actors`, `hermes-cluster`, `hermes-eval`.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[cfg(feature = "local-llm")]
pub mod local;
pub mod model_files;
#[cfg(feature = "native-llm")]
pub mod native;

#[cfg(any(feature = "local-llm", feature = "native-llm"))]
use hermes_core::llm::LlmError;

/// The name an in-process engine gives a model (its file stem), after
/// checking that the file exists; both engines refuse a missing file with
/// this one message.
#[cfg(any(feature = "local-llm", feature = "native-llm"))]
pub(crate) fn model_file_name(path: &std::path::Path) -> Result<String, LlmError> {
    if !path.is_file() {
        return Err(LlmError::Other(format!(
            "no model file at {} (set --model-path or HERMES_MODEL_PATH, or leave both out to run the default model, which `hermes model pull` fetches)",
            path.display()
        )));
    }
    Ok(path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "local".into()))
}
