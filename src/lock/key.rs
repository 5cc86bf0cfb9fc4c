//! The names and values a lock is made of: the key (arbitrary bytes on the
//! wire, escaped only when shown) and the random token that marks one holder.

use std::fmt;
use std::sync::Arc;

/// A lock's key as it travels on the wire: arbitrary bytes, escaped only when
/// shown to a person; shown by its name, without the `--prefix` it is kept
/// under, as the user gives it to every command.
#[derive(Clone, PartialEq, Eq)]
pub struct LockKey(Arc<(Vec<u8>, usize)>);

impl LockKey {
    pub fn new(bytes: Vec<u8>) -> Self {
        LockKey(Arc::new((bytes, 0)))
    }

    /// The key of the lock `name` under `prefix`.
    pub fn prefixed(prefix: &[u8], name: &[u8]) -> Self {
        LockKey(Arc::new(([prefix, name].concat(), prefix.len())))
    }

    /// The key: the prefix and the name.
    pub fn bytes(&self) -> &[u8] {
        &self.0 .0
    }

    /// The name, without the prefix.
    pub fn name(&self) -> &[u8] {
        &self.0 .0[self.0 .1..]
    }
}

impl fmt::Display for LockKey {
    /// The name, quoted, with control characters, quotes and invalid UTF-8
    /// escaped, so that a name can neither break a log line nor spoof a
    /// terminal.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{}\"", escape_bytes(self.name()))
    }
}

impl fmt::Debug for LockKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Printable text for arbitrary bytes: valid UTF-8 is kept except for what
/// would not show as itself (see [`is_hidden`]), which becomes `\u{…}` or
/// `\n`-style; invalid bytes become `\xNN`.
pub fn escape_bytes(bytes: &[u8]) -> String {
    escape_up_to(bytes, usize::MAX).0
}

/// How many characters of a text that came from a server are shown.
pub const SERVER_TEXT_SHOWN: usize = 200;

/// Text that came from a server (an error, a value, a type), fit for a
/// terminal and a log line: escaped as by [`escape_bytes`], so on one line,
/// and cut after `limit` characters with `…[+N bytes]` for the N bytes of it
/// that are not shown.
pub fn escape_and_cut(bytes: &[u8], limit: usize) -> String {
    let (mut shown, used) = escape_up_to(bytes, limit);
    if used < bytes.len() {
        shown.push_str(&format!("…[+{} bytes]", bytes.len() - used));
    }
    shown
}

/// The escaped text of the longest start of `bytes` that fits in `limit`
/// characters, never cutting an escape in two, and how many bytes that is.
fn escape_up_to(bytes: &[u8], limit: usize) -> (String, usize) {
    let mut shown = String::with_capacity(bytes.len().min(limit));
    let (mut chars, mut used) = (0, 0);
    let mut piece = String::new();
    for chunk in bytes.utf8_chunks() {
        let valid = chunk.valid().chars().map(|c| (c.len_utf8(), Ok(c)));
        let invalid = chunk.invalid().iter().map(|&byte| (1, Err(byte)));
        for (len, unit) in valid.chain(invalid) {
            piece.clear();
            match unit {
                // escape_debug also escapes single quotes, which are common
                // in shell command lines and harmless inside double quotes.
                Ok('\'') => piece.push('\''),
                Ok(c) if LOOKALIKE_BLANKS.contains(&c) => {
                    piece.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
                }
                Ok(c) => piece.extend(c.escape_debug()),
                Err(byte) => piece.push_str(&format!("\\x{byte:02x}")),
            }
            let width = piece.chars().count();
            if chars + width > limit {
                return (shown, used);
            }
            shown.push_str(&piece);
            chars += width;
            used += len;
        }
    }
    (shown, used)
}

/// Characters that show as a blank without being whitespace, so that
/// `char::escape_debug` keeps them: Hangul fillers and the Braille blank.
/// A name or a holder made of them would look empty, or like another.
const LOOKALIKE_BLANKS: [char; 5] = ['\u{115f}', '\u{1160}', '\u{2800}', '\u{3164}', '\u{ffa0}'];

/// Whether `c` would not show as itself on a terminal: a control (C0, DEL,
/// C1), a bidirectional override or other invisible formatting, a line
/// separator, whitespace other than the space, or a look-alike blank. Text
/// escapes these, and JSON writes them as `\uXXXX`.
pub fn is_hidden(c: char) -> bool {
    // Most text is ASCII: only its controls (C0 and DEL) are hidden.
    if c.is_ascii() {
        return c.is_ascii_control();
    }
    LOOKALIKE_BLANKS.contains(&c) || c.escape_debug().nth(1).is_some()
}

/// The random value that marks one holder's ownership of a lock.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(Arc<str>);

impl Token {
    /// Whether the operating system's CSPRNG answers: asked once before a
    /// lock command makes its first token, so that a process without one
    /// (a static binary whose getrandom falls back to a missing
    /// /dev/urandom) stops with an error instead of a panic.
    pub fn random_source() -> Result<(), getrandom::Error> {
        getrandom::fill(&mut [0u8; 16])
    }

    /// 128 bits from the operating system's CSPRNG, as 32 hex digits.
    pub fn generate() -> Self {
        let mut bytes = [0u8; 16];
        // getrandom fails only where the OS has no CSPRNG at all, which
        // `random_source` ruled out; there is no safe way to take a lock
        // without one.
        getrandom::fill(&mut bytes).expect("the OS random number generator failed");
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        Token(hex.into())
    }

    /// A token given back by the user, e.g. from `$REDLOCK_TOKEN`.
    pub fn from_user(text: &str) -> Self {
        Token(text.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&escape_bytes(self.0.as_bytes()))
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

// ---------------------------------------------------------------------------
// What redlock keeps beside a lock: one layout, named in one place.
// ---------------------------------------------------------------------------

/// The byte every key redlock keeps beside a lock starts its suffix with
/// (the holder record, the line, the fence counter, the readers, …), as do
/// the restart guard's marker and the wake-up channels: each is a lock's key
/// (or the prefix), this byte, and a word without it. No name and no prefix
/// may hold it ([`reserved_in`]), however given (`--hex`, a config file), so
/// no key a user names is a key redlock keeps, and no two of those are one.
pub const RESERVED: u8 = 0;

/// Whether a name or a prefix holds [`RESERVED`], and so could name a key
/// redlock keeps beside a lock (`NAME` `\0holder`, `PREFIX` `\0guard`, …).
pub fn reserved_in(bytes: &[u8]) -> bool {
    bytes.contains(&RESERVED)
}

/// Appended to a lock's key to name its holder record. No name or prefix
/// may hold NUL ([`reserved_in`]), so no lock can collide with a record.
pub(super) const RECORD_SUFFIX: &[u8] = b"\0holder";

/// Appended to a lock's key to name its line (ordered by ticket), the
/// tickets' lapse times, and since when the line has kept the free lock
/// from callers; like the holder record's, no lock name can end so. Which
/// script gets which as which KEYS is [`super::scripts::LockKeys`].
pub(super) const LINE_SUFFIX: &[u8] = b"\0line";
pub(super) const LAPSE_SUFFIX: &[u8] = b"\0lapse";
pub(super) const FREE_SUFFIX: &[u8] = b"\0free";

/// Appended to a lock's key to name who broke it with `release --force`
/// and when: `"<server ms> <who>"`, kept for what was left of the lock's
/// TTL, so that its holder and `status` can tell.
pub(super) const BROKEN_SUFFIX: &[u8] = b"\0broken";

/// Appended to a lock's key to name its fencing counter: the highest
/// fencing token handed out for the name, kept without expiry, and only for
/// names ever taken with `--fence`.
pub(super) const FENCE_SUFFIX: &[u8] = b"\0fence";

/// Appended to a lock's key to name its shared holders (`--shared`): a
/// sorted set of tokens scored by when each lapses, in this server's clock.
pub(super) const READERS_SUFFIX: &[u8] = b"\0readers";

/// Appended to a lock's key to name its readers' holder records: a hash,
/// one field per reader's token, each as a writer's record is kept
/// (`"<since ms> <record>"`), expiring with the readers' set.
pub(super) const READER_RECORDS_SUFFIX: &[u8] = b"\0reader-records";

/// Appended to a semaphore's key (`--limit K`, the name without a slot) to
/// name the K its holders use, recorded on each server beside the slots
/// for as long as one is held there (limit.lua).
pub(super) const LIMIT_SUFFIX: &[u8] = b"\0limit";

/// Appended to a lock's key to name its superseding waiters
/// (`--supersede`, supersede.lua): a hash, ticket to who superseded it or
/// who waits, kept a minute after its last write.
pub(super) const SUPERSEDE_SUFFIX: &[u8] = b"\0supersede";

/// Appended to a lock's key to name a newer waiter's request that its
/// holder stop (`exec --cancel-in-progress`, cancel.lua): `"TOKEN WHO"`,
/// kept a minute.
pub(super) const CANCEL_SUFFIX: &[u8] = b"\0cancel";

/// The request that `key`'s holder stop.
pub(in crate::lock) fn cancel_key(key: &LockKey) -> Vec<u8> {
    [key.bytes(), CANCEL_SUFFIX].concat()
}

/// The hash of `key`'s superseding waiters.
pub(in crate::lock) fn supersede_key(key: &LockKey) -> Vec<u8> {
    [key.bytes(), SUPERSEDE_SUFFIX].concat()
}

/// Appended to a lock's key to name its done mark (`--once-per`, `--once`:
/// lock/once.rs): the id of the last run that succeeded, when, its status
/// and its holder record, kept until its period ends (or its keep time).
pub(super) const DONE_SUFFIX: &[u8] = b"\0done";

/// Appended to the prefix to name the restart guard's marker (guard.lua):
/// no lock name is empty or holds NUL, so no lock is called so. The "2" is
/// the marker's format: builds before it kept another one under
/// [`LEGACY_GUARD_SUFFIX`], and the two never read each other's (a fleet
/// that mixes them would otherwise keep rewriting it, and stay kept out).
const GUARD_SUFFIX: &[u8] = b"\0guard2";

/// The marker of builds before 0.2 (`"<since> <run_id> <evicted>"`).
const LEGACY_GUARD_SUFFIX: &[u8] = b"\0guard";

/// The restart guard's marker for the locks under `prefix`.
pub(super) fn guard_marker(prefix: &[u8]) -> Vec<u8> {
    [prefix, GUARD_SUFFIX].concat()
}

/// The marker a script on `key` uses: `marker`, or, for a name with a Redis
/// Cluster hash tag, one in the tag's slot (see [`hash_tagged_marker`]).
pub(super) fn marker_for(key: &[u8], marker: &[u8]) -> Vec<u8> {
    hash_tagged_marker(key).unwrap_or_else(|| marker.to_vec())
}

/// For a key with a hash tag (the first `{…}` with something inside, as
/// Redis Cluster reads it), a marker that hashes to the same slot: the key
/// up to the tag's `}`, then the marker's suffix. A cluster node runs a
/// script only on keys of one slot; every name with that tag (and the same
/// text before it) shares the marker. `None` for a key without a tag.
fn hash_tagged_marker(key: &[u8]) -> Option<Vec<u8>> {
    let open = key.iter().position(|&b| b == b'{')?;
    let close = open + 1 + key[open + 1..].iter().position(|&b| b == b'}')?;
    (close > open + 1).then(|| [&key[..=close], GUARD_SUFFIX].concat())
}

/// Whether `key` is one redlock keeps for a lock's line or its restart
/// guard, not a lock.
pub fn is_line_key(key: &[u8]) -> bool {
    [
        LINE_SUFFIX,
        LAPSE_SUFFIX,
        FREE_SUFFIX,
        GUARD_SUFFIX,
        LEGACY_GUARD_SUFFIX,
        BROKEN_SUFFIX,
        FENCE_SUFFIX,
        READERS_SUFFIX,
        READER_RECORDS_SUFFIX,
        LIMIT_SUFFIX,
        SUPERSEDE_SUFFIX,
        CANCEL_SUFFIX,
        DONE_SUFFIX,
    ]
    .iter()
    .any(|suffix| key.ends_with(suffix))
}

/// The holder record's key for `key`.
pub fn record_key(key: &LockKey) -> Vec<u8> {
    [key.bytes(), RECORD_SUFFIX].concat()
}

/// Whether `key` is one redlock keeps beside a lock (its holder record, or
/// its line of waiters) rather than a lock.
pub fn is_record_key(key: &[u8]) -> bool {
    key.ends_with(RECORD_SUFFIX) || is_line_key(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_would_not_show_as_itself_is_escaped() {
        assert_eq!(
            escape_bytes("a\u{9b}b\u{7f}".as_bytes()),
            "a\\u{9b}b\\u{7f}"
        );
        assert_eq!(
            escape_bytes("\u{202e}gpj.exe".as_bytes()),
            "\\u{202e}gpj.exe"
        );
        assert_eq!(
            escape_bytes("x\u{3164}\u{2800}".as_bytes()),
            "x\\u{3164}\\u{2800}"
        );
        assert_eq!(escape_bytes("déjà vu 'x'".as_bytes()), "déjà vu 'x'");
        for c in [
            '\u{9b}', '\u{7f}', '\u{202e}', '\u{2066}', '\u{200b}', '\u{a0}', '\u{3164}',
        ] {
            assert!(is_hidden(c), "{c:?}");
        }
        for c in ['a', 'é', ' ', '"', '\\', '\'', '日'] {
            assert!(!is_hidden(c), "{c:?}");
        }
    }

    #[test]
    fn names_are_escaped_only_for_display() {
        let key = LockKey::new(b"a b\n\x1b[31m\"\xff\xfe\xe2\x80\xae".to_vec());
        assert_eq!(key.bytes(), b"a b\n\x1b[31m\"\xff\xfe\xe2\x80\xae");
        assert_eq!(key.to_string(), r#""a b\n\u{1b}[31m\"\xff\xfe\u{202e}""#);
        assert_eq!(
            LockKey::new("déploiement 🚀".into()).to_string(),
            "\"déploiement 🚀\""
        );
    }

    #[test]
    fn server_text_is_escaped_and_cut_without_splitting_an_escape() {
        assert_eq!(escape_and_cut(b"short", 10), "short");
        assert_eq!(escape_and_cut(b"0123456789ab", 10), "0123456789…[+2 bytes]");
        // "ab\u{1b}" is 8 characters: it does not fit after 5 shown.
        assert_eq!(escape_and_cut(b"abcde\x1b[2J", 10), "abcde…[+4 bytes]");
        assert_eq!(escape_and_cut(b"ab\n\xffcd", 8), "ab\\n\\xff…[+2 bytes]");
        assert_eq!(escape_and_cut("é€x".as_bytes(), 2), "é€…[+1 bytes]");
        assert_eq!(escape_and_cut(b"", 0), "");
    }

    #[test]
    fn tokens_are_128_random_bits() {
        let a = Token::generate();
        let b = Token::generate();
        assert_eq!(a.as_str().len(), 32);
        assert!(a.as_str().bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }

    #[test]
    fn record_keys_cannot_be_lock_names() {
        let key = LockKey::new(b"redlock:deploy".to_vec());
        assert!(is_record_key(&record_key(&key)));
        assert!(!is_record_key(key.bytes()));
    }

    #[test]
    fn line_keys_are_not_lock_names() {
        for suffix in [
            LINE_SUFFIX,
            LAPSE_SUFFIX,
            FREE_SUFFIX,
            BROKEN_SUFFIX,
            READERS_SUFFIX,
            READER_RECORDS_SUFFIX,
            LIMIT_SUFFIX,
            DONE_SUFFIX,
        ] {
            assert!(is_line_key(&[b"deploy", suffix].concat()));
        }
        assert!(is_line_key(&guard_marker(b"app:")));
        assert!(!is_line_key(b"deploy"));
    }

    /// Every key redlock keeps beside the lock whose key is `key`.
    fn kept_beside(key: &[u8]) -> Vec<Vec<u8>> {
        [
            RECORD_SUFFIX,
            LINE_SUFFIX,
            LAPSE_SUFFIX,
            FREE_SUFFIX,
            BROKEN_SUFFIX,
            FENCE_SUFFIX,
            READERS_SUFFIX,
            READER_RECORDS_SUFFIX,
            SUPERSEDE_SUFFIX,
            CANCEL_SUFFIX,
            DONE_SUFFIX,
        ]
        .iter()
        .map(|suffix| [key, suffix].concat())
        .collect()
    }

    #[test]
    fn every_suffix_is_the_reserved_byte_and_a_word_without_it() {
        let mut suffixes = vec![GUARD_SUFFIX.to_vec()];
        suffixes.extend(kept_beside(b""));
        for suffix in suffixes {
            assert_eq!(suffix.first(), Some(&RESERVED), "{suffix:?}");
            assert!(suffix.len() > 1 && !reserved_in(&suffix[1..]), "{suffix:?}");
        }
    }

    #[test]
    fn no_name_without_the_reserved_byte_reaches_another_names_keys() {
        // Names that look like suffixes, hash tags, slots, globs: under one
        // prefix, each key is one name's lock, one name's kept key, or a
        // restart guard marker, and never two of these.
        let names: [&[u8]; 12] = [
            b"job",
            b"jobholder",
            b"holder",
            b"guard",
            b"{job}",
            b"{job}x",
            b"x{job}",
            b"job#0",
            b"job#0#1",
            b"*",
            b"job:fence",
            b"\xff\xfe",
        ];
        for prefix in [b"".as_slice(), b"app:", b"{app}:", b"app{"] {
            let mut owner = std::collections::HashMap::new();
            let mut claim = |key: Vec<u8>, who: String| {
                if let Some(before) = owner.insert(key.clone(), who.clone()) {
                    let markers = before.starts_with("marker") && who.starts_with("marker");
                    assert!(markers, "{key:?} is both {before} and {who}");
                }
            };
            let marker = guard_marker(prefix);
            claim(marker.clone(), "marker".into());
            for name in names {
                let key = LockKey::prefixed(prefix, name);
                assert!(!reserved_in(name) && !is_record_key(key.bytes()), "{key}");
                claim(key.bytes().to_vec(), format!("lock {key}"));
                for kept in kept_beside(key.bytes()) {
                    assert!(is_record_key(&kept), "{kept:?}");
                    claim(kept, format!("kept beside {key}"));
                }
                claim(marker_for(key.bytes(), &marker), format!("marker of {key}"));
            }
        }
    }

    #[test]
    fn a_hash_tagged_name_keeps_its_marker_in_its_slot() {
        let marker = |name: &[u8]| marker_for(name, b"\0guard2");
        assert_eq!(marker(b"app:{deploy}:web"), b"app:{deploy}\0guard2");
        assert_eq!(marker(b"{a}{b}"), b"{a}\0guard2");
        assert_eq!(
            marker(b"x{}y{z}"),
            b"\0guard2",
            "an empty first tag is no tag"
        );
        assert_eq!(marker(b"x{y"), b"\0guard2");
        assert_eq!(marker(b"plain"), b"\0guard2");
        assert!(is_line_key(b"app:\0guard"), "the marker of earlier builds");
    }
}
