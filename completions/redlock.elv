
use builtin;
use str;

set edit:completion:arg-completer[redlock] = {|@words|
    fn spaces {|n|
        builtin:repeat $n ' ' | str:join ''
    }
    fn cand {|text desc|
        edit:complex-candidate $text &display=$text' '(spaces (- 14 (wcswidth $text)))$desc
    }
    var command = 'redlock'
    for word $words[1..-1] {
        if (str:has-prefix $word '-') {
            break
        }
        set command = $command';'$word
    }
    var completions = [
        &'redlock'= {
            cand -s 'A Redis master: redis://[user:pass@]host[:port][/db], rediss:// for TLS, or redis+unix:///path[?db=N&pass=P]. Repeat it or separate URLs with commas for N masters; a bare host[:port] means redis:// (port 6379), e.g. -s localhost for one local Redis. Without it: REDLOCK_SERVERS (the same list), then a servers file (--servers-file); there is no default server'
            cand --server 'A Redis master: redis://[user:pass@]host[:port][/db], rediss:// for TLS, or redis+unix:///path[?db=N&pass=P]. Repeat it or separate URLs with commas for N masters; a bare host[:port] means redis:// (port 6379), e.g. -s localhost for one local Redis. Without it: REDLOCK_SERVERS (the same list), then a servers file (--servers-file); there is no default server'
            cand --servers-file 'A file of server URLs, one per line (# starts a comment line); used when neither -s nor REDLOCK_SERVERS names servers. Without it, $XDG_CONFIG_HOME/redlock/servers, then /etc/redlock/servers, are used if they exist; one that exists but cannot be read is an error'
            cand --config-file 'A file of settings for every client of these servers, one `name = value` a line: restart-guard, server-timeout, prefix, name-key (# starts a comment line). A flag or its variable wins over it. Without it, $XDG_CONFIG_HOME/redlock/config, then /etc/redlock/config, are used if they exist (the first one, whole)'
            cand --server-timeout 'Bound for connecting to each server and for each reply. Default: server-timeout in the config file, else 250ms or a fifth of --ttl when that is shorter; a value given must be below a third of --ttl'
            cand --restart-guard 'Do not count a server that started less than DUR ago toward a quorum: it may have lost the locks it held. A --ttl longer than the guard is refused; 0 turns the guard off, and that limit with it. Give every client of these servers the same guard (the config file). [default: restart-guard in the config file, else 30s]'
            cand --tls-ca-cert 'PEM file of the CA that signed the servers'' certificates, for rediss:// URLs (instead of the system''s roots)'
            cand --prefix 'Prepended to every lock name to form the Redis key. [default: prefix in the config file, else empty]'
            cand --json 'Print a result as one JSON object on stdout'
            cand -q 'Print nothing but errors: no messages about expected outcomes (busy, free, not held) and no status table; the exit code tells'
            cand --quiet 'Print nothing but errors: no messages about expected outcomes (busy, free, not held) and no status table; the exit code tells'
            cand -v 'Describe each step on stderr: servers, timings, validity'
            cand --verbose 'Describe each step on stderr: servers, timings, validity'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
            cand acquire 'Take the lock and print its token on stdout. Blocks until the lock is free unless -n or -w is given'
            cand release 'Release the lock, if TOKEN still holds it; with --force, whoever holds it'
            cand done 'Mark the run of acquire --once-per or --once done, while TOKEN still holds the lock: any later run in its period (or for its key) is done already (acquire exits 80, exec skips). Release the lock afterwards'
            cand extend 'Push the lock''s expiry out to --ttl from now, if TOKEN still holds it. A lock that already expired is never re-created'
            cand status 'Show who holds the lock, for how long and until when, and what every server holds. Exits 0 when a majority holds it, 1 when it is free'
            cand list 'List the locks on the servers (under --prefix) with their holders, as a majority sees them'
            cand exec 'Run a command while holding the lock, extending the lock while it runs and stopping the command before the lock can lapse'
            cand doctor 'Check the servers against what Redlock''s safety rests on: masters, distinct, enough of them, no eviction, persistence or the restart guard, clocks, round trips, cluster mode, ACLs, and what the restart guard cannot see: replicas, servers behind one address, DEBUG, a shared server. Exits 0 when nothing is unsafe, 1 when something is (with --strict, a warning too), 69 when too few servers answer'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'redlock;acquire'= {
            cand -s 'A Redis master, e.g. redis://host:6379; repeat it for N masters'
            cand --server 'A Redis master, e.g. redis://host:6379; repeat it for N masters'
            cand --servers-file 'A file of server URLs, one a line, if no -s or $REDLOCK_SERVERS'
            cand --config-file 'A file of settings: restart-guard, server-timeout, prefix, name-key'
            cand --server-timeout 'Bound on each connect and reply [default: 250ms, or --ttl/5]'
            cand --restart-guard 'Skip servers restarted less than DUR ago; caps --ttl [default: 30s]'
            cand --tls-ca-cert 'The CA certificate (PEM) of rediss:// servers'
            cand --prefix 'Prepended to the lock names to form the Redis keys'
            cand --ttl 'How long the lock lives on the servers unless extended or released, e.g. 30s, 1m30s, 250ms or 2.5 (seconds); at most the restart guard (--restart-guard)'
            cand -w 'Retry for at most DUR, then exit with the last attempt''s status: 75 busy, 69 no quorum (-w 0 is -n)'
            cand --wait 'Retry for at most DUR, then exit with the last attempt''s status: 75 busy, 69 no quorum (-w 0 is -n)'
            cand -E 'Exit with CODE instead of 75 when the lock is busy (or the -w wait ran out); -E 0 skips quietly, the cron idiom (acquire then prints no token)'
            cand --conflict-exit-code 'Exit with CODE instead of 75 when the lock is busy (or the -w wait ran out); -E 0 skips quietly, the cron idiom (acquire then prints no token)'
            cand -m 'A note recorded beside the lock while it is held, shown by `status` and to whoever finds it busy, e.g. -m "rolling out v2.3"'
            cand --message 'A note recorded beside the lock while it is held, shown by `status` and to whoever finds it busy, e.g. -m "rolling out v2.3"'
            cand --limit 'NAME is a counting semaphore: up to K holders at once, each in one of the slots NAME#0 … NAME#K-1 (K from 1 to 256). acquire and exec take any free slot (exec gives the command REDLOCK_SLOT), release and extend find the slot TOKEN holds, status shows every slot. Every client of NAME must pass the same K: the servers record it, and refuse another (exit 78) until the last slot''s TTL has passed'
            cand --once-per 'Run at most once per period of DUR across every host: a run that succeeded marks the period done on the servers (exec: its command exited 0; acquire: `redlock done`), and any later run in it skips with a line naming the host, pid, time and status (exec exits 0, acquire 80). Periods are counted on the servers'' clock from the Unix epoch in UTC (1d runs from 00:00 UTC); @HH:MM shifts them (1d@02:00). A run that fails, is killed or loses the lock marks nothing. Not with --limit or --shared'
            cand --once 'Run at most once for KEY (a release, a pipeline id) across every host, as --once-per does for a period; the mark is kept 30 days, and a run with another KEY replaces it. Not with --limit or --shared'
            cand --while 'Keep the lock while process PID lives: `tok=$(redlock acquire --while $$ NAME)` in a script. A keeper process extends the lock every third of --ttl, releases it once PID and what it left in its process group have exited, and stops quietly when `redlock release NAME "$tok"` runs on this host; if the lock is lost, PID gets --while-signal'
            cand --while-signal 'With --while: the signal sent to PID, and to its process group if it leads one, when the lock is lost, e.g. TERM, INT or USR1; none sends nothing'
            cand --serial 'With --supersede: "newer" is this number instead of the order of arrival, e.g. GitHub''s run_number or GitLab''s CI_PIPELINE_IID, so that a re-run of an old pipeline arriving last is itself superseded at once'
            cand --json 'Print the token and the lock''s validity as one JSON object'
            cand -q 'No message when the lock is busy or done; the exit status tells'
            cand --quiet 'No message when the lock is busy or done; the exit status tells'
            cand -v 'Describe each step on stderr: servers, timings, validity'
            cand --verbose 'Describe each step on stderr: servers, timings, validity'
            cand --hex 'NAME is the name''s bytes in hex, as `name_hex` in --json output gives a name that is not UTF-8'
            cand -n 'Fail at once (exit 75) if the lock is held'
            cand --nonblock 'Fail at once (exit 75) if the lock is held'
            cand --fence 'Also hand out a fencing token: a number that increases strictly from each holder of NAME to the next, for storage to reject writes carrying a lower one. Printed after the token on the same line, `TOKEN FENCE` (`read -r tok fence`), or as "fence" with --json. Each server keeps a counter for NAME without expiry. Not with --limit: a semaphore''s holders run at once, which a fence cannot order'
            cand --shared 'Take the lock shared, as flock''s shared mode: any number of --shared holders at once, but never beside an exclusive one. A waiting exclusive holder keeps new shared ones out. There is no short form (the one flock uses names a server here). Not with --limit or --fence'
            cand --supersede 'Among waiters of NAME that all pass --supersede, a newer one replaces the older ones, as a CI concurrency group keeps one pending run: they leave the line at once and exit 81 (cancelled, not failed), naming who superseded them. A holder is never superseded, and waiters without it neither supersede nor are superseded. Not with --limit or --shared'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'redlock;release'= {
            cand -s 'A Redis master, e.g. redis://host:6379; repeat it for N masters'
            cand --server 'A Redis master, e.g. redis://host:6379; repeat it for N masters'
            cand --servers-file 'A file of server URLs, one a line, if no -s or $REDLOCK_SERVERS'
            cand --config-file 'A file of settings: restart-guard, server-timeout, prefix, name-key'
            cand --server-timeout 'Bound on each connect and reply [default: 250ms]'
            cand --restart-guard 'Skip servers restarted less than DUR ago [default: 30s]'
            cand --tls-ca-cert 'The CA certificate (PEM) of rediss:// servers'
            cand --prefix 'Prepended to the lock names to form the Redis keys'
            cand --if-token 'With --force: break the lock only while TOKEN still holds it (the token status showed for the dead holder), never a holder that took it since'
            cand --limit 'NAME is a counting semaphore: up to K holders at once, each in one of the slots NAME#0 … NAME#K-1 (K from 1 to 256). acquire and exec take any free slot (exec gives the command REDLOCK_SLOT), release and extend find the slot TOKEN holds, status shows every slot. Every client of NAME must pass the same K: the servers record it, and refuse another (exit 78) until the last slot''s TTL has passed'
            cand --json 'Print the result as one JSON object'
            cand -q 'No message when TOKEN does not hold the lock; the exit status tells'
            cand --quiet 'No message when TOKEN does not hold the lock; the exit status tells'
            cand -v 'Describe each step on stderr: servers, timings, validity'
            cand --verbose 'Describe each step on stderr: servers, timings, validity'
            cand --hex 'NAME is the name''s bytes in hex, as `name_hex` in --json output gives a name that is not UTF-8'
            cand --force 'Delete the lock whoever holds it, without a token: for a stale lock whose holder is known to be dead, never to hurry a live one'
            cand --done 'With --force: delete the done mark of --once-per or --once beside the lock, so that the job can run again in this period (or for this key); the lock itself is left alone'
            cand --any-key 'With --force: break a string key that does not look like a lock too (one without expiry, with a value longer than any token, or neither a redlock token nor beside a holder record: a lock another Redlock client took, say)'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'redlock;done'= {
            cand -s 'A Redis master, e.g. redis://host:6379; repeat it for N masters'
            cand --server 'A Redis master, e.g. redis://host:6379; repeat it for N masters'
            cand --servers-file 'A file of server URLs, one a line, if no -s or $REDLOCK_SERVERS'
            cand --config-file 'A file of settings: restart-guard, server-timeout, prefix, name-key'
            cand --server-timeout 'Bound on each connect and reply [default: 250ms]'
            cand --restart-guard 'Skip servers restarted less than DUR ago [default: 30s]'
            cand --tls-ca-cert 'The CA certificate (PEM) of rediss:// servers'
            cand --prefix 'Prepended to the lock names to form the Redis keys'
            cand --json 'Print the result as one JSON object'
            cand -q 'No message when TOKEN does not hold the lock; the exit status tells'
            cand --quiet 'No message when TOKEN does not hold the lock; the exit status tells'
            cand -v 'Describe each step on stderr: servers, timings, validity'
            cand --verbose 'Describe each step on stderr: servers, timings, validity'
            cand --hex 'NAME is the name''s bytes in hex, as `name_hex` in --json output gives a name that is not UTF-8'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'redlock;extend'= {
            cand -s 'A Redis master, e.g. redis://host:6379; repeat it for N masters'
            cand --server 'A Redis master, e.g. redis://host:6379; repeat it for N masters'
            cand --servers-file 'A file of server URLs, one a line, if no -s or $REDLOCK_SERVERS'
            cand --config-file 'A file of settings: restart-guard, server-timeout, prefix, name-key'
            cand --server-timeout 'Bound on each connect and reply [default: 250ms, or --ttl/5]'
            cand --restart-guard 'Skip servers restarted less than DUR ago; caps --ttl [default: 30s]'
            cand --tls-ca-cert 'The CA certificate (PEM) of rediss:// servers'
            cand --prefix 'Prepended to the lock names to form the Redis keys'
            cand --ttl 'How long the lock lives on the servers unless extended or released, e.g. 30s, 1m30s, 250ms or 2.5 (seconds); at most the restart guard (--restart-guard)'
            cand --limit 'NAME is a counting semaphore: up to K holders at once, each in one of the slots NAME#0 … NAME#K-1 (K from 1 to 256). acquire and exec take any free slot (exec gives the command REDLOCK_SLOT), release and extend find the slot TOKEN holds, status shows every slot. Every client of NAME must pass the same K: the servers record it, and refuse another (exit 78) until the last slot''s TTL has passed'
            cand --json 'Print the result as one JSON object'
            cand -q 'No message when TOKEN does not hold the lock; the exit status tells'
            cand --quiet 'No message when TOKEN does not hold the lock; the exit status tells'
            cand -v 'Describe each step on stderr: servers, timings, validity'
            cand --verbose 'Describe each step on stderr: servers, timings, validity'
            cand --hex 'NAME is the name''s bytes in hex, as `name_hex` in --json output gives a name that is not UTF-8'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'redlock;status'= {
            cand -s 'A Redis master, e.g. redis://host:6379; repeat it for N masters'
            cand --server 'A Redis master, e.g. redis://host:6379; repeat it for N masters'
            cand --servers-file 'A file of server URLs, one a line, if no -s or $REDLOCK_SERVERS'
            cand --config-file 'A file of settings: restart-guard, server-timeout, prefix, name-key'
            cand --server-timeout 'Bound on each connect and reply [default: 250ms]'
            cand --restart-guard 'Skip servers restarted less than DUR ago [default: 30s]'
            cand --tls-ca-cert 'The CA certificate (PEM) of rediss:// servers'
            cand --prefix 'Prepended to the lock names to form the Redis keys'
            cand --limit 'NAME is a counting semaphore: up to K holders at once, each in one of the slots NAME#0 … NAME#K-1 (K from 1 to 256). acquire and exec take any free slot (exec gives the command REDLOCK_SLOT), release and extend find the slot TOKEN holds, status shows every slot. Every client of NAME must pass the same K: the servers record it, and refuse another (exit 78) until the last slot''s TTL has passed'
            cand --json 'Print the holder and every server''s view as one JSON object'
            cand -q 'No table; the exit status tells (0 held, 1 free)'
            cand --quiet 'No table; the exit status tells (0 held, 1 free)'
            cand -v 'Describe each step on stderr: servers, timings, validity'
            cand --verbose 'Describe each step on stderr: servers, timings, validity'
            cand --hex 'NAME is the name''s bytes in hex, as `name_hex` in --json output gives a name that is not UTF-8'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'redlock;list'= {
            cand -s 'A Redis master, e.g. redis://host:6379; repeat it for N masters'
            cand --server 'A Redis master, e.g. redis://host:6379; repeat it for N masters'
            cand --servers-file 'A file of server URLs, one a line, if no -s or $REDLOCK_SERVERS'
            cand --config-file 'A file of settings: restart-guard, server-timeout, prefix, name-key'
            cand --server-timeout 'Bound on each connect and reply [default: 250ms]'
            cand --restart-guard 'Skip servers restarted less than DUR ago [default: 30s]'
            cand --tls-ca-cert 'The CA certificate (PEM) of rediss:// servers'
            cand --prefix 'Prepended to the lock names to form the Redis keys'
            cand --older-than 'Only locks held for longer than DUR (30m, 2h), by the age redlock records beside each lock; locks without such a record (taken by other Redlock clients) have no known age and are left out'
            cand --json 'Print the locks as one JSON object'
            cand -q 'No table, only errors'
            cand --quiet 'No table, only errors'
            cand -v 'Describe each step on stderr: servers, timings, validity'
            cand --verbose 'Describe each step on stderr: servers, timings, validity'
            cand --names 'Print only the names, one a line, escaped as the table shows them but without quotes: no header, no other column. For scripts and shell completion'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'redlock;exec'= {
            cand -s 'A Redis master, e.g. redis://host:6379; repeat it for N masters'
            cand --server 'A Redis master, e.g. redis://host:6379; repeat it for N masters'
            cand --servers-file 'A file of server URLs, one a line, if no -s or $REDLOCK_SERVERS'
            cand --config-file 'A file of settings: restart-guard, server-timeout, prefix, name-key'
            cand --server-timeout 'Bound on each connect and reply [default: 250ms, or --ttl/5]'
            cand --restart-guard 'Skip servers restarted less than DUR ago; caps --ttl [default: 30s]'
            cand --tls-ca-cert 'The CA certificate (PEM) of rediss:// servers'
            cand --prefix 'Prepended to the lock names to form the Redis keys'
            cand --ttl 'How long the lock lives on the servers unless extended or released, e.g. 30s, 1m30s, 250ms or 2.5 (seconds); at most the restart guard (--restart-guard)'
            cand -w 'Retry for at most DUR, then exit with the last attempt''s status: 75 busy, 69 no quorum (-w 0 is -n)'
            cand --wait 'Retry for at most DUR, then exit with the last attempt''s status: 75 busy, 69 no quorum (-w 0 is -n)'
            cand -E 'Exit with CODE instead of 75 when the lock is busy (or the -w wait ran out), without running the command; -E 0 skips quietly, the cron idiom (the default of -n with --once-per or --once)'
            cand --conflict-exit-code 'Exit with CODE instead of 75 when the lock is busy (or the -w wait ran out), without running the command; -E 0 skips quietly, the cron idiom (the default of -n with --once-per or --once)'
            cand -m 'A note recorded beside the lock while it is held, shown by `status` and to whoever finds it busy, e.g. -m "rolling out v2.3"'
            cand --message 'A note recorded beside the lock while it is held, shown by `status` and to whoever finds it busy, e.g. -m "rolling out v2.3"'
            cand --limit 'NAME is a counting semaphore: up to K holders at once, each in one of the slots NAME#0 … NAME#K-1 (K from 1 to 256). acquire and exec take any free slot (exec gives the command REDLOCK_SLOT), release and extend find the slot TOKEN holds, status shows every slot. Every client of NAME must pass the same K: the servers record it, and refuse another (exit 78) until the last slot''s TTL has passed'
            cand --once-per 'Run at most once per period of DUR across every host: a run that succeeded marks the period done on the servers (exec: its command exited 0; acquire: `redlock done`), and any later run in it skips with a line naming the host, pid, time and status (exec exits 0, acquire 80). Periods are counted on the servers'' clock from the Unix epoch in UTC (1d runs from 00:00 UTC); @HH:MM shifts them (1d@02:00). A run that fails, is killed or loses the lock marks nothing. Not with --limit or --shared'
            cand --once 'Run at most once for KEY (a release, a pipeline id) across every host, as --once-per does for a period; the mark is kept 30 days, and a run with another KEY replaces it. Not with --limit or --shared'
            cand -k 'After the stop signal, wait this long before SIGKILL; capped at a third of --ttl so that the kill always lands before the lock can lapse'
            cand --kill-after 'After the stop signal, wait this long before SIGKILL; capped at a third of --ttl so that the kill always lands before the lock can lapse'
            cand --timeout 'Stop the command (the stop signal, then SIGKILL after --kill-after) and release the lock if it still runs this long after it started, counting what it leaves behind; exec then exits 124, as timeout(1) does'
            cand --signal 'The signal that asks the command to stop when the lock is lost, e.g. TERM, SIGINT or 2'
            cand --serial 'With --supersede: "newer" is this number instead of the order of arrival, e.g. GitHub''s run_number or GitLab''s CI_PIPELINE_IID, so that a re-run of an old pipeline arriving last is itself superseded at once'
            cand -c 'Run STRING with `sh -c` instead of CMD'
            cand --command 'Run STRING with `sh -c` instead of CMD'
            cand -q 'No message when the lock is busy or done; the exit status tells'
            cand --quiet 'No message when the lock is busy or done; the exit status tells'
            cand -v 'Describe each step on stderr: servers, timings, validity'
            cand --verbose 'Describe each step on stderr: servers, timings, validity'
            cand -n 'Fail at once (exit 75) if the lock is held'
            cand --nonblock 'Fail at once (exit 75) if the lock is held'
            cand --record-command 'Record the command line beside the lock (redacted of the usual forms of secrets), where anyone who can read the servers sees it. Without it, the record names only the program and how many arguments it has'
            cand --fence 'Give the command a fencing token in REDLOCK_FENCE: a number that increases strictly from each holder of NAME to the next (see acquire --fence). Not with --limit'
            cand --shared 'Take the lock shared, as flock''s shared mode: any number of --shared holders at once, but never beside an exclusive one. A waiting exclusive holder keeps new shared ones out. There is no short form (the one flock uses names a server here). Not with --limit or --fence'
            cand --supersede 'Among waiters of NAME that all pass --supersede, a newer one replaces the older ones, as a CI concurrency group keeps one pending run: they leave the line at once and exit 81 (cancelled, not failed), naming who superseded them. A holder is never superseded, and waiters without it neither supersede nor are superseded. Not with --limit or --shared'
            cand --cancel-in-progress '--supersede, and also stop a running holder of NAME that passed --cancel-in-progress and is older: its command gets the stop signal (then SIGKILL after --kill-after), and it exits 81 (cancelled). This run takes the lock only once that holder has released it. A holder without the flag is never stopped'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'redlock;doctor'= {
            cand -s 'A Redis master, e.g. redis://host:6379; repeat it for N masters'
            cand --server 'A Redis master, e.g. redis://host:6379; repeat it for N masters'
            cand --servers-file 'A file of server URLs, one a line, if no -s or $REDLOCK_SERVERS'
            cand --config-file 'A file of settings: restart-guard, server-timeout, prefix, name-key'
            cand --server-timeout 'Bound on each connect and reply [default: 250ms]'
            cand --restart-guard 'Skip servers restarted less than DUR ago [default: 30s]'
            cand --tls-ca-cert 'The CA certificate (PEM) of rediss:// servers'
            cand --prefix 'Prepended to the lock names to form the Redis keys'
            cand --ttl 'The TTL the locks on these servers use: the servers'' clocks must agree within 1% of it'
            cand --json 'Print the result as one JSON object'
            cand -q 'No table, only errors'
            cand --quiet 'No table, only errors'
            cand -v 'Describe each step on stderr: servers, timings, validity'
            cand --verbose 'Describe each step on stderr: servers, timings, validity'
            cand --single 'Accept single-instance semantics: one server, which is no failure-tolerant Redlock, is then no finding'
            cand --strict 'Count warnings too: exit 1 when there is any'
            cand --accept-replicas 'Accept masters with replicas attached: you know that no failover promotes a replica behind a master''s address sooner than the longest TTL after the master stopped (a delayed failover), or at all (replicas for backups or reads)'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'redlock;help'= {
            cand acquire 'Take the lock and print its token on stdout. Blocks until the lock is free unless -n or -w is given'
            cand release 'Release the lock, if TOKEN still holds it; with --force, whoever holds it'
            cand done 'Mark the run of acquire --once-per or --once done, while TOKEN still holds the lock: any later run in its period (or for its key) is done already (acquire exits 80, exec skips). Release the lock afterwards'
            cand extend 'Push the lock''s expiry out to --ttl from now, if TOKEN still holds it. A lock that already expired is never re-created'
            cand status 'Show who holds the lock, for how long and until when, and what every server holds. Exits 0 when a majority holds it, 1 when it is free'
            cand list 'List the locks on the servers (under --prefix) with their holders, as a majority sees them'
            cand exec 'Run a command while holding the lock, extending the lock while it runs and stopping the command before the lock can lapse'
            cand doctor 'Check the servers against what Redlock''s safety rests on: masters, distinct, enough of them, no eviction, persistence or the restart guard, clocks, round trips, cluster mode, ACLs, and what the restart guard cannot see: replicas, servers behind one address, DEBUG, a shared server. Exits 0 when nothing is unsafe, 1 when something is (with --strict, a warning too), 69 when too few servers answer'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'redlock;help;acquire'= {
        }
        &'redlock;help;release'= {
        }
        &'redlock;help;done'= {
        }
        &'redlock;help;extend'= {
        }
        &'redlock;help;status'= {
        }
        &'redlock;help;list'= {
        }
        &'redlock;help;exec'= {
        }
        &'redlock;help;doctor'= {
        }
        &'redlock;help;help'= {
        }
    ]
    $completions[$command]
}
