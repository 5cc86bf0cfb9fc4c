//! What the user should hear about how the command was given: secrets where
//! others can read them.

use crate::lock::escape_bytes;

/// Something about how the command was given that the user should hear.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// A `-s` URL holds a password, which every user can read in `ps`.
    PasswordOnCommandLine,
    /// This servers file holds a password and is readable by others.
    ReadableSecretFile(std::path::PathBuf),
}

/// What the user should hear about how the command was given.
impl Notice {
    pub fn text(&self) -> String {
        match self {
            Notice::PasswordOnCommandLine => {
                "a password given with -s can be read by every user of \
            this host (ps, /proc/PID/cmdline) while redlock runs; put the servers in a file only \
            you can read (--servers-file, ~/.config/redlock/servers) or in REDLOCK_SERVERS"
                    .into()
            }
            Notice::ReadableSecretFile(path) => {
                let path = escape_bytes(path.as_os_str().as_encoded_bytes());
                format!(
                    "servers file {path} holds a password and can be read by group or others; \
                 chmod 600 {path}"
                )
            }
        }
    }
}
