
using namespace System.Management.Automation
using namespace System.Management.Automation.Language

Register-ArgumentCompleter -Native -CommandName 'redlock' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)

    $commandElements = $commandAst.CommandElements
    $command = @(
        'redlock'
        for ($i = 1; $i -lt $commandElements.Count; $i++) {
            $element = $commandElements[$i]
            if ($element -isnot [StringConstantExpressionAst] -or
                $element.StringConstantType -ne [StringConstantType]::BareWord -or
                $element.Value.StartsWith('-') -or
                $element.Value -eq $wordToComplete) {
                break
        }
        $element.Value
    }) -join ';'

    $completions = @(switch ($command) {
        'redlock' {
            [CompletionResult]::new('-s', '-s', [CompletionResultType]::ParameterName, 'A Redis master: redis://[user:pass@]host[:port][/db], rediss:// for TLS, or redis+unix:///path[?db=N&pass=P]. Repeat it or separate URLs with commas for N masters; a bare host[:port] means redis:// (port 6379), e.g. -s localhost for one local Redis. Without it: REDLOCK_SERVERS (the same list), then a servers file (--servers-file); there is no default server')
            [CompletionResult]::new('--server', '--server', [CompletionResultType]::ParameterName, 'A Redis master: redis://[user:pass@]host[:port][/db], rediss:// for TLS, or redis+unix:///path[?db=N&pass=P]. Repeat it or separate URLs with commas for N masters; a bare host[:port] means redis:// (port 6379), e.g. -s localhost for one local Redis. Without it: REDLOCK_SERVERS (the same list), then a servers file (--servers-file); there is no default server')
            [CompletionResult]::new('--servers-file', '--servers-file', [CompletionResultType]::ParameterName, 'A file of server URLs, one per line (# starts a comment line); used when neither -s nor REDLOCK_SERVERS names servers. Without it, $XDG_CONFIG_HOME/redlock/servers, then /etc/redlock/servers, are used if they exist; one that exists but cannot be read is an error')
            [CompletionResult]::new('--config-file', '--config-file', [CompletionResultType]::ParameterName, 'A file of settings for every client of these servers, one `name = value` a line: restart-guard, server-timeout, prefix, name-key (# starts a comment line). A flag or its variable wins over it. Without it, $XDG_CONFIG_HOME/redlock/config, then /etc/redlock/config, are used if they exist (the first one, whole)')
            [CompletionResult]::new('--server-timeout', '--server-timeout', [CompletionResultType]::ParameterName, 'Bound for connecting to each server and for each reply. Default: server-timeout in the config file, else 250ms or a fifth of --ttl when that is shorter; a value given must be below a third of --ttl')
            [CompletionResult]::new('--restart-guard', '--restart-guard', [CompletionResultType]::ParameterName, 'Do not count a server that started less than DUR ago toward a quorum: it may have lost the locks it held. A --ttl longer than the guard is refused; 0 turns the guard off, and that limit with it. Give every client of these servers the same guard (the config file). [default: restart-guard in the config file, else 30s]')
            [CompletionResult]::new('--tls-ca-cert', '--tls-ca-cert', [CompletionResultType]::ParameterName, 'PEM file of the CA that signed the servers'' certificates, for rediss:// URLs (instead of the system''s roots)')
            [CompletionResult]::new('--prefix', '--prefix', [CompletionResultType]::ParameterName, 'Prepended to every lock name to form the Redis key. [default: prefix in the config file, else empty]')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print a result as one JSON object on stdout')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print nothing but errors: no messages about expected outcomes (busy, free, not held) and no status table; the exit code tells')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print nothing but errors: no messages about expected outcomes (busy, free, not held) and no status table; the exit code tells')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Describe each step on stderr: servers, timings, validity')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Describe each step on stderr: servers, timings, validity')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('acquire', 'acquire', [CompletionResultType]::ParameterValue, 'Take the lock and print its token on stdout. Blocks until the lock is free unless -n or -w is given')
            [CompletionResult]::new('release', 'release', [CompletionResultType]::ParameterValue, 'Release the lock, if TOKEN still holds it; with --force, whoever holds it')
            [CompletionResult]::new('done', 'done', [CompletionResultType]::ParameterValue, 'Mark the run of acquire --once-per or --once done, while TOKEN still holds the lock: any later run in its period (or for its key) is done already (acquire exits 80, exec skips). Release the lock afterwards')
            [CompletionResult]::new('extend', 'extend', [CompletionResultType]::ParameterValue, 'Push the lock''s expiry out to --ttl from now, if TOKEN still holds it. A lock that already expired is never re-created')
            [CompletionResult]::new('status', 'status', [CompletionResultType]::ParameterValue, 'Show who holds the lock, for how long and until when, and what every server holds. Exits 0 when a majority holds it, 1 when it is free')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List the locks on the servers (under --prefix) with their holders, as a majority sees them')
            [CompletionResult]::new('exec', 'exec', [CompletionResultType]::ParameterValue, 'Run a command while holding the lock, extending the lock while it runs and stopping the command before the lock can lapse')
            [CompletionResult]::new('doctor', 'doctor', [CompletionResultType]::ParameterValue, 'Check the servers against what Redlock''s safety rests on: masters, distinct, enough of them, no eviction, persistence or the restart guard, clocks, round trips, cluster mode, ACLs, and what the restart guard cannot see: replicas, servers behind one address, DEBUG, a shared server. Exits 0 when nothing is unsafe, 1 when something is (with --strict, a warning too), 69 when too few servers answer')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'redlock;acquire' {
            [CompletionResult]::new('-s', '-s', [CompletionResultType]::ParameterName, 'A Redis master, e.g. redis://host:6379; repeat it for N masters')
            [CompletionResult]::new('--server', '--server', [CompletionResultType]::ParameterName, 'A Redis master, e.g. redis://host:6379; repeat it for N masters')
            [CompletionResult]::new('--servers-file', '--servers-file', [CompletionResultType]::ParameterName, 'A file of server URLs, one a line, if no -s or $REDLOCK_SERVERS')
            [CompletionResult]::new('--config-file', '--config-file', [CompletionResultType]::ParameterName, 'A file of settings: restart-guard, server-timeout, prefix, name-key')
            [CompletionResult]::new('--server-timeout', '--server-timeout', [CompletionResultType]::ParameterName, 'Bound on each connect and reply [default: 250ms, or --ttl/5]')
            [CompletionResult]::new('--restart-guard', '--restart-guard', [CompletionResultType]::ParameterName, 'Skip servers restarted less than DUR ago; caps --ttl [default: 30s]')
            [CompletionResult]::new('--tls-ca-cert', '--tls-ca-cert', [CompletionResultType]::ParameterName, 'The CA certificate (PEM) of rediss:// servers')
            [CompletionResult]::new('--prefix', '--prefix', [CompletionResultType]::ParameterName, 'Prepended to the lock names to form the Redis keys')
            [CompletionResult]::new('--ttl', '--ttl', [CompletionResultType]::ParameterName, 'How long the lock lives on the servers unless extended or released, e.g. 30s, 1m30s, 250ms or 2.5 (seconds); at most the restart guard (--restart-guard)')
            [CompletionResult]::new('-w', '-w', [CompletionResultType]::ParameterName, 'Retry for at most DUR, then exit with the last attempt''s status: 75 busy, 69 no quorum (-w 0 is -n)')
            [CompletionResult]::new('--wait', '--wait', [CompletionResultType]::ParameterName, 'Retry for at most DUR, then exit with the last attempt''s status: 75 busy, 69 no quorum (-w 0 is -n)')
            [CompletionResult]::new('-E', '-E ', [CompletionResultType]::ParameterName, 'Exit with CODE instead of 75 when the lock is busy (or the -w wait ran out); -E 0 skips quietly, the cron idiom (acquire then prints no token)')
            [CompletionResult]::new('--conflict-exit-code', '--conflict-exit-code', [CompletionResultType]::ParameterName, 'Exit with CODE instead of 75 when the lock is busy (or the -w wait ran out); -E 0 skips quietly, the cron idiom (acquire then prints no token)')
            [CompletionResult]::new('-m', '-m', [CompletionResultType]::ParameterName, 'A note recorded beside the lock while it is held, shown by `status` and to whoever finds it busy, e.g. -m "rolling out v2.3"')
            [CompletionResult]::new('--message', '--message', [CompletionResultType]::ParameterName, 'A note recorded beside the lock while it is held, shown by `status` and to whoever finds it busy, e.g. -m "rolling out v2.3"')
            [CompletionResult]::new('--limit', '--limit', [CompletionResultType]::ParameterName, 'NAME is a counting semaphore: up to K holders at once, each in one of the slots NAME#0 … NAME#K-1 (K from 1 to 256). acquire and exec take any free slot (exec gives the command REDLOCK_SLOT), release and extend find the slot TOKEN holds, status shows every slot. Every client of NAME must pass the same K: the servers record it, and refuse another (exit 78) until the last slot''s TTL has passed')
            [CompletionResult]::new('--once-per', '--once-per', [CompletionResultType]::ParameterName, 'Run at most once per period of DUR across every host: a run that succeeded marks the period done on the servers (exec: its command exited 0; acquire: `redlock done`), and any later run in it skips with a line naming the host, pid, time and status (exec exits 0, acquire 80). Periods are counted on the servers'' clock from the Unix epoch in UTC (1d runs from 00:00 UTC); @HH:MM shifts them (1d@02:00). A run that fails, is killed or loses the lock marks nothing. Not with --limit or --shared')
            [CompletionResult]::new('--once', '--once', [CompletionResultType]::ParameterName, 'Run at most once for KEY (a release, a pipeline id) across every host, as --once-per does for a period; the mark is kept 30 days, and a run with another KEY replaces it. Not with --limit or --shared')
            [CompletionResult]::new('--while', '--while', [CompletionResultType]::ParameterName, 'Keep the lock while process PID lives: `tok=$(redlock acquire --while $$ NAME)` in a script. A keeper process extends the lock every third of --ttl, releases it once PID and what it left in its process group have exited, and stops quietly when `redlock release NAME "$tok"` runs on this host; if the lock is lost, PID gets --while-signal')
            [CompletionResult]::new('--while-signal', '--while-signal', [CompletionResultType]::ParameterName, 'With --while: the signal sent to PID, and to its process group if it leads one, when the lock is lost, e.g. TERM, INT or USR1; none sends nothing')
            [CompletionResult]::new('--serial', '--serial', [CompletionResultType]::ParameterName, 'With --supersede: "newer" is this number instead of the order of arrival, e.g. GitHub''s run_number or GitLab''s CI_PIPELINE_IID, so that a re-run of an old pipeline arriving last is itself superseded at once')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print the token and the lock''s validity as one JSON object')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'No message when the lock is busy or done; the exit status tells')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'No message when the lock is busy or done; the exit status tells')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Describe each step on stderr: servers, timings, validity')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Describe each step on stderr: servers, timings, validity')
            [CompletionResult]::new('--hex', '--hex', [CompletionResultType]::ParameterName, 'NAME is the name''s bytes in hex, as `name_hex` in --json output gives a name that is not UTF-8')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Fail at once (exit 75) if the lock is held')
            [CompletionResult]::new('--nonblock', '--nonblock', [CompletionResultType]::ParameterName, 'Fail at once (exit 75) if the lock is held')
            [CompletionResult]::new('--fence', '--fence', [CompletionResultType]::ParameterName, 'Also hand out a fencing token: a number that increases strictly from each holder of NAME to the next, for storage to reject writes carrying a lower one. Printed after the token on the same line, `TOKEN FENCE` (`read -r tok fence`), or as "fence" with --json. Each server keeps a counter for NAME without expiry. Not with --limit: a semaphore''s holders run at once, which a fence cannot order')
            [CompletionResult]::new('--shared', '--shared', [CompletionResultType]::ParameterName, 'Take the lock shared, as flock''s shared mode: any number of --shared holders at once, but never beside an exclusive one. A waiting exclusive holder keeps new shared ones out. There is no short form (the one flock uses names a server here). Not with --limit or --fence')
            [CompletionResult]::new('--supersede', '--supersede', [CompletionResultType]::ParameterName, 'Among waiters of NAME that all pass --supersede, a newer one replaces the older ones, as a CI concurrency group keeps one pending run: they leave the line at once and exit 81 (cancelled, not failed), naming who superseded them. A holder is never superseded, and waiters without it neither supersede nor are superseded. Not with --limit or --shared')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'redlock;release' {
            [CompletionResult]::new('-s', '-s', [CompletionResultType]::ParameterName, 'A Redis master, e.g. redis://host:6379; repeat it for N masters')
            [CompletionResult]::new('--server', '--server', [CompletionResultType]::ParameterName, 'A Redis master, e.g. redis://host:6379; repeat it for N masters')
            [CompletionResult]::new('--servers-file', '--servers-file', [CompletionResultType]::ParameterName, 'A file of server URLs, one a line, if no -s or $REDLOCK_SERVERS')
            [CompletionResult]::new('--config-file', '--config-file', [CompletionResultType]::ParameterName, 'A file of settings: restart-guard, server-timeout, prefix, name-key')
            [CompletionResult]::new('--server-timeout', '--server-timeout', [CompletionResultType]::ParameterName, 'Bound on each connect and reply [default: 250ms]')
            [CompletionResult]::new('--restart-guard', '--restart-guard', [CompletionResultType]::ParameterName, 'Skip servers restarted less than DUR ago [default: 30s]')
            [CompletionResult]::new('--tls-ca-cert', '--tls-ca-cert', [CompletionResultType]::ParameterName, 'The CA certificate (PEM) of rediss:// servers')
            [CompletionResult]::new('--prefix', '--prefix', [CompletionResultType]::ParameterName, 'Prepended to the lock names to form the Redis keys')
            [CompletionResult]::new('--if-token', '--if-token', [CompletionResultType]::ParameterName, 'With --force: break the lock only while TOKEN still holds it (the token status showed for the dead holder), never a holder that took it since')
            [CompletionResult]::new('--limit', '--limit', [CompletionResultType]::ParameterName, 'NAME is a counting semaphore: up to K holders at once, each in one of the slots NAME#0 … NAME#K-1 (K from 1 to 256). acquire and exec take any free slot (exec gives the command REDLOCK_SLOT), release and extend find the slot TOKEN holds, status shows every slot. Every client of NAME must pass the same K: the servers record it, and refuse another (exit 78) until the last slot''s TTL has passed')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print the result as one JSON object')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'No message when TOKEN does not hold the lock; the exit status tells')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'No message when TOKEN does not hold the lock; the exit status tells')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Describe each step on stderr: servers, timings, validity')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Describe each step on stderr: servers, timings, validity')
            [CompletionResult]::new('--hex', '--hex', [CompletionResultType]::ParameterName, 'NAME is the name''s bytes in hex, as `name_hex` in --json output gives a name that is not UTF-8')
            [CompletionResult]::new('--force', '--force', [CompletionResultType]::ParameterName, 'Delete the lock whoever holds it, without a token: for a stale lock whose holder is known to be dead, never to hurry a live one')
            [CompletionResult]::new('--done', '--done', [CompletionResultType]::ParameterName, 'With --force: delete the done mark of --once-per or --once beside the lock, so that the job can run again in this period (or for this key); the lock itself is left alone')
            [CompletionResult]::new('--any-key', '--any-key', [CompletionResultType]::ParameterName, 'With --force: break a string key that does not look like a lock too (one without expiry, with a value longer than any token, or neither a redlock token nor beside a holder record: a lock another Redlock client took, say)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'redlock;done' {
            [CompletionResult]::new('-s', '-s', [CompletionResultType]::ParameterName, 'A Redis master, e.g. redis://host:6379; repeat it for N masters')
            [CompletionResult]::new('--server', '--server', [CompletionResultType]::ParameterName, 'A Redis master, e.g. redis://host:6379; repeat it for N masters')
            [CompletionResult]::new('--servers-file', '--servers-file', [CompletionResultType]::ParameterName, 'A file of server URLs, one a line, if no -s or $REDLOCK_SERVERS')
            [CompletionResult]::new('--config-file', '--config-file', [CompletionResultType]::ParameterName, 'A file of settings: restart-guard, server-timeout, prefix, name-key')
            [CompletionResult]::new('--server-timeout', '--server-timeout', [CompletionResultType]::ParameterName, 'Bound on each connect and reply [default: 250ms]')
            [CompletionResult]::new('--restart-guard', '--restart-guard', [CompletionResultType]::ParameterName, 'Skip servers restarted less than DUR ago [default: 30s]')
            [CompletionResult]::new('--tls-ca-cert', '--tls-ca-cert', [CompletionResultType]::ParameterName, 'The CA certificate (PEM) of rediss:// servers')
            [CompletionResult]::new('--prefix', '--prefix', [CompletionResultType]::ParameterName, 'Prepended to the lock names to form the Redis keys')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print the result as one JSON object')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'No message when TOKEN does not hold the lock; the exit status tells')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'No message when TOKEN does not hold the lock; the exit status tells')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Describe each step on stderr: servers, timings, validity')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Describe each step on stderr: servers, timings, validity')
            [CompletionResult]::new('--hex', '--hex', [CompletionResultType]::ParameterName, 'NAME is the name''s bytes in hex, as `name_hex` in --json output gives a name that is not UTF-8')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'redlock;extend' {
            [CompletionResult]::new('-s', '-s', [CompletionResultType]::ParameterName, 'A Redis master, e.g. redis://host:6379; repeat it for N masters')
            [CompletionResult]::new('--server', '--server', [CompletionResultType]::ParameterName, 'A Redis master, e.g. redis://host:6379; repeat it for N masters')
            [CompletionResult]::new('--servers-file', '--servers-file', [CompletionResultType]::ParameterName, 'A file of server URLs, one a line, if no -s or $REDLOCK_SERVERS')
            [CompletionResult]::new('--config-file', '--config-file', [CompletionResultType]::ParameterName, 'A file of settings: restart-guard, server-timeout, prefix, name-key')
            [CompletionResult]::new('--server-timeout', '--server-timeout', [CompletionResultType]::ParameterName, 'Bound on each connect and reply [default: 250ms, or --ttl/5]')
            [CompletionResult]::new('--restart-guard', '--restart-guard', [CompletionResultType]::ParameterName, 'Skip servers restarted less than DUR ago; caps --ttl [default: 30s]')
            [CompletionResult]::new('--tls-ca-cert', '--tls-ca-cert', [CompletionResultType]::ParameterName, 'The CA certificate (PEM) of rediss:// servers')
            [CompletionResult]::new('--prefix', '--prefix', [CompletionResultType]::ParameterName, 'Prepended to the lock names to form the Redis keys')
            [CompletionResult]::new('--ttl', '--ttl', [CompletionResultType]::ParameterName, 'How long the lock lives on the servers unless extended or released, e.g. 30s, 1m30s, 250ms or 2.5 (seconds); at most the restart guard (--restart-guard)')
            [CompletionResult]::new('--limit', '--limit', [CompletionResultType]::ParameterName, 'NAME is a counting semaphore: up to K holders at once, each in one of the slots NAME#0 … NAME#K-1 (K from 1 to 256). acquire and exec take any free slot (exec gives the command REDLOCK_SLOT), release and extend find the slot TOKEN holds, status shows every slot. Every client of NAME must pass the same K: the servers record it, and refuse another (exit 78) until the last slot''s TTL has passed')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print the result as one JSON object')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'No message when TOKEN does not hold the lock; the exit status tells')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'No message when TOKEN does not hold the lock; the exit status tells')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Describe each step on stderr: servers, timings, validity')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Describe each step on stderr: servers, timings, validity')
            [CompletionResult]::new('--hex', '--hex', [CompletionResultType]::ParameterName, 'NAME is the name''s bytes in hex, as `name_hex` in --json output gives a name that is not UTF-8')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'redlock;status' {
            [CompletionResult]::new('-s', '-s', [CompletionResultType]::ParameterName, 'A Redis master, e.g. redis://host:6379; repeat it for N masters')
            [CompletionResult]::new('--server', '--server', [CompletionResultType]::ParameterName, 'A Redis master, e.g. redis://host:6379; repeat it for N masters')
            [CompletionResult]::new('--servers-file', '--servers-file', [CompletionResultType]::ParameterName, 'A file of server URLs, one a line, if no -s or $REDLOCK_SERVERS')
            [CompletionResult]::new('--config-file', '--config-file', [CompletionResultType]::ParameterName, 'A file of settings: restart-guard, server-timeout, prefix, name-key')
            [CompletionResult]::new('--server-timeout', '--server-timeout', [CompletionResultType]::ParameterName, 'Bound on each connect and reply [default: 250ms]')
            [CompletionResult]::new('--restart-guard', '--restart-guard', [CompletionResultType]::ParameterName, 'Skip servers restarted less than DUR ago [default: 30s]')
            [CompletionResult]::new('--tls-ca-cert', '--tls-ca-cert', [CompletionResultType]::ParameterName, 'The CA certificate (PEM) of rediss:// servers')
            [CompletionResult]::new('--prefix', '--prefix', [CompletionResultType]::ParameterName, 'Prepended to the lock names to form the Redis keys')
            [CompletionResult]::new('--limit', '--limit', [CompletionResultType]::ParameterName, 'NAME is a counting semaphore: up to K holders at once, each in one of the slots NAME#0 … NAME#K-1 (K from 1 to 256). acquire and exec take any free slot (exec gives the command REDLOCK_SLOT), release and extend find the slot TOKEN holds, status shows every slot. Every client of NAME must pass the same K: the servers record it, and refuse another (exit 78) until the last slot''s TTL has passed')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print the holder and every server''s view as one JSON object')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'No table; the exit status tells (0 held, 1 free)')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'No table; the exit status tells (0 held, 1 free)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Describe each step on stderr: servers, timings, validity')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Describe each step on stderr: servers, timings, validity')
            [CompletionResult]::new('--hex', '--hex', [CompletionResultType]::ParameterName, 'NAME is the name''s bytes in hex, as `name_hex` in --json output gives a name that is not UTF-8')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'redlock;list' {
            [CompletionResult]::new('-s', '-s', [CompletionResultType]::ParameterName, 'A Redis master, e.g. redis://host:6379; repeat it for N masters')
            [CompletionResult]::new('--server', '--server', [CompletionResultType]::ParameterName, 'A Redis master, e.g. redis://host:6379; repeat it for N masters')
            [CompletionResult]::new('--servers-file', '--servers-file', [CompletionResultType]::ParameterName, 'A file of server URLs, one a line, if no -s or $REDLOCK_SERVERS')
            [CompletionResult]::new('--config-file', '--config-file', [CompletionResultType]::ParameterName, 'A file of settings: restart-guard, server-timeout, prefix, name-key')
            [CompletionResult]::new('--server-timeout', '--server-timeout', [CompletionResultType]::ParameterName, 'Bound on each connect and reply [default: 250ms]')
            [CompletionResult]::new('--restart-guard', '--restart-guard', [CompletionResultType]::ParameterName, 'Skip servers restarted less than DUR ago [default: 30s]')
            [CompletionResult]::new('--tls-ca-cert', '--tls-ca-cert', [CompletionResultType]::ParameterName, 'The CA certificate (PEM) of rediss:// servers')
            [CompletionResult]::new('--prefix', '--prefix', [CompletionResultType]::ParameterName, 'Prepended to the lock names to form the Redis keys')
            [CompletionResult]::new('--older-than', '--older-than', [CompletionResultType]::ParameterName, 'Only locks held for longer than DUR (30m, 2h), by the age redlock records beside each lock; locks without such a record (taken by other Redlock clients) have no known age and are left out')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print the locks as one JSON object')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'No table, only errors')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'No table, only errors')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Describe each step on stderr: servers, timings, validity')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Describe each step on stderr: servers, timings, validity')
            [CompletionResult]::new('--names', '--names', [CompletionResultType]::ParameterName, 'Print only the names, one a line, escaped as the table shows them but without quotes: no header, no other column. For scripts and shell completion')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'redlock;exec' {
            [CompletionResult]::new('-s', '-s', [CompletionResultType]::ParameterName, 'A Redis master, e.g. redis://host:6379; repeat it for N masters')
            [CompletionResult]::new('--server', '--server', [CompletionResultType]::ParameterName, 'A Redis master, e.g. redis://host:6379; repeat it for N masters')
            [CompletionResult]::new('--servers-file', '--servers-file', [CompletionResultType]::ParameterName, 'A file of server URLs, one a line, if no -s or $REDLOCK_SERVERS')
            [CompletionResult]::new('--config-file', '--config-file', [CompletionResultType]::ParameterName, 'A file of settings: restart-guard, server-timeout, prefix, name-key')
            [CompletionResult]::new('--server-timeout', '--server-timeout', [CompletionResultType]::ParameterName, 'Bound on each connect and reply [default: 250ms, or --ttl/5]')
            [CompletionResult]::new('--restart-guard', '--restart-guard', [CompletionResultType]::ParameterName, 'Skip servers restarted less than DUR ago; caps --ttl [default: 30s]')
            [CompletionResult]::new('--tls-ca-cert', '--tls-ca-cert', [CompletionResultType]::ParameterName, 'The CA certificate (PEM) of rediss:// servers')
            [CompletionResult]::new('--prefix', '--prefix', [CompletionResultType]::ParameterName, 'Prepended to the lock names to form the Redis keys')
            [CompletionResult]::new('--ttl', '--ttl', [CompletionResultType]::ParameterName, 'How long the lock lives on the servers unless extended or released, e.g. 30s, 1m30s, 250ms or 2.5 (seconds); at most the restart guard (--restart-guard)')
            [CompletionResult]::new('-w', '-w', [CompletionResultType]::ParameterName, 'Retry for at most DUR, then exit with the last attempt''s status: 75 busy, 69 no quorum (-w 0 is -n)')
            [CompletionResult]::new('--wait', '--wait', [CompletionResultType]::ParameterName, 'Retry for at most DUR, then exit with the last attempt''s status: 75 busy, 69 no quorum (-w 0 is -n)')
            [CompletionResult]::new('-E', '-E ', [CompletionResultType]::ParameterName, 'Exit with CODE instead of 75 when the lock is busy (or the -w wait ran out), without running the command; -E 0 skips quietly, the cron idiom (the default of -n with --once-per or --once)')
            [CompletionResult]::new('--conflict-exit-code', '--conflict-exit-code', [CompletionResultType]::ParameterName, 'Exit with CODE instead of 75 when the lock is busy (or the -w wait ran out), without running the command; -E 0 skips quietly, the cron idiom (the default of -n with --once-per or --once)')
            [CompletionResult]::new('-m', '-m', [CompletionResultType]::ParameterName, 'A note recorded beside the lock while it is held, shown by `status` and to whoever finds it busy, e.g. -m "rolling out v2.3"')
            [CompletionResult]::new('--message', '--message', [CompletionResultType]::ParameterName, 'A note recorded beside the lock while it is held, shown by `status` and to whoever finds it busy, e.g. -m "rolling out v2.3"')
            [CompletionResult]::new('--limit', '--limit', [CompletionResultType]::ParameterName, 'NAME is a counting semaphore: up to K holders at once, each in one of the slots NAME#0 … NAME#K-1 (K from 1 to 256). acquire and exec take any free slot (exec gives the command REDLOCK_SLOT), release and extend find the slot TOKEN holds, status shows every slot. Every client of NAME must pass the same K: the servers record it, and refuse another (exit 78) until the last slot''s TTL has passed')
            [CompletionResult]::new('--once-per', '--once-per', [CompletionResultType]::ParameterName, 'Run at most once per period of DUR across every host: a run that succeeded marks the period done on the servers (exec: its command exited 0; acquire: `redlock done`), and any later run in it skips with a line naming the host, pid, time and status (exec exits 0, acquire 80). Periods are counted on the servers'' clock from the Unix epoch in UTC (1d runs from 00:00 UTC); @HH:MM shifts them (1d@02:00). A run that fails, is killed or loses the lock marks nothing. Not with --limit or --shared')
            [CompletionResult]::new('--once', '--once', [CompletionResultType]::ParameterName, 'Run at most once for KEY (a release, a pipeline id) across every host, as --once-per does for a period; the mark is kept 30 days, and a run with another KEY replaces it. Not with --limit or --shared')
            [CompletionResult]::new('-k', '-k', [CompletionResultType]::ParameterName, 'After the stop signal, wait this long before SIGKILL; capped at a third of --ttl so that the kill always lands before the lock can lapse')
            [CompletionResult]::new('--kill-after', '--kill-after', [CompletionResultType]::ParameterName, 'After the stop signal, wait this long before SIGKILL; capped at a third of --ttl so that the kill always lands before the lock can lapse')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Stop the command (the stop signal, then SIGKILL after --kill-after) and release the lock if it still runs this long after it started, counting what it leaves behind; exec then exits 124, as timeout(1) does')
            [CompletionResult]::new('--signal', '--signal', [CompletionResultType]::ParameterName, 'The signal that asks the command to stop when the lock is lost, e.g. TERM, SIGINT or 2')
            [CompletionResult]::new('--serial', '--serial', [CompletionResultType]::ParameterName, 'With --supersede: "newer" is this number instead of the order of arrival, e.g. GitHub''s run_number or GitLab''s CI_PIPELINE_IID, so that a re-run of an old pipeline arriving last is itself superseded at once')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Run STRING with `sh -c` instead of CMD')
            [CompletionResult]::new('--command', '--command', [CompletionResultType]::ParameterName, 'Run STRING with `sh -c` instead of CMD')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'No message when the lock is busy or done; the exit status tells')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'No message when the lock is busy or done; the exit status tells')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Describe each step on stderr: servers, timings, validity')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Describe each step on stderr: servers, timings, validity')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Fail at once (exit 75) if the lock is held')
            [CompletionResult]::new('--nonblock', '--nonblock', [CompletionResultType]::ParameterName, 'Fail at once (exit 75) if the lock is held')
            [CompletionResult]::new('--record-command', '--record-command', [CompletionResultType]::ParameterName, 'Record the command line beside the lock (redacted of the usual forms of secrets), where anyone who can read the servers sees it. Without it, the record names only the program and how many arguments it has')
            [CompletionResult]::new('--fence', '--fence', [CompletionResultType]::ParameterName, 'Give the command a fencing token in REDLOCK_FENCE: a number that increases strictly from each holder of NAME to the next (see acquire --fence). Not with --limit')
            [CompletionResult]::new('--shared', '--shared', [CompletionResultType]::ParameterName, 'Take the lock shared, as flock''s shared mode: any number of --shared holders at once, but never beside an exclusive one. A waiting exclusive holder keeps new shared ones out. There is no short form (the one flock uses names a server here). Not with --limit or --fence')
            [CompletionResult]::new('--supersede', '--supersede', [CompletionResultType]::ParameterName, 'Among waiters of NAME that all pass --supersede, a newer one replaces the older ones, as a CI concurrency group keeps one pending run: they leave the line at once and exit 81 (cancelled, not failed), naming who superseded them. A holder is never superseded, and waiters without it neither supersede nor are superseded. Not with --limit or --shared')
            [CompletionResult]::new('--cancel-in-progress', '--cancel-in-progress', [CompletionResultType]::ParameterName, '--supersede, and also stop a running holder of NAME that passed --cancel-in-progress and is older: its command gets the stop signal (then SIGKILL after --kill-after), and it exits 81 (cancelled). This run takes the lock only once that holder has released it. A holder without the flag is never stopped')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'redlock;doctor' {
            [CompletionResult]::new('-s', '-s', [CompletionResultType]::ParameterName, 'A Redis master, e.g. redis://host:6379; repeat it for N masters')
            [CompletionResult]::new('--server', '--server', [CompletionResultType]::ParameterName, 'A Redis master, e.g. redis://host:6379; repeat it for N masters')
            [CompletionResult]::new('--servers-file', '--servers-file', [CompletionResultType]::ParameterName, 'A file of server URLs, one a line, if no -s or $REDLOCK_SERVERS')
            [CompletionResult]::new('--config-file', '--config-file', [CompletionResultType]::ParameterName, 'A file of settings: restart-guard, server-timeout, prefix, name-key')
            [CompletionResult]::new('--server-timeout', '--server-timeout', [CompletionResultType]::ParameterName, 'Bound on each connect and reply [default: 250ms]')
            [CompletionResult]::new('--restart-guard', '--restart-guard', [CompletionResultType]::ParameterName, 'Skip servers restarted less than DUR ago [default: 30s]')
            [CompletionResult]::new('--tls-ca-cert', '--tls-ca-cert', [CompletionResultType]::ParameterName, 'The CA certificate (PEM) of rediss:// servers')
            [CompletionResult]::new('--prefix', '--prefix', [CompletionResultType]::ParameterName, 'Prepended to the lock names to form the Redis keys')
            [CompletionResult]::new('--ttl', '--ttl', [CompletionResultType]::ParameterName, 'The TTL the locks on these servers use: the servers'' clocks must agree within 1% of it')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print the result as one JSON object')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'No table, only errors')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'No table, only errors')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Describe each step on stderr: servers, timings, validity')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Describe each step on stderr: servers, timings, validity')
            [CompletionResult]::new('--single', '--single', [CompletionResultType]::ParameterName, 'Accept single-instance semantics: one server, which is no failure-tolerant Redlock, is then no finding')
            [CompletionResult]::new('--strict', '--strict', [CompletionResultType]::ParameterName, 'Count warnings too: exit 1 when there is any')
            [CompletionResult]::new('--accept-replicas', '--accept-replicas', [CompletionResultType]::ParameterName, 'Accept masters with replicas attached: you know that no failover promotes a replica behind a master''s address sooner than the longest TTL after the master stopped (a delayed failover), or at all (replicas for backups or reads)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'redlock;help' {
            [CompletionResult]::new('acquire', 'acquire', [CompletionResultType]::ParameterValue, 'Take the lock and print its token on stdout. Blocks until the lock is free unless -n or -w is given')
            [CompletionResult]::new('release', 'release', [CompletionResultType]::ParameterValue, 'Release the lock, if TOKEN still holds it; with --force, whoever holds it')
            [CompletionResult]::new('done', 'done', [CompletionResultType]::ParameterValue, 'Mark the run of acquire --once-per or --once done, while TOKEN still holds the lock: any later run in its period (or for its key) is done already (acquire exits 80, exec skips). Release the lock afterwards')
            [CompletionResult]::new('extend', 'extend', [CompletionResultType]::ParameterValue, 'Push the lock''s expiry out to --ttl from now, if TOKEN still holds it. A lock that already expired is never re-created')
            [CompletionResult]::new('status', 'status', [CompletionResultType]::ParameterValue, 'Show who holds the lock, for how long and until when, and what every server holds. Exits 0 when a majority holds it, 1 when it is free')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List the locks on the servers (under --prefix) with their holders, as a majority sees them')
            [CompletionResult]::new('exec', 'exec', [CompletionResultType]::ParameterValue, 'Run a command while holding the lock, extending the lock while it runs and stopping the command before the lock can lapse')
            [CompletionResult]::new('doctor', 'doctor', [CompletionResultType]::ParameterValue, 'Check the servers against what Redlock''s safety rests on: masters, distinct, enough of them, no eviction, persistence or the restart guard, clocks, round trips, cluster mode, ACLs, and what the restart guard cannot see: replicas, servers behind one address, DEBUG, a shared server. Exits 0 when nothing is unsafe, 1 when something is (with --strict, a warning too), 69 when too few servers answer')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'redlock;help;acquire' {
            break
        }
        'redlock;help;release' {
            break
        }
        'redlock;help;done' {
            break
        }
        'redlock;help;extend' {
            break
        }
        'redlock;help;status' {
            break
        }
        'redlock;help;list' {
            break
        }
        'redlock;help;exec' {
            break
        }
        'redlock;help;doctor' {
            break
        }
        'redlock;help;help' {
            break
        }
    })

    $completions.Where{ $_.CompletionText -like "$wordToComplete*" } |
        Sort-Object -Property ListItemText
}
