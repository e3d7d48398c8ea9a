//! A run's session: a private folder that lives as long as one run of the
//! loop, where `run_code` keeps what outlives one call (the variables of
//! the model's code, its log of workspace calls). Tools reach it through
//! a task-local set by the loop ([`scope`]); a tool called outside a run
//! (a test, a direct call) has none.

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
}
