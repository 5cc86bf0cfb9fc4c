//! How results reach the user: plain text for people, one JSON object for
//! programs (`--json`), diagnostics on stderr. Nothing here panics on a closed
//! pipe: every write returns its error.

use std::fmt::Write as _;
use std::io::{self, Write};
use std::time::Duration;

use crate::lock::escape_bytes;

/// A JSON object built field by field; values are escaped here, once.
#[derive(Default)]
pub struct Json(String);

impl Json {
    pub fn new() -> Self {
        Json::default()
    }

    fn key(&mut self, key: &str) {
        self.0.push(if self.0.is_empty() { '{' } else { ',' });
        self.0.push_str(&string(key));
        self.0.push(':');
    }

    pub fn str(mut self, key: &str, value: &str) -> Self {
        self.key(key);
        self.0.push_str(&string(value));
        self
    }

    /// Arbitrary bytes (lock names, foreign values): exactly, when they are
    /// UTF-8 (JSON's own escapes cover control characters); otherwise as
    /// `redlock` shows them in text, with `\xNN` for the invalid bytes.
    pub fn bytes(self, key: &str, value: &[u8]) -> Self {
        match std::str::from_utf8(value) {
            Ok(text) => self.str(key, text),
            Err(_) => self.str(key, &escape_bytes(value)),
        }
    }

    pub fn opt_bytes(self, key: &str, value: Option<&[u8]>) -> Self {
        match value {
            Some(value) => self.bytes(key, value),
            None => self.raw(key, "null"),
        }
    }

    pub fn num(self, key: &str, value: impl Into<i128>) -> Self {
        let value = value.into().to_string();
        self.raw(key, &value)
    }

    pub fn millis(self, key: &str, value: Duration) -> Self {
        self.num(key, i128::try_from(value.as_millis()).unwrap_or(i128::MAX))
    }

    pub fn bool(self, key: &str, value: bool) -> Self {
        self.raw(key, if value { "true" } else { "false" })
    }

    pub fn strs(self, key: &str, values: &[String]) -> Self {
        let items: Vec<String> = values.iter().map(|v| string(v)).collect();
        self.raw(key, &format!("[{}]", items.join(",")))
    }

    pub fn objects(self, key: &str, values: Vec<Json>) -> Self {
        let items: Vec<String> = values.into_iter().map(Json::finish).collect();
        self.raw(key, &format!("[{}]", items.join(",")))
    }

    pub fn raw(mut self, key: &str, json: &str) -> Self {
        self.key(key);
        self.0.push_str(json);
        self
    }

    pub fn finish(mut self) -> String {
        if self.0.is_empty() {
            self.0.push('{');
        }
        self.0.push('}');
        self.0
    }
}

/// A JSON string literal.
pub fn string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Writes one line to stdout.
pub fn line(text: &str) -> io::Result<()> {
    let mut stdout = io::stdout().lock();
    writeln!(stdout, "{text}")?;
    stdout.flush()
}

/// A diagnostic on stderr, prefixed with the program's name. Failing to write
/// it changes nothing about the outcome, so the error is dropped.
pub fn note(text: &str) {
    let _ = writeln!(io::stderr().lock(), "redlock: {text}");
}

/// `1.234s`-style durations for messages, rounded to milliseconds.
pub fn human(duration: Duration) -> String {
    let millis = Duration::from_millis(u64::try_from(duration.as_millis()).unwrap_or(u64::MAX));
    humantime::format_duration(millis).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_is_escaped_and_well_formed() {
        let json = Json::new()
            .str("name", "a\"b\\c\n\u{1}")
            .num("n", -3)
            .bool("ok", true)
            .strs("list", &["x".into(), "y\"".into()])
            .opt_bytes("none", None)
            .objects("objs", vec![Json::new().num("i", 1), Json::new()])
            .finish();
        assert_eq!(
            json,
            r#"{"name":"a\"b\\c\n\u0001","n":-3,"ok":true,"list":["x","y\""],"none":null,"objs":[{"i":1},{}]}"#
        );
        assert_eq!(Json::new().finish(), "{}");
        let names = Json::new()
            .bytes("utf8", "a\"b\n\u{1b}é".as_bytes())
            .bytes("raw", b"a\xff")
            .finish();
        assert_eq!(names, r#"{"utf8":"a\"b\n\u001bé","raw":"a\\xff"}"#);
    }

    #[test]
    fn durations_read_well() {
        assert_eq!(human(Duration::from_micros(29_734_567)), "29s 734ms");
    }
}
