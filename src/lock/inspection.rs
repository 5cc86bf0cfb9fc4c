//! What every server holds for one lock, and who holds it as far as a
//! majority can tell.

use super::done_mark::DoneMark;
use std::time::Duration;

use super::core::quorum::{no_quorum, KeptOut};
use super::core::servers::ServerError;
use super::error::{Failures, LockError};
use super::guard::Guarded;
use super::holder::HeldBy;
use super::key::LockKey;
use super::scripts::{ForceReply, InspectReply, Occupant, Restarting};
use super::server_url::ServerSpec;
use super::shared::{self, ReadersSeen, SharedHolder, READERS_KIND};
use super::supersede::Superseder;

/// What one server holds under a lock's key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyState {
    /// Redis' TYPE: "none" for a missing key, "string" for a lock.
    pub kind: String,
    /// The value, when the key is a string (the holder's token).
    pub value: Option<Vec<u8>>,
    /// Remaining milliseconds; -1 for a key without expiry, -2 for none.
    pub pttl_ms: i64,
    /// The server started within the restart guard: it counts again after
    /// this long. What it holds is not evidence either way until then.
    pub restarting: Option<Guarded>,
    /// The holder record beside the key, as stored (see `holder.rs`).
    pub record: Option<Vec<u8>>,
    /// The server's clock in ms when it answered, for the record's age.
    pub now_ms: Option<u64>,
    /// How many waiters stood in the lock's line (status and
    /// `release --force` ask; 0 elsewhere).
    pub waiters: u64,
    /// Who broke the lock with `release --force`, as recorded beside it
    /// (status asks; `None` elsewhere).
    pub broken: Option<Vec<u8>>,
    /// The lock's fencing counter on this server (status asks; `None`
    /// elsewhere, and where there is none).
    pub fence: Option<u64>,
    /// The live readers (shared holders) it holds (status asks, and a
    /// writer's attempt that they keep out says how many; none elsewhere).
    pub readers: ReadersSeen,
    /// The pending superseding waiter (`--supersede`) as kept here (status
    /// asks; `None` elsewhere).
    pub superseder: Option<Vec<u8>>,
}

/// Who broke a lock with `release --force`, and how long ago by the
/// server's clock. Information only, from a server: escaped when shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Broken {
    pub by: Vec<u8>,
    pub ago: Option<Duration>,
}

impl Broken {
    /// Reads `"<since ms> <who>"` against the server's clock `now_ms`.
    fn parse(raw: &[u8], now_ms: Option<u64>) -> Option<Broken> {
        let space = raw.iter().position(|&b| b == b' ')?;
        let since: u64 = std::str::from_utf8(&raw[..space]).ok()?.parse().ok()?;
        Some(Broken {
            by: raw[space + 1..].to_vec(),
            ago: now_ms.map(|now| Duration::from_millis(now.saturating_sub(since))),
        })
    }
}

impl KeyState {
    /// What a script's `occupant()` says, with what the restart guard and
    /// the line say beside it where the script asked them.
    pub(super) fn new(occupant: Occupant, restarting: Option<&Restarting>, waiters: u64) -> Self {
        KeyState {
            kind: occupant.kind,
            value: occupant.value,
            pttl_ms: occupant.pttl_ms,
            restarting: restarting.map(|r| r.guarded),
            record: occupant.record,
            now_ms: occupant.clock,
            waiters,
            broken: None,
            fence: None,
            readers: ReadersSeen::default(),
            superseder: None,
        }
    }

    /// An exclusive attempt's answer that `count` live readers hold the
    /// lock here, their set lapsing in `pttl_ms`.
    pub(super) fn readers(count: u64, pttl_ms: i64, now_ms: Option<u64>) -> Self {
        KeyState {
            readers: ReadersSeen {
                count,
                holders: Vec::new(),
                clock: now_ms,
            },
            ..KeyState::new(
                Occupant {
                    kind: READERS_KIND.to_owned(),
                    value: None,
                    pttl_ms,
                    record: None,
                    clock: now_ms,
                },
                None,
                0,
            )
        }
    }

    /// Who holds the key, `None` when nothing does.
    pub fn held_by(&self) -> Option<HeldBy> {
        if self.kind == READERS_KIND {
            return Some(HeldBy::Readers {
                count: self.readers.count,
            });
        }
        (self.kind != "none").then(|| {
            HeldBy::of(
                &self.kind,
                self.value.as_deref(),
                self.record.as_deref(),
                self.now_ms,
            )
        })
    }

    /// What a majority must agree on for a lock to be held: the type and,
    /// for strings, the value.
    fn occupation(&self) -> Option<Occupation<'_>> {
        (self.kind != "none").then_some((self.kind.as_str(), self.value.as_deref()))
    }
}

/// A key's type and, for strings, its value: what servers must agree on.
type Occupation<'a> = (&'a str, Option<&'a [u8]>);

/// Who holds a lock and when a majority of servers will let it go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Occupied {
    pub held_by: HeldBy,
    /// How many of the servers looked at agree on it.
    pub on: usize,
    /// When the quorum-th server's key expires; `None` when it has no expiry.
    pub expires_in: Option<Duration>,
}

impl Occupied {
    /// The occupant most of `seen` agree on; its record from the first
    /// server that has one, its expiry as the quorum-th longest of theirs.
    pub(super) fn by_most(seen: &[&KeyState], quorum: usize) -> Option<Occupied> {
        let most = seen
            .iter()
            .filter_map(|s| s.occupation())
            .max_by_key(|o| seen.iter().filter(|s| s.occupation() == Some(*o)).count())?;
        let agreeing: Vec<&KeyState> = seen
            .iter()
            .copied()
            .filter(|s| s.occupation() == Some(most))
            .collect();
        let held_by = agreeing
            .iter()
            .filter_map(|s| s.held_by())
            .find(|h| matches!(h, HeldBy::Redlock(_)))
            .or_else(|| agreeing[0].held_by())?;
        let mut left: Vec<i64> = agreeing.iter().map(|s| s.pttl_ms).collect();
        left.sort_unstable_by(|a, b| b.cmp(a));
        let expires_in = if left.contains(&-1) {
            None
        } else {
            let nth = left[quorum.min(left.len()) - 1];
            Some(Duration::from_millis(u64::try_from(nth).unwrap_or(0)))
        };
        Some(Occupied {
            held_by,
            on: agreeing.len(),
            expires_in,
        })
    }
}

#[derive(Debug, Clone)]
pub struct ServerState {
    pub server: ServerSpec,
    pub state: Result<KeyState, ServerError>,
}

/// Every server's view of one lock, in configuration order.
#[derive(Debug, Clone)]
pub struct Inspection {
    pub key: LockKey,
    pub quorum: usize,
    pub servers: Vec<ServerState>,
    /// The restart guard the servers were judged by (`None`: off).
    pub restart_guard: Option<std::time::Duration>,
    /// `status`: the done mark of a run once beside the lock (the one on
    /// most servers), and on how many; `None` for none, or not asked.
    pub done: Option<(DoneMark, usize)>,
}

/// Who holds a lock, as far as a majority can tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// One value holds at least a quorum of servers.
    Held { value: Vec<u8>, on: usize },
    /// A key of another type than a lock's is on at least a quorum of
    /// servers: held, though by no Redlock client.
    Foreign { kind: String, on: usize },
    /// No value can hold a quorum, even counting the servers that did not answer.
    Free,
    /// Too few servers answered to tell.
    Unknown,
}

impl Inspection {
    pub fn verdict(&self) -> Verdict {
        let unanswered = self
            .servers
            .iter()
            .filter(|s| !matches!(&s.state, Ok(state) if state.restarting.is_none()))
            .count();
        let mut best: Option<(Occupation, usize)> = None;
        for seen in self.occupations() {
            let on = self.occupations().filter(|o| *o == seen).count();
            if best.is_none_or(|(_, most)| on > most) {
                best = Some((seen, on));
            }
        }
        match best {
            Some(((_, Some(value)), on)) if on >= self.quorum => Verdict::Held {
                value: value.to_vec(),
                on,
            },
            Some(((kind, None), on)) if on >= self.quorum => Verdict::Foreign {
                kind: kind.to_owned(),
                on,
            },
            _ if best.map_or(0, |(_, on)| on) + unanswered < self.quorum => Verdict::Free,
            _ => Verdict::Unknown,
        }
    }

    /// How many waiters stand in the lock's line: the most any server that
    /// Who broke the lock with `release --force`, if a server recorded it
    /// (the most recent such record).
    pub fn broken(&self) -> Option<Broken> {
        self.servers
            .iter()
            .filter_map(|s| {
                let state = s.state.as_ref().ok()?;
                Broken::parse(state.broken.as_deref()?, state.now_ms)
            })
            .min_by_key(|broken| broken.ago)
    }

    /// The readers (shared holders) on a majority of the servers that
    /// count, as far as each server listed them (up to 16 each).
    pub fn shared_holders(&self) -> Vec<SharedHolder> {
        let seen: Vec<&ReadersSeen> = self.counting().map(|s| &s.readers).collect();
        shared::on_majority(&seen, self.quorum)
    }

    /// How many readers hold the lock on a majority of the servers that
    /// count (0: none, or no majority has any).
    pub fn readers(&self) -> u64 {
        let seen: Vec<&ReadersSeen> = self.counting().map(|s| &s.readers).collect();
        shared::count_on_majority(&seen, self.quorum)
    }

    /// Readers as an occupant, for `list`: how many hold the lock on a
    /// majority (or, when no majority has any, the most any server that
    /// counts holds), on how many servers that count, and when the last of
    /// those on a majority lapses. `None` when no server that counts has a
    /// live reader.
    pub fn readers_occupied(&self) -> Option<Occupied> {
        let with: Vec<u64> = self
            .counting()
            .map(|s| s.readers.count)
            .filter(|&count| count > 0)
            .collect();
        let most = with.iter().copied().max()?;
        let count = match self.readers() {
            0 => most,
            on_majority => on_majority,
        };
        Some(Occupied {
            held_by: HeldBy::Readers { count },
            on: with.len(),
            expires_in: self.shared_holders().iter().map(|r| r.expires_in).max(),
        })
    }

    /// answered counted.
    pub fn waiters(&self) -> u64 {
        self.servers
            .iter()
            .filter_map(|s| s.state.as_ref().ok())
            .map(|state| state.waiters)
            .max()
            .unwrap_or(0)
    }

    /// The pending superseding waiter (`--supersede`): the newest any
    /// server that answered keeps in line (`None`: none).
    pub fn superseder(&self) -> Option<Superseder> {
        self.servers
            .iter()
            .filter_map(|s| s.state.as_ref().ok()?.superseder.as_deref())
            .filter_map(Superseder::decode)
            .max_by_key(|who| who.order)
    }

    /// The lock's current fencing token: the highest counter on the servers
    /// that answered (`None`: no server has one, the name was never taken
    /// with `--fence`). A server that lost its counter shows a lower one.
    pub fn fence(&self) -> Option<u64> {
        self.servers
            .iter()
            .filter_map(|s| s.state.as_ref().ok()?.fence)
            .max()
    }

    /// The servers that count and whose value is `value`, in configuration
    /// order.
    pub fn holding(&self, value: &[u8]) -> Vec<ServerSpec> {
        self.servers
            .iter()
            .filter(|s| matches!(&s.state, Ok(KeyState { value: Some(v), restarting: None, .. }) if v == value))
            .map(|s| s.server.clone())
            .collect()
    }

    /// The error for an inspection whose verdict is [`Verdict::Unknown`]:
    /// restarting when servers kept out by the restart guard are why.
    pub fn no_quorum(&self) -> LockError {
        let again_in: Vec<(ServerSpec, Guarded)> = self
            .servers
            .iter()
            .filter_map(|s| Some((s.server.clone(), s.state.as_ref().ok()?.restarting?)))
            .collect();
        let kept_out = self.restart_guard.map(|guard| KeptOut {
            guard,
            kept: &again_in,
        });
        let servers = (self.servers.len(), self.quorum);
        no_quorum(&self.key, servers, kept_out, self.failures())
    }

    fn failures(&self) -> Failures {
        Failures(
            self.servers
                .iter()
                .filter_map(|s| s.state.clone().err().map(|e| (s.server.clone(), e)))
                .collect(),
        )
    }

    /// What the servers that count hold (nothing for missing keys).
    fn occupations(&self) -> impl Iterator<Item = Occupation<'_>> {
        self.counting().filter_map(KeyState::occupation)
    }

    /// The answers of the servers that count.
    fn counting(&self) -> impl Iterator<Item = &KeyState> {
        self.servers.iter().filter_map(|s| match &s.state {
            Ok(state) if state.restarting.is_none() => Some(state),
            _ => None,
        })
    }

    /// Who most of the servers that count say occupies the key, whether or
    /// not that is a majority (`list` shows what a minority holds, since it
    /// keeps `acquire` busy); `None` when no server that counts has the key.
    pub fn seen(&self) -> Option<Occupied> {
        let counting: Vec<&KeyState> = self.counting().collect();
        Occupied::by_most(&counting, self.quorum)
    }

    /// Who holds the lock a majority agrees on, and when it expires: `None`
    /// unless the verdict is held.
    pub fn occupied(&self) -> Option<Occupied> {
        let agreed = match self.verdict() {
            Verdict::Held { value, .. } => ("string".to_owned(), Some(value)),
            Verdict::Foreign { kind, .. } => (kind, None),
            Verdict::Free | Verdict::Unknown => return None,
        };
        let seen: Vec<&KeyState> = self
            .counting()
            .filter(|s| s.occupation() == Some((agreed.0.as_str(), agreed.1.as_deref())))
            .collect();
        Occupied::by_most(&seen, self.quorum)
    }
}

impl From<InspectReply> for KeyState {
    fn from(reply: InspectReply) -> Self {
        KeyState {
            broken: reply.broken,
            fence: reply.fence,
            readers: reply.readers,
            superseder: reply.superseder,
            ..KeyState::new(reply.occupant, reply.restarting.as_ref(), reply.waiters)
        }
    }
}

impl From<ForceReply> for KeyState {
    /// What was there; `readers` counts the live readers it broke.
    fn from(reply: ForceReply) -> Self {
        KeyState {
            readers: ReadersSeen {
                count: reply.readers,
                holders: Vec::new(),
                clock: reply.occupant.clock,
            },
            ..KeyState::new(reply.occupant, None, reply.waiters)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::core::quorum::quorum;
    use super::*;

    fn inspection(states: Vec<Result<Option<&str>, ()>>) -> Inspection {
        let quorum = quorum(states.len());
        Inspection {
            key: LockKey::new(b"k".to_vec()),
            quorum,
            restart_guard: None,
            done: None,
            servers: states
                .into_iter()
                .enumerate()
                .map(|(i, s)| ServerState {
                    server: ServerSpec::parse(&format!("127.0.0.1:{}", 7000 + i)).unwrap(),
                    state: s
                        .map(|v| KeyState {
                            kind: if v.is_some() { "string" } else { "none" }.into(),
                            value: v.map(|v| v.as_bytes().to_vec()),
                            pttl_ms: if v.is_some() { 1000 } else { -2 },
                            restarting: None,
                            record: None,
                            now_ms: None,
                            waiters: 0,
                            broken: None,
                            fence: None,
                            readers: ReadersSeen::default(),
                            superseder: None,
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
        assert_eq!(held.holding(b"a").len(), 2);
        let split = inspection(vec![Ok(Some("a")), Ok(Some("b")), Ok(None)]);
        assert_eq!(split.verdict(), Verdict::Free);
        let unsure = inspection(vec![Ok(Some("a")), Err(()), Ok(None)]);
        assert_eq!(unsure.verdict(), Verdict::Unknown);
        let free = inspection(vec![Ok(None), Err(()), Ok(None)]);
        assert_eq!(free.verdict(), Verdict::Free);
        let down = inspection(vec![Err(()), Err(()), Ok(None)]);
        assert_eq!(down.verdict(), Verdict::Unknown);
        // A restarted server's emptiness is no evidence that the lock is free.
        let mut restarted = inspection(vec![Ok(Some("a")), Ok(None), Ok(None)]);
        for s in &mut restarted.servers[1..] {
            if let Ok(state) = &mut s.state {
                state.restarting = Some(Guarded {
                    left: std::time::Duration::from_secs(1),
                    cause: super::super::guard::GuardCause::Unseen,
                });
            }
        }
        assert_eq!(restarted.verdict(), Verdict::Unknown);
    }
}
