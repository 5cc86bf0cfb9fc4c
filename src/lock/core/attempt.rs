//! One attempt's bookkeeping, shared by the retry loop (retry.rs) and the
//! attempts it makes: a round on a lock, or a pass over a semaphore's
//! slots (semaphore.rs).

use std::sync::Mutex;

use crate::lock::error::LockError;
use crate::lock::key::{LockKey, Token};
use crate::lock::queue::Ticket;
use crate::lock::slot::LimitRecord;

/// Why an attempt (on a lock, or a pass over a semaphore's slots) took
/// nothing.
pub(in crate::lock) enum Failed {
    /// Worth another attempt: the error to report, the servers' clock as
    /// the attempt saw it, and how the next attempt goes.
    Transient(LockError, Option<u64>, Next),
    Final(LockError),
}

/// How the next attempt goes, as the failed one's answers say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::lock) enum Next {
    /// After the pause between attempts (or a wake-up).
    AfterAPause,
    /// At once, past a split line: the lock is free now (lock/line.rs).
    PastASplitLine,
    /// At once, as acquire.lua whole: the plain text found a line, readers
    /// or the line's step-aside count beside a free lock (`Crowded`), which
    /// only the whole text reads.
    WholeText,
}

/// Who attempts a key, and how: the waiter's ticket if it stands in line,
/// a semaphore slot's limit record, and whether the attempt may go as the
/// plain text (acquire_plain.lua).
pub(in crate::lock) struct Attempter<'a> {
    pub ticket: Option<&'a Ticket>,
    pub limit: Option<LimitRecord>,
    pub plain_text: bool,
}

/// The key and token of the attempt in flight, and the caller's ticket
/// once it stands in line: what must be cleaned up however the wait ends.
#[derive(Debug, Default)]
pub(in crate::lock) struct InFlight(Mutex<InFlightState>);

/// The key and token of the attempt in flight; the waiter's ticket.
type InFlightState = (Option<(LockKey, Token)>, Option<Ticket>);

impl InFlight {
    fn state(&self) -> std::sync::MutexGuard<'_, InFlightState> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(in crate::lock) fn set(&self, key: LockKey, token: Token) {
        self.state().0 = Some((key, token));
    }

    pub(in crate::lock) fn attempt(&self) -> Option<(LockKey, Token)> {
        self.state().0.clone()
    }

    pub(in crate::lock) fn stand_in_line(&self, ticket: Ticket) {
        self.state().1 = Some(ticket);
    }

    pub(in crate::lock) fn ticket(&self) -> Option<Ticket> {
        self.state().1.clone()
    }

    /// Whether the next attempt goes past a split line (lock/line.rs).
    pub(in crate::lock) fn past_a_split_line(&self, split: bool) {
        if let Some(ticket) = self.state().1.as_mut() {
            ticket.past_a_split_line = split;
        }
    }
}
