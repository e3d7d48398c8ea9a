//! A pids cgroup that caps how many processes a sandboxed run may have at
//! once: root is exempt from `RLIMIT_NPROC`, so for root this is the cap
//! (created only where the cgroup filesystem is writable).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Once;
use std::time::Duration;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// A pids cgroup (v1 or v2) capping the sandbox's process count; removed on drop.
pub(super) struct PidsCgroup {
    dir: PathBuf,
}

static NEXT_CGROUP: AtomicU64 = AtomicU64::new(0);

/// The first cgroup a process makes sweeps away those of Hermes processes
/// that are gone.
static SWEPT: Once = Once::new();

/// How old a gone process's cgroup must be before it is swept: one just
/// made by a Hermes in another pid namespace (whose pid this `/proc` does
/// not show) is not taken from under it.
const ORPHAN_AGE: Duration = Duration::from_secs(60);

impl PidsCgroup {
    pub(super) fn create(max: u32) -> Option<Self> {
        let base = [
            Path::new("/sys/fs/cgroup/pids"),
            Path::new("/sys/fs/cgroup"),
        ]
        .into_iter()
        .find(|b| {
            b.join("cgroup.procs").exists() && (b.ends_with("pids") || controllers_include_pids(b))
        })?;
        SWEPT.call_once(|| sweep_orphans(base, ORPHAN_AGE));
        let name = format!(
            "hermes-sandbox-{}-{}",
            std::process::id(),
            NEXT_CGROUP.fetch_add(1, Ordering::Relaxed)
        );
        let dir = base.join(name);
        std::fs::create_dir(&dir).ok()?;
        let cgroup = Self { dir };
        std::fs::write(cgroup.dir.join("pids.max"), max.to_string()).ok()?;
        Some(cgroup)
    }

    pub(super) fn procs(&self) -> PathBuf {
        self.dir.join("cgroup.procs")
    }

    /// How often a fork was refused because the cgroup was full.
    pub(super) fn limit_hits(&self) -> u64 {
        std::fs::read_to_string(self.dir.join("pids.events"))
            .ok()
            .and_then(|events| {
                events
                    .lines()
                    .find_map(|l| l.strip_prefix("max ").and_then(|n| n.trim().parse().ok()))
            })
            .unwrap_or(0)
    }

    /// Kills every process in the cgroup until it is empty (at most about
    /// half a second), waiting on the runtime between passes.
    pub(super) async fn kill_all(&self) {
        kill_until_empty(&self.procs()).await;
    }
}

/// One pass of SIGKILL over the processes listed in `procs`; whether any was listed.
fn signal_all(procs: &Path) -> bool {
    let pids = std::fs::read_to_string(procs).unwrap_or_default();
    let mut any = false;
    for pid in pids.lines().filter_map(|p| p.trim().parse::<i32>().ok()) {
        any = true;
        let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
    }
    any
}

/// Kills the processes in `procs` until none is left (50 passes, 10 ms apart).
async fn kill_until_empty(procs: &Path) {
    for _ in 0..50 {
        if !signal_all(procs) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Removes the empty cgroups under `base` of Hermes processes that no
/// longer run and that are older than `min_age`: a process killed before
/// its sandboxes' drops ran, or one that exited before the runtime
/// finished removing a cgroup, leaves its directory behind. A cgroup that
/// still has processes cannot be removed, so only empty ones go.
fn sweep_orphans(base: &Path, min_age: Duration) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name();
        let Some(owner) = name
            .to_str()
            .and_then(|n| n.strip_prefix("hermes-sandbox-"))
            .and_then(|rest| rest.split('-').next())
        else {
            continue;
        };
        if owner.is_empty() || Path::new("/proc").join(owner).exists() {
            continue;
        }
        let old_enough = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|made| made.elapsed().ok())
            .is_some_and(|age| age >= min_age);
        if old_enough {
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

fn controllers_include_pids(base: &Path) -> bool {
    std::fs::read_to_string(base.join("cgroup.subtree_control"))
        .is_ok_and(|c| c.split_whitespace().any(|w| w == "pids"))
}

impl Drop for PidsCgroup {
    /// Never sleeps: [`super::run`] has already emptied the cgroup unless its
    /// future was dropped early (a tool timeout). Then the processes get
    /// one SIGKILL here, and removing the directory, which fails while they
    /// are still exiting, is finished on the runtime when there is one.
    fn drop(&mut self) {
        signal_all(&self.procs());
        if std::fs::remove_dir(&self.dir).is_ok() {
            return;
        }
        let dir = std::mem::take(&mut self.dir);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                kill_until_empty(&dir.join("cgroup.procs")).await;
                let _ = std::fs::remove_dir(&dir);
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cgroup left by a process that is gone is swept once old enough; a
    /// live process's is kept. Where the pids cgroup cannot be written (not
    /// root, no cgroup filesystem), the folders are plain ones under a
    /// temporary base, which the sweep treats the same way.
    #[test]
    fn orphans_of_gone_processes_are_swept_and_live_ones_kept() {
        let base = tempfile::tempdir().unwrap();
        // Above the largest pid Linux hands out (2^22), so never running.
        let gone = base.path().join("hermes-sandbox-4194305-0");
        let live = base
            .path()
            .join(format!("hermes-sandbox-{}-0", std::process::id()));
        let other = base.path().join("someone-else-1-0");
        for dir in [&gone, &live, &other] {
            std::fs::create_dir(dir).unwrap();
        }
        sweep_orphans(base.path(), Duration::from_secs(3600));
        assert!(gone.exists(), "younger than the age kept");
        sweep_orphans(base.path(), Duration::ZERO);
        assert!(!gone.exists());
        assert!(live.exists() && other.exists());
    }
}
