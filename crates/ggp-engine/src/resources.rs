//! What the process uses, as the operating system reports it: resident memory now and at
//! its peak, physical memory, and a thread's processor time.
//!
//! The only module that reads `/proc`. Everything here is Linux-only and best-effort: where
//! `/proc` is missing or unreadable, each function returns `None`, and callers skip whatever
//! they would have done with the answer (a memory budget is then not enforced).

use std::time::Duration;

/// The process's resident set size now (`VmRSS` in `/proc/self/status`), in bytes.
///
/// Reading it costs a few microseconds (a file is opened and parsed), so callers that check it
/// in a loop do so at most every few milliseconds.
pub fn resident_memory() -> Option<u64> {
    status_bytes(&std::fs::read_to_string("/proc/self/status").ok()?, "VmRSS")
}

/// The process's peak resident set size (`VmHWM` in `/proc/self/status`), in bytes.
pub fn peak_memory() -> Option<u64> {
    status_bytes(&std::fs::read_to_string("/proc/self/status").ok()?, "VmHWM")
}

/// The machine's physical memory (`MemTotal` in `/proc/meminfo`), in bytes. Inside a
/// container this is the host's memory, not the container's limit.
pub fn total_memory() -> Option<u64> {
    status_bytes(&std::fs::read_to_string("/proc/meminfo").ok()?, "MemTotal")
}

/// Processor time (user and system) of the calling thread, from `/proc/thread-self/stat`,
/// in its 10 ms ticks.
pub fn thread_cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = stat.get(stat.rfind(')')? + 2..)?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

/// The value of a `Key:   1234 kB` line of a `/proc` status-like file, in bytes.
fn status_bytes(text: &str, key: &str) -> Option<u64> {
    let line = text.lines().find(|l| {
        l.strip_prefix(key)
            .is_some_and(|rest| rest.starts_with(':'))
    })?;
    let mut words = line[key.len() + 1..].split_whitespace();
    let n: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") => n.checked_mul(1024),
        None => Some(n),
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_lines_are_read_in_bytes() {
        let status = "Name:\tggp\nVmHWM:\t   20480 kB\nVmRSS:\t   10240 kB\nThreads:\t1\n";
        assert_eq!(status_bytes(status, "VmRSS"), Some(10 << 20));
        assert_eq!(status_bytes(status, "VmHWM"), Some(20 << 20));
        assert_eq!(status_bytes(status, "Threads"), Some(1));
        assert_eq!(status_bytes(status, "VmSwap"), None);
        // A key is matched whole, not as a prefix of another.
        assert_eq!(status_bytes("VmRSSx:\t1 kB\n", "VmRSS"), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_has_resident_memory_below_its_peak() {
        let now = resident_memory().expect("/proc/self/status on Linux");
        let peak = peak_memory().expect("/proc/self/status on Linux");
        assert!(now > 0 && now <= peak, "{now} > {peak}");
        assert!(total_memory().is_some_and(|t| t >= peak));
    }
}
