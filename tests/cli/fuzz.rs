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

use crate::support::fake_server::FakeServer;
use crate::support::{self, Ended, Output, Running};

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
