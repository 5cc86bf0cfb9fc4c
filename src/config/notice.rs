//! What the user should hear about how the command was given: secrets
//! where others can read them (a file others can change is refused, not
//! noticed: config/file.rs). Data only:
//! `output` words it.

/// Something about how the command was given that the user should hear.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// A `-s` URL holds a password, which every user can read in `ps`.
    PasswordOnCommandLine,
    /// This servers file holds a password and is readable by others.
    ReadableSecretFile(std::path::PathBuf),
}
