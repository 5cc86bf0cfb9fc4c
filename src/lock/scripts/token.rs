//! release.lua and extend.lua: compare-and-delete and compare-and-expire,
//! each done only while the lock still holds the caller's token.

use redis::Value;

use super::protocol::{shape, Invocation, LockKeys, ProtocolError, Reader};
use super::source::{lua, Features, LuaScript};

/// What a server said to a release or an extension: whether the token
/// held the lock (and it was deleted or extended), and if not, why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenReply {
    Held,
    /// The key is gone: it expired, or the server restarted or was flushed.
    Gone,
    /// Another value (or a key of another type) holds it: another holder.
    Taken,
}

/// Deletes the lock (and its record) if it holds `token`.
#[derive(Debug, Clone)]
pub struct Release {
    pub keys: LockKeys,
    pub token: String,
    /// Where the delete is announced to waiters (empty: not announced).
    pub channel: Vec<u8>,
    /// Undoing a waiter's failed attempt: its ticket and score, put back in
    /// line for the linger (ms), as the attempt found them.
    pub back_in_line: Option<(String, u64, u64)>,
    /// Whose token it is: a writer's, a reader's (`--shared`), or either
    /// (`release NAME TOKEN` cannot tell).
    pub holder: TokenHolder,
}

/// Whose token a release deletes, which says whether the readers' half of
/// release.lua goes with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenHolder {
    Writer,
    Reader,
    /// Either: the readers' text, which releases a writer's token too.
    /// One script, run whole: a release sent in two steps could end after
    /// the first on a slow server, leaving a reader's token there.
    Either,
}

/// Pushes the lock's expiry out to `ttl_ms` from now if it holds `token`.
#[derive(Debug, Clone)]
pub struct Extend {
    pub keys: LockKeys,
    pub token: String,
    pub ttl_ms: u64,
    /// A holder record to replace the old one with (empty: keep it).
    pub record: Vec<u8>,
    /// A semaphore's slot: where the servers record its K, and the K, kept
    /// recorded as long as the slot is held (limit.lua).
    pub limit: Option<(Vec<u8>, u32)>,
}

impl Invocation for Release {
    /// Whether the token held the lock (and it was deleted), and why not.
    type Reply = TokenReply;

    /// The release's mode: compare-and-delete, and the line's, the
    /// readers' and the announcement's Lua only for a release that uses
    /// them.
    fn script(&self) -> &'static LuaScript {
        let features = Features::NONE
            .with(Features::LINE, self.back_in_line.is_some())
            .with(Features::READERS, self.holder != TokenHolder::Writer)
            .with(Features::ANNOUNCE, !self.channel.is_empty());
        lua("release", features)
    }

    fn keys(&self) -> Vec<Vec<u8>> {
        self.keys.to_vec()
    }

    fn args(&self) -> Vec<Vec<u8>> {
        let mut args = vec![self.token.clone().into_bytes(), self.channel.clone()];
        if let Some((ticket, score, linger_ms)) = &self.back_in_line {
            args.push(ticket.clone().into_bytes());
            args.push(score.to_string().into_bytes());
            args.push(linger_ms.to_string().into_bytes());
        }
        args
    }

    fn parse(&self, reply: Value) -> Result<TokenReply, ProtocolError> {
        token_reply(Reader("release"), reply)
    }
}

impl Invocation for Extend {
    /// Whether the token held the lock (and it was extended), and why not.
    type Reply = TokenReply;

    fn script(&self) -> &'static LuaScript {
        lua(
            "extend",
            Features::NONE.with(Features::LIMIT, self.limit.is_some()),
        )
    }

    fn keys(&self) -> Vec<Vec<u8>> {
        with_limit_key(self.keys.to_vec(), self.limit.as_ref())
    }

    const BOUNDED: bool = true;

    /// Always four, so that the deadline the connection adds is ARGV[5].
    fn args(&self) -> Vec<Vec<u8>> {
        let k = self.limit.as_ref().map(|(_, k)| k.to_string().into_bytes());
        vec![
            self.token.clone().into_bytes(),
            self.ttl_ms.to_string().into_bytes(),
            self.record.clone(),
            k.unwrap_or_default(),
        ]
    }

    fn parse(&self, reply: Value) -> Result<TokenReply, ProtocolError> {
        token_reply(Reader("extend"), reply)
    }
}

/// The lock's keys, then, for a semaphore's slot, where the servers record
/// its K (KEYS[11], limit.lua).
pub(super) fn with_limit_key(
    mut keys: Vec<Vec<u8>>,
    limit: Option<&(Vec<u8>, u32)>,
) -> Vec<Vec<u8>> {
    keys.extend(limit.map(|(key, _)| key.clone()));
    keys
}

/// 1 (held), 0 (gone) or 2 (taken), nothing else.
pub(super) fn token_reply(read: Reader, reply: Value) -> Result<TokenReply, ProtocolError> {
    match reply {
        Value::Int(1) => Ok(TokenReply::Held),
        Value::Int(0) => Ok(TokenReply::Gone),
        Value::Int(2) => Ok(TokenReply::Taken),
        other => Err(read.error(format!("{} instead of 1, 0 or 2", shape(&other)))),
    }
}

#[cfg(test)]
mod tests {
    use super::super::protocol::tests::bulk;
    use super::*;

    #[test]
    fn only_1_0_and_2_are_answers() {
        let read = Reader("release");
        assert_eq!(token_reply(read, Value::Int(1)).unwrap(), TokenReply::Held);
        assert_eq!(token_reply(read, Value::Int(0)).unwrap(), TokenReply::Gone);
        assert_eq!(token_reply(read, Value::Int(2)).unwrap(), TokenReply::Taken);
        for wrong in [
            Value::Int(3),
            Value::Int(-1),
            Value::Nil,
            bulk("1"),
            Value::Okay,
            Value::Boolean(true),
            Value::Array(vec![Value::Int(1)]),
        ] {
            assert!(token_reply(read, wrong.clone()).is_err(), "{wrong:?}");
        }
    }

    #[test]
    fn arguments_come_in_the_scripts_order() {
        let keys = LockKeys::new(&super::super::super::key::LockKey::new(b"k".to_vec()), b"m");
        let release = Release {
            keys: keys.clone(),
            token: "tok".into(),
            channel: b"ch".to_vec(),
            back_in_line: None,
            holder: TokenHolder::Either,
        };
        assert_eq!(release.args(), [b"tok".to_vec(), b"ch".to_vec()]);
        let undo = Release {
            back_in_line: Some(("0012-ab".into(), 12, 1000)),
            ..release
        };
        assert_eq!(
            undo.args(),
            [&b"tok"[..], b"ch", b"0012-ab", b"12", b"1000"].map(<[u8]>::to_vec)
        );
        let extend = Extend {
            keys,
            token: "tok".into(),
            ttl_ms: 30,
            record: Vec::new(),
            limit: None,
        };
        assert_eq!(
            extend.args(),
            [b"tok".to_vec(), b"30".to_vec(), Vec::new(), Vec::new()]
        );
        assert_eq!(extend.keys()[0], b"k");
        assert_eq!(extend.keys().len(), 10);
        let slot = Extend {
            limit: Some((b"k\0limit".to_vec(), 4)),
            ..extend
        };
        assert_eq!(slot.args()[3], b"4");
        assert_eq!(slot.keys()[10], b"k\0limit");
        for call in [
            slot.clone(),
            Extend {
                limit: None,
                ..slot
            },
        ] {
            let mode = super::super::mode_of("extend", &call.args());
            assert_eq!(call.script().features, mode);
        }
    }

    /// A release's mode is the one its arguments give by the composition's
    /// table (`SWITCHES`), which tests/cli/lua.rs uses, and `readers` for
    /// a token that may be a reader's.
    #[test]
    fn the_mode_is_the_one_the_arguments_switch_on() {
        let keys = LockKeys::new(&super::super::super::key::LockKey::new(b"k".to_vec()), b"m");
        for channel in [Vec::new(), b"ch".to_vec()] {
            for back_in_line in [None, Some(("0012-ab".to_owned(), 12, 1000))] {
                for holder in [
                    TokenHolder::Writer,
                    TokenHolder::Reader,
                    TokenHolder::Either,
                ] {
                    let call = Release {
                        keys: keys.clone(),
                        token: "tok".into(),
                        channel: channel.clone(),
                        back_in_line: back_in_line.clone(),
                        holder,
                    };
                    let mode = super::super::mode_of("release", &call.args())
                        .with(Features::READERS, holder != TokenHolder::Writer);
                    assert_eq!(call.script().features, mode);
                }
            }
        }
    }
}
