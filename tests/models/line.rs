//! An exhaustive model check of the line across servers that disagree
//! (issue 28): a server cut off while waiters stood in line, took the lock
//! or left, missed those calls, so each server may name another waiter
//! first. Every starting arrangement of the lines on 3 and on 5 servers is
//! explored, with a dead waiter's stale ticket among them, and every choice
//! of which majority answers each round (the cut servers are the others).
//!
//! What is checked, for each rule:
//! - **no split outlasts the rounds themselves**: within two attempts of
//!   each live waiter, one of them holds the lock, unless the dead
//!   waiter's ticket stands on a majority of the servers (then it is the
//!   first waiter as far as a majority knows, and the line waits for it to
//!   lapse: one step-aside, the linger);
//! - **first come, first served when nothing fails**: with the same line on
//!   every server and every server answering, only the earliest live
//!   waiter in line takes the lock.
//!
//! The rule redlock follows (`Rule::MajorityHead`): a waiter whose attempt
//! found the lock free on a majority of the servers that answered, but was
//! refused by some because another waiter is first there, asks each of
//! those servers for the tickets ahead of its own. If no ticket ahead of it
//! stands on a majority of the servers that answered, the servers that
//! named another first missed calls that a majority saw: its next attempt
//! takes a free lock wherever it is free, first or not. The control
//! (`Rule::FirstHere`: each server lets only its own first take the lock)
//! must be caught splitting for ever, or the checker proves nothing.
//!
//! Rounds are atomic here: two waiters that try at the same instant can
//! still split a majority between them, as in any Redlock client, and the
//! random retry delay is what separates them (docs/safety.md, "Arrival
//! order"). The model is about the line's disagreement, which used to keep
//! every waiter out whatever the timing.

use std::collections::HashMap;

/// The tickets, in line order: the dead waiter's stale ticket first, then
/// the live waiters'.
const DEAD: u8 = 0;
const LIVE: [u8; 2] = [1, 2];
const TICKETS: u8 = 3;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Rule {
    /// Each server lets only the first in its own line take a free lock.
    FirstHere,
    /// As [`Rule::FirstHere`], and a waiter that saw no ticket ahead of its
    /// own on a majority of the servers that answered takes a free lock
    /// wherever it is free.
    MajorityHead,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
struct State {
    /// Each server's line, one bit per ticket.
    lines: [u8; 5],
    /// Whether each live waiter's next attempt takes a free lock wherever
    /// it is free.
    overrides: [bool; 2],
}

struct Model {
    rule: Rule,
    servers: usize,
}

impl Model {
    fn quorum(&self) -> usize {
        self.servers / 2 + 1
    }

    /// Every set of servers that can answer a round: a majority or more.
    fn views(&self) -> Vec<u8> {
        (0u8..1 << self.servers)
            .filter(|view| view.count_ones() as usize >= self.quorum())
            .collect()
    }

    /// One attempt of live waiter `w` answered by the servers in `view`:
    /// the state after it, and whether it took the lock.
    fn attempt(&self, mut state: State, w: usize, view: u8) -> (State, bool) {
        let ticket = LIVE[w];
        let mine = 1u8 << ticket;
        let overriding = state.overrides[w];
        let mut taken = 0u8;
        let mut ahead = [0usize; TICKETS as usize];
        for s in (0..self.servers).filter(|s| view & (1 << s) != 0) {
            let line = state.lines[s];
            let first = (line != 0).then(|| line.trailing_zeros() as u8);
            if first.is_none() || first == Some(ticket) || overriding {
                taken |= 1 << s;
                state.lines[s] &= !mine;
            } else {
                state.lines[s] |= mine;
                for t in (0..ticket).filter(|t| line & (1 << t) != 0) {
                    ahead[t as usize] += 1;
                }
            }
        }
        if taken.count_ones() as usize >= self.quorum() {
            return (state, true);
        }
        // Undone: the ticket goes back in line where the lock was taken.
        for s in (0..self.servers).filter(|s| taken & (1 << s) != 0) {
            state.lines[s] |= mine;
        }
        state.overrides[w] = match self.rule {
            Rule::FirstHere => false,
            Rule::MajorityHead => ahead.iter().all(|&on| on < self.quorum()),
        };
        (state, false)
    }

    /// A schedule of `epochs` epochs (each live waiter attempts once per
    /// epoch, in either order, each round answered by any majority) under
    /// which nobody takes the lock, if there is one.
    fn keeps_out(&self, state: State, epochs: u32, seen: &mut HashMap<(State, u32), bool>) -> bool {
        if epochs == 0 {
            return true;
        }
        if let Some(&known) = seen.get(&(state, epochs)) {
            return known;
        }
        let views = self.views();
        let result = [[0, 1], [1, 0]].iter().any(|order| {
            views.iter().any(|&first_view| {
                let (after, took) = self.attempt(state, order[0], first_view);
                !took
                    && views.iter().any(|&second_view| {
                        let (after, took) = self.attempt(after, order[1], second_view);
                        !took && self.keeps_out(after, epochs - 1, seen)
                    })
            })
        });
        seen.insert((state, epochs), result);
        result
    }

    /// Every arrangement of the lines on the servers (each ticket in or out
    /// of each server's line), the lock free everywhere.
    fn starts(&self) -> impl Iterator<Item = State> + '_ {
        let per_server = 1u32 << TICKETS;
        (0..per_server.pow(self.servers as u32)).map(move |mut code| {
            let mut lines = [0u8; 5];
            for line in lines.iter_mut().take(self.servers) {
                *line = (code % per_server) as u8;
                code /= per_server;
            }
            State {
                lines,
                overrides: [false; 2],
            }
        })
    }

    fn dead_on_a_majority(&self, state: &State) -> bool {
        let on = state.lines[..self.servers]
            .iter()
            .filter(|line| *line & (1 << DEAD) != 0)
            .count();
        on >= self.quorum()
    }

    /// A starting arrangement from which the waiters can be kept out for
    /// two epochs though the dead ticket stands on no majority.
    fn split_that_lasts(&self) -> Option<State> {
        let mut seen = HashMap::new();
        self.starts()
            .filter(|state| !self.dead_on_a_majority(state))
            .find(|&state| self.keeps_out(state, 2, &mut seen))
    }

    /// With the same line everywhere (both live waiters in it, and maybe
    /// the dead one ahead) and every server answering, whether the later
    /// live waiter can take the lock.
    fn overtakes_when_nothing_fails(&self) -> Option<(State, usize)> {
        let all = (1u8 << self.servers) - 1;
        let both = LIVE.iter().fold(0u8, |bits, &t| bits | 1 << t);
        [both, both | 1 << DEAD].into_iter().find_map(|line| {
            let mut state = State {
                lines: [0; 5],
                overrides: [false; 2],
            };
            state.lines[..self.servers].fill(line);
            (1..2).find_map(|w| {
                let (after, took) = self.attempt(state, w, all);
                let (_, took_again) = self.attempt(after, w, all);
                (took || took_again).then_some((state, w))
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_split_outlasts_two_attempts_on_3_or_5_servers() {
        for servers in [3, 5] {
            let model = Model {
                rule: Rule::MajorityHead,
                servers,
            };
            assert_eq!(model.split_that_lasts(), None, "{servers} servers");
            assert_eq!(
                model.overtakes_when_nothing_fails(),
                None,
                "{servers} servers"
            );
        }
    }

    #[test]
    fn the_checker_catches_lines_that_split_for_ever() {
        for servers in [3, 5] {
            let model = Model {
                rule: Rule::FirstHere,
                servers,
            };
            let split = model
                .split_that_lasts()
                .expect("each server letting only its own first in splits the vote");
            assert!(!model.dead_on_a_majority(&split));
            // Each live waiter is first somewhere, or the split is the dead
            // ticket's on a minority.
            assert_eq!(model.overtakes_when_nothing_fails(), None);
        }
    }
}

/// `--supersede` (issue 31, src/lock/supersede.rs, supersede.lua): the
/// superseding kind of waiter, on servers that miss calls. Each server
/// keeps, per superseding waiter, nothing, "waiting" (registered and in
/// line) or "superseded" (marked by a newer one). An attempt reaches any
/// non-empty set of servers (the others are cut); a waiter that any of them
/// answers "superseded" exits; one that wins a majority holds the lock and
/// leaves the line there; the leave of a waiter that exited or holds lands
/// on each server at any time, or its ticket lapses there.
///
/// What is checked, from every reachable state: once the calls land (each
/// waiter still waiting attempts twice, every server answering, in any
/// order), **at most one superseding waiter keeps waiting**, and **the
/// newest waiter that arrived is never superseded** while it waits. The
/// control (`SupersedeRule::NeverHears`: a waiter supersedes older ones but
/// never hears that it was superseded) must be caught keeping two.
mod supersede {
    use std::collections::HashSet;

    #[derive(Clone, Copy, PartialEq, Eq, Debug)]
    pub(super) enum SupersedeRule {
        /// supersede.lua: a waiter marked superseded, or behind a newer one
        /// in line, is answered "superseded"; else it marks the older ones.
        Lua,
        /// A waiter marks the older ones, and never hears of its own mark.
        NeverHears,
    }

    #[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
    enum Mark {
        None,
        Waiting,
        Superseded,
    }

    #[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
    enum Status {
        NotArrived,
        Waiting,
        Exited,
        Holder,
    }

    /// Waiter `i` is newer than waiter `j` when `i > j` (its serial, or its
    /// arrival by the servers' clocks).
    const WAITERS: usize = 3;

    #[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
    struct State {
        marks: [[Mark; WAITERS]; 5],
        status: [Status; WAITERS],
    }

    pub(super) struct Model {
        pub(super) rule: SupersedeRule,
        pub(super) servers: usize,
        pub(super) waiters: usize,
    }

    impl Model {
        fn quorum(&self) -> usize {
            self.servers / 2 + 1
        }

        /// Waiter `w`'s script on server `s`: whether it was answered
        /// "superseded".
        fn on_server(&self, state: &mut State, w: usize, s: usize) -> bool {
            let marks = &mut state.marks[s];
            if self.rule == SupersedeRule::Lua {
                if marks[w] == Mark::Superseded {
                    return true;
                }
                if (w + 1..self.waiters).any(|newer| marks[newer] == Mark::Waiting) {
                    marks[w] = Mark::Superseded;
                    return true;
                }
            }
            for older in marks.iter_mut().take(w) {
                if *older == Mark::Waiting {
                    *older = Mark::Superseded;
                }
            }
            marks[w] = Mark::Waiting;
            false
        }

        /// An attempt of waiting waiter `w` that reaches the servers in
        /// `view` and takes nothing: it exits if any answers "superseded".
        fn attempt(&self, mut state: State, w: usize, view: u8) -> State {
            state.status[w] = Status::Waiting;
            let mut superseded = false;
            for s in (0..self.servers).filter(|s| view & (1 << s) != 0) {
                superseded |= self.on_server(&mut state, w, s);
            }
            if superseded {
                state.status[w] = Status::Exited;
            }
            state
        }

        /// Waiter `w` takes the lock on the majority `view`, where none
        /// answers "superseded"; it leaves the line there.
        fn take(&self, state: State, w: usize, view: u8) -> Option<State> {
            let mut after = state;
            after.status[w] = Status::Holder;
            for s in (0..self.servers).filter(|s| view & (1 << s) != 0) {
                if self.on_server(&mut after, w, s) {
                    return None;
                }
                after.marks[s][w] = Mark::None;
            }
            Some(after)
        }

        fn next(&self, state: State) -> Vec<State> {
            let every = (1u8 << self.servers) - 1;
            let mut next = Vec::new();
            for w in 0..self.waiters {
                match state.status[w] {
                    Status::NotArrived | Status::Waiting => {
                        for view in 1..=every {
                            next.push(self.attempt(state, w, view));
                            if view.count_ones() as usize >= self.quorum() {
                                next.extend(self.take(state, w, view));
                            }
                        }
                    }
                    Status::Exited | Status::Holder => {
                        for s in 0..self.servers {
                            if state.marks[s][w] == Mark::Waiting {
                                let mut after = state;
                                after.marks[s][w] = Mark::None;
                                next.push(after);
                            }
                        }
                    }
                }
            }
            next
        }

        /// Every order in which the waiting waiters of `state` attempt,
        /// twice each, every server answering: the most that keep waiting,
        /// and whether the newest that arrived was superseded.
        fn landed(&self, state: State) -> (usize, bool) {
            let every = (1u8 << self.servers) - 1;
            let newest = (0..self.waiters)
                .rev()
                .find(|&w| state.status[w] != Status::NotArrived);
            let newest_waits = newest.is_some_and(|w| state.status[w] == Status::Waiting);
            let orders: &[[usize; 3]] = &[
                [0, 1, 2],
                [0, 2, 1],
                [1, 0, 2],
                [1, 2, 0],
                [2, 0, 1],
                [2, 1, 0],
            ];
            let (mut most, mut cancelled) = (0, false);
            for order in orders {
                let mut after = state;
                for _ in 0..2 {
                    for &w in order.iter().filter(|&&w| w < self.waiters) {
                        if after.status[w] == Status::Waiting {
                            after = self.attempt(after, w, every);
                        }
                    }
                }
                let waiting = after
                    .status
                    .iter()
                    .filter(|&&s| s == Status::Waiting)
                    .count();
                most = most.max(waiting);
                cancelled |=
                    newest_waits && newest.is_some_and(|w| after.status[w] != Status::Waiting);
            }
            (most, cancelled)
        }

        /// A reachable state from which the calls landing leave two
        /// superseding waiters waiting, or supersede the newest, if any;
        /// else how many states were explored.
        pub(super) fn violation(&self) -> Result<usize, String> {
            let start = State {
                marks: [[Mark::None; WAITERS]; 5],
                status: [Status::NotArrived; WAITERS],
            };
            let mut seen = HashSet::from([start]);
            let mut frontier = vec![start];
            while let Some(state) = frontier.pop() {
                let (most, cancelled) = self.landed(state);
                if most > 1 || cancelled {
                    return Err(format!(
                        "{most} keep waiting, newest cancelled: {cancelled}, from {state:?}"
                    ));
                }
                for after in self.next(state) {
                    if seen.insert(after) {
                        frontier.push(after);
                    }
                }
            }
            Ok(seen.len())
        }
    }
}

#[cfg(test)]
mod supersede_tests {
    use super::supersede::{Model, SupersedeRule};

    #[test]
    fn at_most_one_superseding_waiter_keeps_waiting_once_the_calls_land() {
        for (servers, waiters) in [(3, 3), (5, 2)] {
            let model = Model {
                rule: SupersedeRule::Lua,
                servers,
                waiters,
            };
            let explored = model
                .violation()
                .unwrap_or_else(|v| panic!("{servers} servers: {v}"));
            eprintln!("{servers} servers, {waiters} waiters: {explored} states");
            assert!(explored > 1000, "{explored}");
        }
    }

    #[test]
    fn the_checker_catches_waiters_that_never_hear_they_were_superseded() {
        let model = Model {
            rule: SupersedeRule::NeverHears,
            servers: 3,
            waiters: 3,
        };
        let caught = model.violation().expect_err("two keep waiting");
        assert!(caught.starts_with("2 keep waiting"), "{caught}");
    }
}
