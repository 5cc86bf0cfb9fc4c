//! Durations in and out. In: humantime (`30s`, `1m30s`, `250ms`) or a bare
//! number of seconds with an optional fraction (`2.5`), as `flock -w`
//! accepts. Out: at most two units, the largest and the one below it
//! (`29s 734ms`, `4m 12s`, `1d 3h`, `365d`), in days at most (a month or a
//! year has no one length), in units humantime reads back: to the nearest
//! of the smaller unit ([`exact`]), cut for what ticks away as it is read
//! ([`rounded`]), or rounded up for a bound a setting must reach
//! ([`at_least`]).

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

/// The units shown, largest first, in milliseconds.
const UNITS: [(u64, &str); 5] = [
    (86_400_000, "d"),
    (3_600_000, "h"),
    (60_000, "m"),
    (1000, "s"),
    (1, "ms"),
];

/// How a duration is brought to its smaller unit shown.
#[derive(Clone, Copy)]
enum Rounding {
    Nearest,
    Down,
    Up,
}

/// `29s 734ms`, `1m 30s`, `1d`: the two largest units, rounded to the
/// nearest of the smaller (to the millisecond under a minute). For what
/// was given or measured: a TTL, a limit, how long something took.
pub fn exact(duration: Duration) -> String {
    two_units(duration, Rounding::Nearest)
}

/// `4m 12s`, `1d 23h`: the two largest units, cut (never rounded up), or
/// whole milliseconds under a second. For ages and countdowns, which are
/// stale by the time they are read.
pub fn rounded(duration: Duration) -> String {
    match duration < Duration::from_secs(1) {
        true => two_units(duration, Rounding::Down),
        false => two_units(Duration::from_secs(duration.as_secs()), Rounding::Down),
    }
}

/// `1d 1h` for a day and 30 seconds: the two largest units, rounded up, so
/// that a setting of what is shown covers `duration`. For a bound to
/// reach, such as a restart guard a TTL must fit in.
pub fn at_least(duration: Duration) -> String {
    two_units(duration, Rounding::Up)
}

/// The largest unit `duration` has one of, and the one below it (or the
/// millisecond alone), rounded to the smaller; a unit of 0 is left out.
fn two_units(duration: Duration, rounding: Rounding) -> String {
    let micros = u64::try_from(duration.as_micros()).unwrap_or(u64::MAX);
    let mut ms = match rounding {
        Rounding::Nearest => micros.saturating_add(500) / 1000,
        Rounding::Down => micros / 1000,
        Rounding::Up => micros.div_ceil(1000),
    };
    // Rounding may carry into the unit above (59m 59.7s is 1h): once more
    // on the rounded value, which is then a whole number of that unit.
    for _ in 0..2 {
        let big = UNITS
            .iter()
            .position(|&(unit, _)| ms >= unit)
            .unwrap_or(UNITS.len() - 1);
        let small = UNITS[(big + 1).min(UNITS.len() - 1)].0;
        let (whole, rest) = (ms / small, ms % small);
        let up = match rounding {
            Rounding::Nearest => rest >= small.div_ceil(2),
            Rounding::Down => false,
            Rounding::Up => rest > 0,
        };
        ms = whole.saturating_add(u64::from(up)).saturating_mul(small);
    }
    if ms == 0 {
        return "0s".to_owned();
    }
    let big = UNITS
        .iter()
        .position(|&(unit, _)| ms >= unit)
        .unwrap_or(UNITS.len() - 1);
    let shown: Vec<String> = UNITS[big..]
        .iter()
        .take(2)
        .enumerate()
        .map(|(i, &(unit, name))| match i {
            0 => (ms / unit, name),
            _ => (ms % UNITS[big].0 / unit, name),
        })
        .filter(|&(n, _)| n > 0)
        .map(|(n, name)| format!("{n}{name}"))
        .collect();
    shown.join(" ")
}

/// Whole milliseconds, saturating.
pub fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_well() {
        assert_eq!(exact(Duration::from_micros(29_734_467)), "29s 734ms");
        assert_eq!(exact(Duration::from_micros(29_734_567)), "29s 735ms");
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

    /// What the outside runs met (`1day 29s 991ms`, `11months 30days
    /// 3h…`): never more than two units, and no months or years.
    #[test]
    fn at_most_two_units_rounded_to_the_nearest() {
        let ms = Duration::from_millis;
        assert_eq!(exact(ms(86_429_991)), "1d");
        assert_eq!(exact(Duration::from_secs(365 * 86_400)), "365d");
        assert_eq!(exact(ms(90_000_000 + 1)), "1d 1h");
        assert_eq!(exact(ms(252_600)), "4m 13s");
        assert_eq!(exact(ms(252_400)), "4m 12s");
        assert_eq!(exact(ms(5_400_000 + 29_999)), "1h 30m");
        assert_eq!(exact(ms(5_400_000 + 30_000)), "1h 31m");
        // A carry into the unit above.
        assert_eq!(exact(ms(3_599_700)), "1h");
        assert_eq!(exact(ms(86_370_000)), "1d");
        assert_eq!(exact(ms(59_999)), "59s 999ms");
        assert_eq!(exact(Duration::from_micros(59_999_600)), "1m");
        assert_eq!(exact(Duration::from_secs(30)), "30s");
        assert_eq!(exact(ms(250)), "250ms");
        assert_eq!(exact(Duration::ZERO), "0s");
        assert_eq!(exact(Duration::from_micros(400)), "0s");
        assert_eq!(exact(Duration::from_micros(600)), "1ms");
        assert!(!exact(Duration::MAX).is_empty());
        for micros in [
            1,
            999,
            1_000_001,
            61_500_000,
            86_399_999_999,
            999_999_999_999_999,
        ] {
            let shown = exact(Duration::from_micros(micros));
            assert!(shown.split(' ').count() <= 2, "{shown}");
            assert!(
                !shown.contains("month") && !shown.contains("year"),
                "{shown}"
            );
        }
    }

    #[test]
    fn a_bound_is_rounded_up_and_reads_back() {
        let ms = Duration::from_millis;
        assert_eq!(at_least(ms(86_429_991)), "1d 1h");
        assert_eq!(at_least(ms(86_400_000)), "1d");
        assert_eq!(at_least(ms(3_599_001)), "1h");
        assert_eq!(at_least(Duration::from_micros(29_734_001)), "29s 735ms");
        // What is shown parses back, and covers what it stands for.
        for millis in [
            1,
            999,
            29_734,
            252_600,
            3_599_001,
            86_429_991,
            31_536_000_000,
        ] {
            let shown = at_least(ms(millis));
            let read = parse(&shown).unwrap_or_else(|err| panic!("{shown}: {err}"));
            assert!(read >= ms(millis), "{shown} < {millis}ms");
            assert_eq!(parse(&exact(ms(millis))).map(|_| ()), Ok(()));
        }
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
