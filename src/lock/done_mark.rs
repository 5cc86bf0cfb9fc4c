//! The done mark of a run once per period or key, as values: what a run
//! is done once for, its id, and the mark as a server keeps it (the
//! protocol around them is lock/once.rs).

use std::time::Duration;

use super::holder::Holder;
#[cfg(test)]
use super::key::Token;
use super::key::{LockKey, DONE_SUFFIX};

/// How long a `--once KEY` mark is kept.
pub const ONCE_KEEP: Duration = Duration::from_secs(30 * 24 * 3600);

/// The least a period's mark outlives its period by: a server whose clock
/// is ahead of the others' drops it that much early.
const MARGIN: Duration = Duration::from_secs(60);

/// What a run is done once for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Once {
    /// `--once-per DUR[@HH:MM]`: periods of `period`, starting `offset`
    /// after each multiple of `period` since the Unix epoch (UTC).
    Per { period: Duration, offset: Duration },
    /// `--once KEY`: once for this key, kept [`ONCE_KEEP`].
    Key(String),
}

/// One run's id, fixed before its first attempt, and when its mark lapses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OnceRun {
    pub id: String,
    /// For a period: when it ends, on the servers' clock in ms.
    pub ends_at_ms: Option<u64>,
    /// When the mark lapses: at this server time (ms), or after this long.
    pub(super) lapse: Lapse,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Lapse {
    /// At this server time (ms), but never sooner than the margin (ms)
    /// after the mark is written: a run whose job outlasted its period's
    /// end still leaves its mark for the waiters of that period.
    At(u64, u64),
    After(Duration),
}

impl Once {
    /// The run of this period (or key) at `server_ms` on the servers'
    /// clock; a period's mark outlives it by `margin` (at least a minute).
    pub fn run_at(&self, server_ms: u64, margin: Duration) -> OnceRun {
        match self {
            Once::Per { period, offset } => {
                let (period, offset) = (ms(*period).max(1), ms(*offset));
                let n = server_ms.saturating_sub(offset) / period;
                let ends = (n + 1) * period + offset;
                let least = crate::test_hooks::once_margin().unwrap_or(MARGIN);
                let margin = ms(margin.max(least));
                OnceRun {
                    id: format!("per:{period}:{offset}:{n}"),
                    ends_at_ms: Some(ends),
                    lapse: Lapse::At(ends + margin, margin),
                }
            }
            Once::Key(key) => OnceRun {
                id: format!("key:{key}"),
                ends_at_ms: None,
                lapse: Lapse::After(ONCE_KEEP),
            },
        }
    }
}

impl OnceRun {
    /// The run whose id `acquire` recorded beside the lock (`redlock
    /// done`): its mark lapses as that run's would; `None` for an id that
    /// is none of redlock's.
    pub fn from_id(id: &str, margin: Duration) -> Option<OnceRun> {
        if let Some(key) = id.strip_prefix("key:") {
            return Some(Once::Key(key.to_owned()).run_at(0, margin));
        }
        let mut parts = id.strip_prefix("per:")?.split(':');
        let mut next = || parts.next()?.parse::<u64>().ok();
        let (period, offset, n) = (next()?, next()?, next()?);
        let per = Once::Per {
            period: Duration::from_millis(period),
            offset: Duration::from_millis(offset),
        };
        let run = per.run_at(n.checked_mul(period)?.checked_add(offset)?, margin);
        (run.id == id).then_some(run)
    }
}

/// A done mark as a server keeps it: the run's id, when it was written
/// (that server's clock, ms), the command's status, and who ran it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DoneMark {
    pub id: String,
    pub finished_ms: Option<u64>,
    pub status: i32,
    /// The holder record of the run (`None`: unreadable).
    pub holder: Option<Holder>,
}

impl DoneMark {
    /// A mark a server said holds this run's id: as [`Self::decode`]
    /// reads it, or, when it reads as nothing of redlock's, with its id and
    /// nothing else known.
    pub fn read(mark: &[u8]) -> DoneMark {
        Self::decode(mark).unwrap_or_else(|| DoneMark {
            id: String::from_utf8_lossy(mark.split(|&b| b == 0).next().unwrap_or_default())
                .into_owned(),
            finished_ms: None,
            status: 0,
            holder: None,
        })
    }

    /// The mark as mark_done.lua wrote it (`id NUL ms NUL status NUL
    /// record`); `None` for anything else.
    pub fn decode(mark: &[u8]) -> Option<DoneMark> {
        let mut parts = mark.splitn(4, |&b| b == 0);
        let id = String::from_utf8(parts.next()?.to_vec()).ok()?;
        let finished_ms = std::str::from_utf8(parts.next()?).ok()?.parse().ok();
        let status = std::str::from_utf8(parts.next()?).ok()?.parse().ok()?;
        let holder = serde_json::from_slice(parts.next()?).ok();
        Some(DoneMark {
            id,
            finished_ms,
            status,
            holder,
        })
    }
}

/// The mark most of `marks` (one per server that holds one) hold, the
/// latest of those on as many, and on how many: what `status` and `list`
/// show.
pub fn most_held(marks: &[DoneMark]) -> Option<(DoneMark, usize)> {
    let on = |id: &str| marks.iter().filter(|m| m.id == id).count();
    let best = (marks.iter()).max_by_key(|m| (on(&m.id), m.finished_ms))?;
    Some((best.clone(), on(&best.id)))
}

/// The done mark's key beside the lock `key`.
pub fn mark_key(key: &LockKey) -> Vec<u8> {
    [key.bytes(), DONE_SUFFIX].concat()
}

/// `duration` in whole ms.
fn ms(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: Duration = Duration::from_secs(3600);

    #[test]
    fn a_period_is_counted_from_the_epoch_and_shifted_by_its_offset() {
        let per = Once::Per {
            period: HOUR,
            offset: Duration::ZERO,
        };
        let run = per.run_at(3 * 3_600_000 + 5, Duration::ZERO);
        assert_eq!(run.id, "per:3600000:0:3");
        assert_eq!(run.ends_at_ms, Some(4 * 3_600_000));
        assert_eq!(run.lapse, Lapse::At(4 * 3_600_000 + 60_000, 60_000));
        // The last ms of a period and the first of the next differ.
        assert_eq!(per.run_at(3_600_000 - 1, HOUR).id, "per:3600000:0:0");
        assert_eq!(per.run_at(3_600_000, HOUR).id, "per:3600000:0:1");
        // A day from 02:00 UTC: 01:59 is still the day before's.
        let day = Duration::from_secs(86_400);
        let shifted = Once::Per {
            period: day,
            offset: 2 * HOUR,
        };
        let at = |h: u64, m: u64| 86_400_000 * 10 + (h * 60 + m) * 60_000;
        assert_eq!(shifted.run_at(at(1, 59), HOUR).id, "per:86400000:7200000:9");
        assert_eq!(shifted.run_at(at(2, 0), HOUR).id, "per:86400000:7200000:10");
        // The margin is the restart guard's when it is longer.
        assert_eq!(
            per.run_at(0, 2 * HOUR).lapse,
            Lapse::At(3_600_000 + 7_200_000, 7_200_000)
        );
        let key = Once::Key("v1.2".into()).run_at(99, HOUR);
        assert_eq!(key.id, "key:v1.2");
        assert_eq!(key.lapse, Lapse::After(ONCE_KEEP));
        // `redlock done` finds the same run from the id alone.
        let runs = [
            per.run_at(run.ends_at_ms.unwrap(), HOUR),
            shifted.run_at(at(2, 0), HOUR),
            key,
        ];
        for run in runs {
            assert_eq!(OnceRun::from_id(&run.id, HOUR), Some(run));
        }
        for id in ["per:1:0", "per:x:0:1", "per:10:0:1:2", "other", "per:0:0:1"] {
            assert_eq!(OnceRun::from_id(id, HOUR), None, "{id}");
        }
    }

    #[test]
    fn a_mark_reads_back_as_written_and_nothing_else_does() {
        let holder = Holder {
            host: "web-1".into(),
            pid: 42,
            ..Holder::default()
        };
        let record = holder.encode(&Token::from_user("t"));
        let mark = [b"per:1:0:5\x001700000000000\x000\x00".as_slice(), &record].concat();
        let read = DoneMark::decode(&mark).unwrap();
        assert_eq!(read.id, "per:1:0:5");
        assert_eq!(read.finished_ms, Some(1_700_000_000_000));
        assert_eq!(read.status, 0);
        assert_eq!(read.holder.unwrap().host, "web-1");
        let no_clock = DoneMark::decode(b"key:a\x00\x000\x00{").unwrap();
        assert_eq!((no_clock.finished_ms, no_clock.holder), (None, None));
        assert!(DoneMark::decode(b"per:1:0:5").is_none());
        assert!(DoneMark::decode(b"per\x001\x00x\x00").is_none());
    }
}
