//! The fleet's settings: what every client of the same servers must agree
//! on (the restart guard, the key for derived names) or shares (the server
//! timeout, the key prefix),
//! in a config file beside the servers file, so that each host is set up
//! once rather than each command line.
//!
//! The file given (`--config-file`, `REDLOCK_CONFIG_FILE`) is read;
//! without one, the first of `$XDG_CONFIG_HOME/redlock/config` and
//! `/etc/redlock/config` that is there, whole. One `name = value` a line;
//! `#` at the start of a line makes it a comment; blank lines are skipped
//! and whitespace around names and values is trimmed; a UTF-8 byte order
//! mark at the start is skipped, as in the servers file. A flag or its
//! variable wins over the file: config applies a value from here only when
//! neither was given.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::file::{is_there, read_small_file, shown_path, without_bom};
use crate::duration;
use crate::error::Error;
use crate::lock::{escape_and_cut, reserved_in};

/// How many characters of a name or value from the file an error shows.
const SHOWN: usize = 60;

/// The settings a config file gave, each with the line it is on.
#[derive(Debug, Default)]
pub struct Fleet {
    /// The file read, if any.
    pub file: Option<PathBuf>,
    pub restart_guard: Option<Setting<Duration>>,
    pub server_timeout: Option<Setting<Duration>>,
    pub prefix: Option<Setting<Vec<u8>>>,
    /// The key of the hash that names `exec`'s lock when no NAME is given
    /// (`name-key`); never shown.
    pub name_key: Option<Setting<Vec<u8>>>,
}

/// The fewest bytes a `name-key` has: with fewer, the key could be
/// guessed as easily as the arguments it hides.
pub const MIN_NAME_KEY: usize = 16;

/// One value from the file, and where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting<T> {
    pub value: T,
    pub line: usize,
}

/// The user's and then the system's config file.
pub fn default_files() -> Vec<PathBuf> {
    super::file::default_files("config")
}

/// The settings of the file given, or else of the first default file that
/// is there; none if no file is. A file given that is not there is an
/// error, as is a default one that is there but cannot be read.
pub fn load(given: Option<&Path>, default_files: &[PathBuf]) -> Result<Fleet, Error> {
    if let Some(path) = given {
        return read(path);
    }
    for path in default_files {
        let there =
            is_there(path).map_err(|why| Error::Config(format!("{}: {why}", describe(path))))?;
        if there {
            return read(path);
        }
    }
    Ok(Fleet::default())
}

/// How messages name a config file.
fn describe(path: &Path) -> String {
    format!("config file {}", shown_path(path))
}

fn read(path: &Path) -> Result<Fleet, Error> {
    let (text, _) =
        read_small_file(path).map_err(|err| Error::Config(format!("{}: {err}", describe(path))))?;
    let mut fleet = parse(without_bom(&text))
        .map_err(|(line, why)| Error::Config(format!("{} line {line}: {why}", describe(path))))?;
    fleet.file = Some(path.to_path_buf());
    Ok(fleet)
}

/// The settings in `text`, or the number of the first bad line and what is
/// wrong with it. Bytes, not text: a prefix is any bytes, as with
/// `--prefix`. A line that is no `name = value` is not shown: it may be
/// something else pasted into the wrong file, a password say.
fn parse(text: &[u8]) -> Result<Fleet, (usize, String)> {
    let mut fleet = Fleet::default();
    for (index, line) in text.split(|&b| b == b'\n').enumerate() {
        let number = index + 1;
        let line = line.trim_ascii();
        if line.is_empty() || line.starts_with(b"#") {
            continue;
        }
        let Some(equals) = line.iter().position(|&b| b == b'=') else {
            return Err((
                number,
                "not a `name = value` line (restart-guard, server-timeout, prefix or name-key)"
                    .into(),
            ));
        };
        let (name, value) = (line[..equals].trim_ascii(), line[equals + 1..].trim_ascii());
        let bad = |why| (number, why);
        let set = match name {
            b"restart-guard" => put(&mut fleet.restart_guard, guard(value).map_err(bad)?, number),
            b"server-timeout" => put(
                &mut fleet.server_timeout,
                timeout(value).map_err(bad)?,
                number,
            ),
            b"prefix" => put(&mut fleet.prefix, prefix(value).map_err(bad)?, number),
            b"name-key" => put(&mut fleet.name_key, name_key(value).map_err(bad)?, number),
            _ => {
                return Err((
                    number,
                    format!(
                        "unknown setting '{}' (the settings are restart-guard, server-timeout, \
                         prefix and name-key)",
                        escape_and_cut(name, SHOWN)
                    ),
                ))
            }
        };
        set.map_err(|first| {
            let name = String::from_utf8_lossy(name);
            (
                number,
                format!("{name} is set again (first on line {first})"),
            )
        })?;
    }
    Ok(fleet)
}

/// Sets `slot` to `value` from `line`, or gives the line it was set on
/// before.
fn put<T>(slot: &mut Option<Setting<T>>, value: T, line: usize) -> Result<(), usize> {
    match slot {
        Some(first) => Err(first.line),
        None => {
            *slot = Some(Setting { value, line });
            Ok(())
        }
    }
}

/// A prefix, as `--prefix` takes it: any bytes but NUL, under which
/// redlock keeps its own keys (a prefix `job` NUL would make the lock
/// `holder` the holder record of the lock `job`).
fn prefix(value: &[u8]) -> Result<Vec<u8>, String> {
    if reserved_in(value) {
        return Err("prefix must not hold a NUL byte: redlock keeps its own keys under it".into());
    }
    Ok(value.to_vec())
}

/// The key for derived names: any bytes, at least [`MIN_NAME_KEY`] of
/// them. The message never quotes it.
fn name_key(value: &[u8]) -> Result<Vec<u8>, String> {
    if value.len() < MIN_NAME_KEY {
        return Err(format!(
            "name-key must be at least {MIN_NAME_KEY} characters (a random string: \
             `openssl rand -hex 32` makes one)"
        ));
    }
    Ok(value.to_vec())
}

fn guard(value: &[u8]) -> Result<Duration, String> {
    parse_duration(value, "restart-guard")
}

fn timeout(value: &[u8]) -> Result<Duration, String> {
    let timeout = parse_duration(value, "server-timeout")?;
    if timeout.is_zero() {
        return Err("server-timeout must be greater than 0".into());
    }
    Ok(timeout)
}

/// A duration as the flags take it; the reason, which quotes the value, is
/// escaped and cut so that it stays one harmless line.
fn parse_duration(value: &[u8], name: &str) -> Result<Duration, String> {
    let reason = match std::str::from_utf8(value) {
        Ok(text) => match duration::parse(text) {
            Ok(duration) => return Ok(duration),
            Err(reason) => reason,
        },
        Err(_) => format!("'{}' is not valid UTF-8", String::from_utf8_lossy(value)),
    };
    Err(format!(
        "invalid {name}: {}",
        escape_and_cut(reason.as_bytes(), 3 * SHOWN)
    ))
}

/// Where a value from the file is, for messages: `config file PATH line N`.
pub fn place(fleet: &Fleet, line: usize) -> String {
    match &fleet.file {
        Some(path) => format!("{} line {line}", describe(path)),
        None => format!("line {line}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &str) -> Fleet {
        parse(text.as_bytes()).unwrap()
    }

    fn bad(text: &[u8]) -> (usize, String) {
        parse(text).unwrap_err()
    }

    #[test]
    fn names_and_values_with_comments_blank_lines_and_whitespace() {
        let fleet =
            ok("# fleet\n\n  restart-guard=2h \n\tserver-timeout =  400ms\r\nprefix = app: \n");
        assert_eq!(
            fleet.restart_guard,
            Some(Setting {
                value: Duration::from_secs(7200),
                line: 3
            })
        );
        assert_eq!(
            fleet.server_timeout.map(|s| s.value),
            Some(Duration::from_millis(400))
        );
        assert_eq!(fleet.prefix.map(|s| s.value), Some(b"app:".to_vec()));
        assert!(ok("").restart_guard.is_none());
        assert_eq!(ok("prefix =\n").prefix.map(|s| s.value), Some(vec![]));
        assert_eq!(
            ok("prefix = a=b\n").prefix.map(|s| s.value),
            Some(b"a=b".to_vec())
        );
        assert_eq!(
            ok("restart-guard = 0\n").restart_guard.map(|s| s.value),
            Some(Duration::ZERO)
        );
    }

    #[test]
    fn every_mistake_names_its_line_and_shows_no_raw_control_character() {
        let (line, why) = bad(b"# c\nprefix = a\nservers = redis://:pw@h\n");
        assert_eq!(line, 3);
        assert!(why.starts_with("unknown setting 'servers'"), "{why}");
        assert!(!why.contains("pw"), "{why}");
        let (line, why) = bad(b"\nredis://:pw@h\n");
        assert_eq!(line, 2);
        assert!(why.contains("name = value") && !why.contains("pw"), "{why}");
        let (line, why) = bad(b"restart-guard = soon\x1b[2J\n");
        assert_eq!(line, 1);
        assert!(
            why.starts_with("invalid restart-guard: 'soon\\u{1b}[2J'"),
            "{why}"
        );
        assert!(!why.contains('\x1b'), "{why}");
        let (_, why) = bad(b"server-timeout = 0\n");
        assert!(why.contains("greater than 0"), "{why}");
        let (_, why) = bad(b"server-timeout = -1s\n");
        assert!(why.contains("negative"), "{why}");
        let (_, why) = bad(b"restart-guard = \xff\n");
        assert!(why.contains("\\xff") || why.contains("UTF-8"), "{why}");
        let (line, why) = bad(b"# c\nprefix = job\0\n");
        assert_eq!(
            (line, why.as_str()),
            (
                2,
                "prefix must not hold a NUL byte: redlock keeps its own keys under it"
            )
        );
        let (line, why) = bad(b"prefix = a\n\nprefix = b\n");
        assert_eq!(
            (line, why.as_str()),
            (3, "prefix is set again (first on line 1)")
        );
        let (line, why) = bad(b"\nname-key = short-s3cret\n");
        assert_eq!(line, 2);
        assert!(
            why.starts_with("name-key must be at least 16 characters") && !why.contains("s3cret"),
            "{why}"
        );
        assert_eq!(
            ok("name-key = 0123456789abcdef\n")
                .name_key
                .map(|s| s.value),
            Some(b"0123456789abcdef".to_vec())
        );
        let (_, why) = bad(format!("{}\x07 = 1\n", "n".repeat(500)).as_bytes());
        assert!(why.len() < 200 && !why.contains('\x07'), "{why}");
    }

    #[test]
    fn the_file_given_else_the_first_default_one_that_is_there_wins_whole() {
        let dir = tempfile::tempdir().unwrap();
        let file = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            path
        };
        let given = file("given", "prefix = given:\n");
        let user = file("user", "restart-guard = 1h\n");
        let system = file("system", "prefix = system:\nserver-timeout = 1s\n");
        let absent = dir.path().join("absent");
        let defaults = [absent.clone(), user.clone(), system.clone()];
        let fleet = load(Some(&given), &defaults).unwrap();
        assert_eq!(fleet.file.as_deref(), Some(given.as_path()));
        assert!(fleet.restart_guard.is_none(), "nothing of the others");
        let fleet = load(None, &defaults).unwrap();
        assert_eq!(fleet.file.as_deref(), Some(user.as_path()));
        assert!(
            fleet.prefix.is_none() && fleet.server_timeout.is_none(),
            "whole"
        );
        let fleet = load(None, &[absent.clone(), system.clone()]).unwrap();
        assert_eq!(fleet.prefix.map(|s| s.value), Some(b"system:".to_vec()));
        assert!(load(None, std::slice::from_ref(&absent))
            .unwrap()
            .file
            .is_none());
        let err = load(Some(&absent), &defaults).unwrap_err();
        assert_eq!(err.exit(), crate::exit_code::Exit::Config);
        std::os::unix::fs::symlink(&absent, dir.path().join("dangling")).unwrap();
        let err = load(None, &[dir.path().join("dangling"), system]).unwrap_err();
        assert!(err.message().contains("does not exist"), "{err:?}");
        let bad = file("bad", "prefix = a\nnope\n");
        let err = load(Some(&bad), &[]).unwrap_err().message();
        assert!(
            err.starts_with(&format!("config file {} line 2: ", bad.display())),
            "{err:?}"
        );
    }
}
