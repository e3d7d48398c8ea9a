//! What this process costs: CPU time so far (the whole process, or one
//! thread), and resident memory now, at its peak (Linux `/proc/self/status`)
//! and as sampled while a benchmark runs ([`RssSampler`]).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use nix::sys::resource::{getrusage, UsageWho};
use nix::sys::time::TimeValLike;

use hermes_actors::executor::live_executors;

/// User plus system CPU time of the whole process so far.
pub fn cpu_time() -> Duration {
    usage_time(UsageWho::RUSAGE_SELF)
}

/// User plus system CPU time of the calling thread so far (Linux; zero
/// where the platform cannot say).
pub fn thread_cpu_time() -> Duration {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        usage_time(UsageWho::RUSAGE_THREAD)
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        Duration::ZERO
    }
}

/// User plus system CPU time of `who`, zero when it cannot be read.
fn usage_time(who: UsageWho) -> Duration {
    getrusage(who)
        .map(|usage| {
            let micros =
                usage.user_time().num_microseconds() + usage.system_time().num_microseconds();
            Duration::from_micros(micros.max(0) as u64)
        })
        .unwrap_or_default()
}

/// Resident memory now, in bytes (`VmRSS`); `None` off Linux.
pub fn rss_bytes() -> Option<u64> {
    status_kib("VmRSS:").map(|kib| kib * 1024)
}

/// The peak of resident memory so far, in bytes (`VmHWM`); `None` off Linux.
pub fn peak_rss_bytes() -> Option<u64> {
    status_kib("VmHWM:").map(|kib| kib * 1024)
}

/// A `kB` field of `/proc/self/status`.
fn status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

/// Samples resident memory and the number of live executor actors every
/// 20 ms and keeps the most of each it saw.
pub struct RssSampler {
    running: Arc<AtomicBool>,
    most: Arc<AtomicU64>,
    most_executors: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

/// The most a [`RssSampler`] saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peaks {
    /// Resident memory, in bytes.
    pub rss: u64,
    /// Executor actors alive at once ([`live_executors`]).
    pub executors: usize,
}

impl RssSampler {
    /// Starts sampling on the current tokio runtime.
    pub fn start() -> Self {
        let running = Arc::new(AtomicBool::new(true));
        let most = Arc::new(AtomicU64::new(0));
        let most_executors = Arc::new(AtomicUsize::new(0));
        let (flag, seen) = (Arc::clone(&running), Arc::clone(&most));
        let seen_executors = Arc::clone(&most_executors);
        let task = tokio::spawn(async move {
            while flag.load(Ordering::Relaxed) {
                seen.fetch_max(rss_bytes().unwrap_or(0), Ordering::Relaxed);
                seen_executors.fetch_max(live_executors(), Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        });
        Self {
            running,
            most,
            most_executors,
            task,
        }
    }

    /// Stops sampling; the most seen (now included).
    pub async fn stop(self) -> Peaks {
        self.running.store(false, Ordering::Relaxed);
        let _ = self.task.await;
        Peaks {
            rss: self
                .most
                .load(Ordering::Relaxed)
                .max(rss_bytes().unwrap_or(0)),
            executors: self
                .most_executors
                .load(Ordering::Relaxed)
                .max(live_executors()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_and_memory_are_read() {
        let before = cpu_time();
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_add(i * i);
        }
        assert!(x > 0);
        assert!(cpu_time() >= before);
        let (now, peak) = (rss_bytes().unwrap(), peak_rss_bytes().unwrap());
        assert!(now > 0 && peak >= now);
    }
}
