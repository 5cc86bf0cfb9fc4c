//! The critical section of the torture harness (`tests/torture.rs`, issue 9).
//!
//! Each client of the harness runs it as
//! `redlock exec LOCK -- torture-section HISTORY BOOKKEEPING_URL WITNESS_SOCKET CLIENT SEQ SECTION_MS [slow-stop|graceful-stop] [sharing]`
//! (the checker's self-test runs it without a lock). With `slow-stop` it
//! ignores SIGTERM, exec's stop signal, and ends only at the SIGKILL that
//! follows it: a command that takes the whole grace period the stop plan
//! gives it, the latest a section may end. With `graceful-stop` it goes on
//! for [`GRACEFUL_STOP`] after SIGTERM, as a job that cleans up would, then
//! exits 143. With `sharing` it is a section that may share the lock with
//! others of its kind: a reader under `exec --shared`, or a slot holder
//! under `exec --limit K`. It leaves evidence of
//! mutual exclusion, or of its absence, in three places:
//!
//! - the shared HISTORY file: `enter CLIENT SEQ NANOS` as its very first act
//!   (then `fence CLIENT SEQ N` under `exec --fence`, N its REDLOCK_FENCE)
//!   and `exit CLIENT SEQ NANOS` as its last, stamped on CLOCK_MONOTONIC, which
//!   is one clock for every process of the machine;
//! - the bookkeeping Redis server: the set `occupants` (exclusive sections
//!   inside now) and the set `sharing` (sharing sections inside now), with
//!   the most holders inside at once in `occupancy_max`, where all the
//!   sharing sections inside count as one holder (so a reader beside a
//!   writer makes 2), and the largest size of `sharing` in `sharing_max`;
//!   and, by exclusive sections only, a read-modify-write of `counter` whose
//!   lost updates show as `counter_writes - counter`;
//! - a connection to the harness's WITNESS_SOCKET, held open until the process
//!   dies, so that the harness can stamp the end of a section that was killed
//!   before it could write `exit`.
//!
//! Exit status: 0 when the section ran to its end, 2 for bad arguments, 3 when
//! the history, the witness or the bookkeeping server failed.

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::sleep;
use std::time::{Duration, Instant};

use nix::sys::signal::{signal, SigHandler, Signal};
use nix::time::{clock_gettime, ClockId};

const USAGE: &str = "usage: torture-section HISTORY BOOKKEEPING_URL WITNESS_SOCKET CLIENT SEQ \
                     SECTION_MS [slow-stop|graceful-stop] [sharing]";

/// How long a `graceful-stop` section goes on after SIGTERM.
const GRACEFUL_STOP: Duration = Duration::from_millis(300);

/// Set by the SIGTERM handler of a `graceful-stop` section.
static TERMINATED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_term(_: nix::libc::c_int) {
    TERMINATED.store(true, Ordering::SeqCst);
}

/// How the section takes SIGTERM.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// Dies of it at once.
    AtOnce,
    /// Ignores it: only SIGKILL ends it.
    Slow,
    /// Goes on for [`GRACEFUL_STOP`], then exits 143.
    Graceful,
}

/// Long enough that two sections inside at once almost surely read the same
/// value; short next to any section.
const READ_MODIFY_WRITE_PAUSE: Duration = Duration::from_millis(2);

/// Adds this section to its set (KEYS[1] `occupants` for an exclusive one,
/// KEYS[3] `sharing` for a sharing one, as ARGV[2] says) and raises
/// `occupancy_max` (KEYS[2]) to the holders inside now, the sharing ones
/// counting as one, and `sharing_max` (KEYS[4]) to the sharing ones,
/// atomically. Sets rather than counters: a section killed by SIGKILL never
/// takes itself out, so the harness's witness removes it (SREM is
/// idempotent), which a counter could not tell from a normal exit.
const ENTER_SCRIPT: &str = r"
local set = KEYS[1]
if ARGV[2] == 'sharing' then set = KEYS[3] end
redis.call('SADD', set, ARGV[1])
local sharing = redis.call('SCARD', KEYS[3])
local holders = redis.call('SCARD', KEYS[1])
if sharing > 0 then holders = holders + 1 end
local function raise(key, value)
  if value > tonumber(redis.call('GET', key) or '0') then redis.call('SET', key, value) end
end
raise(KEYS[2], holders)
raise(KEYS[4], sharing)
return holders
";

struct Args {
    history: String,
    bookkeeping: String,
    witness: String,
    client: u32,
    seq: u32,
    section: Duration,
    stop: Stop,
    /// May share the lock with other sharing sections: no read-modify-write.
    sharing: bool,
}

impl Args {
    fn parse(args: &[String]) -> Option<Args> {
        let (args, sharing) = match args {
            [args @ .., last] if last == "sharing" => (args, true),
            args => (args, false),
        };
        let (args, stop) = match args {
            [args @ .., last] if last == "slow-stop" => (args, Stop::Slow),
            [args @ .., last] if last == "graceful-stop" => (args, Stop::Graceful),
            args => (args, Stop::AtOnce),
        };
        let [history, bookkeeping, witness, client, seq, section_ms] = args else {
            return None;
        };
        Some(Args {
            history: history.clone(),
            bookkeeping: bookkeeping.clone(),
            witness: witness.clone(),
            client: client.parse().ok()?,
            seq: seq.parse().ok()?,
            section: Duration::from_millis(section_ms.parse().ok()?),
            stop,
            sharing,
        })
    }
}

fn main() -> ExitCode {
    // First of all the stamp and the `enter` line: a section killed a
    // millisecond after it started must still show in the history.
    let entered = monotonic_ns();
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let Some(args) = Args::parse(&argv) else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let handler = match args.stop {
        Stop::AtOnce => None,
        Stop::Slow => Some(SigHandler::SigIgn),
        Stop::Graceful => Some(SigHandler::Handler(on_term)),
    };
    if let Some(handler) = handler {
        // SAFETY: SIG_IGN, or a handler that only stores to an atomic;
        // nothing else runs yet.
        if let Err(e) = unsafe { signal(Signal::SIGTERM, handler) } {
            eprintln!("torture-section: cannot handle SIGTERM: {e}");
            return ExitCode::from(3);
        }
    }
    let outcome = append(
        &args.history,
        &format!("enter {} {} {entered}\n", args.client, args.seq),
    )
    .and_then(|()| match std::env::var("REDLOCK_FENCE") {
        Ok(fence) => append(
            &args.history,
            &format!("fence {} {} {fence}\n", args.client, args.seq),
        ),
        Err(_) => Ok(()),
    })
    .and_then(|()| run_section(&args));
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("torture-section {} {}: {err}", args.client, args.seq);
            ExitCode::from(3)
        }
    }
}

fn run_section(args: &Args) -> Result<(), String> {
    // Held open, unused, until the process ends: its end is the witness's cue.
    let mut witness = UnixStream::connect(&args.witness)
        .map_err(|e| format!("cannot connect to the witness {}: {e}", args.witness))?;
    witness
        .write_all(format!("{} {}\n", args.client, args.seq).as_bytes())
        .map_err(|e| format!("cannot write to the witness: {e}"))?;
    let mut con = redis::Client::open(args.bookkeeping.as_str())
        .and_then(|client| client.get_connection())
        .map_err(|e| format!("cannot connect to the bookkeeping server: {e}"))?;
    let member = format!("{}:{}", args.client, args.seq);
    bookkeep(&mut con, &member, args.sharing)
        .map_err(|e| format!("bookkeeping on the way in failed: {e}"))?;
    work(args.section);
    redis::cmd("SREM")
        .arg(if args.sharing { "sharing" } else { "occupants" })
        .arg(&member)
        .query::<()>(&mut con)
        .map_err(|e| format!("bookkeeping on the way out failed: {e}"))?;
    let exited = monotonic_ns();
    append(
        &args.history,
        &format!("exit {} {} {exited}\n", args.client, args.seq),
    )
}

/// Spends `section` inside; after a SIGTERM to a `graceful-stop` section,
/// only [`GRACEFUL_STOP`] more, and then the process exits 143 (its end is
/// stamped by the witness, as for a section that was killed).
fn work(section: Duration) {
    let end = Instant::now() + section;
    while Instant::now() < end {
        if TERMINATED.load(Ordering::SeqCst) {
            sleep(GRACEFUL_STOP);
            std::process::exit(128 + 15);
        }
        sleep(Duration::from_millis(5).min(end.saturating_duration_since(Instant::now())));
    }
}

/// Occupancy in, then (for an exclusive section) the read-modify-write of
/// `counter`. The write and its count are one transaction, so a kill can
/// never split them and `counter_writes - counter` counts exactly the
/// updates that were lost. Sharing sections are inside together by design,
/// so they leave the counter alone.
fn bookkeep(con: &mut redis::Connection, member: &str, sharing: bool) -> redis::RedisResult<()> {
    redis::Script::new(ENTER_SCRIPT)
        .key("occupants")
        .key("occupancy_max")
        .key("sharing")
        .key("sharing_max")
        .arg(member)
        .arg(if sharing { "sharing" } else { "exclusive" })
        .invoke::<i64>(con)?;
    if sharing {
        return Ok(());
    }
    let value: Option<i64> = redis::cmd("GET").arg("counter").query(con)?;
    sleep(READ_MODIFY_WRITE_PAUSE);
    redis::pipe()
        .atomic()
        .cmd("SET")
        .arg("counter")
        .arg(value.unwrap_or(0) + 1)
        .ignore()
        .cmd("INCR")
        .arg("counter_writes")
        .ignore()
        .query::<()>(con)
}

/// Appends `line` with one `write` on an O_APPEND descriptor, so that lines
/// of concurrent writers never interleave.
fn append(path: &str, line: &str) -> Result<(), String> {
    let mut file = OpenOptions::new()
        .append(true)
        .open(path)
        .map_err(|e| format!("cannot open the history {path}: {e}"))?;
    match file.write(line.as_bytes()) {
        Ok(n) if n == line.len() => Ok(()),
        Ok(n) => Err(format!(
            "short write to {path}: {n} of {} bytes",
            line.len()
        )),
        Err(e) => Err(format!("cannot write to {path}: {e}")),
    }
}

/// CLOCK_MONOTONIC in nanoseconds: the same clock in every process of the
/// machine, which the harness uses too.
fn monotonic_ns() -> u64 {
    let now = clock_gettime(ClockId::CLOCK_MONOTONIC).expect("CLOCK_MONOTONIC is always there");
    now.tv_sec() as u64 * 1_000_000_000 + now.tv_nsec() as u64
}
