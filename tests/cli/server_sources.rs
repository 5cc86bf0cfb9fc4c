//! No servers configured is an error that says how to configure them, never
//! a silent localhost; `-s localhost` is the way to one local Redis. A
//! default servers file is passed over only when it is not there at all:
//! one that is there but cannot be read (a dangling link, a directory that
//! cannot be searched) is an error that names it.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use crate::support::assertions::assert_one_line_error;
use crate::support::{self, open_temp_dir, redlock_at, run, write_file, RedisServer};

/// The user's config directory every test runs the binary with (see
/// `support::redlock_at`): it does not exist.
const NO_CONFIG_HOME: &str = "/nonexistent/redlock-tests";

/// Every command that works on a lock, so needs servers.
const SERVER_COMMANDS: &[&[&str]] = &[
    &["acquire", "-n", "x"],
    &["release", "x", "some-token"],
    &["release", "--force", "x"],
    &["extend", "x", "some-token"],
    &["status", "x"],
    &["list"],
    &["exec", "-n", "x", "--", "true"],
];

#[test]
fn no_servers_is_a_configuration_error_that_says_how_to_configure_them() {
    let user_file = format!("{NO_CONFIG_HOME}/redlock/servers");
    let ways = [
        "-s URL",
        "-s localhost",
        "REDLOCK_SERVERS",
        "--servers-file",
        &user_file,
        "/etc/redlock/servers",
    ];
    for args in SERVER_COMMANDS {
        let context = format!("no servers: redlock {}", args.join(" "));
        let out = run(support::redlock().args(*args));
        assert_one_line_error(&out, 78, &ways, &context);
    }
    // Not even -v turns it into a default.
    let out = run(support::redlock().args(["-v", "status", "x"]));
    assert_one_line_error(&out, 78, &ways, "no servers, -v");
}

/// `-s localhost` and `-s 127.0.0.1` are servers (port 6379 when none is
/// given): the way the error offers to one local Redis.
#[test]
fn localhost_and_its_address_are_servers() {
    let server = RedisServer::start();
    for host in ["localhost", "127.0.0.1"] {
        let url = format!("{host}:{}", server.port());
        let out = run(support::redlock().args(["-s", &url, "acquire", "-n", host]));
        out.assert_code(0, &format!("-s {url}"));
        assert!(server.get(host.as_bytes()).is_some(), "-s {url}");
        // Without a port: accepted as redis://HOST (port 6379), so anything
        // but a configuration or usage error; nothing need listen there.
        let out = run(support::redlock().args(["-s", host, "status", "x"]));
        assert!(
            ![64, 78].contains(&out.code()),
            "-s {host} is a server: {out:?}"
        );
    }
}

/// A dangling link in place of the user's servers file, or of its
/// directory: there, but unreadable.
#[test]
fn a_default_servers_file_that_is_a_dangling_link_is_a_configuration_error() {
    let dir = open_temp_dir("redlock-test-sources-");
    let gone = dir.path().join("gone");
    let home = dir.path().join("dangling-file");
    std::fs::create_dir_all(home.join("redlock")).unwrap();
    std::os::unix::fs::symlink(&gone, home.join("redlock/servers")).unwrap();
    let out = run(support::redlock()
        .env("XDG_CONFIG_HOME", &home)
        .args(["status", "x"]));
    let file = home.join("redlock/servers").display().to_string();
    assert_one_line_error(
        &out,
        78,
        &[&file, "symbolic link", "does not exist"],
        "a dangling link as the user's servers file",
    );

    let home = dir.path().join("dangling-dir");
    std::fs::create_dir_all(&home).unwrap();
    std::os::unix::fs::symlink(&gone, home.join("redlock")).unwrap();
    let out = run(support::redlock()
        .env("XDG_CONFIG_HOME", &home)
        .args(["status", "x"]));
    let link = home.join("redlock").display().to_string();
    assert_one_line_error(
        &out,
        78,
        &[&link, "symbolic link", "does not exist"],
        "a dangling link as the user's redlock directory",
    );
}

/// A servers file in a directory this user cannot search: stat fails with
/// EACCES, which is no proof that the file is absent. The tests run as
/// root, who may search anything, so there the binary runs as `nobody`.
#[test]
fn a_default_servers_file_that_cannot_be_searched_for_is_a_configuration_error() {
    let dir = open_temp_dir("redlock-test-sources-");
    write_file(dir.path(), "redlock/servers", "127.0.0.1:1\n");
    let locked = |mode| {
        let perms = std::fs::Permissions::from_mode(mode);
        std::fs::set_permissions(dir.path().join("redlock"), perms).unwrap();
    };
    let mut cmd = if nix::unistd::geteuid().is_root() {
        locked(0o700);
        let mut cmd = redlock_at(Path::new("setpriv"));
        cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(env!("CARGO_BIN_EXE_redlock"));
        cmd
    } else {
        locked(0o600);
        support::redlock()
    };
    cmd.env("XDG_CONFIG_HOME", dir.path()).args(["status", "x"]);
    // The config file beside it is looked for first, in the same way.
    let out = run(&mut cmd);
    let config = dir.path().join("redlock/config").display().to_string();
    assert_one_line_error(
        &out,
        78,
        &[&format!("config file {config}: "), "Permission denied"],
        "a config file that cannot be searched for",
    );
    // With a config file given, the servers file is the one looked for.
    let empty = write_file(dir.path(), "empty-config", "");
    let out = run(cmd.env("REDLOCK_CONFIG_FILE", &empty));
    locked(0o700);
    let servers = dir.path().join("redlock/servers").display().to_string();
    assert_one_line_error(
        &out,
        78,
        &[&format!("servers file {servers}: "), "Permission denied"],
        "a servers file that cannot be searched for",
    );
}
