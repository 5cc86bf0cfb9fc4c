//! force.lua: `release --force`, whoever holds the lock.

use redis::Value;

use super::protocol::{Invocation, LockKeys, Occupant, ProtocolError, Reader};
use super::source::{LuaScript, FORCE};

/// Deletes a lock (a string key), its record and its line on one server.
#[derive(Debug, Clone)]
pub struct Force {
    pub keys: LockKeys,
    /// Where a delete is announced to waiters.
    pub channel: Vec<u8>,
}

/// `{occupant(), waiters}`: what was there just before, and how many
/// waiters stood in the line that was cleared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForceReply {
    pub occupant: Occupant,
    pub waiters: u64,
}

impl Invocation for Force {
    type Reply = ForceReply;

    fn script(&self) -> &'static LuaScript {
        &FORCE
    }

    fn keys(&self) -> Vec<Vec<u8>> {
        self.keys.to_vec()
    }

    fn args(&self) -> Vec<Vec<u8>> {
        vec![self.channel.clone()]
    }

    fn parse(&self, reply: Value) -> Result<ForceReply, ProtocolError> {
        parse(reply)
    }
}

fn parse(reply: Value) -> Result<ForceReply, ProtocolError> {
    let read = Reader("force");
    let [occupant, waiters] = read.array(reply, "the reply")?;
    Ok(ForceReply {
        occupant: read.occupant(occupant)?,
        waiters: read.count(&waiters, "the waiters in line")?,
    })
}

#[cfg(test)]
mod tests {
    use super::super::protocol::tests::{bulk, held_by, missing};
    use super::*;

    #[test]
    fn a_reply_reads_what_was_there_and_the_line() {
        let read = parse(Value::Array(vec![held_by("t"), Value::Int(3)])).unwrap();
        assert_eq!((read.occupant.kind.as_str(), read.waiters), ("string", 3));
        let none = parse(Value::Array(vec![missing(), Value::Int(0)])).unwrap();
        assert_eq!(none.occupant.kind, "none");
    }

    #[test]
    fn malformed_replies_are_refused() {
        assert!(parse(Value::Array(vec![held_by("t"), Value::Int(-2)])).is_err());
        assert!(parse(Value::Array(vec![held_by("t"), bulk("3")])).is_err());
        assert!(parse(Value::Array(vec![held_by("t")])).is_err());
        assert!(parse(Value::Array(vec![Value::Nil, Value::Int(0)])).is_err());
        // The old shape: occupant()'s five fields, then 0 and the waiters.
        let Value::Array(mut flat) = held_by("t") else {
            unreachable!()
        };
        flat.extend([Value::Int(0), Value::Int(0)]);
        assert!(parse(Value::Array(flat)).is_err());
        assert!(parse(Value::Int(1)).is_err());
        assert!(parse(Value::Nil).is_err());
    }
}
