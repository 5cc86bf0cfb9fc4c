//! Reading the small files configuration comes from (a servers file, the
//! config file, a CA certificate), and the one rule for the default ones:
//! a file that is not there at all is passed over, one that is there but
//! cannot be read is an error.

use std::fs::File;
use std::io::{ErrorKind, Read as _};
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

use crate::lock::escape_bytes;

/// Where the system's files are, for hosts where every user and cron job
/// shares one setting.
const SYSTEM_DIR: &str = "/etc/redlock";

/// The most a configuration file may hold: far more than any real one, far
/// less than a mistake like /dev/zero could make us read.
const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// The user's and then the system's file called `name`:
/// `$XDG_CONFIG_HOME/redlock/NAME` (`~/.config/redlock/NAME` when that is
/// unset or empty; none when `HOME` is unset too), then `/etc/redlock/NAME`.
pub fn default_files(name: &str) -> Vec<PathBuf> {
    let config_home = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".config")));
    config_home
        .map(|dir| dir.join("redlock").join(name))
        .into_iter()
        .chain([Path::new(SYSTEM_DIR).join(name)])
        .collect()
}

/// Whether a default file (one looked for, not given) is there to be read.
/// `Ok(false)` only when it is not there at all: the path does not exist
/// and no dangling link stands in for it or for a directory on the way.
/// A dangling link, or a path that cannot be looked up (a directory that
/// cannot be searched, a file where a directory should be), is no proof
/// that the file is absent: `Err` says why, to be shown after the path.
pub fn is_there(path: &Path) -> Result<bool, String> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => match dangling_link(path) {
            Some(why) => Err(why),
            // Whatever else is wrong with it, reading it will say.
            None => Ok(true),
        },
        Ok(_) => Ok(true),
        Err(err) if err.kind() == ErrorKind::NotFound => {
            let is_link = |dir: &&Path| {
                std::fs::symlink_metadata(dir).is_ok_and(|meta| meta.file_type().is_symlink())
            };
            let dangling = path.ancestors().skip(1).filter(is_link).find_map(|dir| {
                dangling_link(dir).map(|why| format!("{} is {why}", shown_path(dir)))
            });
            match dangling {
                Some(why) => Err(why),
                None => Ok(false),
            }
        }
        Err(err) => Err(format!("cannot be looked up: {err}")),
    }
}

/// If the link at `path` leads nowhere: what to say about it.
fn dangling_link(path: &Path) -> Option<String> {
    match std::fs::metadata(path) {
        Err(err) if err.kind() == ErrorKind::NotFound => {
            let target = std::fs::read_link(path)
                .map(|target| shown_path(&target))
                .unwrap_or_else(|_| "a path".into());
            Some(format!("a symbolic link to {target}, which does not exist"))
        }
        _ => None,
    }
}

/// The contents and permission bits of a regular file of at most
/// [`MAX_FILE_BYTES`] that only its owner can change, and that is owned by
/// this user or root ([`untrusted`]). Opened without blocking, so that a
/// FIFO cannot hang us, and checked on the open file, so that what is read
/// is what was checked.
pub fn read_small_file(path: &Path) -> std::io::Result<(Vec<u8>, u32)> {
    let file = File::options()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(path)?;
    let metadata = file.metadata()?;
    if !metadata.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    let me = nix::unistd::geteuid().as_raw();
    if let Some(why) = untrusted(metadata.mode(), metadata.uid(), me) {
        return Err(std::io::Error::other(format!(
            "{why}; whoever can change it could point the locks at servers of their own or \
             turn their safety off, so it is not used: {}",
            advice(metadata.mode(), metadata.uid(), me, path)
        )));
    }
    if metadata.len() > MAX_FILE_BYTES {
        return Err(std::io::Error::other("larger than 1 MiB"));
    }
    let mut contents = Vec::new();
    file.take(MAX_FILE_BYTES + 1).read_to_end(&mut contents)?;
    if contents.len() as u64 > MAX_FILE_BYTES {
        return Err(std::io::Error::other("larger than 1 MiB"));
    }
    Ok((contents, metadata.mode()))
}

/// The one rule for every file redlock takes servers, settings or trust
/// from (the servers file, the config file, the CA file): it is refused
/// when anyone but its owner can write it (group or others), or when its
/// owner is neither `me` (the effective user) nor root. `Some` of why.
fn untrusted(mode: u32, owner: u32, me: u32) -> Option<String> {
    if mode & 0o022 != 0 {
        let who = match mode & 0o022 {
            0o002 => "others",
            0o020 => "its group",
            _ => "its group and others",
        };
        return Some(format!(
            "it can be written by {who} (mode {:04o})",
            mode & 0o7777
        ));
    }
    if owner != me && owner != 0 {
        return Some(format!(
            "it is owned by uid {owner}, neither this user (uid {me}) nor root"
        ));
    }
    None
}

/// What to do about an untrusted file.
fn advice(mode: u32, owner: u32, me: u32, path: &Path) -> String {
    let path = shown_path(path);
    match (mode & 0o022 != 0, owner != me && owner != 0) {
        (true, false) => format!("chmod go-w {path}"),
        (false, _) => format!("make it yours or root's (chown {me} {path}), or use a copy"),
        (true, true) => format!("chmod go-w {path} and chown {me} {path}, or use a copy"),
    }
}

/// The text of a file without the UTF-8 byte order mark some editors put
/// at its start: the one rule for the servers file and the config file,
/// where it is skipped (it is invisible, and no setting or URL starts
/// with it).
pub fn without_bom(text: &[u8]) -> &[u8] {
    text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(text)
}

/// A path in a message: escaped, so that a name cannot break the line, and
/// redacted, in case a server URL with its password was given as a path.
pub fn shown_path(path: &Path) -> String {
    crate::redact::urls(&escape_bytes(path.as_os_str().as_encoded_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn a_byte_order_mark_is_skipped_at_the_start_only() {
        assert_eq!(without_bom(b"\xEF\xBB\xBFprefix = a"), b"prefix = a");
        assert_eq!(without_bom(b"prefix = a"), b"prefix = a");
        assert_eq!(without_bom(b"a\xEF\xBB\xBF"), b"a\xEF\xBB\xBF");
    }

    #[test]
    fn a_url_given_as_a_path_is_shown_without_its_password() {
        let shown = shown_path(Path::new("redis://:pw@h:1"));
        assert_eq!(shown, "redis://:***@h:1");
    }

    #[test]
    fn files_must_be_small_regular_files() {
        for path in ["/dev/zero", "/dev/null", "/"] {
            let err = read_small_file(Path::new(path)).unwrap_err();
            assert!(
                err.to_string().contains("not a regular file"),
                "{path}: {err}"
            );
        }
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big");
        std::fs::write(&big, vec![b'#'; 1024 * 1024 + 1]).unwrap();
        assert!(read_small_file(&big).is_err());
    }

    #[test]
    fn a_file_others_can_change_or_own_is_untrusted() {
        let me = 1000;
        for mode in [0o100600, 0o100644, 0o100400, 0o100755] {
            assert_eq!(untrusted(mode, me, me), None, "{mode:o}");
            assert_eq!(untrusted(mode, 0, me), None, "root's: {mode:o}");
        }
        let why = untrusted(0o100666, me, me).unwrap();
        assert_eq!(why, "it can be written by its group and others (mode 0666)");
        assert!(untrusted(0o100664, 0, me)
            .unwrap()
            .contains("its group (mode 0664)"));
        assert!(untrusted(0o100646, me, me)
            .unwrap()
            .contains("by others (mode 0646)"));
        let why = untrusted(0o100600, 1234, me).unwrap();
        assert_eq!(
            why,
            "it is owned by uid 1234, neither this user (uid 1000) nor root"
        );
        // Root reads only its own files and no one else's.
        assert!(untrusted(0o100600, 1000, 0).is_some());
        assert_eq!(untrusted(0o100600, 0, 0), None);
    }

    #[test]
    fn only_a_file_that_is_not_there_at_all_is_passed_over() {
        let dir = tempfile::tempdir().unwrap();
        let path = |name: &str| dir.path().join(name);
        std::fs::write(path("file"), "x").unwrap();
        assert_eq!(is_there(&path("file")), Ok(true));
        assert_eq!(is_there(&path("absent")), Ok(false));
        assert_eq!(is_there(&path("absent/deeper/still")), Ok(false));
        // A link to a file is the file.
        symlink(path("file"), path("good-link")).unwrap();
        assert_eq!(is_there(&path("good-link")), Ok(true));
        // A dangling link, in place of the file or of a directory.
        symlink(path("gone"), path("dangling")).unwrap();
        let why = is_there(&path("dangling")).unwrap_err();
        assert!(
            why.contains("symbolic link to") && why.contains("gone"),
            "{why}"
        );
        let why = is_there(&path("dangling/redlock/servers")).unwrap_err();
        assert!(why.contains("dangling is a symbolic link"), "{why}");
        // A file where a directory should be.
        let why = is_there(&path("file/servers")).unwrap_err();
        assert!(why.contains("cannot be looked up"), "{why}");
    }
}
