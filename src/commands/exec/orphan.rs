//! What `exec`'s watchdog does for an `exec` that died holding its lock
//! (`kill -9`, the OOM killer, a CI runner's cancel): once no process of
//! the command's group is left, it releases the lock at once, with the same
//! compare-and-delete as `exec`'s own release (which also wakes the first
//! waiter), instead of leaving it to lapse a whole TTL later; and, just
//! before, it removes the private servers file `exec` would have removed.
//!
//! What the watchdog needs, and how it gets it:
//! - the servers, their passwords and TLS settings: a clone of `exec`'s
//!   [`Redlock`], built before the fork (certificates read, TLS configured)
//!   and so in the watchdog's memory from its start; never in an argument,
//!   the environment or a file. It opens no connection and builds no
//!   runtime until it must release: a watchdog costs `exec` nothing more.
//! - the key and the token: sent over the watchdog's pipe, which only the
//!   two processes hold, once the lock is taken (`lease`), with the path
//!   of the private servers file once there is one.
//!
//! The supervise module that runs the watchdog knows no Redis: it calls
//! [`Orphan`] through its `Settle` trait, with the words of the lease.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt as _;
use std::path::Path;
use std::time::Duration;

use super::handoff::PrivateFile;
use crate::lock::{Lease, LockKey, Redlock, Token};
use crate::supervise::Settle;

/// The watchdog's release of `exec`'s lock.
pub struct Orphan {
    redlock: Redlock,
    /// How long the release may take in all: the servers' timeout bounds
    /// each connection and reply, this the whole.
    within: Duration,
}

impl Orphan {
    /// For `exec` over `redlock`, whose servers answer within `timeout`.
    pub fn new(redlock: Redlock, timeout: Duration) -> Orphan {
        Orphan {
            redlock,
            within: (timeout * 3).max(Duration::from_secs(1)),
        }
    }

    fn release(&self, key: &LockKey, token: &Token) {
        let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return;
        };
        // Nobody is left to tell: a release that fails leaves the lock to
        // lapse, as it did before.
        let _ = runtime.block_on(async {
            tokio::time::timeout(self.within, self.redlock.release(key, token)).await
        });
    }
}

/// The words of the lease `exec` sends its watchdog: the key's prefix and
/// name, the token, and the private servers file, if there is one.
pub fn lease_words<'a>(lease: &'a Lease, file: Option<&'a Path>) -> Vec<&'a [u8]> {
    let key = lease.key.bytes();
    let prefix = &key[..key.len() - lease.key.name().len()];
    let mut words = vec![prefix, lease.key.name(), lease.token.as_str().as_bytes()];
    words.extend(file.map(|file| file.as_os_str().as_bytes()));
    words
}

impl Settle for Orphan {
    fn settle(&self, lease: &[Vec<u8>], release: bool) {
        let [prefix, name, token, file @ ..] = lease else {
            return;
        };
        // The group is empty: no nested redlock in it reads the file any
        // more. Removed before the release, so that whoever takes the lock
        // next finds it gone (the release logs in from memory).
        if let [file] = file {
            drop(PrivateFile::at(Path::new(OsStr::from_bytes(file))));
        }
        if let (true, Ok(token)) = (release, std::str::from_utf8(token)) {
            self.release(&LockKey::prefixed(prefix, name), &Token::from_user(token));
        }
    }
}
