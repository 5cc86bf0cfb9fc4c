//! A clock for lock deadlines that never jumps and keeps counting while the
//! machine is suspended.
//!
//! `std::time::Instant` is CLOCK_MONOTONIC on Linux, which stops during
//! suspend: after a laptop or VM resumes, a deadline measured on it would lie
//! in the future although the lock expired on the servers long ago. Redis
//! expires keys by wall time, so the safe local clock is CLOCK_BOOTTIME. It is
//! system-wide, so a deadline read in one process means the same in another.

use std::ops::{Add, Sub};
use std::time::Duration;

/// A point on CLOCK_BOOTTIME (CLOCK_MONOTONIC where BOOTTIME does not exist).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BootInstant(Duration);

impl BootInstant {
    pub fn now() -> Self {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        let clock = nix::time::ClockId::CLOCK_BOOTTIME;
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        let clock = nix::time::ClockId::CLOCK_MONOTONIC;
        // clock_gettime on a clock id the kernel supports cannot fail; a
        // kernel without it could not run the rest of this program either.
        let now = nix::time::clock_gettime(clock).expect("clock_gettime(CLOCK_BOOTTIME)");
        BootInstant(Duration::from(now))
    }

    /// Time since `self`, zero if `self` is in the future.
    pub fn elapsed(self) -> Duration {
        Self::now().saturating_since(self)
    }

    /// Time from now until `self`, zero if it has passed.
    pub fn remaining(self) -> Duration {
        self.saturating_since(Self::now())
    }

    pub fn saturating_since(self, earlier: BootInstant) -> Duration {
        self.0.saturating_sub(earlier.0)
    }

    /// Nanoseconds since boot, to hand a deadline to another process.
    pub fn as_nanos(self) -> u64 {
        u64::try_from(self.0.as_nanos()).unwrap_or(u64::MAX)
    }

    pub fn from_nanos(nanos: u64) -> Self {
        BootInstant(Duration::from_nanos(nanos))
    }
}

impl Add<Duration> for BootInstant {
    type Output = BootInstant;
    fn add(self, rhs: Duration) -> BootInstant {
        BootInstant(self.0.saturating_add(rhs))
    }
}

impl Sub<Duration> for BootInstant {
    type Output = BootInstant;
    fn sub(self, rhs: Duration) -> BootInstant {
        BootInstant(self.0.saturating_sub(rhs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moves_forward_and_round_trips() {
        let a = BootInstant::now();
        std::thread::sleep(Duration::from_millis(5));
        let b = BootInstant::now();
        assert!(b > a);
        assert!(b.saturating_since(a) >= Duration::from_millis(5));
        assert_eq!(a.saturating_since(b), Duration::ZERO);
        assert_eq!(BootInstant::from_nanos(a.as_nanos()), a);
        assert!((a + Duration::from_secs(3600)).remaining() > Duration::from_secs(3500));
        assert_eq!(a.remaining(), Duration::ZERO);
        assert_eq!((a + Duration::from_secs(2)) - Duration::from_secs(2), a);
    }
}
