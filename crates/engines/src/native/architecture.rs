//! Which models the built-in engine runs, told from a GGUF file's header.

use std::path::Path;

use candle_core::quantized::gguf_file;

/// The architecture the built-in engine runs (`general.architecture`).
pub(super) const RUNS: &str = "qwen2";

/// Whether the built-in engine runs the model in `path`: a GGUF file whose
/// header declares `general.architecture` `qwen2` (read from the header
/// alone, no weights). `false` when the file cannot be read as GGUF.
/// `hermes` picks the engine with it when both are built in.
pub fn runs_model(path: &Path) -> bool {
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    let Ok(content) = gguf_file::Content::read(&mut std::io::BufReader::new(file)) else {
        return false;
    };
    content
        .metadata
        .get("general.architecture")
        .and_then(|value| value.to_string().ok())
        .is_some_and(|architecture| architecture == RUNS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gguf_file::Value;

    /// A GGUF file with only a header declaring `architecture`.
    fn header_only(name: &str, architecture: &str) -> std::path::PathBuf {
        let path =
            std::env::temp_dir().join(format!("hermes-arch-{}-{name}.gguf", std::process::id()));
        let value = Value::String(architecture.into());
        let mut file = std::fs::File::create(&path).unwrap();
        gguf_file::write(&mut file, &[("general.architecture", &value)], &[]).unwrap();
        path
    }

    #[test]
    fn a_qwen2_file_is_run_and_other_files_are_not() {
        let qwen2 = header_only("qwen2", "qwen2");
        let llama = header_only("llama", "llama");
        let text = std::env::temp_dir().join(format!("hermes-arch-{}.txt", std::process::id()));
        std::fs::write(&text, "not a model").unwrap();
        assert!(runs_model(&qwen2));
        assert!(!runs_model(&llama));
        assert!(!runs_model(&text), "not GGUF");
        assert!(!runs_model(Path::new("/nonexistent/model.gguf")));
        for path in [qwen2, llama, text] {
            let _ = std::fs::remove_file(path);
        }
    }
}
