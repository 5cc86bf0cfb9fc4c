//! Failover behind one address (issue 27): each of the five lock servers is
//! a real master with a real replica behind a TCP forwarder, the address
//! the clients know (a managed endpoint, a VIP, a DNS name). An episode
//! fails a majority over at once to replicas that missed the last writes:
//! each replica is promoted (`REPLICAOF NO ONE`: it stops following its
//! master), the clients go on writing to the masters for a while, then the
//! addresses move to the replicas and the old masters follow the new ones,
//! for the next episode. A guard that trusts a process's uptime counts the
//! promoted replica at once (it has been up for long), and a holder's lock
//! is gone from a majority: two holders.

use std::thread;
use std::time::Duration;

use crate::history::History;
use crate::rig::SERVERS;
use crate::rng::Rng;
use crate::support::forwarder::Forwarder;
use crate::support::{Cluster, RedisServer};

/// How long the promoted replicas miss the masters' writes before the
/// addresses move: longer than the TTL, so that the keys they kept have
/// expired there and the lock held at the move is on no replica.
const MISSED: (u64, u64) = (2100, 2600);

/// How long the replicas run before the clients start (beside the rig's
/// wait for the guard).
const UP_BEFORE: Duration = Duration::from_secs(2);

/// The servers of a scenario behind forwarders: pairs of a master and its
/// replica, and which of the two each address reaches now.
pub struct Vips {
    pub replicas: Cluster,
    pub forwarders: Vec<Forwarder>,
    /// For each address: whether it reaches the replica side now.
    switched: [bool; SERVERS],
}

impl Vips {
    /// A replica for each server of `masters`, and a forwarder in front of
    /// each master.
    pub fn start(masters: &Cluster) -> Vips {
        let replicas = Cluster::start(SERVERS);
        for server in masters.servers.iter().chain(&replicas.servers) {
            // A full resync at once, not after Redis 7's 5s wait for more
            // replicas to share a diskless transfer.
            command(server, &["CONFIG", "SET", "repl-diskless-sync-delay", "0"]);
        }
        for (replica, master) in replicas.servers.iter().zip(&masters.servers) {
            follow(replica, master);
        }
        // Up for longer than a guard and a second before the first
        // failover: what a guard that trusts a process's uptime would count
        // at once (a real replica has been up for days).
        thread::sleep(UP_BEFORE);
        let forwarders = masters
            .servers
            .iter()
            .map(|m| Forwarder::start(m.port()))
            .collect();
        Vips {
            replicas,
            forwarders,
            switched: [false; SERVERS],
        }
    }

    /// `REDLOCK_SERVERS`: the forwarders' addresses.
    pub fn servers_arg(&self) -> String {
        let addrs: Vec<String> = self.forwarders.iter().map(Forwarder::addr).collect();
        addrs.join(",")
    }

    /// Fails a majority over, as the module says.
    pub fn episode(&mut self, masters: &Cluster, rng: &mut Rng, history: &History) {
        // A majority, at random: two servers are left as they are.
        let mut picked: Vec<usize> = (0..SERVERS).collect();
        for _ in 0..SERVERS - (SERVERS / 2 + 1) {
            picked.remove(rng.below(picked.len() as u64) as usize);
        }
        for &i in &picked {
            let (_, standby) = self.pair(masters, i);
            command(standby, &["REPLICAOF", "NO", "ONE"]);
        }
        history.fault(&format!("failover {picked:?}: replicas promoted"));
        thread::sleep(rng.millis(MISSED.0, MISSED.1));
        for &i in &picked {
            let (_, standby) = self.pair(masters, i);
            self.forwarders[i].switch_to(standby.port());
        }
        history.heal(&format!("failover {picked:?}: addresses moved"));
        for &i in &picked {
            self.switched[i] = !self.switched[i];
            let (active, standby) = self.pair(masters, i);
            follow(standby, active);
        }
    }

    /// The server address `i` reaches now, and the one that follows it.
    fn pair<'a>(&'a self, masters: &'a Cluster, i: usize) -> (&'a RedisServer, &'a RedisServer) {
        match self.switched[i] {
            false => (&masters[i], &self.replicas[i]),
            true => (&self.replicas[i], &masters[i]),
        }
    }
}

fn command(server: &RedisServer, args: &[&str]) {
    let _: redis::Value = redis::cmd(args[0])
        .arg(&args[1..])
        .query(&mut server.client())
        .unwrap_or_else(|e| panic!("{args:?} on {}: {e}", server.port()));
}

/// Makes `replica` follow `master`, and waits until the link is up.
fn follow(replica: &RedisServer, master: &RedisServer) {
    replica.replicate(master, true);
}
