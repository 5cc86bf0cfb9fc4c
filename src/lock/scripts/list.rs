//! list.lua: what one server holds for a batch of locks, for `list`.

use redis::Value;

use super::super::key::{record_key, LockKey};
use super::protocol::{Invocation, Occupant, ProtocolError, Reader, Restarting};
use super::source::{LuaScript, LIST};

/// Reads a batch of locks on one server.
#[derive(Debug, Clone)]
pub struct List {
    /// The restart guard's marker.
    pub marker: Vec<u8>,
    /// The restart guard in ms (0: off).
    pub guard_ms: u64,
    pub locks: Vec<LockKey>,
}

/// The restart guard's word, then one occupant per lock, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListReply {
    /// `Some` when the restart guard keeps this server out.
    pub restarting: Option<Restarting>,
    pub occupants: Vec<Occupant>,
}

impl Invocation for List {
    type Reply = ListReply;

    fn script(&self) -> &'static LuaScript {
        &LIST
    }

    /// The marker, then each lock's key and its record's.
    fn keys(&self) -> Vec<Vec<u8>> {
        let pairs = self
            .locks
            .iter()
            .flat_map(|key| [key.bytes().to_vec(), record_key(key)]);
        std::iter::once(self.marker.clone()).chain(pairs).collect()
    }

    fn args(&self) -> Vec<Vec<u8>> {
        vec![self.guard_ms.to_string().into_bytes()]
    }

    fn parse(&self, reply: Value) -> Result<ListReply, ProtocolError> {
        parse(reply, self.locks.len())
    }
}

fn parse(reply: Value, locks: usize) -> Result<ListReply, ProtocolError> {
    let read = Reader("list");
    let mut items = read.items(reply, "the reply")?.into_iter();
    if items.len() != locks + 1 {
        return Err(read.error(format!(
            "{} elements for {locks} locks, not {}",
            items.len(),
            locks + 1
        )));
    }
    let restarting = read.guard_word(items.next().unwrap_or(Value::Nil))?;
    let occupants = items
        .map(|occupant| read.occupant(occupant))
        .collect::<Result<_, _>>()?;
    Ok(ListReply {
        restarting,
        occupants,
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::protocol::tests::{held_by, missing, restarting};
    use super::*;

    #[test]
    fn a_reply_reads_the_guard_then_every_lock() {
        let read = parse(Value::Array(vec![Value::Nil, held_by("a"), missing()]), 2).unwrap();
        assert_eq!(read.restarting, None);
        let kinds: Vec<&str> = read.occupants.iter().map(|o| o.kind.as_str()).collect();
        assert_eq!(kinds, ["string", "none"]);
        let empty = parse(Value::Array(vec![restarting(40)]), 0).unwrap();
        assert_eq!(
            empty.restarting.map(|r| r.left),
            Some(Duration::from_millis(40))
        );
        assert!(empty.occupants.is_empty());
    }

    #[test]
    fn malformed_replies_are_refused() {
        let one = |guard: Value| parse(Value::Array(vec![guard, held_by("a")]), 1);
        assert!(one(Value::Int(0)).is_err(), "the old 0 for 'counts'");
        assert!(one(Value::Int(40)).is_err(), "the old bare ms");
        assert!(one(restarting(0)).is_err());
        assert!(one(restarting(-1)).is_err());
        assert!(
            parse(Value::Array(vec![Value::Nil, held_by("a")]), 2).is_err(),
            "too few"
        );
        assert!(
            parse(Value::Array(vec![Value::Nil, held_by("a")]), 0).is_err(),
            "too many"
        );
        assert!(parse(Value::Array(vec![Value::Nil, Value::Int(1)]), 1).is_err());
        assert!(parse(Value::Array(vec![]), 0).is_err());
        assert!(parse(Value::Nil, 0).is_err());
    }

    #[test]
    fn keys_are_the_marker_then_pairs() {
        let list = List {
            marker: b"\0guard".to_vec(),
            guard_ms: 0,
            locks: vec![LockKey::new(b"a".to_vec()), LockKey::new(b"b".to_vec())],
        };
        let expected: [&[u8]; 5] = [b"\0guard", b"a", b"a\0holder", b"b", b"b\0holder"];
        assert_eq!(list.keys(), expected.map(<[u8]>::to_vec));
        assert_eq!(list.args(), [b"0".to_vec()]);
    }
}
