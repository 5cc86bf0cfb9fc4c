//! What `exec` tells its command about the servers, so that a `redlock`
//! inside the command reaches the same ones without a secret in its
//! environment or argv:
//!
//! - servers without secrets: `REDLOCK_SERVERS` with the same list;
//! - servers with a secret, from a servers file: `REDLOCK_SERVERS_FILE` with
//!   that file's absolute path;
//! - servers with a secret from `-s` or `REDLOCK_SERVERS`: an anonymous
//!   in-memory file (memfd) holding the list, readable only by this user,
//!   inherited by the command and named by `REDLOCK_SERVERS_FILE=/dev/fd/N`.
//!   It lives as long as a process holds it open; `REDLOCK_SERVERS` is taken
//!   out of the command's environment.
//!
//! The prefix, the CA file, the restart guard and the config file go with
//! them, so that `redlock status NAME` inside the command looks at the same
//! key the same way. The prefix is set even when empty: an unset
//! `REDLOCK_PREFIX` would let the config file's prefix apply instead.

use std::ffi::OsString;
use std::io::Write as _;
use std::os::fd::{AsRawFd as _, OwnedFd};
use std::os::unix::ffi::OsStringExt as _;
use std::path::PathBuf;

use nix::sys::memfd::{memfd_create, MFdFlags};
use nix::sys::stat::{fchmod, Mode};

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

/// The command's environment changes, and the descriptor the command must
/// inherit (it stays open here until the command has started).
#[derive(Debug, Default)]
pub struct ChildEnv {
    pub set: Vec<(&'static str, OsString)>,
    pub remove: Vec<&'static str>,
    pub file: Option<OwnedFd>,
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

    pub fn child_env(&self) -> std::io::Result<ChildEnv> {
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
                let file = self.memory_file()?;
                let path = format!("/dev/fd/{}", file.as_raw_fd());
                env.set.push(("REDLOCK_SERVERS_FILE", path.into()));
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

    /// The server list in an in-memory file of mode 0600. Close-on-exec, so
    /// that no process but the command inherits it (not the watchdog); the
    /// command's spawn keeps it open for the command alone.
    fn memory_file(&self) -> std::io::Result<OwnedFd> {
        let fd = memfd_create(c"redlock-servers", MFdFlags::MFD_CLOEXEC)?;
        fchmod(&fd, Mode::S_IRUSR | Mode::S_IWUSR)?;
        let mut file = std::fs::File::from(fd);
        for spec in &self.specs {
            writeln!(file, "{}", spec.secret_url())?;
        }
        Ok(file.into())
    }
}
