//! The one source of randomness of a run: a tiny xorshift64* generator. Every
//! random choice (section lengths, faults, their targets and timing) comes
//! from the seed printed on each scenario's line, so a run can be replayed
//! with `REDLOCK_TORTURE_SEED` (the outcomes still depend on timing).

use std::time::Duration;

pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        // splitmix64 spreads small seeds (1, 2, 3...) over the whole state;
        // xorshift would stay at zero forever from a zero state.
        let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        Rng(if z == 0 { 0x2545_f491_4f6c_dd1d } else { z })
    }

    /// The generator of one scenario: the same for a scenario run alone
    /// (`REDLOCK_TORTURE_SCENARIO`) as in the whole suite.
    pub fn for_scenario(seed: u64, name: &str) -> Rng {
        // FNV-1a of the name.
        let hash = name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        });
        Rng::new(seed ^ hash)
    }

    /// An independent generator, e.g. one per client thread, so that a
    /// client's choices do not depend on how the threads interleave.
    pub fn split(&mut self) -> Rng {
        Rng::new(self.next_u64())
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `0..n` (`n` > 0); the modulo bias is irrelevant here.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// Uniform in `lo..=hi` milliseconds.
    pub fn millis(&mut self, lo: u64, hi: u64) -> Duration {
        Duration::from_millis(lo + self.below(hi - lo + 1))
    }

    /// True with probability `num / den`.
    pub fn chance(&mut self, num: u64, den: u64) -> bool {
        self.below(den) < num
    }

    /// `k` distinct indices out of `0..n`, in random order.
    pub fn distinct(&mut self, n: usize, k: usize) -> Vec<usize> {
        let mut all: Vec<usize> = (0..n).collect();
        for i in 0..k.min(n) {
            let j = i + self.below((n - i) as u64) as usize;
            all.swap(i, j);
        }
        all.truncate(k);
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_replays_the_same_choices() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        let first: Vec<u64> = (0..5).map(|_| a.next_u64()).collect();
        let again: Vec<u64> = (0..5).map(|_| b.next_u64()).collect();
        assert_eq!(first, again);
        assert_ne!(Rng::new(8).next_u64(), first[0]);
        assert_ne!(
            Rng::for_scenario(7, "mixed").next_u64(),
            Rng::for_scenario(7, "no-faults").next_u64()
        );
    }

    #[test]
    fn choices_stay_in_their_ranges() {
        let mut rng = Rng::new(0);
        for _ in 0..1000 {
            let d = rng.millis(20, 30);
            assert!((20..=30).contains(&d.as_millis()), "{d:?}");
            let picked = rng.distinct(5, 3);
            assert_eq!(picked.len(), 3);
            assert!(picked.iter().all(|&i| i < 5));
            assert!(picked[0] != picked[1] && picked[1] != picked[2] && picked[0] != picked[2]);
        }
    }
}
