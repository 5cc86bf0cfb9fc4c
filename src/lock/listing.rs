//! Every lock on the servers: each server's keys found with SCAN (never
//! KEYS, which blocks a server for as long as it walks the whole keyspace),
//! read back in batches of one script call each, and every name judged
//! from a majority's point of view as `status` judges one.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use super::core::quorum::{no_quorum, ttl_millis, KeptOut};
use super::core::redlock::Redlock;
use super::core::servers::{after, Connection, Server, ServerError};
use super::done_mark::{most_held, DoneMark};
use super::error::{Failures, LockError};
use super::guard::Guarded;
use super::holder::HeldBy;
use super::inspection::{Inspection, KeyState, Occupied, ServerState, Verdict};
use super::key::LockKey;
use super::key::{is_record_key, DONE_SUFFIX, READERS_SUFFIX, RECORD_SUFFIX};
use super::scripts::List;
use super::server_url::ServerSpec;
use super::shared::SharedHolder;
use super::supersede::Superseder;
use crate::test_hooks;

/// How many keys one SCAN call asks a server to look at: enough to walk
/// thousands of keys in a few round trips, little enough that each call
/// stays short on a server that is also serving locks.
const SCAN_COUNT: usize = 1000;

/// How many locks one script call reads: one call holds the server for
/// about as long as a few hundred GETs.
const BATCH: usize = 200;

/// The longest a listing may take, on any server: a server whose SCAN
/// cursor never comes back to 0 would otherwise keep `list` asking for
/// ever. Real servers list a million locks in seconds.
const DEADLINE: Duration = Duration::from_secs(60);

/// The most keys one server's SCAN may return: a server that keeps sending
/// new keys would otherwise grow the listing until memory runs out.
const MOST_KEYS: usize = 2_000_000;

/// The deadline and the key cap, which tests may lower
/// ([`test_hooks::list_deadline`], [`test_hooks::list_most_keys`]).
fn limits() -> (Duration, usize) {
    (
        test_hooks::list_deadline().unwrap_or(DEADLINE),
        test_hooks::list_most_keys().unwrap_or(MOST_KEYS),
    )
}

/// Which keys are locks: the names under a prefix that match a glob.
#[derive(Debug, Clone)]
pub struct ListQuery {
    /// `--prefix`; empty when none is given.
    pub prefix: Vec<u8>,
    /// A Redis glob on the name (what follows the prefix).
    pub pattern: Vec<u8>,
    /// Only locks held for longer than this, by their holder record's age
    /// (`--older-than`); a lock without a record has no known age and is
    /// left out.
    pub older_than: Option<Duration>,
}

/// The SCAN glob of `\0holder`, `\0readers` and `\0done` (and of
/// nothing else redlock keeps beside a lock but `\0reader-records`, which
/// [`ListQuery::lock_of`] leaves out): one walk of the keyspace finds the
/// locks with a writer's record, those held by readers only and the free
/// ones with a done mark. The `\0` before it anchors it: a name has none,
/// so the user's glob matches the name exactly as it would alone.
const RECORD_READERS_OR_DONE_GLOB: &[u8] = b"\0[hrd][eo][aln][de]*";

/// Under a prefix, the glob of `\0readers` and `\0done` (and of
/// `\0reader-records`, left out), after the name's: one walk finds the
/// locks held by readers only and the free ones with a done mark.
const READERS_OR_DONE_GLOB: &[u8] = b"\0[rd][eo][an][de]*";

impl ListQuery {
    /// The SCAN patterns, each walked in turn. Under a prefix, every key
    /// under it whose name matches (the prefix's own glob characters are
    /// escaped), then the readers' sets and done marks of the names that
    /// match: a lock held by readers only, or free with a mark, has no key
    /// of its own. Without one, only the holder records, readers' sets and
    /// done marks of names that match: the whole
    /// keyspace is not ours, and they are how a lock taken by redlock is
    /// told from any other string.
    fn scan_patterns(&self) -> Vec<Vec<u8>> {
        let mut glob = escape_glob(&self.prefix);
        glob.extend_from_slice(&self.pattern);
        if self.prefix.is_empty() {
            glob.extend_from_slice(RECORD_READERS_OR_DONE_GLOB);
            return vec![glob];
        }
        let readers = [glob.as_slice(), READERS_OR_DONE_GLOB].concat();
        vec![glob, readers]
    }

    /// The lock a key SCAN found with the pattern `walk` (an index into
    /// [`Self::scan_patterns`]) stands for, if any, and whether the key is
    /// its readers' set: a lock's key (under a prefix, first walk), or the
    /// name a holder record, a readers' set or a done mark is beside. Under
    /// a prefix those two count only from the second walk, whose glob is
    /// the name's: the first one's may match `NAME\0readers` where it does
    /// not match NAME. A name a done mark is beside holds no NUL: a mark
    /// is redlock's only beside a name it could have taken.
    fn lock_of(&self, walk: usize, key: &[u8]) -> Option<(Vec<u8>, bool)> {
        let beside = |suffix: &[u8]| {
            let lock = key.strip_suffix(suffix)?;
            (!lock.is_empty() && !is_record_key(lock)).then(|| lock.to_vec())
        };
        let readers = || Some((beside(READERS_SUFFIX)?, true));
        let done = || {
            let lock = beside(DONE_SUFFIX)?;
            (!lock.contains(&0)).then_some((lock, false))
        };
        match (self.prefix.is_empty(), walk) {
            (true, _) => (beside(RECORD_SUFFIX).map(|l| (l, false)))
                .or_else(readers)
                .or_else(done),
            (false, 0) => (!is_record_key(key)).then(|| (key.to_vec(), false)),
            (false, _) => readers().or_else(done),
        }
    }

    /// Every lock the walks of each server found, in the byte order of
    /// their keys, and whether any server has a readers' set beside it.
    fn found(&self, scans: &[Result<Vec<Vec<Vec<u8>>>, ServerError>]) -> Vec<(LockKey, bool)> {
        let mut names: BTreeMap<Vec<u8>, bool> = BTreeMap::new();
        for walks in scans.iter().flatten() {
            for (walk, keys) in walks.iter().enumerate() {
                for (lock, readers) in keys.iter().filter_map(|k| self.lock_of(walk, k)) {
                    *names.entry(lock).or_default() |= readers;
                }
            }
        }
        let prefix = self.prefix.as_slice();
        names
            .into_iter()
            .map(|(key, readers)| match key.strip_prefix(prefix) {
                Some(name) => (LockKey::prefixed(prefix, name), readers),
                None => (LockKey::new(key), readers),
            })
            .collect()
    }
}

/// What is wrong with `glob` as a Redis glob, if anything. An unterminated
/// `[` would run into the `\0holder` suffix the SCAN pattern ends with (its
/// class would swallow it, and every lock would match), and a trailing `\`
/// would escape the suffix's first byte: both are refused rather than
/// guessed at.
pub fn glob_problem(glob: &[u8]) -> Option<GlobProblem> {
    let mut bytes = glob.iter();
    while let Some(&b) = bytes.next() {
        match b {
            b'\\' if bytes.next().is_none() => return Some(GlobProblem::TrailingBackslash),
            b'[' if !class_ends(&mut bytes) => return Some(GlobProblem::UnterminatedClass),
            _ => {}
        }
    }
    None
}

/// Consumes a `[...]` class after its `[`, as Redis reads it (a `\` escapes
/// the next byte); whether its `]` came before the end.
fn class_ends(bytes: &mut std::slice::Iter<'_, u8>) -> bool {
    while let Some(&b) = bytes.next() {
        match b {
            b']' => return true,
            b'\\' if bytes.next().is_none() => return false,
            _ => {}
        }
    }
    false
}

/// Why a glob is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GlobProblem {
    UnterminatedClass,
    TrailingBackslash,
}

/// `bytes` with Redis' glob characters (`* ? [ ] \`) escaped.
fn escape_glob(bytes: &[u8]) -> Vec<u8> {
    let mut glob = Vec::with_capacity(bytes.len());
    for &b in bytes {
        if b"*?[]\\".contains(&b) {
            glob.push(b'\\');
        }
        glob.push(b);
    }
    glob
}

/// How one server took part in a listing.
#[derive(Debug, Clone)]
pub struct ServerPart {
    pub server: ServerSpec,
    /// `Ok(None)`: it answered and counts; `Ok(Some(left))`: it answered,
    /// but the restart guard counts it again only after `left`; `Err`: it
    /// failed, and none of its keys are known.
    pub state: Result<Option<Guarded>, ServerError>,
}

/// A listing: handed over a batch of locks at a time while it is read
/// (`locks` holds that batch), then whole, with every server's part and
/// how many locks there were (`locks` empty), so that memory holds one
/// batch however many locks there are.
#[derive(Debug, Clone)]
pub struct Listing {
    pub query: ListQuery,
    pub quorum: usize,
    pub servers: Vec<ServerPart>,
    /// One inspection per lock found on any server, in the byte order of
    /// their keys; names that no server that counts holds any more (they
    /// expired between the SCAN and the read) are left out, unless a done
    /// mark is kept beside them.
    pub locks: Vec<Inspection>,
    /// How many locks were handed over in all.
    pub count: usize,
    restart_guard: Option<Duration>,
}

impl Listing {
    /// The name of a listed lock: its key without the prefix.
    pub fn name<'a>(&self, lock: &'a Inspection) -> &'a [u8] {
        let key = lock.key.bytes();
        key.strip_prefix(self.query.prefix.as_slice())
            .unwrap_or(key)
    }

    /// Why the listing cannot be trusted, when fewer than a majority of the
    /// servers answered (or count, under the restart guard).
    pub fn no_quorum(&self) -> Option<LockError> {
        let counting = self
            .servers
            .iter()
            .filter(|s| matches!(s.state, Ok(None)))
            .count();
        if counting >= self.quorum {
            return None;
        }
        let again_in: Vec<(ServerSpec, Guarded)> = self
            .servers
            .iter()
            .filter_map(|part| Some((part.server.clone(), (*part.state.as_ref().ok()?)?)))
            .collect();
        let kept_out = self.restart_guard.map(|guard| KeptOut {
            guard,
            kept: &again_in,
        });
        let failures = self
            .servers
            .iter()
            .filter_map(|part| Some((part.server.clone(), part.state.clone().err()?)))
            .collect();
        let key = LockKey::new(self.query.pattern_shown());
        let servers = (self.servers.len(), self.quorum);
        Some(no_quorum(&key, servers, kept_out, Failures(failures)))
    }
}

/// Where a listed lock stands, from a majority's point of view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// A majority holds it: the same verdict as `status` exiting 0.
    Held,
    /// Readers (`--shared`) hold it on a majority, and no writer: as
    /// `status` says "shared".
    Shared,
    /// Only a minority holds it: nobody has the lock, but what is left
    /// keeps `acquire` busy until it expires.
    Minority,
    /// Too few servers answered to tell.
    Unknown,
    /// Nobody holds it on any server, but a done mark (`--once-per`,
    /// `--once`) is kept beside it.
    Free,
}

/// One lock of a listing.
#[derive(Debug, Clone)]
pub struct Listed<'a> {
    /// The key without the prefix.
    pub name: &'a [u8],
    pub lock: &'a Inspection,
    pub standing: Standing,
    /// Who holds it; for a minority or an unknown, who most servers show.
    pub occupied: Option<Occupied>,
    /// The value most servers hold (a string's), and the servers holding it.
    pub token: Option<Vec<u8>>,
    pub held_on: Vec<ServerSpec>,
    /// The readers on a majority (up to 16, as each server listed them),
    /// with their records; empty unless `standing` is shared.
    pub readers: Vec<SharedHolder>,
    /// The pending superseding waiter (`--supersede`), if any server
    /// keeps one.
    pub superseder: Option<Superseder>,
}

impl Listing {
    /// Every listed lock, in order, with where it stands.
    pub fn entries(&self) -> Vec<Listed<'_>> {
        self.locks
            .iter()
            .map(|lock| {
                let (standing, occupied) = match lock.verdict() {
                    Verdict::Held { .. } | Verdict::Foreign { .. } => {
                        (Standing::Held, lock.occupied())
                    }
                    Verdict::Free if lock.readers() > 0 => {
                        (Standing::Shared, lock.readers_occupied())
                    }
                    Verdict::Free if lock.seen().is_none() && lock.readers_occupied().is_none() => {
                        (Standing::Free, None)
                    }
                    Verdict::Free => (Standing::Minority, lock.seen()),
                    Verdict::Unknown => (Standing::Unknown, lock.seen()),
                };
                let occupied = occupied.or_else(|| lock.readers_occupied());
                let token = occupied.as_ref().and_then(|o| match &o.held_by {
                    HeldBy::Redlock(recorded) => Some(recorded.holder.token.as_bytes().to_vec()),
                    HeldBy::OtherClient { token } => Some(token.clone()),
                    HeldBy::NonRedlock { .. } | HeldBy::Readers { .. } => None,
                });
                Listed {
                    name: self.name(lock),
                    lock,
                    standing,
                    held_on: token
                        .as_deref()
                        .map(|t| lock.holding(t))
                        .unwrap_or_default(),
                    token,
                    occupied,
                    readers: match standing {
                        Standing::Shared => lock.shared_holders(),
                        _ => Vec::new(),
                    },
                    superseder: lock.superseder(),
                }
            })
            .collect()
    }
}

/// Whether `lock` has been held for longer than `least`, by the holder
/// record of whoever holds it (or, for a minority, most servers show); a
/// lock held by readers, by its oldest reader's record: one of them has
/// held it that long. A record whose start is after the server's clock
/// (it went back) has no known age: it counts as old, so that a search
/// for stuck holders shows it (marked) rather than hide it.
fn held_longer(lock: &Inspection, least: Duration) -> bool {
    let recorded = lock
        .occupied()
        .or_else(|| lock.seen())
        .and_then(|occupied| match occupied.held_by {
            HeldBy::Redlock(recorded) => Some(recorded),
            _ => None,
        });
    let readers = lock.shared_holders();
    let from_the_future = recorded.as_ref().is_some_and(|r| r.ahead.is_some())
        || readers
            .iter()
            .any(|r| r.recorded.as_ref().is_some_and(|r| r.ahead.is_some()));
    let held_for = recorded
        .and_then(|recorded| recorded.held_for)
        .or_else(|| oldest_reader(&readers));
    from_the_future || held_for.is_some_and(|age| age > least)
}

/// How long the reader of `readers` that has held the lock longest has,
/// by its record; `None` when none recorded it.
pub fn oldest_reader(readers: &[SharedHolder]) -> Option<Duration> {
    readers
        .iter()
        .filter_map(|r| r.recorded.as_ref()?.held_for)
        .max()
}

impl ListQuery {
    /// The prefix and pattern as the user wrote them, for messages.
    fn pattern_shown(&self) -> Vec<u8> {
        [self.prefix.as_slice(), &self.pattern].concat()
    }
}

impl Redlock {
    /// Finds every lock `query` names on every server, and reads them a
    /// batch at a time, handing each batch to `each` as soon as every
    /// server has answered for it; returns the whole listing without its
    /// locks. Each SCAN page and each batch is one request bounded by the
    /// server timeout; the servers are asked concurrently.
    pub async fn list(&self, query: ListQuery, each: &mut dyn FnMut(&Listing)) -> Listing {
        let (limit, most_keys) = limits();
        let deadline = (after(tokio::time::Instant::now(), limit), limit);
        let patterns: Arc<[Vec<u8>]> = query.scan_patterns().into();
        let scans = fan_out(&self.servers, |server| {
            let scanning = scan(server, Arc::clone(&patterns), most_keys);
            by(deadline, scanning)
        })
        .await;
        let keys = query.found(&scans);
        let mut parts: Vec<Result<Option<Guarded>, ServerError>> =
            scans.into_iter().map(|scan| scan.map(|_| None)).collect();
        let mut listing = Listing {
            query,
            quorum: self.quorum,
            servers: Vec::new(),
            locks: Vec::new(),
            count: 0,
            restart_guard: (!self.restart_guard.is_zero()).then_some(self.restart_guard),
        };
        // At least one batch, so that an empty listing still hears the guard.
        let batches: Vec<&[(LockKey, bool)]> = match keys.len() {
            0 => vec![&[]],
            _ => keys.chunks(BATCH).collect(),
        };
        let mut reading = Some(self.send_batch(batches[0], &parts, deadline).await);
        for (i, batch) in batches.iter().enumerate() {
            let reads = join(reading.take().unwrap_or_default()).await;
            // The next batch is asked for before this one is judged and
            // written, so that the servers work on it meanwhile.
            if let Some(next) = batches.get(i + 1) {
                reading = Some(self.send_batch(next, &parts, deadline).await);
            }
            let columns = columns(reads, &mut parts);
            listing.locks = self.inspections(batch, columns, listing.restart_guard);
            if let Some(least) = listing.query.older_than {
                listing.locks.retain(|lock| held_longer(lock, least));
            }
            listing.count += listing.locks.len();
            if !listing.locks.is_empty() {
                each(&listing);
            }
        }
        listing.locks = Vec::new();
        listing.servers = self.parts(parts);
        listing
    }

    /// Asks every server that has not failed yet for `batch`; the reads run
    /// on while the caller goes on (their requests are out when this
    /// returns).
    async fn send_batch(
        &self,
        batch: &[(LockKey, bool)],
        parts: &[Result<Option<Guarded>, ServerError>],
        deadline: Deadline,
    ) -> Vec<Reading> {
        let keys: Arc<[(LockKey, bool)]> = batch.into();
        let guard: Arc<(u64, Vec<u8>)> =
            Arc::new((ttl_millis(self.restart_guard), self.marker.clone()));
        let reading = self
            .servers
            .iter()
            .zip(parts)
            .map(|(server, part)| match part {
                Err(err) => Reading::Failed(err.clone()),
                Ok(_) => Reading::Asked(tokio::spawn(by(
                    deadline,
                    read(Arc::clone(server), Arc::clone(&keys), Arc::clone(&guard)),
                ))),
            })
            .collect();
        // Let the reads write their requests before the caller works on.
        for _ in 0..3 {
            tokio::task::yield_now().await;
        }
        reading
    }

    /// The inspections of `batch` from every server's column, each with the
    /// done mark most servers keep beside it; names that no server holds
    /// any more, and without a mark, are left out.
    fn inspections(
        &self,
        batch: &[(LockKey, bool)],
        mut columns: Vec<Column>,
        restart_guard: Option<Duration>,
    ) -> Vec<Inspection> {
        // Each server's states are taken in key order, one per lock: every
        // reply is walked once, whatever the number of locks.
        batch
            .iter()
            .map(|(key, _)| {
                let mut marks = Vec::new();
                let servers = (self.servers.iter())
                    .zip(columns.iter_mut())
                    .map(|(server, column)| ServerState {
                        server: server.spec().clone(),
                        state: column.next_state().map(|(state, mark)| {
                            marks.extend(mark);
                            state
                        }),
                    })
                    .collect();
                Inspection {
                    key: key.clone(),
                    quorum: self.quorum,
                    servers,
                    restart_guard,
                    done: most_held(&marks),
                }
            })
            .filter(|lock| {
                lock.verdict() != Verdict::Free
                    || lock.seen().is_some()
                    || lock.readers_occupied().is_some()
                    || lock.done.is_some()
            })
            .collect()
    }

    /// Each server's part in the listing.
    fn parts(&self, parts: Vec<Result<Option<Guarded>, ServerError>>) -> Vec<ServerPart> {
        self.servers
            .iter()
            .zip(parts)
            .map(|(server, state)| ServerPart {
                server: server.spec().clone(),
                state,
            })
            .collect()
    }
}

/// One server's states for the listed locks, in key order, or its failure
/// for every lock.
enum Column {
    Read(std::vec::IntoIter<(KeyState, Option<DoneMark>)>),
    Failed(ServerError),
}

impl Column {
    fn next_state(&mut self) -> Result<(KeyState, Option<DoneMark>), ServerError> {
        match self {
            Column::Read(states) => states
                .next()
                .ok_or_else(|| ServerError::Failed("fewer states than locks in a listing".into())),
            Column::Failed(err) => Err(err.clone()),
        }
    }
}

/// One server's read of a batch: under way, or not asked because the
/// server failed before.
enum Reading {
    Asked(tokio::task::JoinHandle<Result<ServerRead, ServerError>>),
    Failed(ServerError),
}

/// Every server's read of a batch, once all are in.
async fn join(reading: Vec<Reading>) -> Vec<Result<ServerRead, ServerError>> {
    let mut reads = Vec::with_capacity(reading.len());
    for read in reading {
        reads.push(match read {
            Reading::Asked(task) => task
                .await
                .unwrap_or_else(|err| Err(ServerError::Failed(err.to_string()))),
            Reading::Failed(err) => Err(err),
        });
    }
    reads
}

/// Each server's states as a column in key order; a server that fails
/// now is marked so in `parts`, and stays so.
fn columns(
    reads: Vec<Result<ServerRead, ServerError>>,
    parts: &mut [Result<Option<Guarded>, ServerError>],
) -> Vec<Column> {
    reads
        .into_iter()
        .zip(parts.iter_mut())
        .map(|(read, part)| match (part.as_ref().err().cloned(), read) {
            (Some(err), _) | (None, Err(err)) => {
                *part = Err(err.clone());
                Column::Failed(err)
            }
            (None, Ok((restarting, states))) => {
                *part = Ok(restarting);
                Column::Read(states.into_iter())
            }
        })
        .collect()
}

/// Runs `work` for every server at once; its results in configuration order.
async fn fan_out<T, Fut>(
    servers: &[Arc<Server>],
    work: impl Fn(Arc<Server>) -> Fut,
) -> Vec<Result<T, ServerError>>
where
    T: Send + 'static,
    Fut: std::future::Future<Output = Result<T, ServerError>> + Send + 'static,
{
    let tasks: Vec<_> = servers
        .iter()
        .map(|server| tokio::spawn(work(Arc::clone(server))))
        .collect();
    let mut results = Vec::with_capacity(tasks.len());
    for task in tasks {
        results.push(
            task.await
                .unwrap_or_else(|err| Err(ServerError::Failed(err.to_string()))),
        );
    }
    results
}

/// When a listing gives up, and after how long that is.
type Deadline = (tokio::time::Instant, Duration);

/// `work`, or a failure once the deadline passes.
async fn by<T>(
    (deadline, limit): Deadline,
    work: impl std::future::Future<Output = Result<T, ServerError>>,
) -> Result<T, ServerError> {
    tokio::time::timeout_at(deadline, work)
        .await
        .unwrap_or_else(|_| Err(ServerError::ListTooLong(limit)))
}

/// The keys of one server that match each of `patterns`, one walk of the
/// keyspace per pattern and one SCAN page per request; at most `most` of
/// them in all.
async fn scan(
    server: Arc<Server>,
    patterns: Arc<[Vec<u8>]>,
    most: usize,
) -> Result<Vec<Vec<Vec<u8>>>, ServerError> {
    let mut walks: Vec<Vec<Vec<u8>>> = Vec::with_capacity(patterns.len());
    let mut found = 0;
    for pattern in patterns.iter() {
        let pattern: Arc<[u8]> = pattern.as_slice().into();
        let mut keys = Vec::new();
        let mut cursor = 0;
        loop {
            let pattern = Arc::clone(&pattern);
            let (next, page) = server
                .call(move |mut connection: Connection| async move {
                    connection.scan_page(cursor, &pattern, SCAN_COUNT).await
                })
                .await?;
            keys.extend(page);
            if found + keys.len() > most {
                return Err(ServerError::TooManyKeys(most));
            }
            if next == 0 {
                break;
            }
            cursor = next;
        }
        found += keys.len();
        walks.push(keys);
    }
    Ok(walks)
}

/// Whether the restart guard keeps a server out (for how long), and what it
/// holds for each lock of the listing, with the lock's done mark.
type ServerRead = (Option<Guarded>, Vec<(KeyState, Option<DoneMark>)>);

/// What one server holds for each of `keys` (one batch, one script call),
/// in their order, and whether the restart guard keeps it out.
async fn read(
    server: Arc<Server>,
    keys: Arc<[(LockKey, bool)]>,
    guard: Arc<(u64, Vec<u8>)>,
) -> Result<ServerRead, ServerError> {
    let call = List {
        marker: guard.1.clone(),
        guard_ms: guard.0,
        locks: keys.to_vec(),
    };
    let read = server
        .call(move |mut connection: Connection| async move { connection.invoke(&call).await })
        .await?;
    let restarting = read.restarting.map(|r| r.guarded);
    let states = read
        .occupants
        .into_iter()
        .map(|(occupant, readers, superseder, mark)| {
            let state = KeyState {
                readers,
                superseder,
                ..KeyState::new(occupant, read.restarting.as_ref(), 0)
            };
            (state, mark.as_deref().map(DoneMark::read))
        })
        .collect();
    Ok((restarting, states))
}

impl Connection {
    /// One page of `SCAN cursor MATCH pattern COUNT count`: the cursor to
    /// continue from (0 when the scan is complete) and the keys of the page.
    pub(super) async fn scan_page(
        &mut self,
        cursor: u64,
        pattern: &[u8],
        count: usize,
    ) -> redis::RedisResult<(u64, Vec<Vec<u8>>)> {
        let mut scan = redis::cmd("SCAN");
        scan.arg(cursor)
            .arg("MATCH")
            .arg(pattern)
            .arg("COUNT")
            .arg(count);
        self.query(&scan).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(prefix: &[u8], pattern: &[u8]) -> ListQuery {
        ListQuery {
            prefix: prefix.to_vec(),
            pattern: pattern.to_vec(),
            older_than: None,
        }
    }

    #[test]
    fn a_prefix_is_matched_literally_and_names_by_their_glob() {
        let q = query(b"app[1]*:", b"deploy-*");
        assert_eq!(
            q.scan_patterns(),
            [
                b"app\\[1\\]\\*:deploy-*".to_vec(),
                b"app\\[1\\]\\*:deploy-*\0[rd][eo][an][de]*".to_vec()
            ]
        );
        assert_eq!(
            q.lock_of(0, b"app[1]*:deploy-a"),
            Some((b"app[1]*:deploy-a".to_vec(), false))
        );
        assert_eq!(q.lock_of(0, b"app[1]*:deploy-a\0holder"), None);
        // The first walk's glob matches "deploy-a\0readers" where "*s"
        // would; only the second walk's, the name's own, says a reader
        // holds a name that matches.
        assert_eq!(q.lock_of(0, b"app[1]*:deploy-a\0readers"), None);
        assert_eq!(
            q.lock_of(1, b"app[1]*:deploy-a\0readers"),
            Some((b"app[1]*:deploy-a".to_vec(), true))
        );
        assert_eq!(q.lock_of(1, b"app[1]*:deploy-a\0reader-records"), None);
        // A done mark counts from the second walk too, beside a name
        // without NUL only.
        assert_eq!(q.lock_of(0, b"app[1]*:deploy-a\0done"), None);
        assert_eq!(
            q.lock_of(1, b"app[1]*:deploy-a\0done"),
            Some((b"app[1]*:deploy-a".to_vec(), false))
        );
        assert_eq!(q.lock_of(1, b"app[1]*:deploy\0x\0done"), None);
    }

    #[test]
    fn malformed_globs_are_found() {
        assert_eq!(glob_problem(b"*["), Some(GlobProblem::UnterminatedClass));
        assert_eq!(
            glob_problem(b"a[b\\]"),
            Some(GlobProblem::UnterminatedClass)
        );
        assert_eq!(glob_problem(b"a\\"), Some(GlobProblem::TrailingBackslash));
        for fine in [&b"*"[..], b"a[bc]*", b"a\\[", b"[]]", b"x?y", b"a\\\\"] {
            assert_eq!(
                glob_problem(fine),
                None,
                "{:?}",
                String::from_utf8_lossy(fine)
            );
        }
    }

    #[test]
    fn without_a_prefix_only_names_with_a_holder_record_or_readers_are_found() {
        let q = query(b"", b"*");
        assert_eq!(q.scan_patterns(), [b"*\0[hrd][eo][aln][de]*".to_vec()]);
        assert_eq!(
            q.lock_of(0, b"deploy\0holder"),
            Some((b"deploy".to_vec(), false))
        );
        assert_eq!(
            q.lock_of(0, b"deploy\0readers"),
            Some((b"deploy".to_vec(), true))
        );
        assert_eq!(q.lock_of(0, b"deploy\0reader-records"), None);
        assert_eq!(
            q.lock_of(0, b"deploy\0done"),
            Some((b"deploy".to_vec(), false))
        );
        assert_eq!(q.lock_of(0, b"\0done"), None);
        assert_eq!(q.lock_of(0, b"x\0holder\0done"), None);
        assert_eq!(q.lock_of(0, b"a\0b\0done"), None);
        assert_eq!(q.lock_of(0, b"deploy\0donex"), None);
        assert_eq!(q.lock_of(0, b"deploy\0holderx"), None);
        assert_eq!(q.lock_of(0, b"deploy"), None);
        assert_eq!(q.lock_of(0, b"\0holder"), None);
        assert_eq!(q.lock_of(0, b"\0readers"), None);
        assert_eq!(q.lock_of(0, b"x\0holder\0holder"), None);
        assert_eq!(q.lock_of(0, b"x\0line\0readers"), None);
    }
}
