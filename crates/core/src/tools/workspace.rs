//! The workspace root that file tools are confined to.
//!
//! A path from the model is resolved lexically against the root first (so
//! `..` cannot climb out), then the deepest part of it that exists is
//! canonicalised (so a symlink cannot lead out). Anything that ends outside
//! the root is refused before any file is opened. So is Hermes's own
//! folder at the root, [`STATE_DIR`] (long-term memory), which listings
//! leave out: the agent's tools work on the user's files, not on its memory.

use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use super::ToolError;

/// Hermes's own folder at a workspace's root (`.hermes/`: the long-term
/// memory file). File tools refuse it and `list_dir` leaves it out.
pub const STATE_DIR: &str = ".hermes";

/// A directory that file tools may read and write inside, and nowhere else.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
}

impl Workspace {
    /// Opens a workspace at `root`, which must be an existing directory.
    pub fn new(root: impl AsRef<Path>) -> io::Result<Self> {
        let root = root.as_ref().canonicalize().map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("workspace {}: {e}", root.as_ref().display()),
            )
        })?;
        if !root.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("workspace {} is not a directory", root.display()),
            ));
        }
        Ok(Self { root })
    }

    /// A workspace in a new temporary folder holding `files` (path, text),
    /// for tests; the folder lives as long as the returned guard.
    #[cfg(test)]
    pub(crate) fn temp_with(files: &[(&str, &str)]) -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let workspace = Workspace::new(dir.path()).unwrap();
        (dir, workspace)
    }

    /// The canonical root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves a model-given path to an absolute path inside the workspace,
    /// or refuses it.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, ToolError> {
        let refuse = || {
            ToolError::new(format!("refused: `{path}` is outside the workspace; use a path relative to the workspace root"))
        };
        let given = Path::new(path.trim());
        let mut resolved = self.root.clone();
        // The root is absolute, so only an absolute path can start with it.
        let relative = if given.is_absolute() {
            given.strip_prefix(&self.root).map_err(|_| refuse())?
        } else {
            given
        };
        for component in relative.components() {
            match component {
                Component::Normal(part) => resolved.push(part),
                Component::CurDir => {}
                Component::ParentDir => {
                    if resolved == self.root {
                        return Err(refuse());
                    }
                    resolved.pop();
                }
                Component::RootDir | Component::Prefix(_) => return Err(refuse()),
            }
        }
        // Follow symlinks on the part that exists; it must stay inside. The
        // common case (the path exists) is one `canonicalize`; the walk up
        // to the nearest existing ancestor is for paths about to be created.
        let (existing, real) = match resolved.canonicalize() {
            Ok(real) => (resolved.as_path(), real),
            Err(_) => {
                let mut existing = resolved.as_path();
                while !existing.exists() {
                    match existing.parent() {
                        Some(parent) => existing = parent,
                        None => return Err(refuse()),
                    }
                }
                let real = existing
                    .canonicalize()
                    .map_err(|e| ToolError::new(format!("cannot resolve `{path}`: {e}")))?;
                // A dangling symlink does not "exist" but would be followed on write.
                if resolved.symlink_metadata().is_ok() && !resolved.exists() {
                    return Err(refuse());
                }
                (existing, real)
            }
        };
        if !self.contains(&real) {
            return Err(refuse());
        }
        if self.is_state(&real) || self.is_state(&resolved) {
            return Err(ToolError::new(format!(
                "refused: `{path}` is in {STATE_DIR}/, where Hermes keeps its own state; use another path"
            )));
        }
        // `existing` is `resolved` or one of its ancestors (each shorter):
        // the same length is the common case, the path itself.
        if existing.as_os_str().len() == resolved.as_os_str().len() {
            return Ok(real);
        }
        // `join("")` would add a trailing slash, so join only a real remainder.
        match resolved.strip_prefix(existing) {
            Ok(rest) if !rest.as_os_str().is_empty() => Ok(real.join(rest)),
            _ => Ok(real),
        }
    }

    /// Resolves the `path` argument of a file tool: the absolute path and
    /// its workspace-relative form for messages, or the refusal.
    pub fn resolve_arg(
        &self,
        args: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<(PathBuf, String), ToolError> {
        let path = self.resolve(
            args.get("path")
                .and_then(serde_json::Value::as_str)
                .unwrap_or("."),
        )?;
        let shown = self.display(&path);
        Ok((path, shown))
    }

    /// Whether `path` (relative to the root) resolves inside the workspace
    /// and nothing is there yet: a file the run may still have to write.
    pub fn lacks(&self, path: &str) -> bool {
        self.resolve(path).is_ok_and(|path| !path.exists())
    }

    /// Whether `path` (absolute, under the root) is in [`STATE_DIR`].
    pub fn is_state(&self, path: &Path) -> bool {
        match self.under(path) {
            Under::Rest(rest) => rest.split(|&b| b == b'/').next() == Some(STATE_DIR.as_bytes()),
            Under::Outside => false,
            Under::Unknown => path
                .strip_prefix(&self.root)
                .ok()
                .and_then(|rest| rest.components().next())
                .is_some_and(|first| first.as_os_str() == STATE_DIR),
        }
    }

    /// `path` relative to the root, for messages.
    pub fn display(&self, path: &Path) -> String {
        let rel = match self.under(path) {
            Under::Rest(rest) => Path::new(OsStr::from_bytes(rest)).display().to_string(),
            Under::Outside => path.display().to_string(),
            Under::Unknown => path
                .strip_prefix(&self.root)
                .unwrap_or(path)
                .display()
                .to_string(),
        };
        if rel.is_empty() {
            ".".into()
        } else {
            rel
        }
    }

    /// Whether `path` is the root or under it, component by component.
    fn contains(&self, path: &Path) -> bool {
        match self.under(path) {
            Under::Rest(_) => true,
            Under::Outside => false,
            Under::Unknown => path.starts_with(&self.root),
        }
    }

    /// Where `path` stands to the root, read from its bytes when it is
    /// written plainly (absolute; no `.` or `..`, no doubled or trailing
    /// separator), as every path [`Workspace::resolve`] builds or
    /// canonicalises is. Such a path is under the root exactly when its
    /// bytes start with the root's at a separator: the same answer as
    /// `Path::strip_prefix`, without parsing both into components (which
    /// was most of a `read_file` call's own instructions).
    fn under<'a>(&self, path: &'a Path) -> Under<'a> {
        let bytes = path.as_os_str().as_bytes();
        if !is_plain(bytes) {
            return Under::Unknown;
        }
        let root = self.root.as_os_str().as_bytes();
        if root == b"/" {
            return Under::Rest(&bytes[1..]);
        }
        match bytes.strip_prefix(root) {
            Some([]) => Under::Rest(&[]),
            Some([b'/', rest @ ..]) => Under::Rest(rest),
            _ => Under::Outside,
        }
    }
}

/// Where a path stands to a workspace's root ([`Workspace::under`]).
enum Under<'a> {
    /// Under the root (or the root itself: empty): the rest, after the root
    /// and its separator.
    Rest(&'a [u8]),
    /// Not under the root.
    Outside,
    /// Not written plainly: ask `Path`'s component walk.
    Unknown,
}

/// Whether `bytes` is an absolute path written plainly: no `.` or `..`
/// component, no empty one (a doubled or trailing separator), so that its
/// components are exactly its `/`-separated parts.
fn is_plain(bytes: &[u8]) -> bool {
    match bytes {
        b"/" => true,
        [b'/', rest @ ..] => rest
            .split(|&b| b == b'/')
            .all(|part| !matches!(part, b"" | b"." | b"..")),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inside_paths_resolve_and_escapes_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        assert_eq!(ws.resolve("a/b.txt").unwrap(), ws.root().join("a/b.txt"));
        std::fs::write(ws.root().join("f.txt"), "x").unwrap();
        assert_eq!(
            ws.resolve("f.txt").unwrap().to_str(),
            ws.root().join("f.txt").to_str()
        );
        assert_eq!(ws.resolve("a/../b.txt").unwrap(), ws.root().join("b.txt"));
        assert_eq!(ws.resolve(".").unwrap(), ws.root());
        assert!(ws.resolve("../x").is_err());
        assert!(ws.resolve("a/../../x").is_err());
        assert!(ws.resolve("/etc/passwd").is_err());
        let inside = ws.root().join("c.txt");
        assert_eq!(ws.resolve(inside.to_str().unwrap()).unwrap(), inside);
    }

    #[test]
    fn plain_paths_read_from_their_bytes_as_their_components_do() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        let root = ws.root().display().to_string();
        let sibling = format!("{root}x/.hermes");
        let parent = ws.root().parent().unwrap().display().to_string();
        let paths = [
            root.clone(),
            format!("{root}/a.txt"),
            format!("{root}/.hermes"),
            format!("{root}/.hermes/memory.redb"),
            format!("{root}/.hermesx"),
            format!("{root}/a/.hermes"),
            format!("{root}/./.hermes"),
            format!("{root}//.hermes"),
            format!("{root}/a/"),
            format!("{root}/a/../.hermes"),
            sibling,
            parent,
            "/".to_string(),
            "/etc/passwd".to_string(),
            "relative/.hermes".to_string(),
        ];
        for path in &paths {
            let path = Path::new(path);
            let by_parts = path
                .strip_prefix(ws.root())
                .ok()
                .and_then(|rest| rest.components().next())
                .is_some_and(|first| first.as_os_str() == STATE_DIR);
            assert_eq!(ws.is_state(path), by_parts, "is_state {path:?}");
            assert_eq!(
                ws.contains(path),
                path.starts_with(ws.root()),
                "contains {path:?}"
            );
            let shown = path
                .strip_prefix(ws.root())
                .unwrap_or(path)
                .display()
                .to_string();
            let shown = if shown.is_empty() { ".".into() } else { shown };
            assert_eq!(ws.display(path), shown, "display {path:?}");
        }
        assert!(is_plain(b"/"));
        assert!(is_plain(b"/a/b"));
        for odd in [&b""[..], b"a/b", b"/a//b", b"/a/./b", b"/a/..", b"/a/"] {
            assert!(!is_plain(odd), "{odd:?}");
        }
    }

    #[test]
    fn the_state_folder_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(STATE_DIR)).unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        for path in [
            ".hermes",
            ".hermes/memory.redb",
            "./.hermes/x",
            "a/../.hermes",
        ] {
            let e = ws.resolve(path).unwrap_err().to_string();
            assert!(
                e.contains("where Hermes keeps its own state"),
                "{path}: {e}"
            );
        }
        assert!(ws.resolve(".hermes-notes.txt").is_ok());
        assert!(ws.resolve("a/.hermes").is_ok());
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_leading_out_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("nothing"), dir.path().join("dangling"))
            .unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        assert!(ws.resolve("out/secret.txt").is_err());
        assert!(ws.resolve("out").is_err());
        assert!(ws.resolve("dangling").is_err());
        // A link that stays inside resolves to what it points at.
        std::fs::write(dir.path().join("f.txt"), "x").unwrap();
        std::os::unix::fs::symlink(dir.path().join("f.txt"), dir.path().join("alias.txt")).unwrap();
        assert_eq!(ws.resolve("alias.txt").unwrap(), ws.root().join("f.txt"));
        assert_eq!(
            ws.resolve("alias.txt/../g.txt").unwrap(),
            ws.root().join("g.txt")
        );
    }
}
