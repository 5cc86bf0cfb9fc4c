//! cancel.lua and cancelled.lua: a newer waiter asks a holder that opted in
//! (`exec --cancel-in-progress`) to stop, and the holder reads it
//! (lock/cancel.rs).

use redis::Value;

use super::protocol::{shape, Invocation, ProtocolError, Reader};
use super::source::{lua, Features, LuaScript};

/// Asks the holder of `token` to stop, where the lock still holds it.
#[derive(Debug, Clone)]
pub struct AskCancel {
    /// The lock's key, and the key the request is kept under.
    pub keys: [Vec<u8>; 2],
    pub token: String,
    /// The waiter that asks (`Superseder::encode`).
    pub who: String,
    /// How long the request is kept, in ms.
    pub keep_ms: u64,
}

impl Invocation for AskCancel {
    /// Whether the lock held the token here (and so was asked).
    type Reply = bool;

    fn script(&self) -> &'static LuaScript {
        lua("cancel", Features::NONE)
    }

    fn keys(&self) -> Vec<Vec<u8>> {
        self.keys.to_vec()
    }

    fn args(&self) -> Vec<Vec<u8>> {
        vec![
            self.token.clone().into_bytes(),
            self.who.clone().into_bytes(),
            self.keep_ms.to_string().into_bytes(),
        ]
    }

    fn parse(&self, reply: Value) -> Result<bool, ProtocolError> {
        match reply {
            Value::Int(1) => Ok(true),
            Value::Int(0) => Ok(false),
            other => Err(Reader("cancel").error(format!("{} instead of 0 or 1", shape(&other)))),
        }
    }
}

/// Whether the holder of `token` was asked to stop.
#[derive(Debug, Clone)]
pub struct Cancelled {
    /// The key the request is kept under.
    pub key: Vec<u8>,
    pub token: String,
}

impl Invocation for Cancelled {
    /// Who asked (as `Superseder::encode` wrote it), or `None`.
    type Reply = Option<Vec<u8>>;

    fn script(&self) -> &'static LuaScript {
        lua("cancelled", Features::NONE)
    }

    fn keys(&self) -> Vec<Vec<u8>> {
        vec![self.key.clone()]
    }

    fn args(&self) -> Vec<Vec<u8>> {
        vec![self.token.clone().into_bytes()]
    }

    fn parse(&self, reply: Value) -> Result<Option<Vec<u8>>, ProtocolError> {
        Reader("cancelled").optional_bytes(reply, "who asked")
    }
}

#[cfg(test)]
mod tests {
    use super::super::protocol::tests::bulk;
    use super::*;

    #[test]
    fn replies_read_as_what_the_scripts_send() {
        let ask = AskCancel {
            keys: [b"k".to_vec(), b"k\0cancel".to_vec()],
            token: "t".into(),
            who: "w".into(),
            keep_ms: 5,
        };
        assert_eq!(ask.args(), [b"t".to_vec(), b"w".to_vec(), b"5".to_vec()]);
        assert!(ask.parse(Value::Int(1)).unwrap());
        assert!(!ask.parse(Value::Int(0)).unwrap());
        assert!(ask.parse(Value::Int(2)).is_err());
        let read = Cancelled {
            key: b"k\0cancel".to_vec(),
            token: "t".into(),
        };
        assert_eq!(read.parse(bulk("w")).unwrap().as_deref(), Some(&b"w"[..]));
        assert_eq!(read.parse(Value::Nil).unwrap(), None);
        assert!(read.parse(Value::Int(1)).is_err());
    }
}
