//! inspect.lua: what one server holds for a lock, for `status`.

use redis::Value;

use super::super::shared::{ReadersSeen, SeenReader};
use super::protocol::{Invocation, LockKeys, Occupant, ProtocolError, Reader, Restarting};
use super::source::{lua, Features, LuaScript};

/// Reads what one server holds for a lock.
#[derive(Debug, Clone)]
pub struct Inspect {
    pub keys: LockKeys,
    /// The restart guard in ms (0: off).
    pub guard_ms: u64,
    /// A token to find among the readers however many there are (a nested
    /// exec's); "" for none.
    pub token: String,
    /// The hash of the lock's superseding waiters (KEYS[12]).
    pub supersede_key: Vec<u8>,
}

/// `{occupant(), the restart guard's word, waiters}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InspectReply {
    pub occupant: Occupant,
    /// `Some` when the restart guard keeps this server out.
    pub restarting: Option<Restarting>,
    /// How many waiters stand in the lock's line.
    pub waiters: u64,
    /// Who broke the lock with `release --force`, as recorded.
    pub broken: Option<Vec<u8>>,
    /// The lock's fencing counter on this server (`None`: none).
    pub fence: Option<u64>,
    /// The live readers (shared holders) it holds.
    pub readers: ReadersSeen,
    /// The pending superseding waiter (`--supersede`), as the servers keep
    /// it (`Superseder::encode`).
    pub superseder: Option<Vec<u8>>,
}

impl Invocation for Inspect {
    type Reply = InspectReply;

    fn script(&self) -> &'static LuaScript {
        lua("inspect", Features::NONE)
    }

    /// The lock's keys, then the hash of superseding waiters as KEYS[12]
    /// (KEYS[11], a slot's limit record, is not read, so not sent).
    fn keys(&self) -> Vec<Vec<u8>> {
        let mut keys = self.keys.to_vec();
        keys.resize(11, Vec::new());
        keys.push(self.supersede_key.clone());
        keys
    }

    fn args(&self) -> Vec<Vec<u8>> {
        vec![
            self.guard_ms.to_string().into_bytes(),
            self.token.clone().into_bytes(),
        ]
    }

    fn parse(&self, reply: Value) -> Result<InspectReply, ProtocolError> {
        parse(reply)
    }
}

fn parse(reply: Value) -> Result<InspectReply, ProtocolError> {
    let read = Reader("inspect");
    // A sixth element, the readers, since --shared; a server that sends
    // five (a script of an older redlock) holds none. A seventh, the
    // pending superseding waiter, since --supersede.
    let mut items = read.items(reply, "the reply")?;
    let superseder = match items.len() {
        7 => read.optional_bytes(items.pop().unwrap_or(Value::Nil), "the superseding waiter")?,
        _ => None,
    };
    let readers = match items.len() {
        6 => readers_seen(read, items.pop().unwrap_or(Value::Nil))?,
        _ => ReadersSeen::default(),
    };
    let [occupant, restarting, waiters, broken, fence] =
        read.array(Value::Array(items), "the reply")?;
    let fence = match fence {
        Value::Nil | Value::Boolean(false) => None,
        counter => Some(read.counter(counter)?),
    };
    let occupant = read.occupant(occupant)?;
    Ok(InspectReply {
        readers: ReadersSeen {
            clock: occupant.clock,
            ..readers
        },
        occupant,
        restarting: read.guard_word(restarting)?,
        waiters: read.count(&waiters, "the waiters in line")?,
        broken: read.optional_bytes(broken, "who broke it")?,
        fence,
        superseder,
    })
}

/// shared.lua's `readers_seen()`: `{count, PTTL, {token, ms, …},
/// {record or false, …}}` (the records since readers have them; a reply
/// without them has none).
fn readers_seen(read: Reader, value: Value) -> Result<ReadersSeen, ProtocolError> {
    let mut parts = read.items(value, "the readers")?;
    let records = match parts.len() {
        4 => read.items(parts.pop().unwrap_or(Value::Nil), "the readers' records")?,
        _ => Vec::new(),
    };
    let [count, _pttl, holders] = read.array(Value::Array(parts), "the readers")?;
    let holders = read.items(holders, "the readers' tokens")?;
    // The first 16, and the token asked after.
    if holders.len() % 2 != 0 || holders.len() > 34 || records.len() > holders.len() / 2 {
        return Err(read.error("the readers' tokens: not up to 17 pairs and their records"));
    }
    let mut seen = Vec::new();
    let mut items = holders.into_iter();
    let mut records = records.into_iter();
    while let (Some(token), Some(left)) = (items.next(), items.next()) {
        let record = records.next().unwrap_or(Value::Nil);
        seen.push(SeenReader {
            token: read.bytes(token, "a reader's token")?,
            left_ms: read.count(&left, "a reader's ms left")?,
            record: read.optional_bytes(record, "a reader's record")?,
        });
    }
    Ok(ReadersSeen {
        count: read.count(&count, "the readers")?,
        holders: seen,
        clock: None,
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::protocol::tests::{bulk, held_by, missing, restarting};
    use super::*;

    fn reply(occupant: Value, guard: Value, waiters: Value) -> Value {
        let readers = Value::Array(vec![Value::Int(0), Value::Int(-2), Value::Array(vec![])]);
        Value::Array(vec![
            occupant,
            guard,
            waiters,
            Value::Nil,
            Value::Nil,
            readers,
        ])
    }

    #[test]
    fn a_reply_reads_occupant_guard_and_line() {
        let read = parse(reply(held_by("t"), Value::Nil, Value::Int(2))).unwrap();
        assert_eq!(read.occupant.value.as_deref(), Some(&b"t"[..]));
        assert_eq!((read.restarting, read.waiters), (None, 2));
        let kept_out = parse(reply(missing(), restarting(300), Value::Int(0))).unwrap();
        assert_eq!(
            kept_out.restarting.map(|r| r.guarded.left),
            Some(Duration::from_millis(300))
        );
        assert_eq!(kept_out.occupant.kind, "none");
        let fenced = Value::Array(vec![
            held_by("t"),
            Value::Nil,
            Value::Int(0),
            Value::Nil,
            bulk("41"),
        ]);
        assert_eq!(parse(fenced).unwrap().fence, Some(41));
        // A seventh element: the pending superseding waiter, or false.
        let with = |superseder: Value| {
            let Value::Array(mut items) = reply(held_by("t"), Value::Nil, Value::Int(1)) else {
                unreachable!()
            };
            items.push(superseder);
            parse(Value::Array(items))
        };
        assert_eq!(
            with(bulk("w")).unwrap().superseder.as_deref(),
            Some(&b"w"[..])
        );
        assert_eq!(with(Value::Nil).unwrap().superseder, None);
        assert!(with(Value::Int(3)).is_err());
    }

    #[test]
    fn malformed_replies_are_refused() {
        assert!(
            parse(reply(held_by("t"), Value::Int(0), Value::Int(0))).is_err(),
            "0 for counts"
        );
        assert!(
            parse(reply(held_by("t"), Value::Int(300), Value::Int(0))).is_err(),
            "bare ms"
        );
        assert!(parse(reply(held_by("t"), restarting(0), Value::Int(0))).is_err());
        assert!(parse(reply(held_by("t"), Value::Nil, Value::Int(-1))).is_err());
        assert!(parse(reply(held_by("t"), Value::Nil, Value::Nil)).is_err());
        assert!(parse(reply(Value::Nil, Value::Nil, Value::Int(0))).is_err());
        assert!(parse(reply(bulk("string"), Value::Nil, Value::Int(0))).is_err());
        // The old flat shape: occupant()'s five fields, then ms and waiters.
        let Value::Array(mut flat) = held_by("t") else {
            unreachable!()
        };
        flat.extend([Value::Int(0), Value::Int(0)]);
        assert!(parse(Value::Array(flat)).is_err());
        assert!(parse(Value::Array(vec![held_by("t"), Value::Nil])).is_err());
        let four = Value::Array(vec![held_by("t"), Value::Nil, Value::Int(0), Value::Nil]);
        assert!(parse(four).is_err(), "without the fence");
        let bad_fence = Value::Array(vec![
            held_by("t"),
            Value::Nil,
            Value::Int(0),
            Value::Nil,
            bulk("x"),
        ]);
        assert!(parse(bad_fence).is_err());
        assert!(parse(Value::Int(1)).is_err());
    }
}
