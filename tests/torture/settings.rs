//! The options of a run, from the environment (`scripts/torture` sets them).

use std::time::{SystemTime, UNIX_EPOCH};

use crate::netns::CutKind;

pub struct Settings {
    /// `REDLOCK_TORTURE_LONG=1`: the soak, 30-40s a scenario.
    pub long: bool,
    /// `REDLOCK_TORTURE_SECONDS=N`: every scenario runs its clients for N
    /// seconds instead of its short or long length, for a measurement that
    /// needs more runs than a soak gives (the line's wait, issue 28).
    pub seconds: Option<u64>,
    /// `REDLOCK_TORTURE_SEED`, or one made from the time.
    pub seed: u64,
    /// `REDLOCK_TORTURE_SCENARIO`: comma-separated names; all if unset.
    pub only: Option<Vec<String>>,
    /// `REDLOCK_TORTURE_NO_LINE=1`: in `rolling-cuts`, the clients log in
    /// as a user without the sorted-set commands, so that no waiter is
    /// queued (netns.rs).
    pub no_line: bool,
    /// `REDLOCK_TORTURE_CUTS=silent|unreachable`: how `rolling-cuts` cuts
    /// a server off (netns.rs); silent if unset.
    pub cuts: CutKind,
    /// `CI=true`: a scenario this machine cannot run is a failure, not a
    /// skip.
    pub ci: bool,
}

impl Settings {
    pub fn from_env() -> Settings {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let seed = var("REDLOCK_TORTURE_SEED").map_or_else(
            || {
                let now = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap_or_default();
                now.as_nanos() as u64 ^ u64::from(std::process::id())
            },
            |text| {
                text.parse()
                    .unwrap_or_else(|_| panic!("REDLOCK_TORTURE_SEED={text:?} is not a number"))
            },
        );
        let only = var("REDLOCK_TORTURE_SCENARIO").map(|names| {
            names
                .split(',')
                .map(|n| n.trim().to_string())
                .collect::<Vec<_>>()
        });
        Settings {
            long: var("REDLOCK_TORTURE_LONG").is_some_and(|v| v != "0"),
            seconds: var("REDLOCK_TORTURE_SECONDS").map(|text| {
                text.parse()
                    .unwrap_or_else(|_| panic!("REDLOCK_TORTURE_SECONDS={text:?} is not a number"))
            }),
            seed,
            only,
            no_line: var("REDLOCK_TORTURE_NO_LINE").is_some_and(|v| v != "0"),
            cuts: var("REDLOCK_TORTURE_CUTS").map_or(CutKind::Silent, |word| {
                CutKind::from_word(&word).unwrap_or_else(|| {
                    panic!("REDLOCK_TORTURE_CUTS={word:?} is neither silent nor unreachable")
                })
            }),
            ci: var("CI").is_some_and(|v| v == "true"),
        }
    }

    pub fn wants(&self, name: &str) -> bool {
        self.only
            .as_ref()
            .is_none_or(|only| only.iter().any(|n| n == name))
    }
}
