//! Go's way out of a state the runtime cannot go on from: the report on
//! stderr (a `fatal error: ...` line, or SIGQUIT's dump) and exit status 2,
//! an ordinary exit, not an abort: no core dump, and `atexit` handlers run
//! (the `GORO_TRACE` trace is written out). A report names the limit that
//! stopped the runtime where one did ([`open_files_hint`]).
//!
//! Thread: any.

use std::io::{self, Write as _};

/// Prints `text` to stderr and exits with status 2, as Go does: through
/// `exit`, so a `GORO_TRACE` trace is written out first.
///
/// If another thread is already exiting (`main` returned, a goroutine called
/// `process::exit`), this `exit` waits: a second `exit` cannot run beside the
/// first (glibc's is not thread-safe, so std's `process::exit` on a second
/// thread waits for the process to end), and cutting it short would lose its
/// at-exit work, such as the trace. (SIGQUIT's dump then ends that exit with
/// status 2 from its own at-exit step: `monitor/deadlock.rs`.) Hence nothing
/// is held here across `exit` (stderr is unbuffered, and written
/// without its lock kept): that exit may still write to stderr (a trace that
/// could not be written says so).
pub(crate) fn die(text: &str) -> ! {
    let _ = std::io::stderr().write_all(text.as_bytes());
    std::process::exit(2)
}

/// Prints `text` to stderr and ends the process at once with status 2, running
/// no `atexit` work: for a runtime that cannot go on from where it is (no OS
/// thread for an M), whose exit handlers (the trace's writer) might wait on
/// the very runtime that failed. Go's `throw` ends the process the same way.
pub(crate) fn die_now(text: &str) -> ! {
    let _ = std::io::stderr().write_all(text.as_bytes());
    // SAFETY: `_exit` ends the process; nothing of ours runs after it.
    unsafe { libc::_exit(2) }
}

/// What to add to an error's text when it is a limit on open files that
/// stopped the runtime: which limit, and its value; empty for another error.
pub(crate) fn open_files_hint(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::EMFILE) => {
            let mut lim = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            // SAFETY: `getrlimit` writes one `rlimit` through a pointer to a
            // live, properly aligned local.
            if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0 {
                format!(
                    " (the process's open-files limit, RLIMIT_NOFILE or `ulimit -n`, is {})",
                    lim.rlim_cur
                )
            } else {
                " (the process's open-files limit, RLIMIT_NOFILE or `ulimit -n`)".to_owned()
            }
        }
        Some(libc::ENFILE) => " (the system's open-files limit, fs.file-max)".to_owned(),
        _ => String::new(),
    }
}
