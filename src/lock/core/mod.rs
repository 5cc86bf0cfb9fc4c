//! The core of the protocol (see lock/mod.rs for the reading order).

pub(super) mod attempt;
pub(super) mod capped;
pub(super) mod quorum;
pub(super) mod redlock;
pub(super) mod retry;
pub(super) mod round;
pub(super) mod server_clock;
pub(super) mod servers;
pub(super) mod take;
