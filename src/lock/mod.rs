//! The Redlock protocol over N independent Redis masters. It knows nothing of
//! the command line and prints nothing: callers hand it keys, tokens and
//! durations and get typed outcomes back. It imports nothing of the crate but
//! the shared clock.

mod error;
mod force;
mod holder;
mod inspection;
mod keeper;
mod key;
mod listing;
mod mutex;
mod notify;
mod queue;
mod quorum;
mod retry;
mod round;
mod scripts;
mod server_url;
mod servers;

pub use error::{servers as count_servers, Failures, LockError};
pub use force::Forced;
pub use holder::{held_sentence, rounded, HeldBy, Holder, Recorded};
pub use inspection::{Inspection, KeyState, Occupied, ServerState, Verdict};
pub use keeper::{interval as keeper_interval, keep, Keeping};
pub use key::is_record_key;
pub use key::{escape_and_cut, escape_bytes, LockKey, Token, SERVER_TEXT_SHOWN};
pub use listing::{ListQuery, Listed, Listing, ServerPart, Standing};
pub use mutex::{Lease, Redlock, Released};
pub use quorum::{drift, quorum, validity};
pub use retry::{acquire_or_cancel, Wait};
pub use server_url::{redact_url, ServerSpec, SpecError};
pub use servers::ServerError;
