//! The Redlock protocol over N independent Redis masters. It knows nothing of
//! the command line and prints nothing: callers hand it keys, tokens and
//! durations and get typed outcomes back. It imports nothing of the crate but
//! the shared clock and the test hooks.

mod cancel;
mod core;
mod done_mark;
mod error;
mod fence;
mod force;
mod guard;
mod holder;
mod inspection;
mod keeper;
mod key;
mod leave;
mod line;
mod listening;
mod listing;
mod notify;
mod once;
mod probe;
mod queue;
mod scripts;
mod semaphore;
mod server_info;
mod server_url;
mod shared;
mod slot;
mod supersede;
mod tried;

pub use self::core::lease::{Lease, Released};
#[cfg(test)]
pub use self::core::quorum::drift;
pub use self::core::redlock::Redlock;
pub use self::core::retry::acquire_or_cancel;
pub use self::core::servers::ServerError;
pub use self::core::take::{Take, Target, Wait};
pub use cancel::{cancels, POLL as CANCEL_POLL};
pub use done_mark::{DoneMark, Once, OnceRun};
pub use error::{Failures, LockError, Said, TokenOp, TokenRound};
pub use force::{Breaking, Forced};
pub use guard::{GuardCause, Guarded};
pub use holder::{host_name, started as process_started, HeldBy, Holder, Recorded};
pub use inspection::{Broken, Inspection, KeyState, Occupied, Verdict};
pub use keeper::interval as keeper_interval;
pub use keeper::{keep, Keeping};
pub use key::{
    escape_and_cut, escape_bytes, is_hidden, reserved_in, LockKey, Token, SERVER_TEXT_SHOWN,
};
pub use listing::{
    glob_problem, oldest_reader, GlobProblem, ListQuery, Listed, Listing, ServerPart, Standing,
};
pub use once::{Marked, OnceHeld};
pub use probe::{Facts, Feature, Markers, Missing, Probe, Reached, Unknown, CONNECTIONS};
pub use scripts::{
    composed, composition, keys_sent, mode_of, Features, ForceVerdict, MAX_FENCE, MAX_TOKEN,
};
pub use server_info::{evicts_locks, ClusterNode, Concern, ConcernKind, Info, CLUSTER_SLOTS};
pub use server_url::{redact_url, ServerSpec};
pub use shared::SharedHolder;
pub use slot::{Semaphore, Slot, MAX_LIMIT};
pub use supersede::{Supersede, Superseder};
pub use tried::Tried;
