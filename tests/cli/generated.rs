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
