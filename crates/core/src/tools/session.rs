//! A run's session: a private folder that lives as long as one run of the
//! loop, where `run_code` keeps what outlives one call (the variables of
//! the model's code, its log of workspace calls). Tools reach it through
//! a task-local set by the loop ([`scope`]); a tool called outside a run
//! (a test, a direct call) has none.
//!
//! A **trial** ([`trial`]) runs a call in a session of its own that starts
//! from a copy of the run's folder (the variables kept so far) and is
//! thrown away after: `run_code` then works on a copy of the workspace and
//! saves nothing, so a program can be tried without changing the run.

use std::future::Future;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

tokio::task_local! {
    static SESSION: Arc<Session>;
}

/// One run's private folder, made on first use and removed with the run.
#[derive(Debug, Default)]
pub struct Session {
    dir: OnceLock<Option<tempfile::TempDir>>,
    /// A trial's session: what runs in it changes nothing that lasts.
    trial: bool,
}

impl Session {
    /// The folder (made now if needed); `None` when it cannot be made.
    pub fn dir(&self) -> Option<PathBuf> {
        self.dir
            .get_or_init(|| {
                tempfile::Builder::new()
                    .prefix("hermes-session-")
                    .tempdir()
                    .ok()
            })
            .as_ref()
            .map(|d| d.path().to_path_buf())
    }
}

impl Session {
    /// A trial's session: a new folder holding a copy of `of`'s files
    /// (none when `of` has no folder yet).
    fn trial_of(of: Option<&Session>) -> Self {
        let session = Self {
            dir: OnceLock::new(),
            trial: true,
        };
        let from = of.and_then(|s| s.dir.get()).and_then(Option::as_ref);
        if let (Some(from), Some(to)) = (from, session.dir()) {
            if let Ok(entries) = std::fs::read_dir(from.path()) {
                for entry in entries.flatten() {
                    if entry.file_type().is_ok_and(|t| t.is_file()) {
                        let _ = std::fs::copy(entry.path(), to.join(entry.file_name()));
                    }
                }
            }
        }
        session
    }
}

/// Runs `work` (one run of the loop) with a session of its own.
pub async fn scope<F: Future>(work: F) -> F::Output {
    SESSION.scope(Arc::new(Session::default()), work).await
}

/// The session the current task runs in, if any: to carry into a task
/// spawned for a tool call ([`carried`]).
pub fn current() -> Option<Arc<Session>> {
    SESSION.try_with(Arc::clone).ok()
}

/// Runs `work` in `session` (one taken with [`current`]), or without one.
pub async fn carried<F: Future>(session: Option<Arc<Session>>, work: F) -> F::Output {
    match session {
        Some(session) => SESSION.scope(session, work).await,
        None => work.await,
    }
}

/// Runs `work` (one tool call) as a trial: in a session that starts from a
/// copy of the current one's folder and is removed after, so that nothing
/// it does lasts ([`is_trial`] tells the tools).
pub async fn trial<F: Future>(work: F) -> F::Output {
    let of = current();
    let session = tokio::task::spawn_blocking(move || Session::trial_of(of.as_deref()))
        .await
        .unwrap_or_else(|_| Session::trial_of(None));
    SESSION.scope(Arc::new(session), work).await
}

/// Whether the current task runs a trial (see [`trial`]).
pub fn is_trial() -> bool {
    SESSION.try_with(|s| s.trial).unwrap_or(false)
}

/// The folder of the session the current task runs in, if any.
pub fn current_dir() -> Option<PathBuf> {
    SESSION.try_with(|s| s.dir()).ok().flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_run_has_one_folder_and_it_goes_with_the_run() {
        assert!(current_dir().is_none());
        let (first, second) = scope(async { (current_dir(), current_dir()) }).await;
        let dir = first.unwrap();
        assert_eq!(Some(dir.clone()), second);
        assert!(!dir.exists(), "removed with the run");
        let other = scope(async { current_dir() }).await.unwrap();
        assert_ne!(dir, other);
        // Carried into a spawned task, it is the same session.
        let (outer, inner) = scope(async {
            let session = current();
            let inner = tokio::spawn(carried(session, async { current_dir() }))
                .await
                .unwrap();
            (current_dir(), inner)
        })
        .await;
        assert_eq!(outer, inner);
        assert!(outer.is_some());
    }

    #[tokio::test]
    async fn a_trial_starts_from_a_copy_and_changes_nothing() {
        assert!(!is_trial());
        scope(async {
            let dir = current_dir().unwrap();
            std::fs::write(dir.join("state"), "before").unwrap();
            let tried = trial(async {
                assert!(is_trial());
                let tried = current_dir().unwrap();
                assert_eq!(
                    std::fs::read_to_string(tried.join("state")).unwrap(),
                    "before"
                );
                std::fs::write(tried.join("state"), "after").unwrap();
                tried
            })
            .await;
            assert_ne!(tried, dir);
            assert!(!tried.exists(), "removed with the trial");
            assert_eq!(
                std::fs::read_to_string(dir.join("state")).unwrap(),
                "before"
            );
            assert!(!is_trial());
        })
        .await;
        // Outside a run, a trial has a folder of its own too.
        assert!(trial(async { current_dir() }).await.is_some());
    }
}
