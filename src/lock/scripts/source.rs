//! Each script's text as sent, in every mode, composed by build.rs
//! (compose.rs) before the program is built: a run looks its text up and
//! pays nothing for the composition, nor for hashing it.

pub use super::compose::{composed, composition, keys_sent, mode_of, Features};

/// A script, by name, and its text as sent in one mode.
pub struct LuaScript {
    pub name: &'static str,
    /// The mode it was composed for.
    pub features: Features,
    /// Where its text is in [`TEXTS`].
    text: (usize, usize),
    /// Whether it runs the restart guard (guard.lua), whose last argument
    /// is the db index the connection selected (`Connection::invoke_once`).
    pub reads_guard: bool,
    /// Which of a call's KEYS it reads (1-based, in the order the scripts
    /// name them): a call passes only those, and the text reads them
    /// renumbered from 1 ([`Self::keys_sent`]). `None` for a script that
    /// indexes KEYS by a variable (list.lua), which gets every key.
    keys_read: Option<&'static [usize]>,
    sha1: &'static str,
}

impl LuaScript {
    /// The text as sent.
    pub fn source(&self) -> &'static str {
        &TEXTS[self.text.0..self.text.1]
    }

    /// Of a call's `keys`, those its text reads, in order.
    pub fn keys_sent<T: Clone>(&self, keys: &[T]) -> Vec<T> {
        keys_sent(self.keys_read, keys)
    }

    /// The script's SHA1, the name EVALSHA knows it by.
    pub fn sha1(&self) -> &str {
        self.sha1
    }
}

// Every mode of every script (`ALL`), composed and hashed by build.rs.
include!(concat!(env!("OUT_DIR"), "/composed_lua.rs"));

/// Their texts, one after another.
static TEXTS: &str = include_str!(concat!(env!("OUT_DIR"), "/composed_lua.txt"));

/// The script `name` as sent in the mode `features`. Panics on a mode the
/// script does not have ([`MODES`]): a bug of the call's `script()`.
pub fn lua(name: &str, features: Features) -> &'static LuaScript {
    ALL.iter()
        .find(|script| script.features == features && script.name == name)
        .unwrap_or_else(|| panic!("no script {name} in mode {features:?}"))
}

#[cfg(test)]
mod tests {
    use super::super::compose::{every_mode, reads_guard};
    use super::*;

    /// What build.rs generated is what the composition gives now, and
    /// every mode of every script is there.
    #[test]
    fn every_generated_text_is_the_composed_one() {
        let modes = every_mode();
        assert_eq!(ALL.len(), modes.len());
        for (name, features, (source, keys_read)) in modes {
            let script = lua(name, features);
            assert_eq!(script.source(), source, "{name} {features:?}");
            let sha1 = sha1_smol::Sha1::from(&source).digest().to_string();
            assert_eq!(script.sha1(), sha1);
            assert_eq!(script.keys_read, keys_read.as_deref());
            assert_eq!(script.reads_guard, reads_guard(&source));
        }
    }
}
