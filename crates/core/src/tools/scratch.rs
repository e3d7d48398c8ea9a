//! A scratch copy of a small workspace for one `run_code` call, so that
//! code may write files without changing the workspace, and the run can
//! say what it wrote.
//!
//! `run_code`'s workspace is read-only unless writes are allowed. Small
//! models write their answer from the code anyway (`with open('old.txt',
//! 'w')`), get `Read-only file system`, and then invent the answer they
//! had computed (csv-filter-names, EVALS.md sections 12 to 15). On a copy,
//! the program runs as written; the files it wrote come back in the
//! observation (`unsaved_writes`), and the workspace is unchanged, as the
//! read-only contract says. A workspace too large to copy cheaply is
//! mounted read-only as before.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::workspace::STATE_DIR;

/// Most files a workspace may hold to be copied.
const MAX_FILES: usize = 1_000;
/// Most bytes a workspace may hold to be copied.
const MAX_BYTES: u64 = 16 << 20;
/// Most characters of a written file shown.
const MAX_SHOWN_CHARS: usize = 2_000;
/// Most characters of a saved file's diff shown.
const MAX_DIFF_CHARS: usize = 800;
/// Most written files shown; the rest are counted.
const MAX_SHOWN_FILES: usize = 5;

/// A copy of a workspace in a temporary folder, removed when dropped.
#[derive(Debug)]
pub struct Scratch {
    dir: tempfile::TempDir,
    original: PathBuf,
}

impl Scratch {
    /// Copies `workspace` (without Hermes's own folder and without
    /// symbolic links), or `None` when it holds more than the copy limits
    /// or cannot be read.
    pub fn copy(workspace: &Path) -> Option<Self> {
        let mut files = Vec::new();
        let mut bytes = 0;
        if !collect(workspace, Path::new(""), &mut files, &mut bytes).ok()? {
            return None;
        }
        let dir = tempfile::Builder::new()
            .prefix("hermes-scratch-")
            .tempdir()
            .ok()?;
        for (relative, is_dir) in &files {
            let to = dir.path().join(relative);
            if *is_dir {
                fs::create_dir_all(&to).ok()?;
            } else {
                fs::copy(workspace.join(relative), &to).ok()?;
            }
        }
        Some(Self {
            dir,
            original: workspace.to_path_buf(),
        })
    }

    /// The copy's folder.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The files the run created or changed in the copy, by path relative
    /// to the workspace, with what they held before (`None`: new) and now.
    /// A run may write past the copy limits; what it wrote is listed as far
    /// as the walk goes.
    pub fn changes(&self) -> Vec<Change> {
        let mut files = Vec::new();
        let mut bytes = 0;
        let _ = collect(self.path(), Path::new(""), &mut files, &mut bytes);
        files
            .into_iter()
            .filter(|(_, is_dir)| !is_dir)
            .filter_map(|(relative, _)| {
                let after = fs::read(self.path().join(&relative)).unwrap_or_default();
                let before = fs::read(self.original.join(&relative)).ok();
                (before.as_deref() != Some(after.as_slice())).then(|| Change {
                    path: relative.to_string_lossy().into_owned(),
                    before,
                    after,
                })
            })
            .collect()
    }

    /// `changes` as the observation shows them: their text (cut), or a
    /// note for a binary file; at most a few, then a count of the rest.
    pub fn shown(changes: &[Change]) -> BTreeMap<String, String> {
        let mut written: BTreeMap<String, String> = changes
            .iter()
            .take(MAX_SHOWN_FILES)
            .map(|change| {
                let shown = match std::str::from_utf8(&change.after) {
                    Ok(text) => cut(text),
                    Err(_) => format!("(not text: {} bytes)", change.after.len()),
                };
                (change.path.clone(), shown)
            })
            .collect();
        let more = changes.len().saturating_sub(MAX_SHOWN_FILES);
        if more > 0 {
            written.insert("…".into(), format!("and {more} more files"));
        }
        written
    }
}

/// A file a run created or changed in its copy of the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The path relative to the workspace.
    pub path: String,
    /// What it held before the run (`None`: it is new).
    pub before: Option<Vec<u8>>,
    /// What it holds now.
    pub after: Vec<u8>,
}

impl Change {
    /// The change as a short text: `new file, N lines` and its start, or a
    /// unified diff of the lines that changed (cut), or a note for bytes.
    pub fn diff(&self) -> String {
        let Ok(after) = std::str::from_utf8(&self.after) else {
            return format!("(not text: {} bytes)", self.after.len());
        };
        let before = match &self.before {
            None => {
                return format!(
                    "new file, {} lines:\n{}",
                    after.lines().count(),
                    cut_to(after, MAX_DIFF_CHARS)
                )
            }
            Some(before) => match std::str::from_utf8(before) {
                Ok(before) => before,
                Err(_) => return format!("was not text; now {} lines", after.lines().count()),
            },
        };
        let diff = similar::TextDiff::from_lines(before, after)
            .unified_diff()
            .context_radius(1)
            .to_string();
        cut_to(diff.trim_end(), MAX_DIFF_CHARS)
    }
}

/// `text` cut to [`MAX_SHOWN_CHARS`] characters, saying how long it was.
fn cut(text: &str) -> String {
    cut_to(text, MAX_SHOWN_CHARS)
}

/// `text` cut to `max` characters, saying how long it was.
fn cut_to(text: &str, max: usize) -> String {
    let count = text.chars().count();
    if count <= max {
        return text.to_string();
    }
    let kept: String = text.chars().take(max).collect();
    format!("{kept}\n[cut: {count} characters in all]")
}

/// Adds the folders and regular files under `root/relative` to `files`
/// (paths relative to `root`; `true` for a folder) and their sizes to
/// `bytes`; `Ok(false)` once past the copy limits.
fn collect(
    root: &Path,
    relative: &Path,
    files: &mut Vec<(PathBuf, bool)>,
    bytes: &mut u64,
) -> io::Result<bool> {
    let mut entries: Vec<_> = fs::read_dir(root.join(relative))?
        .filter_map(Result::ok)
        .collect();
    entries.sort_by_key(fs::DirEntry::file_name);
    for entry in entries {
        let name = entry.file_name();
        if relative.as_os_str().is_empty() && name == STATE_DIR {
            continue;
        }
        let path = relative.join(&name);
        let kind = entry.file_type()?;
        if kind.is_dir() {
            files.push((path.clone(), true));
            if !collect(root, &path, files, bytes)? {
                return Ok(false);
            }
        } else if kind.is_file() {
            *bytes += entry.metadata()?.len();
            files.push((path, false));
        }
        if files.len() > MAX_FILES || *bytes > MAX_BYTES {
            return Ok(false);
        }
    }
    Ok(true)
}

#[cfg(test)]
impl Scratch {
    /// What the run wrote, as shown.
    fn written_shown(&self) -> BTreeMap<String, String> {
        Self::shown(&self.changes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_reports_what_was_written_and_leaves_the_workspace_alone() {
        let ws = tempfile::tempdir().unwrap();
        fs::create_dir_all(ws.path().join("data")).unwrap();
        fs::create_dir_all(ws.path().join(STATE_DIR)).unwrap();
        fs::write(ws.path().join("data/users.csv"), "name\nana\n").unwrap();
        fs::write(ws.path().join("keep.txt"), "same").unwrap();
        fs::write(ws.path().join(STATE_DIR).join("memory.redb"), "x").unwrap();
        let scratch = Scratch::copy(ws.path()).unwrap();
        assert!(scratch.path().join("data/users.csv").is_file());
        assert!(!scratch.path().join(STATE_DIR).exists());
        assert!(scratch.written_shown().is_empty());

        fs::write(scratch.path().join("old.txt"), "ana\n").unwrap();
        fs::write(scratch.path().join("data/users.csv"), "changed").unwrap();
        fs::write(scratch.path().join("keep.txt"), "same").unwrap();
        fs::write(scratch.path().join("blob.bin"), [0xff, 0x00]).unwrap();
        let written = scratch.written_shown();
        assert_eq!(
            written.into_iter().collect::<Vec<_>>(),
            [
                ("blob.bin".to_string(), "(not text: 2 bytes)".to_string()),
                ("data/users.csv".to_string(), "changed".to_string()),
                ("old.txt".to_string(), "ana\n".to_string()),
            ]
        );
        assert!(!ws.path().join("old.txt").exists());
        let path = scratch.path().to_path_buf();
        drop(scratch);
        assert!(!path.exists());
    }

    #[test]
    fn a_large_workspace_is_not_copied() {
        let ws = tempfile::tempdir().unwrap();
        for i in 0..=MAX_FILES {
            fs::write(ws.path().join(format!("f{i}.txt")), "x").unwrap();
        }
        assert!(Scratch::copy(ws.path()).is_none());
    }
}
