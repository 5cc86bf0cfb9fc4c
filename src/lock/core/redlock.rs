//! Acquire, extend, release and inspect a lock on N masters at once, following
//! antirez's "Distributed locks with Redis": one key and one random token on
//! every server, a majority within the validity time, and unlock-all on
//! failure.

use std::sync::Arc;
use std::time::Duration;

use super::attempt::{Attempter, Next};
use super::lease::{Lease, Released};
use super::quorum::{drift, no_quorum, quorum, ttl_millis, validity, KeptOut, Tally};
use super::round::{round, Progress, Replies, Vote};
use super::servers::{tls_config, Connection, Server, ServerError};
use super::take::Take;
use crate::clock::BootInstant;
use crate::lock::done_mark::{mark_key, DoneMark};
use crate::lock::error::{Failures, LockError, Said, TokenOp, TokenRound};
use crate::lock::guard::Guarded;
use crate::lock::holder::Holder;
use crate::lock::inspection::{Inspection, KeyState, Occupied, ServerState};
use crate::lock::key::{guard_marker, LockKey, Token};
use crate::lock::line;
use crate::lock::notify;
use crate::lock::queue::{self, Ticket};
use crate::lock::scripts::{
    Acquire, AcquireReply, Extend, Inspect, Invocation, LockKeys, Release, TokenHolder, TokenReply,
};
use crate::lock::server_url::{ServerSpec, SpecError};
use crate::lock::slot::Slot;

/// What one server said to `SET NX` under the restart guard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::lock) enum SetReply {
    /// Taken; with the server's fencing counter when the caller fences.
    Taken(Option<u64>),
    /// Another value holds the key: what the server holds.
    Held(Box<KeyState>),
    /// The lock is free, but this many waiters stand in line before the
    /// caller; the server's clock in ms; the tickets ahead of the caller's.
    Queued {
        waiters: u64,
        clock: Option<u64>,
        ahead: Vec<String>,
    },
    /// It may have lost locks within the guard: counted again after this
    /// long; the server's clock in ms.
    Restarting {
        guarded: Guarded,
        clock: Option<u64>,
    },
    /// A newer superseding waiter replaced the caller (`--supersede`):
    /// who, as the servers keep it (supersede.rs).
    Superseded(Vec<u8>),
    /// A run once: the done mark holds this run's id (lock/once.rs).
    Done(Box<DoneMark>),
    /// The plain text found a line, readers or a step-aside count beside
    /// the free lock: acquire.lua whole decides, at once (the server's
    /// clock in ms).
    Crowded { clock: Option<u64> },
}

impl SetReply {
    /// The server's clock (ms) when it answered, where the reply has one.
    fn clock(&self) -> Option<u64> {
        match self {
            SetReply::Taken(_) | SetReply::Superseded(_) | SetReply::Done(_) => None,
            SetReply::Held(seen) => seen.now_ms,
            SetReply::Queued { clock, .. }
            | SetReply::Restarting { clock, .. }
            | SetReply::Crowded { clock } => *clock,
        }
    }
}

impl From<AcquireReply> for SetReply {
    fn from(reply: AcquireReply) -> Self {
        match reply {
            AcquireReply::Taken(counter) => SetReply::Taken(counter),
            AcquireReply::Held(seen) => SetReply::Held(Box::new(KeyState::new(*seen, None, 0))),
            AcquireReply::Queued {
                waiters,
                clock,
                ahead,
            } => SetReply::Queued {
                waiters,
                clock,
                ahead,
            },
            AcquireReply::Restarting(restarting) => SetReply::Restarting {
                guarded: restarting.guarded,
                clock: restarting.clock,
            },
            AcquireReply::Readers {
                count,
                pttl_ms,
                clock,
            } => SetReply::Held(Box::new(KeyState::readers(count, pttl_ms, clock))),
            AcquireReply::Superseded(who) => SetReply::Superseded(who),
            AcquireReply::Done { mark, .. } => SetReply::Done(Box::new(DoneMark::read(&mark))),
            AcquireReply::Crowded { clock } => SetReply::Crowded { clock },
        }
    }
}

impl Vote for TokenReply {
    fn is_yes(&self) -> bool {
        *self == TokenReply::Held
    }
}

impl Vote for SetReply {
    fn is_yes(&self) -> bool {
        matches!(self, SetReply::Taken(_))
    }

    fn is_inconclusive(&self) -> bool {
        matches!(self, SetReply::Restarting { .. })
    }
}

/// What a compare-and-delete undoes.
#[derive(Debug, Clone, Copy)]
enum Undo<'a> {
    /// A lock held: waiters hear of it. `readers`: its token may be a
    /// reader's (a semaphore's slot has none).
    Hold { readers: bool },
    /// A failed attempt, by a waiter with this ticket (if it has one),
    /// taken shared or not.
    Attempt(Option<&'a Ticket>, bool),
}

/// The configured masters and the protocol over them. A clone shares the
/// servers and their connections.
#[derive(Clone)]
pub struct Redlock {
    pub(in crate::lock) servers: Vec<Arc<Server>>,
    pub(in crate::lock) quorum: usize,
    /// A server that started less than this long ago does not count toward
    /// a quorum for acquire (zero: every server counts).
    pub(in crate::lock) restart_guard: Duration,
    /// The restart guard's marker key (guard.lua), beside the locks under
    /// the same prefix.
    pub(in crate::lock) marker: Vec<u8>,
    /// Whether a waiter listens for releases (notify.rs) besides polling.
    pub(in crate::lock) wakeups: bool,
    /// Whether every server's answer is shown (`-v`, JSON's `held_on`): a
    /// decided round then gives the late ones the whole grace (round.rs).
    shows_every_answer: bool,
}

/// How long an acquire's round waits for the servers that have not answered
/// once the others cannot make its outcome certain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::lock) enum Patience {
    /// Until the outcome is certain (or the server timeout).
    Decided,
    /// Not for a server whose last call timed out (hung, or cut off by a
    /// partition): once every other server answered and they alone cannot
    /// make a quorum, the attempt fails at once instead of waiting out the
    /// server timeout for them. Failing is always safe; its compare-and-
    /// delete is still written to them. A suspect that answers again (the
    /// late reply of this very attempt) counts from the next attempt on.
    NotForSuspects,
}

impl Redlock {
    /// `specs` must not be empty; every server gets `timeout` for connecting
    /// and for each reply. `tls_root_cert` (PEM) replaces the system roots for
    /// `rediss://` servers.
    pub fn new(
        specs: Vec<ServerSpec>,
        timeout: Duration,
        tls_root_cert: Option<&[u8]>,
        restart_guard: Duration,
    ) -> Result<Self, SpecError> {
        let tls = match specs.iter().find(|spec| spec.is_tls()) {
            Some(first) => Some(Arc::new(
                tls_config(tls_root_cert).map_err(|err| SpecError(format!("{first}: {err}")))?,
            )),
            None => None,
        };
        let servers = specs
            .into_iter()
            .map(|spec| Server::new(spec, timeout, tls_root_cert, tls.as_ref()))
            .collect::<Result<Vec<_>, _>>()?;
        let quorum = quorum(servers.len());
        Ok(Redlock {
            servers,
            quorum,
            restart_guard,
            marker: guard_marker(b""),
            wakeups: true,
            shows_every_answer: false,
        })
    }

    /// Keeps the restart guard's marker beside the locks under `prefix`, so
    /// that an ACL that limits the keys to the prefix allows it too.
    pub fn with_prefix(self, prefix: &[u8]) -> Self {
        Redlock {
            marker: guard_marker(prefix),
            ..self
        }
    }

    /// The keys every script on `key` gets, in the order they name them.
    pub(in crate::lock) fn keys_of(&self, key: &LockKey) -> LockKeys {
        LockKeys::new(key, &self.marker)
    }

    /// Whether waiters listen for releases (on by default) or only poll.
    pub fn with_wakeups(self, wakeups: bool) -> Self {
        Redlock { wakeups, ..self }
    }

    /// Whether every server's answer is shown (`-v`, JSON's `held_on` and
    /// `released_on`), so that a decided round waits for the late ones as
    /// long as it took itself.
    pub fn with_every_answer_shown(self, shows_every_answer: bool) -> Self {
        Redlock {
            shows_every_answer,
            ..self
        }
    }

    /// How a round that went this client's way ends: with the whole grace
    /// for the late servers when their answers are shown, else a short one.
    pub(in crate::lock) fn won(&self) -> Progress {
        match self.shows_every_answer {
            true => Progress::Settled,
            false => Progress::Won,
        }
    }

    pub fn len(&self) -> usize {
        self.servers.len()
    }

    /// How long each server gets to connect and for each reply.
    pub fn server_timeout(&self) -> Duration {
        self.servers.first().map_or(Duration::ZERO, |s| s.timeout())
    }

    /// The quorum: N/2+1.
    pub fn quorum(&self) -> usize {
        self.quorum
    }

    /// The restart guard (zero: off).
    pub fn restart_guard(&self) -> Duration {
        self.restart_guard
    }

    /// One Redlock round: `SET key token NX PX ttl` on every server at once,
    /// deciding as soon as a majority agreed or no longer can, as `take`
    /// asks (its TTL, fence, mode and record; `key` is its lock's or one of
    /// its slots'). On failure the
    /// key is released wherever it may be, servers that did not answer
    /// included ([`Self::may_hold`]).
    /// A waiter passes its `ticket` ([`Attempter`]): it stands in line while
    /// the lock is busy, and takes the lock only when first in line. Without
    /// one, the lock is taken only when nobody stands in line. Also returns
    /// the servers' clock as the attempt saw it (the median of the clocks
    /// the servers that answered gave, in ms since the Unix epoch), which a
    /// waiter takes its place in line by, and how the next attempt goes:
    /// past a split line (lock/line.rs: the attempt failed though the lock
    /// was free on a majority, and no ticket ahead of the waiter's stands on
    /// one), or at once as the whole text, where the plain text found a
    /// line or readers beside a free lock. A semaphore's slot passes
    /// `limit`: where the servers record its K, and this client's K (a
    /// server that records another refuses it).
    pub(in crate::lock) async fn attempt_in_line(
        &self,
        key: &LockKey,
        token: &Token,
        take: &Take,
        attempter: Attempter<'_>,
    ) -> (Result<Lease, LockError>, Option<u64>, Next) {
        let started = BootInstant::now();
        let ttl = take.ttl;
        let ticket = attempter.ticket;
        let call = self.acquire_call(key, token, take, attempter);
        // A run once waits for the late servers' answers as `-v` does: any
        // one of them may say "done" (lock/once.rs).
        let every = take
            .once
            .is_some()
            .then(|| self.clone().with_every_answer_shown(true));
        let replies = (every.as_ref().unwrap_or(self))
            .decided_round(
                Patience::NotForSuspects,
                move |mut connection: Connection| async move {
                    connection.invoke_asking(&call).await.map(SetReply::from)
                },
            )
            .await;
        let clock = median(replies.answered().filter_map(SetReply::clock).collect());
        let done = done_in(key, &replies);
        let too_slow = match self.lease(key, token, ttl, started, &replies) {
            _ if done.is_some() => done,
            Ok(lease) if take.fence => match self.fence(lease, &replies).await {
                Ok(fenced) => return (Ok(fenced), clock, Next::AfterAPause),
                Err(unfenced) => Some(unfenced),
            },
            Ok(lease) => return (Ok(lease), clock, Next::AfterAPause),
            Err(too_slow) => too_slow,
        };
        // Unlock wherever the key may be: a server that timed out may still
        // have taken it.
        // If a majority refuses it (an ACL without GET or DEL), every attempt
        // would leave its key behind: no retry can work, so say so.
        // Not announced (Undo::Attempt).
        let (may_hold, answered) = self.may_hold(&replies);
        let undo = Undo::Attempt(ticket, take.shared);
        let unlocked = self
            .release_round((&may_hold, &answered), key, token, undo)
            .await;
        let unlock_failures = Failures(unlocked.failures(&may_hold));
        if let Some(refused) = unlock_failures.refusal(key, self.len(), self.quorum) {
            return (Err(refused), clock, Next::AfterAPause);
        }
        if let Some(superseded) = superseded(key, &replies) {
            return (Err(superseded), clock, Next::AfterAPause);
        }
        let seen = replies.answered().map(|reply| match reply {
            SetReply::Taken(_) => line::Seen::Took,
            SetReply::Queued { ahead, .. } => line::Seen::Refused(ahead),
            _ => line::Seen::Neither,
        });
        let next = if self.whole_text_may_take(&replies) {
            Next::WholeText
        } else if ticket.is_some_and(|t| line::split_for(&t.id, self.quorum, seen)) {
            Next::PastASplitLine
        } else {
            Next::AfterAPause
        };
        let error = too_slow.unwrap_or_else(|| self.not_taken(key, &replies));
        (Err(error), clock, next)
    }

    /// Whether the whole text, sent at once, may take what the plain text
    /// left to it: some server answered "crowded", and the servers that
    /// did not say no for good (crowded, taken, or no answer) could still
    /// make a majority. A lock held on a majority costs `-n` one round,
    /// whatever a minority keeps beside it.
    fn whole_text_may_take(&self, replies: &Replies<SetReply>) -> bool {
        let crowded = |r: &SetReply| matches!(r, SetReply::Crowded { .. });
        let refused = replies
            .answered()
            .filter(|r| !crowded(r) && !matches!(r, SetReply::Taken(_)))
            .count();
        replies.answered().any(crowded) && self.len() - refused >= self.quorum
    }

    /// The call of acquire.lua for one attempt on `key` with `token`, as
    /// `take` asks, by the waiter's `ticket` if it has one.
    fn acquire_call(
        &self,
        key: &LockKey,
        token: &Token,
        take: &Take,
        Attempter {
            ticket,
            limit,
            plain_text,
        }: Attempter<'_>,
    ) -> Acquire {
        Acquire {
            keys: self.keys_of(key),
            token: token.as_str().to_owned(),
            ttl_ms: ttl_millis(take.ttl),
            guard_ms: ttl_millis(self.restart_guard),
            record: take.record_for(token),
            ticket: ticket.map(|t| (t.id.clone(), t.score)),
            linger_ms: ttl_millis(queue::linger()),
            fence: take.fence,
            shared: take.shared,
            limit,
            past_a_split_line: ticket.is_some_and(|t| t.past_a_split_line),
            supersede: crate::lock::supersede::call(
                key,
                (take.supersede, take.record.as_ref()),
                ticket,
                || match self.wakeups {
                    true => notify::channel(key),
                    false => Vec::new(),
                },
            ),
            once: (take.once.as_ref()).map(|run| (mark_key(key), run.id.clone())),
            plain_text,
        }
    }

    /// Why a round of `SET NX` did not take the lock: busy when enough
    /// servers answered and the restart guard is not what kept a majority
    /// out of reach, restarting when it is, else no quorum.
    fn not_taken(&self, key: &LockKey, replies: &Replies<SetReply>) -> LockError {
        let tally = replies.tally(self.quorum);
        let seen: Vec<&KeyState> = replies
            .answered()
            .filter_map(|r| match r {
                SetReply::Held(seen) => Some(seen.as_ref()),
                _ => None,
            })
            .collect();
        let held = seen.len();
        let queued: Vec<u64> = replies
            .answered()
            .filter_map(|r| match r {
                SetReply::Queued { waiters, .. } => Some(*waiters),
                // Free, with a line or readers beside it. Not shown where
                // the whole text follows at once (retry.rs); where it does
                // not, a majority said no for good, and this counts it
                // apart from the guard's.
                SetReply::Crowded { .. } => Some(0),
                _ => None,
            })
            .collect();
        let in_line = queued.len();
        let again_in = replies
            .answers
            .iter()
            .zip(&self.servers)
            .filter_map(|(answer, server)| match answer {
                Some(Ok(SetReply::Restarting { guarded, .. })) => {
                    Some((server.spec().clone(), *guarded))
                }
                _ => None,
            })
            .collect::<Vec<_>>();
        let failures = Failures(replies.failures(&self.servers));
        // Too few answers: the servers the guard keeps out did answer, so
        // the failures alone are why.
        if tally.answered() < self.quorum {
            return self.no_quorum(key, replies);
        }
        match again_in.is_empty() {
            false if held + in_line < self.quorum => {
                let kept_out = KeptOut {
                    guard: self.restart_guard,
                    kept: &again_in,
                };
                no_quorum(key, (self.len(), self.quorum), Some(kept_out), failures)
            }
            _ => {
                // Leftovers on a minority name no holder: the lock is
                // nobody's, it is busy only until they expire.
                let occupied =
                    Occupied::by_most(&seen, self.quorum).filter(|o| o.on >= self.quorum);
                let held_on = replies
                    .answers
                    .iter()
                    .zip(&self.servers)
                    .filter_map(|(answer, server)| match answer {
                        Some(Ok(SetReply::Held(seen))) => {
                            Some((server.spec().clone(), seen.held_by()?))
                        }
                        _ => None,
                    })
                    .collect();
                LockError::Busy {
                    key: key.clone(),
                    held_elsewhere: held,
                    total: self.len(),
                    in_line,
                    waiters: queued.iter().copied().max().unwrap_or(0),
                    held_by: occupied.as_ref().map(|o| Box::new(o.held_by.clone())),
                    expires_in: occupied.and_then(|o| o.expires_in),
                    held_on,
                    failures,
                    every_slot: None,
                }
            }
        }
    }

    /// Pushes the expiry of a lock we hold out to `ttl` from now, on every
    /// server where the key still holds `token`; never shortens it, and never
    /// re-creates a missing key.
    pub async fn extend(
        &self,
        key: &LockKey,
        token: &Token,
        ttl: Duration,
    ) -> Result<Lease, LockError> {
        self.extend_as(key, token, ttl, (None, None)).await
    }

    /// [`Self::extend`], replacing the holder record with `holder` when one
    /// is given (the time the lock was taken stays); a semaphore's `slot`
    /// keeps its K recorded on the servers as long as it is held.
    pub async fn extend_as(
        &self,
        key: &LockKey,
        token: &Token,
        ttl: Duration,
        (holder, slot): (Option<&Holder>, Option<&Slot>),
    ) -> Result<Lease, LockError> {
        let started = BootInstant::now();
        let call = Extend {
            keys: self.keys_of(key),
            token: token.as_str().to_owned(),
            ttl_ms: ttl_millis(ttl),
            record: holder.map(|h| h.encode(token)).unwrap_or_default(),
            limit: slot.map(Slot::limit_record),
        };
        let replies = self
            .decided_round(
                Patience::Decided,
                move |mut connection: Connection| async move { connection.invoke(&call).await },
            )
            .await;
        self.lease(key, token, ttl, started, &replies)
            .map_err(|too_slow| {
                too_slow
                    .unwrap_or_else(|| self.not_held_or_no_quorum(key, &replies, TokenOp::Extend))
            })
    }

    /// Deletes the key on every server where it still holds `token`. Once the
    /// outcome is certain it makes sure the delete is written to every
    /// server with an open connection, and waits a little for the answers
    /// and for a server still connecting (see [`round`]), so that the
    /// delete has reached them before the process exits.
    pub async fn release(&self, key: &LockKey, token: &Token) -> Result<Released, LockError> {
        self.release_hold(key, token, true).await
    }

    /// [`Self::release`] of a lock this process took itself, knowing
    /// whether it took it `shared`: a writer's token (a semaphore's slot
    /// too) gets no readers' Lua.
    pub async fn release_own(
        &self,
        key: &LockKey,
        token: &Token,
        shared: bool,
    ) -> Result<Released, LockError> {
        self.release_hold(key, token, shared).await
    }

    async fn release_hold(
        &self,
        key: &LockKey,
        token: &Token,
        readers: bool,
    ) -> Result<Released, LockError> {
        let replies = self
            .release_round((&self.servers, &[]), key, token, Undo::Hold { readers })
            .await;
        let tally = replies.tally(self.quorum);
        if tally.succeeded() {
            return Ok(Released {
                released_on: replies.yes_servers(&self.servers),
                total: self.len(),
            });
        }
        Err(self.not_held_or_no_quorum(key, &replies, TokenOp::Release))
    }

    /// Reads what every server holds under `key`, waiting for every server or
    /// its timeout.
    pub async fn inspect(&self, key: &LockKey) -> Inspection {
        self.inspect_for(key, None).await
    }

    /// [`Self::inspect`], finding `token` among the readers however many
    /// there are (status lists the first 16 of each server).
    pub async fn inspect_for(&self, key: &LockKey, token: Option<&[u8]>) -> Inspection {
        let call = Inspect {
            keys: self.keys_of(key),
            guard_ms: ttl_millis(self.restart_guard),
            token: String::from_utf8_lossy(token.unwrap_or_default()).into_owned(),
            supersede_key: crate::lock::key::supersede_key(key),
        };
        let servers = self.occupant_round(call).await;
        Inspection {
            key: key.clone(),
            quorum: self.quorum,
            servers,
            restart_guard: (!self.restart_guard.is_zero()).then_some(self.restart_guard),
            done: None,
        }
    }

    /// Runs `call` (a script whose reply says what occupies one lock) on
    /// every server, waiting for every server or its timeout: every
    /// server's answer, in configuration order.
    pub(in crate::lock) async fn occupant_round<I>(&self, call: I) -> Vec<ServerState>
    where
        I: Invocation,
        I::Reply: Into<KeyState>,
    {
        self.script_round(call)
            .await
            .into_iter()
            .map(|(server, reply)| ServerState {
                server,
                state: reply.map(Into::into),
            })
            .collect()
    }

    /// Runs `call` on every server, waiting for every server or its
    /// timeout: every server's reply, in configuration order.
    pub(in crate::lock) async fn script_round<I: Invocation>(
        &self,
        call: I,
    ) -> Vec<(ServerSpec, Result<I::Reply, ServerError>)> {
        let replies = round(
            &self.servers,
            move |mut connection: Connection| async move { connection.invoke(&call).await },
            |_| Progress::Undecided,
        )
        .await;
        replies
            .answers
            .into_iter()
            .zip(&self.servers)
            .map(|(reply, server)| {
                let reply = reply.unwrap_or_else(|| Err(ServerError::Failed("no reply".into())));
                (server.spec().clone(), reply)
            })
            .collect()
    }

    /// The servers a failed attempt may have left its key on: all but those
    /// whose script answered that it did not take the lock (busy, queued,
    /// restarting). That answer is the script's, run whole, and nothing
    /// resends the request once answered; so a waiter's failed attempt
    /// costs busy servers no second script call. A server that took it,
    /// failed or has not answered yet gets the compare-and-delete, behind
    /// the SET on the same connection.
    ///
    /// Beside each, whether it answered the attempt (took the key, or
    /// failed at once): the undo waits for those only. One that did not
    /// answer in time is hung or cut off, and its undo would only wait out
    /// the server timeout again; the undo is still written to it, behind
    /// the SET.
    fn may_hold(&self, replies: &Replies<SetReply>) -> (Vec<Arc<Server>>, Vec<bool>) {
        replies
            .answers
            .iter()
            .zip(&self.servers)
            .filter(|(answer, _)| !matches!(answer, Some(Ok(reply)) if !reply.is_yes()))
            .map(|(answer, server)| {
                let silent = matches!(
                    answer,
                    None | Some(Err(ServerError::Timeout(_) | ServerError::NoAnswerYet))
                );
                (Arc::clone(server), !silent)
            })
            .unzip()
    }

    /// Compare-and-delete on `servers`, undoing a hold (announced to the
    /// waiters, notify.rs) or a failed attempt (not announced: contenders
    /// that split the vote would all wake and retry in lockstep; a waiter's
    /// ticket goes back in line).
    ///
    /// The round ends once its outcome is certain, or once every server
    /// marked in `awaited` (beside `servers`; empty: none) answered.
    async fn release_round(
        &self,
        (servers, awaited): (&[Arc<Server>], &[bool]),
        key: &LockKey,
        token: &Token,
        undo: Undo<'_>,
    ) -> Replies<TokenReply> {
        let call = Release {
            keys: self.keys_of(key),
            token: token.as_str().to_owned(),
            channel: match undo {
                Undo::Hold { .. } => notify::channel(key),
                Undo::Attempt(..) => Vec::new(),
            },
            back_in_line: match undo {
                Undo::Attempt(Some(ticket), _) => {
                    Some((ticket.id.clone(), ticket.score, ttl_millis(queue::linger())))
                }
                _ => None,
            },
            // A failed attempt's token is its own, of the mode it ran in;
            // a hold's may be a reader's (the `release` command cannot
            // tell; a semaphore's slot has none).
            holder: match undo {
                Undo::Attempt(_, true) => TokenHolder::Reader,
                Undo::Attempt(_, false) | Undo::Hold { readers: false } => TokenHolder::Writer,
                Undo::Hold { readers: true } => TokenHolder::Either,
            },
        };
        let request =
            move |mut connection: Connection| async move { connection.invoke(&call).await };
        let quorum = self.quorum;
        let awaited = awaited.to_vec();
        let heard_awaited = move |replies: &Replies<TokenReply>| {
            !awaited.is_empty()
                && awaited
                    .iter()
                    .zip(&replies.answers)
                    .all(|(&awaited, answer)| !awaited || answer.is_some())
        };
        let won = self.won();
        round(servers, request, move |replies| {
            let tally = replies.tally(quorum);
            if tally.succeeded() {
                won
            } else if tally.is_decided() || heard_awaited(replies) {
                Progress::Settled
            } else {
                Progress::Undecided
            }
        })
        .await
    }

    /// A yes/no round that ends as soon as its outcome is certain, or, with
    /// [`Patience::NotForSuspects`], as soon as only suspects could make it.
    pub(in crate::lock) async fn decided_round<T, F, Fut>(
        &self,
        patience: Patience,
        request: F,
    ) -> Replies<T>
    where
        T: Vote + Send + 'static,
        F: FnOnce(Connection) -> Fut + Clone + Send + 'static,
        Fut: std::future::Future<Output = redis::RedisResult<T>> + Send + 'static,
    {
        let quorum = self.quorum;
        let suspects: Vec<bool> = self
            .servers
            .iter()
            .map(|server| patience == Patience::NotForSuspects && server.last_timed_out())
            .collect();
        let won = self.won();
        round(&self.servers, request, move |replies| {
            let tally = replies.tally(quorum);
            let inconclusive =
                replies.pending() > 0 && replies.answered().any(Vote::is_inconclusive);
            match (tally.is_decided(), tally.succeeded()) {
                (false, _) if only_suspects_left(replies, &suspects) => Progress::Settled,
                (false, _) => Progress::Undecided,
                (true, true) => won,
                (true, false) if inconclusive && !only_suspects_left(replies, &suspects) => {
                    Progress::Undecided
                }
                // Failed: the others get the grace a settled round gives
                // them, so that the error counts every server that is down,
                // not just the first that made a majority impossible, and
                // a failed attempt knows which servers did not take its key
                // and need no compare-and-delete (Self::may_hold).
                (true, false) if replies.pending() > 0 => Progress::Settled,
                (true, false) => Progress::Failed,
            }
        })
        .await
    }

    /// The lease a round that started at `started` grants: when a quorum said
    /// yes with validity left. Otherwise `Err(Some(TooSlow))` when the quorum
    /// came too late, `Err(None)` when there was none.
    fn lease<T: Vote>(
        &self,
        key: &LockKey,
        token: &Token,
        ttl: Duration,
        started: BootInstant,
        replies: &Replies<T>,
    ) -> Result<Lease, Option<LockError>> {
        if !replies.tally(self.quorum).succeeded() {
            return Err(None);
        }
        let elapsed = started.elapsed();
        let validity = validity(ttl, elapsed);
        if validity.is_zero() {
            return Err(Some(LockError::TooSlow {
                key: key.clone(),
                elapsed,
                ttl,
            }));
        }
        Ok(Lease {
            key: key.clone(),
            token: token.clone(),
            ttl,
            deadline: started + ttl.saturating_sub(drift(ttl)),
            held_on: replies.yes_servers(&self.servers),
            attempts: 1,
            slot: None,
            fence: None,
        })
    }

    /// What each server said to a token round (release, extend, the
    /// fencing write), in configuration order.
    pub(in crate::lock) fn token_said(
        &self,
        replies: &Replies<TokenReply>,
    ) -> Vec<(ServerSpec, Said)> {
        replies
            .answers
            .iter()
            .zip(&self.servers)
            .map(|(answer, server)| {
                let said = match answer {
                    Some(Ok(TokenReply::Held)) => Said::Holds,
                    Some(Ok(TokenReply::Gone)) => Said::Gone,
                    Some(Ok(TokenReply::Taken)) => Said::Taken,
                    Some(Err(err)) => Said::Failed(err.clone()),
                    None => Said::Failed(ServerError::NoAnswerYet),
                };
                (server.spec().clone(), said)
            })
            .collect()
    }

    /// Why a round on a token (extend, release) did not reach a majority:
    /// not held when the token can no longer hold one, else no quorum;
    /// either way with what each server said.
    pub(in crate::lock) fn not_held_or_no_quorum(
        &self,
        key: &LockKey,
        replies: &Replies<TokenReply>,
        op: TokenOp,
    ) -> LockError {
        let tally: Tally = replies.tally(self.quorum);
        let said = self.token_said(replies);
        let round = Box::new(TokenRound { op, said });
        if tally.cannot_hold() {
            return LockError::NotHeld {
                key: key.clone(),
                held: tally.yes,
                total: self.len(),
                quorum: self.quorum,
                failures: Failures(replies.unanswered(&self.servers)),
                round,
            };
        }
        let mut error = self.no_quorum(key, replies);
        if let LockError::NoQuorum { token, .. } = &mut error {
            *token = Some(round);
        }
        error
    }

    /// No quorum for a round in which too few servers answered at all.
    pub(in crate::lock) fn no_quorum<T>(&self, key: &LockKey, replies: &Replies<T>) -> LockError {
        let failures = Failures(replies.unanswered(&self.servers));
        no_quorum(key, (self.len(), self.quorum), None, failures)
    }
}

/// Whether every server that has not answered is a suspect (`suspects`, by
/// server index), while some server is not: the round's outcome then rests
/// on servers whose last call timed out.
fn only_suspects_left<T>(replies: &Replies<T>, suspects: &[bool]) -> bool {
    suspects.iter().any(|&suspect| !suspect)
        && replies
            .answers
            .iter()
            .zip(suspects)
            .all(|(answer, &suspect)| answer.is_some() || suspect)
}

/// The error of an attempt that a server answered "superseded"
/// (`--supersede`): any one is enough, since leaving never harms mutual
/// exclusion (supersede.rs).
fn superseded(key: &LockKey, replies: &Replies<SetReply>) -> Option<LockError> {
    replies.answered().find_map(|reply| match reply {
        SetReply::Superseded(who) => Some(LockError::Superseded {
            key: key.clone(),
            by: crate::lock::supersede::Superseder::decode(who).map(Box::new),
        }),
        _ => None,
    })
}

/// The client's rule: the attempt on `key` skips when any server that
/// answered says its done mark holds this run's id (the first such mark).
fn done_in(key: &LockKey, replies: &Replies<SetReply>) -> Option<LockError> {
    let mark = replies.answered().find_map(|reply| match reply {
        SetReply::Done(mark) => Some(mark.clone()),
        _ => None,
    })?;
    let on = replies
        .answered()
        .filter(|reply| matches!(reply, SetReply::Done(_)))
        .count();
    Some(LockError::Done {
        key: key.clone(),
        mark,
        on,
    })
}

/// The median of `clocks` (the upper one of the middle two), `None` for none.
fn median(mut clocks: Vec<u64>) -> Option<u64> {
    clocks.sort_unstable();
    clocks.get(clocks.len() / 2).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_attempt_stops_waiting_only_when_suspects_alone_are_left() {
        let replies = |answered: &[bool]| {
            Replies::<bool>::of(answered.iter().map(|&a| a.then_some(Ok(true))).collect())
        };
        let suspects = [false, false, false, true, true];
        assert!(only_suspects_left(
            &replies(&[true, true, true, false, false]),
            &suspects
        ));
        assert!(!only_suspects_left(
            &replies(&[true, true, false, false, false]),
            &suspects
        ));
        // Every server a suspect: the round waits for them as it always did.
        assert!(!only_suspects_left(
            &replies(&[false, false, false, false, false]),
            &[true; 5]
        ));
        assert!(!only_suspects_left(
            &replies(&[true, true, true, false, false]),
            &[false; 5]
        ));
    }

    #[test]
    fn the_median_clock_is_robust_to_one_skewed_server() {
        assert_eq!(median(vec![]), None);
        assert_eq!(median(vec![5]), Some(5));
        assert_eq!(median(vec![100, 1, 102]), Some(100));
        assert_eq!(median(vec![100, 101, 9_999, 102, 103]), Some(102));
    }
}
