//! Wake-ups on release: a waiter listens on every server for the message a
//! release publishes (release.lua, force.lua), so that it tries again as soon
//! as a lock is freed instead of at its next poll. Listening is an
//! optimisation only: a server that cannot be subscribed to (down, paused,
//! an ACL without SUBSCRIBE), an expiry or a client that does not publish
//! are all left to the poll in `retry.rs`. A subscription that is lost (a
//! proxy's idle timeout, `CLIENT KILL`, a server restart) is made again,
//! after a bounded, jittered backoff ([`Backoff`]); until it is, that
//! server is not counted as listened to, and is left to the poll too.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc::{self, UnboundedSender};
use tokio::task::JoinSet;

use super::core::servers::Server;
use super::key::LockKey;

/// Appended to a lock's key to name the channel its releases are announced
/// on, as `\0holder` names its holder record. Channels and keys live in
/// separate namespaces on a server; the suffix keeps the channel clear of
/// every other lock's channel, since no name redlock makes contains NUL.
const CHANNEL_SUFFIX: &[u8] = b"\0released";

/// The channel releases of `key` are announced on when anyone may try (or
/// a run of readers): every waiter listens to it.
pub fn channel(key: &LockKey) -> Vec<u8> {
    [key.bytes(), CHANNEL_SUFFIX].concat()
}

/// The channels a waiter with `ticket` listens to for `key`: [`channel`],
/// and its own (`channel`, a NUL, the ticket), on which a release names it
/// alone when its turn has come (announce, shared.lua). A release wakes one
/// waiter, not every waiter to let all but one go back to sleep.
pub fn channels(key: &LockKey, ticket: Option<&str>) -> Vec<Vec<u8>> {
    let everyone = channel(key);
    match ticket {
        Some(ticket) => {
            let own = [everyone.as_slice(), b"\0", ticket.as_bytes()].concat();
            vec![everyone, own]
        }
        None => vec![everyone],
    }
}

/// How long a waiter woken by one server's announcement waits for the
/// others it listens to: a release deletes the key on every server at about
/// the same time, and an attempt that overtakes it on a server would take the
/// lock on fewer servers than it could. Once a majority announced it, the
/// rest get as long again as the majority took (at least
/// [`SETTLE_FLOOR`]), as a decided round gives them (round.rs): a server
/// that stopped after it subscribed does not cost every wake-up [`SETTLE`].
const SETTLE: Duration = Duration::from_millis(10);
const SETTLE_FLOOR: Duration = Duration::from_millis(1);

/// How many wake-ups a waiter may spend in a row, and how soon it earns
/// another: anyone allowed to PUBLISH on a lock's channel can send messages
/// as fast as the server relays them, and each would cost an attempt on
/// every server. A real release is one message per server, so a waiter that
/// has not been woken in the last [`WAKE_EVERY`] still wakes at once; a
/// flood buys at most one attempt per [`WAKE_EVERY`] beyond the poll.
const WAKE_BURST: u32 = 4;
const WAKE_EVERY: Duration = Duration::from_millis(100);

/// The wake-ups a waiter has left: a token bucket of [`WAKE_BURST`],
/// refilled one per [`WAKE_EVERY`].
#[derive(Debug, Clone, Copy)]
struct WakeBudget {
    left: u32,
    /// When the last wake-up was earned (or the bucket started).
    earned_at: tokio::time::Instant,
}

impl WakeBudget {
    fn new(now: tokio::time::Instant) -> Self {
        WakeBudget {
            left: WAKE_BURST,
            earned_at: now,
        }
    }

    /// Adds the wake-ups earned by `now`.
    fn earn(&mut self, now: tokio::time::Instant) {
        while self.left < WAKE_BURST && now >= self.earned_at + WAKE_EVERY {
            self.left += 1;
            self.earned_at += WAKE_EVERY;
        }
        if self.left == WAKE_BURST {
            self.earned_at = now;
        }
    }

    /// The earliest a wake-up can be spent, from `now`.
    fn next_at(&mut self, now: tokio::time::Instant) -> tokio::time::Instant {
        self.earn(now);
        match self.left {
            0 => self.earned_at + WAKE_EVERY,
            _ => now,
        }
    }

    /// Spends one wake-up at `now` (one is due by [`Self::next_at`]).
    fn spend(&mut self, now: tokio::time::Instant) {
        self.earn(now);
        self.left = self.left.saturating_sub(1);
    }
}

/// How long a listener waits before it subscribes again, the first time
/// after its subscription was lost or could not be made, and at most: the
/// wait doubles at each failure in a row, and each is cut to a random point
/// in its upper half, so that waiters dropped together (a proxy that
/// restarts) do not all come back at the same moment.
const RESUBSCRIBE_FIRST: Duration = Duration::from_millis(50);
const RESUBSCRIBE_MOST: Duration = Duration::from_secs(2);

/// When one listener tries to subscribe again.
#[derive(Debug, Default)]
struct Backoff {
    /// Failures in a row: the next wait is [`RESUBSCRIBE_FIRST`] doubled
    /// this many times, up to [`RESUBSCRIBE_MOST`].
    failures: u32,
}

impl Backoff {
    /// The wait before the next try, counting one more failure.
    fn next(&mut self, random: f64) -> Duration {
        let full = RESUBSCRIBE_FIRST
            .saturating_mul(1 << self.failures.min(16))
            .min(RESUBSCRIBE_MOST);
        self.failures = self.failures.saturating_add(1);
        full / 2 + (full / 2).mul_f64(random.clamp(0.0, 1.0))
    }

    /// A subscription that was confirmed and lasted `lasted` was lost: one
    /// that lasted longer than the longest wait starts the backoff again,
    /// one that keeps dropping at once goes on backing off.
    fn dropped_after(&mut self, lasted: Duration) {
        if lasted > RESUBSCRIBE_MOST {
            self.failures = 0;
        }
    }
}

/// A random number in [0, 1): jitter, of no cryptographic quality (a
/// failure of the system's source just means none).
fn random_fraction() -> f64 {
    let mut bytes = [0u8; 8];
    let _ = getrandom::fill(&mut bytes);
    (u64::from_le_bytes(bytes) >> 11) as f64 / (1u64 << 53) as f64
}

/// What one server's listener (by its index) reports.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Event {
    /// The subscription is confirmed: every release on this server from now
    /// on is announced to us.
    Listening(usize),
    /// The subscription could not be made; this server is left to the poll
    /// (and tried again, unless it was refused).
    Failed(usize),
    /// The subscription was lost (its connection dropped): this server is
    /// left to the poll until it is made again.
    Dropped(usize),
    /// A release was announced, naming the waiter whose turn it is (its
    /// ticket), or nobody (empty): then anyone may try.
    Released(usize, Vec<u8>),
}

/// One server's listener: subscribes to `channels` on `server`, reports to
/// `events` as `index`, and subscribes again whenever the subscription is
/// lost or could not be made, after a [`Backoff`]. A refusal (an ACL
/// without SUBSCRIBE) is final: no retry can change it. Ends when the
/// waiter stops listening (its receiver is gone).
async fn listen(
    index: usize,
    server: Arc<Server>,
    channels: Arc<[Vec<u8>]>,
    events: UnboundedSender<Event>,
) {
    let mut backoff = Backoff::default();
    loop {
        match server.subscribe(&channels).await {
            Ok(mut messages) => {
                if events.send(Event::Listening(index)).is_err() {
                    return;
                }
                let since = tokio::time::Instant::now();
                while let Some(turn) = messages.next().await {
                    if events.send(Event::Released(index, turn)).is_err() {
                        return;
                    }
                }
                if events.send(Event::Dropped(index)).is_err() {
                    return;
                }
                backoff.dropped_after(since.elapsed());
            }
            Err(error) => {
                if events.send(Event::Failed(index)).is_err() || error.is_refusal() {
                    return;
                }
            }
        }
        tokio::time::sleep(backoff.next(random_fraction())).await;
    }
}

/// The subscriptions of one waiter, one a server (on the connection its
/// attempts use where the server speaks RESP3, else on one of their own:
/// listening.rs), and what they reported since the current attempt started.
pub struct Wakeups {
    events: mpsc::UnboundedReceiver<Event>,
    /// The listeners; dropping them ends the subscriptions.
    _listeners: JoinSet<()>,
    /// The servers whose first subscription was confirmed or failed.
    settled: Vec<bool>,
    /// The servers listened to now: confirmed, and not lost since.
    listening_on: Vec<bool>,
    /// The servers that announced a release since the attempt started.
    announced: Vec<bool>,
    /// Once one did: when, and until when the others are waited for.
    settle: Option<(tokio::time::Instant, tokio::time::Instant)>,
    /// A subscription was confirmed since the attempt started: a release on
    /// that server just before it would have gone unheard.
    listening: bool,
    /// The confirmation that made a majority of the servers listen came
    /// since the attempt started: from then on every release that frees
    /// the lock on a majority is heard, whatever the others do.
    majority_listening: bool,
    /// A majority of the servers.
    quorum: usize,
    /// How many more wake-ups may be spent, and when.
    budget: WakeBudget,
    /// This waiter's ticket in line, to tell its turn from another's.
    ticket: Option<Vec<u8>>,
}

impl Wakeups {
    /// Subscribes to every one of `channels` on every server, in the
    /// background: a release on any of them wakes the waiter (a lock's
    /// [`channels`], or every slot's of a semaphore).
    pub fn subscribe(servers: &[Arc<Server>], channels: Vec<Vec<u8>>) -> Self {
        let (sender, events) = mpsc::unbounded_channel();
        let mut listeners = JoinSet::new();
        let channels: Arc<[Vec<u8>]> = channels.into();
        for (index, server) in servers.iter().enumerate() {
            let (server, sender, channels) = (server.clone(), sender.clone(), channels.clone());
            listeners.spawn(listen(index, server, channels, sender));
        }
        Self::new(events, listeners, servers.len())
    }

    fn new(events: mpsc::UnboundedReceiver<Event>, listeners: JoinSet<()>, servers: usize) -> Self {
        Wakeups {
            events,
            _listeners: listeners,
            settled: vec![false; servers],
            listening_on: vec![false; servers],
            announced: vec![false; servers],
            settle: None,
            listening: false,
            majority_listening: false,
            quorum: super::core::quorum::quorum(servers),
            budget: WakeBudget::new(tokio::time::Instant::now()),
            ticket: None,
        }
    }

    /// Called as an attempt starts: what arrived so far happened before the
    /// attempt reaches any server, so the attempt sees its effect.
    /// A new attempt starts; from now on, a release that names another
    /// waiter's turn does not wake this one, whose ticket is `ticket`
    /// (`None` before it stands in line).
    pub fn attempt_starts(&mut self, ticket: Option<&str>) {
        self.ticket = ticket.map(|t| t.as_bytes().to_vec());
        while let Ok(event) = self.events.try_recv() {
            self.note(event);
        }
        self.announced.fill(false);
        self.settle = None;
        self.listening = false;
        self.majority_listening = false;
    }

    /// Resolves once something arrived since the attempt started that the
    /// attempt may have missed: a release (once every server listened to
    /// announced it, or [`SETTLE`] after the first did), or a majority of
    /// the servers listening (or, where fewer ever will, the last of the
    /// subscriptions settling) after one was confirmed: a server that hangs
    /// while it is subscribed to is not waited for. At once if that
    /// already happened; never if nothing more can arrive. Wake-ups come
    /// no faster than the budget allows ([`WAKE_EVERY`]).
    pub async fn woken(&mut self) {
        self.due_or_settled().await;
        let now = tokio::time::Instant::now();
        tokio::time::sleep_until(self.budget.next_at(now)).await;
        self.budget.spend(tokio::time::Instant::now());
    }

    /// Resolves once a wake-up is due, whatever the budget.
    async fn due_or_settled(&mut self) {
        loop {
            while let Ok(event) = self.events.try_recv() {
                self.note(event);
            }
            if self.due() {
                return;
            }
            let settled = async {
                match self.settle {
                    Some((_, until)) => tokio::time::sleep_until(until).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                event = self.events.recv() => match event {
                    Some(event) => self.note(event),
                    None => std::future::pending().await,
                },
                _ = settled => return,
            }
        }
    }

    fn due(&self) -> bool {
        let all_announced = self
            .listening_on
            .iter()
            .zip(&self.announced)
            .all(|(&listening, &announced)| announced || !listening);
        let listening = self.listening_on.iter().filter(|&&on| on).count();
        match self.settle {
            Some((_, until)) => all_announced || tokio::time::Instant::now() >= until,
            None => {
                self.listening
                    && (self.majority_listening
                        || (self.settled.iter().all(|&settled| settled) && listening < self.quorum))
            }
        }
    }

    fn note(&mut self, event: Event) {
        match event {
            // Confirmed again after it was lost: a release in between went
            // unheard, and the next attempt finds it.
            Event::Listening(index) => {
                self.settled[index] = true;
                self.listening = true;
                self.listening_on[index] = true;
                let listening = self.listening_on.iter().filter(|&&on| on).count();
                // A confirmation while a majority listens: from the
                // first that makes one, and each one after a loss.
                self.majority_listening |= listening >= self.quorum;
            }
            Event::Failed(index) => self.settled[index] = true,
            // Not waited for until it listens again: a wake-up from the
            // others does not wait out the settle for it.
            Event::Dropped(index) => self.listening_on[index] = false,
            // Another waiter's turn: this one could not take the lock, and
            // waits for its own turn or its poll. A run of readers at the
            // head of the line is woken together (shared.rs).
            Event::Released(_, turn) if !super::shared::wakes(&turn, self.ticket.as_deref()) => {}
            Event::Released(index, _) => {
                self.announced[index] = true;
                let now = tokio::time::Instant::now();
                let (first, until) = *self.settle.get_or_insert((now, now + SETTLE));
                let announced = self.announced.iter().filter(|&&a| a).count();
                if announced == self.quorum {
                    let grace = now.duration_since(first).max(SETTLE_FLOOR);
                    self.settle = Some((first, until.min(now + grace)));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_of_wakeups_is_held_to_the_budget() {
        let start = tokio::time::Instant::now();
        let mut budget = WakeBudget::new(start);
        for _ in 0..WAKE_BURST {
            assert_eq!(budget.next_at(start), start);
            budget.spend(start);
        }
        assert_eq!(budget.next_at(start), start + WAKE_EVERY);
        // Spending every wake-up the moment it is earned, for ten seconds.
        let mut now = start;
        let mut spent = 0;
        while now < start + Duration::from_secs(10) {
            now = budget.next_at(now);
            budget.spend(now);
            spent += 1;
        }
        assert_eq!(spent, 100, "one per {WAKE_EVERY:?}");
    }

    #[test]
    fn a_waiter_that_was_quiet_wakes_at_once() {
        let start = tokio::time::Instant::now();
        let mut budget = WakeBudget::new(start);
        for _ in 0..WAKE_BURST {
            budget.spend(start);
        }
        let later = start + WAKE_EVERY * WAKE_BURST;
        for _ in 0..WAKE_BURST {
            assert_eq!(budget.next_at(later), later);
            budget.spend(later);
        }
    }

    /// A waiter's wake-ups on `servers` servers, fed by hand.
    fn fed(servers: usize) -> (Wakeups, mpsc::UnboundedSender<Event>) {
        let (sender, events) = mpsc::unbounded_channel();
        (Wakeups::new(events, JoinSet::new(), servers), sender)
    }

    fn arrive(wakeups: &mut Wakeups, events: impl IntoIterator<Item = Event>) {
        for event in events {
            wakeups.note(event);
        }
    }

    #[test]
    fn a_lost_subscription_is_not_waited_for() {
        let (mut wakeups, _sender) = fed(3);
        arrive(&mut wakeups, (0..3).map(Event::Listening));
        wakeups.attempt_starts(None);
        arrive(&mut wakeups, [Event::Dropped(2)]);
        arrive(&mut wakeups, [Event::Released(0, vec![])]);
        assert!(!wakeups.due(), "server 1 listens and has not announced");
        arrive(&mut wakeups, [Event::Released(1, vec![])]);
        assert!(
            wakeups.due(),
            "every server listened to announced: no settle for a lost one"
        );
    }

    #[test]
    fn a_subscription_made_again_wakes_the_waiter() {
        // A release while server 2 was not listened to went unheard there.
        let (mut wakeups, _sender) = fed(3);
        arrive(&mut wakeups, (0..3).map(Event::Listening));
        arrive(&mut wakeups, [Event::Dropped(2), Event::Failed(2)]);
        wakeups.attempt_starts(None);
        assert!(!wakeups.due());
        arrive(&mut wakeups, [Event::Listening(2)]);
        assert!(wakeups.due());
        wakeups.attempt_starts(None);
        arrive(
            &mut wakeups,
            [Event::Released(0, vec![]), Event::Released(1, vec![])],
        );
        assert!(!wakeups.due(), "server 2 listens again and is waited for");
        arrive(&mut wakeups, [Event::Released(2, vec![])]);
        assert!(wakeups.due());
    }

    #[test]
    fn the_first_wake_up_waits_for_every_first_subscription() {
        let (mut wakeups, _sender) = fed(2);
        arrive(&mut wakeups, [Event::Listening(0)]);
        assert!(!wakeups.due(), "server 1 has not answered yet");
        arrive(&mut wakeups, [Event::Failed(1), Event::Failed(1)]);
        assert!(wakeups.due());
    }

    #[test]
    fn resubscribing_backs_off_within_bounds_and_starts_over_after_a_long_wait() {
        let mut backoff = Backoff::default();
        let first = backoff.next(0.0);
        assert_eq!(first, RESUBSCRIBE_FIRST / 2);
        let waits: Vec<_> = (0..20).map(|_| backoff.next(1.0)).collect();
        assert!(waits.windows(2).all(|pair| pair[0] <= pair[1]), "{waits:?}");
        assert_eq!(waits.last(), Some(&RESUBSCRIBE_MOST));
        assert_eq!(
            backoff.next(0.0),
            RESUBSCRIBE_MOST / 2,
            "jitter: its upper half"
        );
        backoff.dropped_after(Duration::from_millis(10));
        assert_eq!(
            backoff.next(1.0),
            RESUBSCRIBE_MOST,
            "dropped at once: no reset"
        );
        backoff.dropped_after(RESUBSCRIBE_MOST * 2);
        assert_eq!(backoff.next(1.0), RESUBSCRIBE_FIRST);
    }

    #[test]
    fn the_channel_is_the_key_and_a_suffix_no_name_contains() {
        let key = LockKey::new(b"app:deploy".to_vec());
        assert_eq!(channel(&key), b"app:deploy\0released".to_vec());
    }
}
