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
        let exit_status = &sections(page)
            .into_iter()
            .find(|(t, _)| t == "EXIT STATUS")
            .unwrap()
            .1;
        for row in redlock::exit_code::TABLE {
            assert!(
                exit_status.contains(&format!(".B {}\n", row.exit.code())),
                "{name}: EXIT STATUS lacks {}",
                row.exit.code()
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

/// A variable the program reads and the man page does not name fails here:
/// the list is taken from the source, not retyped.
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
    for (name, page) in man_pages() {
        let environment = sections(&page)
            .into_iter()
            .find(|(t, _)| t == "ENVIRONMENT")
            .map(|(_, body)| body)
            .unwrap_or_default();
        let documented: BTreeSet<&str> = environment
            .lines()
            .filter_map(|line| line.strip_prefix(".B "))
            .collect();
        for variable in &variables {
            assert!(
                documented.contains(variable.as_str()),
                "{name}: ENVIRONMENT does not name {variable}"
            );
        }
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
