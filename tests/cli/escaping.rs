//! Text a holder or a name carries reaches a terminal or a JSON reader
//! only as what it is: C1 controls (CSI), DEL, bidi overrides and
//! look-alike blanks are escaped in text and written as `\uXXXX` in JSON.

use crate::support::{run, Cluster};

/// CSI (a C1 control that starts a terminal escape sequence without ESC),
/// DEL, a right-to-left override and a Hangul filler that shows as a blank.
const HOSTILE: &str = "csi\u{9b}2J del\u{7f} \u{202e}txt.exe \u{3164}";

#[test]
fn a_hostile_note_is_escaped_in_text_and_in_json() {
    let cluster = Cluster::start(3);
    run(cluster
        .redlock()
        .args(["acquire", "-n", "-m", HOSTILE, "note"]))
    .assert_code(0, "acquire -m");
    let text = run(cluster.redlock().args(["status", "note"]));
    text.assert_code(0, "status");
    assert!(
        text.stdout
            .contains(r#""csi\u{9b}2J del\u{7f} \u{202e}txt.exe \u{3164}""#),
        "{}",
        text.stdout
    );
    let json = run(cluster.redlock().args(["status", "--json", "note"]));
    json.assert_code(0, "status --json");
    for raw in ['\u{9b}', '\u{7f}', '\u{202e}', '\u{3164}'] {
        assert!(!json.stdout.contains(raw), "{raw:?} raw in {}", json.stdout);
    }
    assert!(
        json.stdout
            .contains(r#""message":"csi\u009b2J del\u007f \u202etxt.exe \u3164""#),
        "{}",
        json.stdout
    );
    assert_eq!(
        json.json()["holder"]["message"],
        HOSTILE,
        "reads back exactly"
    );
}

#[test]
fn a_name_of_look_alike_blanks_is_not_shown_as_blank() {
    let cluster = Cluster::start(3);
    let name = "\u{3164}\u{2800}";
    run(cluster.redlock().args(["acquire", "-n", name])).assert_code(0, "acquire");
    let out = run(cluster.redlock().arg("list"));
    out.assert_code(0, "list");
    assert!(
        out.stdout.contains(r#""\u{3164}\u{2800}""#),
        "{}",
        out.stdout
    );
}

/// A name with the byte 0xFF and the text `amb\xff` read alike once
/// escaped; `name_hex` tells them apart, and `--hex` takes it back.
#[test]
fn names_that_read_alike_are_told_apart_by_name_hex() {
    use std::ffi::OsString;
    use std::os::unix::ffi::OsStringExt as _;
    let cluster = Cluster::start(3);
    let binary = OsString::from_vec(b"amb\xff".to_vec());
    run(cluster.redlock().arg("acquire").arg("-n").arg(&binary)).assert_code(0, "0xff");
    run(cluster.redlock().args(["acquire", "-n", r"amb\xff"])).assert_code(0, "text");
    let out = run(cluster.redlock().args(["list", "--json"]));
    out.assert_code(0, "list --json");
    let locks = out.json()["locks"].as_array().unwrap().clone();
    assert_eq!(locks.len(), 2, "{}", out.stdout);
    let hexes: Vec<Option<&str>> = locks.iter().map(|l| l["name_hex"].as_str()).collect();
    assert!(
        hexes.contains(&Some("616d62ff")) && hexes.contains(&None),
        "{hexes:?}"
    );
    let out = run(cluster
        .redlock()
        .args(["release", "--force", "--json", "--hex", "616d62ff"]));
    out.assert_code(0, "release --force --hex");
    assert_eq!(out.json()["name_hex"], "616d62ff");
    let out = run(cluster.redlock().args(["status", "--hex", "616d62ff"]));
    out.assert_code(1, "the byte name is free now");
    run(cluster.redlock().args(["status", r"amb\xff"])).assert_code(0, "the text name is not");
}
