//! Acquire, extend, release and inspect a lock on N masters at once, following
//! antirez's "Distributed locks with Redis": one key and one random token on
//! every server, a majority within the validity time, unlock-all on failure,
//! and a random delay between attempts.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use redis::Value;
use tokio::sync::mpsc;

use super::clock::BootInstant;
use super::scripts;
use super::servers::{Connection, Server, ServerError, ServerSpec, SpecError};
use super::{LockKey, Token};
use crate::duration::millis_ceil;

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

/// How long `acquire` keeps trying.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// One attempt only (`-n`, `-w 0`).
    No,
    /// Retry until this much time has passed.
    For(Duration),
    /// Retry until the lock is ours (the default, like `flock`).
    Forever,
}

/// A lock this process holds.
#[derive(Debug, Clone)]
pub struct Lease {
    pub key: LockKey,
    pub token: Token,
    pub ttl: Duration,
    /// How long the lock could be relied upon when the call returned.
    pub validity: Duration,
    /// The instant the validity runs out; comparable across processes.
    pub deadline: BootInstant,
    /// The servers that confirmed, in the order they answered.
    pub held_on: Vec<String>,
    /// How many rounds `acquire` needed (1 for extend).
    pub attempts: u32,
}

/// The servers that failed in one round and why, for error messages.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Failures(pub Vec<(String, ServerError)>);

impl Failures {
    /// The error for a round that failed for lack of answers: `Refused` when
    /// enough servers refuse us that no majority is ever possible, else
    /// `NoQuorum`.
    fn into_error(self, key: &LockKey, total: usize, quorum: usize) -> LockError {
        let refused = self.0.iter().filter(|(_, err)| err.is_refusal()).count();
        if refused > total - quorum {
            LockError::Refused {
                key: key.clone(),
                refused,
                total,
                failures: self,
            }
        } else {
            LockError::NoQuorum {
                key: key.clone(),
                failed: self.0.len(),
                total,
                quorum,
                failures: self,
            }
        }
    }
}

impl fmt::Display for Failures {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (server, err)) in self.0.iter().enumerate() {
            f.write_str(if i == 0 { " (" } else { "; " })?;
            write!(f, "{server}: {err}")?;
        }
        if !self.0.is_empty() {
            f.write_str(")")?;
        }
        Ok(())
    }
}

/// Why a lock operation did not succeed; each variant is its own exit code.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("lock {key} is busy: {held_elsewhere} of {total} servers said another owner holds it{failures}")]
    Busy {
        key: LockKey,
        held_elsewhere: usize,
        total: usize,
        failures: Failures,
    },
    #[error("no quorum for lock {key}: {failed} of {total} servers failed, and a majority needs {quorum}{failures}")]
    NoQuorum {
        key: LockKey,
        /// Servers that failed or did not answer in time.
        failed: usize,
        total: usize,
        quorum: usize,
        failures: Failures,
    },
    #[error(
        "lock {key}: {refused} of {total} servers cannot be used as configured, so no majority \
         is possible{failures}"
    )]
    Refused {
        key: LockKey,
        refused: usize,
        total: usize,
        failures: Failures,
    },
    #[error(
        "lock {key}: a majority agreed only after {}, which leaves none of the {} TTL valid; \
         use a longer --ttl or faster servers",
        humantime::format_duration(*elapsed),
        humantime::format_duration(*ttl)
    )]
    TooSlow {
        key: LockKey,
        elapsed: Duration,
        ttl: Duration,
    },
    #[error(
        "lock {key} is not held by this token: {held} of {total} servers confirmed it, {quorum} needed{failures}"
    )]
    NotHeld {
        key: LockKey,
        held: usize,
        total: usize,
        quorum: usize,
        failures: Failures,
    },
}

impl LockError {
    /// Whether another attempt may succeed: the lock may be freed, the
    /// servers may come back.
    fn is_transient(&self) -> bool {
        matches!(
            self,
            LockError::Busy { .. } | LockError::NoQuorum { .. } | LockError::TooSlow { .. }
        )
    }
}

/// The result of a release that reached a majority.
#[derive(Debug, Clone)]
pub struct Released {
    pub released_on: usize,
    pub total: usize,
}

/// What one server holds under a lock's key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyState {
    /// Redis' TYPE: "none" for a missing key, "string" for a lock.
    pub kind: String,
    /// The value, when the key is a string (the holder's token).
    pub value: Option<Vec<u8>>,
    /// Remaining milliseconds; -1 for a key without expiry, -2 for none.
    pub pttl_ms: i64,
}

#[derive(Debug, Clone)]
pub struct ServerState {
    pub server: String,
    pub state: Result<KeyState, ServerError>,
}

/// Every server's view of one lock, in configuration order.
#[derive(Debug, Clone)]
pub struct Inspection {
    pub key: LockKey,
    pub quorum: usize,
    pub servers: Vec<ServerState>,
}

/// Who holds a lock, as far as a majority can tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// One value holds at least a quorum of servers.
    Held { value: Vec<u8>, on: usize },
    /// No value can hold a quorum, even counting the servers that did not answer.
    Free,
    /// Too few servers answered to tell.
    Unknown,
}

impl Inspection {
    pub fn verdict(&self) -> Verdict {
        let unanswered = self.servers.iter().filter(|s| s.state.is_err()).count();
        let mut best: Option<(&[u8], usize)> = None;
        for value in self.values() {
            let on = self.values().filter(|v| *v == value).count();
            if best.is_none_or(|(_, most)| on > most) {
                best = Some((value, on));
            }
        }
        match best {
            Some((value, on)) if on >= self.quorum => Verdict::Held {
                value: value.to_vec(),
                on,
            },
            _ if best.map_or(0, |(_, on)| on) + unanswered < self.quorum => Verdict::Free,
            _ => Verdict::Unknown,
        }
    }

    /// The error for an inspection whose verdict is [`Verdict::Unknown`].
    pub fn no_quorum(&self) -> LockError {
        let failures = Failures(
            self.servers
                .iter()
                .filter_map(|s| s.state.clone().err().map(|e| (s.server.clone(), e)))
                .collect(),
        );
        failures.into_error(&self.key, self.servers.len(), self.quorum)
    }

    fn values(&self) -> impl Iterator<Item = &[u8]> {
        self.servers.iter().filter_map(|s| match &s.state {
            Ok(KeyState { value: Some(v), .. }) => Some(v.as_slice()),
            _ => None,
        })
    }
}

/// The token of the `acquire` attempt in flight (see [`Redlock::acquire`]).
#[derive(Debug, Default)]
pub struct InFlight(std::sync::Mutex<Option<Token>>);

impl InFlight {
    fn set(&self, token: Token) {
        *self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(token);
    }

    pub fn token(&self) -> Option<Token> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }
}

/// The configured masters and the protocol over them.
pub struct Redlock {
    servers: Vec<Arc<Server>>,
    quorum: usize,
}

impl Redlock {
    /// `specs` must not be empty; every server gets `timeout` for connecting
    /// and for each reply. `tls_root_cert` (PEM) replaces the system roots for
    /// `rediss://` servers.
    pub fn new(
        specs: Vec<ServerSpec>,
        timeout: Duration,
        tls_root_cert: Option<&[u8]>,
    ) -> Result<Self, SpecError> {
        let servers = specs
            .into_iter()
            .map(|spec| Server::new(spec, timeout, tls_root_cert))
            .collect::<Result<Vec<_>, _>>()?;
        let quorum = quorum(servers.len());
        Ok(Redlock { servers, quorum })
    }

    pub fn len(&self) -> usize {
        self.servers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// Takes the lock, retrying after a random delay while `wait` allows. On
    /// failure the last attempt's reason is returned.
    ///
    /// Every attempt has a fresh token: a compare-and-delete of a failed
    /// attempt that reaches a stalled server late must not match the next
    /// attempt's key. `in_flight` always holds the current attempt's token,
    /// so that a caller that abandons this future (on a signal) can release
    /// whatever that attempt took.
    pub async fn acquire(
        &self,
        key: &LockKey,
        ttl: Duration,
        wait: Wait,
        in_flight: &InFlight,
    ) -> Result<Lease, LockError> {
        let give_up_at = match wait {
            Wait::No => Some(BootInstant::now()),
            Wait::For(limit) => Some(BootInstant::now() + limit),
            Wait::Forever => None,
        };
        let mut attempts = 0;
        loop {
            attempts += 1;
            let token = Token::generate();
            in_flight.set(token.clone());
            let error = match self.try_acquire(key, &token, ttl).await {
                Ok(lease) => return Ok(Lease { attempts, ..lease }),
                Err(error) if error.is_transient() => error,
                Err(error) => return Err(error),
            };
            let mut pause = retry_delay(ttl);
            if let Some(give_up_at) = give_up_at {
                let left = give_up_at.remaining();
                if left.is_zero() {
                    return Err(error);
                }
                pause = pause.min(left);
            }
            tokio::time::sleep(pause).await;
        }
    }

    /// One Redlock round: `SET key token NX PX ttl` on every server at once,
    /// deciding as soon as a majority agreed or no longer can. On failure the
    /// key is released everywhere, including servers that did not answer.
    pub async fn try_acquire(
        &self,
        key: &LockKey,
        token: &Token,
        ttl: Duration,
    ) -> Result<Lease, LockError> {
        let started = BootInstant::now();
        let ttl_ms = millis_ceil(ttl);
        let (request_key, request_token) = (key.clone(), token.clone());
        let tally = self
            .round(Until::Decided, move |mut connection: Connection| {
                let (key, token) = (request_key.clone(), request_token.clone());
                async move {
                    let mut set = redis::cmd("SET");
                    set.arg(key.bytes())
                        .arg(token.as_str())
                        .arg("NX")
                        .arg("PX")
                        .arg(ttl_ms);
                    let reply: Value = connection.query(&set).await?;
                    Ok(matches!(reply, Value::Okay))
                }
            })
            .await;
        let too_slow = match self.lease(key, token, ttl, started, &tally) {
            Ok(lease) => return Ok(lease),
            Err(too_slow) => too_slow,
        };
        // Unlock-all: a server that timed out may still have taken the key.
        let _ = self.release_round(key, token).await;
        Err(if let Some(too_slow) = too_slow {
            too_slow
        } else if tally.answered() >= self.quorum {
            LockError::Busy {
                key: key.clone(),
                held_elsewhere: tally.no,
                total: self.len(),
                failures: tally.failures,
            }
        } else {
            self.no_quorum(key, tally)
        })
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
        let started = BootInstant::now();
        let ttl_ms = millis_ceil(ttl);
        let (request_key, request_token) = (key.clone(), token.clone());
        let tally = self
            .round(Until::Decided, move |mut connection: Connection| {
                let (key, token) = (request_key.clone(), request_token.clone());
                async move {
                    let ttl_ms = ttl_ms.to_string();
                    let extended: i64 = connection
                        .run_script(
                            &scripts::EXTEND,
                            &[key.bytes()],
                            &[token.as_str().as_bytes(), ttl_ms.as_bytes()],
                        )
                        .await?;
                    Ok(extended == 1)
                }
            })
            .await;
        self.lease(key, token, ttl, started, &tally)
            .map_err(|too_slow| too_slow.unwrap_or_else(|| self.not_held_or_no_quorum(key, tally)))
    }

    /// Deletes the key on every server where it still holds `token`, waiting
    /// for every server (each bounded by the server timeout) so that the
    /// delete reaches all of them before the process exits.
    pub async fn release(&self, key: &LockKey, token: &Token) -> Result<Released, LockError> {
        let tally = self.release_round(key, token).await;
        if tally.yes.len() >= self.quorum {
            return Ok(Released {
                released_on: tally.yes.len(),
                total: self.len(),
            });
        }
        Err(self.not_held_or_no_quorum(key, tally))
    }

    /// Reads what every server holds under `key`.
    pub async fn inspect(&self, key: &LockKey) -> Inspection {
        let (sender, mut replies) = mpsc::unbounded_channel();
        for (index, server) in self.servers.iter().enumerate() {
            let (server, key, sender) = (Arc::clone(server), key.clone(), sender.clone());
            tokio::spawn(async move {
                let state = server
                    .call(|mut connection| async move {
                        let (kind, value, pttl_ms): (String, Option<Vec<u8>>, i64) = connection
                            .run_script(&scripts::INSPECT, &[key.bytes()], &[])
                            .await?;
                        Ok(KeyState {
                            kind,
                            value,
                            pttl_ms,
                        })
                    })
                    .await;
                let _ = sender.send((index, state));
            });
        }
        drop(sender);
        let mut states: Vec<Option<Result<KeyState, ServerError>>> = vec![None; self.len()];
        while let Some((index, state)) = replies.recv().await {
            states[index] = Some(state);
        }
        let servers = states
            .into_iter()
            .zip(&self.servers)
            .map(|(state, server)| ServerState {
                server: server.spec().to_string(),
                state: state.unwrap_or_else(|| Err(ServerError::Failed("no reply".into()))),
            })
            .collect();
        Inspection {
            key: key.clone(),
            quorum: self.quorum,
            servers,
        }
    }

    async fn release_round(&self, key: &LockKey, token: &Token) -> Tally {
        let (request_key, request_token) = (key.clone(), token.clone());
        self.round(Until::AllAnswered, move |mut connection: Connection| {
            let (key, token) = (request_key.clone(), request_token.clone());
            async move {
                let deleted: i64 = connection
                    .run_script(
                        &scripts::RELEASE,
                        &[key.bytes()],
                        &[token.as_str().as_bytes()],
                    )
                    .await?;
                Ok(deleted == 1)
            }
        })
        .await
    }

    /// Sends `request` to every server concurrently and counts the replies as
    /// they arrive. Requests still in flight when the round is decided run on
    /// in the background, so that a late SET can still be released by the
    /// compare-and-delete that follows it on the same connection.
    async fn round<F, Fut>(&self, until: Until, request: F) -> Tally
    where
        F: FnOnce(Connection) -> Fut + Clone + Send + 'static,
        Fut: Future<Output = redis::RedisResult<bool>> + Send + 'static,
    {
        let (sender, mut replies) = mpsc::unbounded_channel();
        for (index, server) in self.servers.iter().enumerate() {
            let (server, request, sender) = (Arc::clone(server), request.clone(), sender.clone());
            tokio::spawn(async move {
                let _ = sender.send((index, server.call(request).await));
            });
        }
        drop(sender);
        let started = tokio::time::Instant::now();
        let mut tally = Tally::new(self.len(), self.quorum);
        while let Some((index, reply)) = replies.recv().await {
            tally.record(index, reply, &self.servers);
            if until == Until::Decided && tally.is_decided() {
                break;
            }
        }
        if until == Until::Decided && tally.yes.len() >= self.quorum {
            // A server that answers within about the time the quorum took is
            // fast, not hung: wait for it too, so that it holds the lock (or
            // its new expiry) before this process moves on or exits.
            let patience = started.elapsed().max(STRAGGLER_PATIENCE);
            let give_up_at = tokio::time::Instant::now() + patience;
            while tally.pending() > 0 {
                match tokio::time::timeout_at(give_up_at, replies.recv()).await {
                    Ok(Some((index, reply))) => tally.record(index, reply, &self.servers),
                    _ => break,
                }
            }
        }
        tally
    }

    /// The lease a round that started at `started` grants: when a quorum said
    /// yes with validity left. Otherwise `Err(Some(TooSlow))` when the quorum
    /// came too late, `Err(None)` when there was none.
    fn lease(
        &self,
        key: &LockKey,
        token: &Token,
        ttl: Duration,
        started: BootInstant,
        tally: &Tally,
    ) -> Result<Lease, Option<LockError>> {
        if tally.yes.len() < self.quorum {
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
            validity,
            deadline: started + ttl.saturating_sub(drift(ttl)),
            held_on: tally.yes_servers(&self.servers),
            attempts: 1,
        })
    }

    fn not_held_or_no_quorum(&self, key: &LockKey, tally: Tally) -> LockError {
        if tally.yes.len() + tally.unanswered() < self.quorum {
            LockError::NotHeld {
                key: key.clone(),
                held: tally.yes.len(),
                total: self.len(),
                quorum: self.quorum,
                failures: tally.failures,
            }
        } else {
            self.no_quorum(key, tally)
        }
    }

    fn no_quorum(&self, key: &LockKey, tally: Tally) -> LockError {
        tally.failures.into_error(key, self.len(), self.quorum)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Until {
    /// Stop once the outcome is certain (acquire, extend).
    Decided,
    /// Wait for every server or its timeout (release).
    AllAnswered,
}

/// The replies of one round: which servers said yes, how many said no, and
/// which failed.
#[derive(Debug)]
struct Tally {
    total: usize,
    quorum: usize,
    yes: Vec<usize>,
    no: usize,
    failures: Failures,
}

impl Tally {
    fn new(total: usize, quorum: usize) -> Self {
        Tally {
            total,
            quorum,
            yes: Vec::new(),
            no: 0,
            failures: Failures::default(),
        }
    }

    fn answered(&self) -> usize {
        self.yes.len() + self.no
    }

    /// Failed or not (yet) heard from.
    fn unanswered(&self) -> usize {
        self.total - self.answered()
    }

    fn pending(&self) -> usize {
        self.unanswered() - self.failures.0.len()
    }

    /// Success is certain once a quorum said yes. Failure is certain once a
    /// quorum can no longer say yes; it is reported as soon as it is also
    /// clear whether the servers answered (busy) or not (no quorum).
    fn is_decided(&self) -> bool {
        let yes = self.yes.len();
        let can_still_answer = self.answered() + self.pending();
        yes >= self.quorum
            || (yes + self.pending() < self.quorum
                && (self.answered() >= self.quorum || can_still_answer < self.quorum))
    }

    fn record(&mut self, index: usize, reply: Result<bool, ServerError>, servers: &[Arc<Server>]) {
        match reply {
            Ok(true) => self.yes.push(index),
            Ok(false) => self.no += 1,
            Err(err) => self
                .failures
                .0
                .push((servers[index].spec().to_string(), err)),
        }
    }

    fn yes_servers(&self, servers: &[Arc<Server>]) -> Vec<String> {
        self.yes
            .iter()
            .map(|&i| servers[i].spec().to_string())
            .collect()
    }
}

/// The least time a decided round waits for the servers that have not
/// answered yet (see [`Redlock::round`]).
const STRAGGLER_PATIENCE: Duration = Duration::from_millis(2);

/// A random pause between attempts, so that competing clients that failed
/// together do not retry in lockstep: uniform in [base/2, 3·base/2), with the
/// base a tenth of the TTL, between 10ms and 200ms.
fn retry_delay(ttl: Duration) -> Duration {
    let base = (ttl / 10).clamp(Duration::from_millis(10), Duration::from_millis(200));
    let mut bytes = [0u8; 8];
    // Jitter needs no cryptographic quality; a failure just means no jitter.
    let _ = getrandom::fill(&mut bytes);
    let fraction = (u64::from_le_bytes(bytes) >> 11) as f64 / (1u64 << 53) as f64;
    base / 2 + base.mul_f64(fraction)
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn retry_delay_is_random_and_short_compared_with_the_ttl() {
        let ttl = Duration::from_secs(30);
        let delays: Vec<_> = (0..50).map(|_| retry_delay(ttl)).collect();
        assert!(delays
            .iter()
            .all(|d| *d >= Duration::from_millis(100) && *d < Duration::from_millis(300)));
        assert!(
            delays.iter().any(|d| *d != delays[0]),
            "no jitter: {delays:?}"
        );
        assert!(retry_delay(Duration::from_millis(100)) < Duration::from_millis(15));
    }

    fn tally(total: usize, yes: usize, no: usize, failed: usize) -> Tally {
        let mut tally = Tally::new(total, quorum(total));
        tally.yes = (0..yes).collect();
        tally.no = no;
        tally.failures.0 = (0..failed)
            .map(|i| (format!("s{i}"), ServerError::Failed("down".into())))
            .collect();
        tally
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

    fn inspection(states: Vec<Result<Option<&str>, ()>>) -> Inspection {
        let quorum = quorum(states.len());
        Inspection {
            key: LockKey::new(b"k".to_vec()),
            quorum,
            servers: states
                .into_iter()
                .enumerate()
                .map(|(i, s)| ServerState {
                    server: format!("s{i}"),
                    state: s
                        .map(|v| KeyState {
                            kind: if v.is_some() { "string" } else { "none" }.into(),
                            value: v.map(|v| v.as_bytes().to_vec()),
                            pttl_ms: if v.is_some() { 1000 } else { -2 },
                        })
                        .map_err(|()| ServerError::Failed("down".into())),
                })
                .collect(),
        }
    }

    #[test]
    fn verdict_needs_a_majority_and_admits_uncertainty() {
        let held = inspection(vec![Ok(Some("a")), Ok(Some("a")), Ok(None)]);
        assert_eq!(
            held.verdict(),
            Verdict::Held {
                value: b"a".to_vec(),
                on: 2
            }
        );
        let split = inspection(vec![Ok(Some("a")), Ok(Some("b")), Ok(None)]);
        assert_eq!(split.verdict(), Verdict::Free);
        let unsure = inspection(vec![Ok(Some("a")), Err(()), Ok(None)]);
        assert_eq!(unsure.verdict(), Verdict::Unknown);
        let free = inspection(vec![Ok(None), Err(()), Ok(None)]);
        assert_eq!(free.verdict(), Verdict::Free);
        let down = inspection(vec![Err(()), Err(()), Ok(None)]);
        assert_eq!(down.verdict(), Verdict::Unknown);
    }
}
