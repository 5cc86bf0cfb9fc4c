//! The Lua scripts on their own: each one as redlock sends it for the mode
//! of the call (`redlock::lua::composition`, the composition of
//! `src/lock/scripts/compose.rs`, with the KEYS that mode reads) and run with EVAL on a real redis-server,
//! with crafted keys, one branch per test. Replies are checked in the exact
//! shape the Rust parsers (`src/lock/scripts/*.rs`) read.

use redis::Value;
use redlock::lua::{composition, keys_sent, mode_of, Features};

use crate::support::RedisServer;

const GUARD_OFF: &str = "0";

/// The mode of a call of `name` with `args`, by the composition's table of
/// which argument turns which feature on (`redlock::lua::mode_of`, which
/// the calls in src/lock/scripts/ agree with). A release that announces is
/// a hold's, whose token may be a reader's (`readers`, which no argument
/// says); one that does not undoes an attempt, a writer's.
fn mode(name: &str, args: &[&str]) -> Features {
    let announces = name == "release" && args.get(1).is_some_and(|a| !a.is_empty());
    mode_of(name, args).with(Features::READERS, announces)
}

/// EVAL of the script `name` with `keys` and `args` (and db 0 last, for a
/// script that reads the guard, as a connection to db 0 sends it).
fn eval(
    server: &RedisServer,
    name: &str,
    keys: &[Vec<u8>],
    args: &[&str],
) -> redis::RedisResult<Value> {
    eval_in_db(server, name, keys, args, "0")
}

fn eval_in_db(
    server: &RedisServer,
    name: &str,
    keys: &[Vec<u8>],
    args: &[&str],
    db: &str,
) -> redis::RedisResult<Value> {
    eval_mode(server, (name, mode(name, args)), keys, args, db)
}

fn eval_mode(
    server: &RedisServer,
    (name, features): (&str, Features),
    keys: &[Vec<u8>],
    args: &[&str],
    db: &str,
) -> redis::RedisResult<Value> {
    let (source, read) = composition(name, features);
    // Only the keys the text reads, as a connection sends them.
    let keys = keys_sent(read.as_deref(), keys);
    let mut args = args.to_vec();
    // A script that runs the restart guard gets the db index its
    // connection selected as its last argument.
    if source.contains("local function restart_guard(") {
        // The db comes after every argument the script names, as the
        // Rust calls send them all: those a test leaves out are empty.
        let named = match name {
            "acquire" | "acquire_plain" => 15,
            _ => 2,
        };
        args.resize(args.len().max(named), "");
        args.push(db);
    }
    redis::cmd("EVAL")
        .arg(source)
        .arg(keys.len())
        .arg(keys)
        .arg(args)
        .query(&mut server.client())
}

/// [`eval`] that must not fail.
fn run(server: &RedisServer, name: &str, keys: &[Vec<u8>], args: &[&str]) -> Value {
    eval(server, name, keys, args).unwrap_or_else(|e| panic!("{name}.lua failed: {e}"))
}

/// The nine keys every script on the lock `name` gets, in order (as
/// `LockKeys` builds them), with the restart guard's marker `name:marker`.
fn keys(name: &str) -> Vec<Vec<u8>> {
    let beside = |suffix: &[u8]| [name.as_bytes(), suffix].concat();
    vec![
        name.as_bytes().to_vec(),
        beside(b"\0holder"),
        beside(b"\0line"),
        beside(b"\0lapse"),
        beside(b"\0free"),
        beside(b":marker"),
        beside(b"\0broken"),
        beside(b"\0fence"),
        beside(b"\0readers"),
        beside(b"\0reader-records"),
    ]
}

/// ARGV of acquire.lua: token, ttl, guard, record, ticket, score, linger.
fn acquire_args<'a>(
    token: &'a str,
    guard: &'a str,
    ticket: &'a str,
    score: &'a str,
) -> [&'a str; 7] {
    [token, "10000", guard, "", ticket, score, "1000"]
}

fn items(value: Value) -> Vec<Value> {
    match value {
        Value::Array(items) => items,
        other => panic!("not an array: {other:?}"),
    }
}

fn text(value: &Value) -> String {
    match value {
        Value::BulkString(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        other => panic!("not a string: {other:?}"),
    }
}

fn int(value: &Value) -> i64 {
    match value {
        Value::Int(n) => *n,
        other => panic!("not a number: {other:?}"),
    }
}

/// A tagged reply `{tag, …}`: its tag and the rest.
fn tagged(value: Value) -> (String, Vec<Value>) {
    let mut items = items(value);
    let tag = text(&items.remove(0));
    (tag, items)
}

/// occupant()'s `{type, value, pttl, record, clock}`, checked for shape:
/// the type, the value, the PTTL and the record.
fn occupant(value: Value) -> (String, Option<String>, i64, Option<String>) {
    let fields = items(value);
    assert_eq!(fields.len(), 5, "occupant(): {fields:?}");
    let optional = |v: &Value| (*v != Value::Nil).then(|| text(v));
    let clock = text(&fields[4]);
    assert!(clock.parse::<u64>().unwrap() > 1_600_000_000_000, "{clock}");
    (
        text(&fields[0]),
        optional(&fields[1]),
        int(&fields[2]),
        optional(&fields[3]),
    )
}

/// `{"restarting", ms, clock, cause}`: the ms.
fn restarting(value: Value) -> i64 {
    let (tag, rest) = tagged(value);
    assert_eq!(tag, "restarting");
    assert_eq!(rest.len(), 3, "{rest:?}");
    assert!(int(&rest[1]) > 1_600_000_000_000, "the clock: {rest:?}");
    int(&rest[0])
}

fn cmd<T: redis::FromRedisValue>(server: &RedisServer, args: &[&[u8]]) -> T {
    let mut command = redis::cmd(std::str::from_utf8(args[0]).unwrap());
    for arg in &args[1..] {
        command.arg(*arg);
    }
    command.query(&mut server.client()).unwrap()
}

/// Puts `ticket` in the line of `keys` at `score`, lapsing at `lapses` ms
/// (this server's clock).
fn in_line(server: &RedisServer, keys: &[Vec<u8>], ticket: &str, score: u64, lapses: u64) {
    let _: i64 = cmd(
        server,
        &[
            b"ZADD",
            &keys[2],
            score.to_string().as_bytes(),
            ticket.as_bytes(),
        ],
    );
    let _: i64 = cmd(
        server,
        &[
            b"ZADD",
            &keys[3],
            lapses.to_string().as_bytes(),
            ticket.as_bytes(),
        ],
    );
}

/// Far in the future, by any server's clock.
const NEVER: u64 = 1 << 50;

fn line(server: &RedisServer, keys: &[Vec<u8>]) -> Vec<String> {
    cmd(server, &[b"ZRANGE", &keys[2], b"0", b"-1"])
}

/// This server's clock in ms.
fn now_ms(server: &RedisServer) -> u64 {
    let (secs, micros): (u64, u64) = cmd(server, &[b"TIME"]);
    secs * 1000 + micros / 1000
}

// ---------------------------------------------------------------------------
// acquire.lua
// ---------------------------------------------------------------------------

#[test]
fn acquire_takes_a_free_lock_and_writes_its_record() {
    let server = RedisServer::start();
    let k = keys("free");
    let args = ["tok", "10000", GUARD_OFF, "who", "", "0", "1000"];
    assert_eq!(run(&server, "acquire", &k, &args), Value::Int(1));
    assert_eq!(server.get(&k[0]).as_deref(), Some(&b"tok"[..]));
    assert!((1..=10_000).contains(&server.pttl(&k[0])));
    let record = String::from_utf8(server.get(&k[1]).unwrap()).unwrap();
    let (since, rest) = record.split_once(' ').unwrap();
    assert!(since.parse::<u64>().is_ok() && rest == "who", "{record}");
    // A retry of our own SET (a dropped connection) is taken too.
    assert_eq!(run(&server, "acquire", &k, &args), Value::Int(1));
}

/// The 15 ARGV of acquire.lua for a free, plain lock, with `deadline`
/// (ARGV[15], the server's clock in ms) last.
fn bounded_acquire_args(deadline: &str) -> [&str; 15] {
    [
        "late", "10000", GUARD_OFF, "", "", "0", "1000", "0", "0", "", "0", "", "", "", deadline,
    ]
}

/// acquire.lua's arguments for a superseding waiter (`--supersede`):
/// `ticket` at `score`, WHO `who`, woken on `channel`.
fn superseding_args<'a>(ticket: &'a str, score: &'a str, who: &'a str) -> [&'a str; 13] {
    [
        ticket, "10000", GUARD_OFF, "", ticket, score, "1000", "0", "0", "", "0", who, "chan",
    ]
}

// ---------------------------------------------------------------------------
// acquire_plain.lua: `-n` and a waiter's first attempt, with no feature
// ---------------------------------------------------------------------------

/// acquire_plain.lua's ARGV for a caller outside any line, as the Rust
/// call sends them (fourteen, the deadline last: none here).
fn plain_args(token: &str, guard: &str) -> [String; 15] {
    let fixed = [
        token, "10000", guard, "who", "", "0", "1000", "0", "0", "", "0", "", "", "", "",
    ];
    fixed.map(str::to_owned)
}

fn run_plain(server: &RedisServer, k: &[Vec<u8>], args: &[String]) -> redis::RedisResult<Value> {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    eval_mode(server, ("acquire_plain", Features::NONE), k, &args, "0")
}

#[test]
fn the_plain_acquire_takes_a_free_lock_and_says_who_holds_a_busy_one() {
    let server = RedisServer::start();
    let k = keys("plain");
    let mine = plain_args("tok", GUARD_OFF);
    assert_eq!(run_plain(&server, &k, &mine).unwrap(), Value::Int(1));
    assert_eq!(server.get(&k[0]).as_deref(), Some(&b"tok"[..]));
    assert!((1..=10_000).contains(&server.pttl(&k[0])));
    let record = String::from_utf8(server.get(&k[1]).unwrap()).unwrap();
    assert!(record.ends_with(" who"), "{record}");
    // A retry of our own SET (a dropped connection) is taken too.
    assert_eq!(run_plain(&server, &k, &mine).unwrap(), Value::Int(1));
    // Another caller: held, by whom, with the record.
    let (tag, rest) = tagged(run_plain(&server, &k, &plain_args("other", GUARD_OFF)).unwrap());
    assert_eq!(tag, "held");
    let [seen] = <[Value; 1]>::try_from(rest).unwrap();
    let (kind, value, _, held_record) = occupant(seen);
    assert_eq!((kind.as_str(), value.as_deref()), ("string", Some("tok")));
    assert_eq!(held_record, Some(record));
    // Past its deadline: nothing.
    let mut late = plain_args("late", GUARD_OFF);
    late[14] = (now_ms(&server) - 1).to_string();
    let other = keys("plain-late");
    assert_eq!(tagged(run_plain(&server, &other, &late).unwrap()).0, "late");
    assert_eq!(server.pttl(&other[0]), -2);
}

/// A line, the line's step-aside count or readers beside a free lock: the
/// plain text answers "crowded" and writes nothing, guard marker included,
/// for acquire.lua whole to decide.
#[test]
fn the_plain_acquire_leaves_a_free_lock_with_a_line_or_readers_to_the_whole_text() {
    let server = RedisServer::start();
    for (what, beside) in [("line", 2), ("step-aside count", 4), ("readers", 8)] {
        let k = keys(&format!("crowded-{beside}"));
        match beside {
            4 => server.set_px(&k[4], b"1", 5000),
            _ => {
                let _: i64 = cmd(&server, &[b"ZADD", &k[beside], b"1", b"someone"]);
            }
        }
        let (tag, rest) = tagged(run_plain(&server, &k, &plain_args("tok", "10000")).unwrap());
        assert_eq!(tag, "crowded", "{what}");
        assert!(text(&rest[0]).parse::<u64>().unwrap() > 1_600_000_000_000);
        for (n, key) in k.iter().enumerate().filter(|&(n, _)| n != beside) {
            assert_eq!(server.pttl(key), -2, "{what}: key {n} written");
        }
    }
}

/// The plain text takes the lock only where acquire.lua would: over every
/// arrangement of a key, a live or a lapsed line, a step-aside count and
/// readers, a lock it takes is one the whole text takes too.
#[test]
fn the_plain_acquire_takes_only_where_the_whole_text_takes() {
    let server = RedisServer::start();
    for arrangement in 0..32_u32 {
        let has = |bit: u32| arrangement & (1 << bit) != 0;
        let set_up = |k: &[Vec<u8>]| {
            let now = now_ms(&server);
            if has(0) {
                server.set_px(&k[0], b"theirs", 5000);
            }
            if has(1) {
                in_line(&server, k, "000-first", 1, NEVER);
            }
            if has(2) {
                in_line(&server, k, "000-lapsed", 1, now - 1);
            }
            if has(3) {
                server.set_px(&k[4], (now - 5000).to_string().as_bytes(), 5000);
            }
            if has(4) {
                let lapses = (now + 5000).to_string();
                let _: i64 = cmd(&server, &[b"ZADD", &k[8], lapses.as_bytes(), b"reader"]);
            }
        };
        let (plain, whole) = (
            keys(&format!("p{arrangement}")),
            keys(&format!("w{arrangement}")),
        );
        set_up(&plain);
        set_up(&whole);
        let by_plain = run_plain(&server, &plain, &plain_args("tok", GUARD_OFF)).unwrap();
        let whole_args = plain_args("tok", GUARD_OFF);
        let whole_args: Vec<&str> = whole_args.iter().map(String::as_str).collect();
        let by_whole = run(&server, "acquire", &whole, &whole_args);
        if by_plain == Value::Int(1) {
            assert_eq!(by_whole, Value::Int(1), "arrangement {arrangement:05b}");
        }
        let crowded = matches!(&by_plain, Value::Array(items) if text(&items[0]) == "crowded");
        assert_eq!(
            crowded,
            !has(0) && (has(1) || has(2) || has(3) || has(4)),
            "arrangement {arrangement:05b}: {by_plain:?}"
        );
    }
}

#[test]
fn the_plain_acquire_refuses_a_waiters_or_a_features_attempt() {
    let server = RedisServer::start();
    let k = keys("plain-refuses");
    for (n, value, what) in [
        (4, "000-ab", "a ticket"),
        (7, "1", "fenced"),
        (8, "1", "shared"),
        (9, "3", "a slot"),
        (10, "1", "past a split line"),
        (11, "who", "superseding"),
        (13, "per:1:0:5", "a run once"),
    ] {
        let mut args = plain_args("tok", GUARD_OFF);
        args[n] = value.to_owned();
        let refused = run_plain(&server, &k, &args).expect_err(what).to_string();
        assert!(
            refused.contains("sent as a plain acquire"),
            "{what}: {refused}"
        );
        for key in &k {
            assert_eq!(server.pttl(key), -2, "{what}: nothing written");
        }
    }
}

#[test]
fn the_plain_acquire_runs_the_restart_guard_before_it_writes() {
    let server = RedisServer::start();
    let k = keys("plain-guarded");
    let (tag, _) = tagged(run_plain(&server, &k, &plain_args("a", "10000")).unwrap());
    assert_eq!(tag, "restarting");
    assert_eq!(server.get(&k[0]), None);
    assert!(server.get(&k[5]).is_some(), "the marker is written");
    let since = now_ms(&server) - 20_000;
    server.set(&k[5], &Marker::of(&server, since).value());
    let taken = run_plain(&server, &k, &plain_args("a", "10000")).unwrap();
    assert_eq!(taken, Value::Int(1));
}

/// A newer superseding waiter marks the older one, takes it out of line,
/// and its next attempt is answered "superseded" with who; an older one
/// arriving last is superseded at once.
#[test]
fn acquire_supersedes_older_superseding_waiters() {
    let server = RedisServer::start();
    let mut k = keys("s");
    k.extend([Vec::new(), b"s\0supersede".to_vec()]);
    server.set_px(&k[0], b"theirs", 10_000);
    let a = "00000000000000000010 arrival 11 host-a";
    let b = "00000000000000000020 serial 22 host b";
    let older = "00000000000000000005 serial 33 host-c";
    let attempt = |ticket: &str, score: &str, who: &str| {
        tagged(run(
            &server,
            "acquire",
            &k,
            &superseding_args(ticket, score, who),
        ))
    };
    assert_eq!(attempt("000000000000010-a", "10", a).0, "held");
    assert_eq!(server.in_line("s"), 1);
    assert_eq!(attempt("000000000000020-b", "20", b).0, "held");
    assert_eq!(server.in_line("s"), 1, "the older one left the line");
    let (tag, rest) = attempt("000000000000010-a", "10", a);
    assert_eq!((tag.as_str(), text(&rest[0]).as_str()), ("superseded", b));
    let (tag, rest) = attempt("000000000000030-c", "30", older);
    assert_eq!((tag.as_str(), text(&rest[0]).as_str()), ("superseded", b));
    assert_eq!(server.in_line("s"), 1, "only the newest stands in line");
    // The newer one is not superseded by them.
    assert_eq!(attempt("000000000000020-b", "20", b).0, "held");
    // inspect.lua names it, last; list.lua beside the lock's occupant.
    let seen = items(run(&server, "inspect", &k, &[GUARD_OFF, ""]));
    assert_eq!(text(&seen[6]), b, "the pending superseding waiter");
    let list_keys = [
        b"m:guard".to_vec(),
        k[0].clone(),
        k[1].clone(),
        k[11].clone(),
        k[3].clone(),
        b"s\0done".to_vec(),
    ];
    let reply = items(run(&server, "list", &list_keys, &[GUARD_OFF, "0"]));
    let [occupied, readers, who] = <[Value; 3]>::try_from(items(reply[1].clone())).unwrap();
    assert_eq!(occupant(occupied).1.as_deref(), Some("theirs"));
    assert_eq!((readers, text(&who).as_str()), (Value::Nil, b));
}

#[test]
fn acquire_does_nothing_for_a_request_that_arrived_after_its_deadline() {
    let server = RedisServer::start();
    let k = keys("late");
    let past = (now_ms(&server) - 1).to_string();
    let (tag, rest) = tagged(run(&server, "acquire", &k, &bounded_acquire_args(&past)));
    assert_eq!(tag, "late");
    let [clock] = <[Value; 1]>::try_from(rest).unwrap();
    assert!(text(&clock).parse::<u64>().unwrap() > past.parse::<u64>().unwrap());
    // Nothing written: no key, no record, no ticket.
    for key in &k {
        assert_eq!(server.pttl(key), -2, "{}", String::from_utf8_lossy(key));
    }
    // The same request within its deadline, or with none, takes the lock.
    let future = (now_ms(&server) + 60_000).to_string();
    let args = bounded_acquire_args(&future);
    assert_eq!(run(&server, "acquire", &k, &args), Value::Int(1));
    assert_eq!(server.get(&k[0]).as_deref(), Some(&b"late"[..]));
    let _: i64 = cmd(&server, &[b"DEL", &k[0]]);
    assert_eq!(
        run(&server, "acquire", &k, &bounded_acquire_args("")),
        Value::Int(1)
    );
}

#[test]
fn acquire_says_who_holds_a_busy_lock() {
    let server = RedisServer::start();
    let k = keys("busy");
    server.set_px(&k[0], b"theirs", 5000);
    server.set_px(&k[1], b"123 their record", 5000);
    let (tag, rest) = tagged(run(
        &server,
        "acquire",
        &k,
        &acquire_args("mine", GUARD_OFF, "", "0"),
    ));
    assert_eq!(tag, "held");
    let [seen] = <[Value; 1]>::try_from(rest).unwrap();
    let (kind, value, pttl, record) = occupant(seen);
    assert_eq!(
        (kind.as_str(), value.as_deref()),
        ("string", Some("theirs"))
    );
    assert!((1..=5000).contains(&pttl));
    assert_eq!(record.as_deref(), Some("123 their record"));
    assert_eq!(server.get(&k[0]).as_deref(), Some(&b"theirs"[..]));
}

#[test]
fn acquire_leaves_a_key_of_another_type_alone() {
    let server = RedisServer::start();
    let k = keys("a-list");
    let _: i64 = cmd(&server, &[b"RPUSH", &k[0], b"x"]);
    let (tag, rest) = tagged(run(
        &server,
        "acquire",
        &k,
        &acquire_args("mine", GUARD_OFF, "", "0"),
    ));
    assert_eq!(tag, "held");
    let (kind, value, pttl, _) = occupant(rest.into_iter().next().unwrap());
    assert_eq!((kind.as_str(), value, pttl), ("list", None, -1));
    let length: i64 = cmd(&server, &[b"LLEN", &k[0]]);
    assert_eq!(length, 1);
}

#[test]
fn acquire_keeps_a_free_lock_for_the_first_in_line() {
    let server = RedisServer::start();
    let k = keys("queued");
    in_line(&server, &k, "t-200", 200, NEVER);
    // Nobody in line cuts in: not a caller without a ticket...
    let (tag, rest) = tagged(run(
        &server,
        "acquire",
        &k,
        &acquire_args("a", GUARD_OFF, "", "0"),
    ));
    assert_eq!((tag.as_str(), int(&rest[0])), ("queued", 1));
    assert!(text(&rest[1]).parse::<u64>().unwrap() > 1_600_000_000_000);
    // ...nor a later waiter, who takes its place behind.
    let (tag, rest) = tagged(run(
        &server,
        "acquire",
        &k,
        &acquire_args("b", GUARD_OFF, "t-300", "300"),
    ));
    assert_eq!((tag.as_str(), int(&rest[0])), ("queued", 2));
    assert_eq!(line(&server, &k), ["t-200", "t-300"]);
    assert_eq!(server.get(&k[0]), None);
    // An earlier ticket goes first, wherever it arrives from.
    in_line(&server, &k, "t-100", 100, NEVER);
    let (tag, _) = tagged(run(
        &server,
        "acquire",
        &k,
        &acquire_args("c", GUARD_OFF, "t-200", "200"),
    ));
    assert_eq!(tag, "queued");
    let taken = run(
        &server,
        "acquire",
        &k,
        &acquire_args("first", GUARD_OFF, "t-100", "100"),
    );
    assert_eq!(taken, Value::Int(1));
    assert_eq!(server.get(&k[0]).as_deref(), Some(&b"first"[..]));
    assert_eq!(
        line(&server, &k),
        ["t-200", "t-300"],
        "the taker leaves the line where it takes the lock"
    );
    // An attempt that won too few servers is undone, and its ticket is
    // back in its place before the lock is free again.
    assert_eq!(
        run(
            &server,
            "release",
            &k,
            &["first", "", "t-100", "100", "1000"]
        ),
        Value::Int(1)
    );
    assert_eq!(server.get(&k[0]), None);
    assert_eq!(line(&server, &k), ["t-100", "t-200", "t-300"]);
}

/// A writer that takes the lock on a server leaves the line there (the
/// undo of a failed attempt puts it back); a reader stays in line until it
/// leaves everywhere, since its leaving wakes the readers behind it.
#[test]
fn a_writer_leaves_the_line_where_it_takes_the_lock_and_a_reader_stays() {
    let server = RedisServer::start();
    let k = keys("taken-here");
    in_line(&server, &k, "t-1", 1, NEVER);
    let taken = run(
        &server,
        "acquire",
        &k,
        &acquire_args("mine", GUARD_OFF, "t-1", "1"),
    );
    assert_eq!(taken, Value::Int(1));
    assert!(line(&server, &k).is_empty());
    // A reader (ARGV[8] fenced "0", ARGV[9] shared "1") keeps its place.
    let readers = keys("read-here");
    let mut args = acquire_args("r", GUARD_OFF, "t-2-shared", "2").to_vec();
    args.extend(["0", "1"]);
    assert_eq!(run(&server, "acquire", &readers, &args), Value::Int(1));
    assert_eq!(line(&server, &readers), ["t-2-shared"]);
    // A caller without a ticket stands nowhere.
    let other = keys("no-ticket");
    let taken = run(
        &server,
        "acquire",
        &other,
        &acquire_args("x", GUARD_OFF, "", "0"),
    );
    assert_eq!(taken, Value::Int(1));
    assert!(line(&server, &other).is_empty());
}

#[test]
fn acquire_drops_lapsed_tickets() {
    let server = RedisServer::start();
    let k = keys("lapsed");
    in_line(&server, &k, "t-1", 1, 1);
    let _: i64 = cmd(&server, &[b"ZADD", &k[2], b"2", b"t-2-no-lapse-time"]);
    assert_eq!(
        run(
            &server,
            "acquire",
            &k,
            &acquire_args("a", GUARD_OFF, "", "0")
        ),
        Value::Int(1)
    );
    assert!(line(&server, &k).is_empty(), "{:?}", line(&server, &k));
}

#[test]
fn acquire_lets_a_line_that_kept_the_lock_too_long_step_aside() {
    let server = RedisServer::start();
    let k = keys("aside");
    in_line(&server, &k, "t-1", 1, NEVER);
    // The line has kept the free lock from callers since long ago.
    server.set(&k[4], b"1");
    assert_eq!(
        run(
            &server,
            "acquire",
            &k,
            &acquire_args("a", GUARD_OFF, "", "0")
        ),
        Value::Int(1)
    );
    // Since just now: it keeps it.
    let k = keys("kept");
    in_line(&server, &k, "t-1", 1, NEVER);
    server.set(&k[4], now_ms(&server).to_string().as_bytes());
    let (tag, _) = tagged(run(
        &server,
        "acquire",
        &k,
        &acquire_args("a", GUARD_OFF, "", "0"),
    ));
    assert_eq!(tag, "queued");
}

/// Issue 28: a refused waiter learns the tickets ahead of its own; with
/// ARGV[11] "1" (its last attempt found the servers' lines split) it takes
/// a free lock where another is first, and never a held one.
#[test]
fn acquire_names_the_tickets_ahead_and_goes_past_a_split_line_when_told() {
    let server = RedisServer::start();
    let k = keys("split");
    in_line(&server, &k, "t-100", 100, NEVER);
    in_line(&server, &k, "t-200", 200, NEVER);
    let (tag, rest) = tagged(run(
        &server,
        "acquire",
        &k,
        &acquire_args("c", GUARD_OFF, "t-300", "300"),
    ));
    assert_eq!(tag, "queued");
    let ahead: Vec<String> = items(rest[2].clone()).iter().map(text).collect();
    assert_eq!(ahead, ["t-100", "t-200"], "only the tickets before t-300");
    let mut past = acquire_args("c", GUARD_OFF, "t-300", "300").to_vec();
    past.extend(["0", "0", "", "1"]);
    assert_eq!(run(&server, "acquire", &k, &past), Value::Int(1));
    assert_eq!(line(&server, &k), ["t-100", "t-200"], "it left the line");
    // Never past a holder.
    let mut other = acquire_args("d", GUARD_OFF, "t-400", "400").to_vec();
    other.extend(["0", "0", "", "1"]);
    let (tag, _) = tagged(run(&server, "acquire", &k, &other));
    assert_eq!(tag, "held");
}

/// What guard.lua's marker records of the dataset behind the address.
#[derive(Clone)]
struct Marker {
    since: u64,
    cause: &'static str,
    db: &'static str,
    run_id: String,
    replid: String,
    evicted: u64,
    commands: u64,
}

impl Marker {
    /// The marker guard.lua would write on `server` now, dated `since`.
    fn of(server: &RedisServer, since: u64) -> Marker {
        let stat = |name: &str| server.info_field("stats", name).unwrap().parse().unwrap();
        Marker {
            since,
            cause: "unseen",
            db: "0",
            run_id: server.info_field("server", "run_id").unwrap(),
            replid: server.info_field("replication", "master_replid").unwrap(),
            evicted: stat("evicted_keys"),
            commands: stat("total_commands_processed"),
        }
    }

    fn value(&self) -> Vec<u8> {
        let Marker {
            since,
            cause,
            db,
            run_id,
            replid,
            evicted,
            commands,
        } = self;
        format!("2 {since} {cause} {db} {run_id} {replid} {evicted} {commands}").into_bytes()
    }
}

/// The cause of a `{"restarting", ms, clock, cause}` reply.
fn cause_of(reply: Value) -> String {
    let [_, _, _, cause] = <[Value; 4]>::try_from(items(reply)).unwrap();
    match cause {
        Value::BulkString(bytes) => String::from_utf8(bytes).unwrap(),
        other => panic!("a cause that is not a string: {other:?}"),
    }
}

#[test]
fn acquire_under_the_guard_restarts_without_a_marker() {
    let server = RedisServer::start();
    let k = keys("guarded");
    let left = restarting(run(
        &server,
        "acquire",
        &k,
        &acquire_args("a", "10000", "", "0"),
    ));
    assert!((9_000..=10_000).contains(&left), "{left}");
    assert_eq!(server.get(&k[0]), None);
    let written = String::from_utf8(server.get(&k[5]).unwrap()).unwrap();
    let fields: Vec<&str> = written.split(' ').collect();
    let now = Marker::of(&server, 0);
    assert_eq!(
        [fields[0], fields[2], fields[3], fields[4], fields[5], fields[6]],
        ["2", "unseen", "0", &now.run_id, &now.replid, "0"],
        "{written}"
    );
    // A marker old enough: the server counts.
    let since = now_ms(&server) - 20_000;
    server.set(&k[5], &Marker::of(&server, since).value());
    assert_eq!(
        run(&server, "acquire", &k, &acquire_args("a", "10000", "", "0")),
        Value::Int(1)
    );
}

/// Each change of the dataset behind the address that the marker sees is a
/// loss that happened now: the whole guard is left, however old the marker,
/// and the reply names the cause.
#[test]
fn acquire_under_the_guard_restarts_on_every_change_of_the_dataset() {
    let server = RedisServer::start();
    // One eviction first, so that a marker can have seen one fewer.
    evict_one(&server);
    let since = now_ms(&server) - 20_000;
    let changed: [(&str, Change); 7] = [
        ("another-process", |m| m.run_id = "an-earlier-run".into()),
        ("replication", |m| m.replid = "0".repeat(40)),
        ("another-db", |m| m.db = "1"),
        ("eviction", |m| m.evicted -= 1),
        ("stats-reset", |m| m.evicted += 1),
        ("stats-reset", |m| m.commands += 1_000_000),
        ("clock", |m| m.since += 86_400_000),
    ];
    for (i, (cause, change)) in changed.into_iter().enumerate() {
        let k = keys(&format!("changed-{i}"));
        let mut marker = Marker::of(&server, since);
        change(&mut marker);
        server.set(&k[5], &marker.value());
        let reply = run(&server, "acquire", &k, &acquire_args("a", "10000", "", "0"));
        assert_eq!(cause_of(reply.clone()), cause, "case {i}");
        let left = restarting(reply);
        assert!((9_000..=10_000).contains(&left), "{cause}: {left} ms left");
        assert_eq!(server.get(&k[0]), None, "{cause}: the lock was written");
        // The marker keeps the cause, and the guard counts from now.
        let written = String::from_utf8(server.get(&k[5]).unwrap()).unwrap();
        assert!(written.contains(&format!(" {cause} ")), "{written}");
    }
    // Unreadable: a marker of another format costs one guard from now.
    let k = keys("unreadable");
    server.set(&k[5], format!("{since} run 0").as_bytes());
    let reply = run(&server, "acquire", &k, &acquire_args("a", "10000", "", "0"));
    assert_eq!(cause_of(reply), "unreadable");
}

/// A change of the dataset, as the marker would see it.
type Change = fn(&mut Marker);

/// Makes `server` evict one key (a volatile one it is given to evict).
fn evict_one(server: &RedisServer) {
    server.set_px(b"evict-me", b"x", 60_000);
    let config = |args: &[&str]| {
        let _: () = redis::cmd("CONFIG")
            .arg(args)
            .query(&mut server.client())
            .unwrap();
    };
    config(&["SET", "maxmemory-policy", "volatile-lru"]);
    config(&["SET", "maxmemory", "1"]);
    let _: redis::RedisResult<()> = redis::cmd("SET")
        .arg(&["filler", "x"][..])
        .query(&mut server.client());
    config(&["SET", "maxmemory", "0"]);
    config(&["SET", "maxmemory-policy", "noeviction"]);
    assert_ne!(
        server.info_field("stats", "evicted_keys").as_deref(),
        Some("0")
    );
}

/// An unchanged dataset keeps the marker's time (and cause): a guard that
/// has passed stays passed, and one under way goes on from where it was.
#[test]
fn acquire_under_the_guard_keeps_the_time_of_an_unchanged_dataset() {
    let server = RedisServer::start();
    let k = keys("kept");
    let mut marker = Marker::of(&server, now_ms(&server) - 4_000);
    marker.cause = "eviction";
    server.set(&k[5], &marker.value());
    let reply = run(&server, "acquire", &k, &acquire_args("a", "10000", "", "0"));
    assert_eq!(cause_of(reply.clone()), "eviction");
    let left = restarting(reply);
    assert!(
        (5_000..=6_100).contains(&left),
        "{left} ms left of 10s, 4s in"
    );
    // Read from db 1, the same marker is another db's.
    let reply = eval_in_db(
        &server,
        "acquire",
        &k,
        &acquire_args("a", "10000", "", "0"),
        "1",
    )
    .unwrap();
    assert_eq!(cause_of(reply), "another-db");
}

/// How many times INFO ran on `server` since the last `CONFIG RESETSTAT`
/// (scripts' calls included); the INFO that asks is counted after it.
fn info_calls(server: &RedisServer) -> u64 {
    let stats: String = cmd(server, &[b"INFO", b"commandstats"]);
    stats
        .lines()
        .find_map(|line| line.strip_prefix("cmdstat_info:calls="))
        .map_or(0, |rest| rest.split(',').next().unwrap().parse().unwrap())
}

#[test]
fn acquire_reads_the_guard_only_where_it_would_write_the_lock() {
    let server = RedisServer::start();
    let k = keys("busy");
    let reset = || {
        let _: String = cmd(&server, &[b"CONFIG", b"RESETSTAT"]);
    };
    // Held by another: no INFO, and no marker written.
    server.set(&k[0], b"other");
    reset();
    let (tag, _) = tagged(run(
        &server,
        "acquire",
        &k,
        &acquire_args("a", "10000", "", "0"),
    ));
    assert_eq!(tag, "held");
    assert_eq!(info_calls(&server), 0, "a busy lock read the guard");
    assert_eq!(server.get(&k[5]), None, "a busy lock wrote the marker");
    // Free, but another waiter is first in line: no INFO either.
    let _: i64 = cmd(&server, &[b"DEL", &k[0]]);
    in_line(&server, &k, "first", 1, NEVER);
    reset();
    let (tag, _) = tagged(run(
        &server,
        "acquire",
        &k,
        &acquire_args("b", "10000", "second", "2"),
    ));
    assert_eq!(tag, "queued");
    assert_eq!(info_calls(&server), 0, "a caller not first read the guard");
    // Free and the caller's turn: the guard is read, and holds it off.
    reset();
    restarting(run(
        &server,
        "acquire",
        &k,
        &acquire_args("c", "10000", "first", "1"),
    ));
    assert_eq!(
        info_calls(&server),
        1,
        "INFO server replication stats, in one call"
    );
    assert!(server.get(&k[5]).is_some(), "the marker");
}

#[test]
fn acquire_refuses_a_marker_of_another_type() {
    let server = RedisServer::start();
    let k = keys("bad-marker");
    let _: i64 = cmd(&server, &[b"RPUSH", &k[5], b"x"]);
    let err = eval(&server, "acquire", &k, &acquire_args("a", "10000", "", "0")).unwrap_err();
    assert!(
        err.to_string().contains("marker key is not a string"),
        "{err}"
    );
}

// ---------------------------------------------------------------------------
// release.lua, extend.lua
// ---------------------------------------------------------------------------

#[test]
fn release_deletes_only_with_the_right_token() {
    let server = RedisServer::start();
    let k = keys("rel");
    server.set_px(&k[0], b"tok", 5000);
    server.set_px(&k[1], b"1 rec", 5000);
    // 2: another value holds it; 0: the key is gone.
    assert_eq!(run(&server, "release", &k, &["other", ""]), Value::Int(2));
    assert_eq!(server.get(&k[0]).as_deref(), Some(&b"tok"[..]));
    assert_eq!(run(&server, "release", &k, &["tok", "chan"]), Value::Int(1));
    assert_eq!((server.get(&k[0]), server.get(&k[1])), (None, None));
    assert_eq!(run(&server, "release", &k, &["tok", ""]), Value::Int(0));
    // A key of another type is simply not ours; nor an empty string.
    let _: i64 = cmd(&server, &[b"RPUSH", &k[0], b"x"]);
    assert_eq!(run(&server, "release", &k, &["tok", ""]), Value::Int(2));
    let _: i64 = cmd(&server, &[b"DEL", &k[0]]);
    server.set_px(&k[0], b"", 5000);
    assert_eq!(run(&server, "release", &k, &["tok", ""]), Value::Int(2));
}

/// A release names the waiter whose turn it is, so that only it tries at
/// once; with nobody in line, the message is empty and anyone may try.
/// (Every waiter tried on every release, and the wake-up budget that guards
/// against a PUBLISH flood then held eight looping clients to a quarter of
/// their sections.)
#[test]
fn release_announces_whose_turn_it_is() {
    let server = RedisServer::start();
    let k = keys("turn");
    let mut subscriber = server.client();
    let mut pubsub = subscriber.as_pubsub();
    pubsub.subscribe("turn-chan").unwrap();
    pubsub.subscribe(&b"turn-chan\0t-1"[..]).unwrap();
    pubsub.subscribe(&b"turn-chan\0t-2"[..]).unwrap();
    pubsub
        .set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    server.set_px(&k[0], b"tok", 5000);
    in_line(&server, &k, "t-2", 2, NEVER);
    in_line(&server, &k, "t-1", 1, NEVER);
    assert_eq!(
        run(&server, "release", &k, &["tok", "turn-chan"]),
        Value::Int(1)
    );
    // On the first waiter's own channel only: nobody else wakes.
    let message = pubsub.get_message().unwrap();
    assert_eq!(message.get_channel_name(), "turn-chan\0t-1");
    assert_eq!(message.get_payload_bytes(), b"t-1", "the first in line");
    server.set_px(&k[0], b"tok", 5000);
    let _: i64 = cmd(&server, &[b"DEL", &k[2], &k[3]]);
    assert_eq!(
        run(&server, "release", &k, &["tok", "turn-chan"]),
        Value::Int(1)
    );
    let message = pubsub.get_message().unwrap();
    assert_eq!(message.get_channel_name(), "turn-chan");
    assert_eq!(message.get_payload_bytes(), b"", "nobody in line: anyone");
}

#[test]
fn extend_pushes_the_expiry_out_only_with_the_right_token() {
    let server = RedisServer::start();
    let k = keys("ext");
    server.set_px(&k[0], b"tok", 2000);
    server.set_px(&k[1], b"77 old", 2000);
    assert_eq!(
        run(&server, "extend", &k, &["other", "60000", ""]),
        Value::Int(2)
    );
    assert!(server.pttl(&k[0]) <= 2000);
    assert_eq!(
        run(&server, "extend", &k, &["tok", "60000", ""]),
        Value::Int(1)
    );
    assert!(server.pttl(&k[0]) > 50_000);
    assert!(server.pttl(&k[1]) > 50_000, "the record follows");
    // Never shortens; a new record keeps the time the lock was taken.
    assert_eq!(
        run(&server, "extend", &k, &["tok", "1000", "new"]),
        Value::Int(1)
    );
    assert!(server.pttl(&k[0]) > 50_000);
    assert_eq!(server.get(&k[1]).as_deref(), Some(&b"77 new"[..]));
    // A missing key is never re-created.
    let gone = keys("gone");
    assert_eq!(
        run(&server, "extend", &gone, &["tok", "1000", ""]),
        Value::Int(0)
    );
    assert_eq!(server.get(&gone[0]), None);
}

/// A text composed without the slot's (the fence's, the readers') code
/// refuses a slot's (a fenced, a shared) call instead of skipping the K
/// check (the counter, the readers' set), and writes nothing: the mode
/// and the arguments must agree.
#[test]
fn a_plain_text_refuses_a_slots_a_fenced_or_a_shared_call() {
    let server = RedisServer::start();
    let mut k = keys("mismatch");
    k.push(b"mismatch\0limit".to_vec());
    let slot = [
        "tok", "10000", GUARD_OFF, "", "", "0", "1000", "0", "0", "3",
    ];
    let fenced = ["tok", "10000", GUARD_OFF, "", "", "0", "1000", "1", "0", ""];
    let shared = ["tok", "10000", GUARD_OFF, "", "", "0", "1000", "0", "1", ""];
    for (args, what) in [(&slot, "slot"), (&fenced, "fenced"), (&shared, "shared")] {
        let refused = eval_mode(&server, ("acquire", Features::NONE), &k, args, "0");
        let message = refused.expect_err(what).to_string();
        assert!(message.contains(what), "{message}");
        for key in &k {
            assert_eq!(server.pttl(key), -2, "{what}: nothing written");
        }
    }
    server.set_px(&k[0], b"tok", 2000);
    let extended = eval_mode(
        &server,
        ("extend", Features::NONE),
        &k,
        &["tok", "60000", "", "3"],
        "0",
    );
    assert!(extended.is_err(), "{extended:?}");
    assert!(server.pttl(&k[0]) <= 2000, "not extended");
}

#[test]
fn extend_does_nothing_for_a_request_that_arrived_after_its_deadline() {
    let server = RedisServer::start();
    let k = keys("late-ext");
    server.set_px(&k[0], b"tok", 2000);
    let past = (now_ms(&server) - 1).to_string();
    let (tag, rest) = tagged(run(&server, "extend", &k, &["tok", "60000", "", "", &past]));
    assert_eq!(tag, "late");
    assert!(text(&rest[0]).parse::<u64>().unwrap() > past.parse::<u64>().unwrap());
    assert!(server.pttl(&k[0]) <= 2000, "not extended");
    let future = (now_ms(&server) + 60_000).to_string();
    assert_eq!(
        run(&server, "extend", &k, &["tok", "60000", "", "", &future]),
        Value::Int(1)
    );
    assert!(server.pttl(&k[0]) > 50_000);
}

// ---------------------------------------------------------------------------
// inspect.lua, list.lua
// ---------------------------------------------------------------------------

#[test]
fn inspect_reads_occupant_guard_and_line() {
    let server = RedisServer::start();
    let k = keys("insp");
    server.set_px(&k[0], b"tok", 5000);
    server.set_px(&k[1], b"5 rec", 5000);
    in_line(&server, &k, "t-1", 1, NEVER);
    in_line(&server, &k, "t-2", 2, 1);
    let [seen, guard, waiters, broken, fence, _, superseder] =
        <[Value; 7]>::try_from(items(run(&server, "inspect", &k, &[GUARD_OFF]))).unwrap();
    assert_eq!(superseder, Value::Nil, "no superseding waiter");
    assert_eq!(broken, Value::Nil, "nobody broke it");
    assert_eq!(fence, Value::Nil, "never fenced");
    let (kind, value, _, record) = occupant(seen);
    assert_eq!(
        (kind.as_str(), value.as_deref(), record.as_deref()),
        ("string", Some("tok"), Some("5 rec"))
    );
    assert_eq!(guard, Value::Nil, "a server that counts");
    assert_eq!(int(&waiters), 1, "the lapsed ticket is left out");
    // Under the guard, a fresh server says when it counts again, and still
    // what it holds.
    let [seen, guard, _, _, _, _, _] =
        <[Value; 7]>::try_from(items(run(&server, "inspect", &k, &["10000"]))).unwrap();
    assert!((9_000..=10_000).contains(&restarting(guard)));
    assert_eq!(occupant(seen).1.as_deref(), Some("tok"));
}

#[test]
fn inspect_of_a_missing_key() {
    let server = RedisServer::start();
    let k = keys("nothing");
    let [seen, guard, waiters, _, _, _, _] =
        <[Value; 7]>::try_from(items(run(&server, "inspect", &k, &[GUARD_OFF]))).unwrap();
    assert_eq!(occupant(seen), ("none".into(), None, -2, None));
    assert_eq!((guard, int(&waiters)), (Value::Nil, 0));
}

#[test]
fn list_reads_the_guard_then_every_lock_with_its_readers() {
    let server = RedisServer::start();
    let (a, b) = (keys("la"), keys("lb"));
    server.set_px(&a[0], b"tok-a", 5000);
    let _: i64 = cmd(&server, &[b"RPUSH", &b[0], b"x"]);
    // Readers of "lb": one live (lapsing far ahead), one lapsed long ago.
    let _: i64 = cmd(
        &server,
        &[b"ZADD", &b[8], b"1", b"lapsed", b"99999999999999", b"r1"],
    );
    let _: i64 = cmd(&server, &[b"HSET", &b[9], b"r1", b"5 rec"]);
    // "lb" has a done mark beside it (`--once`).
    server.set(b"lb\0done", b"key:v1\x000\x000\x00{}");
    // "la" as a lock without readers (its key and record), "lb" with
    // them (its readers' set and their records too): ARGV[2] says which.
    let list_keys = [
        b"m:guard".to_vec(),
        a[0].clone(),
        a[1].clone(),
        b"la\0supersede".to_vec(),
        a[3].clone(),
        b"la\0done".to_vec(),
        b[0].clone(),
        b[1].clone(),
        b"lb\0supersede".to_vec(),
        b[3].clone(),
        b"lb\0done".to_vec(),
        b[8].clone(),
        b[9].clone(),
    ];
    let reply = items(run(&server, "list", &list_keys, &[GUARD_OFF, "01"]));
    let [guard, first, second] = <[Value; 3]>::try_from(reply).unwrap();
    assert_eq!(guard, Value::Nil);
    // A lock without readers is its occupant() alone, as before readers.
    assert_eq!(occupant(first).1.as_deref(), Some("tok-a"));
    // One with a mark: its occupant, its readers, no waiter, the mark.
    let [second, readers, who, mark] = <[Value; 4]>::try_from(items(second)).unwrap();
    assert_eq!(occupant(second).0, "list");
    assert_eq!(who, Value::Nil);
    assert_eq!(mark, Value::BulkString(b"key:v1\x000\x000\x00{}".to_vec()));
    let [count, listed] = <[Value; 2]>::try_from(items(readers)).unwrap();
    assert_eq!(int(&count), 1, "the lapsed reader does not count");
    let listed = items(listed);
    assert_eq!(listed.len(), 3);
    assert_eq!(listed[0], Value::BulkString(b"r1".to_vec()));
    assert_eq!(listed[2], Value::BulkString(b"5 rec".to_vec()));
    let members: i64 = cmd(&server, &[b"ZCARD", &b[8]]);
    assert_eq!(members, 2, "list writes nothing");
    let reply = items(run(&server, "list", &list_keys[..1], &["10000", ""]));
    let [guard] = <[Value; 1]>::try_from(reply).unwrap();
    assert!((9_000..=10_000).contains(&restarting(guard)));
}

// ---------------------------------------------------------------------------
// force.lua, leave.lua
// ---------------------------------------------------------------------------

#[test]
fn force_deletes_a_lock_its_record_and_its_line() {
    let server = RedisServer::start();
    let k = keys("forced");
    server.set_px(&k[0], b"theirs", 5000);
    server.set_px(&k[1], b"9 rec", 5000);
    in_line(&server, &k, "t-1", 1, NEVER);
    let [seen, waiters, done] = force(&server, &k, "", false);
    assert_eq!(occupant(seen).1.as_deref(), Some("theirs"));
    assert_eq!((int(&waiters), text(&done).as_str()), (1, "deleted"));
    assert_eq!((server.get(&k[0]), server.get(&k[1])), (None, None));
    assert!(line(&server, &k).is_empty());
    // Who broke it stays beside it for what was left of its TTL.
    let broken = String::from_utf8(server.get(&k[6]).unwrap()).unwrap();
    assert!(broken.ends_with(" ops@host"), "{broken}");
    let pttl: i64 = cmd(&server, &[b"PTTL", &k[6]]);
    assert!((1..=5000).contains(&pttl), "{pttl}");
}

/// force.lua with `--if-token` (`if_token`, "" for none) and `--any-key`.
fn force(server: &RedisServer, k: &[Vec<u8>], if_token: &str, any_key: bool) -> [Value; 3] {
    let any_key = if any_key { "1" } else { "0" };
    let reply = run(
        server,
        "force",
        k,
        &["chan", if_token, any_key, "128", "ops@host"],
    );
    let [seen, waiters, done, readers] = <[Value; 4]>::try_from(items(reply)).unwrap();
    assert_eq!(int(&readers), 0, "no readers here to break");
    [seen, waiters, done]
}

#[test]
fn force_leaves_what_does_not_look_like_a_lock_alone_unless_told() {
    let server = RedisServer::start();
    let k = keys("balance");
    let _: () = cmd(&server, &[b"SET", &k[0], b"42"]);
    in_line(&server, &k, "t-1", 1, NEVER);
    let [_, waiters, done] = force(&server, &k, "", false);
    assert_eq!((int(&waiters), text(&done).as_str()), (0, "no-expiry"));
    assert_eq!(server.get(&k[0]).as_deref(), Some(&b"42"[..]));
    assert_eq!(line(&server, &k), ["t-1"], "the line stays too");
    server.set_px(&k[0], &[b'x'; 129], 5000);
    let [_, _, done] = force(&server, &k, "", false);
    assert_eq!(text(&done), "too-long");
    // Past a kilobyte, occupant() gives the length instead of the value.
    server.set_px(&k[0], &[b'x'; 4096], 5000);
    let [_, _, done] = force(&server, &k, "", false);
    assert_eq!(text(&done), "too-long");
    let [_, _, done] = force(&server, &k, "", true);
    assert_eq!(text(&done), "deleted");
    assert_eq!(server.get(&k[0]), None);
}

#[test]
fn force_with_a_token_breaks_only_that_holder() {
    let server = RedisServer::start();
    let k = keys("handover");
    server.set_px(&k[0], b"new-holder", 5000);
    let [_, _, done] = force(&server, &k, "dead-holder", false);
    assert_eq!(text(&done), "token");
    assert_eq!(server.get(&k[0]).as_deref(), Some(&b"new-holder"[..]));
    let [_, _, done] = force(&server, &k, "new-holder", false);
    assert_eq!(text(&done), "deleted");
    assert_eq!(server.get(&k[0]), None);
}

#[test]
fn force_leaves_a_key_of_another_type_alone() {
    let server = RedisServer::start();
    let k = keys("forced-list");
    let _: i64 = cmd(&server, &[b"RPUSH", &k[0], b"x"]);
    let _: i64 = cmd(&server, &[b"RPUSH", &k[1], b"y"]);
    // What is not a lock keeps its line too.
    in_line(&server, &k, "t-1", 1, NEVER);
    let [seen, waiters, done] = force(&server, &k, "", false);
    assert_eq!(occupant(seen), ("list".into(), None, -1, None));
    assert_eq!((int(&waiters), text(&done).as_str()), (0, "type"));
    assert_eq!(line(&server, &k), ["t-1"]);
    for key in &k[..2] {
        let length: i64 = cmd(&server, &[b"LLEN", key]);
        assert_eq!(length, 1, "{key:?} is left alone");
    }
}

/// A key with NUL in it is one redlock keeps beside a lock (or the guard's
/// marker), never a lock: force.lua refuses it whatever the flags, even
/// from a client that did not refuse the name itself.
#[test]
fn force_never_breaks_a_key_redlock_keeps() {
    let server = RedisServer::start();
    let job = keys("job");
    server.set_px(&job[0], b"holder-token", 60_000);
    server.set_px(&job[1], b"9 rec", 60_000);
    server.set(&job[7], b"7");
    server.set(b"\0guard", b"marker");
    let before: Vec<_> = [&job[0], &job[1], &job[7], &b"\0guard".to_vec()]
        .map(|key| server.get(key))
        .to_vec();
    for key in [&job[1], &job[7], &b"\0guard".to_vec(), &b"job\0".to_vec()] {
        let mut k = keys("x");
        k[0] = key.clone();
        for (if_token, any_key) in [("", "1"), ("", "0"), ("9 rec", "1"), ("7", "0")] {
            let err = eval(
                &server,
                "force",
                &k,
                &["chan", if_token, any_key, "128", "who"],
            )
            .expect_err("a key with NUL is refused");
            assert!(
                err.to_string()
                    .contains("refused to break a key holding a NUL byte"),
                "{key:?}: {err}"
            );
        }
    }
    let after: Vec<_> = [&job[0], &job[1], &job[7], &b"\0guard".to_vec()]
        .map(|key| server.get(key))
        .to_vec();
    assert_eq!(before, after);
}

#[test]
fn leave_takes_a_ticket_out_of_line() {
    let server = RedisServer::start();
    let k = keys("leaving");
    in_line(&server, &k, "t-1", 1, NEVER);
    in_line(&server, &k, "t-2", 2, NEVER);
    assert_eq!(run(&server, "leave", &k, &["t-1", ""]), Value::Int(1));
    assert_eq!(line(&server, &k), ["t-2"]);
    let lapses: Vec<String> = cmd(&server, &[b"ZRANGE", &k[3], b"0", b"-1"]);
    assert_eq!(lapses, ["t-2"]);
}

// ---------------------------------------------------------------------------
// fence.lua, raise_fence.lua (lock/fence.rs)
// ---------------------------------------------------------------------------

/// ARGV of a fenced acquire.lua.
fn fenced_acquire(server: &RedisServer, k: &[Vec<u8>], token: &str) -> Value {
    let args = ["10000", GUARD_OFF, "", "", "0", "1000", "1"];
    let mut all = vec![token];
    all.extend(args);
    run(server, "acquire", k, &all)
}

#[test]
fn a_fenced_acquire_says_the_counter_and_a_plain_one_does_not() {
    let server = RedisServer::start();
    let k = keys("fenced");
    let taken = |value: Value| {
        let (tag, rest) = tagged(value);
        assert_eq!(tag, "taken");
        text(&rest[0])
    };
    assert_eq!(taken(fenced_acquire(&server, &k, "tok")), "0", "none yet");
    // Our own SET retried says it too.
    server.set(&k[7], b"9223372036854775806");
    assert_eq!(
        taken(fenced_acquire(&server, &k, "tok")),
        "9223372036854775806"
    );
    // A counter no redlock writes (at or above 2^63 - 1) is an error that
    // names it, and the lock is not taken there.
    for bad in ["9223372036854775807", "18446744073709551615"] {
        server.set(&k[7], bad.as_bytes());
        let mut k2 = keys("fenced2");
        k2[7] = k[7].clone();
        let err = eval(
            &server,
            "acquire",
            &k2,
            &["tok2", "10000", GUARD_OFF, "", "", "0", "1000", "1"],
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .contains(&format!("the fencing counter {bad} is at or above 2^63-1")),
            "{err}"
        );
        assert_eq!(server.get(&k2[0]), None, "{bad}: taken anyway");
    }
    server.set(&k[7], b"not a counter");
    let err = eval(
        &server,
        "acquire",
        &k,
        &["tok", "10000", GUARD_OFF, "", "", "0", "1000", "1"],
    );
    assert!(format!("{err:?}").contains("not a number"), "{err:?}");
    // Without the flag: 1, as ever, and the counter is not even read.
    let other = keys("plain");
    assert_eq!(
        run(
            &server,
            "acquire",
            &other,
            &acquire_args("t", GUARD_OFF, "", "0")
        ),
        Value::Int(1)
    );
}

#[test]
fn raise_fence_raises_only_under_our_token_and_never_lowers() {
    let server = RedisServer::start();
    let k = keys("f");
    let raise = |token: &str, to: &str| run(&server, "raise_fence", &k, &[token, to]);
    assert_eq!(raise("tok", "5"), Value::Int(0), "no lock: gone");
    assert_eq!(server.get(&k[7]), None, "nothing written without the lock");
    server.set_px(&k[0], b"other", 5000);
    assert_eq!(raise("tok", "5"), Value::Int(2), "another holder");
    assert_eq!(server.get(&k[7]), None);
    server.set_px(&k[0], b"tok", 5000);
    assert_eq!(raise("tok", "5"), Value::Int(1));
    assert_eq!(server.get(&k[7]).as_deref(), Some(&b"5"[..]));
    assert_eq!(server.pttl(&k[7]), -1, "kept without expiry");
    assert_eq!(raise("tok", "3"), Value::Int(1), "already above");
    assert_eq!(
        server.get(&k[7]).as_deref(),
        Some(&b"5"[..]),
        "never lowered"
    );
    // Compared as numbers, not as text: 10 is above 9.
    assert_eq!(raise("tok", "10"), Value::Int(1));
    assert_eq!(raise("tok", "9"), Value::Int(1));
    assert_eq!(server.get(&k[7]).as_deref(), Some(&b"10"[..]));
    let [.., fence, _, _] =
        <[Value; 7]>::try_from(items(run(&server, "inspect", &k, &[GUARD_OFF]))).unwrap();
    assert_eq!(text(&fence), "10", "inspect reads it");
}

// ---------------------------------------------------------------------------
// cancel.lua, cancelled.lua
// ---------------------------------------------------------------------------

/// A request to stop is written only while the lock holds the holder's
/// token, and read back only by that token.
#[test]
fn cancel_asks_only_the_holder_of_the_token_and_cancelled_reads_it() {
    let server = RedisServer::start();
    let (lock, asked) = (b"c".to_vec(), b"c\0cancel".to_vec());
    let ask = |token: &str| {
        run(
            &server,
            "cancel",
            &[lock.clone(), asked.clone()],
            &[token, "who", "60000"],
        )
    };
    let read = |token: &str| run(&server, "cancelled", std::slice::from_ref(&asked), &[token]);
    assert_eq!(ask("tok"), Value::Int(0), "free: nobody to ask");
    assert_eq!(read("tok"), Value::Nil);
    server.set_px(&lock, b"tok", 5000);
    assert_eq!(ask("other"), Value::Int(0), "another holder");
    assert_eq!(read("tok"), Value::Nil);
    assert_eq!(ask("tok"), Value::Int(1));
    assert_eq!(text(&read("tok")), "who");
    assert_eq!(read("other"), Value::Nil, "the next holder is not asked");
    assert!((59_000..=60_000).contains(&server.pttl(&asked)));
}

// ---------------------------------------------------------------------------
// acquire.lua's once block, mark_done.lua (lock/once.rs)
// ---------------------------------------------------------------------------

/// The keys of a lock, empty places for a slot's limit record and the
/// superseding waiters, and its done mark (KEYS[13]), as a run once passes
/// them.
fn once_keys(name: &str) -> Vec<Vec<u8>> {
    let mut k = keys(name);
    k.resize(12, Vec::new());
    k.push([name.as_bytes(), b"\0done"].concat());
    k
}

/// acquire.lua's 14 ARGV for a free, plain lock, as run `id` once.
fn once_acquire_args<'a>(token: &'a str, id: &'a str) -> [&'a str; 14] {
    [
        token, "10000", GUARD_OFF, "", "", "0", "1000", "0", "0", "", "0", "", "", id,
    ]
}

#[test]
fn acquire_answers_done_for_a_mark_of_its_run_and_takes_nothing() {
    let server = RedisServer::start();
    let k = once_keys("job");
    server.set(&k[12], b"per:1:0:5\x00123\x000\x00{}");
    let (tag, rest) = tagged(run(
        &server,
        "acquire",
        &k,
        &once_acquire_args("t", "per:1:0:5"),
    ));
    assert_eq!(tag, "done");
    assert_eq!(rest.len(), 2, "{rest:?}");
    assert_eq!(text(&rest[0]).as_bytes(), b"per:1:0:5\x00123\x000\x00{}");
    assert_eq!(server.get(&k[0]), None, "nothing taken");
    // A run of an older period of the same DUR and shift is covered by a
    // later period's mark: it skips.
    for id in ["per:1:0:4", "per:1:0:0"] {
        let (tag, _) = tagged(run(&server, "acquire", &k, &once_acquire_args(id, id)));
        assert_eq!(tag, "done", "{id}");
        assert_eq!(server.get(&k[0]), None, "{id}: nothing taken");
    }
    // An id that only starts the same, a later period's, another DUR's
    // or shift's, or a key's, is no mark of this run: the lock is taken.
    for id in [
        "per:1:0:50",
        "per:1:0:6",
        "per:2:0:4",
        "per:1:1:4",
        "key:per:1:0:5",
    ] {
        assert_eq!(
            run(&server, "acquire", &k, &once_acquire_args(id, id)),
            Value::Int(1),
            "{id}"
        );
        let _: i64 = cmd(&server, &[b"DEL", &k[0], &k[1]]);
    }
    // A text without the once block refuses a run once rather than take it.
    let plain = eval_mode(
        &server,
        ("acquire", Features::NONE),
        &k,
        &once_acquire_args("t", "per:1:0:5"),
        "0",
    );
    assert!(plain.is_err(), "{plain:?}");
    assert_eq!(server.get(&k[0]), None);
}

#[test]
fn mark_done_writes_only_under_our_token() {
    let server = RedisServer::start();
    let k = once_keys("job");
    let mark = |token: &str| {
        run(
            &server,
            "mark_done",
            &k,
            &[token, "key:v1", "0", "{\"pid\":1}", "", "60000"],
        )
    };
    assert_eq!(mark("t"), Value::Int(0), "no lock: gone");
    assert_eq!(server.get(&k[12]), None);
    server.set(&k[0], b"other");
    assert_eq!(mark("t"), Value::Int(2), "another holder");
    assert_eq!(server.get(&k[12]), None);
    server.set(&k[0], b"t");
    assert_eq!(mark("t"), Value::Int(1));
    let written = server.get(&k[12]).unwrap();
    let parts: Vec<&[u8]> = written.split(|&b| b == 0).collect();
    assert_eq!(parts[0], b"key:v1");
    assert!(
        std::str::from_utf8(parts[1])
            .unwrap()
            .parse::<u64>()
            .unwrap()
            > 1_600_000_000_000
    );
    assert_eq!(&parts[2..], [&b"0"[..], b"{\"pid\":1}"]);
    assert!((59_000..=60_000).contains(&server.pttl(&k[12])));
    // PXAT: at a moment on the server's clock.
    let at = (now_ms(&server) + 90_000).to_string();
    let args = ["t", "per:1:0:5", "0", "{}", at.as_str(), ""];
    assert_eq!(run(&server, "mark_done", &k, &args), Value::Int(1));
    assert!((89_000..=90_000).contains(&server.pttl(&k[12])));
    // A period's end and margin already past (a job that outlasted them):
    // the mark is kept the margin from now, not deleted at once.
    let past = (now_ms(&server) - 1_000).to_string();
    let args = ["t", "per:1:0:5", "0", "{}", past.as_str(), "60000"];
    assert_eq!(run(&server, "mark_done", &k, &args), Value::Int(1));
    assert!((59_000..=60_000).contains(&server.pttl(&k[12])));
}
