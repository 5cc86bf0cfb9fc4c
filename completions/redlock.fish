# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_redlock_global_optspecs
    string join \n s/server= servers-file= config-file= server-timeout= restart-guard= tls-ca-cert= prefix= json q/quiet v/verbose h/help V/version
end

function __fish_redlock_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_redlock_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_redlock_using_subcommand
    set -l cmd (__fish_redlock_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c redlock -n "__fish_redlock_needs_command" -s s -l server -d 'A Redis master: redis://[user:pass@]host[:port][/db], rediss:// for TLS, or redis+unix:///path[?db=N&pass=P]. Repeat it or separate URLs with commas for N masters; a bare host[:port] means redis:// (port 6379), e.g. -s localhost for one local Redis. Without it: REDLOCK_SERVERS (the same list), then a servers file (--servers-file); there is no default server' -r
complete -c redlock -n "__fish_redlock_needs_command" -l servers-file -d 'A file of server URLs, one per line (# starts a comment line); used when neither -s nor REDLOCK_SERVERS names servers. Without it, $XDG_CONFIG_HOME/redlock/servers, then /etc/redlock/servers, are used if they exist; one that exists but cannot be read is an error' -r -F
complete -c redlock -n "__fish_redlock_needs_command" -l config-file -d 'A file of settings for every client of these servers, one `name = value` a line: restart-guard, server-timeout, prefix, name-key (# starts a comment line). A flag or its variable wins over it. Without it, $XDG_CONFIG_HOME/redlock/config, then /etc/redlock/config, are used if they exist (the first one, whole)' -r -F
complete -c redlock -n "__fish_redlock_needs_command" -l server-timeout -d 'Bound for connecting to each server and for each reply. Default: server-timeout in the config file, else 250ms or a fifth of --ttl when that is shorter; a value given must be below a third of --ttl' -r
complete -c redlock -n "__fish_redlock_needs_command" -l restart-guard -d 'Do not count a server that started less than DUR ago toward a quorum: it may have lost the locks it held. A --ttl longer than the guard is refused; 0 turns the guard off, and that limit with it. Give every client of these servers the same guard (the config file). [default: restart-guard in the config file, else 30s]' -r
complete -c redlock -n "__fish_redlock_needs_command" -l tls-ca-cert -d 'PEM file of the CA that signed the servers\' certificates, for rediss:// URLs (instead of the system\'s roots)' -r -F
complete -c redlock -n "__fish_redlock_needs_command" -l prefix -d 'Prepended to every lock name to form the Redis key. [default: prefix in the config file, else empty]' -r
complete -c redlock -n "__fish_redlock_needs_command" -l json -d 'Print a result as one JSON object on stdout'
complete -c redlock -n "__fish_redlock_needs_command" -s q -l quiet -d 'Print nothing but errors: no messages about expected outcomes (busy, free, not held) and no status table; the exit code tells'
complete -c redlock -n "__fish_redlock_needs_command" -s v -l verbose -d 'Describe each step on stderr: servers, timings, validity'
complete -c redlock -n "__fish_redlock_needs_command" -s h -l help -d 'Print help'
complete -c redlock -n "__fish_redlock_needs_command" -s V -l version -d 'Print version'
complete -c redlock -n "__fish_redlock_needs_command" -f -a "acquire" -d 'Take the lock and print its token on stdout. Blocks until the lock is free unless -n or -w is given'
complete -c redlock -n "__fish_redlock_needs_command" -f -a "release" -d 'Release the lock, if TOKEN still holds it; with --force, whoever holds it'
complete -c redlock -n "__fish_redlock_needs_command" -f -a "done" -d 'Mark the run of acquire --once-per or --once done, while TOKEN still holds the lock: any later run in its period (or for its key) is done already (acquire exits 80, exec skips). Release the lock afterwards'
complete -c redlock -n "__fish_redlock_needs_command" -f -a "extend" -d 'Push the lock\'s expiry out to --ttl from now, if TOKEN still holds it. A lock that already expired is never re-created'
complete -c redlock -n "__fish_redlock_needs_command" -f -a "status" -d 'Show who holds the lock, for how long and until when, and what every server holds. Exits 0 when a majority holds it, 1 when it is free'
complete -c redlock -n "__fish_redlock_needs_command" -f -a "list" -d 'List the locks on the servers (under --prefix) with their holders, as a majority sees them'
complete -c redlock -n "__fish_redlock_needs_command" -f -a "exec" -d 'Run a command while holding the lock, extending the lock while it runs and stopping the command before the lock can lapse'
complete -c redlock -n "__fish_redlock_needs_command" -f -a "doctor" -d 'Check the servers against what Redlock\'s safety rests on: masters, distinct, enough of them, no eviction, persistence or the restart guard, clocks, round trips, cluster mode, ACLs, and what the restart guard cannot see: replicas, servers behind one address, DEBUG, a shared server. Exits 0 when nothing is unsafe, 1 when something is (with --strict, a warning too), 69 when too few servers answer'
complete -c redlock -n "__fish_redlock_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c redlock -n "__fish_redlock_using_subcommand acquire" -s s -l server -d 'A Redis master, e.g. redis://host:6379; repeat it for N masters' -r
complete -c redlock -n "__fish_redlock_using_subcommand acquire" -l servers-file -d 'A file of server URLs, one a line, if no -s or $REDLOCK_SERVERS' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand acquire" -l config-file -d 'A file of settings: restart-guard, server-timeout, prefix, name-key' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand acquire" -l server-timeout -d 'Bound on each connect and reply [default: 250ms, or --ttl/5]' -r
complete -c redlock -n "__fish_redlock_using_subcommand acquire" -l restart-guard -d 'Skip servers restarted less than DUR ago; caps --ttl [default: 30s]' -r
complete -c redlock -n "__fish_redlock_using_subcommand acquire" -l tls-ca-cert -d 'The CA certificate (PEM) of rediss:// servers' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand acquire" -l prefix -d 'Prepended to the lock names to form the Redis keys' -r
complete -c redlock -n "__fish_redlock_using_subcommand acquire" -l ttl -d 'How long the lock lives on the servers unless extended or released, e.g. 30s, 1m30s, 250ms or 2.5 (seconds); at most the restart guard (--restart-guard)' -r
complete -c redlock -n "__fish_redlock_using_subcommand acquire" -s w -l wait -d 'Retry for at most DUR, then exit with the last attempt\'s status: 75 busy, 69 no quorum (-w 0 is -n)' -r
complete -c redlock -n "__fish_redlock_using_subcommand acquire" -s E -l conflict-exit-code -d 'Exit with CODE instead of 75 when the lock is busy (or the -w wait ran out); -E 0 skips quietly, the cron idiom (acquire then prints no token)' -r
complete -c redlock -n "__fish_redlock_using_subcommand acquire" -s m -l message -d 'A note recorded beside the lock while it is held, shown by `status` and to whoever finds it busy, e.g. -m "rolling out v2.3"' -r
complete -c redlock -n "__fish_redlock_using_subcommand acquire" -l limit -d 'NAME is a counting semaphore: up to K holders at once, each in one of the slots NAME#0 … NAME#K-1 (K from 1 to 256). acquire and exec take any free slot (exec gives the command REDLOCK_SLOT), release and extend find the slot TOKEN holds, status shows every slot. Every client of NAME must pass the same K: the servers record it, and refuse another (exit 78) until the last slot\'s TTL has passed' -r
complete -c redlock -n "__fish_redlock_using_subcommand acquire" -l once-per -d 'Run at most once per period of DUR across every host: a run that succeeded marks the period done on the servers (exec: its command exited 0; acquire: `redlock done`), and any later run in it skips with a line naming the host, pid, time and status (exec exits 0, acquire 80). Periods are counted on the servers\' clock from the Unix epoch in UTC (1d runs from 00:00 UTC); @HH:MM shifts them (1d@02:00). A run that fails, is killed or loses the lock marks nothing. Not with --limit or --shared' -r
complete -c redlock -n "__fish_redlock_using_subcommand acquire" -l once -d 'Run at most once for KEY (a release, a pipeline id) across every host, as --once-per does for a period; the mark is kept 30 days, and a run with another KEY replaces it. Not with --limit or --shared' -r
complete -c redlock -n "__fish_redlock_using_subcommand acquire" -l while -d 'Keep the lock while process PID lives: `tok=$(redlock acquire --while $$ NAME)` in a script. A keeper process extends the lock every third of --ttl, releases it once PID and what it left in its process group have exited, and stops quietly when `redlock release NAME "$tok"` runs on this host; if the lock is lost, PID gets --while-signal' -r
complete -c redlock -n "__fish_redlock_using_subcommand acquire" -l while-signal -d 'With --while: the signal sent to PID, and to its process group if it leads one, when the lock is lost, e.g. TERM, INT or USR1; none sends nothing' -r
complete -c redlock -n "__fish_redlock_using_subcommand acquire" -l serial -d 'With --supersede: "newer" is this number instead of the order of arrival, e.g. GitHub\'s run_number or GitLab\'s CI_PIPELINE_IID, so that a re-run of an old pipeline arriving last is itself superseded at once' -r
complete -c redlock -n "__fish_redlock_using_subcommand acquire" -l json -d 'Print the token and the lock\'s validity as one JSON object'
complete -c redlock -n "__fish_redlock_using_subcommand acquire" -s q -l quiet -d 'No message when the lock is busy or done; the exit status tells'
complete -c redlock -n "__fish_redlock_using_subcommand acquire" -s v -l verbose -d 'Describe each step on stderr: servers, timings, validity'
complete -c redlock -n "__fish_redlock_using_subcommand acquire" -l hex -d 'NAME is the name\'s bytes in hex, as `name_hex` in --json output gives a name that is not UTF-8'
complete -c redlock -n "__fish_redlock_using_subcommand acquire" -s n -l nonblock -d 'Fail at once (exit 75) if the lock is held'
complete -c redlock -n "__fish_redlock_using_subcommand acquire" -l fence -d 'Also hand out a fencing token: a number that increases strictly from each holder of NAME to the next, for storage to reject writes carrying a lower one. Printed after the token on the same line, `TOKEN FENCE` (`read -r tok fence`), or as "fence" with --json. Each server keeps a counter for NAME without expiry. Not with --limit: a semaphore\'s holders run at once, which a fence cannot order'
complete -c redlock -n "__fish_redlock_using_subcommand acquire" -l shared -d 'Take the lock shared, as flock\'s shared mode: any number of --shared holders at once, but never beside an exclusive one. A waiting exclusive holder keeps new shared ones out. There is no short form (the one flock uses names a server here). Not with --limit or --fence'
complete -c redlock -n "__fish_redlock_using_subcommand acquire" -l supersede -d 'Among waiters of NAME that all pass --supersede, a newer one replaces the older ones, as a CI concurrency group keeps one pending run: they leave the line at once and exit 81 (cancelled, not failed), naming who superseded them. A holder is never superseded, and waiters without it neither supersede nor are superseded. Not with --limit or --shared'
complete -c redlock -n "__fish_redlock_using_subcommand acquire" -s h -l help -d 'Print help'
complete -c redlock -n "__fish_redlock_using_subcommand acquire" -s V -l version -d 'Print version'
complete -c redlock -n "__fish_redlock_using_subcommand release" -s s -l server -d 'A Redis master, e.g. redis://host:6379; repeat it for N masters' -r
complete -c redlock -n "__fish_redlock_using_subcommand release" -l servers-file -d 'A file of server URLs, one a line, if no -s or $REDLOCK_SERVERS' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand release" -l config-file -d 'A file of settings: restart-guard, server-timeout, prefix, name-key' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand release" -l server-timeout -d 'Bound on each connect and reply [default: 250ms]' -r
complete -c redlock -n "__fish_redlock_using_subcommand release" -l restart-guard -d 'Skip servers restarted less than DUR ago [default: 30s]' -r
complete -c redlock -n "__fish_redlock_using_subcommand release" -l tls-ca-cert -d 'The CA certificate (PEM) of rediss:// servers' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand release" -l prefix -d 'Prepended to the lock names to form the Redis keys' -r
complete -c redlock -n "__fish_redlock_using_subcommand release" -l if-token -d 'With --force: break the lock only while TOKEN still holds it (the token status showed for the dead holder), never a holder that took it since' -r
complete -c redlock -n "__fish_redlock_using_subcommand release" -l limit -d 'NAME is a counting semaphore: up to K holders at once, each in one of the slots NAME#0 … NAME#K-1 (K from 1 to 256). acquire and exec take any free slot (exec gives the command REDLOCK_SLOT), release and extend find the slot TOKEN holds, status shows every slot. Every client of NAME must pass the same K: the servers record it, and refuse another (exit 78) until the last slot\'s TTL has passed' -r
complete -c redlock -n "__fish_redlock_using_subcommand release" -l json -d 'Print the result as one JSON object'
complete -c redlock -n "__fish_redlock_using_subcommand release" -s q -l quiet -d 'No message when TOKEN does not hold the lock; the exit status tells'
complete -c redlock -n "__fish_redlock_using_subcommand release" -s v -l verbose -d 'Describe each step on stderr: servers, timings, validity'
complete -c redlock -n "__fish_redlock_using_subcommand release" -l hex -d 'NAME is the name\'s bytes in hex, as `name_hex` in --json output gives a name that is not UTF-8'
complete -c redlock -n "__fish_redlock_using_subcommand release" -l force -d 'Delete the lock whoever holds it, without a token: for a stale lock whose holder is known to be dead, never to hurry a live one'
complete -c redlock -n "__fish_redlock_using_subcommand release" -l done -d 'With --force: delete the done mark of --once-per or --once beside the lock, so that the job can run again in this period (or for this key); the lock itself is left alone'
complete -c redlock -n "__fish_redlock_using_subcommand release" -l any-key -d 'With --force: break a string key that does not look like a lock too (one without expiry, with a value longer than any token, or neither a redlock token nor beside a holder record: a lock another Redlock client took, say)'
complete -c redlock -n "__fish_redlock_using_subcommand release" -s h -l help -d 'Print help'
complete -c redlock -n "__fish_redlock_using_subcommand release" -s V -l version -d 'Print version'
complete -c redlock -n "__fish_redlock_using_subcommand done" -s s -l server -d 'A Redis master, e.g. redis://host:6379; repeat it for N masters' -r
complete -c redlock -n "__fish_redlock_using_subcommand done" -l servers-file -d 'A file of server URLs, one a line, if no -s or $REDLOCK_SERVERS' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand done" -l config-file -d 'A file of settings: restart-guard, server-timeout, prefix, name-key' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand done" -l server-timeout -d 'Bound on each connect and reply [default: 250ms]' -r
complete -c redlock -n "__fish_redlock_using_subcommand done" -l restart-guard -d 'Skip servers restarted less than DUR ago [default: 30s]' -r
complete -c redlock -n "__fish_redlock_using_subcommand done" -l tls-ca-cert -d 'The CA certificate (PEM) of rediss:// servers' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand done" -l prefix -d 'Prepended to the lock names to form the Redis keys' -r
complete -c redlock -n "__fish_redlock_using_subcommand done" -l json -d 'Print the result as one JSON object'
complete -c redlock -n "__fish_redlock_using_subcommand done" -s q -l quiet -d 'No message when TOKEN does not hold the lock; the exit status tells'
complete -c redlock -n "__fish_redlock_using_subcommand done" -s v -l verbose -d 'Describe each step on stderr: servers, timings, validity'
complete -c redlock -n "__fish_redlock_using_subcommand done" -l hex -d 'NAME is the name\'s bytes in hex, as `name_hex` in --json output gives a name that is not UTF-8'
complete -c redlock -n "__fish_redlock_using_subcommand done" -s h -l help -d 'Print help'
complete -c redlock -n "__fish_redlock_using_subcommand done" -s V -l version -d 'Print version'
complete -c redlock -n "__fish_redlock_using_subcommand extend" -s s -l server -d 'A Redis master, e.g. redis://host:6379; repeat it for N masters' -r
complete -c redlock -n "__fish_redlock_using_subcommand extend" -l servers-file -d 'A file of server URLs, one a line, if no -s or $REDLOCK_SERVERS' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand extend" -l config-file -d 'A file of settings: restart-guard, server-timeout, prefix, name-key' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand extend" -l server-timeout -d 'Bound on each connect and reply [default: 250ms, or --ttl/5]' -r
complete -c redlock -n "__fish_redlock_using_subcommand extend" -l restart-guard -d 'Skip servers restarted less than DUR ago; caps --ttl [default: 30s]' -r
complete -c redlock -n "__fish_redlock_using_subcommand extend" -l tls-ca-cert -d 'The CA certificate (PEM) of rediss:// servers' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand extend" -l prefix -d 'Prepended to the lock names to form the Redis keys' -r
complete -c redlock -n "__fish_redlock_using_subcommand extend" -l ttl -d 'How long the lock lives on the servers unless extended or released, e.g. 30s, 1m30s, 250ms or 2.5 (seconds); at most the restart guard (--restart-guard)' -r
complete -c redlock -n "__fish_redlock_using_subcommand extend" -l limit -d 'NAME is a counting semaphore: up to K holders at once, each in one of the slots NAME#0 … NAME#K-1 (K from 1 to 256). acquire and exec take any free slot (exec gives the command REDLOCK_SLOT), release and extend find the slot TOKEN holds, status shows every slot. Every client of NAME must pass the same K: the servers record it, and refuse another (exit 78) until the last slot\'s TTL has passed' -r
complete -c redlock -n "__fish_redlock_using_subcommand extend" -l json -d 'Print the result as one JSON object'
complete -c redlock -n "__fish_redlock_using_subcommand extend" -s q -l quiet -d 'No message when TOKEN does not hold the lock; the exit status tells'
complete -c redlock -n "__fish_redlock_using_subcommand extend" -s v -l verbose -d 'Describe each step on stderr: servers, timings, validity'
complete -c redlock -n "__fish_redlock_using_subcommand extend" -l hex -d 'NAME is the name\'s bytes in hex, as `name_hex` in --json output gives a name that is not UTF-8'
complete -c redlock -n "__fish_redlock_using_subcommand extend" -s h -l help -d 'Print help'
complete -c redlock -n "__fish_redlock_using_subcommand extend" -s V -l version -d 'Print version'
complete -c redlock -n "__fish_redlock_using_subcommand status" -s s -l server -d 'A Redis master, e.g. redis://host:6379; repeat it for N masters' -r
complete -c redlock -n "__fish_redlock_using_subcommand status" -l servers-file -d 'A file of server URLs, one a line, if no -s or $REDLOCK_SERVERS' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand status" -l config-file -d 'A file of settings: restart-guard, server-timeout, prefix, name-key' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand status" -l server-timeout -d 'Bound on each connect and reply [default: 250ms]' -r
complete -c redlock -n "__fish_redlock_using_subcommand status" -l restart-guard -d 'Skip servers restarted less than DUR ago [default: 30s]' -r
complete -c redlock -n "__fish_redlock_using_subcommand status" -l tls-ca-cert -d 'The CA certificate (PEM) of rediss:// servers' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand status" -l prefix -d 'Prepended to the lock names to form the Redis keys' -r
complete -c redlock -n "__fish_redlock_using_subcommand status" -l limit -d 'NAME is a counting semaphore: up to K holders at once, each in one of the slots NAME#0 … NAME#K-1 (K from 1 to 256). acquire and exec take any free slot (exec gives the command REDLOCK_SLOT), release and extend find the slot TOKEN holds, status shows every slot. Every client of NAME must pass the same K: the servers record it, and refuse another (exit 78) until the last slot\'s TTL has passed' -r
complete -c redlock -n "__fish_redlock_using_subcommand status" -l json -d 'Print the holder and every server\'s view as one JSON object'
complete -c redlock -n "__fish_redlock_using_subcommand status" -s q -l quiet -d 'No table; the exit status tells (0 held, 1 free)'
complete -c redlock -n "__fish_redlock_using_subcommand status" -s v -l verbose -d 'Describe each step on stderr: servers, timings, validity'
complete -c redlock -n "__fish_redlock_using_subcommand status" -l hex -d 'NAME is the name\'s bytes in hex, as `name_hex` in --json output gives a name that is not UTF-8'
complete -c redlock -n "__fish_redlock_using_subcommand status" -s h -l help -d 'Print help'
complete -c redlock -n "__fish_redlock_using_subcommand status" -s V -l version -d 'Print version'
complete -c redlock -n "__fish_redlock_using_subcommand list" -s s -l server -d 'A Redis master, e.g. redis://host:6379; repeat it for N masters' -r
complete -c redlock -n "__fish_redlock_using_subcommand list" -l servers-file -d 'A file of server URLs, one a line, if no -s or $REDLOCK_SERVERS' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand list" -l config-file -d 'A file of settings: restart-guard, server-timeout, prefix, name-key' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand list" -l server-timeout -d 'Bound on each connect and reply [default: 250ms]' -r
complete -c redlock -n "__fish_redlock_using_subcommand list" -l restart-guard -d 'Skip servers restarted less than DUR ago [default: 30s]' -r
complete -c redlock -n "__fish_redlock_using_subcommand list" -l tls-ca-cert -d 'The CA certificate (PEM) of rediss:// servers' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand list" -l prefix -d 'Prepended to the lock names to form the Redis keys' -r
complete -c redlock -n "__fish_redlock_using_subcommand list" -l older-than -d 'Only locks held for longer than DUR (30m, 2h), by the age redlock records beside each lock; locks without such a record (taken by other Redlock clients) have no known age and are left out' -r
complete -c redlock -n "__fish_redlock_using_subcommand list" -l json -d 'Print the locks as one JSON object'
complete -c redlock -n "__fish_redlock_using_subcommand list" -s q -l quiet -d 'No table, only errors'
complete -c redlock -n "__fish_redlock_using_subcommand list" -s v -l verbose -d 'Describe each step on stderr: servers, timings, validity'
complete -c redlock -n "__fish_redlock_using_subcommand list" -l names -d 'Print only the names, one a line, escaped as the table shows them but without quotes: no header, no other column. For scripts and shell completion'
complete -c redlock -n "__fish_redlock_using_subcommand list" -s h -l help -d 'Print help'
complete -c redlock -n "__fish_redlock_using_subcommand list" -s V -l version -d 'Print version'
complete -c redlock -n "__fish_redlock_using_subcommand exec; and not __fish_redlock_in_exec_command" -s s -l server -d 'A Redis master, e.g. redis://host:6379; repeat it for N masters' -r
complete -c redlock -n "__fish_redlock_using_subcommand exec; and not __fish_redlock_in_exec_command" -l servers-file -d 'A file of server URLs, one a line, if no -s or $REDLOCK_SERVERS' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand exec; and not __fish_redlock_in_exec_command" -l config-file -d 'A file of settings: restart-guard, server-timeout, prefix, name-key' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand exec; and not __fish_redlock_in_exec_command" -l server-timeout -d 'Bound on each connect and reply [default: 250ms, or --ttl/5]' -r
complete -c redlock -n "__fish_redlock_using_subcommand exec; and not __fish_redlock_in_exec_command" -l restart-guard -d 'Skip servers restarted less than DUR ago; caps --ttl [default: 30s]' -r
complete -c redlock -n "__fish_redlock_using_subcommand exec; and not __fish_redlock_in_exec_command" -l tls-ca-cert -d 'The CA certificate (PEM) of rediss:// servers' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand exec; and not __fish_redlock_in_exec_command" -l prefix -d 'Prepended to the lock names to form the Redis keys' -r
complete -c redlock -n "__fish_redlock_using_subcommand exec; and not __fish_redlock_in_exec_command" -l ttl -d 'How long the lock lives on the servers unless extended or released, e.g. 30s, 1m30s, 250ms or 2.5 (seconds); at most the restart guard (--restart-guard)' -r
complete -c redlock -n "__fish_redlock_using_subcommand exec; and not __fish_redlock_in_exec_command" -s w -l wait -d 'Retry for at most DUR, then exit with the last attempt\'s status: 75 busy, 69 no quorum (-w 0 is -n)' -r
complete -c redlock -n "__fish_redlock_using_subcommand exec; and not __fish_redlock_in_exec_command" -s E -l conflict-exit-code -d 'Exit with CODE instead of 75 when the lock is busy (or the -w wait ran out), without running the command; -E 0 skips quietly, the cron idiom (the default of -n with --once-per or --once)' -r
complete -c redlock -n "__fish_redlock_using_subcommand exec; and not __fish_redlock_in_exec_command" -s m -l message -d 'A note recorded beside the lock while it is held, shown by `status` and to whoever finds it busy, e.g. -m "rolling out v2.3"' -r
complete -c redlock -n "__fish_redlock_using_subcommand exec; and not __fish_redlock_in_exec_command" -l limit -d 'NAME is a counting semaphore: up to K holders at once, each in one of the slots NAME#0 … NAME#K-1 (K from 1 to 256). acquire and exec take any free slot (exec gives the command REDLOCK_SLOT), release and extend find the slot TOKEN holds, status shows every slot. Every client of NAME must pass the same K: the servers record it, and refuse another (exit 78) until the last slot\'s TTL has passed' -r
complete -c redlock -n "__fish_redlock_using_subcommand exec; and not __fish_redlock_in_exec_command" -l once-per -d 'Run at most once per period of DUR across every host: a run that succeeded marks the period done on the servers (exec: its command exited 0; acquire: `redlock done`), and any later run in it skips with a line naming the host, pid, time and status (exec exits 0, acquire 80). Periods are counted on the servers\' clock from the Unix epoch in UTC (1d runs from 00:00 UTC); @HH:MM shifts them (1d@02:00). A run that fails, is killed or loses the lock marks nothing. Not with --limit or --shared' -r
complete -c redlock -n "__fish_redlock_using_subcommand exec; and not __fish_redlock_in_exec_command" -l once -d 'Run at most once for KEY (a release, a pipeline id) across every host, as --once-per does for a period; the mark is kept 30 days, and a run with another KEY replaces it. Not with --limit or --shared' -r
complete -c redlock -n "__fish_redlock_using_subcommand exec; and not __fish_redlock_in_exec_command" -s k -l kill-after -d 'After the stop signal, wait this long before SIGKILL; capped at a third of --ttl so that the kill always lands before the lock can lapse' -r
complete -c redlock -n "__fish_redlock_using_subcommand exec; and not __fish_redlock_in_exec_command" -l timeout -d 'Stop the command (the stop signal, then SIGKILL after --kill-after) and release the lock if it still runs this long after it started, counting what it leaves behind; exec then exits 124, as timeout(1) does' -r
complete -c redlock -n "__fish_redlock_using_subcommand exec; and not __fish_redlock_in_exec_command" -l signal -d 'The signal that asks the command to stop when the lock is lost, e.g. TERM, SIGINT or 2' -r -f -a "TERM\t''
INT\t''
HUP\t''
QUIT\t''
KILL\t''
USR1\t''
USR2\t''
ILL\t''
TRAP\t''
ABRT\t''
BUS\t''
FPE\t''
SEGV\t''
PIPE\t''
ALRM\t''
STKFLT\t''
XCPU\t''
XFSZ\t''
VTALRM\t''
PROF\t''
IO\t''
PWR\t''
SYS\t''"
complete -c redlock -n "__fish_redlock_using_subcommand exec; and not __fish_redlock_in_exec_command" -l serial -d 'With --supersede: "newer" is this number instead of the order of arrival, e.g. GitHub\'s run_number or GitLab\'s CI_PIPELINE_IID, so that a re-run of an old pipeline arriving last is itself superseded at once' -r
complete -c redlock -n "__fish_redlock_using_subcommand exec; and not __fish_redlock_in_exec_command" -s c -l command -d 'Run STRING with `sh -c` instead of CMD' -r
complete -c redlock -n "__fish_redlock_using_subcommand exec; and not __fish_redlock_in_exec_command" -s q -l quiet -d 'No message when the lock is busy or done; the exit status tells'
complete -c redlock -n "__fish_redlock_using_subcommand exec; and not __fish_redlock_in_exec_command" -s v -l verbose -d 'Describe each step on stderr: servers, timings, validity'
complete -c redlock -n "__fish_redlock_using_subcommand exec; and not __fish_redlock_in_exec_command" -s n -l nonblock -d 'Fail at once (exit 75) if the lock is held'
complete -c redlock -n "__fish_redlock_using_subcommand exec; and not __fish_redlock_in_exec_command" -l record-command -d 'Record the command line beside the lock (redacted of the usual forms of secrets), where anyone who can read the servers sees it. Without it, the record names only the program and how many arguments it has'
complete -c redlock -n "__fish_redlock_using_subcommand exec; and not __fish_redlock_in_exec_command" -l fence -d 'Give the command a fencing token in REDLOCK_FENCE: a number that increases strictly from each holder of NAME to the next (see acquire --fence). Not with --limit'
complete -c redlock -n "__fish_redlock_using_subcommand exec; and not __fish_redlock_in_exec_command" -l shared -d 'Take the lock shared, as flock\'s shared mode: any number of --shared holders at once, but never beside an exclusive one. A waiting exclusive holder keeps new shared ones out. There is no short form (the one flock uses names a server here). Not with --limit or --fence'
complete -c redlock -n "__fish_redlock_using_subcommand exec; and not __fish_redlock_in_exec_command" -l supersede -d 'Among waiters of NAME that all pass --supersede, a newer one replaces the older ones, as a CI concurrency group keeps one pending run: they leave the line at once and exit 81 (cancelled, not failed), naming who superseded them. A holder is never superseded, and waiters without it neither supersede nor are superseded. Not with --limit or --shared'
complete -c redlock -n "__fish_redlock_using_subcommand exec; and not __fish_redlock_in_exec_command" -l cancel-in-progress -d '--supersede, and also stop a running holder of NAME that passed --cancel-in-progress and is older: its command gets the stop signal (then SIGKILL after --kill-after), and it exits 81 (cancelled). This run takes the lock only once that holder has released it. A holder without the flag is never stopped'
complete -c redlock -n "__fish_redlock_using_subcommand exec; and not __fish_redlock_in_exec_command" -s h -l help -d 'Print help'
complete -c redlock -n "__fish_redlock_using_subcommand exec; and not __fish_redlock_in_exec_command" -s V -l version -d 'Print version'
complete -c redlock -n "__fish_redlock_using_subcommand doctor" -s s -l server -d 'A Redis master, e.g. redis://host:6379; repeat it for N masters' -r
complete -c redlock -n "__fish_redlock_using_subcommand doctor" -l servers-file -d 'A file of server URLs, one a line, if no -s or $REDLOCK_SERVERS' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand doctor" -l config-file -d 'A file of settings: restart-guard, server-timeout, prefix, name-key' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand doctor" -l server-timeout -d 'Bound on each connect and reply [default: 250ms]' -r
complete -c redlock -n "__fish_redlock_using_subcommand doctor" -l restart-guard -d 'Skip servers restarted less than DUR ago [default: 30s]' -r
complete -c redlock -n "__fish_redlock_using_subcommand doctor" -l tls-ca-cert -d 'The CA certificate (PEM) of rediss:// servers' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand doctor" -l prefix -d 'Prepended to the lock names to form the Redis keys' -r
complete -c redlock -n "__fish_redlock_using_subcommand doctor" -l ttl -d 'The TTL the locks on these servers use: the servers\' clocks must agree within 1% of it' -r
complete -c redlock -n "__fish_redlock_using_subcommand doctor" -l json -d 'Print the result as one JSON object'
complete -c redlock -n "__fish_redlock_using_subcommand doctor" -s q -l quiet -d 'No table, only errors'
complete -c redlock -n "__fish_redlock_using_subcommand doctor" -s v -l verbose -d 'Describe each step on stderr: servers, timings, validity'
complete -c redlock -n "__fish_redlock_using_subcommand doctor" -l single -d 'Accept single-instance semantics: one server, which is no failure-tolerant Redlock, is then no finding'
complete -c redlock -n "__fish_redlock_using_subcommand doctor" -l strict -d 'Count warnings too: exit 1 when there is any'
complete -c redlock -n "__fish_redlock_using_subcommand doctor" -l accept-replicas -d 'Accept masters with replicas attached: you know that no failover promotes a replica behind a master\'s address sooner than the longest TTL after the master stopped (a delayed failover), or at all (replicas for backups or reads)'
complete -c redlock -n "__fish_redlock_using_subcommand doctor" -s h -l help -d 'Print help'
complete -c redlock -n "__fish_redlock_using_subcommand doctor" -s V -l version -d 'Print version'
complete -c redlock -n "__fish_redlock_using_subcommand help; and not __fish_seen_subcommand_from acquire release done extend status list exec doctor help" -f -a "acquire" -d 'Take the lock and print its token on stdout. Blocks until the lock is free unless -n or -w is given'
complete -c redlock -n "__fish_redlock_using_subcommand help; and not __fish_seen_subcommand_from acquire release done extend status list exec doctor help" -f -a "release" -d 'Release the lock, if TOKEN still holds it; with --force, whoever holds it'
complete -c redlock -n "__fish_redlock_using_subcommand help; and not __fish_seen_subcommand_from acquire release done extend status list exec doctor help" -f -a "done" -d 'Mark the run of acquire --once-per or --once done, while TOKEN still holds the lock: any later run in its period (or for its key) is done already (acquire exits 80, exec skips). Release the lock afterwards'
complete -c redlock -n "__fish_redlock_using_subcommand help; and not __fish_seen_subcommand_from acquire release done extend status list exec doctor help" -f -a "extend" -d 'Push the lock\'s expiry out to --ttl from now, if TOKEN still holds it. A lock that already expired is never re-created'
complete -c redlock -n "__fish_redlock_using_subcommand help; and not __fish_seen_subcommand_from acquire release done extend status list exec doctor help" -f -a "status" -d 'Show who holds the lock, for how long and until when, and what every server holds. Exits 0 when a majority holds it, 1 when it is free'
complete -c redlock -n "__fish_redlock_using_subcommand help; and not __fish_seen_subcommand_from acquire release done extend status list exec doctor help" -f -a "list" -d 'List the locks on the servers (under --prefix) with their holders, as a majority sees them'
complete -c redlock -n "__fish_redlock_using_subcommand help; and not __fish_seen_subcommand_from acquire release done extend status list exec doctor help" -f -a "exec" -d 'Run a command while holding the lock, extending the lock while it runs and stopping the command before the lock can lapse'
complete -c redlock -n "__fish_redlock_using_subcommand help; and not __fish_seen_subcommand_from acquire release done extend status list exec doctor help" -f -a "doctor" -d 'Check the servers against what Redlock\'s safety rests on: masters, distinct, enough of them, no eviction, persistence or the restart guard, clocks, round trips, cluster mode, ACLs, and what the restart guard cannot see: replicas, servers behind one address, DEBUG, a shared server. Exits 0 when nothing is unsafe, 1 when something is (with --strict, a warning too), 69 when too few servers answer'
complete -c redlock -n "__fish_redlock_using_subcommand help; and not __fish_seen_subcommand_from acquire release done extend status list exec doctor help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'

# Added by redlock to clap's completion: the command that `redlock exec` runs
# is completed as a command line of its own, both after `--` and after NAME
# (`redlock exec NAME CMD ...`); a lock NAME is completed from
# `redlock list --names`. The completions above stand aside while the
# command is being completed.

# Reads the words before the one being completed, as redlock parses them,
# and prints: the subcommand, how many of its arguments came before, whether
# the word is an option's value (1) or not (0), whether a `--` came (1 or 0),
# the index of the first word of exec's command (0: none), and then the
# options that choose the servers, to pass on to `redlock list`.
function __fish_redlock_scan
    set -l takes_value --command --config-file --conflict-exit-code --if-token --kill-after --limit --message --older-than --once --once-per --prefix --restart-guard --serial --server --server-timeout --servers-file --signal --timeout --tls-ca-cert --ttl --wait --while --while-signal -E -c -k -m -s -w
    set -l global_value -s --server --servers-file --config-file --server-timeout --restart-guard --tls-ca-cert --prefix
    set -l words (commandline -opc)
    set -l sub ''
    set -l positionals 0
    set -l skip 0
    set -l dashdash 0
    set -l start 0
    set -l globals
    set -l i 1
    for word in $words[2..-1]
        set i (math $i + 1)
        if test $skip != 0
            test $skip = global; and set -a globals $word
            set skip 0
            continue
        end
        if test $dashdash = 1
            set positionals (math $positionals + 1)
            continue
        end
        switch $word
            case --
                set dashdash 1
                if test "$sub" = exec
                    set start (math $i + 1)
                    break
                end
            case -c --command
                if test "$sub" = exec
                    set skip 1
                    set positionals 2
                end
            case '-c?*' '--command=*'
                test "$sub" = exec; and set positionals 2
            case '--*=*'
                contains -- (string split -m1 = -- $word)[1] $global_value; and set -a globals $word
            case '--*'
                if contains -- $word $global_value
                    set -a globals $word
                    set skip global
                else if contains -- $word $takes_value
                    set skip 1
                end
            case '-?*'
                # A cluster of short flags: the first that takes a value
                # takes the rest of the word, or the next word.
                set -l n (string length -- $word)
                for j in (seq 2 $n)
                    set -l flag -(string sub -s $j -l 1 -- $word)
                    if contains -- $flag $takes_value
                        if contains -- $flag $global_value
                            set -a globals $word
                            test $j = $n; and set skip global
                        else
                            test $j = $n; and set skip 1
                        end
                        break
                    end
                end
            case '*'
                if test -z "$sub"
                    set sub $word
                else
                    set positionals (math $positionals + 1)
                    if test "$sub" = exec -a $positionals = 2
                        set start $i
                        break
                    end
                end
        end
    end
    # The word being completed starts exec's command, unless it is an option.
    if test $start = 0 -a "$sub" = exec -a $skip = 0 -a $positionals = 1
        and not string match -q -- '-*' (commandline -ct)
        set start (math (count $words) + 1)
    end
    printf '%s\n' "$sub" $positionals $skip $dashdash $start $globals
end

# Whether the word being completed is part of exec's command.
function __fish_redlock_in_exec_command
    set -l scan (__fish_redlock_scan)
    test $scan[5] != 0
end

# The command line of exec's command, completed as fish completes it.
function __fish_redlock_exec_command
    set -l scan (__fish_redlock_scan)
    set -l words (commandline -opc)
    set -l line (string escape -- $words[$scan[5]..-1]) (commandline -ct)
    complete -C (string join ' ' -- $line)
end

# Whether the word being completed is a lock NAME.
function __fish_redlock_wants_name
    set -l scan (__fish_redlock_scan)
    contains -- "$scan[1]" acquire release extend status exec
    and test $scan[2] = 0 -a $scan[3] = 0 -a $scan[4] = 0 -a $scan[5] = 0
    and not string match -q -- '-*' (commandline -ct)
end

# The names of the locks that start with the word being completed, from
# the servers the command line names, within a second.
function __fish_redlock_lock_names
    set -l scan (__fish_redlock_scan)
    set -l redlock (commandline -opc)[1]
    set -l timeout
    command -q timeout; and set timeout timeout 1
    $timeout $redlock $scan[6..-1] list --names -- (commandline -ct)'*' 2>/dev/null
end

complete -c redlock -n __fish_redlock_in_exec_command -f -a '(__fish_redlock_exec_command)'
complete -c redlock -n __fish_redlock_wants_name -f -a '(__fish_redlock_lock_names)'
