//! The text of each script as sent: its preludes, then the script itself.
//! A top-level script names the preludes it needs, in order, on its first
//! line (`-- requires: guard holder queue`); a prelude names its includers
//! on its own first line (`-- required by: acquire inspect list`), and a
//! test keeps the two in agreement. Comment lines are left out of what is
//! sent. tests/cli/lua.rs assembles the files on disk by the same rules.

use std::sync::{LazyLock, OnceLock};

/// A script, by name, and its text as sent.
pub struct LuaScript {
    pub name: &'static str,
    pub source: String,
    /// Whether it runs the restart guard (guard.lua), whose last argument
    /// is the db index the connection selected (`Connection::invoke`).
    pub reads_guard: bool,
    /// Worked out on first use only: most runs send each script once, with
    /// EVAL, and never need it (hashing the ~13 KB is not free).
    sha1: OnceLock<String>,
}

/// The files put in front of the scripts that require them.
const PRELUDES: &[(&str, &str)] = &[
    ("guard", include_str!("guard.lua")),
    ("holder", include_str!("holder.lua")),
    ("queue", include_str!("queue.lua")),
    ("fence", include_str!("fence.lua")),
    ("reader_records", include_str!("reader_records.lua")),
    ("shared", include_str!("shared.lua")),
    ("token", include_str!("token.lua")),
    ("limit", include_str!("limit.lua")),
];

/// The scripts redlock runs.
const SCRIPTS: &[(&str, &str)] = &[
    ("acquire", include_str!("acquire.lua")),
    ("release", include_str!("release.lua")),
    ("extend", include_str!("extend.lua")),
    ("inspect", include_str!("inspect.lua")),
    ("list", include_str!("list.lua")),
    ("force", include_str!("force.lua")),
    ("leave", include_str!("leave.lua")),
    ("raise_fence", include_str!("raise_fence.lua")),
];

const REQUIRES: &str = "-- requires:";
#[cfg(test)]
const REQUIRED_BY: &str = "-- required by:";

/// The names a first line starting with `tag` lists.
fn names<'a>(source: &'a str, tag: &str) -> Option<Vec<&'a str>> {
    let line = source.lines().next()?.strip_prefix(tag)?;
    Some(line.split_whitespace().collect())
}

fn lookup(table: &[(&'static str, &'static str)], name: &str) -> Option<&'static str> {
    table
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, source)| *source)
}

/// `source` without its comment lines, blank lines and indentation: what
/// is sent. A process's first call of a script on a connection is an EVAL
/// of the whole text, which the server hashes (SHA1) on every EVAL; the
/// comments were more than half of it (31 KB for the acquire script).
/// Lua needs none of it; a comment after code on a line stays.
fn compact(source: &str) -> String {
    source
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with("--"))
        .flat_map(|line| [line, "\n"])
        .collect()
}

impl LuaScript {
    /// The script `name` with its preludes in front. Panics on a script
    /// without its `-- requires:` line or naming an unknown prelude: a
    /// mistake in the files compiled in, which every test run catches.
    fn assemble(name: &'static str) -> Self {
        let script = lookup(SCRIPTS, name).unwrap_or_else(|| panic!("no script {name}"));
        let preludes = names(script, REQUIRES)
            .unwrap_or_else(|| panic!("{name}.lua does not start with {REQUIRES:?}"));
        let mut source: String = preludes
            .iter()
            .map(|p| lookup(PRELUDES, p).unwrap_or_else(|| panic!("{name}.lua: no prelude {p}")))
            .collect();
        source.push_str(script);
        let source = compact(&source);
        LuaScript {
            name,
            reads_guard: preludes.contains(&"guard"),
            source,
            sha1: OnceLock::new(),
        }
    }

    /// The script's SHA1, the name EVALSHA knows it by.
    pub fn sha1(&self) -> &str {
        self.sha1
            .get_or_init(|| redis::Script::new(&self.source).get_hash().to_owned())
    }
}

/// `SET NX PX` and the holder record, unless the restart guard keeps this
/// server out or others are first in line (see [`super::Acquire`]).
pub static ACQUIRE: LazyLock<LuaScript> = LazyLock::new(|| LuaScript::assemble("acquire"));

/// Compare-and-delete (see [`super::Release`]).
pub static RELEASE: LazyLock<LuaScript> = LazyLock::new(|| LuaScript::assemble("release"));

/// Compare-and-expire (see [`super::Extend`]).
pub static EXTEND: LazyLock<LuaScript> = LazyLock::new(|| LuaScript::assemble("extend"));

/// What one server holds for a lock, for `status` (see [`super::Inspect`]).
pub static INSPECT: LazyLock<LuaScript> = LazyLock::new(|| LuaScript::assemble("inspect"));

/// What one server holds for many locks, for `list` (see [`super::List`]).
pub static LIST: LazyLock<LuaScript> = LazyLock::new(|| LuaScript::assemble("list"));

/// `release --force` (see [`super::Force`]).
pub static FORCE: LazyLock<LuaScript> = LazyLock::new(|| LuaScript::assemble("force"));

/// A waiter leaves the line (see [`super::Leave`]).
pub static LEAVE: LazyLock<LuaScript> = LazyLock::new(|| LuaScript::assemble("leave"));

/// The fencing round's write (see [`super::RaiseFence`]).
pub static RAISE_FENCE: LazyLock<LuaScript> = LazyLock::new(|| LuaScript::assemble("raise_fence"));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_script_assembles_with_its_preludes_first() {
        let acquire = LuaScript::assemble("acquire");
        let expected = [
            include_str!("guard.lua"),
            include_str!("holder.lua"),
            include_str!("queue.lua"),
            include_str!("fence.lua"),
            include_str!("reader_records.lua"),
            include_str!("shared.lua"),
            include_str!("limit.lua"),
            include_str!("acquire.lua"),
        ]
        .concat();
        assert_eq!(acquire.source, compact(&expected));
        assert!(!acquire.source.contains("\n--"), "a comment line was sent");
        assert_eq!(acquire.sha1().len(), 40);
        assert_eq!(
            acquire.sha1(),
            sha1_smol::Sha1::from(&acquire.source).digest().to_string()
        );
        for (name, _) in SCRIPTS {
            let script = LuaScript::assemble(name);
            assert!(script
                .source
                .ends_with(&compact(lookup(SCRIPTS, name).unwrap())));
        }
    }

    #[test]
    fn each_prelude_names_exactly_the_scripts_that_require_it() {
        for (prelude, source) in PRELUDES {
            let mut said = names(source, REQUIRED_BY)
                .unwrap_or_else(|| panic!("{prelude}.lua does not start with {REQUIRED_BY:?}"));
            let mut actual: Vec<&str> = SCRIPTS
                .iter()
                .filter(|(_, script)| names(script, REQUIRES).unwrap().contains(prelude))
                .map(|(name, _)| *name)
                .collect();
            said.sort_unstable();
            actual.sort_unstable();
            assert_eq!(said, actual, "{prelude}.lua's first line");
        }
    }
}
