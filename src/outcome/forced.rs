//! What `release --force` did, classified once as data: its exit status,
//! its line on stderr and its JSON object all read the same [`Forcing`],
//! so the three cannot disagree about what happened.

use serde::Serialize;

use super::LockState;
use crate::lock::{ForceVerdict, Forced, Occupied, ServerError, ServerSpec, Verdict};

/// `release --force`'s outcome: what the servers held before and did, and
/// what that comes to.
#[derive(Debug)]
pub struct Forcing {
    pub forced: Forced,
    /// What the lock was just before, as `status` says it.
    pub was: LockState,
    /// Who held it just before: on a majority, else as seen on a server.
    pub occupied: Option<Occupied>,
    /// The servers where a lock was deleted, in configuration order.
    pub deleted_on: Vec<ServerSpec>,
    /// The servers where the key is not a lock and was left alone.
    pub left_alone: Vec<LeftAlone>,
    /// `--if-token`: the servers where another token held it.
    pub held_by_another: Vec<ServerSpec>,
    /// The servers where live readers were removed, and how many.
    pub readers_removed_on: Vec<(ServerSpec, u64)>,
    /// How many servers answered; those that did not, and why.
    pub answered: usize,
    pub not_reached: Vec<(ServerSpec, ServerError)>,
    pub did: Did,
}

/// What `release --force` came to, in the order it is judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Did {
    /// Nothing was deleted: the key is not a lock (on some server).
    NotALock,
    /// No server answered: the no-quorum error says so.
    NobodyAnswered,
    /// `--if-token`: another token holds it now; nothing deleted.
    KeptByAnother,
    /// Only readers (`--shared`) were removed.
    RemovedReaders,
    /// It was free; its line of waiters was cleared.
    ClearedLine,
    /// It was free; nothing deleted.
    AlreadyFree,
    /// A lock a majority held was deleted.
    Broke,
    /// Deleted, with too few answers to tell whether a majority held it.
    DeletedUnknown,
    /// Deleted where it was; no majority held it.
    DeletedLeftovers,
}

/// A server where the key is not a lock, left alone.
#[derive(Debug)]
pub struct LeftAlone {
    pub server: ServerSpec,
    pub why: NotALock,
    /// The key's type on that server.
    pub kind: String,
}

/// Why a key is not a lock; as JSON, the documented `reason`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NotALock {
    /// Another type than a string.
    #[serde(rename = "type")]
    OtherType,
    /// A string without expiry.
    NoExpiry,
    /// A string longer than any token.
    TooLong,
    /// A string that is no redlock token, with no holder record.
    #[serde(rename = "not_token")]
    NotAToken,
}

impl Forcing {
    pub fn new(forced: Forced) -> Forcing {
        let before = &forced.before;
        let verdict = before.verdict();
        let occupied = before.occupied().or_else(|| before.seen());
        let left_alone: Vec<LeftAlone> = forced
            .left_alone()
            .into_iter()
            .map(|(server, verdict, kind)| LeftAlone {
                server,
                why: match verdict {
                    ForceVerdict::NoExpiry => NotALock::NoExpiry,
                    ForceVerdict::TooLong => NotALock::TooLong,
                    ForceVerdict::NotAToken => NotALock::NotAToken,
                    _ => NotALock::OtherType,
                },
                kind,
            })
            .collect();
        let mut forcing = Forcing {
            was: LockState::of(&verdict, before.readers()),
            deleted_on: forced.deleted_on(),
            held_by_another: forced.held_by_another(),
            readers_removed_on: forced.readers_broken(),
            answered: before.servers.iter().filter(|s| s.state.is_ok()).count(),
            not_reached: before
                .servers
                .iter()
                .filter_map(|s| Some((s.server.clone(), s.state.clone().err()?)))
                .collect(),
            left_alone,
            did: Did::AlreadyFree,
            occupied,
            forced,
        };
        forcing.did = forcing.judge(&verdict);
        forcing
    }

    fn judge(&self, verdict: &Verdict) -> Did {
        let deleted = self.deleted_on.len();
        match verdict {
            _ if deleted == 0 && !self.left_alone.is_empty() => Did::NotALock,
            _ if self.answered == 0 => Did::NobodyAnswered,
            _ if deleted == 0 && !self.held_by_another.is_empty() => Did::KeptByAnother,
            _ if deleted == 0 && !self.readers_removed_on.is_empty() => Did::RemovedReaders,
            _ if deleted == 0 && self.forced.before.waiters() > 0 => Did::ClearedLine,
            _ if deleted == 0 => Did::AlreadyFree,
            Verdict::Held { .. } if self.occupied.is_some() => Did::Broke,
            Verdict::Unknown => Did::DeletedUnknown,
            _ => Did::DeletedLeftovers,
        }
    }

    /// How many live readers were removed.
    pub fn readers_removed(&self) -> u64 {
        self.forced.readers_broken_count()
    }
}

#[cfg(test)]
mod tests {
    use super::{LockState, NotALock};

    fn json(value: impl serde::Serialize) -> String {
        serde_json::to_string(&value).unwrap()
    }

    /// The words are the documented JSON (docs/guide.md): `state` and
    /// `left_alone[].reason`.
    #[test]
    fn the_classifications_are_written_as_documented() {
        assert_eq!(json(LockState::Held), r#""held""#);
        assert_eq!(json(LockState::Shared), r#""shared""#);
        assert_eq!(json(LockState::Free), r#""free""#);
        assert_eq!(json(LockState::Unknown), r#""unknown""#);
        assert_eq!(json(NotALock::OtherType), r#""type""#);
        assert_eq!(json(NotALock::NoExpiry), r#""no_expiry""#);
        assert_eq!(json(NotALock::TooLong), r#""too_long""#);
        assert_eq!(json(NotALock::NotAToken), r#""not_token""#);
    }
}
