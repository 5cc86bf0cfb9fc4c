//! What `exec` tells its command about the servers, so that a `redlock`
//! inside the command reaches the same ones without a secret in its
//! environment or argv:
//!
//! - servers without secrets: `REDLOCK_SERVERS` with the same list;
//! - servers with a secret, from a servers file: `REDLOCK_SERVERS_FILE` with
//!   that file's absolute path;
//! - servers with a secret from `-s` or `REDLOCK_SERVERS`: a file of mode
//!   0600 in a new directory of mode 0700 (under `$XDG_RUNTIME_DIR` when it
//!   is private, else `/dev/shm`, else the temporary directory), named by
//!   `REDLOCK_SERVERS_FILE` and removed when the command has ended (by
//!   `exec`, or by its watchdog when `exec` was killed);
//!   `REDLOCK_SERVERS` is taken out of the command's environment. The
//!   directory's name says who keeps it: `exec` and its watchdog, by pid
//!   (`redlock-NS-PID-PID-XXXXXX`, NS the pid namespace). One that both
//!   left behind (both killed at once, by a cgroup's kill or `pkill -9`)
//!   is swept by the next `exec` (of any servers) that finds it there.
//!
//! No descriptor is inherited: an open descriptor can be read by whoever
//! holds it, also after a change of user (setpriv, gosu, su-exec), while a
//! path is opened with the permissions of the process that opens it. So a
//! descendant of the same user reads the file (a nested `redlock`), one that
//! became another user cannot, and root can, as it can read anything.
//!
//! The prefix, the CA file, the restart guard and the config file go with
//! them, so that `redlock status NAME` inside the command looks at the same
//! key the same way. The prefix is set even when empty: an unset
//! `REDLOCK_PREFIX` would let the config file's prefix apply instead.

use std::ffi::OsString;
use std::io::Write as _;
use std::os::unix::ffi::OsStringExt as _;
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

use crate::config::{ServerSource, Servers};
use crate::lock::ServerSpec;

/// The settings a nested `redlock` needs.
#[derive(Debug)]
pub struct Handoff {
    pub specs: Vec<ServerSpec>,
    pub source: ServerSource,
    pub prefix: Vec<u8>,
    pub tls_ca_cert: Option<PathBuf>,
    pub restart_guard: std::time::Duration,
    /// The config file this `redlock` read, if any.
    pub config_file: Option<PathBuf>,
}

/// The command's environment changes, and the private servers file they
/// name, if any, removed when this is dropped (after the command ended).
#[derive(Debug, Default)]
pub struct ChildEnv {
    pub set: Vec<(&'static str, OsString)>,
    pub remove: Vec<&'static str>,
    pub file: Option<PrivateFile>,
}

impl Handoff {
    pub fn new(servers: &Servers) -> Handoff {
        Handoff {
            specs: servers.specs.clone(),
            source: servers.source.clone(),
            prefix: servers.prefix.clone(),
            tls_ca_cert: servers.tls_ca_cert.clone(),
            restart_guard: servers.restart_guard,
            config_file: servers.config_file.clone(),
        }
    }

    /// The command's environment; a private servers file, if one is
    /// needed, is kept by this process and its watchdog, process `watchdog`.
    pub fn child_env(&self, watchdog: i32) -> std::io::Result<ChildEnv> {
        // Whatever an exec and its watchdog killed together left behind.
        if let Some(namespace) = pid_namespace() {
            sweep(&private_base(), namespace);
        }
        let mut env = ChildEnv::default();
        let has_secret = self.specs.iter().any(ServerSpec::has_secret);
        match (&self.source, has_secret) {
            (_, false) => {
                let urls: Vec<&str> = self.specs.iter().map(ServerSpec::secret_url).collect();
                env.set.push(("REDLOCK_SERVERS", urls.join(",").into()));
            }
            (ServerSource::File(path), true) => {
                env.remove.push("REDLOCK_SERVERS");
                let path = std::path::absolute(path)?;
                env.set
                    .push(("REDLOCK_SERVERS_FILE", path.into_os_string()));
            }
            (_, true) => {
                env.remove.push("REDLOCK_SERVERS");
                let file = PrivateFile::create(&self.specs, watchdog)?;
                let path = file.path().as_os_str().to_owned();
                env.set.push(("REDLOCK_SERVERS_FILE", path));
                env.file = Some(file);
            }
        }
        env.set
            .push(("REDLOCK_PREFIX", OsString::from_vec(self.prefix.clone())));
        // The same guard, so that a nested status counts the servers as
        // this exec did (a flag here would otherwise not reach it).
        let guard = format!("{}ms", self.restart_guard.as_millis());
        env.set.push(("REDLOCK_RESTART_GUARD", guard.into()));
        if let Some(file) = &self.config_file {
            let file = std::path::absolute(file)?;
            env.set.push(("REDLOCK_CONFIG_FILE", file.into_os_string()));
        }
        if let Some(ca) = &self.tls_ca_cert {
            let ca = std::path::absolute(ca)?;
            env.set.push(("REDLOCK_TLS_CA_CERT", ca.into_os_string()));
        }
        Ok(env)
    }
}

/// A servers file only this user can open, in a directory of its own; both
/// are removed on drop.
#[derive(Debug)]
pub struct PrivateFile {
    dir: PathBuf,
}

impl PrivateFile {
    const NAME: &'static str = "servers";

    /// Writes the servers to a new private file, kept by this process and
    /// process `watchdog`.
    fn create(specs: &[ServerSpec], watchdog: i32) -> std::io::Result<PrivateFile> {
        let template = private_base().join(format!(
            "redlock-{}-{}-{watchdog}-XXXXXX",
            pid_namespace().unwrap_or(0),
            std::process::id()
        ));
        // mkdtemp: a new directory of mode 0700 with an unguessable name.
        let file = PrivateFile {
            dir: nix::unistd::mkdtemp(&template)?,
        };
        let mut out = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(nix::libc::O_NOFOLLOW)
            .open(file.path())?;
        for spec in specs {
            writeln!(out, "{}", spec.secret_url())?;
        }
        Ok(file)
    }

    pub fn path(&self) -> PathBuf {
        self.dir.join(Self::NAME)
    }

    /// The private file at `path`, as [`Self::path`] named it, for a process
    /// that did not create it to remove it on drop: `exec`'s watchdog, once
    /// `exec` was killed before it could. `None` for a path of another
    /// shape.
    pub fn at(path: &Path) -> Option<PrivateFile> {
        if path.file_name()? != Self::NAME {
            return None;
        }
        let dir = path.parent()?;
        let named = dir.file_name()?.to_str()?.starts_with("redlock-");
        named.then(|| PrivateFile {
            dir: dir.to_path_buf(),
        })
    }
}

impl Drop for PrivateFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(self.path());
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// Where the private directory goes: `$XDG_RUNTIME_DIR` when it is an
/// absolute directory of this user that no one else may enter (a tmpfs,
/// gone at logout), else `/dev/shm` (memory, not disk), else the
/// temporary directory.
fn private_base() -> PathBuf {
    let runtime = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute() && is_private_dir(dir));
    let shm = Path::new("/dev/shm");
    runtime
        .or_else(|| shm.is_dir().then(|| shm.to_path_buf()))
        .unwrap_or_else(std::env::temp_dir)
}

/// This process's pid namespace (the number in `/proc/self/ns/pid`), so
/// that a directory made in another one (a container sharing the
/// directory) is never taken for one whose keepers are gone.
fn pid_namespace() -> Option<u64> {
    let link = std::fs::read_link("/proc/self/ns/pid").ok()?;
    let link = link.to_str()?;
    link.strip_prefix("pid:[")?.strip_suffix(']')?.parse().ok()
}

/// The pids that keep a private directory named `name`, made in the pid
/// namespace `namespace`; `None` for any other name.
fn keepers_of(name: &str, namespace: u64) -> Option<[i32; 2]> {
    let mut parts = name.strip_prefix("redlock-")?.split('-');
    let [Some(made_in), Some(exec), Some(watchdog), Some(random), None] =
        [(); 5].map(|()| parts.next())
    else {
        return None;
    };
    let ours = made_in.parse::<u64>().ok()? == namespace && random.len() == 6;
    let keepers = [exec.parse().ok()?, watchdog.parse().ok()?];
    (ours && keepers.iter().all(|&pid| pid > 0)).then_some(keepers)
}

/// Whether process `pid` runs (one of another user does; a zombie, which
/// can remove nothing, does not).
fn runs(pid: i32) -> bool {
    let there = !matches!(
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None),
        Err(nix::errno::Errno::ESRCH)
    );
    // The state follows the command name's closing parenthesis. Unreadable
    // (hidepid): taken for running.
    let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z'))
    });
    there && !zombie
}

/// Removes the private directories in `base` (and their servers file)
/// that this user made in this pid namespace and that neither of their
/// keepers is left to remove: both were killed at once. A pid taken again
/// by another process keeps its directory: a leftover, never a removal
/// too many.
fn sweep(base: &Path, namespace: u64) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(keepers) = name.to_str().and_then(|name| keepers_of(name, namespace)) else {
            continue;
        };
        if keepers.into_iter().any(runs) {
            continue;
        }
        let dir = entry.path();
        // Not through a link, and only a directory as mkdtemp made it.
        let made_here = std::fs::symlink_metadata(&dir).is_ok_and(|meta| {
            meta.is_dir()
                && meta.uid() == nix::unistd::geteuid().as_raw()
                && meta.mode() & 0o077 == 0
        });
        if made_here {
            drop(PrivateFile { dir });
        }
    }
}

fn is_private_dir(dir: &Path) -> bool {
    std::fs::metadata(dir).is_ok_and(|meta| {
        meta.is_dir() && meta.uid() == nix::unistd::geteuid().as_raw() && meta.mode() & 0o077 == 0
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    #[test]
    fn the_private_file_is_this_users_alone_and_goes_away() {
        let specs = [ServerSpec::parse("redis://:pw@127.0.0.1:1").unwrap()];
        let file = PrivateFile::create(&specs, 1).unwrap();
        let path = file.path();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "redis://:pw@127.0.0.1:1\n"
        );
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700);
        drop(file);
        assert!(!path.exists() && !path.parent().unwrap().exists());
    }

    #[test]
    fn a_private_file_is_found_again_by_its_path_only() {
        let specs = [ServerSpec::parse("redis://:pw@127.0.0.1:1").unwrap()];
        let file = PrivateFile::create(&specs, 1).unwrap();
        let path = file.path();
        std::mem::forget(file);
        assert!(PrivateFile::at(Path::new("/tmp/servers")).is_none());
        assert!(PrivateFile::at(&path.with_file_name("other")).is_none());
        drop(PrivateFile::at(&path).expect("its own path"));
        assert!(!path.exists() && !path.parent().unwrap().exists());
    }

    #[test]
    fn only_names_of_this_namespace_with_two_pids_have_keepers() {
        assert_eq!(keepers_of("redlock-7-12-13-aB3xZ9", 7), Some([12, 13]));
        assert_eq!(keepers_of("redlock-8-12-13-aB3xZ9", 7), None);
        assert_eq!(keepers_of("redlock-aB3xZ9", 7), None);
        assert_eq!(keepers_of("redlock-7-12-13-aB3", 7), None);
        assert_eq!(keepers_of("redlock-7-12-13-aB3xZ9-x", 7), None);
        assert_eq!(keepers_of("redlock-7-0-13-aB3xZ9", 7), None);
        assert_eq!(keepers_of("redlock-7--1-13-aB3xZ9", 7), None);
        assert_eq!(keepers_of("other-7-12-13-aB3xZ9", 7), None);
    }
}
