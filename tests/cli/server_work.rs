//! What a lock costs the servers, counted by the servers themselves
//! (`INFO commandstats`): script calls per attempt and per hand-off. Speed
//! is measured by scripts/bench, never here; these tests check how many
//! times the scripts run, which is behaviour.

use crate::support::{acquire, run, Cluster};

#[test]
fn a_failed_attempt_on_a_busy_lock_costs_each_server_one_script_call() {
    let cluster = Cluster::start(3);
    acquire(&cluster, "busy", &[]);
    for server in &cluster.servers {
        server.reset_stats();
    }
    run(cluster.redlock().args(["acquire", "-n", "busy"])).assert_code(75, "busy");
    let calls: Vec<u64> = cluster
        .servers
        .iter()
        .map(|server| server.script_calls())
        .collect();
    // The attempt, and no compare-and-delete where the script said that
    // it did not take the lock.
    assert_eq!(calls, [1, 1, 1], "script calls per server");
}
