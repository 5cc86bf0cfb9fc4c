//! When the servers' lines disagree (issue 28). A server cut off while
//! waiters stood in line, took the lock or left it misses those calls, and
//! names another waiter first than the others do; with every server
//! letting only its own first take a free lock, no waiter could win a
//! majority until the step-aside timers, started at different moments on
//! each server, ran out one after another.
//!
//! A waiter refused by a server where another waiter is first learns the
//! tickets ahead of its own there (acquire.lua's `queued` reply). If the
//! lock was free on a majority of the servers that answered, and no ticket
//! ahead of its own stands on a majority of them, the servers that named
//! another first missed what a majority saw: its next attempt takes the
//! free lock wherever it is free (acquire.lua, ARGV[11]). When nothing
//! fails, every server holds the same line, the earliest waiter stands on
//! all of them, and nobody else goes past it: first come, first served as
//! before. tests/models/line.rs checks the rule on every arrangement of the
//! lines on 3 and 5 servers: no split outlasts two attempts of each
//! waiter, unless a dead waiter's ticket stands on a majority (then it
//! lapses within the linger, the one step-aside the line may cost).

use std::collections::HashMap;

/// What one server that answered an attempt said of its line.
pub(super) enum Seen<'a> {
    /// It took the lock: free, and the caller first (or nobody in line).
    Took,
    /// Free, but refused: these tickets are ahead of the caller's there.
    Refused(&'a [String]),
    /// Held, or kept out: nothing about the line.
    Neither,
}

/// Whether the next attempt of the waiter holding `ticket` goes past a
/// split line, given what the servers that answered its attempt said.
pub(super) fn split_for<'a>(
    ticket: &str,
    quorum: usize,
    replies: impl Iterator<Item = Seen<'a>>,
) -> bool {
    let (mut free, mut refused) = (0, 0);
    let mut ahead: HashMap<&str, usize> = HashMap::new();
    for reply in replies {
        match reply {
            Seen::Took => free += 1,
            Seen::Refused(tickets) => {
                free += 1;
                refused += 1;
                for earlier in tickets.iter().filter(|t| t.as_str() < ticket) {
                    *ahead.entry(earlier.as_str()).or_default() += 1;
                }
            }
            Seen::Neither => {}
        }
    }
    refused > 0 && free >= quorum && ahead.values().all(|&on| on < quorum)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ahead(tickets: &[&str]) -> Vec<String> {
        tickets.iter().map(|t| (*t).to_owned()).collect()
    }

    #[test]
    fn a_waiter_goes_past_only_heads_that_a_majority_does_not_hold() {
        let (a, c) = (ahead(&["a"]), ahead(&["c"]));
        // 3 servers: "a" first on one, the caller "b" took another.
        let split = || [Seen::Refused(&a), Seen::Took, Seen::Neither].into_iter();
        assert!(split_for("b", 2, split()));
        // "a" ahead on two of three: the line agrees, "b" waits its turn.
        assert!(!split_for(
            "b",
            2,
            [Seen::Refused(&a), Seen::Refused(&a)].into_iter()
        ));
        // Not refused by any line: nothing to go past.
        assert!(!split_for("b", 2, [Seen::Took].into_iter()));
        // Free on a minority only: busy, not split.
        assert!(!split_for("b", 3, split()));
        // Tickets after the caller's are not ahead of it.
        assert!(split_for(
            "b",
            2,
            [Seen::Refused(&c), Seen::Refused(&c)].into_iter()
        ));
    }
}
