//! The committed completions/ and man/ must match what the binary generates,
//! so that a CLI change cannot ship with stale docs. To refresh them:
//! `REDLOCK_UPDATE_GENERATED=1 cargo test generated`.

use std::collections::BTreeSet;
use std::path::Path;

fn check(dir: &str, files: Vec<(String, Vec<u8>)>) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let update = std::env::var_os("REDLOCK_UPDATE_GENERATED").is_some();
    if update {
        std::fs::create_dir_all(&dir).unwrap();
    }
    let mut stale = Vec::new();
    for (name, contents) in &files {
        let path = dir.join(name);
        if update {
            std::fs::write(&path, contents).unwrap();
        } else if std::fs::read(&path).ok().as_ref() != Some(contents) {
            stale.push(name.clone());
        }
    }
    let expected: BTreeSet<_> = files.iter().map(|(name, _)| name.clone()).collect();
    let present: BTreeSet<_> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok()?.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default();
    let extra: Vec<_> = present.difference(&expected).collect();
    assert!(
        stale.is_empty() && extra.is_empty(),
        "{} is out of date (stale or missing: {stale:?}; not generated any more: {extra:?}); \
         run `REDLOCK_UPDATE_GENERATED=1 cargo test generated` and commit the result",
        dir.display()
    );
}

#[test]
fn completions_are_current() {
    check("completions", redlock::generate::completions());
}

#[test]
fn man_pages_are_current() {
    check("man", redlock::generate::man_pages().unwrap());
}

#[test]
fn generate_subcommand_writes_the_same_files() {
    let dir = tempfile::tempdir().unwrap();
    let out = crate::support::run(
        crate::support::redlock()
            .args(["generate", "man"])
            .arg(dir.path()),
    );
    out.assert_code(0, "redlock generate man");
    for (name, contents) in redlock::generate::man_pages().unwrap() {
        assert_eq!(
            std::fs::read(dir.path().join(&name)).unwrap(),
            contents,
            "{name}"
        );
    }
}

/// Generating files talks to no server, so server settings that could never
/// work (an unset CI secret, a typo) must not stop it.
#[test]
fn generate_ignores_the_server_settings() {
    let dir = tempfile::tempdir().unwrap();
    let out = crate::support::run(
        crate::support::redlock()
            .env("REDLOCK_SERVERS", "ftp://nowhere")
            .env("REDLOCK_SERVER_TIMEOUT", "soon")
            .env("REDLOCK_TLS_CA_CERT", "/nonexistent/ca.pem")
            .args(["generate", "completions"])
            .arg(dir.path()),
    );
    out.assert_code(
        0,
        "redlock generate completions with unusable server settings",
    );
    assert_eq!(out.stderr, "");
    assert!(dir.path().join("redlock.bash").exists());
}

/// The `.SH` sections of a man page, as `(title, body)`.
fn sections(page: &str) -> Vec<(String, String)> {
    page.split("\n.SH ")
        .skip(1)
        .map(|section| {
            let (title, body) = section.split_once('\n').unwrap_or((section, ""));
            (title.trim_matches('"').to_owned(), body.to_owned())
        })
        .collect()
}

fn man_pages() -> Vec<(String, String)> {
    redlock::generate::man_pages()
        .unwrap()
        .into_iter()
        .map(|(name, page)| (name, String::from_utf8(page).unwrap()))
        .collect()
}

/// The subcommands a user sees (not `help`, which is clap's).
fn visible_subcommands() -> Vec<String> {
    use clap::CommandFactory as _;
    redlock::cli::Cli::command()
        .get_subcommands()
        .filter(|sub| !sub.is_hide_set() && sub.get_name() != "help")
        .map(|sub| sub.get_name().to_owned())
        .collect()
}

/// A new subcommand fails here until `cli::examples` has its examples.
#[test]
fn every_commands_help_has_examples() {
    let names = visible_subcommands();
    assert!(names.len() >= 5, "{names:?}");
    for name in &names {
        let out = crate::support::run(crate::support::redlock().arg(name).arg("--help"));
        out.assert_code(0, &format!("{name} --help"));
        let examples = out
            .stdout
            .split("\nExamples:\n")
            .nth(1)
            .unwrap_or_else(|| panic!("{name} --help has no Examples:\n{}", out.stdout));
        assert!(
            examples
                .lines()
                .any(|l| l.starts_with(&format!("  redlock {name} "))
                    || l.contains(&format!("$(redlock {name} "))),
            "{name} --help: no example runs it:\n{examples}"
        );
    }
}

/// The body of the section `title` of `page`, or "".
fn section(page: &str, title: &str) -> String {
    sections(page)
        .into_iter()
        .find(|(t, _)| t == title)
        .map(|(_, body)| body)
        .unwrap_or_default()
}

/// The `.B WORD` lines of a section: the statuses or variables it lists.
fn listed(body: &str) -> Vec<String> {
    body.lines()
        .filter_map(|line| line.strip_prefix(".B "))
        .map(String::from)
        .collect()
}

/// The command a page is of: `redlock-exec.1` is exec's, `redlock.1` none's.
fn command_of(page_name: &str) -> Option<&str> {
    page_name.strip_prefix("redlock-")?.strip_suffix(".1")
}

#[test]
fn every_man_page_has_exit_status_environment_and_examples() {
    let pages = man_pages();
    assert_eq!(
        pages.len(),
        1 + visible_subcommands().len(),
        "redlock.1 and one per command"
    );
    for (name, page) in &pages {
        let titles: Vec<String> = sections(page).into_iter().map(|(t, _)| t).collect();
        for wanted in ["EXIT STATUS", "ENVIRONMENT", "EXAMPLES"] {
            assert!(
                titles.iter().any(|t| t == wanted),
                "{name} lacks {wanted}: {titles:?}"
            );
        }
    }
    let exec = &pages
        .iter()
        .find(|(name, _)| name == "redlock-exec.1")
        .unwrap()
        .1;
    assert!(
        exec.contains("\n.SH \"SIGNALS AND TERMINALS\"\n")
            || exec.contains("\n.SH SIGNALS AND TERMINALS\n")
    );
}

/// Each page lists the statuses its command can exit with, as the one table
/// (`exit_code::TABLE`, each row naming its commands) says, in its order:
/// `status` has 1 (free), `exec` has not; redlock.1 lists them all.
#[test]
fn each_pages_exit_status_lists_the_rows_of_its_command() {
    use redlock::exit_code::{SIGNAL_ROW, TABLE};
    for (name, page) in man_pages() {
        let command = command_of(&name);
        let applies = |commands: &[&str]| command.is_none_or(|c| commands.contains(&c));
        let mut expected: Vec<String> = TABLE
            .iter()
            .filter(|row| applies(row.commands))
            .map(|row| row.exit.code().to_string())
            .collect();
        if applies(SIGNAL_ROW.2) {
            expected.push(SIGNAL_ROW.0.to_owned());
        }
        assert_eq!(listed(&section(&page, "EXIT STATUS")), expected, "{name}");
    }
    let exit_status = |page: &str| {
        let (_, text) = man_pages().into_iter().find(|(n, _)| n == page).unwrap();
        listed(&section(&text, "EXIT STATUS"))
    };
    assert!(exit_status("redlock-status.1").contains(&"1".to_owned()));
    assert!(!exit_status("redlock-exec.1").contains(&"1".to_owned()));
    assert!(!exit_status("redlock-release.1").contains(&"75".to_owned()));
}

/// Every command named in the table is a visible subcommand, and the other
/// way round.
#[test]
fn the_exit_tables_commands_are_the_visible_subcommands() {
    let mut every: Vec<String> = redlock::exit_code::EVERY
        .iter()
        .map(|c| c.to_string())
        .collect();
    let mut visible = visible_subcommands();
    every.sort();
    visible.sort();
    assert_eq!(every, visible);
    for row in redlock::exit_code::TABLE {
        assert!(
            row.commands.iter().all(|c| every.contains(&c.to_string())),
            "{row:?}"
        );
    }
}

/// A page's DESCRIPTION says more than the one line of `--help`; exec's
/// says how a command is stopped, with -k, what happens to what it leaves
/// behind, and to the terminal.
#[test]
fn each_pages_description_says_more_than_one_line() {
    for (name, page) in man_pages() {
        let description = section(&page, "DESCRIPTION");
        assert!(
            description.contains("\n.PP\n"),
            "{name}: one paragraph only:\n{description}"
        );
        if name == "redlock-exec.1" {
            for words in [
                "\\-k",
                "SIGKILL",
                "process group",
                "left behind",
                "terminal",
            ] {
                assert!(
                    description.contains(words),
                    "{name}: no {words:?} in\n{description}"
                );
            }
        }
    }
}

/// Every `REDLOCK_*` name in `dir` (recursively), but the test hooks.
fn variables_in(dir: &Path, found: &mut BTreeSet<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            variables_in(&path, found);
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        for (start, _) in text.match_indices("REDLOCK_") {
            let name: String = text[start..]
                .chars()
                .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
                .collect();
            if name.len() > "REDLOCK_".len() && !name.starts_with("REDLOCK_TEST_") {
                found.insert(name);
            }
        }
    }
}

/// A variable the program reads and no man page names fails here: the list
/// is taken from the source, not retyped. Every page names the variables
/// that choose the servers; exec's the ones it sets for its command.
#[test]
fn the_environment_section_names_every_variable_in_the_source() {
    let mut variables = BTreeSet::new();
    variables_in(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut variables,
    );
    assert!(
        variables.contains("REDLOCK_SERVERS") && variables.len() >= 8,
        "{variables:?}"
    );
    let mut anywhere = BTreeSet::new();
    for (name, page) in man_pages() {
        let documented = listed(&section(&page, "ENVIRONMENT"));
        for always in ["REDLOCK_SERVERS", "REDLOCK_SERVERS_FILE", "REDLOCK_PREFIX"] {
            assert!(
                documented.iter().any(|d| d == always),
                "{name}: no {always}"
            );
        }
        if command_of(&name).is_none() {
            for variable in &variables {
                assert!(documented.contains(variable), "{name}: no {variable}");
            }
        }
        if name == "redlock-exec.1" {
            let body = section(&page, "ENVIRONMENT");
            let sets = body
                .split("exec sets these for the command:")
                .nth(1)
                .unwrap_or("");
            for set in ["REDLOCK_NAME", "REDLOCK_TOKEN", "REDLOCK_SERVERS_FILE"] {
                assert!(
                    listed(sets).iter().any(|s| s == set),
                    "exec sets {set}:\n{body}"
                );
            }
        }
        anywhere.extend(documented);
    }
    for variable in &variables {
        assert!(anywhere.contains(variable), "no page names {variable}");
    }
}

/// Rendered as `man` renders them, no line ends in a word broken by
/// hyphenation ("sepa-" / "rate"): such a word cannot be searched for.
#[test]
fn man_pages_break_no_word() {
    let dir = tempfile::tempdir().unwrap();
    for (name, page) in man_pages() {
        let file = dir.path().join(&name);
        std::fs::write(&file, page).unwrap();
        let out = std::process::Command::new("groff")
            .args(["-man", "-Tutf8", "-P-c", "-rLL=70n"])
            .arg(&file)
            .output()
            .expect("groff (Debian: groff-base; scripts/test installs it)");
        assert!(out.status.success(), "groff {name}: {:?}", out.status);
        let text = String::from_utf8(out.stdout).unwrap();
        let broken: Vec<&str> = text
            .lines()
            .map(str::trim_end)
            .filter(|line| {
                let mut end = line.chars().rev();
                matches!(end.next(), Some('-' | '\u{2010}'))
                    && end.next().is_some_and(char::is_alphabetic)
            })
            .collect();
        assert!(broken.is_empty(), "{name} breaks words: {broken:?}");
    }
}
