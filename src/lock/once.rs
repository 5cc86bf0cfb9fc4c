//! A run once per period or key (`exec --once-per DUR`, `--once KEY`): the
//! done mark beside the lock, and how the client agrees with every server
//! on which run it is.
//!
//! 1. Before its first attempt the client asks every server's clock and
//!    takes the median of those that answer: that clock, not this host's,
//!    says which period it is (`floor((ms - offset) / period)`, periods
//!    aligned to the Unix epoch, UTC). The id (`per:PERIOD:OFFSET:N`, or
//!    `key:KEY`) is passed to every server, so all agree on it even at a
//!    period's edge, and it stays the run's for all its attempts.
//! 2. Each attempt reads the mark `NAME\0done` in the same acquire.lua call
//!    as its `SET NX`. A server whose mark holds the id answers
//!    `{"done", mark}` and takes nothing, and so does one whose mark is of
//!    a later period of the same DUR and shift (this run started before
//!    the edge); if any server that answered says so, the caller skips and
//!    undoes what its attempt took (redlock.rs).
//! 3. After the command exited 0, and before the lock is released, the
//!    holder writes the mark (mark_done.lua) wherever the lock still holds
//!    its token; it counts only on a majority. A round that reaches none
//!    is tried again on the servers that could not answer, while the lock
//!    is valid ([`Redlock::mark_done`]).
//!
//! Why it holds: the mark reaches a majority before the lock is released;
//! any later attempt that takes a majority meets one of those servers,
//! which answers "done". A second run in one period needs every server of
//! some majority to have lost the mark (docs/safety.md).

use std::sync::Arc;
use std::time::Duration;

use super::core::quorum::{drift, ttl_millis};
use super::core::redlock::Redlock;
use super::core::round::{round, Progress, Replies};
use super::core::servers::{Connection, Server};
use super::done_mark::{mark_key, most_held, DoneMark, Lapse, Once, OnceRun};
use super::error::{Failures, LockError, Said, TokenOp, TokenRound};
use super::holder::Holder;
use super::holder::Recorded;
use super::inspection::{Inspection, Verdict};
use super::key::{LockKey, Token};
use super::scripts::{MarkDone, TokenReply};
use super::server_url::ServerSpec;
use crate::clock::BootInstant;

/// Where a mark was written.
#[derive(Debug, Clone)]
pub struct Marked {
    /// The servers that hold it now.
    pub on: Vec<ServerSpec>,
    pub total: usize,
}

/// What `redlock done` marks: the run a token's `acquire --once-per` or
/// `--once` recorded beside the lock, and its holder.
#[derive(Debug, Clone)]
pub struct OnceHeld {
    pub run: OnceRun,
    pub holder: Holder,
    /// Until when a majority of the servers hold the token, by their PTTLs
    /// as read, less the clocks' drift: how long the mark may be retried.
    pub until: BootInstant,
}

impl Redlock {
    /// The run of `once` on `key` now: for a period, by the median of the
    /// clocks of the servers that answer `TIME`. Fewer than a majority of
    /// clocks is an error, not this host's clock: hosts whose clocks
    /// differ would disagree on the period near its edge (`Refused` when
    /// the servers deny `TIME`, else `NoQuorum`).
    pub async fn once_run(&self, key: &LockKey, once: &Once) -> Result<OnceRun, LockError> {
        let server_ms = match once {
            Once::Key(_) => 0,
            Once::Per { .. } => self.servers_clock(key).await?,
        };
        Ok(once.run_at(server_ms, self.restart_guard))
    }

    /// The median of the servers' clocks, in ms, once a majority answered
    /// `TIME`.
    async fn servers_clock(&self, key: &LockKey) -> Result<u64, LockError> {
        let request = |mut connection: Connection| async move {
            let (secs, micros): (u64, u64) = connection.query(&redis::cmd("TIME")).await?;
            Ok(secs.saturating_mul(1000).saturating_add(micros / 1000))
        };
        let replies = round(&self.servers, request, |_| Progress::Undecided).await;
        let mut clocks: Vec<u64> = (replies.answers.iter())
            .filter_map(|answer| answer.as_ref()?.as_ref().ok().copied())
            .collect();
        if clocks.len() < self.quorum {
            let failures = Failures(replies.failures(&self.servers));
            return Err(failures.into_error(key, self.len(), self.quorum));
        }
        clocks.sort_unstable();
        Ok(clocks[clocks.len() / 2])
    }

    /// The done mark beside `key` that most servers hold (the latest of
    /// those on as many), and on how many: what `status` shows. Every
    /// server or its timeout; one that fails counts for none.
    pub async fn done_mark(&self, key: &LockKey) -> Option<(DoneMark, usize)> {
        let mark = mark_key(key);
        let request = move |mut connection: Connection| async move {
            let value: Option<Vec<u8>> = connection.query(redis::cmd("GET").arg(&mark)).await?;
            Ok(value.map(|value| DoneMark::read(&value)))
        };
        let replies = round(&self.servers, request, |_| Progress::Undecided).await;
        let marks: Vec<DoneMark> = (replies.answers.into_iter())
            .filter_map(|answer| answer?.ok()?)
            .collect();
        most_held(&marks)
    }

    /// `release --force --done`: deletes the done mark beside `key` on
    /// every server, so that the job can run again; the lock is left
    /// alone. On how many servers there was one, once a majority answered.
    pub async fn clear_done(&self, key: &LockKey) -> Result<usize, LockError> {
        let mark = mark_key(key);
        let request = move |mut connection: Connection| async move {
            connection.query::<u64>(redis::cmd("DEL").arg(&mark)).await
        };
        let replies = round(&self.servers, request, |_| Progress::Undecided).await;
        let answered: Vec<u64> = (replies.answers.iter())
            .filter_map(|answer| answer.as_ref()?.as_ref().ok().copied())
            .collect();
        if answered.len() < self.quorum {
            return Err(self.no_quorum(key, &replies));
        }
        Ok(answered.iter().filter(|&&deleted| deleted > 0).count())
    }

    /// The run `acquire --once-per`/`--once` recorded beside `key` for
    /// `token` (`redlock done`), its holder, and until when the lock holds
    /// (by the servers' PTTLs): `Ok(None)` when a majority holds `token`
    /// but no record names a run; not held, or no quorum, when no majority
    /// holds it.
    pub async fn once_of(
        &self,
        key: &LockKey,
        token: &Token,
    ) -> Result<Option<OnceHeld>, LockError> {
        let asked = BootInstant::now();
        let inspection = self.inspect(key).await;
        let token = token.as_str().as_bytes();
        let holding = inspection.holding(token).len();
        if holding < self.quorum {
            return Err(match inspection.verdict() {
                Verdict::Unknown => inspection.no_quorum(),
                _ => not_held(key, &inspection, token),
            });
        }
        let held = (inspection.servers.iter())
            .filter_map(|server| {
                let state = server.state.as_ref().ok()?;
                let recorded = Recorded::parse(state.record.as_ref()?, None, token)?;
                let run = OnceRun::from_id(recorded.holder.once.as_ref()?, self.restart_guard)?;
                Some((run, recorded.holder))
            })
            .next()
            .map(|(run, holder)| OnceHeld {
                run,
                holder,
                until: asked + held_for(&inspection, token, self.quorum),
            });
        Ok(held)
    }

    /// Writes the done mark of `run` beside `key`, on every server where
    /// the lock still holds `token`, waiting for every server (or its
    /// timeout): the command ended with `status`, run by `holder`. A first
    /// round that reaches no majority is tried again on the servers that
    /// could not answer (no answer in time, unreachable, a passing error),
    /// never on those that said the token does not hold there, with a
    /// pause that doubles between rounds, until a majority holds the mark,
    /// those servers can no longer make one, or `until` (the lock's
    /// validity) comes within [`MARK_MARGIN`]. mark_done.lua writes only
    /// where the token still holds, so a round that comes late marks
    /// nothing it should not; nothing here extends the lock. `Ok` when a
    /// majority holds it; else not held (79) when the token can no longer
    /// hold a majority, or no quorum, with what each server said last.
    pub async fn mark_done(
        &self,
        (key, token): (&LockKey, &Token),
        run: &OnceRun,
        (status, holder): (i32, Option<&Holder>),
        until: BootInstant,
    ) -> Result<Marked, LockError> {
        let (lapse_at, lapse_after) = match run.lapse {
            Lapse::At(ms, margin) => (ms.to_string(), margin.to_string()),
            Lapse::After(keep) => (String::new(), ttl_millis(keep).to_string()),
        };
        let call = MarkDone {
            keys: self.keys_of(key),
            mark: mark_key(key),
            token: token.as_str().to_owned(),
            id: run.id.clone(),
            status,
            record: holder.map(|h| h.encode(token)).unwrap_or_default(),
            lapse: (lapse_at, lapse_after),
        };
        let mut replies = mark_round(&self.servers, &call, |_| Progress::Undecided).await;
        let mut pause = MARK_PAUSE_FIRST;
        while !replies.tally(self.quorum).succeeded() {
            let again = may_answer(&replies);
            if replies.tally(self.quorum).yes + again.len() < self.quorum {
                break;
            }
            // The next round starts after the pause, and ends before the
            // margin, or is not started.
            let last = until - MARK_MARGIN;
            if last.saturating_since(BootInstant::now()) <= pause {
                break;
            }
            tokio::time::sleep(pause).await;
            pause = pause.saturating_mul(2).min(MARK_PAUSE_MOST);
            if !self.mark_again(&mut replies, &again, &call, last).await {
                break;
            }
        }
        if replies.tally(self.quorum).succeeded() {
            return Ok(Marked {
                on: replies.yes_servers(&self.servers),
                total: self.len(),
            });
        }
        Err(self.not_held_or_no_quorum(key, &replies, TokenOp::MarkDone))
    }

    /// One more round of the mark `call` on the servers `again` (by index),
    /// their answers in place of what they said before in `replies`: it
    /// ends once the servers that hold the mark make a majority (the
    /// others get a round's grace, as after any decided round), or once
    /// every server answered or failed. `false` when `last` came first:
    /// the answers of that round are not counted.
    async fn mark_again(
        &self,
        replies: &mut Replies<TokenReply>,
        again: &[usize],
        call: &MarkDone,
        last: BootInstant,
    ) -> bool {
        let servers: Vec<Arc<Server>> = again
            .iter()
            .map(|&index| Arc::clone(&self.servers[index]))
            .collect();
        let (held, quorum) = (replies.tally(self.quorum).yes, self.quorum);
        let progress = move |more: &Replies<TokenReply>| match held + more.tally(quorum).yes {
            yes if yes >= quorum => Progress::Settled,
            _ => Progress::Undecided,
        };
        let left = last.saturating_since(BootInstant::now());
        match tokio::time::timeout(left, mark_round(&servers, call, progress)).await {
            Ok(more) => {
                replies.merge(again, more);
                true
            }
            Err(_) => false,
        }
    }
}

/// The first pause before a done mark's round is tried again; it doubles
/// after each round, up to [`MARK_PAUSE_MOST`].
const MARK_PAUSE_FIRST: Duration = Duration::from_millis(50);

/// The longest pause between two rounds of a done mark.
const MARK_PAUSE_MOST: Duration = Duration::from_millis(500);

/// How long before the lock's validity ends the rounds of a done mark
/// stop: the last one must have ended by then.
const MARK_MARGIN: Duration = Duration::from_millis(20);

/// One round of mark_done.lua's `call` on `servers`.
async fn mark_round(
    servers: &[Arc<Server>],
    call: &MarkDone,
    progress: impl FnMut(&Replies<TokenReply>) -> Progress,
) -> Replies<TokenReply> {
    let call = call.clone();
    let request = move |mut connection: Connection| async move { connection.invoke(&call).await };
    round(servers, request, progress).await
}

/// The servers (by index) whose mark another round may still write: those
/// that failed in a way that may pass (no answer in time, unreachable, a
/// passing error such as LOADING), not those that answered, nor refused.
fn may_answer(replies: &Replies<TokenReply>) -> Vec<usize> {
    (replies.answers.iter().enumerate())
        .filter(|(_, answer)| match answer {
            Some(Err(err)) => err.may_pass(),
            Some(Ok(_)) => false,
            None => true,
        })
        .map(|(index, _)| index)
        .collect()
}

/// How long from its reading `inspection` says that a majority of the
/// servers hold `token` (see [`majority_left`]).
fn held_for(inspection: &Inspection, token: &[u8], quorum: usize) -> Duration {
    let pttls = (inspection.servers.iter())
        .filter_map(|server| server.state.as_ref().ok())
        .filter(|state| state.value.as_deref() == Some(token) && state.restarting.is_none())
        .map(|state| state.pttl_ms);
    majority_left(pttls.collect(), quorum)
}

/// How long `pttls` (in ms, of the servers that hold a token) keep a
/// majority of `quorum`: the PTTL of the last server that makes one, less
/// the clocks' drift over that time; zero when they make none, and a key
/// without expiry (-1) counts for none.
fn majority_left(mut pttls: Vec<i64>, quorum: usize) -> Duration {
    pttls.sort_unstable_by(|a, b| b.cmp(a));
    let Some(&ms) = pttls.get(quorum.saturating_sub(1)) else {
        return Duration::ZERO;
    };
    let left = Duration::from_millis(u64::try_from(ms).unwrap_or(0));
    left.saturating_sub(drift(left))
}

/// Not held: `token` holds no majority, as each server said.
fn not_held(key: &LockKey, inspection: &Inspection, token: &[u8]) -> LockError {
    let said: Vec<(ServerSpec, Said)> = (inspection.servers.iter())
        .map(|server| {
            let said = match &server.state {
                Ok(state) if state.value.as_deref() == Some(token) => Said::Holds,
                Ok(state) if state.kind == "none" => Said::Gone,
                Ok(_) => Said::Taken,
                Err(err) => Said::Failed(err.clone()),
            };
            (server.server.clone(), said)
        })
        .collect();
    let held = said.iter().filter(|(_, s)| *s == Said::Holds).count();
    LockError::NotHeld {
        key: key.clone(),
        held,
        total: said.len(),
        quorum: inspection.quorum,
        failures: Failures(Vec::new()),
        round: Box::new(TokenRound {
            op: TokenOp::MarkDone,
            said,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::super::core::servers::ServerError;
    use super::*;

    #[test]
    fn a_mark_is_held_as_long_as_the_pttl_of_the_server_that_makes_a_majority() {
        let ms = Duration::from_millis;
        // Of 3000, 1000 and 5000 ms, a majority of 2 holds for 3000, less
        // the drift (1% and 2 ms).
        assert_eq!(majority_left(vec![3000, 1000, 5000], 2), ms(2968));
        assert_eq!(majority_left(vec![3000], 2), Duration::ZERO);
        // A key without expiry counts for none.
        assert_eq!(majority_left(vec![3000, -1], 2), Duration::ZERO);
    }

    #[test]
    fn a_mark_is_tried_again_where_the_server_could_not_answer_only() {
        let replies: Replies<TokenReply> = Replies::of(vec![
            Some(Ok(TokenReply::Held)),
            Some(Ok(TokenReply::Gone)),
            Some(Ok(TokenReply::Taken)),
            Some(Err(ServerError::Timeout(Duration::from_millis(200)))),
            Some(Err(ServerError::Unreachable("connection refused".into()))),
            Some(Err(ServerError::Failed("LOADING".into()))),
            Some(Err(ServerError::Refused("NOPERM".into()))),
            None,
        ]);
        assert_eq!(may_answer(&replies), [3, 4, 5, 7]);
    }
}
