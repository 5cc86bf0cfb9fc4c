//! What the suite promises about itself, checked from its source: a test
//! that needs root is ignored with a reason that says so, and
//! `scripts/test` runs those as root (as CI does), so that a skip shows and
//! CI still runs them; the `REDLOCK_TEST_*` hooks are read in one module,
//! and each is set by a test.

use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file under `dir` of the project, with its text.
fn rust_files(dir: &str) -> Vec<(PathBuf, String)> {
    fn walk(dir: &Path, found: &mut Vec<(PathBuf, String)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, found);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                found.push((path, text));
            }
        }
    }
    let mut found = Vec::new();
    walk(&root().join(dir), &mut found);
    found
}

/// `scripts/test` runs every ignored test when it runs as root: an ignored
/// test must be one that needs root, and say so in its reason, or CI would
/// run a test that someone meant to leave out.
#[test]
fn every_ignored_test_needs_root_and_scripts_test_runs_them_as_root() {
    let mut ignored = 0;
    for dir in ["src", "tests", "examples"] {
        for (path, text) in rust_files(dir) {
            for line in text.lines().map(str::trim_start) {
                if line.starts_with("#[ignore") {
                    assert!(
                        line.starts_with("#[ignore = \"needs root: "),
                        "{}: an ignored test that does not need root: {line}",
                        path.display()
                    );
                    ignored += 1;
                }
            }
        }
    }
    assert!(ignored > 0, "no test needs root: this check finds nothing");
    let script = std::fs::read_to_string(root().join("scripts/test")).unwrap();
    assert!(
        script.contains(r#"if [ "$(id -u)" -eq 0 ] || [ "${CI:-}" = true ]; then"#)
            && script.contains("args+=(--include-ignored)"),
        "scripts/test no longer runs the ignored tests as root"
    );
}

/// Every `"REDLOCK_TEST_..."` name quoted in the text, in order.
fn quoted_hooks(text: &str) -> Vec<String> {
    let quoted = concat!('"', "REDLOCK_TEST_");
    text.match_indices(quoted)
        .map(|(start, _)| {
            text[start + 1..]
                .chars()
                .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
                .collect()
        })
        .collect()
}

/// A hook is read by its function in src/test_hooks.rs, and nowhere else in
/// src/; every one of them is set by a test (a hook nothing sets is dead
/// code in the program).
#[test]
fn the_test_hooks_are_read_in_one_module_and_each_is_set_by_a_test() {
    let hooks_file = root().join("src/test_hooks.rs");
    let mut hooks = Vec::new();
    for (path, text) in rust_files("src") {
        let names = quoted_hooks(&text);
        match path == hooks_file {
            true => hooks = names,
            false => assert!(
                names.is_empty(),
                "{}: reads {names:?}; hooks are read in src/test_hooks.rs",
                path.display()
            ),
        }
    }
    assert!(!hooks.is_empty(), "no hook found in src/test_hooks.rs");
    let set: Vec<String> = rust_files("tests")
        .iter()
        .flat_map(|(_, text)| quoted_hooks(text))
        .collect();
    for hook in &hooks {
        assert!(set.contains(hook), "no test sets {hook}");
    }
}
