//! Which servers the lock lives on, and where that list came from: the `-s`
//! flags, `REDLOCK_SERVERS` or a servers file. There is no default server:
//! with none named, every command that needs servers stops and says how to
//! name them. Also the CA certificate for `rediss://`, read only when a URL
//! needs it.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::file::{is_there, read_small_file, shown_path, without_bom};
use super::notice::Notice;
use crate::error::Error;
use crate::lock::ServerSpec;

/// Where the server list came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerSource {
    /// `-s`/`--server`.
    Flag,
    /// `REDLOCK_SERVERS`.
    Env,
    /// A servers file: `--servers-file`, `REDLOCK_SERVERS_FILE`, the user's
    /// or the system's.
    File(PathBuf),
}

impl ServerSource {
    /// How messages name the source.
    pub fn describe(&self) -> String {
        match self {
            ServerSource::Flag => "--server".into(),
            ServerSource::Env => "REDLOCK_SERVERS".into(),
            ServerSource::File(path) => format!("servers file {}", shown_path(path)),
        }
    }
}

/// What can name the servers, most important first.
#[derive(Debug, Default)]
pub struct Sources {
    /// Every `-s` value, as given.
    pub flags: Vec<OsString>,
    /// `REDLOCK_SERVERS`, if set.
    pub env: Option<OsString>,
    /// `--servers-file` or `REDLOCK_SERVERS_FILE`.
    pub file: Option<PathBuf>,
    /// The user's and then the system's servers file, used if they are
    /// there.
    pub default_files: Vec<PathBuf>,
}

impl Sources {
    /// The default files of this user: `$XDG_CONFIG_HOME/redlock/servers`
    /// (`~/.config/redlock/servers`), then `/etc/redlock/servers`, the
    /// system's, for hosts where every user and cron job shares one list.
    pub fn default_files() -> Vec<PathBuf> {
        super::file::default_files("servers")
    }
}

/// The servers, where they came from, and what the user should hear about
/// how they were given.
#[derive(Debug)]
pub struct ServerList {
    pub specs: Vec<ServerSpec>,
    pub source: ServerSource,
    pub notices: Vec<Notice>,
}

/// Picks the first source that names servers: the flags, then
/// `REDLOCK_SERVERS`, then the servers file given, then the default files.
/// A source that is present but names no server is an error, except an
/// empty `REDLOCK_SERVERS` when a servers file is given: it defers to it.
/// A default file is passed over only when it is not there at all; no
/// source at all is an error that says how to name the servers.
pub fn resolve(sources: &Sources) -> Result<ServerList, Error> {
    if !sources.flags.is_empty() {
        let specs = from_values(&sources.flags, &ServerSource::Flag)?;
        let notices = if specs.iter().any(ServerSpec::has_secret) {
            vec![Notice::PasswordOnCommandLine]
        } else {
            Vec::new()
        };
        return list(specs, ServerSource::Flag, notices);
    }
    if let Some(env) = &sources.env {
        let blank = env.to_str().is_some_and(is_blank_list);
        if !blank || sources.file.is_none() {
            let specs = from_values(std::slice::from_ref(env), &ServerSource::Env)?;
            return list(specs, ServerSource::Env, Vec::new());
        }
    }
    if let Some(path) = &sources.file {
        return from_file(path);
    }
    for path in &sources.default_files {
        let there = is_there(path).map_err(|why| {
            Error::Config(format!(
                "{}: {why}",
                ServerSource::File(path.clone()).describe()
            ))
        })?;
        if there {
            return from_file(path);
        }
    }
    Err(Error::Config(no_servers(&sources.default_files)))
}

/// The error when nothing names a server: the ways to name them, the
/// default files by the paths looked at. There is no default server: a
/// host that locked its own Redis alone would exclude no other host.
fn no_servers(default_files: &[PathBuf]) -> String {
    let files: Vec<String> = default_files.iter().map(|p| shown_path(p)).collect();
    format!(
        "no servers configured: pass -s URL (-s localhost for one local Redis), set \
         REDLOCK_SERVERS, or list them in a servers file (--servers-file FILE, or {}; one URL \
         a line)",
        files.join(" or ")
    )
}

fn list(
    specs: Vec<ServerSpec>,
    source: ServerSource,
    notices: Vec<Notice>,
) -> Result<ServerList, Error> {
    reject_duplicates(&specs, &source)?;
    Ok(ServerList {
        specs,
        source,
        notices,
    })
}

fn is_blank_list(text: &str) -> bool {
    text.split(',').all(|piece| piece.trim().is_empty())
}

/// Server URLs from `-s` values or `REDLOCK_SERVERS`, each split at commas.
fn from_values(values: &[OsString], source: &ServerSource) -> Result<Vec<ServerSpec>, Error> {
    let name = source.describe();
    let mut urls = Vec::new();
    for value in values {
        let text = value
            .to_str()
            .ok_or_else(|| Error::Config(format!("{name}: a server URL is not valid UTF-8")))?;
        urls.extend(split_list(text).map_err(|why| Error::Config(format!("{name}: {why}")))?);
    }
    let urls: Vec<&str> = urls
        .iter()
        .map(|u| u.trim())
        .filter(|u| !u.is_empty())
        .collect();
    if urls.is_empty() {
        return Err(Error::Config(format!(
            "{name} is set but names no server (an unset secret?); name the servers, or leave \
             it out to use the next source"
        )));
    }
    parse_all(&urls, &name)
}

fn parse_all(urls: &[&str], name: &str) -> Result<Vec<ServerSpec>, Error> {
    urls.iter()
        .map(|url| ServerSpec::parse(url).map_err(|err| Error::Config(format!("{name}: {err}"))))
        .collect()
}

/// Splits one list at commas. A piece with an '@' but no scheme may be the
/// rest of a password that held an unencoded comma: it is joined to the
/// piece before it only when that piece is no server URL on its own and the
/// two together are one with a user-info part. When the piece before is a
/// server URL on its own, the piece is one too only if it has a password
/// of its own (`:pw@host`); one with a bare user-info (`rest@host`) is most
/// likely the tail of a cut password, and the list is refused (the URL is
/// not shown: its pieces are pieces of the password). Otherwise every piece
/// is a server of its own (and one that does not parse is an error), so
/// that separate servers are never merged into one.
fn split_list(value: &str) -> Result<Vec<String>, String> {
    let mut urls: Vec<String> = Vec::new();
    for piece in value.split(',') {
        if let Some(previous) = urls.last_mut() {
            let joined = format!("{previous},{piece}");
            let continues = piece.contains('@')
                && !piece.contains("://")
                && ServerSpec::parse(&joined).is_ok_and(|spec| spec.has_secret());
            if continues && ServerSpec::parse(previous).is_err() {
                *previous = joined;
                continue;
            }
            if continues && !has_own_password(piece) {
                return Err(CUT_AT_A_COMMA.into());
            }
        }
        urls.push(piece.to_owned());
    }
    Ok(urls)
}

const CUT_AT_A_COMMA: &str = "a comma seems to cut a server URL inside its password (the piece \
    after it has a user name but no password of its own); write a comma in a password as %2C \
    (and '@' as %40)";

/// Whether a scheme-less piece has `user:password@` of its own.
fn has_own_password(piece: &str) -> bool {
    piece
        .rsplit_once('@')
        .is_some_and(|(user_info, _)| user_info.contains(':'))
}

/// A servers file: one URL per line; blank lines and lines starting with
/// `#` are skipped, and so is a ` # comment` after a URL (a URL holds no
/// whitespace; a `#` in a password is written %23); a UTF-8 byte order mark
/// is ignored. A control character (a NUL, say) on a line is refused. A
/// file that holds a password should be readable by its owner only; if not,
/// the user hears of it. One that others can change, or that another user
/// owns, is refused (`read_small_file`: whoever can change it can point
/// the lock at servers of their own).
fn from_file(path: &Path) -> Result<ServerList, Error> {
    let source = ServerSource::File(path.to_path_buf());
    let name = source.describe();
    let (text, mode) =
        read_small_file(path).map_err(|err| Error::Config(format!("{name}: {err}")))?;
    let text = String::from_utf8(without_bom(&text).to_vec())
        .map_err(|_| Error::Config(format!("{name}: the file is not valid UTF-8")))?;
    let urls = file_lines(&text).map_err(|why| Error::Config(format!("{name}: {why}")))?;
    if urls.is_empty() {
        return Err(Error::Config(format!("{name} names no server")));
    }
    let specs = parse_all(&urls, &name)?;
    let mut notices = Vec::new();
    if mode & 0o044 != 0 && specs.iter().any(ServerSpec::has_secret) {
        notices.push(Notice::ReadableSecretFile(path.to_path_buf()));
    }
    list(specs, source, notices)
}

/// The URLs of a servers file's text, one a line, without comments.
fn file_lines(text: &str) -> Result<Vec<&str>, String> {
    let mut urls = Vec::new();
    for (number, line) in text.lines().enumerate() {
        if line.contains(|c: char| c.is_control() && c != '\t') {
            return Err(format!(
                "line {} holds a control character; write one URL a line",
                number + 1
            ));
        }
        let line = match line.find(" #").or_else(|| line.find("\t#")) {
            Some(at) => &line[..at],
            None => line,
        }
        .trim();
        if !line.is_empty() && !line.starts_with('#') {
            urls.push(line);
        }
    }
    Ok(urls)
}

/// The same master listed twice would count twice towards the quorum. One
/// pass over a map: thousands of servers cost nothing before any I/O.
fn reject_duplicates(specs: &[ServerSpec], source: &ServerSource) -> Result<(), Error> {
    let mut seen: HashMap<String, &ServerSpec> = HashMap::with_capacity(specs.len());
    for spec in specs {
        if let Some(earlier) = seen.insert(spec.identity(), spec) {
            return Err(Error::Config(format!(
                "{}: {spec} is listed twice (as {earlier}): the same host and port is one \
                 master, whatever the database",
                source.describe()
            )));
        }
    }
    Ok(())
}

/// The CA certificate(s) for `rediss://`, checked here so that a wrong file
/// is a configuration error, not an endless series of failed handshakes.
/// Read only when a URL uses TLS.
pub fn read_ca_cert(path: &Path) -> Result<Vec<u8>, Error> {
    let name = format!("--tls-ca-cert {}", shown_path(path));
    let (pem, _) = read_small_file(path).map_err(|err| Error::Config(format!("{name}: {err}")))?;
    if !pem.windows(27).any(|w| w == b"-----BEGIN CERTIFICATE-----") {
        return Err(Error::Config(format!(
            "{name}: no PEM certificate in the file"
        )));
    }
    Ok(pem)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    #[test]
    fn lists_split_at_commas_but_not_inside_passwords() {
        let split_list = |list| split_list(list).unwrap();
        assert_eq!(split_list("a:1,b:2"), ["a:1", "b:2"]);
        assert_eq!(
            split_list("redis://u:p,w@h:1,h:2"),
            ["redis://u:p,w@h:1", "h:2"]
        );
        assert_eq!(split_list("redis://:1,2@h:1"), ["redis://:1,2@h:1"]);
        // Three servers stay three: b:2 is a server of its own.
        assert_eq!(split_list("a:1,b:2,:pw@c:3"), ["a:1", "b:2", ":pw@c:3"]);
        assert_eq!(split_list(":p1@a:1,u:p2@b:2"), [":p1@a:1", "u:p2@b:2"]);
    }

    #[test]
    fn a_password_cut_at_a_comma_is_refused_not_sent_in_pieces() {
        // "p@ss,w0rd": "redis://:p@ss" parses (password "p", host "ss").
        for list in ["redis://:p@ss,w0rd@h", "redis://u:123,w0rd@h:1"] {
            let err = resolve(&sources(&[list], None)).unwrap_err();
            assert_eq!(err.exit(), crate::exit_code::Exit::Config, "{list}");
            let text = err.message();
            assert!(text.contains("%2C"), "{text}");
            assert!(!text.contains("w0rd") && !text.contains("123"), "{text}");
        }
    }

    fn sources(flags: &[&str], env: Option<&str>) -> Sources {
        Sources {
            flags: flags.iter().map(OsString::from).collect(),
            env: env.map(OsString::from),
            ..Sources::default()
        }
    }

    #[test]
    fn separate_flags_are_never_merged() {
        let list = resolve(&sources(&["127.0.0.1:1", ":pw@127.0.0.1:2"], None)).unwrap();
        assert_eq!(list.specs.len(), 2);
        assert_eq!(list.notices, [Notice::PasswordOnCommandLine]);
    }

    #[test]
    fn an_empty_list_is_an_error_that_names_its_source() {
        for flag in ["", ",", " , "] {
            let err = resolve(&sources(&[flag], None)).unwrap_err();
            assert!(
                err.message()
                    .starts_with("--server is set but names no server"),
                "{err:?}"
            );
        }
        let err = resolve(&sources(&[], Some(" , "))).unwrap_err();
        assert!(
            err.message().starts_with("REDLOCK_SERVERS is set"),
            "{err:?}"
        );
    }

    #[test]
    fn no_source_at_all_is_an_error_that_says_how_to_name_the_servers() {
        let dir = tempfile::tempdir().unwrap();
        let none = Sources {
            default_files: vec![dir.path().join("user"), dir.path().join("system")],
            ..Sources::default()
        };
        let err = resolve(&none).unwrap_err();
        assert_eq!(err.exit(), crate::exit_code::Exit::Config);
        let text = err.message();
        for way in [
            "-s URL",
            "-s localhost",
            "REDLOCK_SERVERS",
            "--servers-file",
        ] {
            assert!(text.contains(way), "{text}");
        }
        let user = dir.path().join("user").display().to_string();
        assert!(text.contains(&format!("{user} or ")), "{text}");
        // A default file that is there but unreadable is not passed over.
        std::os::unix::fs::symlink(dir.path().join("gone"), dir.path().join("user")).unwrap();
        let text = resolve(&none).unwrap_err().message();
        assert!(
            text.starts_with(&format!("servers file {user}: ")),
            "{text}"
        );
    }

    #[test]
    fn localhost_is_a_server_on_the_default_port() {
        for host in ["localhost", "127.0.0.1", "redis://localhost"] {
            let list = resolve(&sources(&[host], None)).unwrap();
            assert_eq!(list.specs[0].identity(), "tcp loopback 6379", "{host}");
        }
    }

    #[test]
    fn files_come_after_flags_and_env_and_the_given_one_first() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
            path
        };
        let given = write("given", "# ours\n\n127.0.0.1:1\n  127.0.0.1:2  \n");
        let user = write("user", "127.0.0.1:3\n");
        let system = write("system", "127.0.0.1:4\n");
        let mut all = Sources {
            flags: vec!["127.0.0.1:5".into()],
            env: Some("127.0.0.1:6".into()),
            file: Some(given.clone()),
            default_files: vec![dir.path().join("missing"), user.clone(), system],
        };
        let port = |s: &Sources| resolve(s).unwrap().specs[0].to_string();
        assert_eq!(port(&all), "redis://127.0.0.1:5");
        all.flags.clear();
        assert_eq!(port(&all), "redis://127.0.0.1:6");
        all.env = Some("".into());
        assert_eq!(
            port(&all),
            "redis://127.0.0.1:1",
            "an empty env defers to the file"
        );
        all.env = None;
        let list = resolve(&all).unwrap();
        assert_eq!(list.specs.len(), 2);
        assert_eq!(list.source, ServerSource::File(given));
        all.file = None;
        assert_eq!(
            port(&all),
            "redis://127.0.0.1:3",
            "the user's before the system's"
        );
        all.default_files.remove(1);
        assert_eq!(port(&all), "redis://127.0.0.1:4");
        assert!(!user.as_os_str().is_empty());
    }

    #[test]
    fn a_readable_file_with_a_password_is_noticed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("servers");
        std::fs::write(&path, "redis://:pw@127.0.0.1:1\n").unwrap();
        let file = Sources {
            file: Some(path.clone()),
            ..Sources::default()
        };
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(
            resolve(&file).unwrap().notices,
            [Notice::ReadableSecretFile(path.clone())]
        );
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(resolve(&file).unwrap().notices, []);
        // Writable by others: refused, whatever it holds.
        for mode in [0o622, 0o666, 0o620] {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            let err = resolve(&file).unwrap_err().message();
            assert!(err.contains("it can be written by"), "{mode:o}: {err}");
        }
    }

    #[test]
    fn trailing_comments_are_skipped_and_control_characters_refused() {
        assert_eq!(
            file_lines("127.0.0.1:1 # the first\n# c\n 127.0.0.1:2\t# second\n"),
            Ok(vec!["127.0.0.1:1", "127.0.0.1:2"])
        );
        let err = file_lines("127.0.0.1:1\n127.0.0.1:2\0x\n").unwrap_err();
        assert_eq!(
            err,
            "line 2 holds a control character; write one URL a line"
        );
    }

    #[test]
    fn duplicates_are_found_in_one_pass() {
        let many: Vec<String> = (1..=5000).map(|i| format!("127.0.0.1:{i}")).collect();
        let started = std::time::Instant::now();
        let list = resolve(&sources(&[&many.join(",")], None)).unwrap();
        assert_eq!(list.specs.len(), 5000);
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
        let twice = resolve(&sources(&["127.0.0.1:7,127.1:7"], None)).unwrap_err();
        assert!(twice.message().contains("listed twice"), "{twice:?}");
    }
}
