//! leave.lua: a waiter takes its ticket out of a lock's line.

use redis::Value;

use super::protocol::{shape, Invocation, LockKeys, ProtocolError, Reader};
use super::source::{lua, Features, LuaScript};

/// Takes `ticket` out of the line.
#[derive(Debug, Clone)]
pub struct Leave {
    pub keys: LockKeys,
    pub ticket: String,
    /// Where a lock left free is announced to the next waiter (empty: not
    /// announced).
    pub channel: Vec<u8>,
}

impl Invocation for Leave {
    type Reply = ();

    fn script(&self) -> &'static LuaScript {
        lua("leave", Features::NONE)
    }

    fn keys(&self) -> Vec<Vec<u8>> {
        self.keys.to_vec()
    }

    fn args(&self) -> Vec<Vec<u8>> {
        vec![self.ticket.clone().into_bytes(), self.channel.clone()]
    }

    fn parse(&self, reply: Value) -> Result<(), ProtocolError> {
        parse(reply)
    }
}

/// 1, always.
fn parse(reply: Value) -> Result<(), ProtocolError> {
    match reply {
        Value::Int(1) => Ok(()),
        other => Err(Reader("leave").error(format!("{} instead of 1", shape(&other)))),
    }
}

#[cfg(test)]
mod tests {
    use super::super::protocol::tests::bulk;
    use super::*;

    #[test]
    fn only_1_is_an_answer() {
        assert!(parse(Value::Int(1)).is_ok());
        for wrong in [
            Value::Int(0),
            Value::Int(-1),
            Value::Nil,
            bulk("1"),
            Value::Okay,
        ] {
            assert!(parse(wrong.clone()).is_err(), "{wrong:?}");
        }
    }
}
