//! Whether the servers' host names resolve, asked once before any server
//! is. A name the resolver says does not exist at all (`-s deploy`, the
//! flock habit of `-s NAME`, or a typo) is named at once rather than
//! waited for as a server that is down. When so many names do not exist
//! that no majority of the servers is left, that is a configuration error
//! (78): no lock can ever be taken. Otherwise each one is a warning, and
//! the lock lives on the others, as it does when a server is down (a
//! server whose DNS record is gone while it restarts is one). A resolver
//! that gives no clear answer (no DNS server, a timeout) decides nothing:
//! those servers are tried as before.

use std::collections::{HashMap, HashSet};
use std::ffi::{CStr, CString};
use std::sync::{mpsc, Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use nix::libc;

use super::notice::{Notice, Unresolved};
use super::servers::ServerSource;
use crate::error::Error;
use crate::lock::ServerSpec;

/// How many names are looked up at once, at most.
const LOOKUPS_AT_ONCE: usize = 16;

/// The bound on the lookups: the server timeout, within these limits (a
/// timeout of 1ms would decide nothing, one of a minute would hold every
/// command up as long on a resolver that hangs).
const LOOKUP_AT_LEAST: Duration = Duration::from_millis(100);
const LOOKUP_AT_MOST: Duration = Duration::from_secs(2);

/// The warnings about servers whose names do not resolve, or the
/// configuration error when they leave no majority.
pub fn check(
    specs: &[ServerSpec],
    source: &ServerSource,
    timeout: Duration,
) -> Result<Vec<Notice>, Error> {
    let names: HashSet<&str> = specs
        .iter()
        .filter_map(ServerSpec::host)
        .filter(|host| host.parse::<std::net::IpAddr>().is_err())
        .collect();
    if names.is_empty() {
        return Ok(Vec::new());
    }
    let bound = timeout.clamp(LOOKUP_AT_LEAST, LOOKUP_AT_MOST);
    let said = look_up_all(names.into_iter().map(str::to_owned).collect(), bound);
    let unresolved: Vec<Unresolved> = specs
        .iter()
        .filter_map(|spec| {
            let why = said.get(spec.host()?)?.clone()?;
            Some(Unresolved {
                server: spec.clone(),
                why,
                source: source.describe(),
                flag: *source == ServerSource::Flag,
            })
        })
        .collect();
    let quorum = specs.len() / 2 + 1;
    if !unresolved.is_empty() && specs.len() - unresolved.len() < quorum {
        return Err(Error::Config(no_majority(&unresolved, specs.len(), quorum)));
    }
    Ok(unresolved.into_iter().map(Notice::Unresolved).collect())
}

/// The error when the names that do not resolve leave no majority: the
/// first of them, how many more, and for a bare `-s NAME` what `-s` is.
fn no_majority(unresolved: &[Unresolved], total: usize, quorum: usize) -> String {
    let mut text = unresolved[0].describe();
    if unresolved.len() > 1 {
        text.push_str(&format!(
            "; and {} more server names do not resolve",
            unresolved.len() - 1
        ));
    }
    if total > 1 {
        text.push_str(&format!(
            "; {} of {total} servers are left, fewer than the {quorum} a lock needs",
            total - unresolved.len()
        ));
    }
    if unresolved.iter().any(|u| u.flag && u.server.is_bare_host()) {
        text.push_str(
            "; -s names a Redis server here (flock's -s, a shared lock, is --shared, and the \
             lock's NAME comes after the options)",
        );
    }
    text
}

/// What the resolver said of each name within `bound`: `Some(why)` when
/// the name does not exist, `None` when it has an address or the resolver
/// gave no clear answer. A name not answered in time is left out; its
/// lookup runs on, detached, and is not waited for.
///
/// The lookups run in a child process: their threads, and any that outlive
/// the bound, are the child's, so that this process stays single-threaded
/// for the watchdog `exec` forks next (supervise/watchdog.rs refuses to
/// fork a process with other threads, which a lookup thread still exiting
/// made it do one run in three).
fn look_up_all(names: Vec<String>, bound: Duration) -> HashMap<String, Option<String>> {
    use nix::unistd::{fork, pipe, ForkResult};
    let deadline = Instant::now() + bound;
    // A process with threads already (a test harness) cannot fork safely,
    // and has nothing to keep single-threaded.
    let single = std::fs::read_dir("/proc/self/task").is_ok_and(|tasks| tasks.count() == 1);
    if !single {
        return look_up_threaded(names, bound);
    }
    let Ok((read, write)) = pipe() else {
        return HashMap::new();
    };
    // SAFETY: this process is single-threaded here (the config is read
    // before any thread or runtime starts), and the child only looks the
    // names up, writes what it found to the pipe and leaves with _exit.
    match unsafe { fork() } {
        Ok(ForkResult::Child) => {
            drop(read);
            let said = look_up_threaded(names, bound);
            let mut pipe = std::fs::File::from(write);
            let _ = std::io::Write::write_all(&mut pipe, &encode(&said));
            // SAFETY: ends the child without running this process's exit
            // handlers or destructors.
            unsafe { libc::_exit(0) }
        }
        Ok(ForkResult::Parent { child }) => {
            drop(write);
            let bytes = read_until(read, deadline);
            let _ = nix::sys::signal::kill(child, nix::sys::signal::Signal::SIGKILL);
            let _ = nix::sys::wait::waitpid(child, None);
            decode(&bytes)
        }
        Err(_) => HashMap::new(),
    }
}

/// Each name, a NUL, `!` and why for a name that does not exist, a NUL.
fn encode(said: &HashMap<String, Option<String>>) -> Vec<u8> {
    let mut bytes = Vec::new();
    for (name, answer) in said {
        bytes.extend(name.as_bytes());
        bytes.push(0);
        if let Some(why) = answer {
            bytes.push(b'!');
            bytes.extend(why.replace('\0', "").as_bytes());
        }
        bytes.push(0);
    }
    bytes
}

/// What [`encode`] wrote; a record cut short is left out.
fn decode(bytes: &[u8]) -> HashMap<String, Option<String>> {
    let mut fields = bytes.split(|&b| b == 0);
    let mut said = HashMap::new();
    while let (Some(name), Some(answer)) = (fields.next(), fields.next()) {
        if name.is_empty() {
            break;
        }
        let name = String::from_utf8_lossy(name).into_owned();
        let answer = answer
            .strip_prefix(b"!")
            .map(|why| String::from_utf8_lossy(why).into_owned());
        said.insert(name, answer);
    }
    said
}

/// Everything the child writes to `read` until it closes it or `deadline`.
fn read_until(read: std::os::fd::OwnedFd, deadline: Instant) -> Vec<u8> {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    use std::io::Read;
    let mut file = std::fs::File::from(read);
    let mut bytes = Vec::new();
    loop {
        let Some(left) = deadline.checked_duration_since(Instant::now()) else {
            return bytes;
        };
        let millis = u16::try_from(left.as_millis().max(1)).unwrap_or(u16::MAX);
        let mut fds = [PollFd::new(
            std::os::fd::AsFd::as_fd(&file),
            PollFlags::POLLIN,
        )];
        match poll(&mut fds, PollTimeout::from(millis)) {
            Ok(0) => return bytes,
            Ok(_) => {}
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => return bytes,
        }
        let mut chunk = [0u8; 4096];
        match file.read(&mut chunk) {
            Ok(0) | Err(_) => return bytes,
            Ok(n) => bytes.extend_from_slice(&chunk[..n]),
        }
    }
}

/// [`look_up_all`] on threads of this process.
fn look_up_threaded(names: Vec<String>, bound: Duration) -> HashMap<String, Option<String>> {
    let deadline = Instant::now() + bound;
    let workers = names.len().min(LOOKUPS_AT_ONCE);
    let queue = Arc::new(Mutex::new(names));
    let (sender, answers) = mpsc::channel();
    for _ in 0..workers {
        let (queue, sender) = (Arc::clone(&queue), sender.clone());
        let work = move || loop {
            let next = queue.lock().unwrap_or_else(PoisonError::into_inner).pop();
            let Some(name) = next else { return };
            let answer = no_such_name(&name);
            if sender.send((name, answer)).is_err() {
                return;
            }
        };
        // Without a thread, the names are left to the servers' connects.
        if std::thread::Builder::new()
            .name("resolve".into())
            .spawn(work)
            .is_err()
        {
            break;
        }
    }
    drop(sender);
    let mut said = HashMap::new();
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match answers.recv_timeout(left) {
            Ok((name, answer)) => {
                said.insert(name, answer);
            }
            // The bound passed, or every name was answered.
            Err(_) => break,
        }
    }
    said
}

/// `Some` of the resolver's words when it says that `name` does not exist
/// (EAI_NONAME, or EAI_NODATA: a name without an address); `None` when it
/// has an address, or the resolver could not say (EAI_AGAIN, EAI_FAIL: a
/// DNS server that is down is an outage, waited for as one).
fn no_such_name(name: &str) -> Option<String> {
    let name = CString::new(name).ok()?;
    // SAFETY: an all-zero addrinfo is a valid value (null pointers, no
    // flags); only ai_socktype is set, as std's lookups do.
    let mut hints: libc::addrinfo = unsafe { std::mem::zeroed() };
    hints.ai_socktype = libc::SOCK_STREAM;
    let mut found: *mut libc::addrinfo = std::ptr::null_mut();
    // SAFETY: `name` is a NUL-terminated string and `hints` an addrinfo,
    // both alive for the call; `found` is written only on success, and
    // freed below exactly once.
    let code = unsafe { libc::getaddrinfo(name.as_ptr(), std::ptr::null(), &hints, &mut found) };
    if code == 0 {
        // SAFETY: `found` is the list getaddrinfo returned.
        unsafe { libc::freeaddrinfo(found) };
        return None;
    }
    if code != libc::EAI_NONAME && code != libc::EAI_NODATA {
        return None;
    }
    // SAFETY: gai_strerror returns a static NUL-terminated string.
    let why = unsafe { CStr::from_ptr(libc::gai_strerror(code)) };
    Some(why.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_lookup_child_found_crosses_the_pipe_whole() {
        let said: HashMap<String, Option<String>> = [
            ("db1.internal".to_string(), None),
            (
                "deploy".to_string(),
                Some("Name or service not known".to_string()),
            ),
        ]
        .into_iter()
        .collect();
        assert_eq!(decode(&encode(&said)), said);
        // A record cut short (the child killed at the bound) is left out.
        let bytes = encode(&said);
        assert!(decode(&bytes[..bytes.len() - 1]).len() < said.len() + 1);
        assert!(decode(b"").is_empty());
    }

    fn specs(urls: &[&str]) -> Vec<ServerSpec> {
        urls.iter().map(|u| ServerSpec::parse(u).unwrap()).collect()
    }

    const SECOND: Duration = Duration::from_secs(1);

    #[test]
    fn a_name_that_does_not_exist_is_said_and_one_that_does_is_not() {
        assert!(no_such_name("no-such-host.invalid").is_some());
        assert_eq!(no_such_name("localhost"), None);
        assert_eq!(no_such_name("127.0.0.1"), None);
    }

    #[test]
    fn names_that_leave_no_majority_are_a_configuration_error() {
        let one = specs(&["no-such-host.invalid"]);
        let err = check(&one, &ServerSource::Flag, SECOND).unwrap_err();
        assert_eq!(err.exit(), crate::exit_code::Exit::Config);
        let text = err.message();
        assert!(
            text.starts_with(
                "-s no-such-host.invalid: taken as the server \
                 redis://no-such-host.invalid:6379, whose name does not resolve ("
            ),
            "{text}"
        );
        assert!(text.contains("is --shared"), "{text}");
        let three = specs(&["a.invalid:1", "b.invalid:2", "127.0.0.1:3"]);
        let text = check(&three, &ServerSource::Env, SECOND)
            .unwrap_err()
            .message();
        assert!(
            text.starts_with("REDLOCK_SERVERS: redis://a.invalid:1: the name a.invalid does not"),
            "{text}"
        );
        assert!(
            text.contains(
                "; and 1 more server names do not resolve; 1 of 3 servers are left, \
                 fewer than the 2 a lock needs"
            ),
            "{text}"
        );
        assert!(!text.contains("--shared"), "{text}");
    }

    #[test]
    fn a_name_that_leaves_a_majority_is_a_warning() {
        let three = specs(&["localhost:1", "127.0.0.1:2", "gone.invalid:3"]);
        let notices = check(&three, &ServerSource::Flag, SECOND).unwrap();
        assert_eq!(notices.len(), 1);
        let Notice::Unresolved(unresolved) = &notices[0] else {
            panic!("{notices:?}");
        };
        assert!(unresolved.server.is(&three[2]));
        let fine = specs(&["localhost:1", "127.0.0.1:2", "[::1]:3"]);
        assert_eq!(check(&fine, &ServerSource::Flag, SECOND).unwrap(), []);
    }
}
