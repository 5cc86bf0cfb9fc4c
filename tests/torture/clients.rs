//! The clients: each a thread that runs `redlock exec` processes one after
//! another against the one lock, and records when each returned and how.

use std::fs::OpenOptions;
use std::os::unix::process::ExitStatusExt as _;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use crate::history::{now_ns, Mode};
use crate::rig::{duration_value, Ctx, Guard, LOCK};
use crate::rng::Rng;
use crate::support::{self, Running};

/// Every lock of the torture has this TTL: short, so that expiry, extension
/// (every 500ms) and the stop schedule all happen many times a scenario.
pub const TTL: Duration = Duration::from_millis(1500);
/// How long `exec` sleeps between taking the lock and spawning the section
/// where a scenario widens that window (`REDLOCK_TEST_PAUSE_BEFORE_SPAWN_MS`,
/// read by debug builds): far shorter than the TTL, so that it changes
/// nothing by itself, and long enough for the harness to find an `exec` in
/// the window through the holder record and freeze it there.
pub const SPAWN_WINDOW: Duration = Duration::from_millis(200);
/// How often a client looks whether its `exec` returned: the resolution of
/// the `return` stamps.
const POLL: Duration = Duration::from_millis(5);
/// `--limit` of the clients in [`Mode::Slot`]: the semaphore's K.
pub const SLOTS: u32 = 3;
/// A client does not start an `exec` that would wait for less than this.
const MIN_WAIT: Duration = Duration::from_millis(100);
/// The last `--serial` given to an `exec --cancel-in-progress`: every
/// launch takes the next, so a later launch is always newer.
static SERIAL: AtomicU64 = AtomicU64::new(0);

/// One run of the section by one client.
pub struct Launch {
    pub client: u32,
    pub seq: u32,
    pub section: Duration,
    pub mode: Mode,
    pub ttl: Duration,
    /// `-w`: how long `exec` may queue for the lock.
    pub wait: Duration,
    /// `REDLOCK_TEST_PAUSE_BEFORE_SPAWN_MS`, to widen the window between
    /// taking the lock and spawning the section.
    pub spawn_pause: Option<Duration>,
    /// The section ignores SIGTERM and ends only at SIGKILL: it takes the
    /// whole grace period `exec`'s stop plan gives it.
    pub slow_stop: bool,
    /// `FAKETIME` for libfaketime (`+1h`), or `None` for the true clock.
    pub clock_shift: Option<&'static str>,
    /// `--once-per` PERIOD, or `None` for a plain run.
    pub once: Option<Duration>,
    /// A test hook (`REDLOCK_TEST_...`) set to 1 for `exec`, to defeat it
    /// on purpose in a control scenario.
    pub hook: Option<&'static str>,
}

/// The script of a client that holds the lock with `acquire --while $$`:
/// the README's recipe, with the section as the job. `$R` is redlock.
const KEPT_SCRIPT: &str = r#"tok=$("$R" acquire --ttl "$TTL" -w "$WAIT" --while $$ "$LOCK") || exit $?
trap '"$R" release "$LOCK" "$tok" || exit $?' EXIT
"$@""#;

/// The `exec` a client runs now, for the faults that freeze it.
#[derive(Clone, Copy)]
pub struct Active {
    pub seq: u32,
    pub pid: i32,
    pub section: Duration,
    /// When the client spawned it: the oldest `exec` that waits is first
    /// in the line of waiters.
    pub spawned: Instant,
    /// Its `--ttl`.
    pub ttl: Duration,
}

/// One slot per client. A client reaps its `exec` only while holding its
/// slot, so whoever holds the slot may signal the pid in it: it cannot have
/// been reused.
pub struct Slots(Vec<Mutex<Option<Active>>>);

impl Slots {
    pub fn new(clients: usize) -> Slots {
        Slots((0..clients).map(|_| Mutex::new(None)).collect())
    }

    /// How many clients there are.
    pub fn len(&self) -> u32 {
        self.0.len() as u32
    }

    pub fn lock(&self, client: u32) -> MutexGuard<'_, Option<Active>> {
        self.0[client as usize]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// How long the sections of a scenario are.
#[derive(Clone, Copy)]
pub enum Lengths {
    /// Half short, half longer than a third of the TTL so that `exec`
    /// extends the lock, and none longer than 1s: a holder then spans at
    /// most two of the restarts that come 1.5s apart, and keeps a majority
    /// even on a binary without the restart guard.
    Bounded,
    /// Like `Bounded`, and a third far longer than the TTL: sections that
    /// must be cut short when their `exec` is frozen or cannot extend.
    WithOverruns,
    /// Long enough that clients without a lock surely overlap.
    Overlapping,
    /// 20-200ms: many hand-offs in a short run.
    Short,
    /// 3-7s: every holder is extended, and spans a fault or two.
    Spanning,
    /// 100-600ms: the readers of `shared`, long enough that six of them
    /// keep the lock held by some reader almost all the time, so that only
    /// writer preference lets a writer in; at most 600ms, a term of the
    /// writers' wait bound (`checks::MAX_WRITER_WAIT`).
    Reading,
}

impl Lengths {
    pub fn draw(self, rng: &mut Rng) -> Duration {
        match self {
            Lengths::Overlapping => rng.millis(300, 1000),
            Lengths::Short => rng.millis(20, 200),
            Lengths::Spanning => rng.millis(3000, 7000),
            Lengths::Reading => rng.millis(100, 600),
            Lengths::WithOverruns if rng.chance(1, 3) => rng.millis(2000, 3000),
            Lengths::Bounded | Lengths::WithOverruns if rng.chance(1, 2) => rng.millis(20, 400),
            Lengths::Bounded | Lengths::WithOverruns => rng.millis(550, 1000),
        }
    }
}

/// What one client thread does.
pub struct Plan {
    pub client: u32,
    pub rng: Rng,
    pub lengths: Lengths,
    pub mode: Mode,
    /// `--ttl` of every `exec`.
    pub ttl: Duration,
    pub clock_shift: Option<&'static str>,
    /// The length of the first section, instead of a random one.
    pub first_section: Option<Duration>,
    /// See [`Launch::spawn_pause`].
    pub spawn_pause: Option<Duration>,
    /// See [`Launch::slow_stop`].
    pub slow_stop: bool,
    /// A pause between runs, drawn from this range in ms; `None`: the next
    /// run starts as soon as one returns.
    pub think: Option<(u64, u64)>,
    /// See [`Launch::once`].
    pub once: Option<Duration>,
    /// See [`Launch::hook`].
    pub hook: Option<&'static str>,
}

/// Runs sections until `until`, each `exec` queueing (`-w`) at most until
/// then. Returns how many it started.
pub fn client_loop(ctx: &Ctx, slots: &Slots, mut plan: Plan, until: Instant) -> u32 {
    let mut seq = 0;
    loop {
        let wait = until.saturating_duration_since(Instant::now());
        if wait < MIN_WAIT {
            return seq;
        }
        seq += 1;
        let section = match plan.first_section.take() {
            Some(length) => length,
            None => plan.lengths.draw(&mut plan.rng),
        };
        let launch = Launch {
            client: plan.client,
            seq,
            section,
            mode: plan.mode,
            ttl: plan.ttl,
            wait,
            spawn_pause: plan.spawn_pause,
            slow_stop: plan.slow_stop,
            clock_shift: plan.clock_shift,
            once: plan.once,
            hook: plan.hook,
        };
        run_one(ctx, slots, &launch);
        if let Some((least, most)) = plan.think {
            let pause = plan.rng.millis(least, most);
            thread::sleep(pause.min(until.saturating_duration_since(Instant::now())));
        }
    }
}

/// Runs one section as `launch` says, and records its start and return.
/// Returns the exit status (128+N for signal N).
pub fn run_one(ctx: &Ctx, slots: &Slots, launch: &Launch) -> i32 {
    let mut command = command(ctx, launch);
    ctx.history.start(launch.client, launch.seq, launch.mode);
    let mut running = Running::spawn(&mut command);
    *slots.lock(launch.client) = Some(Active {
        seq: launch.seq,
        pid: running.id() as i32,
        section: launch.section,
        spawned: Instant::now(),
        ttl: launch.ttl,
    });
    // Far beyond any healthy run: the wait, a frozen exec, the section.
    let limit = Instant::now() + launch.wait + launch.section + Duration::from_secs(30);
    let (at, status) = loop {
        let mut slot = slots.lock(launch.client);
        match running.try_wait() {
            Ok(Some(status)) => {
                *slot = None;
                break (now_ns(), code(status));
            }
            Ok(None) if Instant::now() > limit => {
                let _ = running.kill();
                *slot = None;
                break (
                    now_ns(),
                    code(running.wait().expect("a killed child is reaped")),
                );
            }
            Ok(None) => {}
            Err(e) => panic!("cannot wait for client {}'s exec: {e}", launch.client),
        }
        drop(slot);
        thread::sleep(POLL);
    };
    ctx.history.returned(launch.client, launch.seq, at, status);
    status
}

fn command(ctx: &Ctx, launch: &Launch) -> Command {
    let mut section_args: Vec<std::ffi::OsString> = vec![
        ctx.history.path().as_os_str().to_owned(),
        ctx.bookkeeping.clone().into(),
        ctx.witness.as_os_str().to_owned(),
        launch.client.to_string().into(),
        launch.seq.to_string().into(),
        launch.section.as_millis().to_string().into(),
    ];
    if launch.slow_stop {
        section_args.push("slow-stop".into());
    } else if launch.mode == Mode::Kept {
        // A script's job cleans up before it ends: the keeper's signal must
        // come early enough for that.
        section_args.push("graceful-stop".into());
    }
    if launch.mode.shares() {
        section_args.push("sharing".into());
    }
    let mut command = if launch.mode == Mode::Unlocked {
        Command::new(&ctx.section)
    } else if launch.mode == Mode::Kept {
        kept_script(ctx, launch)
    } else {
        let mut exec = support::redlock_at(&ctx.redlock);
        // Every client names its servers: a build may refuse to run
        // without any configured.
        exec.env("REDLOCK_SERVERS", &ctx.servers);
        with_guard(&mut exec, ctx);
        exec.arg("exec");
        match launch.mode {
            _ if ctx.fence => exec.arg("--fence"),
            Mode::Shared => exec.arg("--shared"),
            Mode::Slot => exec.args(["--limit", &SLOTS.to_string()]),
            Mode::Cancellable => {
                let serial = SERIAL.fetch_add(1, Ordering::SeqCst) + 1;
                exec.args(["--cancel-in-progress", "--serial", &serial.to_string()])
            }
            _ => &mut exec,
        };
        if let Some(period) = launch.once {
            exec.args(["--once-per", &duration_value(period)]);
        }
        if let Some(hook) = launch.hook {
            exec.env(hook, "1");
        }
        exec.args(["--ttl", &duration_value(launch.ttl)])
            .args(["-w", &format!("{}ms", launch.wait.as_millis()), LOCK, "--"])
            .arg(&ctx.section);
        if let Some(pause) = launch.spawn_pause {
            let pause = pause.as_millis().to_string();
            exec.env("REDLOCK_TEST_PAUSE_BEFORE_SPAWN_MS", pause);
        }
        if let (Some(shift), Some(library)) = (launch.clock_shift, &ctx.faketime) {
            with_clock_shift(&mut exec, library, shift);
        }
        exec
    };
    let log = ctx.logs.join(format!("client-{}.log", launch.client));
    let log = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log)
        .unwrap_or_else(|e| panic!("cannot open {}: {e}", log.display()));
    let log_too = log.try_clone().expect("a log file handle can be cloned");
    command
        .args(section_args)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_too);
    command
}

/// `bash` running [`KEPT_SCRIPT`] for `launch`; the section and its
/// arguments follow.
fn kept_script(ctx: &Ctx, launch: &Launch) -> Command {
    let mut bash = support::redlock_at(std::path::Path::new("bash"));
    bash.env("REDLOCK_SERVERS", &ctx.servers)
        .env("R", &ctx.redlock)
        .env("TTL", duration_value(launch.ttl))
        .env("WAIT", format!("{}ms", launch.wait.as_millis()))
        .env("LOCK", LOCK);
    with_guard(&mut bash, ctx);
    bash.args(["-c", KEPT_SCRIPT, "bash"]).arg(&ctx.section);
    bash
}

/// Runs `command` (and what it starts) with the wall clock shifted by
/// `shift`, and every monotonic clock left true: redlock must not care.
pub fn with_clock_shift(command: &mut Command, library: &std::path::Path, shift: &str) {
    command
        .env("LD_PRELOAD", library)
        .env("FAKETIME", shift)
        .env("FAKETIME_DONT_FAKE_MONOTONIC", "1");
}

/// Gives `exec` the scenario's restart guard. The guard goes by its
/// variable, not `--restart-guard`: a binary without the guard rejects an
/// unknown option but ignores a variable. `0` turns it off, as documented.
/// Under [`Guard::ConfigFile`] no variable is set at all, and the clients'
/// `XDG_CONFIG_HOME` holds the file.
fn with_guard(exec: &mut Command, ctx: &Ctx) {
    match ctx.guard {
        Guard::Off => {
            exec.env("REDLOCK_RESTART_GUARD", "0");
        }
        Guard::Env(guard) => {
            exec.env("REDLOCK_RESTART_GUARD", duration_value(guard));
        }
        Guard::ConfigFile(_) => {
            exec.env_remove("REDLOCK_RESTART_GUARD");
        }
    }
    if let Some(home) = &ctx.config_home {
        exec.env("XDG_CONFIG_HOME", home);
    }
}

/// The exit code, or 128+N for a process killed by signal N.
fn code(status: ExitStatus) -> i32 {
    status
        .code()
        .or_else(|| status.signal().map(|signal| 128 + signal))
        .expect("a finished process has a code or a signal")
}
