//! The arithmetic of Redlock: how many servers must agree, how much the
//! servers' clocks may drift, how long a lock can be relied upon, and when a
//! round's outcome is certain, and why when no quorum could be had.

use std::time::Duration;

use crate::lock::error::{Failures, LockError};
use crate::lock::guard::Guarded;
use crate::lock::key::LockKey;
use crate::lock::server_url::ServerSpec;

/// The number of servers that must agree: a strict majority of the servers
/// that are *configured*, whatever number of them happens to answer.
pub fn quorum(servers: usize) -> usize {
    servers / 2 + 1
}

/// How much the servers' clocks may run faster than ours over `ttl`: 1% plus
/// 2ms for the granularity of Redis' expiry.
pub fn drift(ttl: Duration) -> Duration {
    ttl / 100 + Duration::from_millis(2)
}

/// How long a lock taken with `ttl` in `elapsed` can be relied upon; zero
/// means it cannot be relied upon at all.
pub fn validity(ttl: Duration, elapsed: Duration) -> Duration {
    ttl.saturating_sub(elapsed.saturating_add(drift(ttl)))
}

/// A TTL in whole milliseconds for PX and PEXPIRE, rounded up so that a lock
/// never gets a shorter TTL than asked.
pub fn ttl_millis(ttl: Duration) -> u64 {
    u64::try_from(ttl.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX)
}

/// Servers that answered but that the restart guard keeps out of quorums.
#[derive(Debug, Clone, Copy)]
pub(in crate::lock) struct KeptOut<'a> {
    /// The guard they were judged by.
    pub guard: Duration,
    /// Each of them, when it counts again, and why it is kept out.
    pub kept: &'a [(ServerSpec, Guarded)],
}

/// The one decision of why a round of `total` servers lacks a quorum, for
/// every operation: `Restarting` when servers kept out by the restart guard
/// are among the reasons (whoever asks passes them in `kept_out`; the
/// failures come along), else `Refused` when enough servers refuse us that
/// no majority is ever possible, else `NoQuorum`.
pub(in crate::lock) fn no_quorum(
    key: &LockKey,
    (total, quorum): (usize, usize),
    kept_out: Option<KeptOut<'_>>,
    failures: Failures,
) -> LockError {
    let soonest = kept_out.and_then(|k| Some((k, k.kept.iter().map(|(_, g)| g.left).min()?)));
    match soonest {
        Some((kept_out, again_in)) => LockError::Restarting {
            key: key.clone(),
            restarting: kept_out.kept.len(),
            total,
            guard: kept_out.guard,
            again_in,
            causes: kept_out
                .kept
                .iter()
                .map(|(server, g)| (server.clone(), g.cause))
                .collect(),
            failures,
        },
        None => failures.into_error(key, total, quorum),
    }
}

/// The counts of a yes/no round (acquire, extend, release) against the
/// quorum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::lock) struct Tally {
    pub total: usize,
    pub quorum: usize,
    pub yes: usize,
    pub no: usize,
    pub failed: usize,
}

impl Tally {
    pub fn answered(&self) -> usize {
        self.yes + self.no
    }

    /// Failed or not (yet) heard from.
    pub fn unanswered(&self) -> usize {
        self.total - self.answered()
    }

    pub fn pending(&self) -> usize {
        self.unanswered() - self.failed
    }

    pub fn succeeded(&self) -> bool {
        self.yes >= self.quorum
    }

    /// Success is certain once a quorum said yes. Failure is certain once a
    /// quorum can no longer say yes; it is reported as soon as it is also
    /// clear whether the servers answered (busy) or not (no quorum).
    pub fn is_decided(&self) -> bool {
        let can_still_answer = self.answered() + self.pending();
        self.succeeded()
            || (self.yes + self.pending() < self.quorum
                && (self.answered() >= self.quorum || can_still_answer < self.quorum))
    }

    /// Whether the token can no longer hold a majority, even counting the
    /// servers that did not answer.
    pub fn cannot_hold(&self) -> bool {
        self.yes + self.unanswered() < self.quorum
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lock::GuardCause;

    #[test]
    fn quorum_is_a_strict_majority_of_configured_servers() {
        let expected = [(1, 1), (2, 2), (3, 2), (4, 3), (5, 3), (6, 4), (7, 4)];
        for (servers, needed) in expected {
            assert_eq!(quorum(servers), needed, "{servers} servers");
        }
    }

    #[test]
    fn validity_subtracts_elapsed_and_drift() {
        let ttl = Duration::from_secs(10);
        assert_eq!(drift(ttl), Duration::from_millis(102));
        assert_eq!(
            validity(ttl, Duration::from_millis(98)),
            Duration::from_millis(9800)
        );
        assert_eq!(validity(ttl, Duration::from_secs(10)), Duration::ZERO);
        assert_eq!(
            validity(Duration::from_millis(2), Duration::ZERO),
            Duration::ZERO
        );
    }

    #[test]
    fn ttl_millis_round_up() {
        assert_eq!(ttl_millis(Duration::from_micros(1)), 1);
        assert_eq!(ttl_millis(Duration::from_millis(30)), 30);
        assert_eq!(ttl_millis(Duration::from_micros(30_001)), 31);
        assert_eq!(ttl_millis(Duration::ZERO), 0);
    }

    #[test]
    fn no_quorum_is_restarting_only_when_servers_were_kept_out() {
        use crate::lock::core::servers::ServerError;
        use crate::lock::server_url::ServerSpec;
        let key = LockKey::new(b"k".to_vec());
        let failed = |refused: bool| {
            let spec = ServerSpec::parse("127.0.0.1:7000").unwrap();
            let err = match refused {
                true => ServerError::Refused("NOAUTH".into()),
                false => ServerError::Failed("down".into()),
            };
            Failures(vec![(spec, err)])
        };
        let server = |port: u16| ServerSpec::parse(&format!("127.0.0.1:{port}")).unwrap();
        let kept = [
            (
                server(7001),
                Guarded {
                    left: Duration::from_secs(3),
                    cause: GuardCause::Replication,
                },
            ),
            (
                server(7002),
                Guarded {
                    left: Duration::from_secs(1),
                    cause: GuardCause::Unseen,
                },
            ),
        ];
        let kept_out = KeptOut {
            guard: Duration::from_secs(30),
            kept: &kept,
        };
        match no_quorum(&key, (3, 2), Some(kept_out), failed(false)) {
            LockError::Restarting {
                restarting: 2,
                again_in,
                causes,
                failures,
                ..
            } => {
                assert_eq!((again_in, failures.0.len()), (Duration::from_secs(1), 1));
                let causes: Vec<GuardCause> = causes.into_iter().map(|(_, c)| c).collect();
                assert_eq!(causes, [GuardCause::Replication, GuardCause::Unseen]);
            }
            other => panic!("{other:?}"),
        }
        let nobody = KeptOut {
            kept: &[],
            ..kept_out
        };
        let error = no_quorum(&key, (3, 2), Some(nobody), failed(false));
        assert!(
            matches!(error, LockError::NoQuorum { failed: 1, .. }),
            "{error:?}"
        );
        let error = no_quorum(&key, (1, 1), None, failed(true));
        assert!(
            matches!(error, LockError::Refused { refused: 1, .. }),
            "{error:?}"
        );
    }

    fn tally(total: usize, yes: usize, no: usize, failed: usize) -> Tally {
        Tally {
            total,
            quorum: quorum(total),
            yes,
            no,
            failed,
        }
    }

    #[test]
    fn a_round_is_decided_as_soon_as_the_outcome_is_certain() {
        assert!(tally(3, 2, 0, 0).is_decided(), "quorum reached");
        assert!(!tally(3, 1, 0, 0).is_decided(), "could still succeed");
        assert!(tally(3, 0, 2, 0).is_decided(), "busy on a majority");
        assert!(
            !tally(3, 0, 1, 1).is_decided(),
            "busy or no quorum: wait for the last"
        );
        assert!(
            tally(3, 0, 1, 2).is_decided(),
            "everyone answered or failed"
        );
        assert!(
            tally(5, 0, 0, 3).is_decided(),
            "no quorum can answer any more"
        );
        assert!(
            !tally(5, 0, 1, 2).is_decided(),
            "busy or no quorum: wait for the rest"
        );
        assert!(!tally(5, 2, 0, 0).is_decided());
        assert!(tally(5, 1, 2, 2).is_decided());
    }
}
