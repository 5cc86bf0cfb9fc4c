//! `--supersede`: among the waiters of one lock that all pass it, a newer
//! waiter replaces the older ones, as GitHub Actions' `concurrency` keeps
//! one pending job per group (supersede.lua; docs/safety.md, "Supersede").
//!
//! "Newer" is the order a waiter gives (`--serial N`, a CI run number), or
//! by default when it arrived: its ticket's score, the servers' clock as
//! its first attempt saw it (queue.rs). A superseding waiter registers
//! beside the lock on every attempt it makes in line; where it finds an
//! older one in line, it marks it superseded, takes it out of the line and
//! wakes it on its own channel; where it finds a newer one, or its own
//! mark, it is answered "superseded" and leaves. Any server saying so ends
//! the wait: leaving is always safe for mutual exclusion, and a wrong
//! answer (a server that missed calls under a partition) only costs a run.
//! A holder makes no attempts and is never superseded; a waiter without
//! the flag has no entry, so it neither supersedes nor is superseded.

use super::holder::Holder;
use super::key::{supersede_key, LockKey};
use super::queue::Ticket;
use super::scripts::SupersedeArgs;

/// `--supersede [--serial N]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Supersede {
    /// `--serial N`: the waiter's own order (`None`: by arrival).
    pub serial: Option<u64>,
}

/// Who superseded a waiter (or waits, superseding the older ones), as the
/// servers keep it: `ORDER KIND PID HOST` (supersede.lua's WHO).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Superseder {
    /// Its `--serial`, or when it arrived (ms since the Unix epoch, by the
    /// servers' clocks).
    pub order: u64,
    /// Whether `order` is a `--serial`.
    pub by_serial: bool,
    pub pid: u32,
    pub host: String,
}

impl Superseder {
    /// The waiter recorded as `record` with `ticket`, as the servers keep
    /// it.
    fn of(record: Option<&Holder>, supersede: Supersede, ticket: &Ticket) -> Superseder {
        let (pid, host) = record.map_or((0, String::new()), |holder| {
            (holder.pid, holder.host.clone())
        });
        Superseder {
            order: supersede.serial.unwrap_or(ticket.score),
            by_serial: supersede.serial.is_some(),
            pid,
            host,
        }
    }

    /// A waiter recorded as `record`, as it says who it is before it has a
    /// place in line (its order is its serial, or 0 by arrival).
    pub fn waiter(record: Option<&Holder>, supersede: Supersede) -> Superseder {
        let unplaced = Ticket {
            score: 0,
            id: String::new(),
            past_a_split_line: false,
        };
        Superseder::of(record, supersede, &unplaced)
    }

    /// `ORDER KIND PID HOST`, the order in 20 digits so that the servers
    /// compare the text as the number.
    pub fn encode(&self) -> String {
        let kind = if self.by_serial { "serial" } else { "arrival" };
        format!("{:020} {kind} {} {}", self.order, self.pid, self.host)
    }

    /// What [`Self::encode`] wrote, or `None` for anything else.
    pub(super) fn decode(text: &[u8]) -> Option<Superseder> {
        let text = std::str::from_utf8(text).ok()?;
        let mut parts = text.splitn(4, ' ');
        let order = parts.next().filter(|o| o.len() == 20)?.parse().ok()?;
        let by_serial = match parts.next()? {
            "serial" => true,
            "arrival" => false,
            _ => return None,
        };
        let pid = parts.next()?.parse().ok()?;
        let host = parts.next()?.to_owned();
        Some(Superseder {
            order,
            by_serial,
            pid,
            host,
        })
    }
}

/// What an attempt on `key` by a waiter with `ticket` passes for
/// `supersede` (`None`: nothing, for a caller that does not pass it).
/// `channel`: the lock's wake-up channel (notify.rs), on which older
/// waiters are woken when it supersedes them (empty: not woken).
pub(super) fn call(
    key: &LockKey,
    (supersede, record): (Option<Supersede>, Option<&Holder>),
    ticket: Option<&Ticket>,
    channel: impl FnOnce() -> Vec<u8>,
) -> Option<SupersedeArgs> {
    let supersede = supersede?;
    // The first attempt has no ticket yet: nothing is kept (acquire.lua
    // reads WHO only with a ticket), but the mode, and so the script's
    // text, is the one of every attempt: WHO is never empty (SWITCHES).
    let who = match ticket {
        Some(ticket) => Superseder::of(record, supersede, ticket),
        None => Superseder::waiter(record, supersede),
    }
    .encode();
    Some(SupersedeArgs {
        key: supersede_key(key),
        who,
        channel: channel(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_attempt_of_a_superseding_waiter_passes_who_it_is() {
        let key = LockKey::new(b"deploy".to_vec());
        let supersede = Supersede { serial: None };
        let first = call(&key, (Some(supersede), None), None, Vec::new).unwrap();
        assert!(!first.who.is_empty(), "the same mode as the next attempts");
        assert_eq!(first.key, b"deploy\0supersede");
        let ticket = Ticket::draw(Some(1_700_000_000_000), false);
        let next = call(&key, (Some(supersede), None), Some(&ticket), || {
            b"c".to_vec()
        })
        .unwrap();
        let who = Superseder::decode(next.who.as_bytes()).unwrap();
        assert_eq!((who.order, who.by_serial), (1_700_000_000_000, false));
        assert_eq!(next.channel, b"c");
        assert!(call(&key, (None, None), Some(&ticket), Vec::new).is_none());
    }

    #[test]
    fn who_superseded_reads_back_as_written() {
        let who = Superseder {
            order: 42,
            by_serial: true,
            pid: 7,
            host: "ci runner 3".into(),
        };
        assert_eq!(who.encode(), "00000000000000000042 serial 7 ci runner 3");
        assert_eq!(Superseder::decode(who.encode().as_bytes()), Some(who));
        let arrival = Superseder {
            order: u64::MAX,
            by_serial: false,
            pid: 0,
            host: String::new(),
        };
        assert_eq!(
            Superseder::decode(arrival.encode().as_bytes()),
            Some(arrival)
        );
        for wrong in ["", "42 serial 7 h", "00000000000000000042 other 7 h", "x"] {
            assert_eq!(Superseder::decode(wrong.as_bytes()), None, "{wrong}");
        }
    }

    #[test]
    fn a_higher_order_is_a_later_text() {
        let at = |order| Superseder {
            order,
            by_serial: true,
            pid: 1,
            host: "h".into(),
        };
        assert!(at(9).encode() < at(10).encode());
        assert!(at(10).encode() < at(1_700_000_000_000).encode());
    }
}
