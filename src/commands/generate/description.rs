//! What each man page says under DESCRIPTION, after the one line `--help`
//! starts with: the account the README gives, short. Paragraphs are
//! separated by a blank line.

/// The DESCRIPTION of the page of `sub`, if it has more than its one line.
pub fn of(sub: &str) -> Option<&'static str> {
    DESCRIPTIONS
        .iter()
        .find(|(name, _)| *name == sub)
        .map(|(_, text)| *text)
}

const DESCRIPTIONS: &[(&str, &str)] = &[
    (
        "doctor",
        "Asks every server what Redlock's safety rests on and prints, per server and for the \
         list as a whole, one line per check: ok, unknown, warning or unsafe, what was found, \
         and the fix. A server must be reachable, a master (a replica's locks are overwritten \
         by replication), and distinct (its run_id: two URLs of one server would count it \
         twice); its maxmemory-policy must not evict keys with an expiry (noeviction); it needs \
         AOF with appendfsync always, or else the restart guard (which covers it while it is \
         on: unsafe only when it is off); a server that started less than the guard ago does \
         not count yet. Its clock (TIME) must agree with the others' within 1% of --ttl, its round \
         trip must stay well under --server-timeout, it should not be in cluster mode, and its \
         ACL must allow every command redlock sends (ACL DRYRUN, Redis 7 and later): each one \
         missing is named with what stops working without it. What a managed Redis will not \
         say (CONFIG, ACL) is unknown, not an error. The list needs an odd number of servers, \
         at least 3, or --single for one.\n\n\
         It then says whether a lock can be taken now: it counts the servers usable at this \
         moment (reachable, a distinct master, serving slots if a cluster node, outside the \
         restart guard, whose word it reads as status does: how long is left and why) against \
         the quorum.\n\n\
         doctor exits 69 when fewer than a quorum are usable and waiting for the restart guard \
         would not be enough; 1 when something is unsafe; 75 when the restart guard keeps too \
         many out (not ready yet); 2 when a majority is usable but not every server \
         (degraded); 1 with --strict for a warning; else 0 (warnings are printed). With --json \
         it prints one object, a verdict, the state, a flag per kind (unsafe, degraded, \
         not_ready, unavailable) and one object per server, for a monitoring check. The restart guard and the server timeout are read as the other commands read \
         them.",
    ),
    (
        "acquire",
        "Takes the lock on a majority of the servers and prints its token on stdout, for \
         release and extend. Without -n or -w it waits until the lock is free, saying on stderr \
         whom it waits for (nothing in the first second, then one line rewritten in place on a \
         terminal, or a line every 10 seconds on a pipe); -q silences that.\n\n\
         The lock lives for --ttl on the servers unless it is extended or released; a script \
         that holds it longer takes it with --while $$, or runs redlock extend every third of \
         the TTL or so, or uses redlock exec.\n\n\
         --while PID starts a keeper process that extends the lock every third of --ttl while \
         PID lives, in a session of its own and with no descriptor of the caller's, so that \
         tok=$(redlock acquire --while $$ NAME) returns at once. When PID has exited, and what \
         it left in its process group (when it leads one) has ended too, the keeper releases \
         the lock; redlock release NAME TOKEN on this host tells it to stand down first, and \
         waits for the same. If the lock is lost, PID and its group get --while-signal \
         (TERM by default; none sends nothing) when exec would send its stop signal, -k (5s, \
         at most a third of --ttl) before the validity ends. No SIGKILL follows. A watchdog \
         process beside the keeper sends the same signal on the same schedule if the keeper \
         is frozen or starved and stops extending, and at once if the keeper is killed. If \
         PID exits while acquire still waits, the wait ends with 75.\n\n\
         With -n, or when the -w wait runs out, acquire exits 75, or the -E code; -E 0 skips \
         quietly and prints no token. SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2 and SIGALRM \
         during the wait release whatever was taken, and acquire dies of the signal.",
    ),
    (
        "release",
        "Deletes the lock on every server where TOKEN still holds it. If TOKEN no longer holds \
         a majority (the lock expired, or someone else took it since), release exits 79: the \
         work done under the lock may have overlapped with another holder's.\n\n\
         If the keeper of acquire --while on this host is stopped (SIGSTOP) and cannot stand \
         down, release gives up after seeing it stopped for 2s, leaves the lock alone (the \
         keeper releases it once continued) and exits 70.\n\n\
         With --force, release deletes the lock whoever holds it, and says whose it was: for a \
         stale lock whose holder is known to be dead, never to hurry a live one. --if-token \
         breaks it only while the dead holder's token still holds it.",
    ),
    (
        "done",
        "Writes the done mark of the run that acquire --once-per or --once took the lock \
         for, on every server where TOKEN still holds the lock. Once it is on a majority, any \
         later acquire --once-per of that period (or --once of that key) exits 80, and exec \
         skips, on every host. If TOKEN no longer holds a majority, done exits 79 and marks \
         nothing: the run does not count.\n\n\
         The run is the one acquire recorded beside the lock: its period, fixed when acquire \
         started, or its key. Mark it done before releasing the lock, never after: once \
         released, another host may run it. A lock taken without --once-per or --once has \
         no run to mark (64).",
    ),
    (
        "extend",
        "Sets the lock's expiry to --ttl from now on every server where TOKEN still holds it. \
         A lock that already expired, or that someone else took since, is never re-created: \
         extend exits 79, and the work under the lock should stop.",
    ),
    (
        "status",
        "Shows whether a majority holds the lock, who holds it (user, host, process, the note \
         of -m, a CI job), for how long and until when, and what every server holds. The exit \
         status alone tells held (0) from free (1), for scripts: redlock status -q NAME.",
    ),
    (
        "list",
        "Lists the locks whose names match PATTERN, as a majority of the servers sees them: \
         the name, whether it is held, its age, its expiry and its holder, one line each in \
         the order of the names. Without --prefix, only the locks taken by redlock are listed; \
         under a prefix, every string key under it. --names prints the names alone, one a \
         line, for scripts and shell completion; --json the whole listing.",
    ),
    (
        "exec",
        "Takes the lock (waiting as acquire does), runs the command while it holds the lock, \
         extends the lock every third of --ttl while the command runs, and releases it when the \
         command and what it left behind have ended. The command inherits stdin, stdout and \
         stderr, and gets REDLOCK_NAME and REDLOCK_TOKEN, and the servers without their \
         passwords (see ENVIRONMENT).\n\n\
         As with flock NAME cmd, the first word after NAME starts the command, and every word \
         from there on is the command's; redlock's options go before it. Without NAME, -- comes \
         before the command, and the lock is named exec:PROGRAM:HASH after the whole command \
         line, the same on every host (-v prints it).\n\n\
         The stop schedule. When an extension finds the lock gone, or none succeeds in time, \
         exec sends --signal (SIGTERM by default, then SIGCONT) to the command's process \
         group, waits -k (5s by default) or until the group is empty, sends SIGKILL, and exits \
         79. Independently of any loss being seen, the stop is scheduled against the lock's \
         validity: the signal goes out -k plus a margin (a twentieth of the TTL, 5ms to 200ms) \
         before the validity ends, SIGKILL the margin before it, so that the kill always lands \
         before the lock can lapse. -k is capped at a third of --ttl. A watchdog process \
         enforces the schedule even if exec itself is frozen (SIGSTOP, a debugger); if the \
         whole machine was suspended, the command is stopped at once on resume.\n\n\
         Leftover processes. The command leads a process group of its own; stops reach the \
         whole group, and exec holds and extends the lock until every process of the group has \
         ended, also those the command started in the background and left behind. A process \
         that left the group on purpose (setsid) is out of reach. exec adopts orphans and reaps \
         those of the group, so that a zombie cannot keep the lock held, also as PID 1 in a \
         container. A leftover that stops on the terminal after the command has ended gets \
         SIGHUP and SIGCONT, then --signal and SIGKILL if it stops again.\n\n\
         Terminals. exec gives the command's process group the terminal, as a shell does for a \
         job, so that Ctrl-C, Ctrl-\\ and prompts reach the command; Ctrl-Z suspends the \
         command and exec together, and nothing extends the lock while they are suspended. See \
         SIGNALS AND TERMINALS.",
    ),
];
