//! hermes-engines: models in-process, behind `hermes_core::llm::Llm`.
//!
//! [`native`] (feature `native-llm`, the default build's engine) runs Qwen2
//! GGUF models on candle in pure Rust; [`local`] (feature `local-llm`) runs
//! them on llama.cpp, with the decision grammar and jump-forward;
//! [`model_files`] fetches and checks the model files both read.
//!
//! Must not depend on: `hermes-actors`, `hermes-cluster`, `hermes-eval`.
// Unsafe code only where SIMD intrinsics need it: the quantized products'
// kernels (`native/tiles/avx512.rs`, `avx2.rs`, their call in
// `native/tiles/mod.rs`) and the activations' quantization
// (`native/tiles/quantize.rs`), each use allowed there with its safety case.
#![deny(unsafe_code)]
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

/// The fewest tokens a reply is given when the prompt leaves less room in
/// the context than the request's `max_tokens` (a decision takes 50 to 300).
#[cfg(any(feature = "local-llm", feature = "native-llm"))]
pub(crate) const MIN_REPLY_TOKENS: usize = 256;

/// How many tokens the reply to a prompt of `prompt` tokens may take in a
/// context of `context`: `max_tokens`, or the room the context has left
/// when that is less but at least [`MIN_REPLY_TOKENS`] (a long run's prompt
/// does not end it while a decision still fits); an error past that.
#[cfg(any(feature = "local-llm", feature = "native-llm"))]
pub(crate) fn reply_room(
    prompt: usize,
    max_tokens: u32,
    context: usize,
) -> Result<usize, LlmError> {
    let wanted = (max_tokens as usize).max(1);
    let room = context.saturating_sub(prompt);
    if room >= wanted {
        return Ok(wanted);
    }
    if room >= MIN_REPLY_TOKENS {
        return Ok(room);
    }
    Err(LlmError::Other(format!(
        "the prompt has {prompt} tokens; the context size {context} leaves {room} for the reply, under the {MIN_REPLY_TOKENS} a reply needs (raise --context-size)"
    )))
}

#[cfg(all(test, any(feature = "local-llm", feature = "native-llm")))]
mod tests {
    use super::*;

    #[test]
    fn a_reply_gets_max_tokens_or_the_room_left() {
        assert_eq!(reply_room(1000, 1024, 4096).unwrap(), 1024);
        assert_eq!(reply_room(3170, 1024, 4096).unwrap(), 926);
        assert_eq!(reply_room(10, 0, 4096).unwrap(), 1);
        let error = reply_room(3900, 1024, 4096).unwrap_err().to_string();
        assert!(
            error.contains("3900 tokens") && error.contains("leaves 196"),
            "{error}"
        );
    }
}
