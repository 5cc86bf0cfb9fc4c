//! The Lua scripts behind release, extend and status. Names and tokens reach
//! them only as KEYS and ARGV, never inside the script text.
//! `redis::Script` sends EVALSHA and falls back to EVAL on NOSCRIPT, so a
//! restarted server or a fresh connection costs one extra round trip at most.

use std::sync::LazyLock;

use redis::Script;

/// `if GET == token then DEL`: 1 if deleted, 0 if the token was not there.
pub static RELEASE: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("release.lua")));

/// `if GET == token then PEXPIRE ttl`: 1 if extended, 0 otherwise.
pub static EXTEND: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("extend.lua")));

/// `{TYPE, GET or nil, PTTL}` for `status`.
pub static INSPECT: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("inspect.lua")));
