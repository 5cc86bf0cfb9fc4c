//! acquire.lua: `SET NX PX` and the holder record, unless the restart
//! guard keeps the server out or others are first in line.

use redis::Value;

use super::protocol::{shape, Invocation, LockKeys, Occupant, ProtocolError, Reader, Restarting};
use super::source::{lua, Features, LuaScript};

/// One attempt to take a lock on one server.
#[derive(Debug, Clone)]
pub struct Acquire {
    pub keys: LockKeys,
    pub token: String,
    pub ttl_ms: u64,
    /// The restart guard in ms (0: off).
    pub guard_ms: u64,
    /// The holder record to write beside the lock (empty: none).
    pub record: Vec<u8>,
    /// A waiter's place in line: its ticket and score. `None` for a caller
    /// that does not stand in line: it takes the lock only when nobody does.
    pub ticket: Option<(String, u64)>,
    /// How long a ticket stays without its waiter, and how long the line
    /// may keep a free lock from callers in a row, in ms.
    pub linger_ms: u64,
    /// `--fence`: a lock taken says this server's fencing counter too
    /// (ARGV[8]); without it the reply, and the work, are as ever.
    pub fence: bool,
    /// A shared attempt (`--shared`): one reader among many.
    pub shared: bool,
    /// A semaphore's slot: where the servers record its K, and this
    /// client's K, which a server that records another refuses (limit.lua).
    pub limit: Option<(Vec<u8>, u32)>,
    /// Takes a free lock wherever it is free, first in line there or not
    /// (ARGV[11]): the caller's last attempt found the servers' lines split
    /// (lock/line.rs).
    pub past_a_split_line: bool,
    /// `--supersede` (ARGV[12], ARGV[13], KEYS[12]; supersede.lua).
    pub supersede: Option<SupersedeArgs>,
    /// A run once per period or key: the done mark's key beside the lock
    /// and the run's id, which a server whose mark holds it answers
    /// `{"done", …}` to (ARGV[14], KEYS[13]; lock/once.rs).
    pub once: Option<(Vec<u8>, String)>,
    /// The attempt may go as acquire_plain.lua, where it has no feature and
    /// no ticket: false for the attempt that follows a `Crowded` answer,
    /// which acquire.lua whole decides.
    pub plain_text: bool,
}

/// What a superseding waiter's attempt passes.
#[derive(Debug, Clone)]
pub struct SupersedeArgs {
    /// The hash of the lock's superseding waiters.
    pub key: Vec<u8>,
    /// The waiter as the servers keep it (`Superseder::encode`).
    pub who: String,
    /// The lock's wake-up channel (empty: nobody is woken).
    pub channel: Vec<u8>,
}

/// What acquire.lua answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AcquireReply {
    /// 1: taken, or already ours; `{"taken", counter}` when the caller
    /// fences: the counter's value on this server (0 for none).
    Taken(Option<u64>),
    /// `{"held", occupant()}`: another value (or another type) holds it.
    Held(Box<Occupant>),
    /// `{"queued", waiters, clock, ahead}`: the lock is free, but this
    /// many waiters stand in line before the caller; `ahead` are the
    /// tickets before the caller's (the first 16 at most).
    Queued {
        waiters: u64,
        clock: Option<u64>,
        ahead: Vec<String>,
    },
    /// `{"restarting", ms, clock}`.
    Restarting(Restarting),
    /// `{"superseded", WHO}`: a newer superseding waiter replaced this
    /// one (WHO as `Superseder::encode` wrote it).
    Superseded(Vec<u8>),
    /// `{"readers", count, PTTL, clock}`: an exclusive attempt found live
    /// readers (and no key).
    Readers {
        count: u64,
        pttl_ms: i64,
        clock: Option<u64>,
    },
    /// `{"done", mark, clock}`: the done mark holds this run's id; nothing
    /// was taken (lock/once.rs reads the mark).
    Done { mark: Vec<u8>, clock: Option<u64> },
    /// `{"crowded", clock}` (acquire_plain.lua only): the lock is free, but
    /// a line, readers or the line's step-aside count stand beside it, which
    /// only acquire.lua reads; nothing was taken.
    Crowded { clock: Option<u64> },
}

const READ: Reader = Reader("acquire");

impl Invocation for Acquire {
    type Reply = AcquireReply;

    /// The attempt's mode: the fence's, the readers' and the semaphore's
    /// Lua only for an attempt that uses them. An attempt with none of them
    /// and no place in line (`-n`, a waiter's first) sends the plain text,
    /// which leaves the line and the readers to acquire.lua where they
    /// exist (`Crowded`).
    fn script(&self) -> &'static LuaScript {
        let features = Features::NONE
            .with(Features::FENCE, self.fence)
            .with(Features::SHARED, self.shared)
            .with(Features::LIMIT, self.limit.is_some())
            .with(Features::SUPERSEDE, self.supersede.is_some())
            .with(Features::ONCE, self.once.is_some());
        let alone = self.ticket.is_none() && !self.past_a_split_line;
        match self.plain_text && alone && features == Features::NONE {
            true => lua("acquire_plain", features),
            false => lua("acquire", features),
        }
    }

    /// The lock's keys, a slot's limit record (KEYS[11]), the hash of
    /// superseding waiters (KEYS[12]) and a run once's done mark
    /// (KEYS[13]); a key the mode's text does not read is not sent
    /// (keys_sent), so an empty one stands in for a missing one before it.
    fn keys(&self) -> Vec<Vec<u8>> {
        let mut keys = super::token::with_limit_key(self.keys.to_vec(), self.limit.as_ref());
        if let Some(supersede) = &self.supersede {
            keys.resize(11, Vec::new());
            keys.push(supersede.key.clone());
        }
        if let Some((mark, _)) = &self.once {
            keys.resize(12, Vec::new());
            keys.push(mark.clone());
        }
        keys
    }

    fn args(&self) -> Vec<Vec<u8>> {
        let (ticket, score) = self.ticket.clone().unwrap_or_default();
        vec![
            self.token.clone().into_bytes(),
            self.ttl_ms.to_string().into_bytes(),
            self.guard_ms.to_string().into_bytes(),
            self.record.clone(),
            ticket.into_bytes(),
            score.to_string().into_bytes(),
            self.linger_ms.to_string().into_bytes(),
            if self.fence {
                b"1".to_vec()
            } else {
                b"0".to_vec()
            },
            if self.shared {
                b"1".to_vec()
            } else {
                b"0".to_vec()
            },
            self.limit
                .as_ref()
                .map(|(_, k)| k.to_string().into_bytes())
                .unwrap_or_default(),
            if self.past_a_split_line {
                b"1".to_vec()
            } else {
                b"0".to_vec()
            },
            self.supersede
                .as_ref()
                .map(|s| s.who.clone().into_bytes())
                .unwrap_or_default(),
            self.supersede
                .as_ref()
                .map(|s| s.channel.clone())
                .unwrap_or_default(),
            self.once
                .as_ref()
                .map(|(_, id)| id.clone().into_bytes())
                .unwrap_or_default(),
        ]
    }

    const BOUNDED: bool = true;

    fn clock_of(reply: &AcquireReply) -> Option<u64> {
        match reply {
            AcquireReply::Taken(_) | AcquireReply::Superseded(_) => None,
            AcquireReply::Held(seen) => seen.clock,
            AcquireReply::Restarting(restarting) => restarting.clock,
            AcquireReply::Queued { clock, .. }
            | AcquireReply::Readers { clock, .. }
            | AcquireReply::Done { clock, .. }
            | AcquireReply::Crowded { clock } => *clock,
        }
    }

    fn parse(&self, reply: Value) -> Result<AcquireReply, ProtocolError> {
        // A lock taken says the counter exactly when it was asked for: a
        // fenced lock must never go without one.
        match (parse(reply)?, self.fence) {
            (AcquireReply::Taken(None), true) => Err(READ.error("taken without the counter")),
            (AcquireReply::Taken(Some(_)), false) => Err(READ.error("a counter not asked for")),
            (reply, _) => Ok(reply),
        }
    }
}

fn parse(reply: Value) -> Result<AcquireReply, ProtocolError> {
    match reply {
        Value::Int(1) => Ok(AcquireReply::Taken(None)),
        Value::Array(items) => tagged(items),
        other => Err(READ.error(format!("{} instead of 1 or a tagged array", shape(&other)))),
    }
}

/// `{"taken", counter}`, `{"held", …}`, `{"queued", …}` or
/// `{"restarting", …}`.
fn tagged(items: Vec<Value>) -> Result<AcquireReply, ProtocolError> {
    let tag = items.first().cloned().unwrap_or(Value::Nil);
    match READ.bytes(tag, "the tag")?.as_slice() {
        b"taken" => {
            let [_, counter] = READ.array(Value::Array(items), "taken")?;
            Ok(AcquireReply::Taken(Some(READ.counter(counter)?)))
        }
        b"held" => {
            let [_, seen] = READ.array(Value::Array(items), "held")?;
            let seen = READ.occupant(seen)?;
            if seen.kind == "none" {
                return Err(READ.error("held by a key that is not there"));
            }
            Ok(AcquireReply::Held(Box::new(seen)))
        }
        b"queued" => {
            let [_, waiters, clock, ahead] = READ.array(Value::Array(items), "queued")?;
            let ahead = READ
                .items(ahead, "the tickets ahead")?
                .into_iter()
                .map(|ticket| READ.bytes(ticket, "a ticket ahead"))
                .map(|ticket| ticket.map(|t| String::from_utf8_lossy(&t).into_owned()))
                .collect::<Result<_, _>>()?;
            Ok(AcquireReply::Queued {
                waiters: READ.count(&waiters, "the waiters in line")?,
                clock: READ.clock(clock)?,
                ahead,
            })
        }
        b"superseded" => {
            let [_, who] = READ.array(Value::Array(items), "superseded")?;
            Ok(AcquireReply::Superseded(
                READ.bytes(who, "who superseded it")?,
            ))
        }
        b"readers" => {
            let [_, count, pttl, clock] = READ.array(Value::Array(items), "readers")?;
            Ok(AcquireReply::Readers {
                count: READ.int(&count, 1, "the readers")?.unsigned_abs(),
                pttl_ms: READ.int(&pttl, -2, "the readers' PTTL")?,
                clock: READ.clock(clock)?,
            })
        }
        b"crowded" => {
            let [_, clock] = READ.array(Value::Array(items), "crowded")?;
            Ok(AcquireReply::Crowded {
                clock: READ.clock(clock)?,
            })
        }
        b"done" => {
            let [_, mark, clock] = READ.array(Value::Array(items), "done")?;
            Ok(AcquireReply::Done {
                mark: READ.bytes(mark, "the done mark")?,
                clock: READ.clock(clock)?,
            })
        }
        b"restarting" => READ
            .restarting(Value::Array(items))
            .map(AcquireReply::Restarting),
        tag => Err(READ.error(format!("the tag {:?}", String::from_utf8_lossy(tag)))),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::protocol::tests::{bulk, held_by, missing, restarting};
    use super::*;

    fn array(items: Vec<Value>) -> Value {
        Value::Array(items)
    }

    /// acquire.lua reads the deadline the connection adds as ARGV[15]
    /// (after these) and the guard's db last.
    #[test]
    fn the_deadline_comes_after_fourteen_arguments() {
        let keys = LockKeys::new(&crate::lock::LockKey::new(b"k".to_vec()), b"m");
        let call = Acquire {
            keys,
            token: "t".into(),
            ttl_ms: 1,
            guard_ms: 0,
            record: Vec::new(),
            ticket: None,
            linger_ms: 1,
            fence: false,
            shared: false,
            limit: None,
            past_a_split_line: false,
            supersede: None,
            once: None,
            plain_text: false,
        };
        assert_eq!(call.args().len(), 14);
        let once = Acquire {
            once: Some((b"k\0done".to_vec(), "p:1".into())),
            ..call
        };
        assert_eq!(once.args()[13], b"p:1");
        assert_eq!(once.keys().len(), 13);
        assert_eq!(once.keys()[12], b"k\0done");
        const { assert!(Acquire::BOUNDED) };
    }

    #[test]
    fn each_reply_reads_as_its_outcome() {
        assert_eq!(parse(Value::Int(1)).unwrap(), AcquireReply::Taken(None));
        assert_eq!(
            parse(array(vec![bulk("taken"), bulk("9223372036854775806")])).unwrap(),
            AcquireReply::Taken(Some((1 << 63) - 2))
        );
        assert_eq!(
            parse(array(vec![bulk("taken"), bulk("0")])).unwrap(),
            AcquireReply::Taken(Some(0))
        );
        assert_eq!(
            parse(array(vec![
                bulk("queued"),
                Value::Int(3),
                bulk("17"),
                array(vec![bulk("t-1"), bulk("t-2")])
            ]))
            .unwrap(),
            AcquireReply::Queued {
                waiters: 3,
                clock: Some(17),
                ahead: vec!["t-1".into(), "t-2".into()],
            }
        );
        let without_ahead = array(vec![bulk("queued"), Value::Int(3), bulk("17")]);
        assert!(parse(without_ahead).is_err(), "the reply before issue 28");
        assert_eq!(
            parse(restarting(250)).unwrap(),
            AcquireReply::Restarting(Restarting {
                guarded: crate::lock::Guarded {
                    left: Duration::from_millis(250),
                    cause: crate::lock::GuardCause::Unseen,
                },
                clock: Some(7)
            })
        );
        let held = parse(array(vec![bulk("held"), held_by("theirs")])).unwrap();
        assert!(
            matches!(&held, AcquireReply::Held(seen) if seen.value.as_deref() == Some(&b"theirs"[..]) && seen.pttl_ms == 900)
        );
    }

    #[test]
    fn malformed_replies_are_refused() {
        // 0 and -N were once "restarting": nothing says that any more.
        for n in [0, -5, 2] {
            assert!(parse(Value::Int(n)).is_err(), "{n}");
        }
        assert!(parse(Value::Nil).is_err());
        // A counter above the highest fence redlock hands out.
        for counter in ["9223372036854775807", "18446744073709551615"] {
            let err = parse(array(vec![bulk("taken"), bulk(counter)])).unwrap_err();
            assert!(err.to_string().contains("at or above 2^63-1"), "{err}");
        }
        assert!(parse(bulk("1")).is_err());
        assert!(parse(Value::Okay).is_err());
        assert!(parse(array(vec![])).is_err(), "empty");
        assert!(parse(held_by("bare occupant()")).is_err(), "untagged");
        assert!(
            parse(array(vec![bulk("held"), missing()])).is_err(),
            "held by nothing"
        );
        assert!(parse(array(vec![bulk("held")])).is_err());
        assert!(parse(array(vec![bulk("held"), held_by("t"), Value::Nil])).is_err());
        assert!(parse(array(vec![bulk("queued"), bulk("x"), Value::Nil])).is_err());
        assert!(parse(array(vec![bulk("queued"), Value::Int(-1), Value::Nil])).is_err());
        assert!(parse(array(vec![bulk("queued"), Value::Int(1)])).is_err());
        assert!(parse(restarting(0)).is_err());
        assert_eq!(
            parse(array(vec![
                bulk("readers"),
                Value::Int(2),
                Value::Int(900),
                bulk("5")
            ]))
            .unwrap(),
            AcquireReply::Readers {
                count: 2,
                pttl_ms: 900,
                clock: Some(5)
            }
        );
        assert!(parse(array(vec![
            bulk("readers"),
            Value::Int(0),
            Value::Int(9),
            Value::Nil
        ]))
        .is_err());
        assert!(parse(array(vec![bulk("other"), Value::Int(1), Value::Nil])).is_err());
        assert!(parse(array(vec![bulk("taken")])).is_err());
        assert!(parse(array(vec![bulk("taken"), bulk("-1")])).is_err());
        assert!(parse(array(vec![bulk("taken"), bulk("18446744073709551616")])).is_err());
        assert!(parse(array(vec![bulk("taken"), Value::Nil])).is_err());
        assert!(parse(array(vec![Value::Int(1), Value::Int(1), Value::Nil])).is_err());
    }

    #[test]
    fn arguments_come_in_the_scripts_order() {
        let call = Acquire {
            keys: LockKeys::new(&super::super::super::key::LockKey::new(b"k".to_vec()), b"m"),
            token: "tok".into(),
            ttl_ms: 5000,
            guard_ms: 0,
            record: b"rec".to_vec(),
            ticket: Some(("000-ab".into(), 12)),
            linger_ms: 1000,
            fence: false,
            shared: false,
            limit: None,
            past_a_split_line: false,
            supersede: None,
            once: None,
            plain_text: false,
        };
        let args: Vec<&[u8]> = vec![
            b"tok", b"5000", b"0", b"rec", b"000-ab", b"12", b"1000", b"0", b"0", b"", b"0", b"",
            b"", b"",
        ];
        assert_eq!(
            call.args(),
            args.iter().map(|a| a.to_vec()).collect::<Vec<_>>()
        );
        let without = Acquire {
            ticket: None,
            ..call
        };
        assert_eq!(without.args()[4..6], [b"".to_vec(), b"0".to_vec()]);
        assert_eq!(without.keys().len(), 10);
        let fenced = Acquire {
            fence: true,
            ..without.clone()
        };
        assert_eq!(fenced.args()[7..9], [b"1".to_vec(), b"0".to_vec()]);
        let shared = Acquire {
            shared: true,
            ..without.clone()
        };
        assert_eq!(shared.args()[7..9], [b"0".to_vec(), b"1".to_vec()]);
        // A semaphore's slot: its K last, and where it is recorded as KEYS[11].
        let slot = Acquire {
            limit: Some((b"k\0limit".to_vec(), 3)),
            ..without
        };
        assert_eq!(slot.args()[9], b"3");
        assert_eq!(slot.keys().len(), 11);
        assert_eq!(slot.keys()[10], b"k\0limit");
        // A superseding waiter: who and the channel after the split flag,
        // its hash as KEYS[12] (an empty KEYS[11], which is not sent).
        let superseding = Acquire {
            supersede: Some(SupersedeArgs {
                key: b"k\0supersede".to_vec(),
                who: "w".into(),
                channel: b"c".to_vec(),
            }),
            ..slot.clone()
        };
        assert_eq!(superseding.args()[11..13], [b"w".to_vec(), b"c".to_vec()]);
        assert_eq!(
            superseding.keys()[10..],
            [b"k\0limit".to_vec(), b"k\0supersede".to_vec()]
        );
        let alone = Acquire {
            limit: None,
            ..superseding
        };
        assert_eq!(alone.keys()[10..], [Vec::new(), b"k\0supersede".to_vec()]);
    }

    /// An attempt with no feature and no ticket, sent as the plain text
    /// where `plain_text` allows it.
    fn plain_call(plain_text: bool) -> Acquire {
        Acquire {
            keys: LockKeys::new(&super::super::super::key::LockKey::new(b"k".to_vec()), b"m"),
            token: "tok".into(),
            ttl_ms: 5000,
            guard_ms: 0,
            record: Vec::new(),
            ticket: None,
            linger_ms: 1000,
            fence: false,
            shared: false,
            limit: None,
            past_a_split_line: false,
            supersede: None,
            once: None,
            plain_text,
        }
    }

    /// The mode an attempt's fields give is the one its arguments give by
    /// the composition's table (`SWITCHES`), which tests/cli/lua.rs uses.
    #[test]
    fn the_mode_is_the_one_the_arguments_switch_on() {
        let plain = plain_call(false);
        for bits in (0..32).chain(64..96) {
            let on = |bit: u8| bits & bit != 0;
            let call = Acquire {
                // A ticket or none: the same text.
                ticket: on(1).then(|| ("000-ab".to_owned(), 12)),
                fence: on(2),
                shared: on(4),
                limit: on(8).then(|| (b"k\0limit".to_vec(), 3)),
                supersede: on(16).then(|| SupersedeArgs {
                    key: b"k\0supersede".to_vec(),
                    who: "00000000000000000001 serial 1 h".into(),
                    channel: Vec::new(),
                }),
                once: on(64).then(|| (b"k\0done".to_vec(), "p:1".to_owned())),
                ..plain.clone()
            };
            let features = call.script().features;
            assert_eq!(features, super::super::mode_of("acquire", &call.args()));
            assert_eq!(
                features.bits(),
                (bits & 14) | ((bits & 16) << 3) | (bits & 64)
            );
        }
    }

    /// Only an attempt with no feature and no place in line goes as the
    /// plain text, and only where the caller allows it: after a crowded
    /// answer the next attempt sends acquire.lua whole.
    #[test]
    fn only_an_attempt_alone_without_features_sends_the_plain_text() {
        let plain = plain_call(true);
        assert_eq!(plain.script().name, "acquire_plain");
        let whole = |call: Acquire| call.script().name == "acquire";
        assert!(whole(Acquire {
            plain_text: false,
            ..plain.clone()
        }));
        assert!(whole(Acquire {
            ticket: Some(("000-ab".into(), 12)),
            ..plain.clone()
        }));
        assert!(whole(Acquire {
            past_a_split_line: true,
            ..plain.clone()
        }));
        assert!(whole(Acquire {
            fence: true,
            ..plain.clone()
        }));
        assert!(whole(Acquire {
            shared: true,
            ..plain.clone()
        }));
        assert!(whole(Acquire {
            once: Some((b"k\0done".to_vec(), "p:1".to_owned())),
            ..plain.clone()
        }));
        assert!(whole(Acquire {
            limit: Some((b"k\0limit".to_vec(), 3)),
            ..plain
        }));
        let crowded = parse(array(vec![bulk("crowded"), bulk("17")])).unwrap();
        assert_eq!(crowded, AcquireReply::Crowded { clock: Some(17) });
        assert!(parse(array(vec![bulk("crowded")])).is_err());
    }
}
