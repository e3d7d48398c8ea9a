//! **Input preview**: the text of the small files a goal names (and of the
//! files of a folder it names, see [`super::goal_folders`]), read by the
//! loop before round 1 and shown after the workspace listing in the first
//! prompt.
//!
//! A small model's first round is often spent on a `read_file` it could
//! have been spared, and when it skips it, it writes values it never read:
//! the owner it invents, the port it takes from the listing's byte count
//! (`config.json (97 bytes)` read as port 97; EVALS.md, section 17), a
//! pointer file it never opens. What the goal names is what it needs
//! first, so the loop reads it itself, without a model call and without
//! using a round, as Aider puts the files in the chat.
//!
//! Only small text files are shown, whole (a part of a file would invite
//! counts over the part); a file too long to show is named, with its size,
//! as one to read. A goal that names no file that is there, in a
//! workspace of a few files, gets those files instead. Taken once, so the
//! prompt's opening stays the same for the whole run (and so a cached
//! prefix). The files shown count as read for the read check.

use std::fmt::Write as _;
use std::path::PathBuf;

use async_trait::async_trait;

use super::goal_files::{self, base_name};
use super::{Opening, Steer, SteerContext};
use crate::agent::survey::readable_workspace;
use crate::tools::Workspace;

/// The steer's name (switches, journals).
pub const NAME: &str = "input_preview";

/// The largest file shown, in bytes.
pub const FILE_MAX: u64 = 1_500;
/// The most text shown in all, in bytes.
pub const TOTAL_MAX: usize = 4_000;
/// A goal that names no file present gets the workspace's files when it
/// holds at most this many.
pub const FEW_FILES: usize = 4;

/// The input preview as a steer: an opening block.
pub struct InputPreview;

#[async_trait]
impl Steer for InputPreview {
    fn name(&self) -> &'static str {
        NAME
    }

    fn about(&self) -> &'static str {
        "shows the text of the small files the goal names (and of the folders it names, or of a workspace of a few files) in the first prompt, read once before round 1"
    }

    async fn opening(&self, cx: &SteerContext<'_>, first_round: u32) -> Opening {
        let Some(workspace) = readable_workspace(cx.toolbox) else {
            return Opening::default();
        };
        let named = goal_files::inputs(cx.goal, cx.toolbox, &cx.files.outputs);
        let named = goal_files::with_folders(named, cx.goal, cx.toolbox);
        tokio::task::spawn_blocking(move || preview(&workspace, &named, first_round))
            .await
            .unwrap_or_default()
    }
}

/// The preview of `named` (the goal's files present in `workspace`), or of
/// a small workspace's files when `named` is empty, taken before round
/// `first_round`.
pub fn preview(workspace: &Workspace, named: &[String], first_round: u32) -> Opening {
    let files = files_of(workspace, named);
    let mut text = String::new();
    let mut shown = Vec::new();
    let mut too_long = Vec::new();
    for (name, path) in files {
        match readable_text(&path) {
            Some(body) if text.len() + body.len() <= TOTAL_MAX => {
                let lines = body.lines().count();
                let noun = if lines == 1 { "line" } else { "lines" };
                let body = body.trim_end_matches('\n');
                let _ = write!(
                    text,
                    "\n--- {name} ({lines} {noun}) ---\n{body}\n--- end of {name} ---"
                );
                shown.push(name);
            }
            Some(_) => too_long.push(name),
            None => {
                if let Ok(meta) = std::fs::metadata(&path) {
                    if meta.len() > FILE_MAX {
                        too_long.push(format!("{name} ({} bytes)", meta.len()));
                    }
                }
            }
        }
    }
    if shown.is_empty() && too_long.is_empty() {
        return Opening::default();
    }
    let mut block = String::new();
    if !shown.is_empty() {
        let _ = write!(
            block,
            "What these files held before round {first_round} (read for you; no need to read them again unless they change):{text}"
        );
    }
    if !too_long.is_empty() {
        if !block.is_empty() {
            block.push('\n');
        }
        let _ = write!(
            block,
            "Too long to show here (read them, or compute from them with run_code): {}",
            too_long.join(", ")
        );
    }
    Opening { text: block, shown }
}

/// The files the preview reads, each with its workspace name: `named`
/// (the goal's files present in `workspace`) where they are, or a small
/// workspace's files when `named` is empty.
pub(super) fn files_of(workspace: &Workspace, named: &[String]) -> Vec<(String, PathBuf)> {
    if named.is_empty() {
        few_files(workspace)
    } else {
        named
            .iter()
            .filter_map(|name| located(workspace, name))
            .collect()
    }
}

/// Where the goal's file `name` is: at its path, or the first file of the
/// same name elsewhere in the tree (named as the workspace names it).
fn located(workspace: &Workspace, name: &str) -> Option<(String, PathBuf)> {
    if let Ok(path) = workspace.resolve(name) {
        if path.is_file() {
            return Some((name.trim_start_matches("./").to_string(), path));
        }
    }
    let found = workspace.files_named(base_name(name), 1).pop()?;
    let path = workspace.resolve(&found).ok()?;
    Some((found, path))
}

/// The files of a workspace that holds at most [`FEW_FILES`] (none when it
/// holds more, or any folder).
fn few_files(workspace: &Workspace) -> Vec<(String, PathBuf)> {
    let listing = workspace.listing(FEW_FILES + 1);
    if listing.more > 0
        || listing.entries.len() > FEW_FILES
        || listing.entries.iter().any(|e| e.ends_with('/'))
    {
        return Vec::new();
    }
    listing
        .entries
        .iter()
        .filter_map(|entry| {
            let name = entry.rsplit_once(" (").map_or(entry.as_str(), |(n, _)| n);
            let path = workspace.resolve(name).ok()?;
            Some((name.to_string(), path))
        })
        .collect()
}

/// The file's text when it is short ([`FILE_MAX`]), UTF-8 and free of NUL
/// bytes; `None` otherwise.
fn readable_text(path: &std::path::Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > FILE_MAX {
        return None;
    }
    let bytes = std::fs::read(path).ok()?;
    if bytes.contains(&0) {
        return None;
    }
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace(files: &[(&str, &str)]) -> (tempfile::TempDir, Workspace) {
        Workspace::temp_with(files)
    }

    #[test]
    fn the_goal_s_files_are_shown_whole_with_their_line_counts() {
        let (_dir, ws) = workspace(&[
            ("notes.txt", "owner: ana\nowner: bo\n"),
            ("conf/settings.ini", "[server]\nport=8080\n"),
            ("other.txt", "not named"),
        ]);
        let named = vec!["notes.txt".to_string(), "settings.ini".to_string()];
        let opening = preview(&ws, &named, 1);
        assert_eq!(
            opening.text,
            "What these files held before round 1 (read for you; no need to read them again unless they change):\n\
             --- notes.txt (2 lines) ---\nowner: ana\nowner: bo\n--- end of notes.txt ---\n\
             --- conf/settings.ini (2 lines) ---\n[server]\nport=8080\n--- end of conf/settings.ini ---"
        );
        assert_eq!(opening.shown, ["notes.txt", "conf/settings.ini"]);
    }

    #[test]
    fn long_and_binary_files_are_not_shown_and_a_long_one_is_named() {
        let long = "x".repeat(FILE_MAX as usize + 1);
        let (_dir, ws) = workspace(&[("big.csv", &long), ("blob.bin", "a\0b")]);
        let named = vec!["big.csv".to_string(), "blob.bin".to_string()];
        let opening = preview(&ws, &named, 1);
        assert_eq!(
            opening.text,
            format!(
                "Too long to show here (read them, or compute from them with run_code): big.csv ({} bytes)",
                FILE_MAX + 1
            )
        );
        assert!(opening.shown.is_empty());
    }

    #[test]
    fn the_total_is_bounded() {
        let body = "y".repeat(FILE_MAX as usize - 10);
        let files: Vec<(String, String)> = (0..4)
            .map(|i| (format!("f{i}.txt"), body.clone()))
            .collect();
        let refs: Vec<(&str, &str)> = files
            .iter()
            .map(|(n, b)| (n.as_str(), b.as_str()))
            .collect();
        let (_dir, ws) = workspace(&refs);
        let named: Vec<String> = files.iter().map(|(n, _)| n.clone()).collect();
        let opening = preview(&ws, &named, 1);
        assert_eq!(opening.shown, ["f0.txt", "f1.txt"]);
        assert!(opening.text.ends_with("f2.txt, f3.txt"), "{}", opening.text);
    }

    #[test]
    fn a_goal_naming_no_file_sees_a_small_workspace_and_not_a_large_one() {
        let (_dir, ws) = workspace(&[("a.log", "ERROR x\nok\n"), ("README", "read a.log")]);
        let opening = preview(&ws, &[], 2);
        assert_eq!(opening.shown, ["README", "a.log"]);
        assert!(opening
            .text
            .starts_with("What these files held before round 2"));

        let many: Vec<(String, &str)> =
            (0..=FEW_FILES).map(|i| (format!("{i}.txt"), "z")).collect();
        let refs: Vec<(&str, &str)> = many.iter().map(|(n, b)| (n.as_str(), *b)).collect();
        let (_dir, ws) = workspace(&refs);
        assert_eq!(preview(&ws, &[], 1), Opening::default());
    }
}
