//! Running untrusted code in a sandbox.
//!
//! The code gets: no network (a fresh network namespace with only a dead
//! loopback), a read-only system (`/usr`, `/etc`, with `/etc/shadow`
//! hidden), the workspace as its working directory (read-only unless
//! writes are allowed), a private tmpfs for scratch, its own PID namespace,
//! and rlimits on CPU time, address space, file size and open files. The
//! process count is capped by a pids cgroup when one can be created (root)
//! and by `RLIMIT_NPROC` otherwise (root is exempt from that rlimit, which
//! is why the cgroup exists). The sandbox runs in its own process group; on
//! timeout the group and every process in the cgroup are killed.
//!
//! Two [`Backend`]s build it: Hermes itself ([`namespaces`], needing no
//! system package), or bubblewrap ([`bwrap`]) where the kernel refuses the
//! first its namespaces and bwrap is installed. [`probe`] picks one once
//! per process (`HERMES_SANDBOX=builtin|bwrap` forces one); when neither
//! works, code is never run.

mod bwrap;
mod cgroup;
#[allow(unsafe_code)]
mod namespaces;

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use serde::Serialize;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;
use tokio::sync::OnceCell;

use self::cgroup::PidsCgroup;
use self::namespaces::Plan;

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
    /// Seconds the run took. Not serialized, so not in `run_code`'s
    /// observation: a clock reading in the prompt made the same run take
    /// another path on a busier machine (EVALS.md section 44).
    #[serde(skip_serializing)]
    pub seconds: f64,
}

/// Why the sandbox could not run at all.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct SandboxError(pub String);

/// What builds the sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// Hermes itself: namespaces, mounts and rlimits set up between fork
    /// and exec (no system package needed).
    BuiltIn,
    /// bubblewrap (`bwrap`), where it is installed.
    Bubblewrap,
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Backend::BuiltIn => "built-in",
            Backend::Bubblewrap => "bubblewrap",
        })
    }
}

/// The environment variable that forces a backend (`builtin` or `bwrap`).
pub const BACKEND_VAR: &str = "HERMES_SANDBOX";

static BACKEND: OnceCell<Result<Backend, SandboxError>> = OnceCell::const_new();

/// The backend this process runs code with: the built-in sandbox when the
/// kernel lets Hermes create its namespaces, else bubblewrap when it is
/// installed and can (said in one warning), else the error that says why
/// code cannot run here. Decided once per process; `HERMES_SANDBOX`
/// (`builtin`, `bwrap`) forces a backend.
pub async fn probe() -> Result<Backend, SandboxError> {
    BACKEND.get_or_init(choose).await.clone()
}

async fn choose() -> Result<Backend, SandboxError> {
    let forced = std::env::var(BACKEND_VAR).unwrap_or_default();
    match forced.as_str() {
        "builtin" => return probe_builtin().await.map(|()| Backend::BuiltIn),
        "bwrap" => return bwrap::probe().await.map(|()| Backend::Bubblewrap),
        "" => {}
        other => {
            return Err(SandboxError(format!(
                "{BACKEND_VAR}={other:?}: expected `builtin` or `bwrap`"
            )))
        }
    }
    let builtin = match probe_builtin().await {
        Ok(()) => return Ok(Backend::BuiltIn),
        Err(e) => e,
    };
    match bwrap::probe().await {
        Ok(()) => {
            tracing::warn!("run_code uses bubblewrap: {builtin}");
            Ok(Backend::Bubblewrap)
        }
        Err(bwrap) => Err(SandboxError(format!("{builtin}; and {bwrap}"))),
    }
}

/// Whether the built-in sandbox can run `/usr/bin/true` here.
async fn probe_builtin() -> Result<(), SandboxError> {
    let dir = std::env::temp_dir();
    let outcome = run_with(
        Backend::BuiltIn,
        &SandboxConfig::new(dir),
        &["/usr/bin/true"],
        Duration::from_secs(10),
    )
    .await;
    match outcome {
        Ok(output) if output.exit_code == Some(0) => Ok(()),
        Ok(output) => Err(SandboxError(format!(
            "the built-in sandbox did not run a test program (exit {:?}: {})",
            output.exit_code,
            output.stderr.trim()
        ))),
        Err(SandboxError(e)) => Err(SandboxError(format!(
            "the kernel refuses the built-in sandbox its namespaces here ({e}); allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, kernel.apparmor_restrict_unprivileged_userns=0; in a container, a seccomp profile that permits unshare and mount) or install bubblewrap"
        ))),
    }
}

/// Runs `argv` (an interpreter and its arguments, paths inside the sandbox)
/// in the sandbox [`probe`] picks, with `config`'s limits, for at most
/// `timeout`.
pub async fn run(
    config: &SandboxConfig,
    argv: &[&str],
    timeout: Duration,
) -> Result<SandboxOutput, SandboxError> {
    run_with(probe().await?, config, argv, timeout).await
}

/// [`run`] on a given backend.
pub async fn run_with(
    backend: Backend,
    config: &SandboxConfig,
    argv: &[&str],
    timeout: Duration,
) -> Result<SandboxOutput, SandboxError> {
    let Some((program, args)) = argv.split_first() else {
        return Err(SandboxError("nothing to run".into()));
    };
    let cgroup = PidsCgroup::create(config.max_processes);
    let cpu_seconds = timeout.as_secs() + 1;
    let mut command = match backend {
        Backend::BuiltIn => {
            let plan = Plan::new(
                config,
                cgroup.as_ref().map(|c| c.procs()).as_deref(),
                cpu_seconds,
            )
            .map_err(|e| SandboxError(format!("cannot prepare the sandbox: {e}")))?;
            let mut command = Command::new(program);
            command.args(args);
            namespaces::enter_on_spawn(&mut command, plan);
            command
        }
        Backend::Bubblewrap => {
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
            command.args(bwrap::bwrap_args(config, timeout, cgroup.is_none()));
            command.args(argv);
            command
        }
    };
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env_clear()
        .envs(ENVIRONMENT.iter().copied())
        .process_group(0)
        .kill_on_drop(true);
    let started = Instant::now();
    let mut child = command
        .spawn()
        .map_err(|e| SandboxError(format!("cannot start the {backend} sandbox: {e}")))?;
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

/// The code's whole environment (bwrap's prologue sets the same inside).
const ENVIRONMENT: [(&str, &str); 5] = [
    ("PATH", "/usr/bin:/bin"),
    ("HOME", "/tmp"),
    ("TMPDIR", "/tmp"),
    ("LANG", "C.UTF-8"),
    ("PYTHONDONTWRITEBYTECODE", "1"),
];

/// `RLIMIT_NPROC` for a run when no pids cgroup caps it: the rlimit
/// counts every process of the user, so the run's share comes on top of
/// those already running (either backend sets it).
fn process_limit(config: &SandboxConfig) -> usize {
    user_processes() + config.max_processes as usize
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

#[cfg(test)]
mod builtin_tests;
