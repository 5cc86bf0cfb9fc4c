//! list.lua: what one server holds for a batch of locks, for `list`.

use redis::Value;

use super::super::key::{
    record_key, supersede_key, LockKey, DONE_SUFFIX, LAPSE_SUFFIX, READERS_SUFFIX,
    READER_RECORDS_SUFFIX,
};
use super::super::shared::{ReadersSeen, SeenReader};
use super::protocol::{Invocation, Occupant, ProtocolError, Reader, Restarting};
use super::source::{lua, Features, LuaScript};

/// Reads a batch of locks on one server.
#[derive(Debug, Clone)]
pub struct List {
    /// The restart guard's marker.
    pub marker: Vec<u8>,
    /// The restart guard in ms (0: off).
    pub guard_ms: u64,
    /// Each lock, and whether a readers' set was found beside it (then
    /// its readers are read too; most locks have none, and cost no more).
    pub locks: Vec<(LockKey, bool)>,
}

/// One lock as one server holds it: its occupant, its readers, its
/// pending superseding waiter's WHO and its done mark, as stored.
pub type Listed = (Occupant, ReadersSeen, Option<Vec<u8>>, Option<Vec<u8>>);

/// The restart guard's word, then one occupant per lock, in order, with
/// the lock's readers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListReply {
    /// `Some` when the restart guard keeps this server out.
    pub restarting: Option<Restarting>,
    pub occupants: Vec<Listed>,
}

impl Invocation for List {
    type Reply = ListReply;

    fn script(&self) -> &'static LuaScript {
        lua("list", Features::NONE)
    }

    /// The marker, then each lock's key, its record's, its superseding
    /// waiters', its line's lapse times and its done mark's, and for a lock with readers,
    /// their set's and their records'.
    fn keys(&self) -> Vec<Vec<u8>> {
        let each = self.locks.iter().flat_map(|(key, readers)| {
            let beside = |suffix: &[u8]| [key.bytes(), suffix].concat();
            let mut keys = vec![
                key.bytes().to_vec(),
                record_key(key),
                supersede_key(key),
                beside(LAPSE_SUFFIX),
                beside(DONE_SUFFIX),
            ];
            if *readers {
                keys.extend([beside(READERS_SUFFIX), beside(READER_RECORDS_SUFFIX)]);
            }
            keys
        });
        std::iter::once(self.marker.clone()).chain(each).collect()
    }

    /// The restart guard, then a "1" for each lock with readers, a "0" for
    /// each without.
    fn args(&self) -> Vec<Vec<u8>> {
        let readers = self
            .locks
            .iter()
            .map(|(_, readers)| if *readers { b'1' } else { b'0' })
            .collect();
        vec![self.guard_ms.to_string().into_bytes(), readers]
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
        .map(|lock| match lock {
            Value::Array(pair) if pair.len() == 2 => {
                let [occupant, readers] = read.array(Value::Array(pair), "a lock")?;
                let occupant = read.occupant(occupant)?;
                let readers = readers_listed(read, readers, occupant.clock)?;
                Ok((occupant, readers, None, None))
            }
            Value::Array(triple) if triple.len() == 3 => {
                let [occupant, readers, superseder] = read.array(Value::Array(triple), "a lock")?;
                let (occupant, readers) = with_readers(read, occupant, readers)?;
                let superseder = read.bytes(superseder, "the superseding waiter")?;
                Ok((occupant, readers, Some(superseder), None))
            }
            Value::Array(four) if four.len() == 4 => {
                let [occupant, readers, superseder, mark] =
                    read.array(Value::Array(four), "a lock")?;
                let (occupant, readers) = with_readers(read, occupant, readers)?;
                let superseder = match superseder {
                    Value::Nil | Value::Boolean(false) => None,
                    who => Some(read.bytes(who, "the superseding waiter")?),
                };
                let mark = read.bytes(mark, "the done mark")?;
                Ok((occupant, readers, superseder, Some(mark)))
            }
            occupant => Ok((read.occupant(occupant)?, ReadersSeen::default(), None, None)),
        })
        .collect::<Result<_, _>>()?;
    Ok(ListReply {
        restarting,
        occupants,
    })
}

/// An occupant and its readers, or none (`false`).
fn with_readers(
    read: Reader,
    occupant: Value,
    readers: Value,
) -> Result<(Occupant, ReadersSeen), ProtocolError> {
    let occupant = read.occupant(occupant)?;
    let readers = match readers {
        Value::Nil | Value::Boolean(false) => ReadersSeen::default(),
        readers => readers_listed(read, readers, occupant.clock)?,
    };
    Ok((occupant, readers))
}

/// reader_records.lua's `readers_listed()`: `{count, {token, ms, record
/// or false, …}}` for up to 16 readers.
fn readers_listed(
    read: Reader,
    value: Value,
    clock: Option<u64>,
) -> Result<ReadersSeen, ProtocolError> {
    let [count, holders] = read.array(value, "the readers")?;
    let holders = read.items(holders, "the readers listed")?;
    if holders.len() % 3 != 0 || holders.len() > 48 {
        return Err(read.error("the readers listed: not up to 16 triples"));
    }
    let mut seen = Vec::with_capacity(holders.len() / 3);
    let mut items = holders.into_iter();
    while let (Some(token), Some(left), Some(record)) = (items.next(), items.next(), items.next()) {
        seen.push(SeenReader {
            token: read.bytes(token, "a reader's token")?,
            left_ms: read.count(&left, "a reader's ms left")?,
            record: read.optional_bytes(record, "a reader's record")?,
        });
    }
    Ok(ReadersSeen {
        count: read.count(&count, "the readers")?,
        holders: seen,
        clock,
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::protocol::tests::{bulk, held_by, missing, restarting};
    use super::*;

    fn lock(occupant: Value, readers: Value) -> Value {
        Value::Array(vec![occupant, readers])
    }

    #[test]
    fn a_reply_reads_the_guard_then_every_lock() {
        let readers = Value::Array(vec![
            Value::Int(2),
            Value::Array(vec![
                bulk("r1"),
                Value::Int(900),
                bulk("5 {}"),
                bulk("r2"),
                Value::Int(800),
                Value::Nil,
            ]),
        ]);
        let reply = Value::Array(vec![Value::Nil, held_by("a"), lock(missing(), readers)]);
        let read = parse(reply, 2).unwrap();
        assert_eq!(read.restarting, None);
        let kinds: Vec<&str> = read.occupants.iter().map(|o| o.0.kind.as_str()).collect();
        assert_eq!(kinds, ["string", "none"]);
        let readers = &read.occupants[1].1;
        assert_eq!((readers.count, readers.clock), (2, Some(42)));
        assert_eq!(readers.holders[0].record.as_deref(), Some(&b"5 {}"[..]));
        assert_eq!(readers.holders[1].left_ms, 800);
        assert_eq!(read.occupants[0].1.count, 0);
        let empty = parse(Value::Array(vec![restarting(40)]), 0).unwrap();
        assert_eq!(
            empty.restarting.map(|r| r.guarded.left),
            Some(Duration::from_millis(40))
        );
        assert!(empty.occupants.is_empty());
        // A lock with a pending superseding waiter: its WHO third, the
        // readers or nothing second.
        let superseded = Value::Array(vec![held_by("a"), Value::Nil, bulk("who")]);
        let read = parse(Value::Array(vec![Value::Nil, superseded]), 1).unwrap();
        assert_eq!(read.occupants[0].2.as_deref(), Some(&b"who"[..]));
        assert_eq!(read.occupants[0].1.count, 0);
        let wrong = Value::Array(vec![held_by("a"), Value::Nil, Value::Int(1)]);
        assert!(parse(Value::Array(vec![Value::Nil, wrong]), 1).is_err());
        // A lock with a done mark: the mark fourth, the waiter or nothing
        // third.
        let marked = Value::Array(vec![missing(), Value::Nil, Value::Nil, bulk("per:1:0:5")]);
        let read = parse(Value::Array(vec![Value::Nil, marked]), 1).unwrap();
        assert_eq!(read.occupants[0].0.kind, "none");
        assert_eq!(read.occupants[0].2, None);
        assert_eq!(read.occupants[0].3.as_deref(), Some(&b"per:1:0:5"[..]));
        let wrong = Value::Array(vec![missing(), Value::Nil, Value::Nil, Value::Int(1)]);
        assert!(parse(Value::Array(vec![Value::Nil, wrong]), 1).is_err());
    }

    #[test]
    fn malformed_replies_are_refused() {
        let a = || held_by("a");
        let one = |guard: Value| parse(Value::Array(vec![guard, a()]), 1);
        assert!(one(Value::Int(0)).is_err(), "the old 0 for 'counts'");
        assert!(one(Value::Int(40)).is_err(), "the old bare ms");
        assert!(one(restarting(0)).is_err());
        assert!(one(restarting(-1)).is_err());
        assert!(
            parse(Value::Array(vec![Value::Nil, a()]), 2).is_err(),
            "too few"
        );
        assert!(
            parse(Value::Array(vec![Value::Nil, a()]), 0).is_err(),
            "too many"
        );
        let pair = Value::Array(vec![
            Value::Int(1),
            Value::Array(vec![bulk("r"), Value::Int(1)]),
        ]);
        assert!(
            parse(Value::Array(vec![Value::Nil, lock(held_by("a"), pair)]), 1).is_err(),
            "a reader without its record"
        );
        assert!(parse(Value::Array(vec![Value::Nil, Value::Int(1)]), 1).is_err());
        assert!(parse(Value::Array(vec![]), 0).is_err());
        assert!(parse(Value::Nil, 0).is_err());
    }

    #[test]
    fn keys_are_the_marker_then_each_locks_its_superseding_waiters_and_its_readers_where_found() {
        let list = List {
            marker: b"\0guard".to_vec(),
            guard_ms: 0,
            locks: vec![
                (LockKey::new(b"a".to_vec()), false),
                (LockKey::new(b"b".to_vec()), true),
            ],
        };
        let expected: [&[u8]; 13] = [
            b"\0guard",
            b"a",
            b"a\0holder",
            b"a\0supersede",
            b"a\0lapse",
            b"a\0done",
            b"b",
            b"b\0holder",
            b"b\0supersede",
            b"b\0lapse",
            b"b\0done",
            b"b\0readers",
            b"b\0reader-records",
        ];
        assert_eq!(list.keys(), expected.map(<[u8]>::to_vec));
        assert_eq!(list.args(), [b"0".to_vec(), b"01".to_vec()]);
    }
}
