//! A pids cgroup that caps how many processes a sandboxed run may have at
//! once: root is exempt from `RLIMIT_NPROC`, so for root this is the cap
//! (created only where the cgroup filesystem is writable).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// A pids cgroup (v1 or v2) capping the sandbox's process count; removed on drop.
pub(super) struct PidsCgroup {
    dir: PathBuf,
}

static NEXT_CGROUP: AtomicU64 = AtomicU64::new(0);

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
