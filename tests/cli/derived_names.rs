//! The lock name `exec` derives from its command when no NAME is given
//! (src/config/mod.rs, `derived_name`). A plain hash of the arguments let
//! whoever can list the locks test guesses offline: listing the locks and
//! trying 10,000 PINs recovered `mysql -p4711`. With the config file's
//! `name-key` the hash is keyed; without it, a command line that seems to
//! hold a secret gets no derived name.

use std::path::PathBuf;

use crate::support::{run, temp_dir, write_file, Cluster};

/// The name `exec -v` says it derived.
fn derived(stderr: &str) -> String {
    stderr
        .lines()
        .find_map(|line| line.split_once("derived from the command: "))
        .and_then(|(_, name)| name.split('"').nth(1).map(str::to_owned))
        .unwrap_or_else(|| panic!("-v names the derived lock: {stderr}"))
}

/// Every name of every key on `cluster`'s first server.
fn keys(cluster: &Cluster) -> Vec<String> {
    let mut client = cluster[0].client();
    let keys: Vec<Vec<u8>> = redis::cmd("KEYS").arg("*").query(&mut client).unwrap();
    keys.iter()
        .map(|key| String::from_utf8_lossy(key).into_owned())
        .collect()
}

/// The plain name of `mysql -p4711` as 0.1.0 derived it: SHA-1 of each
/// word's length (8 bytes, big-endian) and the word. What an attacker who
/// lists the locks computes for each of 10,000 guesses.
fn plain_name(pin: &str) -> String {
    let mut hash = sha1_smol::Sha1::new();
    for word in ["mysql".to_owned(), format!("-p{pin}")] {
        hash.update(&(word.len() as u64).to_be_bytes());
        hash.update(word.as_bytes());
    }
    format!("exec:mysql:{}", &hash.digest().to_string()[..16])
}

/// A `mysql` on PATH that exits at once, whatever it is given.
fn fake_mysql() -> (tempfile::TempDir, String) {
    let dir = temp_dir("redlock-test-derived-");
    let bin = write_file(dir.path(), "bin/mysql", "#!/bin/sh\nexit 0\n");
    let executable = <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o755);
    std::fs::set_permissions(&bin, executable).unwrap();
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    (dir, path)
}

#[test]
fn without_a_name_key_a_secret_in_the_command_gets_no_derived_name() {
    let cluster = Cluster::start(3);
    let (_bin, path) = fake_mysql();
    let out = run(cluster
        .redlock()
        .env("PATH", &path)
        .args(["exec", "-v", "--", "mysql", "-p4711"]));
    out.assert_code(64, "a secret in the command and no name-key");
    assert!(
        out.stderr.contains("seems to hold a secret")
            && out
                .stderr
                .contains("give the lock a NAME, or set name-key in the config file"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("4711"), "{}", out.stderr);
    assert!(keys(&cluster).is_empty(), "{:?}", keys(&cluster));
    // A command without anything that looks like a secret keeps the name
    // 0.1.0 gave it, so that hosts on either version still contend.
    let out =
        run(cluster
            .redlock()
            .env("PATH", &path)
            .args(["exec", "-v", "--", "mysql", "--version"]));
    out.assert_code(0, "no secret: a plain derived name");
    let mut hash = sha1_smol::Sha1::new();
    for word in ["mysql", "--version"] {
        hash.update(&(word.len() as u64).to_be_bytes());
        hash.update(word.as_bytes());
    }
    let expected = format!("exec:mysql:{}", &hash.digest().to_string()[..16]);
    assert_eq!(derived(&out.stderr), expected);
}

#[test]
fn with_a_name_key_the_derived_name_is_a_keyed_hash_no_guess_matches() {
    let cluster = Cluster::start(3);
    let (bin, path) = fake_mysql();
    let config: PathBuf = write_file(
        bin.path(),
        "config",
        "# the fleet's key for derived names\nname-key = 9f86d081884c7d659a2feaa0c55ad015\n",
    );
    let exec = |pin: &str| {
        run(cluster
            .redlock()
            .env("PATH", &path)
            .env("REDLOCK_CONFIG_FILE", &config)
            .args(["exec", "-v", "--", "mysql", &format!("-p{pin}")]))
    };
    let out = exec("4711");
    out.assert_code(0, "a secret in the command, with a name-key");
    let name = derived(&out.stderr);
    assert!(
        out.stderr.contains("keyed hash") && out.stderr.contains("the same name-key"),
        "{}",
        out.stderr
    );
    assert!(
        name.starts_with("exec:mysql:") && name.len() == "exec:mysql:".len() + 16,
        "{name}"
    );
    // The offline attack that recovered the PIN finds nothing: no guess
    // hashes to the name without the key.
    assert!(
        (0..10_000).all(|pin| plain_name(&format!("{pin:04}")) != name),
        "a guess of the PIN matches {name}"
    );
    // The same command with the same key gives the same name (on every
    // host); another PIN, another name.
    assert_eq!(derived(&exec("4711").stderr), name);
    assert_ne!(derived(&exec("4712").stderr), name);
    // A key too short to be one is refused, and never shown.
    write_file(bin.path(), "config", "name-key = pin4711\n");
    let out = exec("4711");
    out.assert_code(78, "a name-key of 7 characters");
    assert!(
        out.stderr
            .contains("name-key must be at least 16 characters")
            && !out.stderr.contains("pin4711"),
        "{}",
        out.stderr
    );
}
