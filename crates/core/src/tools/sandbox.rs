//! Running untrusted code in bubblewrap (`bwrap`).
//!
//! The code gets: no network (a fresh network namespace with only a dead
//! loopback), a read-only system (`/usr`, `/etc`), the workspace as its
//! working directory (read-only unless writes are allowed), a private tmpfs
//! for scratch, its own PID namespace, and rlimits on CPU time, address
//! space, file size and open files. The process count is capped by a pids
//! cgroup when one can be created (root) and by `RLIMIT_NPROC` otherwise
//! (root is exempt from that rlimit, which is why the cgroup exists). The
//! sandbox runs in its own process group; on timeout the group and every
//! process in the cgroup are killed. Code is never run without bwrap.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;
use serde::Serialize;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;

use super::workspace::STATE_DIR;

/// Limits and mounts of one sandboxed run.
#[derive(Debug, Clone)]
pub struct SandboxConfig {
    /// The host directory mounted as the working directory.
    pub workspace: PathBuf,
    /// Whether the code may write to the workspace.
    pub allow_writes: bool,
    /// Address-space limit (bytes).
    pub memory_bytes: u64,
    /// Most processes (and threads) at once.
    pub max_processes: u32,
    /// Largest file the code may write (bytes).
    pub max_file_bytes: u64,
    /// Output kept per stream (bytes); the rest is counted and dropped.
    pub output_bytes: usize,
    /// A run's session folder (see `tools::session`), mounted writable at
    /// `/hermes` for `run_code`'s prelude; `None`: no such mount.
    pub session: Option<PathBuf>,
}

impl SandboxConfig {
    /// Defaults: read-only workspace, 1 GiB memory, 64 processes, 64 MiB
    /// files, 64 KiB of output per stream.
    pub fn new(workspace: impl Into<PathBuf>) -> Self {
        Self {
            workspace: workspace.into(),
            allow_writes: false,
            memory_bytes: 1 << 30,
            max_processes: 64,
            max_file_bytes: 64 << 20,
            output_bytes: 64 << 10,
            session: None,
        }
    }
}

/// What a sandboxed run produced.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SandboxOutput {
    /// Exit code, when the process exited normally.
    pub exit_code: Option<i32>,
    /// Standard output (cut to the configured size).
    pub stdout: String,
    /// Standard error (cut to the configured size).
    pub stderr: String,
    /// Whether the wall-clock limit ended the run.
    pub timed_out: bool,
    /// Whether a signal ended it (the timeout kill, or a limit such as CPU time).
    pub killed: bool,
    /// Whether the code tried to run more processes than allowed (a fork bomb).
    pub process_limit_hit: bool,
    /// Seconds the run took.
    pub seconds: f64,
}

/// Why the sandbox could not run at all.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct SandboxError(pub String);

/// Checks that `bwrap` exists and can create its namespaces here; the
/// error says why not (so `run_code` is not registered).
pub async fn probe() -> Result<(), SandboxError> {
    let output = Command::new("bwrap")
        .args(SYSTEM_MOUNTS)
        .args(["--", "/usr/bin/true"])
        .stdin(Stdio::null())
        .output()
        .await
        .map_err(|e| {
            SandboxError(format!(
                "bubblewrap (`bwrap`) is not installed or not runnable ({e}); install it, e.g. `apt-get install bubblewrap`"
            ))
        })?;
    if output.status.success() {
        Ok(())
    } else {
        Err(SandboxError(format!(
            "bubblewrap cannot create a sandbox here ({}); allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone, kernel.apparmor_restrict_unprivileged_userns; in a container, a seccomp profile that permits them)",
            String::from_utf8_lossy(&output.stderr).trim()
        )))
    }
}

/// Runs `argv` (an interpreter and its arguments, paths inside the sandbox)
/// under bwrap with `config`'s limits, for at most `timeout`.
pub async fn run(
    config: &SandboxConfig,
    argv: &[&str],
    timeout: Duration,
) -> Result<SandboxOutput, SandboxError> {
    let cgroup = PidsCgroup::create(config.max_processes);
    let mut command = Command::new("/bin/sh");
    // The shell joins the cgroup (when there is one), then becomes bwrap.
    let join = match &cgroup {
        Some(cg) => format!("echo $$ > '{}' && ", cg.procs().display()),
        None => String::new(),
    };
    command
        .arg("-c")
        .arg(format!("{join}exec \"$@\""))
        .arg("hermes-sandbox")
        .arg("bwrap");
    command.args(bwrap_args(config, timeout, cgroup.is_none()));
    command.args(argv);
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .process_group(0)
        .kill_on_drop(true);
    let started = Instant::now();
    let mut child = command
        .spawn()
        .map_err(|e| SandboxError(format!("cannot start the sandbox: {e}")))?;
    let pgid = child.id().map(|id| Pid::from_raw(id as i32));
    let stdout = tokio::spawn(read_capped(child.stdout.take(), config.output_bytes));
    let stderr = tokio::spawn(read_capped(child.stderr.take(), config.output_bytes));
    let (status, timed_out) = match tokio::time::timeout(timeout, child.wait()).await {
        Ok(status) => (status.ok(), false),
        Err(_) => {
            if let Some(pgid) = pgid {
                let _ = killpg(pgid, Signal::SIGKILL);
            }
            if let Some(cg) = &cgroup {
                cg.kill_all().await;
            }
            (child.wait().await.ok(), true)
        }
    };
    let process_limit_hit = match &cgroup {
        Some(cg) => {
            cg.kill_all().await;
            cg.limit_hits() > 0
        }
        None => false,
    };
    let stdout = stdout.await.unwrap_or_default();
    let stderr = stderr.await.unwrap_or_default();
    use std::os::unix::process::ExitStatusExt;
    Ok(SandboxOutput {
        exit_code: status.and_then(|s| s.code()),
        stdout,
        stderr,
        timed_out,
        killed: timed_out || status.is_some_and(|s| s.signal().is_some()),
        process_limit_hit,
        seconds: (started.elapsed().as_secs_f64() * 100.0).round() / 100.0,
    })
}

/// Namespaces, the read-only system, a private /tmp and the environment.
const SYSTEM_MOUNTS: &[&str] = &[
    "--unshare-all",
    "--die-with-parent",
    "--new-session",
    "--ro-bind",
    "/usr",
    "/usr",
    "--symlink",
    "usr/bin",
    "/bin",
    "--symlink",
    "usr/lib",
    "/lib",
    "--symlink",
    "usr/lib64",
    "/lib64",
    "--symlink",
    "usr/sbin",
    "/sbin",
    "--ro-bind",
    "/etc",
    "/etc",
    "--ro-bind",
    "/dev/null",
    "/etc/shadow",
    "--proc",
    "/proc",
    "--dev",
    "/dev",
    "--tmpfs",
    "/tmp",
    "--setenv",
    "HOME",
    "/tmp",
    "--setenv",
    "TMPDIR",
    "/tmp",
    "--setenv",
    "LANG",
    "C.UTF-8",
    "--setenv",
    "PYTHONDONTWRITEBYTECODE",
    "1",
];

/// bwrap's arguments: namespaces, mounts, and a bash prologue that applies
/// the rlimits before running the code.
fn bwrap_args(config: &SandboxConfig, timeout: Duration, limit_nproc: bool) -> Vec<String> {
    let workspace = config.workspace.display().to_string();
    let mut args: Vec<String> = SYSTEM_MOUNTS.iter().map(|s| s.to_string()).collect();
    let bind = if config.allow_writes {
        "--bind"
    } else {
        "--ro-bind"
    };
    args.extend([bind.into(), workspace, "/workspace".into()]);
    // Hermes's own state (long-term memory) is not the code's to read or change.
    if config.workspace.join(STATE_DIR).is_dir() {
        args.extend(["--tmpfs".into(), format!("/workspace/{STATE_DIR}")]);
    }
    if let Some(session) = &config.session {
        args.extend([
            "--bind".into(),
            session.display().to_string(),
            "/hermes".into(),
        ]);
    }
    args.extend(["--chdir".into(), "/workspace".into()]);
    let cpu = timeout.as_secs() + 1;
    let memory_kb = config.memory_bytes / 1024;
    let file_blocks = config.max_file_bytes / 1024;
    let mut limits = format!("ulimit -t {cpu} -v {memory_kb} -f {file_blocks} -n 256");
    if limit_nproc {
        limits.push_str(&format!(
            " -u {}",
            user_processes() + config.max_processes as usize
        ));
    }
    args.extend([
        "--".into(),
        "/usr/bin/bash".into(),
        "-c".into(),
        format!("{limits} && exec \"$@\""),
        "sandbox".into(),
    ]);
    args
}

/// Processes the current user runs now (RLIMIT_NPROC counts all of them).
fn user_processes() -> usize {
    std::fs::read_dir("/proc")
        .map(|d| {
            d.filter(|e| {
                e.as_ref().is_ok_and(|e| {
                    e.file_name()
                        .to_string_lossy()
                        .chars()
                        .all(|c| c.is_ascii_digit())
                })
            })
            .count()
        })
        .unwrap_or(0)
}

async fn read_capped(stream: Option<impl AsyncRead + Unpin>, cap: usize) -> String {
    let Some(mut stream) = stream else {
        return String::new();
    };
    let mut kept = Vec::new();
    let mut total = 0usize;
    let mut buf = [0u8; 8192];
    while let Ok(n) = stream.read(&mut buf).await {
        if n == 0 {
            break;
        }
        total += n;
        if kept.len() < cap {
            let take = n.min(cap - kept.len());
            kept.extend_from_slice(&buf[..take]);
        }
    }
    let mut text = String::from_utf8_lossy(&kept).into_owned();
    if total > kept.len() {
        text.push_str(&format!(
            "\n[output cut: kept {} of {total} bytes]",
            kept.len()
        ));
    }
    text
}

/// A pids cgroup (v1 or v2) capping the sandbox's process count; removed on drop.
struct PidsCgroup {
    dir: PathBuf,
}

static NEXT_CGROUP: AtomicU64 = AtomicU64::new(0);

impl PidsCgroup {
    fn create(max: u32) -> Option<Self> {
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

    fn procs(&self) -> PathBuf {
        self.dir.join("cgroup.procs")
    }

    /// How often a fork was refused because the cgroup was full.
    fn limit_hits(&self) -> u64 {
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
    async fn kill_all(&self) {
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
    /// Never sleeps: [`run`] has already emptied the cgroup unless its
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
