//! What the model benches share.

use std::path::PathBuf;

/// The model file a bench runs: `$env_var`, else the cached 1.5B model
/// (`hermes model pull 1.5b`); `None`, after saying so, when it is absent.
pub fn model_path(env_var: &str) -> Option<PathBuf> {
    let path = std::env::var(env_var)
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(std::env::var("HOME").unwrap_or_default())
                .join(".cache/hermes/models/qwen2.5-coder-1.5b-instruct.gguf")
        });
    if path.is_file() {
        return Some(path);
    }
    println!(
        "skipped: no model at {} (hermes model pull 1.5b, or set {env_var})",
        path.display()
    );
    None
}
