//! What the release is made of, checked without building it (that is
//! `scripts/release` and `scripts/check-release`, run once by `.ci/run`):
//! the crate's file list, the .deb's sources, the release workflow's
//! scripts, the guard against other systems, the install ways
//! (docs/install.md) and where the recipes find `redlock` after each.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// `cargo package --list` carries the man pages and completions the .deb
/// and the tarball carry, the licenses, and nothing the tests keep or write.
#[test]
fn the_crate_carries_man_pages_and_completions_and_no_tests() {
    let out = Command::new(env!("CARGO"))
        .args(["package", "--list", "--offline", "--allow-dirty"])
        .current_dir(root())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "cargo package --list: {stderr}");
    let listed: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    let mut wanted: Vec<String> = Vec::new();
    for dir in ["man", "completions"] {
        for entry in std::fs::read_dir(root().join(dir)).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            wanted.push(format!("{dir}/{name}"));
        }
    }
    assert!(wanted.len() >= 10, "{wanted:?}");
    wanted.extend(
        [
            "LICENSE-MIT",
            "LICENSE-APACHE",
            "README.md",
            "build.rs",
            "src/main.rs",
        ]
        .map(String::from),
    );
    for file in &wanted {
        assert!(listed.contains(file), "cargo package --list lacks {file}");
    }
    let strays: Vec<&String> = listed
        .iter()
        .filter(|f| f.starts_with("tests/") || f.starts_with("target/") || f.ends_with(".snap.new"))
        .collect();
    assert!(strays.is_empty(), "the crate would carry {strays:?}");
}

/// The quoted strings of a TOML array of arrays, `[["a", "b", "c"], …]`,
/// from the line `key = [` to the line `]`.
fn toml_rows(text: &str, key: &str) -> Vec<Vec<String>> {
    let start = text
        .find(&format!("\n{key} = [\n"))
        .unwrap_or_else(|| panic!("no {key}"));
    let body = &text[start..];
    let body = &body[..body.find("\n]\n").unwrap()];
    body.lines()
        .skip(2)
        .map(|line| {
            line.split('"')
                .skip(1)
                .step_by(2)
                .map(String::from)
                .collect()
        })
        .collect()
}

/// Every file the .deb takes from the tree exists (the binary is built by
/// scripts/release), and the .deb puts the man pages, the three shells'
/// completions and the two conffiles where Debian looks for them.
#[test]
fn the_debs_assets_exist_and_go_where_debian_looks() {
    let manifest = read("Cargo.toml");
    let deb = &manifest[manifest.find("[package.metadata.deb]").unwrap()..];
    let assets = toml_rows(deb, "assets");
    for row in &assets {
        assert_eq!(row.len(), 3, "{row:?}");
        if row[0].starts_with("target/") {
            continue;
        }
        let matches = if let Some(dir) = row[0].strip_suffix("/*.1") {
            std::fs::read_dir(root().join(dir)).unwrap().count()
        } else {
            usize::from(root().join(&row[0]).is_file())
        };
        assert!(matches > 0, "the .deb takes {} that is not there", row[0]);
    }
    let targets: Vec<&str> = assets.iter().map(|row| row[1].as_str()).collect();
    for wanted in [
        "usr/bin/",
        "usr/share/man/man1/",
        "usr/share/bash-completion/completions/redlock",
        "usr/share/zsh/vendor-completions/_redlock",
        "usr/share/fish/vendor_completions.d/redlock.fish",
        "etc/redlock/servers",
        "etc/redlock/config",
    ] {
        assert!(targets.contains(&wanted), "the .deb has no {wanted}");
    }
    assert!(
        deb.contains("\nname = \"redlock\"\n"),
        "the .deb is not named redlock"
    );
    assert!(deb.contains("conf-files = [\"/etc/redlock/servers\", \"/etc/redlock/config\"]"));
    for file in ["servers", "config"] {
        let text = read(&format!("packaging/etc/redlock/{file}"));
        let live: Vec<&str> = text
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
            .collect();
        assert!(
            live.is_empty(),
            "/etc/redlock/{file} is not all comments: {live:?}"
        );
    }
}

/// The scripts a workflow runs (`bash scripts/x`, `scripts/x`), each of
/// which must exist and be executable.
fn scripts_run_by(workflow: &str) -> Vec<String> {
    let mut found = Vec::new();
    for word in workflow.split(|c: char| c.is_whitespace() || c == '"' || c == '\'') {
        let word = word.trim_start_matches("./");
        if word.starts_with("scripts/") || word.starts_with(".ci/") {
            found.push(word.to_owned());
        }
    }
    found
}

#[test]
fn the_release_workflow_runs_only_scripts_that_exist() {
    let dir = root().join(".github/workflows");
    let workflows: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(!workflows.is_empty());
    let release = read(".github/workflows/release.yml");
    assert!(
        release.contains("tags: [\"v*\"]"),
        "release.yml runs on v* tags"
    );
    let run = scripts_run_by(&release);
    for wanted in ["scripts/release", "scripts/check-release"] {
        assert!(
            run.iter().any(|s| s == wanted),
            "release.yml does not run {wanted}"
        );
    }
    for workflow in &workflows {
        for script in scripts_run_by(&std::fs::read_to_string(workflow).unwrap()) {
            let path = root().join(&script);
            let mode = std::fs::metadata(&path)
                .map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()))
                .unwrap_or_else(|_| {
                    panic!("{}: runs {script}, which is not there", workflow.display())
                });
            assert!(mode & 0o111 != 0, "{script} is not executable");
        }
    }
    assert!(
        !scripts_run_by("run: bash scripts/nope").is_empty(),
        "the scan finds scripts"
    );
}

/// A build on another OS must stop at one clear message, not at a wall of
/// unresolved Linux calls: the guard is the first item of the library.
#[test]
fn another_os_stops_at_the_first_item_with_a_clear_message() {
    let lib = read("src/lib.rs");
    let code: Vec<&str> = lib
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("//"))
        .collect();
    assert_eq!(
        code[0],
        "#[cfg(not(target_os = \"linux\"))]",
        "{:?}",
        &code[..3]
    );
    assert_eq!(code[1], "compile_error!(");
    let message = lib[lib.find("compile_error!(").unwrap()..]
        .split(");")
        .next()
        .unwrap();
    for words in [
        "Linux only",
        "CLOCK_BOOTTIME",
        "pidfd",
        "PR_SET_PDEATHSIG",
        "docs/platforms.md",
    ] {
        assert!(
            message.contains(words),
            "the message lacks {words:?}: {message}"
        );
    }
    assert!(root().join("docs/platforms.md").is_file());
}

/// docs/install.md offers the four ways, each with the check that runs it
/// in CI, and the README's Install section shows each and links the page.
#[test]
fn the_install_page_installs_four_ways_each_checked() {
    let page = read("docs/install.md");
    let readme = read("README.md");
    let start = readme.find("\n## Install\n").expect("## Install");
    let install = &readme[start + 1..];
    let install = &install[..install[1..].find("\n## ").unwrap() + 1];
    assert!(install.contains("](docs/install.md)"), "{install}");
    for (way, command, shown) in [
        ("## From the .deb", "dpkg -i", "dpkg -i"),
        ("## The static binary", "tar ", "tar xzf"),
        ("## In a container", "docker run --rm", "docker load -i"),
        (
            "## With cargo",
            "cargo install --locked redlock-cli",
            "cargo install",
        ),
    ] {
        let at = page
            .find(&format!("\n{way}\n"))
            .unwrap_or_else(|| panic!("no {way:?}"));
        let part = &page[at + 1..];
        let part = &part[..part[3..].find("\n## ").map_or(part.len(), |end| end + 3)];
        assert!(part.contains(command), "{way}: no {command:?}");
        assert!(
            install.contains(shown),
            "the README's Install has no {shown:?}"
        );
        assert!(
            part.contains("scripts/check-release") || part.contains(".ci/run"),
            "{way}: does not say what checks it"
        );
    }
}

/// Where systemd looks for an `ExecStart=` command given without a
/// directory (systemd 239 and later, merged /usr).
const SYSTEMD_SEARCH_PATH: [&str; 4] =
    ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin"];

/// The directories the install ways put `redlock` in: the .deb's, from the
/// asset that takes the built binary, and the static binary's, from the
/// `install` line of docs/install.md (cargo's readers are told to copy it
/// there too).
fn install_dirs() -> Vec<(&'static str, String)> {
    let manifest = read("Cargo.toml");
    let deb = &manifest[manifest.find("[package.metadata.deb]").unwrap()..];
    let deb_dir = toml_rows(deb, "assets")
        .into_iter()
        .find(|row| row[0].ends_with("/release/redlock"))
        .expect("the .deb takes the built binary")[1]
        .clone();
    let block = crate::recipes::code_blocks_in("docs/install.md", "## The static binary");
    let install = block[0]
        .lines()
        .find(|l| l.starts_with("sudo install "))
        .expect("docs/install.md installs the static binary");
    let static_dir = install.split_whitespace().last().unwrap().to_owned();
    vec![
        (".deb", format!("/{}", deb_dir.trim_matches('/'))),
        ("static binary", static_dir.trim_end_matches('/').to_owned()),
    ]
}

/// The systemd unit's command and the cron line's are found where every
/// install way puts `redlock`: a full path would name one way's directory
/// only (`/usr/local/bin/redlock` failed with the .deb's `/usr/bin`).
#[test]
fn the_recipes_find_redlock_with_every_install_way() {
    let dirs = install_dirs();
    assert_eq!(dirs[0].1, "/usr/bin", "the .deb's binary: {dirs:?}");
    assert_eq!(dirs[1].1, "/usr/local/bin", "the static binary: {dirs:?}");
    let unit = &crate::recipes::code_blocks_in(
        "README.md",
        "### Run a systemd timer job on one host of a fleet",
    )[0];
    let exec_start = unit
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .expect("an ExecStart= line");
    let program = exec_start.split_whitespace().next().unwrap();
    let cron =
        &crate::recipes::code_blocks_in("README.md", "### Run a cron job only once across hosts")
            [0];
    let cron_path: Vec<&str> = cron
        .lines()
        .find_map(|l| l.strip_prefix("PATH="))
        .expect("a PATH= line")
        .split(':')
        .collect();
    let cron_program = cron
        .lines()
        .find(|l| l.starts_with("0 "))
        .unwrap()
        .split_whitespace()
        .nth(5);
    assert_eq!(cron_program, Some("redlock"), "{cron}");
    for (way, dir) in &dirs {
        let found = match program.rsplit_once('/') {
            Some((parent, _)) => parent == dir,
            None => SYSTEMD_SEARCH_PATH.contains(&dir.as_str()),
        };
        assert!(
            found,
            "ExecStart={program} does not find the {way}'s {dir}/redlock"
        );
        assert!(
            cron_path.contains(&dir.as_str()),
            "cron's PATH misses the {way}'s {dir}"
        );
    }
}

/// `-V` and `--version`, alone (answered before clap) or after other
/// arguments (answered by clap), at the top or after a subcommand, all print
/// the one long line: the version, the commit and the build date.
#[test]
fn every_version_flag_prints_the_commit_and_the_date() {
    let commit = if root().join(".git").exists() {
        let out = Command::new("git")
            .args(["rev-parse", "--short", "HEAD"])
            .current_dir(root())
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    } else {
        "unknown".to_owned()
    };
    let head = format!("redlock {} (commit {commit}", env!("CARGO_PKG_VERSION"));
    for args in [
        &["--version"][..],
        &["-V"],
        &["-q", "--version"],
        &["-q", "-V"],
        &["acquire", "-V"],
        &["exec", "--version"],
    ] {
        let out = crate::support::run(crate::support::redlock().args(args));
        out.assert_code(0, &format!("{args:?}"));
        let (line_head, date) = out.stdout.split_once(", built ").unwrap_or(("", ""));
        assert_eq!(line_head, head, "{args:?}: {}", out.stdout);
        let date = date.trim_end_matches(")\n");
        assert!(
            date.len() == 10 && date.chars().filter(|c| *c == '-').count() == 2,
            "{args:?}: no date in {:?}",
            out.stdout
        );
    }
}
