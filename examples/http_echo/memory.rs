//! The server's malloc settings, made first thing in `main`: a thread that
//! allocates gets its arena then, so a cap set later leaves the arenas of the
//! threads already started (the runtime's Ms and sysmon start with its first
//! use).

/// Caps glibc malloc at one arena per CPU.
///
/// glibc gives each thread that allocates an arena of its own, up to eight per
/// core, and keeps what is freed in the arena it came from. A goroutine moves
/// between Ms, so a connection's buffers are freed on whichever thread ran it
/// last, into the arena they were allocated from: more arenas add no locality,
/// only more memory held apart between bursts (after seven bursts of 5,000
/// connections: docs/decisions/0002-heap-trim.md). One per CPU is as many as
/// threads can allocate at once. A `glibc.malloc.arena_max` given in
/// `GLIBC_TUNABLES` is left to win. Nothing to do under another C library.
pub fn limit_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let tuned = std::env::var("GLIBC_TUNABLES").is_ok_and(|t| t.contains("glibc.malloc.arena_max"));
        if tuned {
            return;
        }
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let arenas = libc::c_int::try_from(cpus).unwrap_or(libc::c_int::MAX);
        // SAFETY: `mallopt` only sets a malloc parameter (under the main
        // arena's lock); M_ARENA_MAX takes any positive count. Its result (0 if
        // refused) needs no handling: the default then stays.
        unsafe { libc::mallopt(libc::M_ARENA_MAX, arenas) };
    }
}
