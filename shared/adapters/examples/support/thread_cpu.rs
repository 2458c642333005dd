//! The calling thread's CPU time, for the examples that time SDK calls (Linux: /proc).

use std::io;

/// CPU time this thread has run, in ns (the scheduler's own count).
pub fn thread_cpu_ns() -> io::Result<u64> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat")?;
    stat.split_whitespace()
        .next()
        .and_then(|ns| ns.parse().ok())
        .ok_or_else(|| io::Error::other("unreadable schedstat"))
}
