//! mark_done.lua: the done mark of a run once (see `lock/once.rs`).

use redis::Value;

use super::protocol::{Invocation, LockKeys, ProtocolError, Reader};
use super::source::{lua, Features, LuaScript};
use super::token::{token_reply, TokenReply};

/// Writes the done mark `mark` (the key beside the lock) of the run `id`,
/// where the lock still holds `token`.
#[derive(Debug, Clone)]
pub struct MarkDone {
    pub keys: LockKeys,
    pub mark: Vec<u8>,
    pub token: String,
    pub id: String,
    /// The command's exit status.
    pub status: i32,
    /// The holder record of the run.
    pub record: Vec<u8>,
    /// When the mark lapses: at this server time in ms (PXAT), but never
    /// sooner than the second after now; or, when the first is empty,
    /// after the second, in ms (PX).
    pub lapse: (String, String),
}

impl Invocation for MarkDone {
    /// Whether the token held the lock (and the mark is written), and why
    /// not.
    type Reply = TokenReply;

    fn script(&self) -> &'static LuaScript {
        lua("mark_done", Features::NONE)
    }

    /// The lock's keys, empty places for a slot's limit record and the
    /// superseding waiters (no run once reads them here), and the mark as
    /// KEYS[13], its number in acquire.lua.
    fn keys(&self) -> Vec<Vec<u8>> {
        let mut keys = self.keys.to_vec();
        keys.resize(12, Vec::new());
        keys.push(self.mark.clone());
        keys
    }

    fn args(&self) -> Vec<Vec<u8>> {
        vec![
            self.token.clone().into_bytes(),
            self.id.clone().into_bytes(),
            self.status.to_string().into_bytes(),
            self.record.clone(),
            self.lapse.0.clone().into_bytes(),
            self.lapse.1.clone().into_bytes(),
        ]
    }

    fn parse(&self, reply: Value) -> Result<TokenReply, ProtocolError> {
        token_reply(Reader("mark_done"), reply)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_come_in_the_scripts_order() {
        let call = MarkDone {
            keys: LockKeys::new(&super::super::super::key::LockKey::new(b"k".to_vec()), b"m"),
            mark: b"k\0done".to_vec(),
            token: "tok".into(),
            id: "per:1:0:2".into(),
            status: 0,
            record: b"{}".to_vec(),
            lapse: ("99".into(), "60000".into()),
        };
        let args: Vec<&[u8]> = vec![b"tok", b"per:1:0:2", b"0", b"{}", b"99", b"60000"];
        assert_eq!(call.args(), args);
        assert_eq!(call.keys()[12], b"k\0done");
        // It reads the lock and the mark only.
        assert_eq!(call.script().keys_sent(&call.keys()).len(), 2);
        assert_eq!(call.parse(Value::Int(1)).unwrap(), TokenReply::Held);
        assert!(call.parse(Value::Int(3)).is_err());
    }
}
