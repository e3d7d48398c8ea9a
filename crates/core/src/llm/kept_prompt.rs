//! Where an in-process engine keeps a conversation's KV cache between
//! processes, and how it writes one: every `hermes run` is a new process,
//! and its first prompt opens with the same system prompt and tool list as
//! the last run's (about 700 tokens, seconds of prompt reading on a small
//! CPU). Each engine saves the state its first conversation built and
//! loads it at the next start; its usual prefix match then decides how much
//! of it a request continues (a file from another system prompt shares
//! little and is cut back).

use std::path::{Path, PathBuf};

/// The kept-state file of `engine` for the model at `model_path`, in
/// `dir`: named after the model file's name, length and modification time
/// (another model, or the same name downloaded again, never loads it), and
/// the engine (their states differ). `None` when the model file cannot be
/// read.
pub fn kept_prompt_file(dir: &Path, model_path: &Path, engine: &str) -> Option<PathBuf> {
    let meta = std::fs::metadata(model_path).ok()?;
    let modified = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs());
    let name = model_path.file_stem()?.to_string_lossy();
    Some(dir.join(format!("{name}-{}-{modified}.{engine}", meta.len())))
}

/// Writes `path` whole or not at all: `write` fills a file aside (named
/// after this process), which then replaces `path` in one rename, so a
/// process loading `path` meanwhile never reads half a file.
pub fn write_whole(
    path: &Path,
    write: impl FnOnce(&Path) -> Result<(), String>,
) -> Result<(), String> {
    let dir = path.parent().ok_or("the kept prompt file has no folder")?;
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut aside = path.as_os_str().to_owned();
    aside.push(format!(".{}.part", std::process::id()));
    let aside = PathBuf::from(aside);
    let written =
        write(&aside).and_then(|()| std::fs::rename(&aside, path).map_err(|e| e.to_string()));
    if written.is_err() {
        let _ = std::fs::remove_file(&aside);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_is_named_after_the_model_file_and_the_engine() {
        let dir = tempfile::tempdir().unwrap();
        let model = dir.path().join("qwen.gguf");
        std::fs::write(&model, b"12345").unwrap();
        let file = kept_prompt_file(&dir.path().join("prompts"), &model, "candle").unwrap();
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            name.starts_with("qwen-5-") && name.ends_with(".candle"),
            "{name}"
        );
        assert_eq!(file.parent().unwrap(), dir.path().join("prompts"));
        assert!(kept_prompt_file(dir.path(), &dir.path().join("missing.gguf"), "candle").is_none());
    }

    #[test]
    fn a_failed_write_leaves_the_old_file_and_no_part() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("prompts/m.candle");
        write_whole(&path, |aside| {
            std::fs::write(aside, "old").map_err(|e| e.to_string())
        })
        .unwrap();
        let failed = write_whole(&path, |aside| {
            std::fs::write(aside, "half").unwrap();
            Err("disk full".into())
        });
        assert_eq!(failed, Err("disk full".to_string()));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old");
        let left: Vec<_> = std::fs::read_dir(dir.path().join("prompts"))
            .unwrap()
            .collect();
        assert_eq!(left.len(), 1);
    }
}
