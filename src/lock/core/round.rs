//! One request fanned out to every server at once, its typed replies gathered
//! as they arrive, and the round ended as soon as its caller can decide.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use super::quorum::Tally;
use super::servers::{Connection, Server, ServerError};
use crate::lock::server_url::ServerSpec;

/// What the replies so far say about the round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::lock) enum Progress {
    /// Keep waiting for replies.
    Undecided,
    /// The round failed; nobody else need be waited for.
    Failed,
    /// The round is decided, and its request should still reach the other
    /// servers: every request handed to an open connection is written
    /// before the round returns, without waiting for its reply. The late
    /// servers get a grace as long as the round took (see [`settle`]).
    Settled,
    /// [`Progress::Settled`], where the late servers' answers would change
    /// nothing that is shown: the grace is only as long as the spread of
    /// the answers so far (a round that went the caller's way, without -v
    /// or JSON).
    Won,
}

/// Every server's reply, in configuration order; `None` for one that has not
/// answered (yet).
#[derive(Debug)]
pub(in crate::lock) struct Replies<T> {
    pub answers: Vec<Option<Result<T, ServerError>>>,
    /// Server indices in the order their replies arrived.
    arrival: Vec<usize>,
}

impl<T> Replies<T> {
    /// The servers that failed and why.
    pub fn failures(&self, servers: &[Arc<Server>]) -> Vec<(ServerSpec, ServerError)> {
        self.answers
            .iter()
            .zip(servers)
            .filter_map(|(answer, server)| match answer {
                Some(Err(err)) => Some((server.spec().clone(), err.clone())),
                _ => None,
            })
            .collect()
    }

    /// [`Self::failures`], and the servers that had not answered when the
    /// round ended: every server that did not answer, for a round that
    /// failed for lack of answers.
    pub fn unanswered(&self, servers: &[Arc<Server>]) -> Vec<(ServerSpec, ServerError)> {
        self.answers
            .iter()
            .zip(servers)
            .filter_map(|(answer, server)| match answer {
                Some(Err(err)) => Some((server.spec().clone(), err.clone())),
                None => Some((server.spec().clone(), ServerError::NoAnswerYet)),
                Some(Ok(_)) => None,
            })
            .collect()
    }

    pub fn pending(&self) -> usize {
        self.answers.iter().filter(|a| a.is_none()).count()
    }

    /// Replies as `answers` say, in configuration order.
    #[cfg(test)]
    pub fn of(answers: Vec<Option<Result<T, ServerError>>>) -> Self {
        Replies {
            arrival: (0..answers.len())
                .filter(|&i| answers[i].is_some())
                .collect(),
            answers,
        }
    }

    /// The replies of `more`, a round over the servers `of` (by their
    /// index here), in place of what those servers said before, as if
    /// they had answered last. One that did not answer in `more` keeps
    /// what it said before.
    pub fn merge(&mut self, of: &[usize], more: Replies<T>) {
        let Replies {
            mut answers,
            arrival,
        } = more;
        for there in arrival {
            let (here, reply) = (of[there], answers[there].take());
            if let Some(reply) = reply {
                self.arrival.retain(|&index| index != here);
                self.record(here, reply);
            }
        }
    }

    fn record(&mut self, index: usize, reply: Result<T, ServerError>) {
        self.answers[index] = Some(reply);
        self.arrival.push(index);
    }
}

/// A reply that counts toward a quorum or against it.
pub(in crate::lock) trait Vote {
    fn is_yes(&self) -> bool;

    /// A "no" that says nothing about who holds the lock (a server kept out
    /// by the restart guard): a failed round waits for the others, so that
    /// it can tell busy from not counted.
    fn is_inconclusive(&self) -> bool {
        false
    }
}

impl Vote for bool {
    fn is_yes(&self) -> bool {
        *self
    }
}

impl<T: Vote> Replies<T> {
    pub fn tally(&self, quorum: usize) -> Tally {
        let count = |wanted: &dyn Fn(&Result<T, ServerError>) -> bool| {
            self.answers.iter().flatten().filter(|a| wanted(a)).count()
        };
        Tally {
            total: self.answers.len(),
            quorum,
            yes: count(&|a| a.as_ref().is_ok_and(Vote::is_yes)),
            no: count(&|a| a.as_ref().is_ok_and(|v| !v.is_yes())),
            failed: count(&Result::is_err),
        }
    }

    /// The servers that said yes, in the order they answered.
    pub fn yes_servers(&self, servers: &[Arc<Server>]) -> Vec<ServerSpec> {
        self.arrival
            .iter()
            .filter(|&&index| matches!(&self.answers[index], Some(Ok(v)) if v.is_yes()))
            .map(|&index| servers[index].spec().clone())
            .collect()
    }

    /// The replies that came, with their servers.
    pub fn answered(&self) -> impl Iterator<Item = &T> {
        self.answers
            .iter()
            .filter_map(|a| a.as_ref()?.as_ref().ok())
    }
}

/// Sends `request` to every server concurrently and hands the replies so far
/// to `progress` as each arrives, until it decides or every server answered
/// (or failed within its timeout). Requests still in flight when the round
/// ends run on in the background, so that a late SET can still be released
/// by the compare-and-delete that follows it on the same connection.
pub(in crate::lock) async fn round<T, F, Fut>(
    servers: &[Arc<Server>],
    request: F,
    mut progress: impl FnMut(&Replies<T>) -> Progress,
) -> Replies<T>
where
    T: Send + 'static,
    F: FnOnce(Connection) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = redis::RedisResult<T>> + Send + 'static,
{
    let started = tokio::time::Instant::now();
    let (sender, mut arrivals) = mpsc::unbounded_channel();
    let handed: Arc<[AtomicBool]> = servers.iter().map(|_| AtomicBool::new(false)).collect();
    for (index, server) in servers.iter().enumerate() {
        let (server, request, sender) = (Arc::clone(server), request.clone(), sender.clone());
        let handed = Arc::clone(&handed);
        tokio::spawn(async move {
            let reply = server.call_noting(request, &handed[index]).await;
            let _ = sender.send((index, reply, tokio::time::Instant::now()));
        });
    }
    drop(sender);
    let mut replies = Replies {
        answers: servers.iter().map(|_| None).collect(),
        arrival: Vec::with_capacity(servers.len()),
    };
    // A round over fewer servers than a quorum (the clean-up of a failed
    // attempt on the servers still silent) may be decided before anyone
    // answers: it only has to be written.
    let mut outcome = progress(&replies);
    let mut first_answer = None;
    while outcome == Progress::Undecided {
        let Some((index, reply, at)) = arrivals.recv().await else {
            break;
        };
        // When the reply arrived, not when this future read it: replies
        // that arrive together are read together.
        first_answer.get_or_insert(at);
        replies.record(index, reply);
        outcome = progress(&replies);
    }
    let took = started.elapsed();
    let answer_grace = match outcome {
        Progress::Settled => took.max(GRACE_FLOOR),
        Progress::Won => spread_grace(first_answer, took),
        Progress::Undecided | Progress::Failed => return replies,
    };
    // How long from now each server that has not answered is waited for.
    // One not handed its request yet (its connection still opening: a
    // handshake, or a SYN to a server that just healed from a partition),
    // as long again as the round took, whatever its last call did. One
    // whose request is written, only for its answer (what -v, the release
    // message and the warnings asked behind the first acquire say of it):
    // `answer_grace`; and not at all if its last call timed out (hung),
    // until it answers again.
    let settled_at = tokio::time::Instant::now();
    let deadline = |index: usize| match (
        handed[index].load(Ordering::Acquire),
        servers[index].last_timed_out(),
    ) {
        (false, _) => Some(settled_at + took.max(GRACE_FLOOR)),
        (true, true) => None,
        (true, false) => Some(settled_at + answer_grace),
    };
    let spin = outcome == Progress::Won;
    settle(&mut replies, &mut arrivals, deadline, spin).await;
    replies
}

/// The answer grace of a [`Progress::Won`] round: twice the time from its
/// first answer to the one that decided it, at least [`SPREAD_FLOOR`], at
/// most the time the round took. Healthy servers asked at the same moment
/// answer within about the spread the majority showed, on a loaded machine
/// too (the spread grows with the load); a stopped server (SIGSTOP, whose
/// kernel completes the TCP handshake and takes the request) then costs a
/// process's first round that little, not a second round time.
fn spread_grace(first_answer: Option<tokio::time::Instant>, took: Duration) -> Duration {
    let spread = first_answer.map_or(Duration::ZERO, |first| first.elapsed());
    spread
        .saturating_mul(2)
        .max(SPREAD_FLOOR)
        .min(took.max(SPREAD_FLOOR))
}

/// What a round's servers answered, by server index, as they answer, and
/// when.
type Arrivals<T> = mpsc::UnboundedReceiver<(usize, Result<T, ServerError>, tokio::time::Instant)>;

/// The end of a decided round: makes sure its requests are written, and
/// waits for the servers that have not answered until their `deadline`
/// (`None`: not at all). With `spin`, the last millisecond is spent
/// yielding instead of on a timer, which would round it up to two.
async fn settle<T>(
    replies: &mut Replies<T>,
    arrivals: &mut Arrivals<T>,
    deadline: impl Fn(usize) -> Option<tokio::time::Instant>,
    spin: bool,
) {
    // The fault margin: the request should be on every healthy server
    // before this process moves on or exits, not only on the majority.
    // Waiting for the others' replies cannot tell a slow server from a
    // stopped one except by time (the kernel of a SIGSTOPped server still
    // completes TCP handshakes and takes the bytes), and any such patience
    // is what a hung server then costs on every call. So the round first
    // makes sure the requests are written: each server whose connection is
    // open has handed its request to that connection's driver task, which
    // writes it to the socket when the runtime next polls it. On this
    // current-thread runtime, a yield lets every task that is ready run
    // before this one resumes. Once written, the kernel delivers the
    // request even if this process exits at once, and a healthy server
    // runs it before anything that reaches it later. A late SET is what
    // the algorithm allows for: it expires, and a release on the same
    // connection follows it.
    tokio::task::yield_now().await;
    // A server whose connection was still being set up (a TLS or AUTH
    // handshake on a loaded machine, a SYN to a black-holed address) has
    // not been handed its request yet, and would never get it if the
    // process exits now: a SET that leaves the lock on a bare majority, a
    // DEL that leaves a key behind until its TTL. Its deadline gives it as
    // long again as the majority took: a healthy server is rarely slower
    // than twice the slowest of the majority, and a hung one costs one
    // more round time, never a server timeout.
    loop {
        let now = tokio::time::Instant::now();
        let until = (0..replies.answers.len())
            .filter(|&index| replies.answers[index].is_none())
            .filter_map(&deadline)
            .filter(|&until| until > now)
            .max();
        let Some(until) = until else { break };
        match arrivals.try_recv() {
            Ok((index, reply, _)) => replies.record(index, reply),
            Err(mpsc::error::TryRecvError::Disconnected) => break,
            // Tokio's timers count whole milliseconds: a wait shorter than
            // one is spent yielding, which polls the sockets in between.
            Err(mpsc::error::TryRecvError::Empty) if spin && until - now < TIMER_GRAIN => {
                tokio::task::yield_now().await
            }
            // Handing a request makes no arrival: looked at every grain.
            // With `spin`, the timer stops a grain short of the deadline,
            // which it would otherwise overshoot by up to a grain.
            Err(mpsc::error::TryRecvError::Empty) => {
                let last = if spin { until - TIMER_GRAIN } else { until };
                let next = last.min(now + TIMER_GRAIN);
                if let Ok(arrived) = tokio::time::timeout_at(next, arrivals.recv()).await {
                    let Some((index, reply, _)) = arrived else {
                        break;
                    };
                    replies.record(index, reply);
                }
            }
        }
    }
}

/// The least a decided round waits for the servers that have not been
/// handed their request.
const GRACE_FLOOR: Duration = Duration::from_millis(1);

/// The least a won round waits for the answers of the servers whose
/// request is written: a healthy loopback server answers within about
/// 0.1 ms of the others.
const SPREAD_FLOOR: Duration = Duration::from_micros(300);

/// The resolution of tokio's timers.
const TIMER_GRAIN: Duration = Duration::from_millis(1);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_merged_round_puts_its_answers_in_place_of_its_servers_earlier_ones() {
        let timeout = || Err(ServerError::Timeout(Duration::from_millis(200)));
        let mut replies: Replies<bool> =
            Replies::of(vec![Some(Ok(true)), Some(timeout()), Some(timeout())]);
        assert!(!replies.tally(2).succeeded());
        // Servers 1 and 2 asked again: 1 said yes, 2 did not answer.
        replies.merge(&[1, 2], Replies::of(vec![Some(Ok(true)), None]));
        assert!(replies.tally(2).succeeded());
        assert!(matches!(
            replies.answers[2],
            Some(Err(ServerError::Timeout(_)))
        ));
        // Server 1 answered last, and once.
        assert_eq!(replies.arrival, [0, 2, 1]);
    }

    #[test]
    fn a_won_round_waits_twice_its_spread_within_its_floor_and_its_length() {
        let ms = Duration::from_millis;
        let took = ms(40);
        assert_eq!(spread_grace(None, took), SPREAD_FLOOR);
        let now = tokio::time::Instant::now();
        let grace = spread_grace(Some(now - ms(5)), took);
        assert!(grace >= ms(10) && grace < ms(12), "{grace:?}");
        // Never longer than the round itself took.
        assert_eq!(spread_grace(Some(now - ms(30)), took), took);
    }
}
