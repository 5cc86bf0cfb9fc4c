//! Every read of /proc in one place: what the kernel says about a process's
//! state, parent, group and session, and about its children.

/// The fields of /proc/PID/stat that job control needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stat {
    pub pid: i32,
    /// The state letter: R, S, D, T (stopped), Z...
    pub state: char,
    pub parent: i32,
    pub group: i32,
    pub session: i32,
    /// When it started, in clock ticks since boot: which of two processes
    /// came first, whatever their pids.
    pub started: u64,
}

impl Stat {
    pub fn is_stopped(&self) -> bool {
        self.state == 'T'
    }
}

/// What /proc/PID/stat says of `pid`, if it exists.
pub fn stat(pid: i32) -> Option<Stat> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(pid, &stat)
}

fn parse_stat(pid: i32, stat: &str) -> Option<Stat> {
    // The command name may hold spaces and parentheses; what follows its
    // closing parenthesis is plain.
    let rest = stat.get(stat.rfind(')')? + 1..)?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let mut number = || fields.next()?.parse::<i32>().ok();
    let (parent, group, session) = (number()?, number()?, number()?);
    // tty_nr through itrealvalue (fields 7 to 21), then starttime.
    let started = fields.nth(15)?.parse().ok()?;
    Some(Stat {
        pid,
        state,
        parent,
        group,
        session,
        started,
    })
}

/// Every process on the system, as far as /proc lists it now.
pub fn all() -> Vec<Stat> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(stat)
        .collect()
}

/// How many threads `pid` has (0 when it is gone).
pub fn threads(pid: i32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task")).map_or(0, |tasks| tasks.count())
}

/// What `ps` shows of `pid`: its command line, words joined by spaces, or
/// `[comm]` when it has none (a zombie, a kernel thread); raw bytes.
pub fn command_line(pid: i32) -> Option<Vec<u8>> {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let words: Vec<&[u8]> = cmdline
        .split(|&b| b == 0)
        .filter(|word| !word.is_empty())
        .collect();
    if !words.is_empty() {
        return Some(words.join(&b' '));
    }
    let comm = std::fs::read(format!("/proc/{pid}/comm")).ok()?;
    let comm = comm.strip_suffix(b"\n").unwrap_or(&comm);
    Some([&b"["[..], comm, &b"]"[..]].concat())
}

/// The children of `pid`'s main thread.
pub fn children(pid: i32) -> Vec<i32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .map(|children| {
            children
                .split_whitespace()
                .filter_map(|pid| pid.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_survives_odd_command_names() {
        let line = "4242 (a) b (c) T 1 4242 4000 34817 4242 4194560 0 0 0 0 \
                    5 3 0 0 20 0 1 0 987654 1000";
        assert_eq!(
            parse_stat(4242, line),
            Some(Stat {
                pid: 4242,
                state: 'T',
                parent: 1,
                group: 4242,
                session: 4000,
                started: 987654,
            })
        );
        assert_eq!(parse_stat(1, "garbage"), None);
        // A line cut before the start time is no stat.
        assert_eq!(parse_stat(1, "1 (a) S 0 1 1 0 -1 4194560 0 0"), None);
    }

    #[test]
    fn shows_a_command_line_as_ps_does() {
        let mut sleeper = std::process::Command::new("sleep")
            .args(["30", "0"])
            .spawn()
            .expect("sleep");
        let pid = sleeper.id() as i32;
        // Until it has exec'd, the child shows the test binary's line.
        let started = std::time::Instant::now();
        let mut shown = command_line(pid);
        while !shown
            .as_deref()
            .is_some_and(|line| line.starts_with(b"sleep"))
            && started.elapsed() < std::time::Duration::from_secs(5)
        {
            std::thread::sleep(std::time::Duration::from_millis(5));
            shown = command_line(pid);
        }
        let _ = sleeper.kill();
        let _ = sleeper.wait();
        assert_eq!(shown.as_deref(), Some(&b"sleep 30 0"[..]));
        assert_eq!(command_line(-1), None);
    }

    #[test]
    fn reads_this_process() {
        let me = stat(std::process::id() as i32).expect("our own /proc entry");
        assert_eq!(me.group, nix::unistd::getpgrp().as_raw());
        assert!(all().iter().any(|p| p.pid == me.pid));
    }
}
