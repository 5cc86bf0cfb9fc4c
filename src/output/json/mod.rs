//! The documented JSON objects, one type each, written by serde_json. Field
//! names and meanings are part of the interface: see docs/guide.md.

mod doctor;

use std::io;

use serde::Serialize;

use super::format::{Format, Piece, SoFar};
pub use crate::duration::millis;
use crate::lock::{
    escape_bytes, is_hidden, DoneMark, HeldBy, Inspection, KeyState, Lease, Listed, Listing,
    LockError, LockKey, Recorded, Released, Said, ServerError, SharedHolder, Superseder, Tried,
    Verdict,
};
use crate::outcome::{Failed, Forcing, LockState, NotALock, Outcome, Slots};

/// One JSON object on stdout per run, for programs.
pub struct Json;

impl Format for Json {
    fn outcome(&self, outcome: &Outcome) -> io::Result<Option<String>> {
        let line = match outcome {
            Outcome::Acquired { lease, .. } | Outcome::Extended { lease, .. } => {
                to_line(&LeaseJson::new(lease))?
            }
            Outcome::BusyAs { error, tried, .. } => to_line(&FailureJson::new(error, *tried))?,
            Outcome::Released { key, released } => to_line(&ReleaseJson::new(key, released))?,
            Outcome::Status {
                inspection,
                verdict,
            } => {
                let occupied = inspection.occupied();
                to_line(&StatusJson::new(inspection, verdict, occupied.as_ref()))?
            }
            Outcome::Slots(slots) => {
                let occupied: Vec<_> = slots.slots.iter().map(|(i, _)| i.occupied()).collect();
                to_line(&SlotsJson::new(slots, &occupied))?
            }
            Outcome::Forced(forcing) => to_line(&ForcedJson::new(forcing))?,
            Outcome::MarkedDone { key, id, marked } => to_line(&MarkedJson {
                name: Name::of(key.bytes()),
                done: true,
                id,
                marked_on: marked.on.iter().map(ToString::to_string).collect(),
                servers: marked.total,
            })?,
            Outcome::ClearedDone {
                key,
                cleared_on,
                servers,
            } => to_line(&ClearedJson {
                name: Name::of(key.bytes()),
                cleared: *cleared_on > 0,
                cleared_on: *cleared_on,
                servers: *servers,
            })?,
            Outcome::Skipped { key, mark, .. } => to_line(&SkippedJson::new(key, mark))?,
            Outcome::Doctor(report) => doctor::json(report)?,
            // `exec --json` is refused; an interrupted wait prints nothing;
            // `list` writes its object as it reads (see `Output::listed`).
            Outcome::Ran(_)
            | Outcome::Interrupted { .. }
            | Outcome::Abandoned { .. }
            | Outcome::KeptAlready { .. }
            | Outcome::Generated
            | Outcome::Listed(_) => return Ok(None),
        };
        Ok(Some(line))
    }

    fn failure(&self, failed: &Failed<'_>) -> io::Result<Option<String>> {
        match failed {
            Failed::Lock { error, tried } => Ok(Some(to_line(&FailureJson::new(error, *tried))?)),
            Failed::Expired { .. } | Failed::KeeperStopped { .. } | Failed::Said(_) => Ok(None),
        }
    }

    /// The object's opening with the first batch, then the batch's locks,
    /// as elements of its `locks` array (see [`list_opening`]).
    fn list_batch(&self, batch: &Listing, so_far: &mut SoFar) -> io::Result<Vec<Piece>> {
        let entries = batch.entries();
        let comma = if so_far.any { "," } else { "" };
        let opening = match so_far.opened {
            true => String::new(),
            false => list_opening(batch).unwrap_or_default(),
        };
        so_far.opened = true;
        so_far.any |= !entries.is_empty();
        let locks = list_locks(&entries)?;
        Ok(vec![Piece::Partial(format!("{opening}{comma}{locks}"))])
    }

    /// The object's end (its opening too if no batch came).
    fn list_end(&self, listing: &Listing, so_far: &SoFar) -> io::Result<Option<Piece>> {
        let opening = match so_far.opened {
            true => String::new(),
            false => list_opening(listing)?,
        };
        let end = format!("{opening}{}", list_closing(listing)?);
        Ok(Some(Piece::Stdout(end)))
    }

    /// `held_on` and `released_on` name every server that said yes.
    fn shows_every_answer(&self) -> bool {
        true
    }
}

/// Arbitrary bytes (lock names, foreign values) as a JSON string: exactly,
/// when they are UTF-8 (JSON's own escapes cover control characters);
/// otherwise as `redlock` shows them in text, with `\xNN` for invalid bytes.
#[derive(Debug, Clone, Copy)]
pub struct Bytes<'a>(pub &'a [u8]);

impl Serialize for Bytes<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match std::str::from_utf8(self.0) {
            Ok(text) => serializer.serialize_str(text),
            Err(_) => serializer.serialize_str(&escape_bytes(self.0)),
        }
    }
}

/// A lock's name: `name` as [`Bytes`] writes it, and when it is not UTF-8
/// (so `name` had to be escaped, and two names could read alike) also
/// `name_hex`, its exact bytes, which `status --hex` and `release --hex`
/// take back.
#[derive(Debug, Serialize)]
struct Name<'a> {
    name: Bytes<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    name_hex: Option<String>,
}

impl<'a> Name<'a> {
    fn of(bytes: &'a [u8]) -> Self {
        Name {
            name: Bytes(bytes),
            name_hex: hex_unless_utf8(bytes),
        }
    }
}

/// The Redis key in `list --json`, with `key_hex` as [`Name`] has `name_hex`.
#[derive(Debug, Serialize)]
struct Key<'a> {
    key: Bytes<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    key_hex: Option<String>,
}

impl<'a> Key<'a> {
    fn of(bytes: &'a [u8]) -> Self {
        Key {
            key: Bytes(bytes),
            key_hex: hex_unless_utf8(bytes),
        }
    }
}

fn hex_unless_utf8(bytes: &[u8]) -> Option<String> {
    std::str::from_utf8(bytes)
        .is_err()
        .then(|| bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// `acquire --json`, `extend --json`.
#[derive(Debug, Serialize)]
pub struct LeaseJson<'a> {
    #[serde(flatten)]
    name: Name<'a>,
    token: &'a str,
    ttl_ms: u64,
    validity_ms: u64,
    held_on: Vec<String>,
    attempts: u32,
    /// `--limit K`: the slot held (`name` is the slot's own name, which
    /// `release` and `extend` take as any lock's), the semaphore's name and
    /// K; left out for a lock.
    #[serde(skip_serializing_if = "Option::is_none")]
    slot: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    semaphore: Option<Bytes<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    limit: Option<u32>,
    /// `acquire --fence`: the fencing token; absent without it.
    #[serde(skip_serializing_if = "Option::is_none")]
    fence: Option<u64>,
}

impl<'a> LeaseJson<'a> {
    pub fn new(lease: &'a Lease) -> Self {
        LeaseJson {
            name: Name::of(lease.key.bytes()),
            token: lease.token.as_str(),
            ttl_ms: millis(lease.ttl),
            validity_ms: millis(lease.validity()),
            held_on: lease.held_on.iter().map(ToString::to_string).collect(),
            attempts: lease.attempts,
            slot: lease.slot.as_ref().map(|slot| slot.index),
            semaphore: lease
                .slot
                .as_ref()
                .map(|slot| Bytes(slot.semaphore.bytes())),
            limit: lease.slot.as_ref().map(|slot| slot.limit),
            fence: lease.fence,
        }
    }
}

/// `release --json`.
#[derive(Debug, Serialize)]
struct ReleaseJson<'a> {
    #[serde(flatten)]
    name: Name<'a>,
    released: bool,
    /// The servers the key was deleted from, as acquire's `held_on`.
    released_on: Vec<String>,
    /// How many: what `released_on` was before it became a list.
    released_count: usize,
    servers: usize,
}

impl<'a> ReleaseJson<'a> {
    fn new(key: &'a LockKey, released: &Released) -> Self {
        ReleaseJson {
            name: Name::of(key.bytes()),
            released: true,
            released_on: released
                .released_on
                .iter()
                .map(ToString::to_string)
                .collect(),
            released_count: released.released_on.len(),
            servers: released.total,
        }
    }
}

/// A failure under `--json`: which kind, and the message; for a busy lock,
/// who holds it; for acquire, how long it tried.
#[derive(Debug, Serialize)]
struct FailureJson<'a> {
    #[serde(flatten)]
    name: Name<'a>,
    error: &'static str,
    message: String,
    holder: Option<HolderJson<'a>>,
    expires_in_ms: Option<u64>,
    attempts: u32,
    waited_ms: u64,
    /// The wait (`-w`) that ran out, when the command gave up because it
    /// did; `null` without one (`-n`) or when it failed for another reason.
    gave_up_after_ms: Option<u64>,
    /// Why each server that did not do its part did not, in
    /// configuration order (for extend and release, every server, with
    /// those that held the token).
    causes: Vec<CauseJson>,
    /// `--supersede`: the newer waiter that replaced this one.
    #[serde(skip_serializing_if = "Option::is_none")]
    superseded_by: Option<SupersederJson>,
}

/// Who superseded a waiter: its host and pid, and its `--serial`, or
/// when it arrived (ms since the Unix epoch, by the servers' clocks).
#[derive(Debug, Serialize)]
struct SupersederJson {
    host: String,
    pid: u32,
    serial: Option<u64>,
    arrived_ms: Option<u64>,
}

impl SupersederJson {
    fn of(error: &LockError) -> Option<Self> {
        match error {
            LockError::Superseded { by: Some(by), .. } => Some(SupersederJson::from(&**by)),
            _ => None,
        }
    }
}

impl From<&Superseder> for SupersederJson {
    fn from(by: &Superseder) -> Self {
        SupersederJson {
            host: by.host.clone(),
            pid: by.pid,
            serial: by.by_serial.then_some(by.order),
            arrived_ms: (!by.by_serial).then_some(by.order),
        }
    }
}

/// One server's part in a failure: `cause` is "holds_token", "token_gone"
/// (its key is gone: expired, released, restarted or flushed), "another_holder",
/// "unreachable", "refused", "timeout", "no_answer" (it had not answered
/// when the round ended) or "failed"; `error` is what the server or the
/// connection said.
#[derive(Debug, Serialize)]
struct CauseJson {
    server: String,
    cause: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

impl CauseJson {
    fn new(server: &impl ToString, said: &Said) -> Self {
        let (cause, error) = match said {
            Said::Holds => ("holds_token", None),
            Said::Gone => ("token_gone", None),
            Said::Taken => ("another_holder", None),
            Said::Failed(err) => (failure_cause(err), Some(err.to_string())),
        };
        CauseJson {
            server: server.to_string(),
            cause,
            error,
        }
    }

    /// What each server said, or failed to, in `error`.
    fn of(error: &LockError) -> Vec<CauseJson> {
        let failures = match error {
            LockError::NotHeld { round, .. }
            | LockError::NoQuorum {
                token: Some(round), ..
            } => {
                return round
                    .said
                    .iter()
                    .map(|(server, said)| CauseJson::new(server, said))
                    .collect()
            }
            LockError::NoQuorum { failures, .. }
            | LockError::Busy { failures, .. }
            | LockError::Refused { failures, .. }
            | LockError::Restarting { failures, .. } => failures,
            LockError::TooSlow { .. }
            | LockError::NoFenceLeft { .. }
            | LockError::Superseded { .. }
            | LockError::Done { .. } => return Vec::new(),
        };
        failures
            .0
            .iter()
            .map(|(server, err)| CauseJson::new(server, &Said::Failed(err.clone())))
            .collect()
    }
}

/// The `cause` of a server that failed.
fn failure_cause(err: &ServerError) -> &'static str {
    match err {
        ServerError::Unreachable(_) => "unreachable",
        ServerError::Refused(_) => "refused",
        ServerError::Timeout(_) => "timeout",
        ServerError::NoAnswerYet => "no_answer",
        _ => "failed",
    }
}

impl<'a> FailureJson<'a> {
    fn new(error: &'a LockError, tried: Tried) -> Self {
        let (held_by, expires_in) = match error {
            LockError::Busy {
                held_by,
                expires_in,
                ..
            } => (held_by.as_deref(), *expires_in),
            _ => (None, None),
        };
        FailureJson {
            name: Name::of(error.key().bytes()),
            error: failure_kind(error),
            message: super::words::failure(error, tried),
            holder: held_by.map(HolderJson::new),
            expires_in_ms: expires_in.map(millis),
            attempts: tried.attempts,
            waited_ms: millis(tried.waited),
            gave_up_after_ms: tried.gave_up_after.map(millis),
            causes: CauseJson::of(error),
            superseded_by: SupersederJson::of(error),
        }
    }
}

/// Who holds a lock: `kind` is "redlock" (with what it recorded),
/// "other_client" (another Redlock client's token, without a record) or
/// "non_redlock" (a key of another type).
#[derive(Debug, Serialize)]
struct HolderJson<'a> {
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    host: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pid: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    user: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    command: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    command_pid: Option<u32>,
    /// `acquire --while`: the keeper process extending the lock for `pid`.
    #[serde(skip_serializing_if = "Option::is_none")]
    keeper_pid: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    job: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    held_for_ms: Option<u64>,
    /// The record's start is this far after the server's clock (it went
    /// back): its age is unknown, and `held_for_ms` left out.
    #[serde(skip_serializing_if = "Option::is_none")]
    start_in_future_ms: Option<u64>,
    /// Whether `exec` holds the lock and renews it (so `expires_in_ms`
    /// moves on at every renewal), and how often, when it said.
    #[serde(skip_serializing_if = "Option::is_none")]
    kept_alive_by_exec: Option<bool>,
    /// Whether an `acquire --while` keeper renews it while `pid` lives.
    #[serde(skip_serializing_if = "Option::is_none")]
    kept_alive_by_keeper: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    renew_every_ms: Option<u64>,
    /// `exec --cancel-in-progress`: a newer waiter may stop it (true, or
    /// left out), and its `--serial` if it gave one.
    #[serde(skip_serializing_if = "Option::is_none")]
    cancellable: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    serial: Option<u64>,
    /// Whether the holder ran on this host and its process is gone (the
    /// lock then lasts only until it expires); `false` when that cannot be
    /// told.
    #[serde(skip_serializing_if = "Option::is_none")]
    holder_pid_gone: Option<bool>,
    /// Whether what renews the lock (`exec`, or the keeper of `acquire
    /// --while`) ran on this host and is stopped (Ctrl-Z, SIGSTOP), so
    /// that nothing renews it until it is continued; `false` when that
    /// cannot be told (another host).
    #[serde(skip_serializing_if = "Option::is_none")]
    renewer_stopped: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    token: Option<Bytes<'a>>,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    value_type: Option<&'a str>,
    /// How many readers hold it (`--shared`), for the holder "readers".
    #[serde(skip_serializing_if = "Option::is_none")]
    readers: Option<u64>,
}

impl<'a> HolderJson<'a> {
    fn new(held_by: &'a HeldBy) -> Self {
        let none = HolderJson {
            kind: "",
            host: None,
            pid: None,
            user: None,
            command: None,
            command_pid: None,
            keeper_pid: None,
            message: None,
            job: None,
            held_for_ms: None,
            start_in_future_ms: None,
            kept_alive_by_exec: None,
            kept_alive_by_keeper: None,
            renew_every_ms: None,
            cancellable: None,
            serial: None,
            holder_pid_gone: None,
            renewer_stopped: None,
            token: None,
            value_type: None,
            readers: None,
        };
        match held_by {
            HeldBy::Redlock(recorded) => HolderJson::recorded(recorded),
            HeldBy::OtherClient { token } => HolderJson {
                kind: "other_client",
                token: Some(Bytes(token)),
                ..none
            },
            HeldBy::NonRedlock { kind } => HolderJson {
                kind: "non_redlock",
                value_type: Some(kind),
                ..none
            },
            HeldBy::Readers { count } => HolderJson {
                kind: "readers",
                readers: Some(*count),
                ..none
            },
        }
    }

    /// A redlock holder (a writer, or a reader) by its record.
    fn recorded(recorded: &'a Recorded) -> Self {
        let holder = &recorded.holder;
        HolderJson {
            kind: "redlock",
            host: Some(&holder.host),
            pid: Some(holder.pid),
            user: Some(&holder.user),
            command: holder.command.as_deref(),
            command_pid: holder.command_pid,
            keeper_pid: holder.keeper_pid,
            message: holder.message.as_deref(),
            job: holder.job.as_deref(),
            held_for_ms: recorded.held_for.map(millis),
            start_in_future_ms: recorded.ahead.map(millis),
            kept_alive_by_exec: Some(
                !recorded.pid_gone
                    && !recorded.renewer_stopped
                    && holder.keeper_pid.is_none()
                    && super::words::kept_alive(holder).is_some(),
            ),
            kept_alive_by_keeper: Some(
                !recorded.pid_gone
                    && !recorded.keeper_gone
                    && !recorded.renewer_stopped
                    && holder.keeper_pid.is_some(),
            ),
            renew_every_ms: holder.renew_every_ms,
            cancellable: holder.cancellable.then_some(true),
            serial: holder.serial,
            holder_pid_gone: Some(recorded.pid_gone),
            renewer_stopped: Some(recorded.renewer_stopped),
            token: None,
            value_type: None,
            readers: None,
        }
    }
}

/// The `error` field of a failure.
fn failure_kind(error: &LockError) -> &'static str {
    match error {
        LockError::Busy { .. } => "busy",
        LockError::NoQuorum { .. } => "no_quorum",
        LockError::TooSlow { .. } => "too_slow",
        LockError::NoFenceLeft { .. } => "no_fence_left",
        LockError::NotHeld { .. } => "not_held",
        LockError::Refused { .. } => "refused",
        LockError::Restarting { .. } => "restarting",
        LockError::Superseded { .. } => "superseded",
        LockError::Done { .. } => "done",
    }
}

/// `status --json`.
#[derive(Debug, Serialize)]
pub struct StatusJson<'a> {
    #[serde(flatten)]
    name: Name<'a>,
    state: LockState,
    /// `null` when the state is unknown.
    held: Option<bool>,
    token: Option<Bytes<'a>>,
    holder: Option<HolderJson<'a>>,
    /// When a majority of servers will let it go; `null` when it is not
    /// held, or its key has no expiry.
    expires_in_ms: Option<u64>,
    /// The same shape as acquire's `held_on`: the servers holding the token.
    held_on: Vec<String>,
    /// How many waiters stand in the lock's line.
    waiters_in_line: u64,
    /// The pending superseding waiter (`--supersede`); `null` for none.
    superseding_waiter: Option<SupersederJson>,
    /// How many readers (`--shared`) hold it on a majority.
    readers: u64,
    /// Those readers, as far as each server listed them (up to 16).
    shared_holders: Vec<SharedHolderJson>,
    /// Who broke the lock with `release --force` and how long ago, while
    /// what was left of its TTL lasts; `null` otherwise.
    broken: Option<BrokenJson>,
    /// The last fencing token handed out: the highest counter on the
    /// servers that answered; `null` for a name never taken with --fence.
    fence: Option<u64>,
    /// The done mark of a run once (`--once-per`, `--once`) on most
    /// servers; left out when there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    done: Option<DoneJson>,
    quorum: usize,
    /// How many servers answered, and how many of those the restart guard
    /// keeps out (each one's `restarting_ms` and `restarting_cause` say for
    /// how long and why): "unknown" with every server answering is the
    /// guard, not an outage.
    answered: usize,
    kept_out_by_guard: usize,
    servers: Vec<ServerJson<'a>>,
}

/// `status --limit K --json`: the semaphore, its counts, and every slot as
/// `status --json` shows a lock, with its index.
#[derive(Debug, Serialize)]
pub struct SlotsJson<'a> {
    #[serde(flatten)]
    name: Name<'a>,
    limit: u32,
    held: usize,
    free: usize,
    slots: Vec<SlotJson<'a>>,
}

#[derive(Debug, Serialize)]
struct SlotJson<'a> {
    slot: usize,
    #[serde(flatten)]
    status: StatusJson<'a>,
}

impl<'a> SlotsJson<'a> {
    /// `occupied`: each slot's [`Inspection::occupied`], in slot order.
    pub fn new(slots: &'a Slots, occupied: &'a [Option<crate::lock::Occupied>]) -> Self {
        SlotsJson {
            name: Name::of(slots.semaphore.key.bytes()),
            limit: slots.semaphore.limit,
            held: slots.held(),
            free: slots.free(),
            slots: slots
                .slots
                .iter()
                .enumerate()
                .zip(occupied)
                .map(|((slot, (inspection, verdict)), occupied)| SlotJson {
                    slot,
                    status: StatusJson::new(inspection, verdict, occupied.as_ref()),
                })
                .collect(),
        }
    }
}

/// One server's view in `status --json`: its key's state, or why it did not
/// answer.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum ServerJson<'a> {
    Answered {
        server: String,
        exists: bool,
        #[serde(rename = "type")]
        kind: &'a str,
        token: Option<Bytes<'a>>,
        ttl_ms: i64,
        error: Option<String>,
        /// Milliseconds until the restart guard counts this server again;
        /// 0 when it counts.
        restarting_ms: u64,
        /// Why the restart guard keeps it out (guard.lua's word), when it
        /// does.
        #[serde(skip_serializing_if = "Option::is_none")]
        restarting_cause: Option<&'static str>,
        /// How many live readers (`--shared`) it holds.
        readers: u64,
    },
    Failed {
        server: String,
        error: String,
    },
}

impl<'a> StatusJson<'a> {
    pub fn new(
        inspection: &'a Inspection,
        verdict: &'a Verdict,
        occupied: Option<&'a crate::lock::Occupied>,
    ) -> Self {
        let servers = inspection
            .servers
            .iter()
            .map(|s| match &s.state {
                Ok(KeyState {
                    kind,
                    value,
                    pttl_ms,
                    restarting,
                    readers,
                    ..
                }) => ServerJson::Answered {
                    readers: readers.count,
                    server: s.server.to_string(),
                    exists: kind != "none",
                    kind,
                    token: value.as_deref().map(Bytes),
                    ttl_ms: *pttl_ms,
                    error: None,
                    restarting_ms: restarting.map_or(0, |g| millis(g.left)),
                    restarting_cause: restarting.map(|g| g.cause.as_str()),
                },
                Err(err) => ServerJson::Failed {
                    server: s.server.to_string(),
                    error: err.to_string(),
                },
            })
            .collect();
        let state = LockState::of(verdict, inspection.readers());
        let token = match verdict {
            Verdict::Held { value, .. } => Some(value.as_slice()),
            _ => None,
        };
        let held_on = token
            .map(|token| inspection.holding(token))
            .unwrap_or_default();
        StatusJson {
            name: Name::of(inspection.key.bytes()),
            state,
            held: (state != LockState::Unknown)
                .then_some(matches!(state, LockState::Held | LockState::Shared)),
            token: token.map(Bytes),
            holder: occupied.map(|o| HolderJson::new(&o.held_by)),
            expires_in_ms: occupied.and_then(|o| o.expires_in).map(millis),
            held_on: held_on.iter().map(ToString::to_string).collect(),
            waiters_in_line: inspection.waiters(),
            superseding_waiter: inspection.superseder().as_ref().map(SupersederJson::from),
            readers: inspection.readers(),
            shared_holders: inspection
                .shared_holders()
                .iter()
                .map(SharedHolderJson::from)
                .collect(),
            broken: inspection.broken().map(|broken| BrokenJson {
                by: String::from_utf8_lossy(&broken.by).into_owned(),
                ago_ms: broken.ago.map(millis),
            }),
            fence: inspection.fence(),
            done: (inspection.done.as_ref()).map(|(mark, on)| DoneJson::new(mark, *on)),
            quorum: inspection.quorum,
            answered: inspection
                .servers
                .iter()
                .filter(|s| s.state.is_ok())
                .count(),
            kept_out_by_guard: inspection
                .servers
                .iter()
                .filter(|s| matches!(&s.state, Ok(state) if state.restarting.is_some()))
                .count(),
            servers,
        }
    }
}

/// One reader in `status --json` and `list --json`.
#[derive(Debug, Serialize)]
struct SharedHolderJson {
    token: String,
    expires_in_ms: u64,
    on: usize,
    /// Who it is, as `holder` shows a writer (kind "redlock"), from its
    /// record; `null` for a reader that recorded nothing.
    holder: Option<serde_json::Value>,
}

impl From<&SharedHolder> for SharedHolderJson {
    fn from(reader: &SharedHolder) -> Self {
        SharedHolderJson {
            token: match std::str::from_utf8(&reader.token) {
                Ok(text) => text.to_owned(),
                Err(_) => escape_bytes(&reader.token),
            },
            expires_in_ms: millis(reader.expires_in),
            on: reader.on,
            // Serializing plain strings and numbers cannot fail.
            holder: reader
                .recorded
                .as_deref()
                .and_then(|r| serde_json::to_value(HolderJson::recorded(r)).ok()),
        }
    }
}

#[derive(Debug, Serialize)]
struct BrokenJson {
    by: String,
    ago_ms: Option<u64>,
}

/// `list --json`: one object, `{"prefix", "pattern", "locks": [...],
/// "servers", "quorum", "failed"}`, written in three parts so that the
/// locks go out a batch at a time as they are read: [`list_opening`],
/// [`list_locks`] for each batch, and [`list_closing`].
#[derive(Debug, Serialize)]
struct ListOpening<'a> {
    prefix: Bytes<'a>,
    pattern: Bytes<'a>,
}

/// The end of `list --json`, after its locks.
#[derive(Debug, Serialize)]
struct ListClosing {
    /// How many servers are configured, and how many make a majority.
    servers: usize,
    quorum: usize,
    /// The servers whose locks are not known (or do not count), in
    /// configuration order.
    failed: Vec<FailedJson>,
    /// Whether a majority of the servers answered (and count), so that
    /// the locks listed are every lock that matches; when not, an empty
    /// `locks` says nothing.
    complete: bool,
    /// Why not, as a failure's `error` ("no_quorum", "restarting",
    /// "refused"); `null` when complete.
    error: Option<&'static str>,
    message: Option<String>,
}

/// One lock of `list --json`, with `status --json`'s fields.
#[derive(Debug, Serialize)]
struct ListedJson<'a> {
    /// Without the prefix: what `status` or `release --force` takes.
    #[serde(flatten)]
    name: Name<'a>,
    /// The Redis key: the prefix and the name.
    #[serde(flatten)]
    key: Key<'a>,
    /// "held", "shared" (readers on a majority), "minority" or "unknown".
    state: &'static str,
    token: Option<Bytes<'a>>,
    holder: Option<HolderJson<'a>>,
    /// When a majority lets it go; `null` unless held, or with no expiry.
    /// For "shared", when the last reader on a majority lapses.
    expires_in_ms: Option<u64>,
    held_on: Vec<String>,
    /// How many readers (`--shared`) hold it: on a majority for "shared",
    /// else the most any server holds; 0 for none.
    readers: u64,
    /// The readers on a majority, with who they are (up to 16); empty
    /// unless "shared".
    shared_holders: Vec<SharedHolderJson>,
    /// The pending superseding waiter (`--supersede`); `null` for none.
    superseding_waiter: Option<SupersederJson>,
    /// The done mark of a run once (`--once-per`, `--once`) on most
    /// servers, as `status --json`'s; left out when there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    done: Option<DoneJson>,
}

/// A server that failed (or that the restart guard keeps out).
#[derive(Debug, Serialize)]
struct FailedJson {
    server: String,
    error: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    restarting_ms: Option<u64>,
    /// Why the restart guard keeps it out (guard.lua's word), when it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    restarting_cause: Option<&'static str>,
}

/// `{"prefix":…,"pattern":…,"locks":[`
fn list_opening(listing: &Listing) -> io::Result<String> {
    let opening = to_line(&ListOpening {
        prefix: Bytes(&listing.query.prefix),
        pattern: Bytes(&listing.query.pattern),
    })?;
    Ok(format!("{},\"locks\":[", opening.trim_end_matches('}')))
}

/// The locks of one batch, as array elements joined by commas.
fn list_locks(entries: &[Listed<'_>]) -> io::Result<String> {
    let locks: Vec<String> = entries
        .iter()
        .map(|entry| {
            to_line(&ListedJson {
                name: Name::of(entry.name),
                key: Key::of(entry.lock.key.bytes()),
                state: super::words::standing(entry.standing),
                token: entry.token.as_deref().map(Bytes),
                holder: entry.occupied.as_ref().map(|o| HolderJson::new(&o.held_by)),
                expires_in_ms: match entry.standing {
                    crate::lock::Standing::Held | crate::lock::Standing::Shared => {
                        entry.occupied.as_ref()
                    }
                    _ => None,
                }
                .and_then(|o| o.expires_in)
                .map(millis),
                held_on: entry.held_on.iter().map(ToString::to_string).collect(),
                readers: match entry.occupied.as_ref().map(|o| &o.held_by) {
                    Some(HeldBy::Readers { count }) => *count,
                    _ => 0,
                },
                shared_holders: entry.readers.iter().map(SharedHolderJson::from).collect(),
                superseding_waiter: entry.superseder.as_ref().map(SupersederJson::from),
                done: (entry.lock.done.as_ref()).map(|(mark, on)| DoneJson::new(mark, *on)),
            })
        })
        .collect::<io::Result<_>>()?;
    Ok(locks.join(","))
}

/// `],"servers":…,"quorum":…,"failed":[…]}`
fn list_closing(listing: &Listing) -> io::Result<String> {
    let failed = listing
        .servers
        .iter()
        .filter_map(|part| {
            let (error, restarting_ms) = match &part.state {
                Ok(None) => return None,
                Ok(Some(guarded)) => (
                    super::words::server_restarting(*guarded),
                    Some(millis(guarded.left)),
                ),
                Err(err) => (err.to_string(), None),
            };
            Some(FailedJson {
                server: part.server.to_string(),
                error,
                restarting_ms,
                restarting_cause: match &part.state {
                    Ok(Some(guarded)) => Some(guarded.cause.as_str()),
                    _ => None,
                },
            })
        })
        .collect();
    let no_quorum = listing.no_quorum();
    let shown = escape_bytes(&[listing.query.prefix.as_slice(), &listing.query.pattern].concat());
    let closing = to_line(&ListClosing {
        servers: listing.servers.len(),
        quorum: listing.quorum,
        failed,
        complete: no_quorum.is_none(),
        error: no_quorum.as_ref().map(failure_kind),
        message: no_quorum.map(|err| super::words::unlisted(&shown, &err)),
    })?;
    Ok(format!("],{}", closing.trim_start_matches('{')))
}

/// `release --force --json`: `release --json`'s fields, and what was broken.
#[derive(Debug, Serialize)]
pub struct ForcedJson<'a> {
    #[serde(flatten)]
    name: Name<'a>,
    forced: bool,
    /// Whether a lock was deleted on any server.
    released: bool,
    /// What it was before, as `status` says: "held", "shared", "free" or
    /// "unknown".
    state: LockState,
    token: Option<Bytes<'a>>,
    holder: Option<HolderJson<'a>>,
    released_on: Vec<String>,
    released_count: usize,
    servers: usize,
    /// Servers where the key is not a lock (another type, no expiry, a
    /// value longer than any token, or neither a redlock token nor beside
    /// a holder record) and was left alone.
    left_alone: Vec<LeftAloneJson<'a>>,
    /// With `--if-token`: the servers where another token held it, left
    /// alone.
    held_by_another: Vec<String>,
    /// How many waiters stood in the line that was cleared with it.
    waiters_cleared: u64,
    /// How many live readers (`--shared`) were removed, with their holder
    /// records (state "shared" before), and on which servers.
    readers_removed: u64,
    readers_removed_on: Vec<String>,
    failed: Vec<FailedJson>,
}

#[derive(Debug, Serialize)]
struct LeftAloneJson<'a> {
    server: String,
    #[serde(rename = "type")]
    kind: &'a str,
    /// "type", "no_expiry", "too_long" or "not_token".
    reason: NotALock,
}

impl<'a> ForcedJson<'a> {
    pub fn new(forcing: &'a Forcing) -> Self {
        let before = &forcing.forced.before;
        let released_on = forcing.deleted_on.iter().map(ToString::to_string);
        let released_on: Vec<String> = released_on.collect();
        let occupied = forcing.occupied.as_ref();
        let token = occupied.and_then(|o| match &o.held_by {
            HeldBy::Redlock(recorded) => Some(recorded.holder.token.as_bytes()),
            HeldBy::OtherClient { token } => Some(token.as_slice()),
            HeldBy::NonRedlock { .. } | HeldBy::Readers { .. } => None,
        });
        let readers_removed_on: Vec<String> = forcing
            .readers_removed_on
            .iter()
            .map(|(server, _)| server.to_string())
            .collect();
        ForcedJson {
            name: Name::of(before.key.bytes()),
            forced: true,
            released: !released_on.is_empty() || !readers_removed_on.is_empty(),
            readers_removed: forcing.readers_removed(),
            readers_removed_on,
            state: forcing.was,
            token: token.map(Bytes),
            holder: occupied.map(|o| HolderJson::new(&o.held_by)),
            released_count: released_on.len(),
            released_on,
            servers: before.servers.len(),
            left_alone: forcing
                .left_alone
                .iter()
                .map(|left| LeftAloneJson {
                    server: left.server.to_string(),
                    kind: &left.kind,
                    reason: left.why,
                })
                .collect(),
            held_by_another: forcing
                .held_by_another
                .iter()
                .map(ToString::to_string)
                .collect(),
            waiters_cleared: before.waiters(),
            failed: forcing
                .not_reached
                .iter()
                .map(|(server, err)| FailedJson {
                    server: server.to_string(),
                    error: err.to_string(),
                    restarting_ms: None,
                    restarting_cause: None,
                })
                .collect(),
        }
    }
}

/// `value` as one line of JSON. Control characters that JSON can write as
/// `\b` and `\f` are written as `\u0008` and `\u000c`, as redlock always has.
pub fn to_line(value: &impl Serialize) -> io::Result<String> {
    let mut line = Vec::new();
    let mut serializer = serde_json::Serializer::with_formatter(&mut line, Compact);
    value.serialize(&mut serializer).map_err(io::Error::other)?;
    String::from_utf8(line).map_err(io::Error::other)
}

struct Compact;

impl serde_json::ser::Formatter for Compact {
    fn write_char_escape<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        escape: serde_json::ser::CharEscape,
    ) -> io::Result<()> {
        use serde_json::ser::CharEscape;
        match escape {
            CharEscape::Backspace => writer.write_all(b"\\u0008"),
            CharEscape::FormFeed => writer.write_all(b"\\u000c"),
            other => serde_json::ser::CompactFormatter.write_char_escape(writer, other),
        }
    }

    /// serde_json escapes only C0 controls, quotes and backslashes; what
    /// else would not show as itself (C1 controls such as CSI, DEL, bidi
    /// overrides, look-alike blanks: `is_hidden`) is written as `\uXXXX`
    /// too, which a JSON reader turns back into the very same text.
    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        if fragment.bytes().all(|b| (0x20..0x7f).contains(&b)) {
            return writer.write_all(fragment.as_bytes());
        }
        let mut plain = 0;
        for (at, c) in fragment.char_indices() {
            if !is_hidden(c) {
                continue;
            }
            writer.write_all(&fragment.as_bytes()[plain..at])?;
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                write!(writer, "\\u{unit:04x}")?;
            }
            plain = at + c.len_utf8();
        }
        writer.write_all(&fragment.as_bytes()[plain..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Sample<'a> {
        name: Bytes<'a>,
        raw: Bytes<'a>,
        none: Option<Bytes<'a>>,
        list: Vec<&'a str>,
    }

    #[test]
    fn what_would_not_show_as_itself_is_escaped_and_reads_back_the_same() {
        let hostile = "csi\u{9b}2J del\u{7f} \u{202e}fdp.exe \u{3164} \u{1f600}\u{e0001}";
        let line = to_line(&Bytes(hostile.as_bytes())).unwrap();
        assert_eq!(
            line,
            r#""csi\u009b2J del\u007f \u202efdp.exe \u3164 😀\udb40\udc01""#
        );
        let back: String = serde_json::from_str(&line).unwrap();
        assert_eq!(back, hostile);
    }

    #[test]
    fn json_is_escaped_like_before_and_on_one_line() {
        let sample = Sample {
            name: Bytes("a\"b\\c\n\u{1}\u{8}\u{c}\u{1b}é".as_bytes()),
            raw: Bytes(b"a\xff"),
            none: None,
            list: vec!["x", "y\""],
        };
        assert_eq!(
            to_line(&sample).unwrap(),
            r#"{"name":"a\"b\\c\n\u0001\u0008\u000c\u001bé","raw":"a\\xff","none":null,"list":["x","y\""]}"#
        );
    }
}

/// `--once-per`, `--once`: done already this period (or for this key).
#[derive(Serialize)]
struct SkippedJson<'a> {
    #[serde(flatten)]
    name: Name<'a>,
    skipped: bool,
    /// The run's id (`per:PERIOD_MS:OFFSET_MS:N` or `key:KEY`).
    done: String,
    /// Who did it, when (the server's clock, ms since the epoch) and how
    /// its command ended.
    done_by_host: Option<String>,
    done_by_pid: Option<u32>,
    done_at_ms: Option<u64>,
    status: i32,
}

impl<'a> SkippedJson<'a> {
    fn new(key: &'a LockKey, mark: &DoneMark) -> Self {
        SkippedJson {
            name: Name::of(key.bytes()),
            skipped: true,
            done: mark.id.clone(),
            done_by_host: mark.holder.as_ref().map(|h| h.host.clone()),
            done_by_pid: mark.holder.as_ref().map(|h| h.pid),
            done_at_ms: mark.finished_ms,
            status: mark.status,
        }
    }
}

/// `done`: the run's mark, and where it is.
#[derive(Serialize)]
struct MarkedJson<'a> {
    #[serde(flatten)]
    name: Name<'a>,
    done: bool,
    /// The run's id (`per:PERIOD_MS:OFFSET_MS:N` or `key:KEY`).
    id: &'a str,
    /// The servers that hold the mark, as acquire's `held_on`.
    marked_on: Vec<String>,
    servers: usize,
}

/// `status --json`'s `done`: a run once's mark.
#[derive(Debug, Serialize)]
struct DoneJson {
    /// The run's id (`per:PERIOD_MS:OFFSET_MS:N` or `key:KEY`).
    id: String,
    /// For a period: when it ends, in ms since the epoch (UTC).
    period_ends_ms: Option<u64>,
    done_by_host: Option<String>,
    done_by_pid: Option<u32>,
    done_at_ms: Option<u64>,
    status: i32,
    /// How many servers hold it.
    on: usize,
}

impl DoneJson {
    fn new(mark: &DoneMark, on: usize) -> Self {
        let run = crate::lock::OnceRun::from_id(&mark.id, std::time::Duration::ZERO);
        DoneJson {
            id: mark.id.clone(),
            period_ends_ms: run.and_then(|run| run.ends_at_ms),
            done_by_host: mark.holder.as_ref().map(|h| h.host.clone()),
            done_by_pid: mark.holder.as_ref().map(|h| h.pid),
            done_at_ms: mark.finished_ms,
            status: mark.status,
            on,
        }
    }
}

/// `release --force --done`: whether a done mark was deleted, and from
/// how many servers.
#[derive(Serialize)]
struct ClearedJson<'a> {
    #[serde(flatten)]
    name: Name<'a>,
    cleared: bool,
    cleared_on: usize,
    servers: usize,
}
