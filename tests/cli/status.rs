//! `redlock status`: held (0), free (1) and unknown (69) against real
//! servers, the text and `--json` forms, foreign values, and lock names made
//! of odd bytes (spaces, unicode, 4 KB, control characters, invalid UTF-8),
//! which must reach Redis unchanged and never reach a terminal raw.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::time::Duration;

use crate::acquire::{
    acquire, assert_gone_everywhere, assert_held_everywhere, assert_no_panic, port_of, timed,
    token_of,
};
use crate::support::{run, Cluster};

use self::json::Json;

/// A small strict JSON parser, so that `--json` output is checked as JSON
/// rather than by substrings (the crate has no serde_json).
pub(crate) mod json {
    #[derive(Debug, Clone, PartialEq)]
    pub(crate) enum Json {
        Null,
        Bool(bool),
        Num(f64),
        Str(String),
        Arr(Vec<Json>),
        Obj(Vec<(String, Json)>),
    }

    impl Json {
        /// Parses exactly one JSON value (surrounding whitespace allowed);
        /// panics with the text on any syntax error.
        #[track_caller]
        pub(crate) fn parse(text: &str) -> Json {
            let mut parser = Parser {
                chars: text.chars().collect(),
                at: 0,
            };
            let value = parser
                .ws()
                .and_then(|()| parser.value())
                .and_then(|v| parser.ws().map(|()| v))
                .and_then(|v| {
                    if parser.at == parser.chars.len() {
                        Ok(v)
                    } else {
                        Err(format!("trailing text at {}", parser.at))
                    }
                });
            value.unwrap_or_else(|e| panic!("invalid JSON ({e}): {text:?}"))
        }

        /// The field `key` of an object; panics if absent or not an object.
        #[track_caller]
        pub(crate) fn get(&self, key: &str) -> &Json {
            match self {
                Json::Obj(fields) => {
                    let mut found = fields.iter().filter(|(k, _)| k == key);
                    let value = found
                        .next()
                        .map(|(_, v)| v)
                        .unwrap_or_else(|| panic!("no field {key:?} in {self:?}"));
                    assert!(found.next().is_none(), "duplicate field {key:?}");
                    value
                }
                other => panic!("not an object: {other:?}"),
            }
        }

        pub(crate) fn keys(&self) -> Vec<&str> {
            match self {
                Json::Obj(fields) => fields.iter().map(|(k, _)| k.as_str()).collect(),
                other => panic!("not an object: {other:?}"),
            }
        }

        #[track_caller]
        pub(crate) fn str(&self) -> &str {
            match self {
                Json::Str(s) => s,
                other => panic!("not a string: {other:?}"),
            }
        }

        #[track_caller]
        pub(crate) fn int(&self) -> i64 {
            match self {
                Json::Num(n) if n.fract() == 0.0 => *n as i64,
                other => panic!("not an integer: {other:?}"),
            }
        }

        #[track_caller]
        pub(crate) fn bool(&self) -> bool {
            match self {
                Json::Bool(b) => *b,
                other => panic!("not a boolean: {other:?}"),
            }
        }

        #[track_caller]
        pub(crate) fn arr(&self) -> &[Json] {
            match self {
                Json::Arr(items) => items,
                other => panic!("not an array: {other:?}"),
            }
        }

        pub(crate) fn is_null(&self) -> bool {
            *self == Json::Null
        }
    }

    struct Parser {
        chars: Vec<char>,
        at: usize,
    }

    impl Parser {
        fn peek(&self) -> Option<char> {
            self.chars.get(self.at).copied()
        }

        fn next(&mut self) -> Result<char, String> {
            let c = self.peek().ok_or("unexpected end")?;
            self.at += 1;
            Ok(c)
        }

        fn expect(&mut self, want: char) -> Result<(), String> {
            match self.next()? {
                c if c == want => Ok(()),
                c => Err(format!("expected {want:?}, got {c:?} at {}", self.at - 1)),
            }
        }

        fn ws(&mut self) -> Result<(), String> {
            while matches!(self.peek(), Some(' ' | '\t' | '\n' | '\r')) {
                self.at += 1;
            }
            Ok(())
        }

        fn literal(&mut self, word: &str, value: Json) -> Result<Json, String> {
            for want in word.chars() {
                self.expect(want)?;
            }
            Ok(value)
        }

        fn value(&mut self) -> Result<Json, String> {
            match self.peek().ok_or("unexpected end")? {
                '{' => self.object(),
                '[' => self.array(),
                '"' => self.string().map(Json::Str),
                't' => self.literal("true", Json::Bool(true)),
                'f' => self.literal("false", Json::Bool(false)),
                'n' => self.literal("null", Json::Null),
                '-' | '0'..='9' => self.number(),
                c => Err(format!("unexpected {c:?} at {}", self.at)),
            }
        }

        fn object(&mut self) -> Result<Json, String> {
            self.expect('{')?;
            let mut fields = Vec::new();
            self.ws()?;
            if self.peek() == Some('}') {
                self.at += 1;
                return Ok(Json::Obj(fields));
            }
            loop {
                self.ws()?;
                let key = self.string()?;
                self.ws()?;
                self.expect(':')?;
                self.ws()?;
                fields.push((key, self.value()?));
                self.ws()?;
                match self.next()? {
                    ',' => continue,
                    '}' => return Ok(Json::Obj(fields)),
                    c => return Err(format!("expected , or }} got {c:?}")),
                }
            }
        }

        fn array(&mut self) -> Result<Json, String> {
            self.expect('[')?;
            let mut items = Vec::new();
            self.ws()?;
            if self.peek() == Some(']') {
                self.at += 1;
                return Ok(Json::Arr(items));
            }
            loop {
                self.ws()?;
                items.push(self.value()?);
                self.ws()?;
                match self.next()? {
                    ',' => continue,
                    ']' => return Ok(Json::Arr(items)),
                    c => return Err(format!("expected , or ] got {c:?}")),
                }
            }
        }

        fn hex4(&mut self) -> Result<u32, String> {
            let mut n = 0;
            for _ in 0..4 {
                let d = self.next()?.to_digit(16).ok_or("bad \\u escape")?;
                n = n * 16 + d;
            }
            Ok(n)
        }

        fn string(&mut self) -> Result<String, String> {
            self.expect('"')?;
            let mut out = String::new();
            loop {
                match self.next()? {
                    '"' => return Ok(out),
                    '\\' => match self.next()? {
                        '"' => out.push('"'),
                        '\\' => out.push('\\'),
                        '/' => out.push('/'),
                        'b' => out.push('\u{8}'),
                        'f' => out.push('\u{c}'),
                        'n' => out.push('\n'),
                        'r' => out.push('\r'),
                        't' => out.push('\t'),
                        'u' => {
                            let hi = self.hex4()?;
                            let code = if (0xd800..0xdc00).contains(&hi) {
                                self.expect('\\')?;
                                self.expect('u')?;
                                let lo = self.hex4()?;
                                0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00)
                            } else {
                                hi
                            };
                            out.push(char::from_u32(code).ok_or("bad code point")?);
                        }
                        c => return Err(format!("bad escape \\{c}")),
                    },
                    c if (c as u32) < 0x20 => {
                        return Err(format!("raw control character {c:?} in a string"))
                    }
                    c => out.push(c),
                }
            }
        }

        fn number(&mut self) -> Result<Json, String> {
            let start = self.at;
            while matches!(self.peek(), Some('-' | '+' | '.' | 'e' | 'E' | '0'..='9')) {
                self.at += 1;
            }
            let text: String = self.chars[start..self.at].iter().collect();
            text.parse()
                .map(Json::Num)
                .map_err(|_| format!("bad number {text:?}"))
        }
    }
}

#[test]
fn json_parser_accepts_json_and_rejects_garbage() {
    let v = Json::parse(r#" {"a":[1,-2.5,true,null],"b":"x\"\\\n\u00e9\ud83d\ude80","c":{}} "#);
    assert_eq!(v.get("a").arr().len(), 4);
    assert_eq!(v.get("a").arr()[1], Json::Num(-2.5));
    assert_eq!(v.get("b").str(), "x\"\\\né🚀");
    assert_eq!(v.get("c").keys(), Vec::<&str>::new());
    for bad in ["", "{", "{\"a\":}", "[1,]", "\"a\nb\"", "{} x", "nul"] {
        assert!(
            std::panic::catch_unwind(|| Json::parse(bad)).is_err(),
            "accepted {bad:?}"
        );
    }
}

/// No raw control character other than the line feeds separating lines.
#[track_caller]
fn assert_no_raw_controls(text: &str, what: &str) {
    assert!(
        !text.chars().any(|c| c.is_control() && c != '\n'),
        "{what} contains a raw control character: {text:?}"
    );
}

// ---------------------------------------------------------------------------
// Held, free, unknown
// ---------------------------------------------------------------------------

#[test]
fn status_of_a_free_lock_exits_1() {
    let cluster = Cluster::start(3);
    let out = run(cluster.redlock().args(["status", "nobody"]));
    out.assert_code(1, "free lock");
    assert_eq!(out.stderr, "", "free is an expected outcome, not an error");
    let first = out.stdout.lines().next().unwrap_or_default();
    assert!(first.contains("free"), "{}", out.stdout);
    assert_eq!(
        out.stdout.lines().count(),
        4,
        "a summary and one line per server"
    );
    for i in 0..3 {
        assert!(out.stdout.contains(&port_of(&cluster, i)), "{}", out.stdout);
    }
    // -q keeps the exit code and prints nothing.
    let out = run(cluster.redlock().args(["status", "-q", "nobody"]));
    out.assert_code(1, "-q free");
    assert_eq!((out.stdout.as_str(), out.stderr.as_str()), ("", ""));
}

#[test]
fn status_of_a_held_lock_exits_0_and_shows_the_token_per_server() {
    let cluster = Cluster::start(3);
    let token = acquire(&cluster, "deploy", &[]);
    let out = run(cluster.redlock().args(["status", "deploy"]));
    out.assert_code(0, "held lock");
    assert_eq!(out.stderr, "");
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{}", out.stdout);
    assert!(
        lines[0].contains("held") && lines[0].contains(&token),
        "{}",
        lines[0]
    );
    for i in 0..3 {
        let line = lines
            .iter()
            .find(|l| l.contains(&port_of(&cluster, i)))
            .unwrap_or_else(|| panic!("no line for server {i}: {}", out.stdout));
        assert!(line.contains(&token), "{line}");
    }
    // status only reads.
    assert_held_everywhere(&cluster, b"deploy", &token);
    assert!(cluster[0].pttl(b"deploy") > 25_000);
}

#[test]
fn status_json_of_a_held_lock() {
    let cluster = Cluster::start(3);
    let token = acquire(&cluster, "deploy", &[]);
    let out = run(cluster.redlock().args(["status", "--json", "deploy"]));
    out.assert_code(0, "status --json held");
    assert_eq!(out.stdout.lines().count(), 1);
    assert!(out.stdout.starts_with('{'));
    let json = Json::parse(&out.stdout);
    assert_eq!(json.get("name").str(), "deploy");
    assert_eq!(json.get("state").str(), "held");
    assert!(json.get("held").bool());
    assert_eq!(json.get("token").str(), token);
    // held_on: the servers that hold the token, as in acquire --json.
    let mut held_on: Vec<&str> = json.get("held_on").arr().iter().map(Json::str).collect();
    let mut urls = cluster.urls();
    held_on.sort_unstable();
    urls.sort_unstable();
    assert_eq!(held_on, urls);
    assert_eq!(json.get("quorum").int(), 2);
    let servers = json.get("servers").arr();
    assert_eq!(servers.len(), 3);
    for (server, url) in servers.iter().zip(cluster.urls()) {
        assert_eq!(server.get("server").str(), url, "configuration order");
        assert!(server.get("exists").bool());
        assert_eq!(server.get("type").str(), "string");
        assert_eq!(server.get("token").str(), token);
        let ttl = server.get("ttl_ms").int();
        assert!((25_000..=30_000).contains(&ttl), "ttl_ms {ttl}");
        assert!(server.get("error").is_null());
    }
}

#[test]
fn status_json_of_a_free_lock() {
    let cluster = Cluster::start(3);
    let out = run(cluster.redlock().args(["status", "--json", "nobody"]));
    out.assert_code(1, "status --json free");
    let json = Json::parse(&out.stdout);
    assert_eq!(json.get("state").str(), "free");
    assert!(!json.get("held").bool());
    assert!(json.get("token").is_null());
    assert!(json.get("held_on").arr().is_empty());
    for server in json.get("servers").arr() {
        assert!(!server.get("exists").bool());
        assert_eq!(server.get("type").str(), "none");
        assert!(server.get("token").is_null());
        assert_eq!(server.get("ttl_ms").int(), -2);
        assert!(server.get("error").is_null());
    }
}

#[test]
fn status_with_a_majority_killed_is_unknown_69() {
    let mut cluster = Cluster::start(3);
    acquire(&cluster, "deploy", &[]);
    cluster[0].kill();
    cluster[1].kill();
    let (out, took) = timed(cluster.redlock().args(["status", "deploy"]));
    out.assert_code(69, "2 of 3 killed");
    assert!(took < Duration::from_secs(1), "took {took:?}");
    assert!(out.stdout.contains("unknown"), "{}", out.stdout);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    for i in [0, 1] {
        assert!(out.stderr.contains(&port_of(&cluster, i)), "{}", out.stderr);
    }

    let out = run(cluster.redlock().args(["status", "--json", "deploy"]));
    out.assert_code(69, "--json unknown");
    let json = Json::parse(&out.stdout);
    assert_eq!(json.get("state").str(), "unknown");
    assert!(!json.get("held").bool());
    let servers = json.get("servers").arr();
    assert!(!servers[0].get("error").str().is_empty());
    assert!(!servers[1].get("error").str().is_empty());
    assert!(servers[2].get("error").is_null());
}

#[test]
fn status_with_a_majority_paused_is_unknown_69_within_the_timeout() {
    let mut cluster = Cluster::start(3);
    cluster[1].pause();
    cluster[2].pause();
    let (out, took) = timed(cluster.redlock().args(["status", "deploy"]));
    out.assert_code(69, "2 of 3 paused");
    assert!(took < Duration::from_secs(2), "took {took:?}");
    for i in [1, 2] {
        assert!(out.stderr.contains(&port_of(&cluster, i)), "{}", out.stderr);
    }
}

#[test]
fn status_with_a_minority_killed_still_decides() {
    let mut cluster = Cluster::start(3);
    let token = acquire(&cluster, "deploy", &[]);
    cluster[2].kill();
    let out = run(cluster.redlock().args(["status", "deploy"]));
    out.assert_code(0, "held on 2 of 3 with one killed");
    assert!(out.stdout.contains(&token));
    let out = run(cluster.redlock().args(["status", "nobody"]));
    out.assert_code(1, "free on 2 of 3 with one killed");

    // Held on one live server and free on the other: the dead one could
    // hold it too, so nobody can tell.
    cluster[1].set(b"half", b"tok");
    let out = run(cluster.redlock().args(["status", "half"]));
    out.assert_code(69, "1 holder, 1 free, 1 dead");
}

#[test]
fn status_shows_foreign_values_and_types() {
    let cluster = Cluster::start(3);
    cluster[0].set(b"mixed", b"foreign-token");
    cluster[1].set(b"mixed", b"foreign-token");
    redis::cmd("SADD")
        .arg("mixed")
        .arg("m")
        .query::<i64>(&mut cluster[2].client())
        .unwrap();
    let out = run(cluster.redlock().args(["status", "mixed"]));
    out.assert_code(0, "the same value on a majority is a held lock");
    assert!(out.stdout.contains("foreign-token"), "{}", out.stdout);
    assert!(out.stdout.contains("never expires"), "{}", out.stdout);
    assert!(out.stdout.contains("set"), "{}", out.stdout);

    let out = run(cluster.redlock().args(["status", "--json", "mixed"]));
    let json = Json::parse(&out.stdout);
    assert_eq!(json.get("token").str(), "foreign-token");
    let third = &json.get("servers").arr()[2];
    assert_eq!(third.get("type").str(), "set");
    assert!(third.get("token").is_null());
    assert_eq!(third.get("ttl_ms").int(), -1);
    assert_no_panic(&out, "mixed types");
}

#[test]
fn status_escapes_control_characters_in_foreign_values() {
    let cluster = Cluster::start(3);
    let evil = b"\x1b]0;pwned\x07\x1b[2J\r\nfake line";
    for server in &cluster.servers {
        server.set(b"evil", evil);
    }
    let out = run(cluster.redlock().args(["status", "evil"]));
    out.assert_code(0, "held by the evil value");
    assert_no_raw_controls(&out.stdout, "stdout");
    assert_eq!(out.stdout.lines().count(), 4, "{:?}", out.stdout);
    let out = run(cluster.redlock().args(["status", "--json", "evil"]));
    assert_no_raw_controls(&out.stdout, "--json stdout");
    assert_eq!(out.stdout.lines().count(), 1);
    Json::parse(&out.stdout);
}

// ---------------------------------------------------------------------------
// Odd lock names
// ---------------------------------------------------------------------------

/// acquire, status (text and JSON) and release of `name` on 3 servers; the
/// key in Redis must be exactly the name's bytes.
fn round_trip(name: &OsStr) -> (String, String) {
    let cluster = Cluster::start(3);
    let out = run(cluster.redlock().args(["acquire", "-n"]).arg(name));
    out.assert_code(0, "acquire an odd name");
    let token = token_of(&out);
    assert_held_everywhere(&cluster, name.as_bytes(), &token);
    for server in &cluster.servers {
        let keys: Vec<Vec<u8>> = redis::cmd("KEYS")
            .arg("*")
            .query(&mut server.client())
            .unwrap();
        assert_eq!(keys, vec![name.as_bytes().to_vec()], "the key is the name");
    }

    let busy = run(cluster.redlock().args(["acquire", "-n"]).arg(name));
    busy.assert_code(75, "second acquire");
    assert_eq!(busy.stderr.lines().count(), 1, "{:?}", busy.stderr);
    assert_no_raw_controls(&busy.stderr, "busy stderr");

    let status = run(cluster.redlock().arg("status").arg(name));
    status.assert_code(0, "status of an odd name");
    assert_eq!(
        status.stdout.lines().count(),
        4,
        "the name must not add lines: {:?}",
        status.stdout
    );
    assert!(status.stdout.contains(&token));
    assert_no_raw_controls(&status.stdout, "status stdout");
    assert_no_raw_controls(&status.stderr, "status stderr");

    let json = run(cluster.redlock().args(["status", "--json"]).arg(name));
    json.assert_code(0, "status --json of an odd name");
    assert_no_raw_controls(&json.stdout, "status --json");
    let parsed = Json::parse(&json.stdout);
    assert_eq!(parsed.get("token").str(), token);
    let shown = parsed.get("name").str().to_owned();

    run(cluster.redlock().arg("release").arg(name).arg(&token)).assert_code(0, "release");
    assert_gone_everywhere(&cluster, name.as_bytes());
    run(cluster.redlock().arg("status").arg(name)).assert_code(1, "free after release");
    (token, shown)
}

#[test]
fn names_with_spaces_and_unicode() {
    let (_, shown) = round_trip(OsStr::new("nightly report"));
    assert_eq!(shown, "nightly report");
    let (_, shown) = round_trip(OsStr::new("déploiement 🚀"));
    assert_eq!(shown, "déploiement 🚀", "unicode is shown as is in JSON");
}

#[test]
fn a_4kb_name() {
    let name = "n".repeat(2048) + &"é".repeat(1024);
    assert_eq!(name.len(), 4096);
    let (_, shown) = round_trip(OsStr::new(&name));
    assert_eq!(shown, name);
}

#[test]
fn names_with_control_characters_are_stored_raw_and_shown_escaped() {
    // JSON carries the exact name (its own escapes cover control characters).
    for name in [
        "line1\nline2",
        "\x1b[31mred\x1b[0m\r\t",
        "quote\" back\\slash",
    ] {
        let (_, in_json) = round_trip(OsStr::new(name));
        assert_eq!(in_json, name);
    }
}

#[test]
fn names_that_are_not_utf8_are_stored_byte_for_byte() {
    round_trip(OsStr::from_bytes(b"lock-\xff\xfe-\xc3"));
}

#[test]
fn names_that_look_like_flags_after_double_dash() {
    let cluster = Cluster::start(3);
    let out = run(cluster.redlock().args(["acquire", "-n", "--", "-w"]));
    out.assert_code(0, "acquire -- -w");
    let token = token_of(&out);
    assert_held_everywhere(&cluster, b"-w", &token);
    run(cluster.redlock().args(["status", "--", "-w"])).assert_code(0, "status -- -w");
}
