//! What the user should hear about how the command was given: secrets
//! where others can read them, server lists others can change. Data only:
//! `output` words it.

/// Something about how the command was given that the user should hear.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// A `-s` URL holds a password, which every user can read in `ps`.
    PasswordOnCommandLine,
    /// This servers file holds a password and is readable by others.
    ReadableSecretFile(std::path::PathBuf),
    /// This servers file can be written by group or others, who could
    /// point the lock at servers of their own.
    WritableServersFile(std::path::PathBuf),
}
