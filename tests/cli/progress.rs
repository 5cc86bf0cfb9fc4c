//! What a waiting `acquire` or `exec` says while it waits: nothing in the
//! first second, then whom it waits for (or which servers it cannot reach)
//! and how long it has waited; one line rewritten in place on a terminal,
//! a line every ten seconds on a pipe; and `exec -v`'s account of how it
//! held the lock.

use std::process::Stdio;
use std::time::Duration;

use crate::support::{acquire, port_of, run, timed, wait_until, Cluster, Running, RUN_TIMEOUT};

/// The lines of `stderr` that report progress.
fn waiting_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|line| line.starts_with("redlock: waiting for"))
        .collect()
}

#[test]
fn a_pipe_hears_after_a_second_whom_it_waits_for() {
    let cluster = Cluster::start(3);
    acquire(&cluster, "deploy", &["-m", "rolling out 1.2"]);
    let out = run(cluster
        .redlock()
        .args(["acquire", "-w", "2500ms", "deploy"]));
    out.assert_code(75, "busy after the wait");
    let lines = waiting_lines(&out.stderr);
    // One line: the first after a second, the next not before ten.
    assert_eq!(lines.len(), 1, "{}", out.stderr);
    let line = lines[0];
    assert!(
        line.starts_with("redlock: waiting for \"deploy\", held by "),
        "{line}"
    );
    assert!(line.contains(", \"rolling out 1.2\") for "), "{line}");
    assert!(line.contains("; expires in 2"), "{line}");
    assert!(line.ends_with("; waited 1s of 2s 500ms"), "{line}");
    assert!(!out.stderr.contains('\r'), "no carriage return on a pipe");
}

#[test]
fn a_lock_that_frees_within_the_first_second_says_nothing() {
    let cluster = Cluster::start(3);
    acquire(&cluster, "brief", &["--ttl", "200ms"]);
    let (out, took) = timed(cluster.redlock().args(["acquire", "--ttl", "1s", "brief"]));
    out.assert_code(0, "acquired once the holder's TTL ran out");
    assert!(
        took < Duration::from_millis(900),
        "the lock took {took:?} to free: this test needs it within a second"
    );
    assert_eq!(out.stderr, "", "nothing said about a short wait");
}

#[test]
fn quiet_says_nothing_while_waiting() {
    let cluster = Cluster::start(3);
    acquire(&cluster, "hush", &[]);
    let out = run(cluster
        .redlock()
        .args(["acquire", "-q", "-w", "1500ms", "hush"]));
    out.assert_code(75, "busy after the wait");
    assert_eq!(out.stderr, "", "-q silences the progress");
}

#[test]
fn the_pipe_gets_a_line_every_interval() {
    let cluster = Cluster::start(3);
    acquire(&cluster, "cadence", &[]);
    // Debug builds take a shorter interval, so that the cadence is seen in
    // seconds; the default of ten seconds is a unit test.
    let out = run(cluster
        .redlock()
        .env("REDLOCK_TEST_PROGRESS_EVERY_MS", "1000")
        .args(["exec", "-w", "3500ms", "cadence", "--", "true"]));
    out.assert_code(75, "busy after the wait");
    let waited: Vec<&str> = waiting_lines(&out.stderr)
        .iter()
        .map(|line| line.rsplit("; ").next().unwrap())
        .collect();
    assert_eq!(
        waited,
        [
            "waited 1s of 3s 500ms",
            "waited 2s of 3s 500ms",
            "waited 3s of 3s 500ms"
        ],
        "{}",
        out.stderr
    );
}

#[test]
fn unreachable_servers_are_named_as_such() {
    let mut cluster = Cluster::start(3);
    cluster[1].kill();
    cluster[2].kill();
    let out = run(cluster
        .redlock()
        .args(["acquire", "-v", "-w", "1500ms", "away"]));
    out.assert_code(69, "no quorum after the wait");
    let lines = waiting_lines(&out.stderr);
    assert_eq!(lines.len(), 1, "{}", out.stderr);
    assert!(
        lines[0].starts_with(
            "redlock: waiting for \"away\": 2 of 3 servers unreachable, and a majority is 2; \
             waited 1s of 1s 500ms"
        ),
        "{}",
        out.stderr
    );
    // Under -v, why each of them is out of reach, right below.
    let detail: Vec<&str> = out
        .stderr
        .lines()
        .skip_while(|line| !line.starts_with("redlock: waiting for"))
        .skip(1)
        .take(2)
        .collect();
    for (line, i) in detail.iter().zip([1, 2]) {
        let server = format!("redlock:   redis://{}: unreachable: ", port_of(&cluster, i));
        assert!(line.starts_with(&server), "{}", out.stderr);
    }
}

#[test]
fn verbose_names_what_each_server_holds() {
    let cluster = Cluster::start(3);
    acquire(&cluster, "seen", &["-m", "note"]);
    let out = run(cluster
        .redlock()
        .args(["acquire", "-v", "-w", "1500ms", "seen"]));
    out.assert_code(75, "busy after the wait");
    // The round stops once a majority said busy: at least two of them.
    let held: Vec<&str> = out
        .stderr
        .lines()
        .filter(|line| line.starts_with("redlock:   redis://") && line.contains(": held by "))
        .collect();
    assert!(held.len() >= 2, "{}", out.stderr);
    assert!(
        held.iter().all(|line| line.contains("\"note\")")),
        "{held:?}"
    );
}

#[test]
fn an_attempt_that_hangs_is_waited_for_aloud() {
    let mut cluster = Cluster::start(3);
    cluster[1].pause();
    cluster[2].pause();
    // The only attempt waits for the server timeout, well past the second
    // after which progress is shown. Each step that meets the paused servers
    // waits as long (the whole run takes about three timeouts), so the
    // timeout is no longer than that margin needs.
    let out =
        run(cluster
            .redlock()
            .args(["--server-timeout", "1500ms", "acquire", "-w", "2s", "stuck"]));
    out.assert_code(69, "no quorum");
    let lines = waiting_lines(&out.stderr);
    assert!(
        lines.first().is_some_and(|line| line
            .starts_with("redlock: waiting for \"stuck\": no attempt has been answered yet")),
        "{}",
        out.stderr
    );
    cluster[1].resume();
    cluster[2].resume();
}

#[test]
fn a_terminal_line_is_rewritten_in_place_and_cleared() {
    let cluster = Cluster::start(3);
    acquire(&cluster, "tty", &[]);
    let command = format!("{} acquire -w 2500ms tty", env!("CARGO_BIN_EXE_redlock"));
    // script(1) gives the command a pseudo-terminal; its stdout is the screen.
    let mut script = std::process::Command::new("script");
    crate::support::with_default_signals(&mut script)
        .args(["-qec", &command, "/dev/null"])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("SHELL", "/bin/sh")
        .env("TERM", "dumb")
        .env("REDLOCK_SERVERS", cluster.servers_arg())
        .env("REDLOCK_RESTART_GUARD", "0")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let out = Running::spawn(&mut script).finish(RUN_TIMEOUT);
    out.assert_code(75, "busy after the wait");
    let screen = out.stdout;
    let clear = "\r\x1b[K";
    let updates = screen
        .matches(&format!("{clear}redlock: waiting for \"tty\", held by "))
        .count();
    assert_eq!(updates, 2, "one line, shown at 1s and 2s: {screen:?}");
    // No new line while it waits, and a clean one for what follows.
    let first = screen.find("redlock: waiting").unwrap();
    let busy = screen
        .find(&format!(
            "{clear}redlock: gave up after 2s 500ms: \"tty\" is held by"
        ))
        .unwrap_or_else(|| panic!("the line is cleared before the busy message: {screen:?}"));
    assert!(!screen[first..busy].contains('\n'), "{screen:?}");
    assert!(
        screen[first..busy].contains("waited 2s of 2s 500ms"),
        "{screen:?}"
    );
}

/// `exec -v`'s closing line: how long it waited, how many times it
/// extended the lock, and how it ended.
fn held_report(stderr: &str, name: &str) -> (Duration, u32, String) {
    let prefix = format!("redlock: lock \"{name}\": waited ");
    let line = stderr
        .lines()
        .find_map(|line| line.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no account of the lock: {stderr}"));
    let (waited, rest) = line.split_once(" for it, extended it ").unwrap();
    let (count, end) = rest.split_once(' ').unwrap();
    let end = end.split_once(", ").unwrap().1.to_owned();
    (
        humantime::parse_duration(waited).unwrap(),
        count.parse().unwrap(),
        end,
    )
}

#[test]
fn exec_verbose_tells_how_it_held_the_lock() {
    let cluster = Cluster::start(3);
    acquire(&cluster, "kept", &["--ttl", "1200ms"]);
    // Extended every 200ms while the command sleeps a second.
    let out = run(cluster
        .redlock()
        .args(["exec", "-v", "--ttl", "600ms", "kept", "--", "sleep", "1"]));
    out.assert_code(0, "the command's status");
    let (waited, extensions, end) = held_report(&out.stderr, "kept");
    assert!(waited >= Duration::from_millis(900), "waited {waited:?}");
    assert!((2..=10).contains(&extensions), "{extensions} extensions");
    assert_eq!(end, "kept it to the end");
}

#[test]
fn exec_verbose_tells_of_a_lost_lock() {
    let cluster = Cluster::start(3);
    let exec = Running::spawn(
        cluster
            .redlock()
            .args(["exec", "-v", "--ttl", "1s", "taken", "--", "sleep", "30"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    assert!(wait_until(Duration::from_secs(10), || {
        cluster.get_all(b"taken").iter().all(Option::is_some)
    }));
    for server in &cluster.servers {
        server.set(b"taken", b"someone else");
    }
    let out = exec.finish(RUN_TIMEOUT);
    out.assert_code(79, "lost");
    let (waited, _, end) = held_report(&out.stderr, "taken");
    assert!(waited < Duration::from_secs(1), "waited {waited:?}");
    assert_eq!(end, "lost it before the command ended");
}
