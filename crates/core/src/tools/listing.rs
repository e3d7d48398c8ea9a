//! The files of a workspace as a short list of paths: what a run is shown
//! of its workspace before its first round (see `agent::survey`).
//!
//! The walk is breadth first, so a large tree shows its top levels rather
//! than the depths of its first folder; it stops after a fixed number of
//! entries, and a count says how many more it saw. Hermes's own folder
//! ([`STATE_DIR`](super::STATE_DIR)) is left out as `list_dir` leaves it
//! out; hidden folders (`.git/`) are named but not walked into.

use std::collections::VecDeque;
use std::fs;
use std::path::{Path, PathBuf};

use super::Workspace;

/// Most directory entries one listing reads (shown or counted), so that a
/// huge tree costs a bounded walk.
const MAX_VISITED: usize = 10_000;

/// The first entries of a workspace tree.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Listing {
    /// Paths relative to the root, sorted: folders end in `/`, files
    /// carry their size (`data/users.csv (120 bytes)`).
    pub entries: Vec<String>,
    /// Entries seen but not shown (at least; the walk is bounded).
    pub more: usize,
}

impl Workspace {
    /// At most `max_entries` entries of the tree under the root, nearest
    /// the root first. Unreadable folders and entries are skipped.
    pub fn listing(&self, max_entries: usize) -> Listing {
        let mut listing = Listing::default();
        self.walk(|path, metadata| {
            if listing.entries.len() >= max_entries {
                listing.more += 1;
                return false;
            }
            let shown = path.to_string_lossy().into_owned();
            match metadata {
                Some(m) if m.is_dir() => listing.entries.push(format!("{shown}/")),
                Some(m) => listing.entries.push(format!("{shown} ({} bytes)", m.len())),
                None => listing.entries.push(shown),
            }
            true
        });
        listing.entries.sort();
        listing
    }

    /// Whether a file called `name` (a base name, such as `settings.ini`)
    /// is anywhere in the tree, within the same bounded walk as
    /// [`listing`](Self::listing).
    pub fn holds_file_named(&self, name: &str) -> bool {
        !self.files_named(name, 1).is_empty()
    }

    /// The paths (relative to the root, nearest the root first) of at most
    /// `max` files called `name`, within the same bounded walk as
    /// [`listing`](Self::listing).
    pub fn files_named(&self, name: &str, max: usize) -> Vec<String> {
        let mut found = Vec::new();
        self.walk(|path, metadata| {
            if found.len() < max
                && metadata.is_some_and(fs::Metadata::is_file)
                && path.file_name().is_some_and(|n| n == name)
            {
                found.push(path.to_string_lossy().into_owned());
            }
            found.len() < max
        });
        found
    }

    /// The paths of at most `max` files with the base name of `missing` (a
    /// path, relative to the root, that was not found), other than
    /// `missing` itself: where a model that dropped or invented a folder
    /// should look instead.
    pub fn files_named_like(&self, missing: &str, max: usize) -> Vec<String> {
        let Some(name) = Path::new(missing).file_name().and_then(|n| n.to_str()) else {
            return Vec::new();
        };
        self.files_named(name, max)
            .into_iter()
            .filter(|found| found != missing)
            .collect()
    }

    /// The files under `folder` (a path relative to the root), nearest the
    /// folder first, each as a path relative to the root; hidden entries
    /// are left out. `None` when `folder` is not a folder of the workspace
    /// or holds more than `max` files.
    pub fn files_under(&self, folder: &str, max: usize) -> Option<Vec<String>> {
        let start = self.resolve(folder).ok()?;
        if !start.is_dir() || self.is_state(&start) {
            return None;
        }
        let start = start.strip_prefix(self.root()).ok()?.to_path_buf();
        let mut files = Vec::new();
        let mut over = false;
        self.walk_from(start, |path, metadata| {
            if over {
                return false;
            }
            let hidden = path
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'));
            if !hidden && metadata.is_some_and(fs::Metadata::is_file) {
                over = files.len() == max;
                files.push(path.to_string_lossy().into_owned());
            }
            !over
        });
        (!over).then_some(files)
    }

    /// Visits the tree breadth first, each folder's entries in name order,
    /// with each entry's path relative to the root and its metadata; a
    /// folder is walked into when `visit` returns true for it and it is not
    /// hidden. Hermes's own folder is skipped; at most [`MAX_VISITED`]
    /// entries are visited.
    pub(crate) fn walk(&self, visit: impl FnMut(&Path, Option<&fs::Metadata>) -> bool) {
        self.walk_from(PathBuf::new(), visit);
    }

    /// [`walk`](Self::walk) from `start`, a folder relative to the root.
    fn walk_from(
        &self,
        start: PathBuf,
        mut visit: impl FnMut(&Path, Option<&fs::Metadata>) -> bool,
    ) {
        let mut folders = VecDeque::from([start]);
        let mut visited = 0;
        while let Some(folder) = folders.pop_front() {
            let Ok(read) = fs::read_dir(self.root().join(&folder)) else {
                continue;
            };
            // A folder of millions of entries is read only in part.
            let mut children: Vec<_> = read.filter_map(Result::ok).take(MAX_VISITED).collect();
            children.sort_by_key(|entry| entry.file_name());
            for entry in children {
                if self.is_state(&entry.path()) {
                    continue;
                }
                visited += 1;
                let name = entry.file_name();
                let path = folder.join(&name);
                let metadata = entry.metadata().ok();
                let descend = visit(&path, metadata.as_ref());
                let hidden = name.to_string_lossy().starts_with('.');
                if descend && !hidden && metadata.is_some_and(|m| m.is_dir()) {
                    folders.push_back(path);
                }
            }
            if visited >= MAX_VISITED {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let path = dir.path().join(path);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        }
        let workspace = Workspace::new(dir.path()).unwrap();
        (dir, workspace)
    }

    #[test]
    fn the_files_under_a_folder_are_listed_unless_there_are_too_many() {
        let (_dir, ws) = tree(&[
            ("reports/b.json", "{}"),
            ("reports/a.json", "{}"),
            ("reports/old/c.json", "{}"),
            ("reports/.hidden", "x"),
            ("other.txt", "x"),
        ]);
        assert_eq!(
            ws.files_under("reports/", 3).unwrap(),
            ["reports/a.json", "reports/b.json", "reports/old/c.json"]
        );
        assert_eq!(
            ws.files_under("reports", 2),
            None,
            "three files, at most two"
        );
        assert_eq!(
            ws.files_under("other.txt", 5),
            None,
            "a file is not a folder"
        );
        assert_eq!(ws.files_under("missing/", 5), None);
        assert_eq!(ws.files_under("../", 5), None, "outside the workspace");
    }

    #[test]
    fn lists_files_and_folders_with_sizes_sorted() {
        let (_dir, ws) = tree(&[
            ("notes.md", "hello"),
            ("data/users.csv", "a,b\n"),
            ("data/deep/x.txt", ""),
        ]);
        assert_eq!(
            ws.listing(40),
            Listing {
                entries: vec![
                    "data/".into(),
                    "data/deep/".into(),
                    "data/deep/x.txt (0 bytes)".into(),
                    "data/users.csv (4 bytes)".into(),
                    "notes.md (5 bytes)".into(),
                ],
                more: 0,
            }
        );
    }

    #[test]
    fn the_top_levels_come_first_and_the_rest_is_counted() {
        let (_dir, ws) = tree(&[
            ("a/1.txt", "1"),
            ("a/2.txt", "2"),
            ("b.txt", "b"),
            ("c.txt", "c"),
        ]);
        let listing = ws.listing(3);
        assert_eq!(
            listing.entries,
            vec!["a/", "b.txt (1 bytes)", "c.txt (1 bytes)"]
        );
        assert_eq!(listing.more, 2);
    }

    #[test]
    fn hermes_state_is_left_out_and_hidden_folders_are_not_walked() {
        let (_dir, ws) = tree(&[
            (".hermes/memory.redb", "x"),
            (".git/config", "x"),
            ("readme.md", "r"),
        ]);
        assert_eq!(ws.listing(40).entries, vec![".git/", "readme.md (1 bytes)"]);
    }

    #[test]
    fn a_file_is_found_by_its_name_at_any_depth() {
        let (_dir, ws) = tree(&[("conf/settings.ini", "x"), ("README.txt", "r")]);
        assert!(ws.holds_file_named("settings.ini"));
        assert!(ws.holds_file_named("README.txt"));
        assert!(!ws.holds_file_named("conf"));
        assert!(!ws.holds_file_named("answer.txt"));
    }

    #[test]
    fn an_empty_workspace_lists_nothing() {
        let (_dir, ws) = tree(&[]);
        assert_eq!(ws.listing(40), Listing::default());
    }
}
