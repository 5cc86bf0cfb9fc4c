//! The Lua scripts behind acquire, release, extend, status, list,
//! `release --force` and the line of waiters, and the one place where their
//! KEYS, ARGV and replies are spelled out: one call type per script (an
//! [`Invocation`]) that builds its KEYS and ARGV, and a parser for its
//! reply that refuses any reply the script cannot send. Names and tokens
//! reach the scripts only as KEYS and ARGV, never inside the script text.
//! They are sent by [`super::servers::Connection::invoke`].
//!
//! A server the restart guard keeps out says so in one shape whichever
//! script asks: `{"restarting", ms until it counts again, clock}` (false
//! when it counts), read as [`Restarting`].

mod acquire;
mod cancel;
// build.rs composes every script with it; the program only looks up.
#[allow(dead_code)]
mod compose;
mod fence;
mod force;
mod inspect;
mod leave;
mod list;
mod once;
mod protocol;
mod source;
mod token;

pub use acquire::{Acquire, AcquireReply, SupersedeArgs};
pub use cancel::{AskCancel, Cancelled};
pub use fence::RaiseFence;
pub use force::{Force, ForceReply, ForceVerdict, MAX_TOKEN};
pub use inspect::{Inspect, InspectReply};
pub use leave::Leave;
pub use list::List;
pub use once::MarkDone;
pub use protocol::{late_clock, Invocation, LockKeys, Occupant, Restarting, MAX_FENCE};
pub use source::{composed, composition, keys_sent, mode_of, Features, LuaScript};
pub use token::{Extend, Release, TokenHolder, TokenReply};
