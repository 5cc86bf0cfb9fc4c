//! The keeper of `acquire --while` (src/keeper/rendezvous.rs) reads each
//! peer of its socket on its own: peers that connect and say nothing do
//! not hold up `release`. It once served one connection at a time, with
//! 2 s for each: 15 idle connections made a `release` take 30 s.

use std::os::linux::net::SocketAddrExt as _;
use std::os::unix::net::{SocketAddr, UnixStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use crate::support::{pid_alive, run, wait_until, Cluster, Running};

/// The keeper's socket for the lock `key` held by `token`, as
/// rendezvous.rs names it: `redlock-keeper/UID/SHA1(KEY NUL TOKEN)` in the
/// abstract namespace.
fn keeper_address(key: &str, token: &str) -> SocketAddr {
    let mut hashed = key.as_bytes().to_vec();
    hashed.push(0);
    hashed.extend_from_slice(token.as_bytes());
    let name = format!(
        "redlock-keeper/{}/{}",
        nix::unistd::geteuid(),
        sha1_smol::Sha1::from(hashed).digest()
    );
    SocketAddr::from_abstract_name(name.as_bytes()).unwrap()
}

#[test]
fn idle_connections_to_the_keeper_do_not_hold_up_release() {
    let cluster = Cluster::start(3);
    let watched = Running::spawn(
        Command::new("sleep")
            .arg("60")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let pid = watched.id().to_string();
    let out = run(cluster
        .redlock()
        .args(["acquire", "--while", &pid, "idle-peers"]));
    out.assert_code(0, "acquire --while");
    let token = out.stdout.trim().to_owned();
    // Fifteen peers connect and say nothing, as the outside run's did.
    let address = keeper_address("idle-peers", &token);
    let idle: Vec<UnixStream> = (0..15)
        .map(|_| UnixStream::connect_addr(&address).expect("the keeper listens"))
        .collect();
    let started = Instant::now();
    let released = run(cluster.redlock().args(["release", "idle-peers", &token]));
    let took = started.elapsed();
    released.assert_code(0, "release");
    assert!(
        took < Duration::from_millis(1500),
        "release took {took:?} with {} idle connections to the keeper",
        idle.len()
    );
    // The keeper stood down rather than taking the release for a loss: the
    // watched process got no signal, and the lock is free.
    assert!(
        wait_until(Duration::from_secs(5), || cluster
            .get_all(b"idle-peers")
            .iter()
            .all(Option::is_none)),
        "the lock is still there after the release"
    );
    assert!(
        pid_alive(watched.id() as i32),
        "the keeper signalled the watched process"
    );
    drop(idle);
    watched.signal(Signal::SIGKILL);
    watched.finish(Duration::from_secs(5));
}
