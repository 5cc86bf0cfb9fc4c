//! A seeded fuzz pass over the real binary: random command lines and
//! environments, and random replies from a fake RESP server. Whatever comes
//! in, `redlock` must never panic (exit 101), never hang, and never show a
//! server's password. Reproducible: the seed is printed with every failure;
//! `REDLOCK_FUZZ_SEED=N` replays a run and `REDLOCK_FUZZ_CASES=N` makes it
//! longer (`scripts/fuzz` runs a long one).

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt as _;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::support::assertions::assert_no_panic;
use crate::support::fake_server::FakeServer;
use crate::support::{self, run, Ended, Output, Running};

/// The password in every URL the fuzzer writes; it must never be shown.
const SECRET: &str = "s3cretFuzzPW";

/// Longer than any run may take: a server timeout and a `-w` are at most
/// a few seconds here.
const HANG: Duration = Duration::from_secs(20);

/// xorshift64*: small, and the same sequence on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    fn bytes(&mut self, max: usize) -> Vec<u8> {
        let len = self.below(max + 1);
        (0..len).map(|_| self.next() as u8).collect()
    }

    /// Random bytes that can be an argument or a variable: no NUL.
    fn arg(&mut self, max: usize) -> OsString {
        let mut bytes = self.bytes(max);
        bytes.retain(|&b| b != 0);
        OsString::from_vec(bytes)
    }
}

fn seed() -> u64 {
    std::env::var("REDLOCK_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_2026)
}

fn cases(default: usize) -> usize {
    std::env::var("REDLOCK_FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

const SUBCOMMANDS: &[&str] = &[
    "acquire", "release", "extend", "status", "list", "exec", "help", "generate", "watchdog",
    "nope", "",
];

const FLAGS: &[&str] = &[
    "-n",
    "-w",
    "--wait",
    "--ttl",
    "-E",
    "--conflict-exit-code",
    "--json",
    "-q",
    "-v",
    "--force",
    "--any-key",
    "--if-token",
    "--hex",
    "-s",
    "--server",
    "--server-timeout",
    "--restart-guard",
    "--prefix",
    "--servers-file",
    "--config-file",
    "-m",
    "--message",
    "-c",
    "--signal",
    "--kill-after",
    "--tls-ca-cert",
    "--",
    "-h",
    "--version",
];

const VALUES: &[&str] = &[
    "0",
    "1",
    "-5",
    "-5s",
    "1ms",
    "250ms",
    "30s",
    "2.5",
    ".5",
    "1e400",
    "NaN",
    "inf",
    "365d",
    "366d",
    "99999999999999999999",
    "3074457345618258688",
    "18446744073709551615",
    "abc",
    "10 parsecs",
    "TERM",
    "KILL",
    "STOP",
    "SIGINT",
    "0x10",
    "*",
    "*[",
    "[",
    "\\",
    "name",
    "exec:",
    "true",
    "sh",
    "/nonexistent",
    "616d62ff",
    "zz",
    "/dev/null",
    "/etc/passwd",
    "-",
];

/// A URL with the secret, in one of the forms users write.
fn url(rng: &mut Rng) -> String {
    let forms = [
        format!("redis://:{SECRET}@127.0.0.1:1"),
        format!("redis://user:{SECRET}@127.0.0.1:1/0"),
        format!("rediss://:{SECRET}@127.0.0.1:1"),
        format!("user:{SECRET}@127.0.0.1:1"),
        format!("redis+unix:///nonexistent.sock?pass={SECRET}"),
        format!("redis://:{SECRET}@127.0.0.1:1,127.0.0.1:2"),
        format!("redis://:{SECRET}@[::1"),
        format!("redis://:{SECRET}@127.0.0.1:99999"),
        format!("redis://:{SECRET}@127.0.0.1:1/-1"),
        format!("redis://:{SECRET}"),
    ];
    rng.pick(&forms).clone()
}

/// One or two arguments: a flag, a value, random bytes, or a server URL
/// where URLs go (the password may only ever be in a server's URL: a name
/// or a prefix that holds it is shown as it is, as it should be).
fn words(rng: &mut Rng) -> Vec<OsString> {
    match rng.below(10) {
        0..=3 => vec![rng.pick(FLAGS).into()],
        4..=6 => vec![rng.pick(VALUES).into()],
        7 => vec![rng.pick(&["-s", "--server"]).into(), url(rng).into()],
        8 => vec![rng.arg(12)],
        _ => vec![format!("{}{}", rng.pick(FLAGS), rng.pick(VALUES)).into()],
    }
}

/// A random command line; any waiting is bounded, so that a run that takes
/// long is a hang, not a wait that was asked for.
fn argv(rng: &mut Rng) -> Vec<OsString> {
    let mut argv: Vec<OsString> = (0..rng.below(3)).flat_map(|_| words(rng)).collect();
    let sub = *rng.pick(SUBCOMMANDS);
    argv.push(sub.into());
    if matches!(sub, "acquire" | "exec") {
        argv.extend(["-w".into(), "300ms".into()]);
    }
    argv.extend((0..rng.below(6)).flat_map(|_| words(rng)));
    argv
}

/// A random environment of REDLOCK_* settings.
fn environment(rng: &mut Rng) -> Vec<(&'static str, OsString)> {
    let names = [
        "REDLOCK_SERVERS",
        "REDLOCK_SERVER_TIMEOUT",
        "REDLOCK_RESTART_GUARD",
        "REDLOCK_WAKEUPS",
        "REDLOCK_TOKEN",
        "REDLOCK_PREFIX",
        "REDLOCK_SERVERS_FILE",
        "REDLOCK_CONFIG_FILE",
        "REDLOCK_NAME",
    ];
    let mut env = vec![("REDLOCK_SERVERS", url(rng).into())];
    for _ in 0..rng.below(4) {
        let value = match rng.below(2) {
            0 => rng.pick(VALUES).into(),
            _ => rng.arg(10),
        };
        env.push((*rng.pick(&names), value));
    }
    env
}

/// Runs one case and checks the three rules.
#[track_caller]
fn check(cmd: &mut Command, case: &str) -> Output {
    let out = Running::spawn(
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    )
    .finish_or_explain(HANG, || format!("hung: {case}"));
    // A panic is exit 101 (or an abort); nothing here sends a signal.
    assert!(
        matches!(out.ended, Ended::Code(code) if code != 101),
        "panicked or killed ({}): {case}\n{}",
        out.ended,
        out.stderr
    );
    assert!(
        !out.stderr.contains("panicked"),
        "panicked: {case}\n{}",
        out.stderr
    );
    for stream in [&out.stdout, &out.stderr] {
        assert!(
            !stream.contains(SECRET),
            "the password was shown: {case}\n{stream}"
        );
    }
    out
}

#[test]
fn random_command_lines_and_environments() {
    let seed = seed();
    let mut rng = Rng(seed);
    for case in 0..cases(300) {
        let argv = argv(&mut rng);
        let env = environment(&mut rng);
        let mut cmd = support::redlock();
        cmd.args(&argv).env_remove("REDLOCK_RESTART_GUARD");
        for (name, value) in &env {
            cmd.env(name, value);
        }
        check(
            &mut cmd,
            &format!("seed {seed} case {case}: {argv:?} with {env:?}"),
        );
    }
}

/// One random RESP value, sometimes malformed.
fn resp(rng: &mut Rng, depth: usize) -> Vec<u8> {
    let pick = if depth > 2 {
        rng.below(6)
    } else {
        rng.below(9)
    };
    match pick {
        0 => b"+OK\r\n".to_vec(),
        1 => b"-ERR no \x1b[2J\r\n".to_vec(),
        2 => format!(":{}\r\n", rng.next() as i64).into_bytes(),
        3 => {
            let body = rng.bytes(20);
            [
                format!("${}\r\n", body.len()).into_bytes(),
                body,
                b"\r\n".to_vec(),
            ]
            .concat()
        }
        4 => b"$-1\r\n".to_vec(),
        5 => [rng.bytes(16), b"\r\n".to_vec()].concat(),
        6 => format!("${}\r\nshort\r\n", 1 + rng.below(1 << 20)).into_bytes(),
        _ => {
            let n = rng.below(7);
            let mut value = format!("*{n}\r\n").into_bytes();
            for _ in 0..n {
                value.extend(resp(rng, depth + 1));
            }
            value
        }
    }
}

#[test]
fn random_server_replies() {
    let seed = seed();
    let mut rng = Rng(seed);
    let commands: &[&[&str]] = &[
        &["status", "x"],
        &["status", "--json", "x"],
        &["acquire", "-n", "x"],
        &["list"],
        &["list", "--json"],
        &["release", "--force", "x"],
        &["release", "x", "tok"],
        &["extend", "x", "tok"],
    ];
    for case in 0..cases(120) {
        let reply = resp(&mut rng, 0);
        let server = FakeServer::answering(reply.clone());
        let args = *rng.pick(commands);
        let mut cmd = support::redlock();
        cmd.env(
            "REDLOCK_SERVERS",
            server
                .url()
                .replace("redis://", &format!("redis://:{SECRET}@")),
        )
        .args(["--server-timeout", "200ms"])
        .args(args);
        let what = format!(
            "seed {seed} case {case}: {args:?} answered {:?}",
            String::from_utf8_lossy(&reply)
        );
        check(&mut cmd, &what);
    }
}

// ---------------------------------------------------------------------------
// No name reaches another's keys
// ---------------------------------------------------------------------------

/// What random names are made of: words, the words redlock keeps beside a
/// lock after a NUL (and a NUL alone), the same words without it, hash
/// tags, a semaphore's slots, glob characters and bytes that are not UTF-8.
const PIECES: &[&[u8]] = &[
    b"job",
    b"a",
    b"\0holder",
    b"\0fence",
    b"\0readers",
    b"\0reader-records",
    b"\0line",
    b"\0broken",
    b"\0guard",
    b"\0",
    b"holder",
    b"fence",
    b"{t}",
    b"#0",
    b"#1",
    b"*",
    b"?",
    b"\xff",
    b":",
];

/// Who a key belongs to: the key up to its first NUL. A lock's key is its
/// own; every key redlock keeps beside it is that key, a NUL and a word;
/// a restart guard's marker is a prefix (or a hash tag's key), a NUL and
/// `guard`, and belongs to no lock.
fn owner(key: &[u8]) -> &[u8] {
    key.split(|&b| b == 0).next().unwrap_or_default()
}

/// One random command on the name `name` (its bytes in hex with `--hex`
/// when they hold NUL, else as they are): its argv, and the keys of the
/// locks it may change (the lock's, or a semaphore's slots').
fn command_on(rng: &mut Rng, name: &[u8], tokens: &[String]) -> (Vec<OsString>, Vec<Vec<u8>>) {
    let prefix = *rng.pick(&["", "p:", "{t}"]);
    let mut argv: Vec<OsString> = vec!["--prefix".into(), prefix.into()];
    let token = match rng.below(3) {
        0 => "0123456789abcdef0123456789abcdef".to_owned(),
        _ => rng.pick(tokens).clone(),
    };
    let limit = rng.below(4) == 0;
    let words: Vec<&str> = match rng.below(6) {
        0 | 1 => {
            let mut words = vec!["acquire", "-n", "--ttl", "3600s"];
            match (limit, rng.below(3)) {
                (true, _) => words.extend(["--limit", "2"]),
                (false, 0) => words.push("--fence"),
                (false, 1) => words.push("--shared"),
                _ => {}
            }
            words
        }
        2 => match rng.below(3) {
            0 => vec!["release", "--force", "--any-key"],
            1 => vec!["release", "--force", "--if-token", &token],
            _ => vec!["release", "--force"],
        },
        3 if limit => vec!["release", "--limit", "2"],
        3 => vec!["release"],
        4 => vec!["extend", "--ttl", "3600s"],
        _ if limit => vec!["status", "--limit", "2"],
        _ => vec!["status"],
    };
    argv.extend(words.iter().map(OsString::from));
    if name.contains(&0) || rng.below(2) == 0 {
        let hex: String = name.iter().map(|b| format!("{b:02x}")).collect();
        argv.extend(["--hex".into(), hex.into()]);
    } else {
        argv.push(OsString::from_vec(name.to_vec()));
    }
    if matches!(words[0], "release" | "extend") && words.get(1) != Some(&"--force") {
        argv.push(token.into());
    }
    let key = [prefix.as_bytes(), name].concat();
    let mut own = vec![key.clone()];
    if limit {
        own.extend((0..2).map(|i| [key.as_slice(), format!("#{i}").as_bytes()].concat()));
    }
    (argv, own)
}

/// The property: whatever command runs on a name A (random names of the
/// pieces above, given as they are or in hex, under a random prefix), the
/// only keys that change are A's own (its lock's, and what redlock keeps
/// beside it), never another name's or a restart guard's marker; and a
/// name holding NUL is refused (64) and changes nothing at all. Every
/// lock lives an hour, so that nothing expires during a run.
#[test]
fn no_command_on_one_name_changes_another_names_keys() {
    use crate::names::{busy_fleet, changed, snapshot};
    let seed = seed();
    let mut rng = Rng(seed);
    let (cluster, job) = busy_fleet();
    for server in &cluster.servers {
        for marker in [&b"p:\0guard"[..], b"{t}\0guard", b"job\0guard"] {
            server.set(marker, b"a marker");
        }
    }
    let mut tokens = vec![job];
    let (mut refused, mut changes) = (0, 0);
    for case in 0..cases(150) {
        let pieces = 1 + rng.below(3);
        let name: Vec<u8> = (0..pieces)
            .flat_map(|_| *rng.pick(PIECES))
            .copied()
            .collect();
        let (argv, own) = command_on(&mut rng, &name, &tokens);
        let before = snapshot(&cluster);
        let out = run(cluster.redlock().args(&argv));
        let what = format!("seed {seed} case {case}: {argv:?}");
        assert_no_panic(&out, &what);
        if let Some(token) = out.stdout.split_whitespace().next() {
            tokens.push(token.to_owned());
        }
        let touched = changed(&before, &snapshot(&cluster));
        for key in &touched {
            assert!(
                own.iter().any(|own| owner(key) == own.as_slice()),
                "{what} changed {:?}, not its own\n{}",
                String::from_utf8_lossy(key),
                out.stderr
            );
        }
        if name.contains(&0) {
            out.assert_code(64, &what);
            assert!(touched.is_empty(), "{what} changed {touched:?}");
            refused += 1;
        }
        changes += usize::from(!touched.is_empty());
    }
    // Not vacuous: names with NUL came up, and commands changed keys.
    assert!(
        refused > 0 && changes > 0,
        "seed {seed}: {refused} {changes}"
    );
}
