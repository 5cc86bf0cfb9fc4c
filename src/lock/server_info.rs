//! What a server says about itself (INFO), and what `acquire` and `exec`
//! make of it: its role and eviction policy, asked pipelined behind their
//! first request ([`Behind`]), so that it costs them no round trip.

use std::sync::Mutex as StdMutex;
use std::time::Duration;

use redis::aio::MultiplexedConnection;

use super::key::{escape_and_cut, SERVER_TEXT_SHOWN};
use super::server_url::ServerSpec;

/// What the fields of `INFO` say, those the checks read. Every text is the
/// server's, escaped and cut.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Info {
    /// `redis_version`: what the server is compatible with (Valkey 9.1.2
    /// says 7.2.4), by which features such as ACL DRYRUN are told.
    pub version: Option<String>,
    /// What the server is and its own version: `server_name` and its
    /// `<name>_version` where INFO has them (`valkey`, `9.1.2`), else
    /// `redis` and `redis_version`.
    pub server: Option<(String, String)>,
    pub run_id: Option<String>,
    pub uptime: Option<Duration>,
    /// `master` or `slave`.
    pub role: Option<String>,
    /// A replica's master, `host:port`.
    pub master: Option<String>,
    /// A replica's `slave_read_only`.
    pub read_only: Option<bool>,
    pub maxmemory_policy: Option<String>,
    pub maxmemory: Option<u64>,
    pub aof_enabled: Option<bool>,
    pub cluster_enabled: Option<bool>,
    /// A master's `connected_slaves`: the replicas a failover can promote.
    pub connected_replicas: Option<u64>,
    /// Those replicas, `ip:port` (`slaveN` lines), in order.
    pub replicas: Vec<String>,
    /// `INFO keyspace`: each db that holds keys, and how many, by index.
    pub keyspace: Vec<(u32, u64)>,
}

impl Info {
    /// The fields of an `INFO` reply (`name:value` lines of any sections).
    /// A name given twice counts with its last value.
    pub fn parse(text: &str) -> Info {
        let fields = Fields::of(text);
        let text = |name: &str| {
            fields
                .get(name)
                .map(|v| escape_and_cut(v.as_bytes(), SERVER_TEXT_SHOWN))
        };
        let number = |name: &str| fields.get(name).and_then(|v| v.trim().parse::<u64>().ok());
        let flag = |name: &str| number(name).map(|n| n != 0);
        Info {
            version: text("redis_version"),
            server: server(&fields).map(|(name, version)| {
                let shown = |v: &str| escape_and_cut(v.trim().as_bytes(), SERVER_TEXT_SHOWN);
                (shown(name), shown(version))
            }),
            run_id: text("run_id"),
            uptime: number("uptime_in_seconds").map(Duration::from_secs),
            role: text("role"),
            master: text("master_host").map(|host| match text("master_port") {
                Some(port) => format!("{host}:{port}"),
                None => host,
            }),
            read_only: flag("slave_read_only"),
            maxmemory_policy: text("maxmemory_policy"),
            maxmemory: number("maxmemory"),
            aof_enabled: flag("aof_enabled"),
            cluster_enabled: flag("cluster_enabled"),
            connected_replicas: number("connected_slaves"),
            replicas: numbered(&fields, "slave")
                .into_iter()
                .map(|(_, value)| {
                    let part = |name| sub_field(value, name).unwrap_or("?");
                    let address = format!("{}:{}", part("ip"), part("port"));
                    escape_and_cut(address.as_bytes(), SERVER_TEXT_SHOWN)
                })
                .collect(),
            keyspace: numbered(&fields, "db")
                .into_iter()
                .filter_map(|(db, value)| Some((db, sub_field(value, "keys")?.parse().ok()?)))
                .collect(),
        }
    }

    pub fn is_replica(&self) -> bool {
        matches!(self.role.as_deref(), Some("slave" | "replica"))
    }
}

/// What a cluster node (`cluster_enabled:1`) says of itself: whether a lock
/// can be taken on it at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterNode {
    /// `cluster_state` of CLUSTER INFO (`ok` or `fail`), escaped.
    pub state: String,
    /// The hash slots it serves itself (its `myself` line of CLUSTER
    /// NODES): a lock whose slot it does not serve fails on it.
    pub slots: u64,
}

/// How many hash slots a cluster has.
pub const CLUSTER_SLOTS: u64 = 16384;

impl ClusterNode {
    /// From the replies of CLUSTER INFO and CLUSTER NODES.
    pub fn parse(info: &str, nodes: &str) -> ClusterNode {
        let state = info
            .lines()
            .filter_map(|line| line.trim_end_matches('\r').split_once(':'))
            .find(|(name, _)| *name == "cluster_state")
            .map_or_else(
                || "unknown".to_owned(),
                |(_, v)| escape_and_cut(v.trim().as_bytes(), SERVER_TEXT_SHOWN),
            );
        let myself = nodes.lines().find(|line| {
            line.split(' ')
                .nth(2)
                .is_some_and(|flags| flags.split(',').any(|f| f == "myself"))
        });
        // Fields 9 on: `0-5460`, `5461`, or `[slot->-id]` (a migration).
        let slots = myself
            .into_iter()
            .flat_map(|line| line.split(' ').skip(8))
            .filter_map(|range| match range.split_once('-') {
                _ if range.starts_with('[') => None,
                Some((from, to)) => Some(to.parse::<u64>().ok()? + 1 - from.parse::<u64>().ok()?),
                None => range.parse::<u64>().ok().map(|_| 1),
            })
            .sum();
        ClusterNode { state, slots }
    }

    /// Whether a lock can be taken on it: the cluster is up and it serves
    /// slots.
    pub fn serves(&self) -> bool {
        self.state == "ok" && self.slots > 0
    }
}

/// The server's name and version: `server_name` (Valkey's `valkey`) and
/// the `<name>_version` beside it, else Redis's `redis_version`.
fn server<'a>(fields: &Fields<'a>) -> Option<(&'a str, &'a str)> {
    let named = fields
        .get("server_name")
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .and_then(|name| Some((name, fields.get(&format!("{name}_version"))?)));
    named.or_else(|| Some(("redis", fields.get("redis_version")?)))
}

/// The `name:value` lines of an INFO reply, in order. A list, not a hash
/// map: the checks read a dozen of some 60 fields once, which a scan does
/// for a fraction of what hashing every name cost (a sixth of the
/// instructions of an `acquire -n` on 5 servers).
struct Fields<'a>(Vec<(&'a str, &'a str)>);

impl<'a> Fields<'a> {
    /// The `name:value` lines of `text`, as `str::lines` and `split_once`
    /// would take them apart (with `memchr`: `str`'s searchers cost many
    /// times more on lines this short).
    fn of(text: &'a str) -> Fields<'a> {
        let mut fields = Vec::with_capacity(80);
        let mut start = 0;
        let ends = memchr::memchr_iter(b'\n', text.as_bytes()).chain([text.len()]);
        for end in ends {
            let line = text[start..end].trim_end_matches('\r');
            start = end + 1;
            if let Some(colon) = memchr::memchr(b':', line.as_bytes()) {
                fields.push((&line[..colon], &line[colon + 1..]));
            }
        }
        Fields(fields)
    }

    /// The last value of the field `name`.
    fn get(&self, name: &str) -> Option<&'a str> {
        self.0
            .iter()
            .rev()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| *v)
    }
}

/// The fields named `stem` and a number (`slave0`, `db3`), by number, each
/// name with its last value.
fn numbered<'a>(fields: &Fields<'a>, stem: &str) -> Vec<(u32, &'a str)> {
    let all = &fields.0;
    let mut found: Vec<(u32, &str)> = all
        .iter()
        .enumerate()
        .filter_map(|(at, (name, value))| {
            let number = name.strip_prefix(stem)?.parse().ok()?;
            let last = !all[at + 1..].iter().any(|(later, _)| later == name);
            last.then_some((number, *value))
        })
        .collect();
    found.sort_unstable();
    found
}

/// `name`'s value in a field of `name=value` pairs separated by commas
/// (`keys=3,expires=0`, `ip=10.0.0.2,port=6379,state=online`).
fn sub_field<'a>(value: &'a str, name: &str) -> Option<&'a str> {
    value
        .split(',')
        .filter_map(|pair| pair.split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.trim())
}

/// Whether `policy` (maxmemory-policy) may evict a key with an expiry, as
/// every lock has: `volatile-*` and `allkeys-*` can.
pub fn evicts_locks(policy: &str) -> bool {
    policy.starts_with("volatile-") || policy.starts_with("allkeys-")
}

/// A server `acquire` or `exec` counts (or asked) that can lose a lock it
/// holds.
#[derive(Debug, Clone)]
pub struct Concern {
    pub server: ServerSpec,
    /// Whether it is among the servers that hold the lock just taken.
    pub counted: bool,
    pub kind: ConcernKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConcernKind {
    /// A replica: what it holds, replication from its master overwrites.
    Replica { master: Option<String> },
    /// Its maxmemory-policy can evict keys with an expiry: a held lock.
    Evicts { policy: String },
}

impl Concern {
    /// What `info` (of `server`) is a concern for, if anything.
    pub fn of(server: &ServerSpec, counted: bool, info: &Info) -> Vec<Concern> {
        let mut kinds = Vec::new();
        if info.is_replica() {
            kinds.push(ConcernKind::Replica {
                master: info.master.clone(),
            });
        }
        if let Some(policy) = info.maxmemory_policy.as_ref().filter(|p| evicts_locks(p)) {
            kinds.push(ConcernKind::Evicts {
                policy: policy.clone(),
            });
        }
        kinds
            .into_iter()
            .map(|kind| Concern {
                server: server.clone(),
                counted,
                kind,
            })
            .collect()
    }
}

/// A server's role and eviction policy, asked once behind the first
/// acquire on it: not asked yet, asked (the answer on its way), or known
/// (`None`: it did not say, e.g. an ACL without +info).
#[derive(Debug, Default)]
pub struct Behind(StdMutex<Asked>);

#[derive(Debug, Default)]
enum Asked {
    #[default]
    No,
    Sent(tokio::task::JoinHandle<Option<Info>>),
    /// Boxed: an `Info` is large beside a handle.
    Known(Option<Box<Info>>),
}

impl Behind {
    /// Sends `INFO replication` and `INFO memory` on `connection`, once:
    /// queued behind whatever the caller queued on it first.
    pub fn ask(&self, mut connection: MultiplexedConnection) {
        let mut asked = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if !matches!(*asked, Asked::No) {
            return;
        }
        let mut pipe = redis::pipe();
        pipe.cmd("INFO").arg("replication");
        pipe.cmd("INFO").arg("memory");
        *asked = Asked::Sent(tokio::spawn(async move {
            let replies: Vec<String> = pipe.query_async(&mut connection).await.ok()?;
            Some(Info::parse(&replies.join("\n")))
        }));
    }

    /// What the server said: waiting up to `wait` for an answer on its way,
    /// or, without `wait`, only what has arrived.
    pub async fn known(&self, wait: Option<Duration>) -> Option<Info> {
        let handle = {
            let mut asked = self.0.lock().unwrap_or_else(|p| p.into_inner());
            match std::mem::take(&mut *asked) {
                Asked::Sent(handle) if wait.is_some() || handle.is_finished() => handle,
                other => {
                    let known = match &other {
                        Asked::Known(info) => info.as_deref().cloned(),
                        _ => None,
                    };
                    *asked = other;
                    return known;
                }
            }
        };
        let info = tokio::time::timeout(wait.unwrap_or_default(), handle)
            .await
            .ok()
            .and_then(Result::ok)
            .flatten();
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) =
            Asked::Known(info.clone().map(Box::new));
        info
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_fields_are_read_from_any_section() {
        let text = "# Server\r\nredis_version:7.0.15\r\nrun_id:abc\r\nuptime_in_seconds:12\r\n\
                    # Replication\r\nrole:slave\r\nmaster_host:10.0.0.1\r\nmaster_port:6379\r\n\
                    slave_read_only:0\r\n# Memory\r\nmaxmemory:0\r\nmaxmemory_policy:allkeys-lru\r\n";
        let info = Info::parse(text);
        assert_eq!(info.run_id.as_deref(), Some("abc"));
        assert_eq!(info.uptime, Some(Duration::from_secs(12)));
        assert!(info.is_replica());
        assert_eq!(info.master.as_deref(), Some("10.0.0.1:6379"));
        assert_eq!(info.read_only, Some(false));
        assert_eq!(info.maxmemory_policy.as_deref(), Some("allkeys-lru"));
        assert_eq!(info.cluster_enabled, None);
    }

    #[test]
    fn replicas_and_keyspace_are_read() {
        let text = "# Replication\r\nrole:master\r\nconnected_slaves:2\r\n\
                    slave0:ip=10.0.0.2,port=6380,state=online,offset=1,lag=0\r\n\
                    slave1:ip=10.0.0.3,port=6381,state=online,offset=1,lag=1\r\n\
                    # Keyspace\r\ndb0:keys=3,expires=1,avg_ttl=0\r\n\
                    db12:keys=40,expires=0,avg_ttl=0\r\n";
        let info = Info::parse(text);
        assert_eq!(info.connected_replicas, Some(2));
        assert_eq!(info.replicas, ["10.0.0.2:6380", "10.0.0.3:6381"]);
        assert_eq!(info.keyspace, [(0, 3), (12, 40)]);
        let none = Info::parse("role:master\r\nconnected_slaves:0\r\n");
        assert_eq!(none.connected_replicas, Some(0));
        assert!(none.replicas.is_empty() && none.keyspace.is_empty());
    }

    #[test]
    fn a_field_given_twice_counts_with_its_last_value() {
        let text = "role:master\r\nslave0:ip=10.0.0.2,port=1\r\nrole:slave\r\n\
                    slave1:ip=10.0.0.4,port=3\r\nslave0:ip=10.0.0.3,port=2\r\n";
        let info = Info::parse(text);
        assert!(info.is_replica());
        assert_eq!(info.replicas, ["10.0.0.3:2", "10.0.0.4:3"]);
    }

    #[test]
    fn a_cluster_node_counts_the_slots_it_serves_itself() {
        let info = "cluster_enabled:1\r\ncluster_state:ok\r\ncluster_slots_assigned:16384\r\n";
        let nodes = "a1 127.0.0.1:7001@17001 master - 0 0 1 connected 5461-10922\n\
                     b2 127.0.0.1:7000@17000 myself,master - 0 0 2 connected 0-5460 16383 \
                     [77->-a1]\n";
        let node = ClusterNode::parse(info, nodes);
        assert_eq!(node.slots, 5462);
        assert!(node.serves());
        let alone = ClusterNode::parse(
            "cluster_state:fail\r\n",
            "c3 127.0.0.1:7002@17002 myself,master - 0 0 0 connected\n",
        );
        assert_eq!((alone.state.as_str(), alone.slots), ("fail", 0));
        assert!(!alone.serves());
        assert_eq!(CLUSTER_SLOTS, 16384);
    }

    /// Valkey calls itself Redis 7.2.4 for compatibility, and says what it
    /// is beside that (valkey 9.1.2's INFO server, in part).
    #[test]
    fn valkey_is_valkey_with_its_own_version() {
        let text = "# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\n\
                    valkey_version:9.1.2\r\nvalkey_release_stage:ga\r\nredis_git_sha1:0\r\n\
                    redis_mode:standalone\r\nos:Linux 6.1.0 x86_64\r\nrun_id:abc\r\n";
        let info = Info::parse(text);
        assert_eq!(info.server, Some(("valkey".to_owned(), "9.1.2".to_owned())));
        assert_eq!(info.version.as_deref(), Some("7.2.4"));
        let redis = Info::parse("# Server\r\nredis_version:7.0.15\r\nrun_id:abc\r\n");
        assert_eq!(
            redis.server,
            Some(("redis".to_owned(), "7.0.15".to_owned()))
        );
        // A name without its version: what is known, Redis compatibility.
        let odd = Info::parse("redis_version:7.2.4\r\nserver_name:fork\r\n");
        assert_eq!(odd.server, Some(("redis".to_owned(), "7.2.4".to_owned())));
        assert_eq!(Info::parse("role:master\r\n").server, None);
        let hostile = Info::parse("server_name:\x1b[2J\r\n\x1b[2J_version:1\r\n");
        let (name, _) = hostile.server.unwrap();
        assert!(!name.contains('\x1b'), "{name}");
    }

    #[test]
    fn a_server_text_is_escaped() {
        let info = Info::parse("role:\x1b[2Jmaster\r\n");
        assert!(!info.role.unwrap().contains('\x1b'));
    }

    #[test]
    fn only_noeviction_keeps_locks() {
        assert!(!evicts_locks("noeviction"));
        for policy in [
            "volatile-lru",
            "volatile-ttl",
            "allkeys-lru",
            "allkeys-random",
        ] {
            assert!(evicts_locks(policy), "{policy}");
        }
    }
}
