//! What the scheduler shares with the observers above it (`monitor/`),
//! so that it can wake them without naming them: sysmon's note and sleep
//! flags ([`SysmonLink`]), and the deadlock check's trigger ([`poke`]), which
//! writes to the reporter thread's pipe.

use super::state::{net_waiters, try_sched};
use crate::runtime::sys::note::Note;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};
use std::time::Duration;

/// sysmon's longest sleep between looks.
pub(crate) const MAX_DELAY: Duration = Duration::from_millis(10);
/// [`MAX_DELAY`] in ns: sysmon looks at least this often while a P runs.
pub(crate) const MAX_DELAY_NS: u64 = MAX_DELAY.as_nanos() as u64;

/// What the rest of the runtime shares with the sysmon thread.
pub(crate) struct SysmonLink {
    pub(crate) note: Note,
    /// Sysmon is in a sleep long enough for a blocking call to cut short
    /// (`monitor::sysmon::LONG_SLEEP`).
    pub(crate) sleeping_long: AtomicBool,
    /// Sysmon sleeps because every P is idle.
    pub(crate) deep: AtomicBool,
}

impl SysmonLink {
    pub(crate) fn new() -> Self {
        SysmonLink {
            note: Note::new(),
            sleeping_long: AtomicBool::new(false),
            deep: AtomicBool::new(false),
        }
    }

    /// Whether sysmon sleeps because every P is idle (`sysmonwait` in traces).
    pub(crate) fn sleeps_deeply(&self) -> bool {
        self.deep.load(Ordering::Relaxed)
    }

    /// An M took a P: if sysmon sleeps deeply, there is something to watch again.
    #[inline]
    pub(crate) fn p_acquired(&self) {
        std::sync::atomic::fence(Ordering::SeqCst);
        if self.deep.load(Ordering::SeqCst) && self.deep.swap(false, Ordering::SeqCst) {
            // The coarse clock stood still while sysmon slept: the Gs about to
            // park on this P stamp their park with it (the swapper's threshold).
            crate::runtime::sys::coarse_clock::tick(super::state::sched().nanotime());
            self.note.wake();
        }
    }

    /// A G entered a blocking call: make sure sysmon looks soon.
    #[inline]
    pub(crate) fn syscall_entered(&self) {
        if self.sleeping_long.load(Ordering::Relaxed) && self.sleeping_long.swap(false, Ordering::Relaxed) {
            self.note.wake();
        }
    }
}

/// The pipe's write end (-1 before the reporter started).
static PIPE_W: AtomicI32 = AtomicI32::new(-1);
/// A check is requested or running: further pokes need not write.
static REQUESTED: AtomicBool = AtomicBool::new(false);

/// Events on the reporter's pipe: a check is due; SIGQUIT came.
pub(crate) const EVENT_CHECK: u8 = b'D';
pub(crate) const EVENT_SIGQUIT: u8 = b'Q';
/// Plain threads in a goro wait without a deadline (`wait::thread_waits`).
static UNTIMED_THREAD_WAITS: AtomicUsize = AtomicUsize::new(0);

/// A plain thread starts (`true`) or ends (`false`) a wait without a deadline.
#[cfg_attr(loom, allow(dead_code))] // plain threads wait unregistered under loom
pub(crate) fn untimed_thread_wait(starts: bool) {
    if starts {
        UNTIMED_THREAD_WAITS.fetch_add(1, Ordering::Relaxed);
    } else {
        UNTIMED_THREAD_WAITS.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The deadlock reporter runs and reads events from the pipe `write_fd` writes.
pub(crate) fn reporter_started(write_fd: i32) {
    PIPE_W.store(write_fd, Ordering::Release);
}

/// The reporter starts a check: a poke from here on writes again.
pub(crate) fn check_started() {
    REQUESTED.swap(false, Ordering::AcqRel);
}

/// The deadlock check may be due: wakes the reporter if the cheap conditions
/// allow a deadlock (`monitor/deadlock.rs`, "Who triggers the check").
pub(crate) fn poke() {
    let Some(s) = try_sched() else {
        return;
    };
    if PIPE_W.load(Ordering::Acquire) < 0 {
        return; // the reporter is not running (yet): nobody to wake
    }
    if s.godebug.no_deadlock_report
        || UNTIMED_THREAD_WAITS.load(Ordering::Relaxed) == 0
        || (s.idle.npidle() as usize) < s.gomaxprocs()
        || net_waiters() > 0
        || s.procs().any(|p| p.timers.any_would_wake())
    {
        return;
    }
    if !REQUESTED.swap(true, Ordering::AcqRel) {
        send(EVENT_CHECK);
    }
}

/// Writes one event byte to the reporter's pipe. Async-signal-safe.
pub(crate) fn send(event: u8) {
    let fd = PIPE_W.load(Ordering::Acquire);
    if fd >= 0 {
        // SAFETY: writing one byte from a valid buffer; a full pipe (an event is
        // already pending) or a closed one only makes the write fail.
        unsafe { libc::write(fd, std::ptr::addr_of!(event).cast(), 1) };
    }
}
