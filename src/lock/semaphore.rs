//! Counting semaphores (`--limit K`): K holders at once, built from K
//! Redlock mutexes, the "slots" `NAME#0` … `NAME#K-1`. A client holds one
//! slot, taken as any lock is taken (mutex.rs), so each slot keeps the
//! mutual exclusion, the restart guard and the validity rules of a lock, and
//! at most K clients hold a slot at once. A per-server counter would not do:
//! with N servers that each admit K, up to almost 2K clients could each hold
//! a majority.
//!
//! `--limit 1` is the slot `NAME#0`, not the lock `NAME`: the key a client
//! holds depends only on the name and the slot.
//!
//! # One K per semaphore
//! Clients that passed different K shared the slots they had in common,
//! which let more than the smaller K in (3 × `--limit 3` and 1 ×
//! `--limit 4` made 4 holders). So each server records K beside the slots
//! (`NAME\0limit`, limit.lua): the script that takes a slot refuses a K
//! other than the one recorded (a refusal: exit 78), and writes it where
//! it takes the slot; taking and extending a slot keep the record for at
//! least the TTL. While a holder holds a slot on a majority, that majority
//! records its K, and any majority another K could take meets it: no
//! client with another K can hold a slot beside it. The record lapses with
//! the last slot held, and K may change after that.
//!
//! # Waiting, and the line
//! A waiter tries the slots in a random order, so that clients that arrive
//! together spread over the free slots; it listens for the release of ANY
//! slot (one subscription per server, to every slot's channel), and polls
//! in between as a lock's waiter does.
//!
//! Each slot has the line a lock has (queue.lua). A semaphore waiter stands
//! in EVERY slot's line with ONE ticket (drawn after its first pass failed,
//! by the servers' clocks): every server orders tickets the same way, so
//! the earliest semaphore waiter is first in line on every slot at once, and
//! the next slot freed, whichever it is, goes to it; a release names it, so
//! only it wakes. It then leaves every line, which announces the next
//! waiter on every slot still free. So waiters are served in arrival order
//! and a client that just released cannot overtake them (it stands in no
//! line and the script lets it in only while nobody does). No waiter is
//! ever stuck behind a line on every slot: the first in line of a slot is
//! either the earliest semaphore waiter (who can take any freed slot) or a
//! waiter on that one slot by its name (`acquire NAME#2`), and a waiter
//! that stops coming back lapses from every line after a linger. The line
//! only ever keeps a caller out, so mutual exclusion per slot is unchanged.

use std::time::Duration;

use super::core::attempt::{Attempter, Failed, InFlight, Next};
use super::core::lease::{Lease, Released};
use super::core::quorum::quorum;
use super::core::redlock::Redlock;
use super::core::servers::ServerError;
use super::core::take::Take;
use super::error::{Failures, LockError};
use super::key::{LockKey, Token};
use super::queue::Ticket;
use super::slot::Semaphore;

/// One attempt on each slot, in a random order, each with a fresh token,
/// until one is taken, or until an attempt shows that no majority can
/// answer for any slot: the servers that did not answer for one slot (hung,
/// down, kept out by the restart guard) are the same for the next, and each
/// further slot would wait out the server timeout again. That attempt's
/// error is the pass's: the servers, not the slots, are why.
pub(super) async fn pass(
    redlock: &Redlock,
    take: &Take,
    semaphore: &Semaphore,
    ticket: Option<&Ticket>,
    in_flight: &InFlight,
) -> Result<Lease, Failed> {
    let mut busy = None;
    let mut last = None;
    let mut clock = None;
    for index in random_order(semaphore.limit) {
        let key = semaphore.slot_key(index);
        let token = Token::generate();
        in_flight.set(key.clone(), token.clone());
        let limit = Some(semaphore.limit_record());
        let (outcome, servers_clock, _) = redlock
            .attempt_in_line(
                &key,
                &token,
                take,
                Attempter {
                    ticket,
                    limit,
                    plain_text: false,
                },
            )
            .await;
        clock = clock.or(servers_clock);
        match outcome {
            Ok(lease) => {
                return Ok(Lease {
                    slot: Some(semaphore.slot(index)),
                    ..lease
                })
            }
            Err(error @ LockError::Busy { .. }) => busy = Some(error),
            Err(error) if no_majority_can_answer(&error) => {
                return Err(Failed::Transient(error, clock, Next::AfterAPause))
            }
            Err(error) if error.is_transient() => last = Some(error),
            Err(error) => return Err(Failed::Final(error)),
        }
    }
    if let Some(LockError::Busy { every_slot, .. }) = busy.as_mut() {
        *every_slot = Some(Box::new(semaphore.clone()));
    }
    let error = busy.or(last).expect("a semaphore has at least one slot");
    Err(Failed::Transient(error, clock, Next::AfterAPause))
}

/// Whether a failed attempt on one slot says that no slot can be taken
/// now: the servers that could not answer at all (no answer in time,
/// unreachable) or that the restart guard keeps out leave fewer than a
/// majority. Both are facts about a server, whatever the key; a failure
/// that may be the key's own (an error reply) is not counted.
fn no_majority_can_answer(error: &LockError) -> bool {
    let down = |failures: &Failures| {
        failures
            .0
            .iter()
            .filter(|(_, err)| {
                matches!(
                    err,
                    ServerError::Timeout(_)
                        | ServerError::Unreachable(_)
                        | ServerError::NoAnswerYet
                )
            })
            .count()
    };
    let (total, out) = match error {
        LockError::NoQuorum {
            total, failures, ..
        } => (*total, down(failures)),
        LockError::Restarting {
            total,
            restarting,
            failures,
            ..
        } => (*total, restarting + down(failures)),
        _ => return false,
    };
    total.saturating_sub(out) < quorum(total)
}

/// 0 … limit-1, shuffled (Fisher–Yates; the order needs no cryptographic
/// quality, and a failure of the generator leaves it in order).
fn random_order(limit: u32) -> Vec<u32> {
    let mut order: Vec<u32> = (0..limit).collect();
    let mut bytes = vec![0u8; 4 * order.len()];
    let _ = getrandom::fill(&mut bytes);
    for i in (1..order.len()).rev() {
        let word = u32::from_le_bytes(bytes[4 * i..4 * i + 4].try_into().expect("4 bytes"));
        let j = (word as usize) % (i + 1);
        order.swap(i, j);
    }
    order
}

impl Redlock {
    /// Releases the slot of `semaphore` that `token` holds, whichever it
    /// is: compare-and-delete makes trying each slot safe, since a token
    /// (128 random bits) holds at most one. Returns the slot's key and the
    /// release. When no slot is held by it, the error is the first slot's
    /// that could not say (no quorum), else the last slot's "not held";
    /// once a slot shows that no majority can answer, the slots after it
    /// are not tried (each would wait out the server timeout again).
    pub async fn release_slot(
        &self,
        semaphore: &Semaphore,
        token: &Token,
    ) -> Result<(LockKey, Released), LockError> {
        let mut unsure = None;
        let mut not_held = None;
        for key in semaphore.slot_keys() {
            // The token is the user's: a reader's token on a slot's key
            // (`acquire --shared 'NAME#0'`) releases too, as before.
            match self.release(&key, token).await {
                Ok(released) => return Ok((key, released)),
                Err(error @ LockError::NotHeld { .. }) => not_held = Some(error),
                Err(error) if no_majority_can_answer(&error) => return Err(unsure.unwrap_or(error)),
                Err(error) => {
                    unsure.get_or_insert(error);
                }
            }
        }
        Err(unsure
            .or(not_held)
            .expect("a semaphore has at least one slot"))
    }

    /// Extends the slot of `semaphore` that `token` holds, as
    /// [`Self::release_slot`] finds it; extend never re-creates a key, so
    /// trying a slot the token does not hold changes nothing.
    pub async fn extend_slot(
        &self,
        semaphore: &Semaphore,
        token: &Token,
        ttl: Duration,
    ) -> Result<Lease, LockError> {
        let mut unsure = None;
        let mut not_held = None;
        for index in 0..semaphore.limit {
            let key = semaphore.slot_key(index);
            let slot = semaphore.slot(index);
            match self.extend_as(&key, token, ttl, (None, Some(&slot))).await {
                Ok(lease) => {
                    return Ok(Lease {
                        slot: Some(semaphore.slot(index)),
                        ..lease
                    })
                }
                Err(error @ LockError::NotHeld { .. }) => not_held = Some(error),
                Err(error) if no_majority_can_answer(&error) => return Err(unsure.unwrap_or(error)),
                Err(error) => {
                    unsure.get_or_insert(error);
                }
            }
        }
        Err(unsure
            .or(not_held)
            .expect("a semaphore has at least one slot"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_the_name_and_an_index_under_the_same_prefix() {
        let semaphore = Semaphore::new(LockKey::prefixed(b"app:", b"build"), 3);
        let keys = semaphore.slot_keys();
        assert_eq!(keys.len(), 3);
        assert_eq!(keys[0].bytes(), b"app:build#0");
        assert_eq!(keys[2].name(), b"build#2");
        let one = Semaphore::new(LockKey::new(b"x".to_vec()), 1);
        assert_eq!(one.slot_key(0).bytes(), b"x#0");
    }

    #[test]
    fn a_pass_ends_when_the_servers_that_cannot_answer_leave_no_majority() {
        use super::super::server_url::ServerSpec;
        let key = LockKey::new(b"pool#3".to_vec());
        let failures = |errors: &[ServerError]| {
            Failures(
                errors
                    .iter()
                    .enumerate()
                    .map(|(i, err)| {
                        (
                            ServerSpec::parse(&format!("h:{}", 7000 + i)).unwrap(),
                            err.clone(),
                        )
                    })
                    .collect(),
            )
        };
        let no_quorum = |errors: &[ServerError]| LockError::NoQuorum {
            key: key.clone(),
            failed: errors.len(),
            total: 5,
            quorum: 3,
            failures: failures(errors),
            token: None,
        };
        let timeout = ServerError::Timeout(Duration::from_millis(250));
        let down = ServerError::Unreachable("connection refused".into());
        let script = ServerError::Failed("WRONGTYPE".into());
        // 3 of 5 silent or unreachable: no slot can have a majority.
        assert!(no_majority_can_answer(&no_quorum(&[
            timeout.clone(),
            down.clone(),
            ServerError::NoAnswerYet
        ])));
        // 2 of 5: the next slot may still be taken.
        assert!(!no_majority_can_answer(&no_quorum(&[
            timeout.clone(),
            down
        ])));
        // An error reply may be this key's own: it does not count.
        assert!(!no_majority_can_answer(&no_quorum(&[
            timeout.clone(),
            timeout.clone(),
            script
        ])));
        // Kept out by the restart guard counts, with the silent ones.
        let restarting = |restarting: usize, errors: &[ServerError]| LockError::Restarting {
            key: key.clone(),
            restarting,
            total: 5,
            guard: Duration::from_secs(30),
            again_in: Duration::from_secs(1),
            causes: Vec::new(),
            failures: failures(errors),
        };
        assert!(no_majority_can_answer(&restarting(
            2,
            std::slice::from_ref(&timeout)
        )));
        assert!(!no_majority_can_answer(&restarting(2, &[])));
        // Nor does a round that was only slow.
        assert!(!no_majority_can_answer(&LockError::TooSlow {
            key: key.clone(),
            elapsed: Duration::from_secs(1),
            ttl: Duration::from_secs(1),
        }));
    }

    #[test]
    fn the_order_is_every_slot_once_and_not_always_the_same() {
        let orders: Vec<Vec<u32>> = (0..50).map(|_| random_order(5)).collect();
        for order in &orders {
            let mut sorted = order.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, vec![0, 1, 2, 3, 4]);
        }
        assert!(orders.iter().any(|o| *o != orders[0]), "{orders:?}");
        assert_eq!(random_order(1), vec![0]);
    }
}
