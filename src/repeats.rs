//! How a failure that repeats is said: the first at once, then at growing
//! intervals (1s, 2s, 4s, … at most a minute apart), and once more when it
//! stops, with how long it lasted and how many tries failed. A majority
//! outage under `exec` is then a handful of lines in cron mail or a CI log,
//! not two a second.

use std::time::Duration;

use crate::clock::BootInstant;

/// The wait after the first failure said before the next is said; it
/// doubles after each one said, up to [`LONGEST_GAP`].
const FIRST_GAP: Duration = Duration::from_secs(1);
const LONGEST_GAP: Duration = Duration::from_secs(60);

/// Failures in a row: how many tries failed, over how long (from the first
/// failure to now).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Failing {
    pub tries: u32,
    pub lasted: Duration,
}

/// The failures since the last success, and when the next is to be said.
#[derive(Debug, Clone, Copy, Default)]
pub struct Repeats {
    since: Option<BootInstant>,
    tries: u32,
    next: Option<BootInstant>,
    gap: Duration,
}

impl Repeats {
    /// One more failure, at `now`: the failures so far when this one is to
    /// be said, `None` when it is to be kept quiet.
    pub fn failed(&mut self, now: BootInstant) -> Option<Failing> {
        let since = *self.since.get_or_insert(now);
        self.tries = self.tries.saturating_add(1);
        if self.next.is_some_and(|next| now < next) {
            return None;
        }
        self.gap = match self.next {
            None => FIRST_GAP,
            Some(_) => (self.gap * 2).min(LONGEST_GAP),
        };
        self.next = Some(now + self.gap);
        Some(Failing {
            tries: self.tries,
            lasted: now.saturating_since(since),
        })
    }

    /// A success, at `now`: the failures before it, if any (to be said
    /// once), and the count starts over.
    pub fn succeeded(&mut self, now: BootInstant) -> Option<Failing> {
        let failing = self.so_far(now);
        *self = Repeats::default();
        failing
    }

    /// The failures since the last success, as of `now`: what giving up
    /// says.
    pub fn so_far(&self, now: BootInstant) -> Option<Failing> {
        Some(Failing {
            tries: self.tries,
            lasted: now.saturating_since(self.since?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> BootInstant {
        BootInstant::from_nanos(1_000_000_000_000 + ms * 1_000_000)
    }

    #[test]
    fn the_first_failure_is_said_then_at_doubling_intervals() {
        let mut repeats = Repeats::default();
        // A failure every 500ms for 14s, as a majority outage gives.
        let said: Vec<u64> = (0..28)
            .map(|i| i * 500)
            .filter(|&ms| repeats.failed(at(ms)).is_some())
            .collect();
        assert_eq!(said, [0, 1000, 3000, 7000]);
        assert_eq!(
            repeats.succeeded(at(14_000)),
            Some(Failing {
                tries: 28,
                lasted: Duration::from_secs(14)
            })
        );
        // Over: the next failure is said at once, and a success without
        // failures says nothing.
        assert_eq!(repeats.succeeded(at(15_000)), None);
        assert_eq!(
            repeats.failed(at(16_000)),
            Some(Failing {
                tries: 1,
                lasted: Duration::ZERO
            })
        );
    }

    #[test]
    fn the_intervals_stop_growing_at_a_minute() {
        let mut repeats = Repeats::default();
        let said: Vec<u64> = (0..=600)
            .map(|s| s * 1000)
            .filter(|&ms| repeats.failed(at(ms)).is_some())
            .collect();
        assert_eq!(
            said,
            [0, 1, 3, 7, 15, 31, 63, 123, 183, 243, 303, 363, 423, 483, 543].map(|s| s * 1000)
        );
        assert_eq!(repeats.so_far(at(600_000)).map(|f| f.tries), Some(601));
    }
}
