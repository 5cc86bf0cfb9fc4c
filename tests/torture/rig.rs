//! The machinery of one scenario: five lock servers (in memory only, as the
//! fixture starts them), one bookkeeping server that is never faulted, a
//! temporary directory with the history and the client logs, and the
//! witness.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use crate::failover::Vips;
use crate::history::History;
use crate::netns::Netns;
use crate::support::{self, Cluster, RedisServer};
use crate::witness::Witness;

/// The lock every client contends for.
pub const LOCK: &str = "torture";
/// Lock servers: a majority of 3 survives the loss of a minority of 2.
pub const SERVERS: usize = 5;

/// How the clients of a scenario are given the restart guard.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Guard {
    /// `REDLOCK_RESTART_GUARD=0`.
    Off,
    /// `REDLOCK_RESTART_GUARD` at this value.
    Env(Duration),
    /// No variable: a fleet config file, `$XDG_CONFIG_HOME/redlock/config`,
    /// with `restart-guard = ` this value. A binary that does not read the
    /// file guards each caller by its own TTL.
    ConfigFile(Duration),
}

impl Guard {
    /// How long a fresh server may not count toward a quorum.
    pub fn duration(self) -> Duration {
        match self {
            Guard::Off => Duration::ZERO,
            Guard::Env(guard) | Guard::ConfigFile(guard) => guard,
        }
    }
}

/// What a client needs to run a section, shared by the client threads.
pub struct Ctx {
    /// `REDLOCK_SERVERS`.
    pub servers: String,
    pub guard: Guard,
    /// `XDG_CONFIG_HOME` of the clients, with `redlock/config` in it under
    /// [`Guard::ConfigFile`].
    pub config_home: Option<PathBuf>,
    /// The `redlock` under test (see [`redlock_binary`]).
    pub redlock: PathBuf,
    pub history: Arc<History>,
    pub section: PathBuf,
    pub witness: PathBuf,
    pub bookkeeping: String,
    /// Where each client's `exec` writes its stderr (`client-N.log`).
    pub logs: PathBuf,
    /// libfaketime, for the clients that run with a shifted wall clock.
    pub faketime: Option<PathBuf>,
    /// `exec --fence`, on servers that keep their data across restarts.
    pub fence: bool,
}

pub struct Rig {
    pub cluster: Cluster,
    /// Under [`Self::start_behind_vips`]: the replicas and the addresses the
    /// clients know.
    pub vips: Option<Vips>,
    /// Under [`Self::start_in_netns`]: the servers, each in its own network
    /// namespace (`cluster` is then empty).
    pub netns: Option<Netns>,
    pub ctx: Arc<Ctx>,
    pub witness: Witness,
    bookkeeping: RedisServer,
    dir: tempfile::TempDir,
}

/// Where the lock servers of a rig are.
enum Servers {
    /// On 127.0.0.1.
    Loopback,
    /// Behind forwarders, with replicas (failover.rs).
    BehindVips,
    /// In network namespaces (netns.rs).
    Netns(Netns),
}

/// What a scenario's servers counted.
#[derive(Debug, Default)]
pub struct Bookkeeping {
    pub occupancy_max: i64,
    pub lost_updates: i64,
    /// The most sharing sections (readers, slot holders) inside at once.
    pub sharing_max: i64,
}

impl Rig {
    /// Starts the servers. With a restart guard, waits for the guard to pass:
    /// a fresh server does not count toward the quorum before that.
    pub fn start(section: &Path, guard: Guard, faketime: Option<PathBuf>) -> Rig {
        Rig::start_with(section, guard, faketime, false)
    }

    /// [`Self::start`]; with `fence`, the clients run `exec --fence` and
    /// the servers keep the fencing counters across restarts (AOF with
    /// `appendfsync always`: the assumption fencing rests on).
    pub fn start_with(section: &Path, guard: Guard, faketime: Option<PathBuf>, fence: bool) -> Rig {
        Rig::start_all(section, guard, faketime, fence, Servers::Loopback)
    }

    /// [`Self::start`], each server a master with a replica behind a
    /// forwarder (see failover.rs); the clients know the forwarders.
    pub fn start_behind_vips(section: &Path, guard: Guard) -> Rig {
        Rig::start_all(section, guard, None, false, Servers::BehindVips)
    }

    /// [`Self::start`] with the servers of `netns` (see netns.rs), whom the
    /// clients reach through their namespaces' links.
    pub fn start_in_netns(section: &Path, guard: Guard, netns: Netns) -> Rig {
        Rig::start_all(section, guard, None, false, Servers::Netns(netns))
    }

    fn start_all(
        section: &Path,
        guard: Guard,
        faketime: Option<PathBuf>,
        fence: bool,
        servers: Servers,
    ) -> Rig {
        let dir = support::temp_dir("redlock-torture-");
        let config_home = match guard {
            Guard::ConfigFile(value) => Some(write_config(dir.path(), value)),
            Guard::Off | Guard::Env(_) => None,
        };
        let cluster = match (fence, &servers) {
            (_, Servers::Netns(_)) => Cluster::start(0),
            (true, _) => {
                Cluster::start_with(SERVERS, &["--appendonly", "yes", "--appendfsync", "always"])
            }
            (false, _) => Cluster::start(SERVERS),
        };
        let (vips, netns) = match servers {
            Servers::Loopback => (None, None),
            Servers::BehindVips => (Some(Vips::start(&cluster)), None),
            Servers::Netns(netns) => (None, Some(netns)),
        };
        let bookkeeping = RedisServer::start();
        let history = Arc::new(History::create(&dir.path().join("history")));
        let witness = Witness::start(
            &dir.path().join("witness.sock"),
            Arc::clone(&history),
            bookkeeping.url(),
        );
        let ctx = Arc::new(Ctx {
            servers: match (&vips, &netns) {
                (Some(vips), _) => vips.servers_arg(),
                (_, Some(netns)) => netns.servers_arg(),
                _ => cluster.servers_arg(),
            },
            guard,
            config_home,
            redlock: redlock_binary(),
            history,
            section: section.to_owned(),
            witness: witness.socket().to_owned(),
            bookkeeping: bookkeeping.url(),
            logs: dir.path().to_owned(),
            faketime,
            fence,
        });
        thread::sleep(guard.duration());
        Rig {
            cluster,
            vips,
            netns,
            ctx,
            witness,
            bookkeeping,
            dir,
        }
    }

    /// Stops the witness (every section has ended by now) and reads the
    /// bookkeeping server.
    pub fn finish(self) -> (Bookkeeping, tempfile::TempDir) {
        self.witness.stop();
        let mut con = self.bookkeeping.client();
        let mut get = |key: &str| -> i64 {
            redis::cmd("GET")
                .arg(key)
                .query::<Option<i64>>(&mut con)
                .unwrap_or_else(|e| panic!("cannot read {key} from the bookkeeping server: {e}"))
                .unwrap_or(0)
        };
        let occupancy_max = get("occupancy_max");
        let lost_updates = get("counter_writes") - get("counter");
        let sharing_max = get("sharing_max");
        (
            Bookkeeping {
                occupancy_max,
                lost_updates,
                sharing_max,
            },
            self.dir,
        )
    }
}

/// `$XDG_CONFIG_HOME/redlock/config` under `dir` with the restart guard in
/// it, as a fleet would set it for every caller; returns the config home.
fn write_config(dir: &Path, guard: Duration) -> PathBuf {
    let home = dir.join("config-home");
    let file = home.join("redlock").join("config");
    let text = format!("restart-guard = {}\n", duration_value(guard));
    std::fs::create_dir_all(file.parent().expect("the file has a directory"))
        .and_then(|()| std::fs::write(&file, text))
        .unwrap_or_else(|e| panic!("cannot write {}: {e}", file.display()));
    home
}

/// A duration as the CLI and its files take it: `4s`, `1500ms`.
pub fn duration_value(duration: Duration) -> String {
    match duration.as_millis() {
        ms if ms % 1000 == 0 => format!("{}s", ms / 1000),
        ms => format!("{ms}ms"),
    }
}

/// The `redlock` the clients run: `REDLOCK_TORTURE_BIN` (`scripts/torture
/// --bin PATH`), e.g. an older build to show what a scenario catches, or
/// else the one this test was built with.
pub fn redlock_binary() -> PathBuf {
    match std::env::var_os("REDLOCK_TORTURE_BIN").filter(|v| !v.is_empty()) {
        Some(path) => {
            let path = PathBuf::from(path);
            assert!(
                path.is_file(),
                "REDLOCK_TORTURE_BIN={} is not a file",
                path.display()
            );
            path
        }
        None => PathBuf::from(env!("CARGO_BIN_EXE_redlock")),
    }
}

/// `examples/torture-section`, next to the binary built here (also when
/// the clients run another `redlock`).
pub fn section_program() -> PathBuf {
    let redlock = Path::new(env!("CARGO_BIN_EXE_redlock"));
    let dir = redlock.parent().expect("the binary lives in a directory");
    let section = dir.join("examples").join("torture-section");
    assert!(
        section.is_file(),
        "{} is missing. `cargo test --all-targets` builds examples only as test \
         binaries; build the program itself with `cargo build --example torture-section` \
         (scripts/test and scripts/torture do).",
        section.display()
    );
    section
}

/// The Debian `faketime` package's library, or how to install it.
pub fn faketime_library() -> Result<PathBuf, String> {
    let candidates = std::fs::read_dir("/usr/lib")
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path().join("faketime/libfaketime.so.1"));
    candidates
        .into_iter()
        .find(|lib| lib.is_file())
        .ok_or_else(|| {
            "libfaketime is missing (no /usr/lib/*/faketime/libfaketime.so.1): install it with \
         `sudo apt-get install faketime` (scripts/test and scripts/torture do)"
                .to_string()
        })
}
