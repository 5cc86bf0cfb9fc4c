//! Names can never reach the keys redlock keeps for itself. Beside a lock
//! `NAME` it keeps `NAME` NUL `holder`, `line`, `lapse`, `free`, `broken`,
//! `fence`, `readers`, `reader-records` and `done`, and beside the prefix the restart
//! guard's marker (`PREFIX` NUL `guard`, or `PREFIX{tag}` NUL `guard` for a
//! hash-tagged name); the wake-up channels are `NAME` NUL `released`. So no
//! name and no prefix may hold NUL, however given: `--hex`, a config file's
//! `prefix` (argv and the environment cannot carry NUL at all). Each route
//! below reached another name's keys, or the guard's marker, before.

use std::collections::BTreeMap;

use crate::support::assertions::{assert_one_line_error, is_token};
use crate::support::{open_temp_dir, run, write_file, Cluster};

/// What every server holds: each key (by server) with its `DUMP` (type and
/// value) and whether it expires. A lock's TTL runs down on its own; only
/// a change of value or of kind is a change here.
pub type Snapshot = BTreeMap<(usize, Vec<u8>), (Vec<u8>, bool)>;

pub fn snapshot(cluster: &Cluster) -> Snapshot {
    let mut all = Snapshot::new();
    for (i, server) in cluster.servers.iter().enumerate() {
        let mut con = server.client();
        let keys: Vec<Vec<u8>> = redis::cmd("KEYS").arg("*").query(&mut con).unwrap();
        let mut pipe = redis::pipe();
        for key in &keys {
            pipe.cmd("DUMP").arg(key).cmd("PTTL").arg(key);
        }
        let kept: Vec<(Option<Vec<u8>>, i64)> = pipe.query(&mut con).unwrap();
        for (key, (dump, pttl)) in keys.into_iter().zip(kept) {
            if let Some(dump) = dump {
                all.insert((i, key), (dump, pttl != -1));
            }
        }
    }
    all
}

/// The keys (on any server) that are not the same in `before` and `after`.
pub fn changed(before: &Snapshot, after: &Snapshot) -> Vec<Vec<u8>> {
    let mut keys: Vec<Vec<u8>> = before
        .keys()
        .chain(after.keys())
        .filter(|at| before.get(*at) != after.get(*at))
        .map(|(_, key)| key.clone())
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Every word redlock appends, after a NUL, to a lock's key or to the
/// prefix (lock/key.rs, lock/notify.rs).
const KEPT: [&str; 11] = [
    "holder",
    "line",
    "lapse",
    "free",
    "broken",
    "fence",
    "readers",
    "reader-records",
    "done",
    "guard",
    "released",
];

/// `acquire -n NAME` with `extra`, which must take it: the token (the
/// first word: `--fence` prints the fence after it).
fn take(cluster: &Cluster, name: &str, extra: &[&str]) -> String {
    let out = run(cluster.redlock().args(["acquire", "-n", name]).args(extra));
    out.assert_code(0, &format!("acquire -n {name:?} {extra:?}"));
    let token = out.stdout.split_whitespace().next().unwrap_or_default();
    assert!(is_token(token), "{:?}", out.stdout);
    token.to_owned()
}

/// The locks [`busy_fleet`] has, each with keys of its own beside it.
const BUSY: [&str; 4] = ["job", "reads", "queued", "marked"];

/// A fleet where `job` is held with a fence, `reads` has a reader,
/// `queued` has a waiter's line, `marked` is held by a run once marked
/// done, and the restart guard's markers are there, as the guard writes
/// them.
pub fn busy_fleet() -> (Cluster, String) {
    let cluster = Cluster::start(3);
    let job = take(&cluster, "job", &["--fence", "--ttl", "3600s"]);
    take(&cluster, "reads", &["--shared", "--ttl", "3600s"]);
    let marked = take(&cluster, "marked", &["--once", "k", "--ttl", "3600s"]);
    run(cluster.redlock().args(["done", "marked", &marked])).assert_code(0, "marked done");
    for server in &cluster.servers {
        server.stand_in_line("queued", 1, "t-1");
    }
    // The guard, on (as it is by default), writes its markers; these
    // servers are new, so it keeps them out, and takes nothing.
    for name in ["first", "{tag}x"] {
        let out = run(cluster
            .redlock()
            .env("REDLOCK_RESTART_GUARD", "30s")
            .args(["acquire", "-n", name]));
        out.assert_code(69, "servers that just started are kept out");
    }
    (cluster, job)
}

/// The restart guard's markers on the first server: every key with
/// NUL `guard` in it.
fn markers(cluster: &Cluster) -> Vec<Vec<u8>> {
    let mut con = cluster[0].client();
    let keys: Vec<Vec<u8>> = redis::cmd("KEYS").arg("*").query(&mut con).unwrap();
    let mut found: Vec<Vec<u8>> = keys
        .into_iter()
        .filter(|key| key.windows(6).any(|w| w == b"\0guard"))
        .collect();
    found.sort();
    found
}

/// The first route: `release --force --any-key --hex 006775617264`
/// deleted the restart guard's marker on every server (so every client got
/// 69 for a guard, again and again).
#[test]
fn release_force_any_key_cannot_delete_the_restart_guards_marker() {
    let (cluster, _) = busy_fleet();
    let markers = markers(&cluster);
    assert_eq!(markers.len(), 2, "the prefix's and the tag's: {markers:?}");
    let before = snapshot(&cluster);
    for marker in &markers {
        for flags in [&["--any-key"][..], &[], &["--if-token", "x"]] {
            let out = run(cluster
                .redlock()
                .args(["release", "--force", "--hex", &hex(marker)])
                .args(flags));
            assert_one_line_error(&out, 64, &["NUL"], &format!("{marker:?} {flags:?}"));
        }
    }
    assert_eq!(changed(&before, &snapshot(&cluster)), Vec::<Vec<u8>>::new());
}

/// Every command that takes a NAME refuses one with NUL in it, whatever
/// follows the NUL, and changes nothing: not another lock's record, line,
/// fence or readers, and not the guard's marker.
#[test]
fn no_command_takes_a_name_holding_nul() {
    let (cluster, job) = busy_fleet();
    let before = snapshot(&cluster);
    let mut names: Vec<Vec<u8>> = KEPT
        .iter()
        .flat_map(|word| {
            BUSY.iter()
                .chain(&[""])
                .map(move |lock| [lock, "\0", word].concat())
        })
        .map(String::into_bytes)
        .collect();
    names.extend([
        b"{tag}\0guard".to_vec(),
        b"job\0".to_vec(),
        b"\0".to_vec(),
        b"job\0line\0holder".to_vec(),
    ]);
    let commands: [&[&str]; 11] = [
        &["acquire", "-n"],
        &["acquire", "-n", "--once", "k"],
        &["release", "--force", "--done"],
        &["acquire", "-n", "--fence"],
        &["acquire", "-n", "--shared"],
        &["acquire", "-n", "--limit", "2"],
        &["release", "--force", "--any-key"],
        &["release", "--force", "--if-token", &job],
        &["status"],
        &["status", "--limit", "2"],
        &["extend", "--ttl", "60s"],
    ];
    for name in &names {
        for command in commands {
            let mut cmd = cluster.redlock();
            cmd.args(command).args(["--hex", &hex(name)]);
            if command[0] == "extend" {
                cmd.arg(&job);
            }
            let context = format!("{command:?} on {name:?}");
            let out = run(&mut cmd);
            assert_one_line_error(&out, 64, &["must not hold a NUL byte"], &context);
        }
        for command in ["release", "done"] {
            let out = run(cluster.redlock().args([command, "--hex", &hex(name), &job]));
            assert_one_line_error(&out, 64, &["NUL"], &format!("{command} {name:?}"));
        }
    }
    assert_eq!(changed(&before, &snapshot(&cluster)), Vec::<Vec<u8>>::new());
    // And what was there still works: job's holder and fence, the reader.
    run(cluster.redlock().args(["status", "job"])).assert_code(0, "job is still held");
    run(cluster.redlock().args(["release", "job", &job])).assert_code(0, "by its holder");
    let out = run(cluster
        .redlock()
        .args(["acquire", "-n", "--fence", "--json", "job"]));
    out.assert_code(0, "job's next fence");
    assert_eq!(
        out.json()["fence"],
        2,
        "the counter was kept: {}",
        out.stdout
    );
    assert!(cluster.in_line_everywhere("queued", 1), "the line was kept");
}

/// A prefix is put in front of every name: one holding NUL (a config
/// file's `prefix` can) would make `holder` under `job` NUL the record of
/// `job`. The file is refused, as any other bad setting in it is.
#[test]
fn a_config_files_prefix_holding_nul_is_refused() {
    let (cluster, job) = busy_fleet();
    let before = snapshot(&cluster);
    let dir = open_temp_dir("names-config");
    let file = write_file(dir.path(), "config", "# fleet\nprefix = job\0\n");
    for command in [
        &["release", "--force", "--any-key", "holder"][..],
        &["acquire", "-n", "fence"],
        &["status", "holder"],
    ] {
        let out = run(cluster
            .redlock()
            .env("REDLOCK_CONFIG_FILE", &file)
            .args(command));
        assert_one_line_error(
            &out,
            78,
            &["line 2", "prefix must not hold a NUL byte"],
            &format!("{command:?}"),
        );
    }
    assert_eq!(changed(&before, &snapshot(&cluster)), Vec::<Vec<u8>>::new());
    run(cluster.redlock().args(["release", "job", &job])).assert_code(0, "by its holder");
}

/// The siblings that need no NUL, and must stay apart: a name that looks
/// like a suffix, a hash tag (whose marker is the tag's, not the lock's),
/// a glob, a name under one prefix that is another prefix's name. Each
/// takes and gives back its own keys, and leaves `job`'s and the markers
/// alone.
#[test]
fn names_that_look_like_kept_keys_are_locks_of_their_own() {
    let (cluster, _) = busy_fleet();
    let names = [
        "holder",
        "jobholder",
        "job:fence",
        "guard",
        "{job}",
        "{tag}",
        "*",
        "job?",
        "job[0]",
        "reads readers",
    ];
    for name in names {
        let before = snapshot(&cluster);
        let token = take(&cluster, name, &["--fence"]);
        let mid = snapshot(&cluster);
        let own = |key: &Vec<u8>| {
            key.as_slice() == name.as_bytes()
                || key.strip_prefix(name.as_bytes()).is_some_and(|rest| {
                    KEPT.iter()
                        .any(|word| rest == [b"\0", word.as_bytes()].concat())
                })
        };
        let touched = changed(&before, &mid);
        assert!(touched.iter().all(own), "{name:?} changed {touched:?}");
        run(cluster.redlock().args(["release", name, &token])).assert_code(0, name);
        let touched = changed(&mid, &snapshot(&cluster));
        assert!(touched.iter().all(own), "{name:?} changed {touched:?}");
    }
    // A prefix names the same key as a longer name without one, by design
    // (the key is PREFIX then NAME); the guard's marker stays the prefix's.
    let token = take(&cluster, "app:x", &[]);
    let out = run(cluster.redlock().args(["--prefix", "app:", "status", "x"]));
    out.assert_code(0, "app: + x is app:x");
    run(cluster
        .redlock()
        .args(["--prefix", "app:", "release", "x", &token]))
    .assert_code(0, "its holder releases it under either");
}

/// `list` reads only, and its PATTERN (a glob, from argv, so without NUL)
/// shows locks, never what redlock keeps beside them: `*` and `?` match a
/// NUL in a key, but a key kept beside a lock is never listed as one.
#[test]
fn list_patterns_show_locks_and_never_the_keys_kept_beside_them() {
    let (cluster, _) = busy_fleet();
    let before = snapshot(&cluster);
    for (pattern, locks) in [
        ("*", "job\nmarked\nreads\n"),
        ("job*", "job\n"),
        ("*s", "reads\n"),
        ("*fence*", ""),
        ("*done", ""),
        ("marked?done", ""),
        ("*guard*", ""),
        ("job?fence", ""),
        ("?guard", ""),
        ("*holder", ""),
        ("*line", ""),
        ("queued*", ""),
    ] {
        let out = run(cluster.redlock().args(["list", "--names", pattern]));
        out.assert_code(0, pattern);
        assert_eq!(out.stdout, locks, "list --names {pattern:?}");
    }
    assert_eq!(changed(&before, &snapshot(&cluster)), Vec::<Vec<u8>>::new());
}
