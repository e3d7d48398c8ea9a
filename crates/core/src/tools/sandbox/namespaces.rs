//! The built-in sandbox: Linux namespaces, mounts and rlimits that Hermes
//! sets up itself between `fork` and `exec`, so that `run_code` works on
//! a machine with nothing installed (bubblewrap is the fallback, see
//! [`super::bwrap`]).
//!
//! It builds what bwrap's `--unshare-all` run builds, in the same order:
//! 1. In the forked child: join the pids cgroup (when there is one), then
//!    new user, mount, PID, network, IPC and UTS namespaces, mapping the
//!    caller's uid and gid to themselves.
//! 2. Fork again, so that the code is PID 1 of its PID namespace (when it
//!    dies, the kernel kills everything left in it). The middle process
//!    closes every descriptor, waits, and exits as the code did.
//! 3. In the code's process: a tmpfs becomes the root, the host's root is
//!    reachable under `/oldroot` only while the new root is assembled in
//!    `/newroot` from the [`Plan`]'s steps (read-only `/usr` and `/etc`,
//!    `/etc/shadow` hidden, fresh `/proc`, a minimal `/dev`, a tmpfs
//!    `/tmp`, the workspace at `/workspace`), then the host's root is
//!    detached and `/newroot` becomes `/`.
//! 4. rlimits (CPU time, address space, file size, open files, and
//!    processes when no cgroup caps them), `no_new_privs`, and the exec.
//!
//! Everything between fork and exec is a system call on memory prepared
//! before the fork (the child of a multi-threaded process may not
//! allocate): the plan holds every path as a C string.

use std::ffi::{CStr, CString};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use nix::libc;

use super::SandboxConfig;
use crate::tools::workspace::STATE_DIR;

/// Where the new root is assembled, inside the tmpfs that is `/` while it
/// is (paths below are absolute there).
const NEW_ROOT: &str = "/newroot";
/// Where the host's root is reachable while the new root is assembled.
const OLD_ROOT: &str = "/oldroot";

/// Makes `command` enter the sandbox `plan` describes when it is spawned
/// (between its fork and its exec).
pub(super) fn enter_on_spawn(command: &mut tokio::process::Command, plan: Plan) {
    // SAFETY: `enter` runs between fork and exec, as it requires, and only
    // makes system calls on memory the plan prepared before the fork.
    unsafe {
        command.pre_exec(move || plan.enter());
    }
}

/// Device nodes bound from the host into the sandbox's `/dev`.
const DEVICES: [&str; 6] = ["null", "zero", "full", "random", "urandom", "tty"];

/// One step of assembling the new root (paths absolute in the
/// intermediate root: sources under [`OLD_ROOT`], targets under
/// [`NEW_ROOT`]).
#[derive(Debug)]
enum Step {
    /// A directory (its parent exists).
    Dir(CString),
    /// An empty file to mount a device or file over.
    File(CString),
    /// A symbolic link `link` pointing at `target`.
    Symlink { target: CString, link: CString },
    /// `source` mounted at `target` (recursively), read-only unless `writable`.
    Bind {
        source: CString,
        target: CString,
        writable: bool,
    },
    /// A fresh tmpfs.
    Tmpfs(CString),
    /// A fresh procfs of the new PID namespace.
    Proc(CString),
}

/// Everything the child needs between fork and exec, prepared before the
/// fork.
#[derive(Debug)]
pub(super) struct Plan {
    steps: Vec<Step>,
    /// `cgroup.procs` of the pids cgroup the child joins, if any.
    cgroup_procs: Option<CString>,
    /// The uid and gid maps (`"<id> <id> 1"`).
    uid_map: CString,
    gid_map: CString,
    /// The working directory inside the sandbox.
    workdir: CString,
    /// rlimits: CPU seconds, address space bytes, file size bytes, and
    /// processes (`None`: the cgroup caps them).
    cpu_seconds: u64,
    memory_bytes: u64,
    file_bytes: u64,
    processes: Option<u64>,
}

/// Most descriptors the code may open at once.
const OPEN_FILES: u64 = 256;

fn c(text: &str) -> io::Result<CString> {
    CString::new(text).map_err(|_| io::Error::other(format!("a NUL byte in {text:?}")))
}

fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::other(format!("a NUL byte in {}", path.display())))
}

/// `path` (absolute on the host) as seen under [`OLD_ROOT`].
fn old(path: &Path) -> io::Result<CString> {
    let mut bytes = OLD_ROOT.as_bytes().to_vec();
    bytes.extend_from_slice(path.as_os_str().as_bytes());
    CString::new(bytes).map_err(|_| io::Error::other(format!("a NUL byte in {}", path.display())))
}

fn new(inside: &str) -> io::Result<CString> {
    c(&format!("{NEW_ROOT}{inside}"))
}

impl Plan {
    /// The plan for `config`'s run: `cgroup_procs` is the pids cgroup to
    /// join, `cpu_seconds` the CPU-time limit.
    pub(super) fn new(
        config: &SandboxConfig,
        cgroup_procs: Option<&Path>,
        cpu_seconds: u64,
    ) -> io::Result<Self> {
        let workspace = config
            .workspace
            .canonicalize()
            .map_err(|e| io::Error::new(e.kind(), format!("the workspace: {e}")))?;
        let mut steps = Vec::new();
        for system in ["/usr", "/etc"] {
            steps.push(Step::Dir(new(system)?));
            steps.push(Step::Bind {
                source: old(Path::new(system))?,
                target: new(system)?,
                writable: false,
            });
        }
        for (link, target) in [
            ("/bin", "usr/bin"),
            ("/lib", "usr/lib"),
            ("/lib64", "usr/lib64"),
            ("/sbin", "usr/sbin"),
        ] {
            steps.push(Step::Symlink {
                target: c(target)?,
                link: new(link)?,
            });
        }
        if Path::new("/etc/shadow").exists() {
            steps.push(Step::Bind {
                source: old(Path::new("/dev/null"))?,
                target: new("/etc/shadow")?,
                writable: false,
            });
        }
        steps.push(Step::Dir(new("/proc")?));
        steps.push(Step::Proc(new("/proc")?));
        steps.push(Step::Dir(new("/dev")?));
        steps.push(Step::Tmpfs(new("/dev")?));
        for device in DEVICES {
            let host = Path::new("/dev").join(device);
            if host.exists() {
                steps.push(Step::File(new(&format!("/dev/{device}"))?));
                steps.push(Step::Bind {
                    source: old(&host)?,
                    target: new(&format!("/dev/{device}"))?,
                    writable: true,
                });
            }
        }
        for (link, target) in [
            ("fd", "/proc/self/fd"),
            ("stdin", "/proc/self/fd/0"),
            ("stdout", "/proc/self/fd/1"),
            ("stderr", "/proc/self/fd/2"),
        ] {
            steps.push(Step::Symlink {
                target: c(target)?,
                link: new(&format!("/dev/{link}"))?,
            });
        }
        steps.push(Step::Dir(new("/dev/shm")?));
        steps.push(Step::Dir(new("/tmp")?));
        steps.push(Step::Tmpfs(new("/tmp")?));
        steps.push(Step::Dir(new("/workspace")?));
        steps.push(Step::Bind {
            source: old(&workspace)?,
            target: new("/workspace")?,
            writable: config.allow_writes,
        });
        // Hermes's own state (long-term memory) is not the code's to read or change.
        if workspace.join(STATE_DIR).is_dir() {
            steps.push(Step::Tmpfs(new(&format!("/workspace/{STATE_DIR}"))?));
        }
        if let Some(session) = &config.session {
            let session = session.canonicalize()?;
            steps.push(Step::Dir(new("/hermes")?));
            steps.push(Step::Bind {
                source: old(&session)?,
                target: new("/hermes")?,
                writable: true,
            });
        }
        // SAFETY: getuid and getgid cannot fail and touch no memory.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        Ok(Self {
            steps,
            cgroup_procs: cgroup_procs.map(c_path).transpose()?,
            uid_map: c(&format!("{uid} {uid} 1"))?,
            gid_map: c(&format!("{gid} {gid} 1"))?,
            workdir: c("/workspace")?,
            cpu_seconds,
            memory_bytes: config.memory_bytes,
            file_bytes: config.max_file_bytes,
            processes: cgroup_procs
                .is_none()
                .then(|| super::process_limit(config) as u64),
        })
    }

    /// Runs in the forked child, before exec: enters the sandbox. Returns
    /// only in the process that goes on to exec the code; the middle
    /// process never returns (it exits as the code does).
    ///
    /// # Safety
    /// Call only between fork and exec (it forks, changes namespaces and
    /// exits the middle process).
    pub(super) unsafe fn enter(&self) -> io::Result<()> {
        if let Some(procs) = &self.cgroup_procs {
            write_file(procs, b"0")?;
        }
        check(libc::unshare(
            libc::CLONE_NEWUSER
                | libc::CLONE_NEWNS
                | libc::CLONE_NEWPID
                | libc::CLONE_NEWNET
                | libc::CLONE_NEWIPC
                | libc::CLONE_NEWUTS,
        ))?;
        write_file(c"/proc/self/setgroups", b"deny")?;
        write_file(c"/proc/self/uid_map", self.uid_map.as_bytes())?;
        write_file(c"/proc/self/gid_map", self.gid_map.as_bytes())?;
        match check(libc::fork())? {
            0 => {}
            code => wait_and_exit_as(code),
        }
        // The code's process: PID 1 of the new namespace, gone with its parent.
        check(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0))?;
        self.assemble_root()?;
        self.limit()?;
        check(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))?;
        Ok(())
    }

    /// Steps 3 of the module's list: a tmpfs root, the new root assembled
    /// in it, the host's root detached, the new root made `/`.
    unsafe fn assemble_root(&self) -> io::Result<()> {
        mount(None, c"/", None, libc::MS_REC | libc::MS_PRIVATE, None)?;
        // The tmpfs over /tmp is this namespace's only: the host's /tmp,
        // the workspace perhaps inside it, stays reachable under /oldroot.
        mount(
            Some(c"tmpfs"),
            c"/tmp",
            Some(c"tmpfs"),
            libc::MS_NOSUID | libc::MS_NODEV,
            Some(c"mode=0755"),
        )?;
        check(libc::chdir(c"/tmp".as_ptr()))?;
        check(libc::mkdir(c"newroot".as_ptr(), 0o755))?;
        check(libc::mkdir(c"oldroot".as_ptr(), 0o755))?;
        pivot_root(c"/tmp", c"oldroot")?;
        check(libc::chdir(c"/".as_ptr()))?;
        // The final pivot needs the new root to be a mount point.
        mount(
            Some(c"/newroot"),
            c"/newroot",
            None,
            libc::MS_BIND | libc::MS_REC,
            None,
        )?;
        for step in &self.steps {
            step.run()?;
        }
        check(libc::umount2(c"/oldroot".as_ptr(), libc::MNT_DETACH))?;
        check(libc::chdir(c"/newroot".as_ptr()))?;
        pivot_root(c".", c".")?;
        check(libc::umount2(c".".as_ptr(), libc::MNT_DETACH))?;
        check(libc::chdir(self.workdir.as_ptr()))?;
        Ok(())
    }

    /// Step 4's rlimits.
    unsafe fn limit(&self) -> io::Result<()> {
        let set = |resource, value: u64| {
            let limit = libc::rlimit {
                rlim_cur: value,
                rlim_max: value,
            };
            check(libc::setrlimit(resource, &limit)).map(drop)
        };
        set(libc::RLIMIT_CPU, self.cpu_seconds)?;
        set(libc::RLIMIT_AS, self.memory_bytes)?;
        set(libc::RLIMIT_FSIZE, self.file_bytes)?;
        set(libc::RLIMIT_NOFILE, OPEN_FILES)?;
        if let Some(processes) = self.processes {
            set(libc::RLIMIT_NPROC, processes)?;
        }
        Ok(())
    }
}

impl Step {
    unsafe fn run(&self) -> io::Result<()> {
        match self {
            Step::Dir(path) => match check(libc::mkdir(path.as_ptr(), 0o755)) {
                Err(e) if e.raw_os_error() == Some(libc::EEXIST) => Ok(()),
                other => other.map(drop),
            },
            Step::File(path) => {
                let fd = check(libc::open(
                    path.as_ptr(),
                    libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC,
                    0o644,
                ))?;
                libc::close(fd);
                Ok(())
            }
            Step::Symlink { target, link } => {
                check(libc::symlink(target.as_ptr(), link.as_ptr())).map(drop)
            }
            Step::Bind {
                source,
                target,
                writable,
            } => {
                mount(
                    Some(source),
                    target,
                    None,
                    libc::MS_BIND | libc::MS_REC,
                    None,
                )?;
                if *writable {
                    Ok(())
                } else {
                    read_only(target)
                }
            }
            Step::Tmpfs(path) => mount(
                Some(c"tmpfs"),
                path,
                Some(c"tmpfs"),
                libc::MS_NOSUID | libc::MS_NODEV,
                Some(c"mode=0755"),
            ),
            Step::Proc(path) => mount(
                Some(c"proc"),
                path,
                Some(c"proc"),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                None,
            ),
        }
    }
}

/// `mount_setattr(2)`'s attribute set (not in every libc release).
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

const MOUNT_ATTR_RDONLY: u64 = 0x1;
const AT_RECURSIVE: libc::c_uint = 0x8000;

/// Makes the mount at `target` and every mount below it read-only
/// (`mount_setattr`, Linux 5.12); on older kernels, the top mount only,
/// keeping the flags a user namespace may not clear.
unsafe fn read_only(target: &CStr) -> io::Result<()> {
    let attr = MountAttr {
        attr_set: MOUNT_ATTR_RDONLY,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    let done = libc::syscall(
        libc::SYS_mount_setattr,
        libc::AT_FDCWD,
        target.as_ptr(),
        AT_RECURSIVE,
        &attr as *const MountAttr,
        std::mem::size_of::<MountAttr>(),
    );
    if done == 0 {
        return Ok(());
    }
    let mut stat: libc::statvfs = std::mem::zeroed();
    check(libc::statvfs(target.as_ptr(), &mut stat))?;
    let mut flags = libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY;
    for (st, ms) in [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ] {
        if stat.f_flag & st != 0 {
            flags |= ms;
        }
    }
    mount(None, target, None, flags, None)
}

unsafe fn mount(
    source: Option<&CStr>,
    target: &CStr,
    kind: Option<&CStr>,
    flags: libc::c_ulong,
    data: Option<&CStr>,
) -> io::Result<()> {
    let ptr = |s: Option<&CStr>| s.map_or(std::ptr::null(), CStr::as_ptr);
    check(libc::mount(
        ptr(source),
        target.as_ptr(),
        ptr(kind),
        flags,
        data.map_or(std::ptr::null(), |d| d.as_ptr().cast()),
    ))
    .map(drop)
}

unsafe fn pivot_root(new_root: &CStr, put_old: &CStr) -> io::Result<()> {
    check(libc::syscall(libc::SYS_pivot_root, new_root.as_ptr(), put_old.as_ptr()) as libc::c_int)
        .map(drop)
}

/// Writes `bytes` to the file at `path` (which exists).
unsafe fn write_file(path: &CStr, bytes: &[u8]) -> io::Result<()> {
    let fd = check(libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC))?;
    let written = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
    let error = io::Error::last_os_error();
    libc::close(fd);
    if written == bytes.len() as isize {
        Ok(())
    } else {
        Err(error)
    }
}

/// The middle process: holds no descriptor (so the parent sees the code's
/// output end and `spawn` return when the code starts), waits for the
/// code, and ends as it ended (its exit code, or its signal).
unsafe fn wait_and_exit_as(code: libc::pid_t) -> ! {
    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
    if libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32) != 0 {
        for fd in 0..1024 {
            libc::close(fd);
        }
    }
    let mut status = 0;
    loop {
        let waited = libc::waitpid(code, &mut status, 0);
        if waited == code {
            break;
        }
        if waited == -1 && io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            libc::_exit(127);
        }
    }
    if libc::WIFSIGNALED(status) {
        let signal = libc::WTERMSIG(status);
        libc::signal(signal, libc::SIG_DFL);
        libc::kill(libc::getpid(), signal);
        libc::_exit(128 + signal);
    }
    libc::_exit(libc::WEXITSTATUS(status))
}

fn check<T: Default + PartialOrd>(result: T) -> io::Result<T> {
    if result < T::default() {
        Err(io::Error::last_os_error())
    } else {
        Ok(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plan_mounts_the_workspace_read_only_unless_writes_are_allowed() {
        let ws = tempfile::tempdir().unwrap();
        let mut config = SandboxConfig::new(ws.path());
        let bind = |plan: &Plan| {
            plan.steps
                .iter()
                .find_map(|s| match s {
                    Step::Bind {
                        target, writable, ..
                    } if target.as_bytes() == b"/newroot/workspace" => Some(*writable),
                    _ => None,
                })
                .unwrap()
        };
        assert!(!bind(&Plan::new(&config, None, 5).unwrap()));
        config.allow_writes = true;
        let plan = Plan::new(&config, None, 5).unwrap();
        assert!(bind(&plan));
        assert!(
            plan.processes.is_some(),
            "without a cgroup the rlimit caps processes"
        );
        let plan = Plan::new(&config, Some(Path::new("/sys/fs/cgroup/x/cgroup.procs")), 5).unwrap();
        assert_eq!(plan.processes, None);
    }

    #[test]
    fn hermes_state_is_hidden_under_a_tmpfs() {
        let ws = tempfile::tempdir().unwrap();
        std::fs::create_dir(ws.path().join(STATE_DIR)).unwrap();
        let plan = Plan::new(&SandboxConfig::new(ws.path()), None, 5).unwrap();
        let hidden = format!("/newroot/workspace/{STATE_DIR}");
        assert!(plan
            .steps
            .iter()
            .any(|s| matches!(s, Step::Tmpfs(p) if p.to_str() == Ok(hidden.as_str()))));
    }
}
