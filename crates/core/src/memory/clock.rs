//! Where the store reads the time: unix seconds from a [`Clock`], so tests
//! can move time forward instead of sleeping through a time-to-live.

use std::fmt::Debug;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// A source of the current time in unix seconds.
pub trait Clock: Send + Sync + Debug {
    /// Seconds since the unix epoch.
    fn now(&self) -> u64;
}

/// The system's wall clock (0 if it reads before 1970).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_secs())
    }
}

/// A clock that moves only when told to (tests, replays).
#[derive(Debug, Default)]
pub struct ManualClock {
    secs: AtomicU64,
}

impl ManualClock {
    /// A clock that reads `secs`.
    pub fn new(secs: u64) -> Self {
        Self {
            secs: AtomicU64::new(secs),
        }
    }

    /// Moves the clock to `secs`.
    pub fn set(&self, secs: u64) {
        self.secs.store(secs, Ordering::SeqCst);
    }

    /// Moves the clock forward by `secs`.
    pub fn advance(&self, secs: u64) {
        self.secs.fetch_add(secs, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> u64 {
        self.secs.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let clock = ManualClock::new(10);
        assert_eq!(clock.now(), 10);
        clock.advance(5);
        assert_eq!(clock.now(), 15);
        clock.set(3);
        assert_eq!(clock.now(), 3);
        assert!(SystemClock.now() > 1_600_000_000);
    }
}
