//! What every script call has in common: the keys a lock script gets, the
//! shape of a call ([`Invocation`]), the error for a reply the script cannot
//! have sent ([`ProtocolError`]), and the reply pieces several scripts share
//! (holder.lua's `occupant()`, guard.lua's `restart_guard()`).

use std::sync::Arc;
use std::time::Duration;

use redis::Value;

use super::super::guard::{GuardCause, Guarded};
use super::super::key::{
    marker_for, record_key, LockKey, BROKEN_SUFFIX, FENCE_SUFFIX, FREE_SUFFIX, LAPSE_SUFFIX,
    LINE_SUFFIX, READERS_SUFFIX, READER_RECORDS_SUFFIX,
};
use super::source::LuaScript;

/// The highest fencing token redlock hands out, and so the highest counter
/// a server can hold: 2^63 − 2. A counter at or above 2^63 − 1 is no
/// counter of redlock's (fence.lua refuses it as that server's failure),
/// and every token fits storage that keeps signed 64-bit numbers.
pub const MAX_FENCE: u64 = (1 << 63) - 2;

/// A reply that no version of the script sends: the server (or something
/// between it and us) is not speaking the protocol, so its answer counts as
/// that server's failure, as an error reply does.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the {script} script returned a malformed reply: {problem}")]
pub struct ProtocolError {
    script: &'static str,
    problem: String,
}

impl ProtocolError {
    pub fn new(script: &'static str, problem: impl Into<String>) -> Self {
        ProtocolError {
            script,
            problem: problem.into(),
        }
    }
}

impl From<ProtocolError> for redis::RedisError {
    fn from(err: ProtocolError) -> Self {
        // redis-rs shows "<description> - <kind>: <detail>"; the detail
        // names the script and what is wrong with its reply.
        redis::RedisError::from((
            redis::ErrorKind::UnexpectedReturnType,
            "protocol error",
            err.to_string(),
        ))
    }
}

/// One call of one script: its KEYS and ARGV, built here and nowhere else,
/// and the parser of its reply.
pub trait Invocation: Clone + Send + Sync + 'static {
    type Reply: Send + 'static;

    fn script(&self) -> &'static LuaScript;
    fn keys(&self) -> Vec<Vec<u8>>;
    fn args(&self) -> Vec<Vec<u8>>;
    fn parse(&self, reply: Value) -> Result<Self::Reply, ProtocolError>;

    /// Whether the script takes one more argument after its own: the last
    /// moment, on the server's clock in ms, at which its caller still waits
    /// for the reply ("" for none; lock/server_clock.rs),
    /// and answers `{"late", clock}` ([`late_clock`]) past it.
    const BOUNDED: bool = false;

    /// The server's clock (ms) in `reply`, where the reply says it.
    fn clock_of(_reply: &Self::Reply) -> Option<u64> {
        None
    }
}

/// `Some(clock)` when a bounded script answered `{"late", clock}`: the
/// request arrived past its deadline and did nothing (clock: the server's
/// in ms, or none without TIME).
pub fn late_clock(reply: &Value) -> Option<Option<u64>> {
    let Value::Array(items) = reply else {
        return None;
    };
    match items.as_slice() {
        [Value::BulkString(tag), clock] if tag.as_slice() == b"late" => {
            Some(LATE.clock(clock.clone()).ok().flatten())
        }
        _ => None,
    }
}

const LATE: Reader = Reader("late");

/// The keys every script on one lock gets (all but list.lua), in the order
/// the scripts name them: KEYS[1] the lock, [2] its holder record, [3] its
/// line, [4] the tickets' lapse times, [5] since when the line has kept the
/// free lock, [6] the restart guard's marker: the given one, or, for a name
/// with a Redis Cluster hash tag, one in the tag's slot; [7] who broke the
/// lock (force.lua writes it, inspect.lua reads it), [8] its fencing
/// counter, [9] its shared holders, [10] their holder records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockKeys(Arc<[Vec<u8>; 10]>);

impl LockKeys {
    pub fn new(key: &LockKey, marker: &[u8]) -> Self {
        let beside = |suffix: &[u8]| [key.bytes(), suffix].concat();
        LockKeys(Arc::new([
            key.bytes().to_vec(),
            record_key(key),
            beside(LINE_SUFFIX),
            beside(LAPSE_SUFFIX),
            beside(FREE_SUFFIX),
            marker_for(key.bytes(), marker),
            beside(BROKEN_SUFFIX),
            beside(FENCE_SUFFIX),
            beside(READERS_SUFFIX),
            beside(READER_RECORDS_SUFFIX),
        ]))
    }

    pub fn to_vec(&self) -> Vec<Vec<u8>> {
        self.0.to_vec()
    }
}

/// What holder.lua's `occupant()` says occupies a key:
/// `{type, value (strings only), PTTL, record, this server's clock}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Occupant {
    /// Redis' TYPE: "none" for a missing key, "string" for a lock.
    pub kind: String,
    /// The value, for a string (and only for a string).
    pub value: Option<Vec<u8>>,
    /// Remaining ms; -1 for a key without expiry, -2 for none.
    pub pttl_ms: i64,
    /// The holder record beside the key, as stored.
    pub record: Option<Vec<u8>>,
    /// The server's clock in ms when it answered (`None` without TIME).
    pub clock: Option<u64>,
}

/// The restart guard keeps the server out of quorums: it may have lost
/// locks within the guard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Restarting {
    /// How long until it counts again (never zero), and why it is kept out.
    pub guarded: Guarded,
    /// The server's clock in ms when it answered.
    pub clock: Option<u64>,
}

/// Reads the replies of one script, naming it in every error.
#[derive(Debug, Clone, Copy)]
pub struct Reader(pub &'static str);

impl Reader {
    pub fn error(self, problem: impl Into<String>) -> ProtocolError {
        ProtocolError::new(self.0, problem)
    }

    /// An array of exactly `len` elements.
    pub fn array<const N: usize>(
        self,
        value: Value,
        what: &str,
    ) -> Result<[Value; N], ProtocolError> {
        let items = self.items(value, what)?;
        let len = items.len();
        items
            .try_into()
            .map_err(|_| self.error(format!("{what}: {len} elements, not {N}")))
    }

    /// An array of any length.
    pub fn items(self, value: Value, what: &str) -> Result<Vec<Value>, ProtocolError> {
        match value {
            Value::Array(items) => Ok(items),
            other => Err(self.error(format!("{what}: {} instead of an array", shape(&other)))),
        }
    }

    /// A whole number, at least `min`.
    pub fn int(self, value: &Value, min: i64, what: &str) -> Result<i64, ProtocolError> {
        match value {
            Value::Int(n) if *n >= min => Ok(*n),
            Value::Int(n) => Err(self.error(format!("{what}: {n}, below {min}"))),
            other => Err(self.error(format!("{what}: {} instead of a number", shape(other)))),
        }
    }

    /// A count: a whole number, at least 0.
    pub fn count(self, value: &Value, what: &str) -> Result<u64, ProtocolError> {
        self.int(value, 0, what).map(|n| n.unsigned_abs())
    }

    /// Bytes (a bulk or status string).
    pub fn bytes(self, value: Value, what: &str) -> Result<Vec<u8>, ProtocolError> {
        match value {
            Value::BulkString(bytes) => Ok(bytes),
            Value::SimpleString(text) => Ok(text.into_bytes()),
            other => Err(self.error(format!("{what}: {} instead of a string", shape(&other)))),
        }
    }

    /// Bytes, or nothing (Lua's false: nil, or RESP3's boolean false).
    pub fn optional_bytes(
        self,
        value: Value,
        what: &str,
    ) -> Result<Option<Vec<u8>>, ProtocolError> {
        match value {
            Value::Nil | Value::Boolean(false) => Ok(None),
            value => self.bytes(value, what).map(Some),
        }
    }

    /// A fencing counter: its decimal digits (fence.lua keeps them as
    /// text, so that every u64 is exact), or a number; never one above
    /// [`MAX_FENCE`], which fence.lua refuses to give.
    pub fn counter(self, value: Value) -> Result<u64, ProtocolError> {
        let counter = match value {
            Value::Int(_) => self.count(&value, "the fencing counter")?,
            Value::BulkString(digits) => std::str::from_utf8(&digits)
                .ok()
                .filter(|text| !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|text| text.parse().ok())
                .ok_or_else(|| self.error("the fencing counter: not a u64"))?,
            other => return Err(self.error(format!("the fencing counter: {}", shape(&other)))),
        };
        if counter > MAX_FENCE {
            return Err(self.error(format!(
                "the fencing counter {counter} is at or above 2^63-1"
            )));
        }
        Ok(counter)
    }

    /// A server's clock in ms (a number, or its digits as text), or nothing
    /// when it has none to give.
    pub fn clock(self, value: Value) -> Result<Option<u64>, ProtocolError> {
        match value {
            Value::Nil | Value::Boolean(false) => Ok(None),
            Value::Int(_) => self.count(&value, "the clock").map(Some),
            Value::BulkString(digits) => std::str::from_utf8(&digits)
                .ok()
                .filter(|text| !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|text| text.parse().ok())
                .map(Some)
                .ok_or_else(|| self.error("the clock: not a number of ms")),
            other => Err(self.error(format!("the clock: {}", shape(&other)))),
        }
    }

    /// holder.lua's `occupant()`.
    pub fn occupant(self, value: Value) -> Result<Occupant, ProtocolError> {
        let [kind, value, pttl, record, clock] = self.array(value, "occupant()")?;
        let kind = String::from_utf8(self.bytes(kind, "the key's type")?)
            .ok()
            .filter(|kind| !kind.is_empty())
            .ok_or_else(|| self.error("the key's type: not a type name"))?;
        // A string longer than any token comes as its length, never its
        // bytes: it holds no Redlock lock, and reads as another type would.
        let long_string = kind == "string" && matches!(value, Value::Int(n) if n > 0);
        let value = match long_string {
            true => None,
            false => self.optional_bytes(value, "the key's value")?,
        };
        if value.is_some() != (kind == "string" && !long_string) {
            return Err(self.error(format!("a value for a key of type {kind:?}: {value:?}")));
        }
        Ok(Occupant {
            pttl_ms: self.int(&pttl, -2, "the key's PTTL")?,
            record: self.optional_bytes(record, "the holder record")?,
            clock: self.clock(clock)?,
            kind,
            value,
        })
    }

    /// guard.lua's `restart_guard()`: `{"restarting", ms, clock, cause}`.
    pub fn restarting(self, value: Value) -> Result<Restarting, ProtocolError> {
        let [tag, left, clock, cause] = self.array(value, "restarting")?;
        if self.bytes(tag, "the tag")? != b"restarting" {
            return Err(self.error("a four-element reply not tagged \"restarting\""));
        }
        // A server that counts says false: 0 ms is no encoding of it.
        let left = self.int(&left, 1, "the ms until the server counts again")?;
        let cause = self.bytes(cause, "the cause")?;
        let cause = GuardCause::parse(&cause)
            .ok_or_else(|| self.error("a restart guard's cause it never names"))?;
        Ok(Restarting {
            guarded: Guarded {
                left: Duration::from_millis(left.unsigned_abs()),
                cause,
            },
            clock: self.clock(clock)?,
        })
    }

    /// guard.lua's `restart_guard()` where a script goes on whatever it
    /// says: false (the server counts) or `{"restarting", ms, clock}`.
    pub fn guard_word(self, value: Value) -> Result<Option<Restarting>, ProtocolError> {
        match value {
            Value::Nil | Value::Boolean(false) => Ok(None),
            value => self.restarting(value).map(Some),
        }
    }
}

/// A reply's shape in a few words, for errors (never its contents, which
/// may be long or binary).
pub fn shape(value: &Value) -> String {
    match value {
        Value::Nil => "nil".to_owned(),
        Value::Int(n) => format!("the number {n}"),
        Value::BulkString(_) | Value::SimpleString(_) | Value::VerbatimString { .. } => {
            "a string".to_owned()
        }
        Value::Array(items) => format!("an array of {}", items.len()),
        Value::Okay => "OK".to_owned(),
        Value::Boolean(b) => format!("the boolean {b}"),
        Value::Double(_) => "a double".to_owned(),
        Value::ServerError(_) => "an error".to_owned(),
        _ => "an unexpected type".to_owned(),
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub fn bulk(text: &str) -> Value {
        Value::BulkString(text.as_bytes().to_vec())
    }

    #[test]
    fn a_late_reply_is_told_from_every_other_and_says_the_servers_clock() {
        let late = |items: Vec<Value>| late_clock(&Value::Array(items));
        assert_eq!(
            late(vec![bulk("late"), bulk("1795908823503")]),
            Some(Some(1_795_908_823_503))
        );
        assert_eq!(late(vec![bulk("late"), Value::Nil]), Some(None));
        assert_eq!(late(vec![bulk("held"), bulk("17")]), None);
        assert_eq!(late(vec![bulk("late")]), None);
        assert_eq!(late_clock(&Value::Int(1)), None);
    }

    /// occupant() of a string key holding `token` for 900 ms, at clock 42.
    pub fn held_by(token: &str) -> Value {
        Value::Array(vec![
            bulk("string"),
            bulk(token),
            Value::Int(900),
            Value::Nil,
            bulk("42"),
        ])
    }

    /// occupant() of a missing key.
    pub fn missing() -> Value {
        Value::Array(vec![
            bulk("none"),
            Value::Nil,
            Value::Int(-2),
            Value::Nil,
            Value::Int(42),
        ])
    }

    pub fn restarting(ms: i64) -> Value {
        Value::Array(vec![
            bulk("restarting"),
            Value::Int(ms),
            Value::Int(7),
            bulk("unseen"),
        ])
    }

    const READ: Reader = Reader("test");

    #[test]
    fn an_occupant_reads_each_field() {
        let seen = READ.occupant(held_by("t")).unwrap();
        assert_eq!(
            seen,
            Occupant {
                kind: "string".into(),
                value: Some(b"t".to_vec()),
                pttl_ms: 900,
                record: None,
                clock: Some(42),
            }
        );
        let none = READ.occupant(missing()).unwrap();
        assert_eq!(
            (none.kind.as_str(), none.value, none.pttl_ms),
            ("none", None, -2)
        );
        let list = Value::Array(vec![
            bulk("list"),
            Value::Boolean(false),
            Value::Int(-1),
            bulk("r"),
            Value::Nil,
        ]);
        let list = READ.occupant(list).unwrap();
        assert_eq!((list.record, list.clock), (Some(b"r".to_vec()), None));
        let long = Value::Array(vec![
            bulk("string"),
            Value::Int(50 << 20),
            Value::Int(-1),
            Value::Nil,
            Value::Int(42),
        ]);
        let long = READ.occupant(long).unwrap();
        assert_eq!((long.kind.as_str(), long.value), ("string", None));
    }

    #[test]
    fn a_malformed_occupant_is_refused() {
        let with = |i: usize, field: Value| {
            let Value::Array(mut fields) = held_by("t") else {
                unreachable!()
            };
            fields[i] = field;
            READ.occupant(Value::Array(fields))
        };
        assert!(with(0, Value::Int(1)).is_err(), "type as a number");
        assert!(with(0, bulk("")).is_err(), "empty type");
        assert!(with(1, Value::Nil).is_err(), "a string without its value");
        assert!(with(2, Value::Int(-3)).is_err(), "PTTL below -2");
        assert!(with(2, bulk("900")).is_err(), "PTTL as text");
        assert!(with(3, Value::Int(5)).is_err(), "record as a number");
        assert!(with(4, Value::Int(-1)).is_err(), "negative clock");
        assert!(with(4, bulk("12x")).is_err(), "clock not digits");
        assert!(with(4, bulk("")).is_err(), "empty clock");
        let Value::Array(mut fields) = missing() else {
            unreachable!()
        };
        fields[1] = bulk("ghost");
        assert!(
            READ.occupant(Value::Array(fields)).is_err(),
            "a value for a missing key"
        );
        let Value::Array(mut short) = held_by("t") else {
            unreachable!()
        };
        short.pop();
        assert!(READ.occupant(Value::Array(short)).is_err(), "four fields");
        assert!(READ.occupant(Value::Nil).is_err());
        assert!(READ.occupant(Value::Int(1)).is_err());
    }

    #[test]
    fn restarting_is_tagged_with_more_than_zero_ms() {
        assert_eq!(
            READ.restarting(restarting(250)).unwrap(),
            Restarting {
                guarded: Guarded {
                    left: Duration::from_millis(250),
                    cause: GuardCause::Unseen
                },
                clock: Some(7)
            }
        );
        assert!(READ.restarting(restarting(0)).is_err(), "0 ms");
        assert!(READ.restarting(restarting(-5)).is_err(), "negative ms");
        let untagged = Value::Array(vec![bulk("queued"), Value::Int(1), Value::Nil]);
        assert!(READ.restarting(untagged).is_err());
        let short = Value::Array(vec![bulk("restarting"), Value::Int(1)]);
        assert!(READ.restarting(short).is_err());
        let three = Value::Array(vec![bulk("restarting"), Value::Int(1), Value::Int(7)]);
        assert!(
            READ.restarting(three).is_err(),
            "the old reply without a cause"
        );
        let unknown = Value::Array(vec![
            bulk("restarting"),
            Value::Int(1),
            Value::Int(7),
            bulk("gremlins"),
        ]);
        assert!(READ.restarting(unknown).is_err());
        assert_eq!(READ.guard_word(Value::Nil).unwrap(), None);
        assert_eq!(READ.guard_word(Value::Boolean(false)).unwrap(), None);
        assert!(
            READ.guard_word(Value::Int(0)).is_err(),
            "the old 0 for 'counts'"
        );
        assert!(READ.guard_word(Value::Int(250)).is_err(), "the old bare ms");
        assert!(READ.guard_word(Value::Boolean(true)).is_err());
    }

    #[test]
    fn a_malformed_reply_names_its_script() {
        let err = Reader("acquire").occupant(Value::Int(3)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the acquire script returned a malformed reply: occupant(): the number 3 instead of an array"
        );
    }

    #[test]
    fn a_malformed_reply_is_an_error_that_says_so() {
        let err = redis::RedisError::from(Reader("list").error("the reply: nil"));
        assert_eq!(
            err.to_string(),
            "protocol error - UnexpectedReturnType: the list script returned a malformed reply: the reply: nil"
        );
        assert!(!matches!(err.kind(), redis::ErrorKind::Server(_)));
    }

    #[test]
    fn lock_keys_come_in_the_order_the_scripts_name_them() {
        let keys = LockKeys::new(&LockKey::new(b"deploy".to_vec()), b"app:\0guard").to_vec();
        let expected: [&[u8]; 10] = [
            b"deploy",
            b"deploy\0holder",
            b"deploy\0line",
            b"deploy\0lapse",
            b"deploy\0free",
            b"app:\0guard",
            b"deploy\0broken",
            b"deploy\0fence",
            b"deploy\0readers",
            b"deploy\0reader-records",
        ];
        assert_eq!(keys, expected.map(<[u8]>::to_vec));
        let tagged = LockKeys::new(&LockKey::new(b"{d}x".to_vec()), b"app:\0guard").to_vec();
        assert_eq!(tagged[5], b"{d}\0guard2");
    }
}
