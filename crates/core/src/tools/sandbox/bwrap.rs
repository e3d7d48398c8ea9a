//! The sandbox through bubblewrap (`bwrap`), where it is installed: the
//! fallback when the kernel refuses the built-in sandbox's namespaces to
//! Hermes but allows them to bwrap (a setuid bwrap, say).

use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command;

use super::{SandboxConfig, SandboxError};
use crate::tools::workspace::STATE_DIR;

/// Checks that `bwrap` exists and can create its namespaces here; the
/// error says why not (so `run_code` is not registered).
pub(super) async fn probe() -> Result<(), SandboxError> {
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
pub(super) fn bwrap_args(
    config: &SandboxConfig,
    timeout: Duration,
    limit_nproc: bool,
) -> Vec<String> {
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
        limits.push_str(&format!(" -u {}", super::process_limit(config)));
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
