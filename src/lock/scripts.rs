//! The Lua scripts behind acquire, release, extend, status and list. Names
//! and tokens reach them only as KEYS and ARGV, never inside the script
//! text. They are sent by [`super::servers::Connection::run_script`].

use std::sync::LazyLock;

/// A script and its SHA1, the name EVALSHA knows it by.
pub struct LuaScript {
    pub source: &'static str,
    pub sha1: String,
}

impl LuaScript {
    fn new(source: &'static str) -> Self {
        let sha1 = redis::Script::new(source).get_hash().to_owned();
        LuaScript { source, sha1 }
    }
}

/// `SET NX PX` and the holder record, unless the server may have lost locks
/// within the guard or others are first in line: 1 taken,
/// `{"restarting", ms, clock}`, `{"queued", waiters, clock}`, else who holds
/// it (`occupant()` of holder.lua).
pub static ACQUIRE: LazyLock<LuaScript> = LazyLock::new(|| {
    LuaScript::new(concat!(
        include_str!("guard.lua"),
        include_str!("holder.lua"),
        include_str!("queue.lua"),
        include_str!("acquire.lua")
    ))
});

/// `if GET == token then DEL` (the key and its holder record), announced on
/// the channel ARGV[2] unless it is empty: 1 if deleted, 0 if the token was
/// not there.
pub static RELEASE: LazyLock<LuaScript> = LazyLock::new(|| {
    LuaScript::new(concat!(
        include_str!("token.lua"),
        include_str!("holder.lua"),
        include_str!("release.lua")
    ))
});

/// `if GET == token then PEXPIRE ttl` (the record follows): 1 if extended,
/// 0 otherwise.
pub static EXTEND: LazyLock<LuaScript> = LazyLock::new(|| {
    LuaScript::new(concat!(
        include_str!("token.lua"),
        include_str!("holder.lua"),
        include_str!("extend.lua")
    ))
});

/// `occupant()`, the ms until counted again and the waiters in line, for
/// `status`.
pub static INSPECT: LazyLock<LuaScript> = LazyLock::new(|| {
    LuaScript::new(concat!(
        include_str!("guard.lua"),
        include_str!("holder.lua"),
        include_str!("queue.lua"),
        include_str!("inspect.lua")
    ))
});

/// The ms until counted again, then `occupant()` of every (key, record)
/// pair in KEYS, for `list`.
pub static LIST: LazyLock<LuaScript> = LazyLock::new(|| {
    LuaScript::new(concat!(
        include_str!("guard.lua"),
        include_str!("holder.lua"),
        include_str!("list.lua")
    ))
});

/// `occupant()`, then DEL of a string key, its record and its line, whoever
/// holds it, announced on the channel ARGV[1]: `release --force`.
pub static FORCE: LazyLock<LuaScript> = LazyLock::new(|| {
    LuaScript::new(concat!(
        include_str!("holder.lua"),
        include_str!("queue.lua"),
        include_str!("force.lua")
    ))
});

/// Takes a ticket out of the line of waiters.
pub static LEAVE: LazyLock<LuaScript> = LazyLock::new(|| {
    LuaScript::new(concat!(
        include_str!("holder.lua"),
        include_str!("queue.lua"),
        include_str!("leave.lua")
    ))
});
