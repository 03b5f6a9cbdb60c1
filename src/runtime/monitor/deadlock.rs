//! The deadlock report and SIGQUIT: Go's `fatal error: all goroutines are asleep
//! - deadlock!` and its SIGQUIT dump, both printed by one reporter thread (`goro-reporter`).
//!
//! # When the report fires
//! goro is a library: the process may run threads that know nothing of it, so
//! "nothing can run" must be proven about every thread, not only about Gs
//! (Go's `checkdead` counts Ms; here the program's threads count too). All of
//! these must hold, twice, 100 ms apart, with no G switch, spawn, exit, poller
//! wake-up or plain-thread wait starting or ending in between (the
//! fingerprint):
//! - every thread of the process (`/proc/self/task`) is one of the runtime's
//!   (`os_threads`) or a plain thread in a goro wait without a deadline
//!   (`thread_waits`), and at least one is the latter;
//! - no waiting plain thread has been woken (it may not have run yet);
//! - every P is idle and every run queue empty;
//! - every live G is parked, none in a sleep that never ends (Go keeps a timer
//!   for it, so Go does not report it either);
//! - no pending timer would wake or start anything if it fired: a sleep, a
//!   timed wait, an `after_func`, a network deadline, or a timer or ticker
//!   channel some G or plain thread is blocked receiving from (a `recv`, a
//!   `recv_timeout`, a `select!` arm) would; a timer or ticker channel nobody
//!   waits on, which only fills its one slot, would not (Go 1.23 keeps such a
//!   timer out of the heap). Stopped, superseded and abandoned timers, which
//!   stay in the heap until compaction or their deadline, do not count either;
//! - no G waits on the network.
//!
//! A G wired to its thread counts like any other G, and its idle M as a runtime
//! thread (Go's `nmidlelocked`). If `/proc` cannot be read, nothing is reported.
//! `GODEBUG=deadlock=0` turns the check off.
//!
//! # Who triggers the check
//! [`poke`](crate::runtime::proc::observers::poke) runs when the last P goes
//! idle (its M parks, or sleeps in the poller on timers alone, which may all be
//! stopped, abandoned or on channels nobody waits on) and when a plain thread
//! starts an untimed goro wait: the events after which the conditions can
//! first hold. It reads a few counters (untimed plain-thread waits, idle Ps,
//! network waiters) and every P's timers (as above) and, only if they allow a
//! deadlock, wakes the reporter thread (a flag keeps pokes from writing again
//! until that check has started). So a program that waits on a timer or a
//! socket never wakes it. The reporter thread blocks on a pipe that the pokes
//! and the SIGQUIT handler write to. A look tests the cheap conditions first,
//! then `/proc`, then every G header's status; looks are at least 10 ms apart.
//! When only threads goro does not know stand in the way, it looks again after
//! 100 ms, doubling to 1 s, for as long as nothing else changes: such a thread
//! may exit without any event goro would see.
//!
//! # SIGQUIT and the exit
//! The handler only marks SIGQUIT received (`QUIT`) and writes an event; the
//! reporter makes the dump, writes it, and exits with status 2. An exit that
//! begins meanwhile (`main` returns, `process::exit`) runs an at-exit step
//! registered before the `GORO_TRACE` writer's, so after it: it waits (at most
//! `QUIT_DUMP_BOUND`) for the dump and ends the process with 2. The
//! reporter's own exit skips that step (its dump, or its deadlock report, is
//! the one being written). Orderings: `QUIT` is written with Release after
//! the dump's bytes and read with Acquire.

use crate::runtime::proc::observers::{self, send, EVENT_CHECK, EVENT_SIGQUIT};
use crate::runtime::proc::state::Sched;
use crate::runtime::sys::fatal::die;
use crate::runtime::sys::os_threads;
use crate::runtime::task::g::Status;
use crate::runtime::task::ids::WaitReason;
use crate::runtime::wait::thread_waits;
use std::sync::atomic::{AtomicI32, AtomicU8, Ordering};
use std::time::Duration;

/// The second look comes this long after the first.
const SECOND_LOOK: Duration = Duration::from_millis(100);
/// Looks are at least this far apart (pokes meanwhile coalesce).
const MIN_LOOK_GAP: Duration = Duration::from_millis(10);
/// While only unknown threads block the report: the first retry's delay,
/// doubling up to the last.
const RETRY_FIRST: Duration = Duration::from_millis(100);
const RETRY_MAX: Duration = Duration::from_secs(1);
/// How long an exit waits for a SIGQUIT's dump (one stuck writing to a pipe
/// nobody reads must not keep the process alive).
const QUIT_DUMP_BOUND: Duration = Duration::from_secs(30);

/// SIGQUIT ends the process even if its dump cannot be written (stderr a
/// pipe nobody reads): a thread ends it with 2 once [`QUIT_DUMP_BOUND`] has
/// passed without the dump done.
fn end_if_the_dump_stalls() {
    let _ = std::thread::Builder::new().name("goro-quit".into()).spawn(|| {
        std::thread::sleep(QUIT_DUMP_BOUND);
        if QUIT.load(Ordering::Acquire) != QUIT_DUMPED {
            crate::runtime::sys::fatal::die_now("");
        }
    });
}

/// SIGQUIT's progress: none, received (the reporter is making the dump),
/// dump written.
const QUIT_NONE: u8 = 0;
const QUIT_RECEIVED: u8 = 1;
const QUIT_DUMPED: u8 = 2;
static QUIT: AtomicU8 = AtomicU8::new(QUIT_NONE);
/// The reporter thread's kernel id (0 until it runs).
static REPORTER_TID: AtomicI32 = AtomicI32::new(0);

/// Starts the reporter thread and, unless the program handles SIGQUIT itself,
/// the SIGQUIT handler. Called once, at the runtime's start.
pub(crate) fn start(s: &'static Sched) {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2(2) writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
        eprintln!(
            "goro: no deadlock report or SIGQUIT dump: pipe2: {}",
            std::io::Error::last_os_error()
        );
        return;
    }
    let [read_fd, write_fd] = fds;
    let spawned = std::thread::Builder::new()
        .name("goro-reporter".into())
        .spawn(move || serve(s, read_fd));
    if let Err(e) = spawned {
        eprintln!("goro: no deadlock report or SIGQUIT dump: cannot start the reporter thread: {e}");
        return;
    }
    observers::reporter_started(write_fd);
    install_sigquit();
}

/// Async-signal-safe: an atomic and a pipe write. A second SIGQUIT while the
/// first is handled changes nothing.
extern "C" fn on_sigquit(_sig: libc::c_int) {
    if QUIT
        .compare_exchange(QUIT_NONE, QUIT_RECEIVED, Ordering::AcqRel, Ordering::Acquire)
        .is_ok()
    {
        send(EVENT_SIGQUIT);
    }
}

/// Run by `exit` (main's return, a `process::exit`), after the handlers
/// registered later (the `GORO_TRACE` writer): a SIGQUIT received before this
/// point has its dump printed and ends the process with status 2, as Go's
/// does, rather than being lost to an exit that was about to happen. The
/// reporter's own exit (SIGQUIT's, the deadlock report's) goes on as it is.
extern "C" fn finish_quit_at_exit() {
    // SAFETY: gettid has no preconditions.
    let me = unsafe { libc::gettid() };
    if QUIT.load(Ordering::Acquire) == QUIT_NONE || REPORTER_TID.load(Ordering::Acquire) == me {
        return;
    }
    let deadline = std::time::Instant::now() + QUIT_DUMP_BOUND;
    while QUIT.load(Ordering::Acquire) != QUIT_DUMPED && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    // SAFETY: `_exit` ends the process; the handlers registered before this
    // one (none of goro's) are skipped, as SIGQUIT's default action would.
    unsafe { libc::_exit(2) }
}

/// Installs the SIGQUIT handler unless the program installed its own. An
/// inherited "ignore" is replaced, as Go's runtime does for every signal but
/// SIGHUP and SIGINT: a shell starts background jobs with SIGQUIT ignored.
fn install_sigquit() {
    // SAFETY: a zeroed sigaction is a valid out-buffer; a null new action only
    // reads the current one.
    let current = unsafe {
        let mut current: libc::sigaction = std::mem::zeroed();
        libc::sigaction(libc::SIGQUIT, std::ptr::null(), &mut current);
        current
    };
    if current.sa_sigaction != libc::SIG_DFL && current.sa_sigaction != libc::SIG_IGN {
        return; // the program's own handler: left alone
    }
    // Registered before the `GORO_TRACE` writer's, so it runs after it.
    // SAFETY: registers a plain `extern "C" fn()`.
    if unsafe { libc::atexit(finish_quit_at_exit) } != 0 {
        eprintln!("goro: a SIGQUIT that comes as the process exits may end it without its dump");
    }
    // SAFETY: a zeroed sigaction filled in with a valid one-argument handler.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_sigquit as *const () as usize;
        // On the alternate stack: a goroutine's stack may be the one running.
        action.sa_flags = libc::SA_RESTART | libc::SA_ONSTACK;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGQUIT, &action, std::ptr::null_mut());
    }
}

/// The reporter thread: waits for events and handles them.
fn serve(s: &'static Sched, read_fd: i32) {
    let _runtime_thread = os_threads::register();
    // SAFETY: gettid has no preconditions.
    REPORTER_TID.store(unsafe { libc::gettid() }, Ordering::Release);
    // While a thread goro does not know blocks the report, look again now and
    // then: it may exit or start a goro wait (which pokes), or linger.
    let mut retry: Option<Duration> = None;
    let mut last_look = std::time::Instant::now() - MIN_LOOK_GAP;
    loop {
        let mut pfd = libc::pollfd {
            fd: read_fd,
            events: libc::POLLIN,
            revents: 0,
        };
        let timeout = retry.map_or(-1, |d| d.as_millis() as libc::c_int);
        // SAFETY: one valid pollfd and a timeout in ms (-1: none).
        let ready = unsafe { libc::poll(&mut pfd, 1, timeout) };
        if ready < 0 {
            continue; // EINTR
        }
        let mut events = [0u8; 64];
        let n = if ready > 0 {
            // SAFETY: reading into a buffer of that size.
            unsafe { libc::read(read_fd, events.as_mut_ptr().cast(), events.len()) }
        } else {
            0
        };
        let events = &events[..usize::try_from(n).unwrap_or(0)];
        if events.contains(&EVENT_SIGQUIT) {
            end_if_the_dump_stalls();
            let mut err = std::io::stderr();
            let _ = std::io::Write::write_all(&mut err, b"SIGQUIT: quit\n\n");
            let _ = super::dump::write_dump(&mut err);
            QUIT.store(QUIT_DUMPED, Ordering::Release);
            die("");
        }
        let retry_due = ready == 0 && retry.is_some();
        if !events.contains(&EVENT_CHECK) && !retry_due {
            continue;
        }
        // At most one look per MIN_LOOK_GAP: pokes meanwhile coalesce.
        std::thread::sleep(MIN_LOOK_GAP.saturating_sub(last_look.elapsed()));
        // Cleared before the look: a poke from here on writes again. A poke
        // that came before, and did not write, made its change (an idle P, a
        // new wait) before its swap, which this swap reads: the look sees it.
        observers::check_started();
        last_look = std::time::Instant::now();
        retry = match look(s) {
            Look::Dead(first) => {
                std::thread::sleep(SECOND_LOOK);
                if let Look::Dead(second) = look(s) {
                    if second == first {
                        let mut err = std::io::stderr();
                        let _ = std::io::Write::write_all(
                            &mut err,
                            b"fatal error: all goroutines are asleep - deadlock!\n\n",
                        );
                        let _ = super::dump::write_dump(&mut err);
                        die("");
                    }
                }
                Some(RETRY_FIRST)
            }
            Look::Foreign => Some(retry.map_or(RETRY_FIRST, |d| (d * 2).min(RETRY_MAX))),
            Look::Alive => None,
        };
    }
}

/// What must not change between the two looks. Timer firings are not in it:
/// one that wakes or starts something shows as a switch, a spawn, or a plain
/// thread woken (which a look sees) or done waiting; one that does not (a tick
/// into a channel nobody waits on, every millisecond perhaps) changes nothing
/// that could run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Fingerprint {
    switches: u64,
    spawned: u64,
    completed: u64,
    netpoll_ready: u64,
    thread_waits: u64,
}

/// What one look found.
enum Look {
    /// Nothing can run now.
    Dead(Fingerprint),
    /// Something can run, or will: no report, and no look until a poke.
    Alive,
    /// All is asleep but for threads goro does not know: look again later.
    Foreign,
}

/// One look (module docs). Cheapest tests first: a look may come on every
/// idle moment of a program whose other threads keep it from ever reporting.
fn look(s: &Sched) -> Look {
    let before = thread_waits::generation();
    if (s.idle.npidle() as usize) < s.gomaxprocs()
        || !s.global.is_empty()
        || crate::runtime::proc::state::net_waiters() > 0
    {
        return Look::Alive;
    }
    if s.procs().any(|p| !p.runq.is_empty() || p.timers.any_would_wake()) {
        return Look::Alive;
    }
    let waits = thread_waits::waiting();
    if waits.iter().any(|w| w.woken()) {
        return Look::Alive; // woken, and about to run
    }
    let waiting: Vec<i32> = waits.iter().filter(|w| !w.timed).map(|w| w.tid).collect();
    if waiting.is_empty() {
        return Look::Alive;
    }
    let runtime = os_threads::all();
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return Look::Alive; // cannot tell: never report
    };
    for t in tasks {
        let tid = t
            .ok()
            .and_then(|t| t.file_name().to_str().and_then(|n| n.parse::<i32>().ok()));
        match tid {
            Some(tid) if runtime.contains(&tid) || waiting.contains(&tid) => {}
            Some(_) => return Look::Foreign, // a thread goro knows nothing of: it may yet act
            None => return Look::Alive,
        }
    }
    // Status and reason are atomics: a plain read per G suffices here, since
    // the second look's fingerprint catches any G that ran in between.
    for g in crate::runtime::task::g::all_gs() {
        match g.status() {
            Status::Dead | Status::Idle => {}
            Status::Waiting if g.wait_reason() != WaitReason::Forever => {}
            _ => return Look::Alive,
        }
    }
    let stats = crate::runtime::monitor::stats::collect(s);
    let print = Fingerprint {
        switches: stats.context_switches,
        spawned: stats.spawned,
        completed: stats.completed,
        netpoll_ready: stats.netpoll_ready,
        thread_waits: before,
    };
    if thread_waits::generation() == before {
        Look::Dead(print)
    } else {
        Look::Alive
    }
}
