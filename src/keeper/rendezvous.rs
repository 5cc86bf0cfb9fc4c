//! How `redlock release NAME TOKEN` tells the keeper that `acquire --while`
//! left behind to stand down before the lock goes, so that the keeper does
//! not take the release for a loss and signal the script.
//!
//! The keeper listens on a Unix socket in the abstract namespace named
//! `redlock-keeper/UID/SHA1(KEY NUL TOKEN)`: no file to leave behind when
//! the keeper is killed, no directory that must be the same for `acquire`
//! and `release` (the keeper runs with an empty environment), and a name
//! only the token's holder can compute. Both ends check that the other runs
//! as the same user (SO_PEERCRED); anyone else is ignored. The keeper
//! reads each peer on its own, for at most [`ACK_WITHIN`]: a peer that
//! connects and says nothing holds up no other (15 such peers once made a
//! `release` wait 30 s).
//!
//! `release` connects, writes `release TOKEN`, and waits for `ok`: by then
//! the keeper has stopped extending and exits. The keeper answers once the
//! processes the script left in its process group (other than the one that
//! asks and its shells, and what started after it asked: `release` says
//! when it started, see [`since`]) have ended, as `exec` holds its lock until its
//! command's group has; a keeper that dies ends the wait too. Only then
//! does `release` delete the key. A keeper that is stopped (SIGSTOP, a
//! debugger) cannot answer: once `release` has seen it stopped for
//! [`STOPPED_FOR`] it gives up and leaves the lock alone (see
//! [`Stood::Stopped`]). The request waits in the socket: a keeper that
//! continues stands down then, and releases the lock itself since nobody
//! is left to take its answer. The name is visible in
//! /proc/net/unix, the token is not: only a process that holds the token
//! can make the keeper stand down. A release that cannot
//! reach the keeper (another host, another network namespace, another user)
//! looks like any other loss to the keeper: it signals the script.

use std::io::{self, Read as _, Write as _};
use std::os::fd::AsRawFd;
use std::os::linux::net::SocketAddrExt as _;
use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};
use std::sync::Arc;
use std::time::Duration;

use nix::libc;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};

use crate::lock::{LockKey, Token};

/// How long `release` waits for the keeper's answer, and the keeper for
/// the request once a peer connected.
const ACK_WITHIN: Duration = Duration::from_secs(2);

const ACK: &[u8; 3] = b"ok\n";

/// What `release` writes: `release TOKEN` and a newline.
fn request(token: &Token) -> Vec<u8> {
    format!("release {}\n", token.as_str()).into_bytes()
}

/// What `release` writes after the request, in the same write: `since`,
/// when it started (clock ticks since boot), and a newline. The keeper
/// waits for the processes the script left in its group, not those it
/// starts after asking; a keeper that was stopped reads the request once
/// the asker is gone, with only this to tell which came first.
fn since(started: u64) -> Vec<u8> {
    format!("since {started}\n").into_bytes()
}

/// The start time a trailer written by [`since`] gives.
fn parse_since(trailer: &[u8]) -> Option<u64> {
    std::str::from_utf8(trailer.strip_prefix(b"since ")?.strip_suffix(b"\n")?)
        .ok()?
        .parse()
        .ok()
}

/// The socket's address for the lock `key` held by `token`.
fn address(key: &LockKey, token: &Token) -> io::Result<SocketAddr> {
    let mut hashed = key.bytes().to_vec();
    hashed.push(0);
    hashed.extend_from_slice(token.as_str().as_bytes());
    let name = format!(
        "redlock-keeper/{}/{}",
        nix::unistd::geteuid(),
        sha1_smol::Sha1::from(hashed).digest()
    );
    SocketAddr::from_abstract_name(name.as_bytes())
}

/// The user id of the process at the other end of `socket`.
fn peer_uid(socket: &impl AsRawFd) -> Option<u32> {
    peer(socket).map(|cred| cred.uid)
}

/// Who is at the other end of `socket`, as the kernel says (SO_PEERCRED).
fn peer(socket: &impl AsRawFd) -> Option<libc::ucred> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: SO_PEERCRED writes at most `len` bytes into `cred`.
    let read = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            std::ptr::from_mut(&mut cred).cast(),
            &mut len,
        )
    };
    (read == 0).then_some(cred)
}

fn same_user(socket: &impl AsRawFd) -> bool {
    peer_uid(socket) == Some(nix::unistd::geteuid().as_raw())
}

/// A request read.
pub struct Asked {
    /// Where the answer goes.
    pub stream: tokio::net::UnixStream,
    /// The process that sent it (0 if the kernel does not say).
    pub pid: i32,
    /// When that process started, in clock ticks since boot, as it said or
    /// /proc says; `None` when neither does (a `release` of an older build
    /// that has since exited).
    pub started: Option<u64>,
}

/// How many peers the keeper reads from at once; more wait in the socket's
/// backlog until one of those is done (read, or [`ACK_WITHIN`] passed).
const READING_AT_ONCE: usize = 64;

/// The keeper's end. Each peer is read on its own: one that connects and
/// says nothing (a stray `nc`, a script that hung) delays no other, so
/// `release` is answered at once however many idle connections there are.
pub struct Rendezvous {
    /// Requests read, in the order they came.
    asked: tokio::sync::Mutex<mpsc::UnboundedReceiver<Asked>>,
    /// The task that accepts connections, stopped with the rendezvous.
    serving: tokio::task::JoinHandle<()>,
}

impl Rendezvous {
    /// Listens for releases of `key` by `token`. Call it within a runtime:
    /// the connections are served by tasks of their own.
    pub fn listen(key: &LockKey, token: &Token) -> io::Result<Rendezvous> {
        let listener = UnixListener::bind_addr(&address(key, token)?)?;
        listener.set_nonblocking(true)?;
        let listener = tokio::net::UnixListener::from_std(listener)?;
        let (tell, asked) = mpsc::unbounded_channel();
        let serving = tokio::spawn(serve(listener, request(token).into(), tell));
        Ok(Rendezvous {
            asked: tokio::sync::Mutex::new(asked),
            serving,
        })
    }

    /// Resolves when a process of this user asks for the release, with its
    /// pid; answer it with [`acknowledge`] once nothing extends the lock any
    /// more. Cancel-safe: a request that came meanwhile waits for the next
    /// call.
    pub async fn release_asked(&self) -> Asked {
        let mut asked = self.asked.lock().await;
        match asked.recv().await {
            Some(asked) => asked,
            // The accepting task ended (it does not): nobody can ask.
            None => std::future::pending().await,
        }
    }
}

impl Drop for Rendezvous {
    fn drop(&mut self) {
        self.serving.abort();
    }
}

/// Accepts connections for ever, each read by a task of its own (at most
/// [`READING_AT_ONCE`] at a time); peers of another user are dropped at once.
async fn serve(
    listener: tokio::net::UnixListener,
    request: Arc<[u8]>,
    tell: mpsc::UnboundedSender<Asked>,
) {
    let reading = Arc::new(Semaphore::new(READING_AT_ONCE));
    loop {
        let Ok(permit) = Arc::clone(&reading).acquire_owned().await else {
            return;
        };
        let Ok((stream, _)) = listener.accept().await else {
            // Out of descriptors, say: try again a little later.
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        if same_user(&stream) {
            tokio::spawn(read_request(
                stream,
                Arc::clone(&request),
                tell.clone(),
                permit,
            ));
        }
    }
}

/// Reads one peer's request, within [`ACK_WITHIN`]; passes it on if it is
/// the one the keeper answers, else drops the connection.
async fn read_request(
    mut stream: tokio::net::UnixStream,
    request: Arc<[u8]>,
    tell: mpsc::UnboundedSender<Asked>,
    _reading: OwnedSemaphorePermit,
) {
    let mut got = vec![0u8; request.len()];
    let read = tokio::time::timeout(ACK_WITHIN, stream.read_exact(&mut got)).await;
    if matches!(read, Ok(Ok(_))) && *got == *request {
        let pid = peer(&stream).map_or(0, |cred| cred.pid);
        // The trailer came in the request's write: it is there or never.
        let mut trailer = [0u8; 32];
        let said = match stream.try_read(&mut trailer) {
            Ok(len) => parse_since(&trailer[..len]),
            Err(_) => None,
        };
        let started = said.or_else(|| crate::supervise::started(pid));
        let _ = tell.send(Asked {
            stream,
            pid,
            started,
        });
    }
}

/// Tells `release` that the keeper has stopped: whether it heard, and so
/// deletes the key (not when it gave up waiting).
pub async fn acknowledge(mut stream: tokio::net::UnixStream) -> bool {
    matches!(
        tokio::time::timeout(ACK_WITHIN, stream.write_all(ACK)).await,
        Ok(Ok(()))
    )
}

/// How long `release` waits for a keeper it sees stopped.
pub const STOPPED_FOR: Duration = Duration::from_secs(2);

/// How often `release`, waiting, looks whether the keeper is stopped.
const LOOK_EVERY: Duration = Duration::from_millis(20);

/// What became of the keeper `release` asked to stand down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stood {
    /// It answered, or there is none on this host (or it died meanwhile):
    /// the release goes ahead.
    Down,
    /// Process `pid`, the keeper, was stopped for [`STOPPED_FOR`] without
    /// answering. Deleting the key now would free the lock while the
    /// script's job may still run under it, unwatched: the release is left
    /// undone. The request stays queued for the keeper.
    Stopped { pid: i32 },
}

/// `release`'s end: asks the keeper of `key` and `token` on this host, if
/// there is one, to stand down, and waits for its answer.
pub fn stop_keeper(key: &LockKey, token: &Token) -> Stood {
    let Ok(address) = address(key, token) else {
        return Stood::Down;
    };
    // No keeper listens: ECONNREFUSED.
    let Ok(mut stream) = UnixStream::connect_addr(&address) else {
        return Stood::Down;
    };
    let Some(keeper) = peer(&stream).filter(|cred| cred.uid == nix::unistd::geteuid().as_raw())
    else {
        return Stood::Down;
    };
    // The keeper answers once the processes the script left in its group
    // have ended (the lock is theirs until then), or it has exited; either
    // ends the wait, however long. Only a keeper that cannot run does not.
    let _ = stream.set_write_timeout(Some(ACK_WITHIN));
    let mut asking = request(token);
    if let Some(started) = crate::supervise::started(std::process::id() as i32) {
        asking.extend(since(started));
    }
    if stream.write_all(&asking).is_err() {
        return Stood::Down;
    }
    let _ = stream.set_read_timeout(Some(LOOK_EVERY));
    let mut stopped_since = None;
    let mut ack = [0u8; 1];
    loop {
        match stream.read(&mut ack) {
            // The answer's first byte, or end of file: the keeper is done.
            Ok(_) => return Stood::Down,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(err)
                if !matches!(
                    err.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Stood::Down
            }
            Err(_) => {}
        }
        match crate::supervise::is_stopped(keeper.pid) {
            false => stopped_since = None,
            true => {
                let since = *stopped_since.get_or_insert_with(std::time::Instant::now);
                if since.elapsed() >= STOPPED_FOR {
                    return Stood::Stopped { pid: keeper.pid };
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trailer_gives_the_start_time_it_was_written_with() {
        assert_eq!(parse_since(&since(123_456)), Some(123_456));
        assert_eq!(parse_since(b""), None);
        assert_eq!(parse_since(b"since 12"), None, "cut before the newline");
        assert_eq!(parse_since(b"since x\n"), None);
        assert_eq!(parse_since(b"release abc\n"), None);
    }
}
