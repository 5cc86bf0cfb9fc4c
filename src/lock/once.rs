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
//!    its token; it counts only on a majority.
//!
//! Why it holds: the mark reaches a majority before the lock is released;
//! any later attempt that takes a majority meets one of those servers,
//! which answers "done". A second run in one period needs every server of
//! some majority to have lost the mark (docs/safety.md).

use super::core::quorum::ttl_millis;
use super::core::redlock::Redlock;
use super::core::round::{round, Progress};
use super::core::servers::Connection;
use super::done_mark::{mark_key, most_held, DoneMark, Lapse, Once, OnceRun};
use super::error::{Failures, LockError, Said, TokenOp, TokenRound};
use super::holder::Holder;
use super::holder::Recorded;
use super::inspection::{Inspection, Verdict};
use super::key::{LockKey, Token};
use super::scripts::MarkDone;
use super::server_url::ServerSpec;

/// Where a mark was written.
#[derive(Debug, Clone)]
pub struct Marked {
    /// The servers that hold it now.
    pub on: Vec<ServerSpec>,
    pub total: usize,
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
    /// `token` (`redlock done`), and its holder: `Ok(None)` when a
    /// majority holds `token` but no record names a run; not held, or no
    /// quorum, when no majority holds it.
    pub async fn once_of(
        &self,
        key: &LockKey,
        token: &Token,
    ) -> Result<Option<(OnceRun, Holder)>, LockError> {
        let inspection = self.inspect(key).await;
        let token = token.as_str().as_bytes();
        let holding = inspection.holding(token).len();
        if holding < self.quorum {
            return Err(match inspection.verdict() {
                Verdict::Unknown => inspection.no_quorum(),
                _ => not_held(key, &inspection, token),
            });
        }
        let run = (inspection.servers.iter())
            .filter_map(|server| {
                let state = server.state.as_ref().ok()?;
                let recorded = Recorded::parse(state.record.as_ref()?, None, token)?;
                let run = OnceRun::from_id(recorded.holder.once.as_ref()?, self.restart_guard)?;
                Some((run, recorded.holder))
            })
            .next();
        Ok(run)
    }

    /// Writes the done mark of `run` beside `key`, on every server where
    /// the lock still holds `token`, waiting for every server (or its
    /// timeout): the command ended with `status`, run by `holder`. `Ok`
    /// when a majority holds it; else not held (79) when the token can no
    /// longer hold a majority, or no quorum, with what each server said.
    pub async fn mark_done(
        &self,
        (key, token): (&LockKey, &Token),
        run: &OnceRun,
        (status, holder): (i32, Option<&Holder>),
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
        let request =
            move |mut connection: Connection| async move { connection.invoke(&call).await };
        let replies = round(&self.servers, request, |_| Progress::Undecided).await;
        if replies.tally(self.quorum).succeeded() {
            return Ok(Marked {
                on: replies.yes_servers(&self.servers),
                total: self.len(),
            });
        }
        Err(self.not_held_or_no_quorum(key, &replies, TokenOp::MarkDone))
    }
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
