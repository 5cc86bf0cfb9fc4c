//! Tells the program which commit it was built from and when, for
//! `redlock --version`. No network: the commit comes from `git rev-parse`
//! when this directory is a git checkout, else from the `.cargo_vcs_info.json`
//! that `cargo package` writes into a published crate, else "unknown"; the
//! date from SOURCE_DATE_EPOCH (reproducible builds), else the build time.

use std::path::Path;
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into());
    let dir = Path::new(&dir);
    println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");
    println!("cargo:rerun-if-changed=.cargo_vcs_info.json");
    let commit = git_commit(dir)
        .or_else(|| vcs_info_commit(dir))
        .unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=BUILD_COMMIT={commit}");
    println!("cargo:rustc-env=BUILD_DATE={}", build_date());
}

/// The short hash of HEAD, only when this directory is itself a checkout
/// (`.git` a directory, or a file in a worktree): an unpacked crate inside
/// someone else's repository must not report that repository's commit.
/// Watches HEAD and the branch it names, so that a new commit reruns this
/// script and nothing else does.
fn git_commit(dir: &Path) -> Option<String> {
    if !dir.join(".git").exists() {
        return None;
    }
    for path in ["HEAD", "packed-refs"] {
        watch(dir, &git(dir, &["rev-parse", "--git-path", path])?);
    }
    if let Some(branch) = git(dir, &["symbolic-ref", "-q", "HEAD"]) {
        watch(dir, &git(dir, &["rev-parse", "--git-path", &branch])?);
    }
    git(dir, &["rev-parse", "--short", "HEAD"])
}

/// `cargo:rerun-if-changed` for a file that exists (a missing one would
/// rerun this script on every build).
fn watch(dir: &Path, path: &str) {
    let path = dir.join(path);
    if path.exists() {
        println!("cargo:rerun-if-changed={}", path.display());
    }
}

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    (out.status.success() && !text.is_empty()).then_some(text)
}

/// The commit `cargo package` recorded: `"sha1": "<40 hex digits>"`.
fn vcs_info_commit(dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(dir.join(".cargo_vcs_info.json")).ok()?;
    let rest = &text[text.find("\"sha1\"")? + "\"sha1\"".len()..];
    let hex: String = rest
        .trim_start_matches([' ', ':', '"'])
        .chars()
        .take_while(char::is_ascii_hexdigit)
        .collect();
    (hex.len() >= 7).then(|| hex[..7].to_owned())
}

/// YYYY-MM-DD (UTC) of SOURCE_DATE_EPOCH, or of now.
fn build_date() -> String {
    let secs = match std::env::var("SOURCE_DATE_EPOCH") {
        Ok(value) => value
            .trim()
            .parse::<i64>()
            .unwrap_or_else(|_| panic!("SOURCE_DATE_EPOCH is not a number of seconds: {value:?}")),
        Err(_) => SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64),
    };
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    format!("{y:04}-{m:02}-{d:02}")
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard
/// Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}
