//! `redlock list`: every lock on the servers, and who holds it.

use crate::error::Error;
use crate::exit_code::Exit;
use crate::lock::{ListQuery, Redlock};
use crate::output::Reporter;

pub async fn run(redlock: &Redlock, query: ListQuery, out: Reporter) -> Result<Exit, Error> {
    let listing = redlock.list(query).await;
    if let Err(err) = out.listed(&listing) {
        out.unwritten(&err);
    }
    match listing.no_quorum() {
        Some(err) => Err(err.into()),
        None => Ok(Exit::Success),
    }
}
