//! raise_fence.lua: the fencing round's write (see `lock/fence.rs`).

use redis::Value;

use super::protocol::{Invocation, LockKeys, ProtocolError, Reader};
use super::source::{lua, Features, LuaScript};
use super::token::{token_reply, TokenReply};

/// Raises the lock's fencing counter to `fence`, never lowering it, where
/// the lock still holds `token`.
#[derive(Debug, Clone)]
pub struct RaiseFence {
    pub keys: LockKeys,
    pub token: String,
    pub fence: u64,
}

impl Invocation for RaiseFence {
    /// Whether the token held the lock (and the counter is at least
    /// `fence` now), and why not.
    type Reply = TokenReply;

    fn script(&self) -> &'static LuaScript {
        lua("raise_fence", Features::NONE)
    }

    fn keys(&self) -> Vec<Vec<u8>> {
        self.keys.to_vec()
    }

    fn args(&self) -> Vec<Vec<u8>> {
        vec![
            self.token.clone().into_bytes(),
            self.fence.to_string().into_bytes(),
        ]
    }

    fn parse(&self, reply: Value) -> Result<TokenReply, ProtocolError> {
        token_reply(Reader("raise_fence"), reply)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_come_in_the_scripts_order() {
        let call = RaiseFence {
            keys: LockKeys::new(&super::super::super::key::LockKey::new(b"k".to_vec()), b"m"),
            token: "tok".into(),
            fence: u64::MAX,
        };
        assert_eq!(
            call.args(),
            [b"tok".to_vec(), b"18446744073709551615".to_vec()]
        );
        assert_eq!(call.keys()[7], b"k\0fence");
        assert_eq!(call.parse(Value::Int(2)).unwrap(), TokenReply::Taken);
        assert!(call.parse(Value::Int(3)).is_err());
    }
}
