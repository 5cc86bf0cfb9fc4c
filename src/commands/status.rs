//! `redlock status`: what every server holds, and who holds the lock.

use crate::error::Error;
use crate::exit_code::Exit;
use crate::lock::{LockKey, Redlock, Verdict};
use crate::output::Reporter;

pub async fn run(redlock: &Redlock, key: &LockKey, out: Reporter) -> Result<Exit, Error> {
    let inspection = redlock.inspect(key).await;
    let verdict = inspection.verdict();
    if let Err(err) = out.status(&inspection, &verdict) {
        out.unwritten(&err);
    }
    match verdict {
        Verdict::Held { .. } | Verdict::Foreign { .. } => Ok(Exit::Success),
        Verdict::Free => Ok(Exit::Free),
        Verdict::Unknown => Err(inspection.no_quorum().into()),
    }
}
