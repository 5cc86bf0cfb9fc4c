//! The options of a run, from the environment (`scripts/torture` sets them).

use std::time::{SystemTime, UNIX_EPOCH};

pub struct Settings {
    /// `REDLOCK_TORTURE_LONG=1`: the soak, 30-40s a scenario.
    pub long: bool,
    /// `REDLOCK_TORTURE_SEED`, or one made from the time.
    pub seed: u64,
    /// `REDLOCK_TORTURE_SCENARIO`: comma-separated names; all if unset.
    pub only: Option<Vec<String>>,
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
            seed,
            only,
        }
    }

    pub fn wants(&self, name: &str) -> bool {
        self.only
            .as_ref()
            .is_none_or(|only| only.iter().any(|n| n == name))
    }
}
