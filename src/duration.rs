//! Durations in and out. In: humantime (`30s`, `1m30s`, `250ms`) or a bare
//! number of seconds with an optional fraction (`2.5`), as `flock -w`
//! accepts. Out: the one formatter every message uses, to the millisecond
//! ([`exact`]) or, for what ticks away as it is read, to the second
//! ([`rounded`]).

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

/// `1m 29s 734ms`: to the millisecond.
pub fn exact(duration: Duration) -> String {
    shown(Duration::from_millis(millis(duration)))
}

/// `4m 12s`, `1d 23h`: the two largest units, cut (never rounded up), or
/// whole milliseconds under a second. For ages and countdowns, which are
/// stale by the time they are read.
pub fn rounded(duration: Duration) -> String {
    if duration < Duration::from_secs(1) {
        return exact(duration);
    }
    let secs = duration.as_secs();
    let units = [
        (secs / 86_400, "d"),
        (secs / 3600 % 24, "h"),
        (secs / 60 % 60, "m"),
        (secs % 60, "s"),
    ];
    let first = units.iter().position(|&(n, _)| n > 0).unwrap_or(3);
    units[first..]
        .iter()
        .take(2)
        .filter(|&&(n, _)| n > 0)
        .map(|(n, unit)| format!("{n}{unit}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whole milliseconds, saturating.
pub fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

fn shown(duration: Duration) -> String {
    humantime::format_duration(duration).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_well() {
        assert_eq!(exact(Duration::from_micros(29_734_567)), "29s 734ms");
        assert_eq!(rounded(Duration::from_micros(29_734_567)), "29s");
        assert_eq!(rounded(Duration::from_micros(734_567)), "734ms");
        assert_eq!(rounded(Duration::from_secs(252)), "4m 12s");
        assert_eq!(rounded(Duration::from_secs(172_799)), "1d 23h");
        assert_eq!(rounded(Duration::from_secs(3605)), "1h");
        assert_eq!(rounded(Duration::from_secs(3 * 3600 + 59)), "3h");
        assert_eq!(rounded(Duration::from_secs(400 * 86_400)), "400d");
        assert_eq!(rounded(Duration::from_secs(86_400 + 60)), "1d");
        assert_eq!(millis(Duration::MAX), u64::MAX);
    }

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
