//! Fencing tokens (`--fence`): a number that increases strictly from one
//! holder of a lock to the next, across N independent masters, for storage
//! to reject writes of a holder that paused past its validity (Kleppmann).
//!
//! 1. The acquire round also reads each server's counter for the lock
//!    (acquire.lua with ARGV[8]: `{"taken", counter}`, a persistent key
//!    beside the lock, KEYS[8]; missing = 0).
//! 2. Once a majority is locked, `t = max(counters of the servers that said
//!    yes) + 1`.
//! 3. A second round (raise_fence.lua) writes `counter = max(counter, t)`,
//!    only where the lock key still holds our token. It must succeed on a
//!    majority, within the validity, before `t` is handed out; otherwise the
//!    attempt fails and the lock is released everywhere.
//!
//! Why it holds: the servers written in step 3 are a majority, and were
//! written while our key was on them; the next holder locks a majority,
//! which meets ours on some server, and can take that server only after our
//! key left it, so after our write. Its step 1 reads at least `t` there,
//! and its token is at least `t + 1`. This assumes that the counters survive
//! on a majority (a restart without `appendfsync always` can lose them; the
//! restart guard brings back no lost counter). Taking the max of a per-server
//! INCR over one quorum instead is unsound: counters A=10, B=1, C=1; holder
//! 1 locks {A,B} and gets 11, holder 2 later locks {B,C} and gets 3. The
//! argument is checked by an exhaustive model (tests in this file).

use super::core::lease::Lease;
use super::core::redlock::{Patience, Redlock, SetReply};
use super::core::round::Replies;
use super::core::servers::Connection;
use super::error::{LockError, Said, TokenOp, TokenRound};
use super::scripts::{RaiseFence, MAX_FENCE};
use crate::clock::BootInstant;
use crate::test_hooks;

/// The token step 2 computes from the counters the locking servers read:
/// one more than the highest; `None` when that would pass [`MAX_FENCE`]
/// (a counter above it is that server's failure before it gets here:
/// fence.lua and the reply's parser refuse it).
pub(super) fn next_fence(counters: impl IntoIterator<Item = u64>) -> Option<u64> {
    (counters.into_iter().max().unwrap_or(0))
        .checked_add(1)
        .filter(|&fence| fence <= MAX_FENCE)
}

impl Redlock {
    /// Steps 2 and 3 for `lease`, which the acquire round `taken` granted:
    /// the lease with its fence, or why it has none (the caller then
    /// releases the lock everywhere). The validity stays counted from the
    /// acquire round's start, so what the user sees is what is left after
    /// this round too.
    pub(super) async fn fence(
        &self,
        lease: Lease,
        taken: &Replies<SetReply>,
    ) -> Result<Lease, LockError> {
        let counters = taken.answered().filter_map(|reply| match reply {
            SetReply::Taken(counter) => *counter,
            _ => None,
        });
        let Some(fence) = next_fence(counters) else {
            return Err(LockError::NoFenceLeft {
                key: lease.key.clone(),
                on: self.at_the_last_fence(taken),
            });
        };
        test_hooks::stop_before_fence();
        let call = RaiseFence {
            keys: self.keys_of(&lease.key),
            token: lease.token.as_str().to_owned(),
            fence,
        };
        let round = self.decided_round(
            Patience::Decided,
            move |mut connection: Connection| async move { connection.invoke(&call).await },
        );
        // Nothing may start once the validity is gone: a round still
        // waiting for a majority then is too late, whatever it would say.
        let replies = tokio::time::timeout(lease.deadline.remaining(), round).await;
        let too_slow = || LockError::TooSlow {
            key: lease.key.clone(),
            elapsed: lease.ttl - lease.deadline.remaining().min(lease.ttl),
            ttl: lease.ttl,
        };
        let replies = match replies {
            Ok(replies) => replies,
            Err(_) => return Err(too_slow()),
        };
        if !replies.tally(self.quorum).succeeded() {
            return Err(self.unfenced(&lease, self.token_said(&replies)));
        }
        if lease.deadline <= BootInstant::now() {
            return Err(too_slow());
        }
        Ok(Lease {
            fence: Some(fence),
            ..lease
        })
    }

    /// The servers whose counter is at the last fence redlock hands out.
    fn at_the_last_fence(&self, taken: &Replies<SetReply>) -> Vec<super::ServerSpec> {
        let last = |reply: &Option<Result<SetReply, _>>| {
            matches!(reply, Some(Ok(SetReply::Taken(Some(MAX_FENCE)))))
        };
        (taken.answers.iter().zip(&self.servers))
            .filter(|(reply, _)| last(reply))
            .map(|(_, server)| server.spec().clone())
            .collect()
    }

    /// The fencing write did not reach a majority: as a majority that
    /// could not be had (exit 69, and `-w` tries again), with what each
    /// server said.
    fn unfenced(&self, lease: &Lease, said: Vec<(super::ServerSpec, Said)>) -> LockError {
        let failed = said
            .iter()
            .filter(|(_, s)| *s != Said::Holds)
            .count()
            .max(usize::from(said.is_empty()) * self.len());
        LockError::NoQuorum {
            key: lease.key.clone(),
            failed,
            total: self.len(),
            quorum: self.quorum,
            failures: super::error::Failures(
                said.iter()
                    .filter_map(|(server, s)| match s {
                        Said::Failed(err) => Some((server.clone(), err.clone())),
                        _ => None,
                    })
                    .collect(),
            ),
            token: Some(Box::new(TokenRound {
                op: TokenOp::Fence,
                said,
            })),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fence_is_one_above_the_highest_counter_read() {
        assert_eq!(next_fence([]), Some(1));
        assert_eq!(next_fence([0, 0]), Some(1));
        assert_eq!(next_fence([10, 1]), Some(11));
        assert_eq!(next_fence([3, 7, 5]), Some(8));
        assert_eq!(next_fence([MAX_FENCE - 1, 1]), Some(MAX_FENCE));
        assert_eq!(next_fence([MAX_FENCE, 1]), None);
        assert_eq!(next_fence([u64::MAX]), None);
        assert_eq!(MAX_FENCE, 9_223_372_036_854_775_806);
    }
}
