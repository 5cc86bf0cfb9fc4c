//! Duration arguments: humantime (`30s`, `1m30s`, `250ms`) or a bare number of
//! seconds with an optional fraction (`2.5`), as `flock -w` accepts.

use std::time::Duration;

/// Parses a duration argument; the error names what was wrong, and clap adds
/// the option's name.
pub fn parse(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("empty duration".into());
    }
    if text.starts_with(|c: char| c.is_ascii_digit() || c == '.')
        && text.chars().all(|c| c.is_ascii_digit() || c == '.')
    {
        let seconds: f64 = text
            .parse()
            .map_err(|_| format!("'{text}' is not a number of seconds"))?;
        return Duration::try_from_secs_f64(seconds)
            .map_err(|_| format!("'{text}' seconds is out of range"));
    }
    if text.starts_with('-') {
        return Err(format!("'{text}' is negative"));
    }
    humantime::parse_duration(text)
        .map_err(|err| format!("'{text}' is not a duration like 30s, 1m30s, 250ms or 2.5 ({err})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_humantime_and_bare_seconds() {
        assert_eq!(parse("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse("5"), Ok(Duration::from_secs(5)));
        assert_eq!(parse("2.5"), Ok(Duration::from_millis(2500)));
        assert_eq!(parse(".5"), Ok(Duration::from_millis(500)));
        assert_eq!(parse("0"), Ok(Duration::ZERO));
        assert_eq!(parse(" 10s "), Ok(Duration::from_secs(10)));
    }

    #[test]
    fn rejects_garbage_with_a_reason() {
        for bad in [
            "",
            "abc",
            "-1",
            "-5s",
            "1.2.3",
            "10 parsecs",
            "s",
            "1e400",
            "NaN",
            "inf",
        ] {
            let err = parse(bad).expect_err(bad);
            assert!(!err.is_empty(), "{bad}");
        }
        assert!(parse("99999999999999999999999").is_err());
    }
}
