//! Assertions shared by the test modules: what the binary printed, and what
//! the servers of a [`Cluster`] hold.

use super::{Cluster, Output};

/// Whether `text` is a token as `acquire` prints it: 32 lowercase hex digits.
pub fn is_token(text: &str) -> bool {
    text.len() == 32 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The token of a successful `acquire` (stdout is exactly `TOKEN\n`).
#[track_caller]
pub fn token_of(out: &Output) -> String {
    let token = out
        .stdout
        .strip_suffix('\n')
        .unwrap_or_else(|| panic!("stdout is not one line: {:?}", out.stdout));
    assert!(
        is_token(token),
        "stdout is not a token: {:?}\nstderr: {}",
        out.stdout,
        out.stderr
    );
    token.to_owned()
}

/// Panics if the binary panicked (in either stream).
#[track_caller]
pub fn assert_no_panic(out: &Output, context: &str) {
    assert!(
        !out.stderr.contains("panicked") && !out.stdout.contains("panicked"),
        "{context}: the binary panicked\n--- stdout ---\n{}\n--- stderr ---\n{}",
        out.stdout,
        out.stderr
    );
}

/// Asserts that every *running* server of `cluster` holds exactly `token`
/// under `key` (byte for byte).
#[track_caller]
pub fn assert_held_everywhere(cluster: &Cluster, key: &[u8], token: &str) {
    for (i, value) in cluster.get_all(key).into_iter().enumerate() {
        if cluster[i].is_running() && !cluster[i].is_paused() {
            assert_eq!(
                value.as_deref(),
                Some(token.as_bytes()),
                "server {i} should hold the token under {key:?}\n{}",
                cluster.logs()
            );
        }
    }
}

/// Asserts that no running server of `cluster` has `key` at all.
#[track_caller]
pub fn assert_gone_everywhere(cluster: &Cluster, key: &[u8]) {
    let values = cluster.get_all(key);
    assert!(
        values.iter().all(Option::is_none),
        "{key:?} should be gone from every server, found {values:?}"
    );
}

/// The shape of a usage or configuration error: the code, nothing on
/// stdout, one `redlock: ` line on stderr that says each of `words`.
#[track_caller]
pub fn assert_one_line_error(out: &Output, code: i32, words: &[&str], context: &str) {
    out.assert_code(code, context);
    assert_no_panic(out, context);
    assert_eq!(out.stdout, "", "{context}: stdout must be empty");
    assert_eq!(out.stderr.lines().count(), 1, "{context}: {:?}", out.stderr);
    assert!(
        out.stderr.starts_with("redlock: "),
        "{context}: {:?}",
        out.stderr
    );
    assert_stderr_says(out, words, context);
}

/// Panics unless stderr says each of `words`.
#[track_caller]
pub fn assert_stderr_says(out: &Output, words: &[&str], context: &str) {
    for word in words {
        assert!(
            out.stderr.contains(word),
            "{context}: stderr lacks {word:?}: {:?}",
            out.stderr
        );
    }
}
