//! The core of the protocol: what redsync's `mutex.go` is. Read in this
//! order for the plain lock:
//!
//! 1. `take.rs`: the request a command builds once (what to take, TTL,
//!    wait, and the features it asks for: fence, shared, record).
//! 2. `retry.rs`: the one loop that takes it, for a lock or a semaphore's
//!    slots, with `attempt.rs`, its bookkeeping.
//! 3. `redlock.rs`: the client over N servers: one attempt (a `SET NX`
//!    round, undone everywhere on failure), extend, release, inspect.
//! 4. `round.rs` and `quorum.rs`: one request to every server, decided as
//!    soon as a majority said yes or no longer can; the validity.
//! 5. `lease.rs`: what a taken lock is.
//! 6. `servers.rs`: connections (plain, TLS, Unix; every reply through
//!    `capped.rs`), scripts by hash, and the deadline a bounded script
//!    carries on the server's own clock (`server_clock.rs`).
//!
//! The Lua each call sends is composed per mode in `../scripts/`; a plain
//! call gets only the restart guard, the holder record and two predicates.
//!
//! Every feature lives in its own files beside this directory and reaches
//! the core through a narrow seam: a field of [`take::Take`], a row of the
//! scripts' composition table, or an `impl Redlock` block in its own file
//! (`../fence.rs`, `../leave.rs`, `../probe.rs`, `../semaphore.rs`,
//! `../force.rs`, `../listing.rs`).

pub(super) mod attempt;
pub(super) mod capped;
pub(super) mod lease;
pub(super) mod quorum;
pub(super) mod redlock;
pub(super) mod retry;
pub(super) mod round;
pub(super) mod server_clock;
pub(super) mod servers;
pub(super) mod take;
