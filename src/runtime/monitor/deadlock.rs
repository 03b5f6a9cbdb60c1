//! The deadlock report and SIGQUIT: Go's `fatal error: all goroutines are asleep
//! - deadlock!` and its SIGQUIT dump, both printed by one reporter thread (`goro-reporter`).
//!
//! # When the report fires
//! goro is a library: the process may run threads that know nothing of it, so
//! "nothing can run" must be proven about every thread, not only about Gs
//! (Go's `checkdead` counts Ms; here the program's threads count too). All of
//! these must hold, twice, 100 ms apart, with no G switch, spawn, exit, timer,
//! poller wake-up or plain-thread wait starting or ending in between (the
//! fingerprint):
//! - every thread of the process (`/proc/self/task`) is one of the runtime's
//!   (`os_threads`) or a plain thread in a goro wait without a deadline
//!   (`thread_waits`), and at least one is the latter;
//! - every P is idle and every run queue empty;
//! - every live G is parked, none in a sleep that never ends (Go keeps a timer
//!   for it, so Go does not report it either);
//! - no timer is pending and no G waits on the network.
//!
//! A G wired to its thread counts like any other G, and its idle M as a runtime
//! thread (Go's `nmidlelocked`). If `/proc` cannot be read, nothing is reported.
//! `GODEBUG=deadlock=0` turns the check off.
//!
//! # Who triggers the check
//! [`poke`] runs when the last P goes idle and when a plain thread starts an
//! untimed goro wait: the two events after which the conditions can first hold.
//! It reads a few counters (untimed plain-thread waits, idle Ps, network
//! waiters, every P's timer count) and, only if they allow a deadlock, wakes the
//! reporter thread (a flag keeps pokes from writing again until that check has
//! started). So a program that waits on a timer or a socket never wakes it. The
//! reporter thread blocks on a pipe that the pokes and the SIGQUIT handler write
//! to; a check costs a `/proc` read and a look at every G header.

use crate::runtime::g::{Status, WaitReason};
use crate::runtime::os_threads;
use crate::runtime::sched::Sched;
use crate::runtime::thread_waits;
use std::io::Write as _;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::Duration;

/// The second look comes this long after the first.
const SECOND_LOOK: Duration = Duration::from_millis(100);

/// The pipe's write end (-1 before the reporter started).
static PIPE_W: AtomicI32 = AtomicI32::new(-1);
/// A check is requested or running: further pokes need not write.
static REQUESTED: AtomicBool = AtomicBool::new(false);

const EVENT_CHECK: u8 = b'D';
const EVENT_SIGQUIT: u8 = b'Q';

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
    PIPE_W.store(write_fd, Ordering::Release);
    install_sigquit();
}

/// The check may be due: see the module docs.
pub(crate) fn poke() {
    let Some(s) = crate::runtime::sched::try_sched() else {
        return;
    };
    if PIPE_W.load(Ordering::Acquire) < 0 {
        return; // the reporter is not running (yet): nobody to wake
    }
    if s.godebug.no_deadlock_report
        || !thread_waits::any_untimed()
        || (s.idle.npidle() as usize) < s.gomaxprocs()
        || crate::netpoll::waiters() > 0
        || s.procs().any(|p| p.timers.len() > 0)
    {
        return;
    }
    if !REQUESTED.swap(true, Ordering::AcqRel) {
        send(EVENT_CHECK);
    }
}

/// Writes one event byte to the reporter's pipe. Async-signal-safe.
fn send(event: u8) {
    let fd = PIPE_W.load(Ordering::Acquire);
    if fd >= 0 {
        // SAFETY: writing one byte from a valid buffer; a full pipe (an event is
        // already pending) or a closed one only makes the write fail.
        unsafe { libc::write(fd, std::ptr::addr_of!(event).cast(), 1) };
    }
}

extern "C" fn on_sigquit(_sig: libc::c_int) {
    send(EVENT_SIGQUIT);
}

/// Installs the SIGQUIT handler if the signal still has its default action.
fn install_sigquit() {
    // SAFETY: a zeroed sigaction is a valid out-buffer; a null new action only
    // reads the current one.
    let current = unsafe {
        let mut current: libc::sigaction = std::mem::zeroed();
        libc::sigaction(libc::SIGQUIT, std::ptr::null(), &mut current);
        current
    };
    if current.sa_sigaction != libc::SIG_DFL {
        return; // the program's own handler, or ignored: left alone
    }
    // SAFETY: a zeroed sigaction filled in with a valid one-argument handler.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_sigquit as *const () as usize;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGQUIT, &action, std::ptr::null_mut());
    }
}

/// The reporter thread: waits for events and handles them.
fn serve(s: &'static Sched, read_fd: i32) {
    let _runtime_thread = os_threads::register();
    loop {
        let mut pfd = libc::pollfd {
            fd: read_fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd; -1 waits without a timeout.
        if unsafe { libc::poll(&mut pfd, 1, -1) } < 0 {
            continue; // EINTR
        }
        let mut buf = [0u8; 64];
        // SAFETY: reading into a buffer of that size.
        let n = unsafe { libc::read(read_fd, buf.as_mut_ptr().cast(), buf.len()) };
        let events = &buf[..usize::try_from(n).unwrap_or(0)];
        if events.contains(&EVENT_SIGQUIT) {
            die(&format!("SIGQUIT: quit\n\n{}", super::dump::dump_text()));
        }
        if events.contains(&EVENT_CHECK) {
            // Cleared before the look: a poke from here on writes again. A poke
            // that came before, and did not write, made its change (an idle P, a
            // new wait) before its swap, which this swap reads: the look sees it.
            REQUESTED.swap(false, Ordering::AcqRel);
            if let Some(first) = look(s) {
                std::thread::sleep(SECOND_LOOK);
                if look(s) == Some(first) {
                    die(&format!(
                        "fatal error: all goroutines are asleep - deadlock!\n\n{}",
                        super::dump::dump_text()
                    ));
                }
            }
        }
    }
}

/// Prints `text` to stderr and exits with status 2, as Go does.
fn die(text: &str) -> ! {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes());
    let _ = err.flush();
    std::process::exit(2)
}

/// What must not change between the two looks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Fingerprint {
    switches: u64,
    spawned: u64,
    completed: u64,
    timers_fired: u64,
    netpoll_ready: u64,
    thread_waits: u64,
}

/// One look: `Some` if nothing can run now (module docs).
fn look(s: &Sched) -> Option<Fingerprint> {
    let before = thread_waits::generation();
    if (s.idle.npidle() as usize) < s.gomaxprocs() || !s.global.is_empty() || crate::netpoll::waiters() > 0 {
        return None;
    }
    if s.procs().any(|p| !p.runq.is_empty() || p.timers.len() > 0) {
        return None;
    }
    for g in crate::runtime::task::allgs::all() {
        if let Some(snap) = g.snapshot() {
            if snap.status != Status::Waiting || snap.reason == WaitReason::Forever {
                return None;
            }
        }
    }
    let waiting: Vec<i32> = thread_waits::waiting()
        .iter()
        .filter(|w| !w.timed)
        .map(|w| w.tid)
        .collect();
    if waiting.is_empty() {
        return None;
    }
    let runtime = os_threads::all();
    let tasks = std::fs::read_dir("/proc/self/task").ok()?;
    for t in tasks {
        let tid: i32 = t.ok()?.file_name().to_str()?.parse().ok()?;
        if !runtime.contains(&tid) && !waiting.contains(&tid) {
            return None; // a thread goro knows nothing of: it may yet act
        }
    }
    let stats = crate::runtime::stats::collect(s);
    let print = Fingerprint {
        switches: stats.context_switches,
        spawned: stats.spawned,
        completed: stats.completed,
        timers_fired: stats.timers_fired,
        netpoll_ready: stats.netpoll_ready,
        thread_waits: before,
    };
    (thread_waits::generation() == before).then_some(print)
}
