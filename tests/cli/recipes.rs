//! The recipes of README.md (cron, GitHub Actions, GitLab CI, systemd, a
//! runbook) and the guide's setup once per build, run as each system would
//! run them: the shell part of each, taken from the document as printed,
//! with the environment that system sets (cron's near-empty one, the CI's
//! job variables, a unit's `Environment=`), against real servers. Only
//! paths and the CI's expressions are changed: `/usr/local/bin/…` and
//! `/etc/redlock/servers` point into a temporary directory, the CI recipes
//! download the release from a copy served on 127.0.0.1, and
//! `${{ github.run_number }}` is each pipeline's number.

use std::fs;
use std::io::{BufRead as _, BufReader, Write as _};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::support::{run, temp_dir, wait_until, Cluster, Output, Running};

const LIMIT: Duration = Duration::from_secs(60);

/// Every fenced code block under the line `heading` of README.md, up to the
/// next heading of the same or a higher level. Panics if there is none.
fn code_blocks(heading: &str) -> Vec<String> {
    code_blocks_in("README.md", heading)
}

/// Every fenced code block under the line `heading` of `document` (a path
/// from the root of the project), up to the next heading of the same or a
/// higher level. Panics if there is none.
pub(crate) fn code_blocks_in(document: &str, heading: &str) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(document);
    let readme = fs::read_to_string(path).unwrap();
    let level = heading.chars().take_while(|c| *c == '#').count();
    let mut lines = readme.lines().skip_while(|line| *line != heading);
    assert!(lines.next().is_some(), "{document} has no line {heading:?}");
    let (mut blocks, mut current): (Vec<String>, Option<String>) = (Vec::new(), None);
    for line in lines {
        match current.as_mut() {
            Some(block) if line.starts_with("```") => {
                blocks.push(std::mem::take(block));
                current = None;
            }
            Some(block) => {
                block.push_str(line);
                block.push('\n');
            }
            None if line.starts_with("```") => current = Some(String::new()),
            None => {
                let hashes = line.chars().take_while(|c| *c == '#').count();
                if hashes > 0 && hashes <= level && line[hashes..].starts_with(' ') {
                    break;
                }
            }
        }
    }
    assert!(!blocks.is_empty(), "no code block under {heading:?}");
    blocks
}

/// The directory of the binary under test, to put first on a PATH.
fn bin_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_redlock"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// A temporary directory with executable jobs in it.
struct Place(tempfile::TempDir);

impl Place {
    fn new() -> Self {
        Place(temp_dir("redlock-test-recipes-"))
    }

    fn path(&self) -> &Path {
        self.0.path()
    }

    fn join(&self, name: &str) -> String {
        self.path().join(name).display().to_string()
    }

    /// An executable `NAME` that runs `body` with `sh`, written by a child
    /// process (see readme.rs: "Text file busy").
    fn job(&self, name: &str, body: &str) -> String {
        let file = self.join(name);
        let status = Command::new("sh")
            .args(["-c", r#"printf '%s\n' "$2" > "$1" && chmod 755 "$1""#, "sh"])
            .arg(&file)
            .arg(format!("#!/bin/sh\n{body}"))
            .status()
            .unwrap();
        assert!(status.success(), "cannot write {file}");
        file
    }

    /// A servers file for `cluster`, owner-only as the README says.
    fn servers_file(&self, cluster: &Cluster, relative: &str) -> String {
        let file = self.path().join(relative);
        fs::create_dir_all(file.parent().unwrap()).unwrap();
        fs::write(&file, cluster.urls().join("\n") + "\n").unwrap();
        fs::set_permissions(&file, fs::Permissions::from_mode(0o600)).unwrap();
        file.display().to_string()
    }

    fn read(&self, name: &str) -> String {
        fs::read_to_string(self.path().join(name)).unwrap_or_default()
    }
}

/// `program args…` in `dir` with exactly `env` (and nothing inherited), in
/// a session of its own, as a scheduler or a CI runner starts a job. The
/// servers were started a moment ago, so the restart guard is off, as in
/// every test.
fn spawn_clean(dir: &Path, env: &[(&str, String)], program: &str, args: &[&str]) -> Running {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(dir)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .env("REDLOCK_RESTART_GUARD", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    unsafe_setsid(&mut cmd);
    Running::spawn(&mut cmd)
}

fn unsafe_setsid(cmd: &mut Command) {
    use std::os::unix::process::CommandExt as _;
    // SAFETY: setsid is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            nix::unistd::setsid().map_err(std::io::Error::from)?;
            Ok(())
        });
    }
}

/// PATH with the binary under test first, then the system's.
fn path_with(rest: &str) -> String {
    format!("{}:{rest}", bin_dir().display())
}

/// A job that records when it ran, what lock it ran under (`exec` tells it
/// in REDLOCK_NAME; a runbook's step is told `db-failover`) and what
/// `status --json` said of its holder while it ran.
fn recording_job(place: &Place, name: &str, log: &str) -> String {
    place.job(
        name,
        &format!(
            "lock=${{REDLOCK_NAME:-db-failover}}\n\
             echo \"start $(date +%s%N) $lock\" >> {log}\n\
             redlock status --json \"$lock\" > {log}.status.$$\n\
             sleep 1\n\
             echo \"end $(date +%s%N)\" >> {log}",
            log = place.join(log)
        ),
    )
}

/// The (start, end) nanosecond pairs a recording job logged.
fn intervals(log: &str) -> Vec<(u128, u128)> {
    let times: Vec<u128> = log
        .lines()
        .map(|line| line.split(' ').nth(1).unwrap().parse().unwrap())
        .collect();
    times.chunks(2).map(|pair| (pair[0], pair[1])).collect()
}

fn holder_json(place: &Place, log: &str) -> Vec<serde_json::Value> {
    fs::read_dir(place.path())
        .unwrap()
        .filter_map(|entry| {
            let name = entry.unwrap().file_name().into_string().unwrap();
            name.starts_with(&format!("{log}.status."))
                .then(|| serde_json::from_str(&place.read(&name)).unwrap())
        })
        .collect()
}

#[test]
fn cron_recipe_runs_the_job_once_a_day_across_hosts_and_mails_nothing() {
    let cluster = Cluster::start(3);
    let place = Place::new();
    let block = &code_blocks("### Run a cron job only once across hosts")[0];
    let path_line = block.lines().find_map(|l| l.strip_prefix("PATH=")).unwrap();
    let entry = block.lines().find(|l| l.starts_with("0 3 * * *")).unwrap();
    // cron: the five time fields, then the command, with `\%` meaning `%`.
    let command: String = entry
        .split_whitespace()
        .skip(5)
        .collect::<Vec<_>>()
        .join(" ");
    let backup = recording_job(&place, "backup", "log");
    let command = command
        .replace("\\%", "%")
        .replace("/usr/local/bin/backup", &backup);
    // The user's servers file, found through HOME as cron sets it.
    place.servers_file(&cluster, ".config/redlock/servers");
    let env = [
        ("HOME", place.path().display().to_string()),
        ("LOGNAME", "root".to_owned()),
        ("SHELL", "/bin/sh".to_owned()),
        ("PATH", path_with(path_line)),
    ];
    // The hosts' crons fire seconds apart: the second while the first
    // runs the 1 s backup, the third after it is over.
    let hosts: Vec<Running> = [0, 400, 2500]
        .iter()
        .scan(0, |fired, at| {
            std::thread::sleep(Duration::from_millis(at - *fired));
            *fired = *at;
            Some(spawn_clean(
                place.path(),
                &env,
                "/bin/sh",
                &["-c", &command],
            ))
        })
        .collect();
    for host in hosts {
        let out = host.finish(LIMIT);
        out.assert_code(0, "every host's cron job exits 0");
        assert_eq!(out.stderr, "", "cron mails nothing");
    }
    let log = place.read("log");
    assert_eq!(intervals(&log).len(), 1, "one host ran it: {log}");
    let out = run(cluster
        .redlock()
        .args(["--json", "status", "nightly-backup"]));
    let status: serde_json::Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!(
        status["done"]["status"], 0,
        "the day is marked done: {status}"
    );
    // The next fire of the day, on any host, skips it too.
    let out = spawn_clean(place.path(), &env, "/bin/sh", &["-c", &command]).finish(LIMIT);
    out.assert_code(0, "a later fire");
    assert_eq!(intervals(&place.read("log")).len(), 1, "still once");
}

/// A deploy that logs `start RUN` (and what `status --json` said of its
/// holder), runs for `$DEPLOY_SECONDS`, then logs `end RUN`; on SIGTERM
/// it logs `stopped RUN`. RUN is the CI's run number or pipeline IID.
fn deploy_job(place: &Place) {
    place.job(
        "deploy.sh",
        &format!(
            "run=$GITHUB_RUN_NUMBER$CI_PIPELINE_IID\n\
             trap 'kill $!; echo \"stopped $run\" >> {log}; exit 143' TERM\n\
             echo \"start $run\" >> {log}\n\
             redlock status --json deploy-staging > {log}.status.$run\n\
             sleep \"$DEPLOY_SECONDS\" & wait\n\
             echo \"end $run\" >> {log}",
            log = place.join("log")
        ),
    );
}

/// What the three pipelines of [`newer_pipelines_cancel_older_ones`] did.
struct ThreeRuns {
    /// Serial 9: running when 10 arrives, so stopped.
    running: Output,
    /// Serial 6: a re-run of an old pipeline, waiting behind 9 when 10
    /// arrives, so superseded.
    rerun: Output,
    /// Serial 10: runs after 9 stopped.
    newest: Output,
}

/// Runs a CI recipe's deploy step three times, as pipelines with serials 9,
/// 6 and 10 arriving in that order, each once the one before it holds the
/// lock or waits for it: `script(serial)` is the step, `env(serial)` the
/// job's variables. Checks what the log of [`deploy_job`] says: 9 started,
/// was stopped, and only then 10 ran; 6 never ran.
fn newer_pipelines_cancel_older_ones(
    place: &Place,
    cluster: &Cluster,
    shell: &[&str],
    script: impl Fn(u64) -> String,
    env: impl Fn(u64) -> Vec<(&'static str, String)>,
) -> ThreeRuns {
    deploy_job(place);
    let pipeline = |serial: u64, seconds: &str| {
        let file = format!("step-{serial}.sh");
        fs::write(place.path().join(&file), script(serial)).unwrap();
        let mut vars = env(serial);
        vars.push(("DEPLOY_SECONDS", seconds.to_owned()));
        let mut args = shell[1..].to_vec();
        args.push(&file);
        spawn_clean(place.path(), &vars, shell[0], &args)
    };
    let running = pipeline(9, "30");
    let log = || place.read("log");
    assert!(
        wait_until(Duration::from_secs(20), || log().contains("start 9")),
        "pipeline 9 never started: {}",
        log()
    );
    let rerun = pipeline(6, "1");
    assert!(
        wait_until(Duration::from_secs(20), || {
            let out = run(cluster
                .redlock()
                .args(["--json", "status", "deploy-staging"]));
            serde_json::from_str::<serde_json::Value>(out.stdout.trim())
                .is_ok_and(|s| s["superseding_waiter"]["serial"] == 6)
        }),
        "pipeline 6 never waited"
    );
    let newest = pipeline(10, "1");
    let runs = ThreeRuns {
        running: running.finish(LIMIT),
        rerun: rerun.finish(LIMIT),
        newest: newest.finish(LIMIT),
    };
    assert_eq!(
        log().lines().collect::<Vec<_>>(),
        ["start 9", "stopped 9", "start 10", "end 10"],
        "9 was stopped, 10 ran after it, 6 never ran"
    );
    runs
}

/// Where the CI recipes download a release from.
const RELEASES: &str = "https://github.com/redlock-cli/redlock-cli/releases/download";
/// How GitHub Actions runs a `run:` script.
const ACTIONS_SHELL: &[&str] = &["bash", "--noprofile", "--norc", "-eo", "pipefail"];
/// How a GitLab runner runs a job's lines (one shell, stopping at a failure).
const GITLAB_SHELL: &[&str] = &["bash", "-e"];

/// A copy of a release page served over HTTP on 127.0.0.1: the static
/// tarball as scripts/release packs it (a folder named as the file, with
/// the binary under test in it) and its SHA256SUMS. When `tampered`, the
/// tarball served is not the one summed, as after a download cut short.
struct ReleasePage {
    _dir: tempfile::TempDir,
    /// What stands for [`RELEASES`].
    base: String,
}

impl ReleasePage {
    fn serve(version: &str, tampered: bool) -> Self {
        let dir = temp_dir("redlock-test-release-");
        let name = format!("redlock-{version}-x86_64-linux-static");
        let mut pack = format!(
            "mkdir {name} && cp \"$1\" {name}/redlock && tar cf - {name} | gzip -1 > {name}.tar.gz && \
             rm -r {name} && sha256sum {name}.tar.gz > SHA256SUMS"
        );
        if tampered {
            pack.push_str(&format!(" && printf x >> {name}.tar.gz"));
        }
        let status = Command::new("sh")
            .args(["-c", &pack, "sh", env!("CARGO_BIN_EXE_redlock")])
            .current_dir(dir.path())
            .status()
            .unwrap();
        assert!(status.success(), "cannot pack the release: {pack}");
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let (files, prefix) = (dir.path().to_path_buf(), format!("/v{version}/"));
        std::thread::spawn(move || serve_files(&listener, &files, &prefix));
        ReleasePage {
            _dir: dir,
            base: format!("http://127.0.0.1:{port}"),
        }
    }
}

/// Answers each GET of `PREFIX/FILE` with the file of `dir`, and anything
/// else with 404, one connection at a time, as long as the process lives.
fn serve_files(listener: &TcpListener, dir: &Path, prefix: &str) {
    for stream in listener.incoming() {
        let Ok(mut stream) = stream else { continue };
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let (mut request, mut header) = (String::new(), String::new());
        if reader.read_line(&mut request).is_err() {
            continue;
        }
        while reader.read_line(&mut header).is_ok_and(|n| n > 2) {
            header.clear();
        }
        let path = request.split_whitespace().nth(1).unwrap_or_default();
        let body = path
            .strip_prefix(prefix)
            .filter(|file| !file.contains('/'))
            .and_then(|file| fs::read(dir.join(file)).ok());
        let _ = match body {
            Some(body) => write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            )
            .and_then(|()| stream.write_all(&body)),
            None => stream.write_all(
                b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            ),
        };
    }
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// The lines after `lines[at]` that are indented deeper than it, dedented.
fn nested(lines: &[&str], at: usize) -> Vec<String> {
    let body: Vec<&str> = lines[at + 1..]
        .iter()
        .take_while(|l| l.trim().is_empty() || indent(l) > indent(lines[at]))
        .copied()
        .collect();
    let strip = body.iter().map(|l| indent(l)).min().unwrap_or(0);
    body.iter()
        .map(|l| l.get(strip..).unwrap_or_default().to_owned())
        .collect()
}

/// YAML `KEY: value` lines as pairs, without the value's quotes.
fn yaml_pairs(lines: &[String]) -> Vec<(String, String)> {
    lines
        .iter()
        .filter_map(|l| l.split_once(": "))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().trim_matches('"').to_owned()))
        .collect()
}

/// A YAML key line, without a trailing comment.
fn key(line: &str) -> &str {
    let line = line.trim().trim_start_matches("- ");
    line.split_once(" #")
        .map_or(line, |(key, _)| key.trim_end())
}

/// A step of a GitHub Actions job: its `env:` and its `run:` script.
struct Step {
    env: Vec<(String, String)>,
    run: String,
}

/// The steps of a GitHub Actions snippet, in order.
fn actions_steps(yaml: &str) -> Vec<Step> {
    let lines: Vec<&str> = yaml.lines().collect();
    let mut steps: Vec<Step> = Vec::new();
    for (at, line) in lines.iter().enumerate() {
        if line.trim_start().starts_with("- ") {
            steps.push(Step {
                env: Vec::new(),
                run: String::new(),
            });
        }
        let Some(step) = steps.last_mut() else {
            continue;
        };
        match key(line) {
            "env:" => step.env = yaml_pairs(&nested(&lines, at)),
            "run: |" => step.run = nested(&lines, at).join("\n"),
            key => {
                if let Some(run) = key.strip_prefix("run: ") {
                    step.run = format!("{run}\n");
                }
            }
        }
    }
    steps
}

/// A GitLab CI job's `variables:`, and the lines of its list `name:`
/// (`before_script:`, `script:`) as one shell script.
fn gitlab_job(yaml: &str, name: &str) -> (Vec<(String, String)>, String) {
    let lines: Vec<&str> = yaml.lines().collect();
    let find = |wanted: &str| lines.iter().position(|l| key(l) == wanted);
    let variables = find("variables:").map_or_else(Vec::new, |at| yaml_pairs(&nested(&lines, at)));
    let at = find(name).unwrap_or_else(|| panic!("no {name} in\n{yaml}"));
    let script: String = nested(&lines, at)
        .iter()
        .map(|l| format!("{}\n", l.strip_prefix("- ").expect("a list item")))
        .collect();
    (variables, script)
}

/// The value of `REDLOCK_VERSION` in a recipe's variables: the release it
/// installs, which is this one (a release changes it, see CONTRIBUTING).
fn release_of(vars: &[(String, String)]) -> String {
    let version = vars
        .iter()
        .find_map(|(k, v)| (k == "REDLOCK_VERSION").then(|| v.clone()))
        .expect("REDLOCK_VERSION names the release to install");
    assert_eq!(
        version,
        env!("CARGO_PKG_VERSION"),
        "the recipe installs another release"
    );
    version
}

/// Runs a recipe's install script as printed, except that it downloads from
/// `page` and installs into `DIR/bin` without sudo (this test need not be
/// root), with `vars` and a PATH that has no redlock on it.
fn install_as_printed(
    place: &Place,
    page: &ReleasePage,
    shell: &[&str],
    script: &str,
    vars: &[(String, String)],
) -> Output {
    for from in [RELEASES, " /usr/local/bin/"] {
        assert_eq!(
            script.matches(from).count(),
            1,
            "{from:?} once in:\n{script}"
        );
    }
    let bin = place.path().join("bin");
    fs::create_dir_all(&bin).unwrap();
    let script = script
        .replace(RELEASES, &page.base)
        .replace("sudo install ", "install ")
        .replace(" /usr/local/bin/", &format!(" {}/", bin.display()));
    fs::write(place.path().join("install.sh"), script).unwrap();
    let mut env: Vec<(&str, String)> = vec![
        ("PATH", "/usr/bin:/bin".to_owned()),
        ("HOME", place.path().display().to_string()),
    ];
    env.extend(vars.iter().map(|(k, v)| (k.as_str(), v.clone())));
    let mut args = shell[1..].to_vec();
    args.push("install.sh");
    spawn_clean(place.path(), &env, shell[0], &args).finish(LIMIT)
}

/// The PATH of a CI job after its install step: what it installed, then
/// the system's (no redlock there).
fn installed_path(place: &Place) -> String {
    format!("{}:/usr/bin:/bin", place.join("bin"))
}

/// A CI recipe's install: the CI's name, its shell, its variables, the script.
type CiInstall = (
    &'static str,
    &'static [&'static str],
    Vec<(String, String)>,
    String,
);

/// The two CI recipes' install scripts and their variables.
fn ci_installs() -> Vec<CiInstall> {
    let actions = actions_steps(&code_blocks("#### GitHub Actions")[0]);
    let (variables, before) = gitlab_job(&code_blocks("#### GitLab CI")[0], "before_script:");
    let install = &actions[0];
    vec![
        (
            "GitHub Actions",
            ACTIONS_SHELL,
            install.env.clone(),
            install.run.clone(),
        ),
        ("GitLab CI", GITLAB_SHELL, variables, before),
    ]
}

#[test]
fn ci_recipes_install_nothing_from_a_download_that_does_not_match_its_sum() {
    for (ci, shell, vars, script) in ci_installs() {
        let place = Place::new();
        let page = ReleasePage::serve(&release_of(&vars), true);
        let out = install_as_printed(&place, &page, shell, &script, &vars);
        out.assert_code(1, &format!("{ci}: sha256sum --check of a changed tarball"));
        assert!(
            out.stderr.contains("did NOT match") && out.stdout.contains(": FAILED"),
            "{ci}: sha256sum says why: {out:?}"
        );
        assert!(
            !place.path().join("bin/redlock").exists(),
            "{ci}: installed a tarball that does not match SHA256SUMS"
        );
    }
}

#[test]
fn github_actions_recipe_installs_the_release_and_a_newer_run_cancels_older_ones() {
    let cluster = Cluster::start(3);
    let place = Place::new();
    let yaml = &code_blocks("#### GitHub Actions")[0];
    let steps = actions_steps(yaml);
    assert_eq!(steps.len(), 2, "an install step, then the deploy:\n{yaml}");
    let (install, deploy) = (&steps[0], &steps[1]);
    let page = ReleasePage::serve(&release_of(&install.env), false);
    install_as_printed(&place, &page, ACTIONS_SHELL, &install.run, &install.env)
        .assert_code(0, "the install step");
    assert!(yaml.contains("REDLOCK_SERVERS: ${{ secrets.REDLOCK_SERVERS }}"));
    // Actions expands expressions before the shell sees the script.
    let script = |serial: u64| {
        deploy
            .run
            .replace("${{ github.sha }}", "4f2a9c1")
            .replace("${{ github.run_number }}", &serial.to_string())
    };
    let runs = newer_pipelines_cancel_older_ones(&place, &cluster, ACTIONS_SHELL, script, |n| {
        vec![
            ("PATH", installed_path(&place)),
            ("HOME", place.path().display().to_string()),
            ("CI", "true".into()),
            ("GITHUB_ACTIONS", "true".into()),
            ("GITHUB_SERVER_URL", "https://github.com".into()),
            ("GITHUB_REPOSITORY", "acme/shop".into()),
            ("GITHUB_RUN_ID", format!("900{n}")),
            ("GITHUB_RUN_NUMBER", n.to_string()),
            ("REDLOCK_SERVERS", cluster.servers_arg()),
        ]
    });
    // Exit 81 becomes a step that succeeds with a notice, not a red run.
    for (out, what) in [
        (&runs.running, "the stopped run"),
        (&runs.rerun, "the superseded re-run"),
    ] {
        out.assert_code(0, what);
        assert!(
            out.stdout.contains("::notice::cancelled by a newer run"),
            "{what}: {out:?}"
        );
        assert!(
            out.stderr.contains("serial 10"),
            "names the newer run: {out:?}"
        );
    }
    runs.newest.assert_code(0, "the newest run deploys");
    assert!(
        !runs.newest.stdout.contains("::notice::"),
        "{:?}",
        runs.newest
    );
    let holder = &holder_json(&place, "log")
        .into_iter()
        .find(|h| h["holder"]["serial"] == 10)
        .unwrap()["holder"];
    assert_eq!(
        holder["job"],
        "https://github.com/acme/shop/actions/runs/90010"
    );
    assert_eq!(holder["message"], "deploy 4f2a9c1");
}

/// The exit codes of a GitLab job's `allow_failure: {exit_codes: …}`.
fn allowed_exit_codes(yaml: &str) -> Vec<i32> {
    let line = yaml
        .lines()
        .map(key)
        .find_map(|l| l.strip_prefix("allow_failure: {exit_codes: "))
        .unwrap_or_else(|| panic!("no allow_failure exit_codes in\n{yaml}"));
    line.trim_end_matches('}')
        .trim_matches(['[', ']'])
        .split(',')
        .map(|code| code.trim().parse().unwrap())
        .collect()
}

#[test]
fn gitlab_ci_recipe_installs_the_release_and_a_newer_pipeline_cancels_older_ones() {
    let cluster = Cluster::start(3);
    let place = Place::new();
    let yaml = &code_blocks("#### GitLab CI")[0];
    let (vars, before) = gitlab_job(yaml, "before_script:");
    let page = ReleasePage::serve(&release_of(&vars), false);
    install_as_printed(&place, &page, GITLAB_SHELL, &before, &vars)
        .assert_code(0, "the job's before_script");
    let (_, script) = gitlab_job(yaml, "script:");
    let runs = newer_pipelines_cancel_older_ones(
        &place,
        &cluster,
        GITLAB_SHELL,
        |_| script.clone(),
        |n| {
            vec![
                ("PATH", installed_path(&place)),
                ("HOME", place.path().display().to_string()),
                ("CI", "true".into()),
                ("GITLAB_CI", "true".into()),
                ("CI_PIPELINE_ID", format!("77{n}")),
                ("CI_PIPELINE_IID", n.to_string()),
                (
                    "CI_JOB_URL",
                    format!("https://gitlab.example.com/acme/shop/-/jobs/55{n}"),
                ),
                ("REDLOCK_SERVERS", cluster.servers_arg()),
            ]
        },
    );
    // GitLab shows a job that exits with an allowed code as a warning.
    let allowed = allowed_exit_codes(yaml);
    for (out, what) in [
        (&runs.running, "the stopped job"),
        (&runs.rerun, "the superseded re-run"),
    ] {
        out.assert_code(81, what);
        assert!(allowed.contains(&81), "{what}: 81 is not in {allowed:?}");
        assert!(
            out.stderr.contains("serial 10"),
            "names the newer pipeline: {out:?}"
        );
    }
    runs.newest.assert_code(0, "the newest pipeline deploys");
    let holder = &holder_json(&place, "log")
        .into_iter()
        .find(|h| h["holder"]["serial"] == 10)
        .unwrap()["holder"];
    assert_eq!(
        holder["job"],
        "https://gitlab.example.com/acme/shop/-/jobs/5510"
    );
    assert_eq!(holder["message"], "pipeline 7710");
}

#[test]
fn setup_once_per_build_runs_once_for_the_jobs_of_a_pipeline_and_again_for_the_next() {
    let cluster = Cluster::start(3);
    let place = Place::new();
    let yaml = &code_blocks_in("docs/guide.md", "### Setup once per build")[0];
    let (_, script) = gitlab_job(yaml, "script:");
    fs::write(place.path().join("job.sh"), &script).unwrap();
    recording_job(&place, "setup-test-db.sh", "setup");
    place.job(
        "run-tests.sh",
        &format!("echo \"tests $(date +%s%N)\" >> {}", place.join("tests")),
    );
    let job = |pipeline: &str| {
        let env = vec![
            ("PATH", path_with("/usr/bin:/bin")),
            ("HOME", place.path().display().to_string()),
            ("CI", "true".into()),
            ("GITLAB_CI", "true".into()),
            ("CI_PIPELINE_ID", pipeline.to_owned()),
            ("REDLOCK_SERVERS", cluster.servers_arg()),
        ];
        let mut args = GITLAB_SHELL[1..].to_vec();
        args.push("job.sh");
        spawn_clean(place.path(), &env, GITLAB_SHELL[0], &args)
    };
    // `parallel: 3`: three jobs of pipeline 770 at once.
    let jobs: Vec<Running> = (0..3).map(|_| job("770")).collect();
    for job in jobs {
        job.finish(LIMIT).assert_code(0, "each job of the pipeline");
    }
    let setups = intervals(&place.read("setup"));
    assert_eq!(setups.len(), 1, "the setup ran once: {setups:?}");
    let tests: Vec<u128> = place
        .read("tests")
        .lines()
        .map(|l| l.split(' ').nth(1).unwrap().parse().unwrap())
        .collect();
    assert_eq!(tests.len(), 3, "every job ran its tests");
    assert!(
        tests.iter().all(|t| *t >= setups[0].1),
        "the tests started after the setup ended: {setups:?} {tests:?}"
    );
    // The next pipeline runs it again.
    job("771")
        .finish(LIMIT)
        .assert_code(0, "pipeline 771's job");
    assert_eq!(intervals(&place.read("setup")).len(), 2, "set up again");
}

#[test]
fn systemd_recipe_makes_the_report_on_one_host_and_no_unit_fails() {
    let cluster = Cluster::start(3);
    let place = Place::new();
    let units = code_blocks("### Run a systemd timer job on one host of a fleet");
    let (service, timer) = (&units[0], &units[1]);
    assert!(service.starts_with("# /etc/systemd/system/nightly-report.service\n"));
    assert!(
        timer.starts_with("# /etc/systemd/system/nightly-report.timer\n")
            && timer.contains("\n[Timer]\nOnCalendar="),
        "the timer has the service's name, so it starts that service"
    );
    let servers = place.servers_file(&cluster, "etc/redlock/servers");
    let report = recording_job(&place, "make-report", "log");
    // The job's path is the user's; `redlock` is found by systemd (see
    // packaging::the_recipes_find_redlock_with_every_install_way), here the
    // binary under test.
    let swap = |text: &str| text.replace("/usr/local/bin/make-report", &report);
    let mut env = vec![("PATH", path_with("/usr/bin:/bin"))];
    let assignment = service
        .lines()
        .find_map(|l| l.strip_prefix("Environment="))
        .unwrap();
    assert_eq!(
        assignment.split_once('='),
        Some(("REDLOCK_SERVERS_FILE", "/etc/redlock/servers"))
    );
    env.push(("REDLOCK_SERVERS_FILE", servers));
    // systemd splits ExecStart= into words itself; no shell.
    let exec_start = swap(
        service
            .lines()
            .find_map(|l| l.strip_prefix("ExecStart="))
            .unwrap(),
    );
    let mut words: Vec<&str> = exec_start.split_whitespace().collect();
    assert_eq!(words[0], "redlock", "{exec_start}");
    words[0] = env!("CARGO_BIN_EXE_redlock");
    let hosts: Vec<Running> = (0..3)
        .map(|_| spawn_clean(place.path(), &env, words[0], &words[1..]))
        .collect();
    for host in hosts {
        let out: Output = host.finish(LIMIT);
        out.assert_code(0, "no unit fails");
    }
    assert_eq!(intervals(&place.read("log")).len(), 1, "one report");
    // `Persistent=true`: a start made up at boot, after the report was made
    // and the lock released, makes no second one.
    let late = spawn_clean(place.path(), &env, words[0], &words[1..]).finish(LIMIT);
    late.assert_code(0, "a start made up at boot");
    assert_eq!(intervals(&place.read("log")).len(), 1, "still one report");
}

#[test]
fn runbook_recipe_names_the_holder_and_breaks_a_stale_lock() {
    let cluster = Cluster::start(3);
    let place = Place::new();
    let blocks = code_blocks("### Guard a runbook step");
    let (step, force) = (&blocks[0], &blocks[1]);
    fs::write(place.path().join("step.sh"), step).unwrap();
    fs::write(place.path().join("force.sh"), force).unwrap();
    recording_job(&place, "failover.sh", "log");
    let env = vec![
        ("PATH", path_with("/usr/bin:/bin")),
        ("HOME", place.path().display().to_string()),
        ("USER", "oncall".to_owned()),
        ("REDLOCK_SERVERS", cluster.servers_arg()),
    ];
    let bash = |script: &str| spawn_clean(place.path(), &env, "bash", &[script]).finish(LIMIT);

    // Someone else is on it: the step stops at once and says who.
    let mut other = cluster.redlock();
    other.env("USER", "mallory");
    let out = run(other.args(["acquire", "-n", "-m", "restoring db1", "db-failover"]));
    out.assert_code(0, "another operator takes the lock");
    let out = bash("step.sh");
    out.assert_code(75, "busy");
    assert!(
        out.stdout.contains("held by mallory@"),
        "status shows who: {}",
        out.stdout
    );
    assert!(
        out.stderr.contains("\"restoring db1\""),
        "acquire says why: {}",
        out.stderr
    );
    assert_eq!(place.read("log"), "", "the failover did not run");

    // That operator is gone: break the lock, and the step runs.
    let out = bash("force.sh");
    out.assert_code(0, "release --force");
    assert!(
        out.stdout.contains("mallory@") || out.stderr.contains("mallory@"),
        "{out:?}"
    );
    let out = bash("step.sh");
    out.assert_code(0, "the step under the lock");
    let holders = holder_json(&place, "log");
    assert_eq!(
        holders[0]["holder"]["message"],
        "failover to db2 (INC-4242)"
    );
    assert_eq!(holders[0]["holder"]["user"], "oncall");
    let out = run(cluster.redlock().args(["status", "db-failover"]));
    out.assert_code(1, "released at the end of the step");
}
