//! force.lua: `release --force`, whoever holds the lock.

use redis::Value;

use super::protocol::{Invocation, LockKeys, Occupant, ProtocolError, Reader};
use super::source::{lua, Features, LuaScript};

/// Deletes a lock (a string key), its record and its line on one server.
#[derive(Debug, Clone)]
pub struct Force {
    pub keys: LockKeys,
    /// Where a delete is announced to waiters.
    pub channel: Vec<u8>,
    /// Break it only while this token holds it (`--if-token`).
    pub if_token: Option<String>,
    /// Break a string that does not look like a lock, too (`--any-key`).
    pub any_key: bool,
    /// Who breaks it, recorded beside the broken lock ("" for nobody).
    pub who: String,
}

/// The longest value taken for a lock's token: redlock's are 32 bytes, and
/// other Redlock clients' (UUIDs, base64, "uuid:thread") stay well under.
pub const MAX_TOKEN: usize = 128;

/// What force.lua did with the key on one server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ForceVerdict {
    Deleted,
    /// Nothing was there.
    Free,
    /// Left alone: a key of another type than a lock's.
    OtherType,
    /// Left alone: a string without expiry, which no lock is.
    NoExpiry,
    /// Left alone: a string longer than any token.
    TooLong,
    /// Left alone: a string whose value is no redlock token and that has
    /// no holder record beside it (another client's lock, or not a lock).
    NotAToken,
    /// Left alone: `--if-token` was given, and another value holds it.
    OtherToken,
}

/// `{occupant(), waiters, verdict, readers}`: what was there just before,
/// how many waiters stood in the line that was cleared, what was done, and
/// how many live readers (`--shared`) were broken with their records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForceReply {
    pub occupant: Occupant,
    pub waiters: u64,
    pub verdict: ForceVerdict,
    pub readers: u64,
}

impl Invocation for Force {
    type Reply = ForceReply;

    fn script(&self) -> &'static LuaScript {
        lua("force", Features::NONE)
    }

    fn keys(&self) -> Vec<Vec<u8>> {
        self.keys.to_vec()
    }

    fn args(&self) -> Vec<Vec<u8>> {
        vec![
            self.channel.clone(),
            self.if_token.clone().unwrap_or_default().into_bytes(),
            (if self.any_key { "1" } else { "0" }).into(),
            MAX_TOKEN.to_string().into_bytes(),
            self.who.clone().into_bytes(),
        ]
    }

    fn parse(&self, reply: Value) -> Result<ForceReply, ProtocolError> {
        parse(reply)
    }
}

fn parse(reply: Value) -> Result<ForceReply, ProtocolError> {
    let read = Reader("force");
    // A fourth element, the readers broken, since readers have records; a
    // reply without it broke none.
    let mut items = read.items(reply, "the reply")?;
    let readers = match items.len() {
        4 => read.count(&items.pop().unwrap_or(Value::Nil), "the readers broken")?,
        _ => 0,
    };
    let [occupant, waiters, verdict] = read.array(Value::Array(items), "the reply")?;
    let verdict = match read.bytes(verdict, "the verdict")?.as_slice() {
        b"deleted" => ForceVerdict::Deleted,
        b"none" => ForceVerdict::Free,
        b"type" => ForceVerdict::OtherType,
        b"no-expiry" => ForceVerdict::NoExpiry,
        b"too-long" => ForceVerdict::TooLong,
        b"not-token" => ForceVerdict::NotAToken,
        b"token" => ForceVerdict::OtherToken,
        other => return Err(read.error(format!("the verdict {other:?} is none of force.lua's"))),
    };
    Ok(ForceReply {
        occupant: read.occupant(occupant)?,
        waiters: read.count(&waiters, "the waiters in line")?,
        verdict,
        readers,
    })
}

#[cfg(test)]
mod tests {
    use super::super::protocol::tests::{bulk, held_by, missing};
    use super::*;

    #[test]
    fn a_reply_reads_what_was_there_and_the_line() {
        let read = parse(Value::Array(vec![
            held_by("t"),
            Value::Int(3),
            bulk("deleted"),
        ]))
        .unwrap();
        assert_eq!((read.occupant.kind.as_str(), read.waiters), ("string", 3));
        assert_eq!(read.verdict, ForceVerdict::Deleted);
        let none = parse(Value::Array(vec![missing(), Value::Int(0), bulk("none")])).unwrap();
        assert_eq!(
            (none.occupant.kind.as_str(), none.verdict),
            ("none", ForceVerdict::Free)
        );
        let kept = parse(Value::Array(vec![
            held_by("t"),
            Value::Int(0),
            bulk("no-expiry"),
        ]));
        assert_eq!(kept.unwrap().verdict, ForceVerdict::NoExpiry);
        let other = parse(Value::Array(vec![
            held_by("t"),
            Value::Int(0),
            bulk("not-token"),
        ]));
        assert_eq!(other.unwrap().verdict, ForceVerdict::NotAToken);
        let readers = parse(Value::Array(vec![
            missing(),
            Value::Int(0),
            bulk("none"),
            Value::Int(2),
        ]))
        .unwrap();
        assert_eq!((readers.verdict, readers.readers), (ForceVerdict::Free, 2));
    }

    #[test]
    fn malformed_replies_are_refused() {
        let done = || bulk("deleted");
        assert!(parse(Value::Array(vec![held_by("t"), Value::Int(-2), done()])).is_err());
        assert!(parse(Value::Array(vec![held_by("t"), bulk("3"), done()])).is_err());
        assert!(parse(Value::Array(vec![
            held_by("t"),
            Value::Int(0),
            bulk("gone")
        ]))
        .is_err());
        assert!(parse(Value::Array(vec![held_by("t"), Value::Int(0)])).is_err());
        assert!(parse(Value::Array(vec![
            held_by("t"),
            Value::Int(0),
            done(),
            Value::Int(-1)
        ]))
        .is_err());
        assert!(parse(Value::Array(vec![held_by("t")])).is_err());
        assert!(parse(Value::Array(vec![Value::Nil, Value::Int(0), done()])).is_err());
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
