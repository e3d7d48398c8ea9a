//! What this process costs: CPU time so far, and resident memory now and at
//! its peak (Linux `/proc/self/status`).

use std::time::Duration;

use nix::sys::resource::{getrusage, UsageWho};
use nix::sys::time::TimeValLike;

/// User plus system CPU time of the whole process so far.
pub fn cpu_time() -> Duration {
    getrusage(UsageWho::RUSAGE_SELF)
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
