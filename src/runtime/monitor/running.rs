//! Frames of goroutines that are running (or inside `goro::blocking`) when a
//! dump is taken: the dumping thread asks the M that runs the goroutine, with
//! a signal, and the M's signal handler records the interrupted stack's
//! return addresses; the dumping thread resolves them.
//!
//! # The signal
//! A real-time signal (default `SIGRTMIN+6`; `GODEBUG=dumpsig=N` picks
//! another, `dumpsig=0` none), installed with `SA_RESTART | SA_ONSTACK |
//! SA_SIGINFO` when the runtime starts, and sent to one thread
//! (`rt_tgsigqueueinfo`, so the kernel id of an exited M at worst reaches
//! another thread of this process, which answers "not running"). The
//! signal's value is the address of the request ([`Sample`]); the handler
//! acts only on a signal this process queued (`SI_QUEUE` from our own pid).
//! A system call interrupted by it restarts, except those Linux never
//! restarts after a handler (`epoll_wait`, `nanosleep`, `poll`, ...), which
//! return `EINTR` as they do for any signal (docs/SAFETY.md).
//!
//! # The handler (async-signal-safe)
//! It claims the request (`ASKED` → `WRITING`, a CAS: a late delivery of an
//! abandoned request finds it `ABANDONED` and does nothing), checks that the
//! goroutine asked about is the one on this thread (`CURRENT_G`, or the M's
//! `syscallg`: plain TLS and memory reads), records the interrupted pc from
//! the signal context and walks the stack with the unwinder into the
//! request's fixed array (no allocation, no lock: libgcc finds unwind tables
//! through glibc's lock-free `_dl_find_object`, glibc 2.35+ and GCC 12+;
//! older pairs take the loader's lock, which a thread interrupted inside
//! `dlopen` would hold), then publishes it (`ANSWERED`, Release). It runs on
//! the M's alternate signal stack (64 KiB), not the goroutine's.
//!
//! # The dumping thread
//! Sends one request at a time and waits at most [`PATIENCE`] for the
//! answer; a thread that does not answer (the signal blocked, a handler
//! stuck) is dumped without frames, and its request is left allocated (a
//! late handler may still read it) rather than freed.

use crate::runtime::proc::m::{current_m_here, CURRENT_G, M};
use crate::runtime::sys::frames::{Captured, MAX_FRAMES};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// How long a dump waits for one M's answer.
pub(crate) const PATIENCE: Duration = Duration::from_millis(50);

/// The signal in use, 0 before `install` or when switched off.
static SIGNAL: AtomicI32 = AtomicI32::new(0);

/// The default: clear of glibc's own (below `SIGRTMIN`) and of the first few
/// real-time signals other libraries tend to take.
fn default_signal() -> i32 {
    libc::SIGRTMIN() + 6
}

const ASKED: u32 = 0;
const WRITING: u32 = 1;
const ANSWERED: u32 = 2;
const NOT_RUNNING: u32 = 3;
const ABANDONED: u32 = 4;

/// One request for one goroutine's frames, and its answer.
struct Sample {
    state: AtomicU32,
    /// The goroutine asked about.
    g: u64,
    /// Written by the handler between `WRITING` and `ANSWERED`.
    answer: UnsafeCell<Answer>,
}

struct Answer {
    pc: usize,
    len: usize,
    ips: [usize; MAX_FRAMES],
}

// SAFETY: `answer` is written by the one handler that won the `ASKED` →
// `WRITING` CAS and read by the dumping thread after `ANSWERED` (Acquire).
unsafe impl Sync for Sample {}

/// Installs the handler, with the signal `dumpsig` names (`None`: the
/// default; `Some(0)`: none).
pub(crate) fn install(dumpsig: Option<i32>) {
    let sig = dumpsig.unwrap_or_else(default_signal);
    if sig == 0 {
        return;
    }
    // The unwinder's first walk sets up its caches; take it here, not in a
    // handler.
    backtrace::trace(|_| false);
    // SAFETY: a zeroed sigaction is valid; we fill in a handler of the
    // SA_SIGINFO shape and pass valid pointers.
    let ok = unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_signal as *const () as usize;
        action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(sig, &action, std::ptr::null_mut()) == 0
    };
    if ok {
        SIGNAL.store(sig, Ordering::Release);
    }
}

/// The frames of goroutine `g`, running (or in a blocking call) on `m`:
/// `None` if dumps have no signal, the M did not answer within [`PATIENCE`],
/// or `g` no longer runs there.
pub(crate) fn frames_of(m: &M, g: u64) -> Option<Captured> {
    let sig = SIGNAL.load(Ordering::Acquire);
    let tid = m.tid();
    if sig == 0 || tid == 0 {
        return None;
    }
    let sample = Box::into_raw(Box::new(Sample {
        state: AtomicU32::new(ASKED),
        g,
        answer: UnsafeCell::new(Answer {
            pc: 0,
            len: 0,
            ips: [0; MAX_FRAMES],
        }),
    }));
    if !queue_signal(tid, sig, sample) {
        // SAFETY: made above; no signal carries it.
        drop(unsafe { Box::from_raw(sample) });
        return None;
    }
    // SAFETY: freed below only once the handler is done with it.
    let s = unsafe { &*sample };
    let deadline = Instant::now() + PATIENCE;
    let state = loop {
        match s.state.load(Ordering::Acquire) {
            st @ (ANSWERED | NOT_RUNNING) => break st,
            _ if Instant::now() >= deadline => {
                // Left allocated: a handler may still come (or be writing).
                let _ = s
                    .state
                    .compare_exchange(ASKED, ABANDONED, Ordering::AcqRel, Ordering::Acquire);
                return None;
            }
            _ => std::thread::sleep(Duration::from_micros(20)),
        }
    };
    // SAFETY: the handler published its answer (Acquire above) and never
    // touches the request again.
    let sample = unsafe { Box::from_raw(sample) };
    if state != ANSWERED {
        return None;
    }
    let a = sample.answer.into_inner();
    let ips = &a.ips[..a.len];
    // The walk starts in the handler; the goroutine's frames start at the
    // interrupted pc.
    Some(match ips.iter().position(|&ip| ip == a.pc) {
        Some(i) if a.pc != 0 => Captured::interrupted(a.pc, &ips[i + 1..]),
        _ => Captured::interrupted(a.pc, ips),
    })
}

/// Queues `sig` for thread `tid` of this process, carrying `sample`.
fn queue_signal(tid: i32, sig: i32, sample: *mut Sample) -> bool {
    // SAFETY: a zeroed siginfo is valid; we fill in the fields of an
    // SI_QUEUE signal from this process and hand the kernel a valid pointer.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let raw = (&mut info as *mut libc::siginfo_t).cast::<QueuedInfo>();
        (*raw).signo = sig;
        (*raw).code = libc::SI_QUEUE;
        (*raw).pid = libc::getpid();
        (*raw).uid = libc::getuid();
        (*raw).value = sample as usize;
        libc::syscall(libc::SYS_rt_tgsigqueueinfo, libc::getpid(), tid, sig, &info) == 0
    }
}

/// The head of a Linux `siginfo_t` for a queued signal (`_rt` of the union).
#[repr(C)]
struct QueuedInfo {
    signo: i32,
    errno: i32,
    code: i32,
    #[cfg(target_pointer_width = "64")]
    _pad: i32,
    pid: libc::pid_t,
    uid: libc::uid_t,
    value: usize,
}

extern "C" fn on_signal(_sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler; the
    // head of a queued one has the layout of `QueuedInfo`.
    let q = unsafe { &*info.cast::<QueuedInfo>() };
    // SAFETY: getpid(2) is async-signal-safe.
    if q.code != libc::SI_QUEUE || q.pid != unsafe { libc::getpid() } || q.value == 0 {
        return;
    }
    // SAFETY: our own queued signals carry a request that stays allocated
    // until it is answered, or for good once abandoned.
    let sample = unsafe { &*(q.value as *const Sample) };
    if sample
        .state
        .compare_exchange(ASKED, WRITING, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        return;
    }
    // SAFETY: errno is thread-local; saved and restored around our calls.
    let errno = unsafe { *libc::__errno_location() };
    let running = CURRENT_G.with(|c| c.get());
    // SAFETY: CURRENT_G is non-null only while this thread runs that G, which
    // is alive; a G in a blocking call on this M is alive and parked in it.
    let here = unsafe { running.as_ref() }
        .map(|g| g.id())
        .or_else(|| current_m_here().and_then(|m| m.syscallg()).map(|g| g.id()));
    if here != Some(sample.g) {
        sample.state.store(NOT_RUNNING, Ordering::Release);
        // SAFETY: as above.
        unsafe { *libc::__errno_location() = errno };
        return;
    }
    // SAFETY: we won the CAS: the answer is ours to write until we publish it.
    let a = unsafe { &mut *sample.answer.get() };
    a.pc = interrupted_pc(ctx);
    a.len = 0;
    // SAFETY: no allocation or lock in the walk (module docs); the closure
    // only stores into the fixed array.
    unsafe {
        backtrace::trace_unsynchronized(|f| {
            a.ips[a.len] = f.ip() as usize;
            a.len += 1;
            a.len < MAX_FRAMES
        });
    }
    sample.state.store(ANSWERED, Ordering::Release);
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
}

/// The pc the signal interrupted, from the handler's context (0 where this
/// architecture's context is not read: the frames are then the walk's).
fn interrupted_pc(ctx: *mut libc::c_void) -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: an SA_SIGINFO handler's third argument is its ucontext.
        unsafe { (*ctx.cast::<libc::ucontext_t>()).uc_mcontext.gregs[libc::REG_RIP as usize] as usize }
    }
    #[cfg(target_arch = "aarch64")]
    {
        // SAFETY: as above.
        unsafe { (*ctx.cast::<libc::ucontext_t>()).uc_mcontext.pc as usize }
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        let _ = ctx;
        0
    }
}
