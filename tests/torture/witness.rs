//! The witness: stamps the end of every section, also of one killed by
//! SIGKILL before it could write `exit`.
//!
//! Each section connects to the witness's Unix socket, names itself
//! (`CLIENT SEQ\n`) and keeps the connection open, unused. The kernel closes
//! it when the section's process ends, however it ends, and the witness
//! stamps `gone CLIENT SEQ NANOS` at once. Without it, the only bound for a
//! killed section would be the return of its `exec`, which a frozen `exec`
//! delays past the next holder's entry. The witness also takes a dead
//! section out of the bookkeeping server's `occupants` and `sharing` (it is
//! in one of them), which the section itself could no longer do.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, ErrorKind, Read};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use crate::checker::RunId;
use crate::history::{now_ns, History};

/// How often a reader looks up from a silent connection to see whether the
/// scenario is over (only a section that outlived its client would keep one
/// open that long).
const READ_TICK: Duration = Duration::from_millis(500);

/// What the witness shares with its threads.
struct Shared {
    history: Arc<History>,
    bookkeeping: String,
    stopping: AtomicBool,
    /// The sections inside now, with the time they connected.
    live: Mutex<HashMap<RunId, u64>>,
    readers: Mutex<Vec<JoinHandle<()>>>,
}

pub struct Witness {
    socket: PathBuf,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

impl Witness {
    pub fn start(socket: &Path, history: Arc<History>, bookkeeping: String) -> Witness {
        let listener = UnixListener::bind(socket)
            .unwrap_or_else(|e| panic!("cannot listen on {}: {e}", socket.display()));
        let shared = Arc::new(Shared {
            history,
            bookkeeping,
            stopping: AtomicBool::new(false),
            live: Mutex::new(HashMap::new()),
            readers: Mutex::new(Vec::new()),
        });
        let acceptor = {
            let shared = Arc::clone(&shared);
            thread::spawn(move || accept_all(&listener, &shared))
        };
        Witness {
            socket: socket.to_owned(),
            shared,
            acceptor: Some(acceptor),
        }
    }

    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// The sections inside now, with the CLOCK_MONOTONIC time each connected.
    pub fn live(&self) -> HashMap<RunId, u64> {
        lock(&self.shared.live).clone()
    }

    /// Stops accepting and waits for every reader, once all sections ended.
    pub fn stop(mut self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        // Wakes the acceptor from accept().
        let _ = UnixStream::connect(&self.socket);
        if let Some(acceptor) = self.acceptor.take() {
            acceptor.join().expect("the witness's acceptor panicked");
        }
        let readers = std::mem::take(&mut *lock(&self.shared.readers));
        for reader in readers {
            reader.join().expect("a witness reader panicked");
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn accept_all(listener: &UnixListener, shared: &Arc<Shared>) {
    for stream in listener.incoming() {
        if shared.stopping.load(Ordering::SeqCst) {
            return;
        }
        let Ok(stream) = stream else { continue };
        let reader = {
            let shared = Arc::clone(shared);
            thread::spawn(move || watch(stream, &shared))
        };
        lock(&shared.readers).push(reader);
    }
}

/// Follows one section: its name, then the end of its connection.
fn watch(stream: UnixStream, shared: &Shared) {
    let mut reader = BufReader::new(stream);
    let mut name = String::new();
    if reader.read_line(&mut name).unwrap_or(0) == 0 {
        return; // the stop's wake-up, or a section killed before it spoke
    }
    let Some(id) = parse_name(&name) else {
        panic!("the witness got a bad name {name:?}");
    };
    lock(&shared.live).insert(id, now_ns());
    // Connected before the end, so that the clean-up after a kill is quick.
    let bookkeeping =
        redis::Client::open(shared.bookkeeping.as_str()).and_then(|client| client.get_connection());
    let gone_at = wait_for_end(reader.get_mut(), shared);
    if let Some(at) = gone_at {
        shared.history.gone(id.0, id.1, at);
    }
    lock(&shared.live).remove(&id);
    let member = format!("{}:{}", id.0, id.1);
    let removed = bookkeeping.and_then(|mut con| {
        redis::pipe()
            .cmd("SREM")
            .arg("occupants")
            .arg(&member)
            .cmd("SREM")
            .arg("sharing")
            .arg(&member)
            .query::<()>(&mut con)
    });
    if let Err(e) = removed {
        panic!("the witness cannot take {id:?} out of the occupants: {e}");
    }
}

/// The CLOCK_MONOTONIC time the connection ended, or `None` if the witness
/// was stopped first.
fn wait_for_end(stream: &mut UnixStream, shared: &Shared) -> Option<u64> {
    stream
        .set_read_timeout(Some(READ_TICK))
        .expect("a read timeout can be set on a socket");
    let mut byte = [0u8; 64];
    loop {
        match stream.read(&mut byte) {
            Ok(0) => return Some(now_ns()),
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                if shared.stopping.load(Ordering::SeqCst) {
                    return None;
                }
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            // ECONNRESET and the like: the process is gone all the same.
            Err(_) => return Some(now_ns()),
        }
    }
}

fn parse_name(line: &str) -> Option<RunId> {
    let (client, seq) = line.trim_end().split_once(' ')?;
    Some((client.parse().ok()?, seq.parse().ok()?))
}
