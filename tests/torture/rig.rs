//! The machinery of one scenario: five lock servers (in memory only, as the
//! fixture starts them), one bookkeeping server that is never faulted, a
//! temporary directory with the history and the client logs, and the
//! witness.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use crate::history::History;
use crate::support::{self, Cluster, RedisServer};
use crate::witness::Witness;

/// The lock every client contends for.
pub const LOCK: &str = "torture";
/// Lock servers: a majority of 3 survives the loss of a minority of 2.
pub const SERVERS: usize = 5;

/// What a client needs to run a section, shared by the client threads.
pub struct Ctx {
    /// `REDLOCK_SERVERS`.
    pub servers: String,
    /// `REDLOCK_RESTART_GUARD`; zero turns the guard off.
    pub guard: Duration,
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
}

pub struct Rig {
    pub cluster: Cluster,
    pub ctx: Arc<Ctx>,
    pub witness: Witness,
    bookkeeping: RedisServer,
    dir: tempfile::TempDir,
}

/// What a scenario's servers counted.
pub struct Bookkeeping {
    pub occupancy_max: i64,
    pub lost_updates: i64,
}

impl Rig {
    /// Starts the servers. With a restart guard, waits for the guard to pass:
    /// a fresh server does not count toward the quorum before that.
    pub fn start(section: &Path, guard: Duration, faketime: Option<PathBuf>) -> Rig {
        let dir = support::temp_dir("redlock-torture-");
        let cluster = Cluster::start(SERVERS);
        let bookkeeping = RedisServer::start();
        let history = Arc::new(History::create(&dir.path().join("history")));
        let witness = Witness::start(
            &dir.path().join("witness.sock"),
            Arc::clone(&history),
            bookkeeping.url(),
        );
        let ctx = Arc::new(Ctx {
            servers: cluster.servers_arg(),
            guard,
            redlock: redlock_binary(),
            history,
            section: section.to_owned(),
            witness: witness.socket().to_owned(),
            bookkeeping: bookkeeping.url(),
            logs: dir.path().to_owned(),
            faketime,
        });
        thread::sleep(guard);
        Rig {
            cluster,
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
        (
            Bookkeeping {
                occupancy_max,
                lost_updates,
            },
            self.dir,
        )
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
