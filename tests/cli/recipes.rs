//! The recipes of README.md (cron, GitHub Actions, GitLab CI, systemd, a
//! runbook), run as each system would run them: the shell part of each,
//! taken from the README as printed, with the environment that system sets
//! (cron's near-empty one, the CI's job variables, a unit's `Environment=`),
//! against real servers. Only paths are changed: `/usr/local/bin/…` and
//! `/etc/redlock/servers` point into a temporary directory, and the CI
//! recipes download the release from a copy served on 127.0.0.1.

use std::fs;
use std::io::{BufRead as _, BufReader, Write as _};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::support::{run, temp_dir, Cluster, Output, Running};

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
    let hosts: Vec<Running> = (0..3)
        .map(|_| spawn_clean(place.path(), &env, "/bin/sh", &["-c", &command]))
        .collect();
    for host in hosts {
        let out = host.finish(LIMIT);
        out.assert_code(0, "every host's cron job exits 0");
        assert_eq!(out.stderr, "", "cron mails nothing");
    }
    let log = place.read("log");
    assert_eq!(intervals(&log).len(), 1, "one host ran it: {log}");
    let today =
        String::from_utf8(Command::new("date").arg("+%F").output().unwrap().stdout).unwrap();
    assert!(
        log.contains(&format!(" nightly-backup-{}", today.trim())),
        "the day is in the name: {log}"
    );
}

/// Runs `script` as a CI shell step would, twice at once (two pipelines),
/// and checks that the steps took turns and that each recorded its job.
fn two_pipelines(
    place: &Place,
    shell: &[&str],
    script: &str,
    job_env: impl Fn(usize) -> Vec<(&'static str, String)>,
) -> Vec<serde_json::Value> {
    fs::write(place.path().join("step.sh"), script).unwrap();
    let runs: Vec<Running> = (0..2)
        .map(|i| {
            let mut args = shell[1..].to_vec();
            args.push("step.sh");
            spawn_clean(place.path(), &job_env(i), shell[0], &args)
        })
        .collect();
    for run in runs {
        run.finish(LIMIT)
            .assert_code(0, "each pipeline's step succeeds");
    }
    let mut turns = intervals(&place.read("log"));
    assert_eq!(turns.len(), 2, "both deployed");
    turns.sort();
    assert!(turns[0].1 <= turns[1].0, "the steps took turns: {turns:?}");
    holder_json(place, "log")
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
fn github_actions_recipe_installs_the_release_takes_turns_and_records_the_run() {
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
    let script = deploy.run.replace("${{ github.sha }}", "4f2a9c1");
    recording_job(&place, "deploy.sh", "log");
    let holders = two_pipelines(&place, ACTIONS_SHELL, &script, |i| {
        vec![
            ("PATH", installed_path(&place)),
            ("HOME", place.path().display().to_string()),
            ("CI", "true".into()),
            ("GITHUB_ACTIONS", "true".into()),
            ("GITHUB_SERVER_URL", "https://github.com".into()),
            ("GITHUB_REPOSITORY", "acme/shop".into()),
            ("GITHUB_RUN_ID", format!("900{i}")),
            ("REDLOCK_SERVERS", cluster.servers_arg()),
        ]
    });
    let mut jobs: Vec<&str> = holders
        .iter()
        .map(|h| h["holder"]["job"].as_str().unwrap())
        .collect();
    jobs.sort();
    assert_eq!(
        jobs,
        [
            "https://github.com/acme/shop/actions/runs/9000",
            "https://github.com/acme/shop/actions/runs/9001"
        ]
    );
    assert!(holders
        .iter()
        .all(|h| h["holder"]["message"] == "deploy 4f2a9c1"));
}

#[test]
fn gitlab_ci_recipe_installs_the_release_takes_turns_and_records_the_job() {
    let cluster = Cluster::start(3);
    let place = Place::new();
    let yaml = &code_blocks("#### GitLab CI")[0];
    let (vars, before) = gitlab_job(yaml, "before_script:");
    let page = ReleasePage::serve(&release_of(&vars), false);
    install_as_printed(&place, &page, GITLAB_SHELL, &before, &vars)
        .assert_code(0, "the job's before_script");
    let (_, script) = gitlab_job(yaml, "script:");
    recording_job(&place, "deploy.sh", "log");
    let holders = two_pipelines(&place, GITLAB_SHELL, &script, |i| {
        vec![
            ("PATH", installed_path(&place)),
            ("HOME", place.path().display().to_string()),
            ("CI", "true".into()),
            ("GITLAB_CI", "true".into()),
            ("CI_PIPELINE_ID", format!("77{i}")),
            (
                "CI_JOB_URL",
                format!("https://gitlab.example.com/acme/shop/-/jobs/55{i}"),
            ),
            ("REDLOCK_SERVERS", cluster.servers_arg()),
        ]
    });
    let mut seen: Vec<(String, String)> = holders
        .iter()
        .map(|h| {
            let holder = &h["holder"];
            (
                holder["job"].as_str().unwrap().to_owned(),
                holder["message"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        [
            (
                "https://gitlab.example.com/acme/shop/-/jobs/550".to_owned(),
                "pipeline 770".to_owned()
            ),
            (
                "https://gitlab.example.com/acme/shop/-/jobs/551".to_owned(),
                "pipeline 771".to_owned()
            )
        ]
    );
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
