//! Frames of goroutines that are running (or inside `goro::blocking`) when a
//! dump is taken: the dumping thread asks the M that runs the goroutine, with
//! a signal, and the M's signal handler records the interrupted stack's
//! return addresses; the dumping thread resolves them.
//!
//! # The signal
//! A real-time signal (default `SIGRTMIN+6`; `GODEBUG=dumpsig=N` picks
//! another, `dumpsig=0` none), installed with `SA_RESTART | SA_ONSTACK |
//! SA_SIGINFO` when the runtime starts, unless the program already handles
//! it (its handler is kept, and dumps show running goroutines without
//! frames). Each M unblocks it as it starts, as Go's Ms unblock theirs. It is
//! sent to one thread (`rt_tgsigqueueinfo`, so the kernel id of an exited M
//! at worst reaches another thread of this process, which answers "not
//! running"). A system call interrupted by it restarts, except those Linux
//! never restarts after a handler (`epoll_wait`, `nanosleep`, `poll`, reads
//! with a timeout, ...), which return `EINTR` as they do for any signal
//! (docs/SAFETY.md), also inside `goro::blocking`, whose frames a hung
//! sync call is diagnosed by.
//!
//! # Requests
//! A dump asks every running goroutine's M before it collects any answer
//! ([`ask`], [`Asked::answer`]), so a dump waits one [`PATIENCE`] at most
//! for all of them. A request is one of [`SLOTS`] static [`Sample`]s, named in the signal's
//! value by its index and a fresh 58-bit token. The handler acts only on a
//! value whose token is its slot's current one: a value another process or
//! the program queued with the same signal is ignored, never dereferenced.
//! A request nobody answered within [`PATIENCE`] is abandoned; its slot is
//! free again once its signal arrives late, so a thread that keeps the signal
//! blocked holds at most [`SLOTS`] slots (and pending signals), after which
//! dumps stop asking.
//!
//! # The handler (async-signal-safe)
//! It claims the request (`ASKED` → `WRITING`, a CAS), checks that the
//! goroutine asked about is the one on this thread (`CURRENT_G`, or the
//! M's `syscallg`: plain TLS and memory reads) and that the thread runs that goroutine's own code, not a switch
//! into or out of it (`G::in_code`: a half-switched stack is no
//! stack to unwind; the answer is then `BUSY` and the dumping thread asks
//! again), records the interrupted pc from the signal context and walks the
//! stack with the unwinder into the request's fixed array (no allocation,
//! no lock: libgcc finds unwind tables through glibc's lock-free
//! `_dl_find_object`, glibc 2.35+ and GCC 12+; older pairs take the loader's
//! lock, which a thread interrupted inside `dlopen` would hold), then
//! publishes it (`ANSWERED`, Release). It runs on the M's alternate signal
//! stack (64 KiB), not the goroutine's.

use crate::runtime::proc::m::{current_m_here, CURRENT_G, M};
use crate::runtime::sys::dump_signal;
use crate::runtime::sys::frames::{Captured, MAX_FRAMES};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How long a dump waits for one M's answer.
pub(crate) const PATIENCE: Duration = Duration::from_millis(50);

/// The default: clear of glibc's own (below `SIGRTMIN`) and of the first few
/// real-time signals other libraries tend to take.
fn default_signal() -> i32 {
    libc::SIGRTMIN() + 6
}

/// Requests that may be outstanding at once.
const SLOTS: usize = 64;

const FREE: u32 = 0;
const RESERVED: u32 = 1;
const ASKED: u32 = 2;
const WRITING: u32 = 3;
const ANSWERED: u32 = 4;
const NOT_RUNNING: u32 = 5;
const BUSY: u32 = 6;
const ABANDONED: u32 = 7;

/// One request for one goroutine's frames, and its answer.
struct Sample {
    state: AtomicU32,
    /// The value its signal carries: the slot's index in the low 6 bits.
    token: AtomicUsize,
    /// The goroutine asked about.
    g: AtomicU64,
    answer: UnsafeCell<Answer>,
}

struct Answer {
    pc: usize,
    len: usize,
    ips: [usize; MAX_FRAMES],
}

// SAFETY: `answer` is written only by the handler that won the request's
// CAS, and read by the dumping thread only after the handler's Release
// store of `ANSWERED`; the other fields are atomics.
unsafe impl Sync for Sample {}

#[allow(clippy::declare_interior_mutable_const)] // each slot is its own copy
const EMPTY: Sample = Sample {
    state: AtomicU32::new(FREE),
    token: AtomicUsize::new(0),
    g: AtomicU64::new(0),
    answer: UnsafeCell::new(Answer {
        pc: 0,
        len: 0,
        ips: [0; MAX_FRAMES],
    }),
};

static SAMPLES: [Sample; SLOTS] = [EMPTY; SLOTS];

/// Tokens are never reused: a counter, shifted past the slot index.
static NEXT_TOKEN: AtomicUsize = AtomicUsize::new(1);

/// Installs the handler for `dumpsig` (`None`: the default), unless the
/// program handles that signal already.
pub(crate) fn install(dumpsig: Option<i32>) {
    let sig = dumpsig.unwrap_or_else(default_signal);
    if sig == 0 {
        return;
    }
    // The unwinder's first use takes locks (it finds and caches the unwind
    // tables): made here, not in a handler.
    backtrace::trace(|_| false);
    // SAFETY: sigaction with a zeroed struct to read into, then a handler
    // that is async-signal-safe (module docs), installed only over the
    // default or ignored disposition.
    let ok = unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(sig, std::ptr::null(), &mut old) != 0
            || (old.sa_sigaction != libc::SIG_DFL && old.sa_sigaction != libc::SIG_IGN)
        {
            return;
        }
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_signal as *const () as usize;
        action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(sig, &action, std::ptr::null_mut()) == 0
    };
    if ok {
        dump_signal::set(sig);
    }
}

/// The frames of goroutine `g`, which `m` runs: asks `m`'s thread and waits
/// at most [`PATIENCE`]. `None` if it does not run `g` (any more), does not
/// answer, or every request slot is taken by unanswered ones.
pub(crate) fn frames_of(m: &M, g: u64) -> Option<Captured> {
    ask(m, g)?.answer()
}

/// A request sent to an M's thread, to be answered ([`Asked::answer`]): a
/// dump asks every running goroutine's M first and then collects, so the
/// Ms answer together and the wait is one [`PATIENCE`], not one per M.
pub(crate) struct Asked {
    slot: &'static Sample,
    token: usize,
    tid: i32,
    sig: i32,
    deadline: Instant,
}

/// Sends the request for goroutine `g`'s frames to `m`'s thread.
pub(crate) fn ask(m: &M, g: u64) -> Option<Asked> {
    let sig = dump_signal::get();
    let tid = m.tid();
    if sig == 0 || tid == 0 {
        return None;
    }
    let (index, slot) = SAMPLES.iter().enumerate().find(|(_, s)| {
        s.state
            .compare_exchange(FREE, RESERVED, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    })?;
    let token = NEXT_TOKEN.fetch_add(1, Ordering::Relaxed) << 6 | index;
    slot.token.store(token, Ordering::Relaxed);
    slot.g.store(g, Ordering::Relaxed);
    let asked = Asked {
        slot,
        token,
        tid,
        sig,
        deadline: Instant::now() + PATIENCE,
    };
    asked.send().then_some(asked)
}

impl Asked {
    /// (Re)sends the signal; on failure the slot is free again.
    fn send(&self) -> bool {
        // Release: the token and goroutine are visible to the handler that
        // claims the request.
        self.slot.state.store(ASKED, Ordering::Release);
        let sent = queue_signal(self.tid, self.sig, self.token);
        if !sent {
            self.slot.state.store(FREE, Ordering::Release);
        }
        sent
    }

    /// Waits for the answer until the request's deadline, asking again
    /// while the thread is mid-switch.
    pub(crate) fn answer(self) -> Option<Captured> {
        let s = self.slot;
        let state = loop {
            match wait_for_answer(s, self.deadline) {
                Some(BUSY) => {
                    std::thread::sleep(Duration::from_micros(50));
                    if !self.send() {
                        return None;
                    }
                }
                Some(st) => break st,
                None => return None, // abandoned: the late handler frees it
            }
        };
        let answer = (state == ANSWERED).then(|| {
            // SAFETY: the handler published the answer with a Release store we
            // read with Acquire, and writes the slot no more.
            let a = unsafe { &*s.answer.get() };
            let ips = &a.ips[..a.len];
            match ips.iter().position(|&ip| ip == a.pc) {
                Some(i) if a.pc != 0 => Captured::interrupted(a.pc, &ips[i + 1..]),
                _ => Captured::interrupted(a.pc, ips),
            }
        });
        s.state.store(FREE, Ordering::Release);
        answer
    }
}

/// Waits until the handler answered request `s` (the answer's state), or
/// abandons it at `deadline` (`None`).
fn wait_for_answer(s: &Sample, deadline: Instant) -> Option<u32> {
    loop {
        match s.state.load(Ordering::Acquire) {
            st @ (ANSWERED | NOT_RUNNING | BUSY) => return Some(st),
            _ if Instant::now() >= deadline => {
                match s
                    .state
                    .compare_exchange(ASKED, ABANDONED, Ordering::AcqRel, Ordering::Acquire)
                {
                    Ok(_) => return None,
                    // Claimed meanwhile: the answer is moments away.
                    Err(_) => std::thread::yield_now(),
                }
            }
            _ => std::thread::sleep(Duration::from_micros(20)),
        }
    }
}

/// Queues `sig` with `token` as its value to thread `tid` of this process.
fn queue_signal(tid: i32, sig: i32, token: usize) -> bool {
    // SAFETY: a zeroed siginfo with the fields of a queued signal filled in,
    // passed to rt_tgsigqueueinfo for a thread of this process.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let raw = (&mut info as *mut libc::siginfo_t).cast::<QueuedInfo>();
        (*raw).signo = sig;
        (*raw).code = libc::SI_QUEUE;
        (*raw).pid = libc::getpid();
        (*raw).uid = libc::getuid();
        (*raw).value = token;
        libc::syscall(libc::SYS_rt_tgsigqueueinfo, libc::getpid(), tid, sig, &info) == 0
    }
}

/// The head of a queued signal's `siginfo_t` on Linux (`_sifields._rt`).
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

/// The request a signal's value names, if it is a current one.
fn sample_for(value: usize) -> Option<&'static Sample> {
    let s = &SAMPLES[value % SLOTS];
    (value != 0 && s.token.load(Ordering::Acquire) == value).then_some(s)
}

extern "C" fn on_signal(_sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler; the
    // head of a queued one has the layout of `QueuedInfo`.
    let q = unsafe { &*info.cast::<QueuedInfo>() };
    if q.code != libc::SI_QUEUE {
        return;
    }
    let Some(sample) = sample_for(q.value) else {
        return;
    };
    if let Err(actual) = sample
        .state
        .compare_exchange(ASKED, WRITING, Ordering::Acquire, Ordering::Relaxed)
    {
        if actual == ABANDONED {
            // The late delivery of an abandoned request: its slot is free again.
            let _ = sample
                .state
                .compare_exchange(ABANDONED, FREE, Ordering::AcqRel, Ordering::Relaxed);
        }
        return;
    }
    // SAFETY: errno is thread-local; saved and restored around our calls.
    let errno = unsafe { *libc::__errno_location() };
    let running = CURRENT_G.with(|c| c.get());
    // SAFETY: CURRENT_G is non-null only while this thread runs that G, which
    // is alive; a G in a blocking call on this M is alive and parked in it.
    let here = unsafe { running.as_ref() }
        .map(|g| (g.id(), g.in_code()))
        .or_else(|| current_m_here().and_then(|m| m.syscallg()).map(|g| (g.id(), true)));
    let asked = sample.g.load(Ordering::Relaxed);
    let state = if sample.token.load(Ordering::Relaxed) != q.value || here.map(|h| h.0) != Some(asked) {
        NOT_RUNNING
    } else if here.is_some_and(|h| !h.1) {
        BUSY
    } else {
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
        ANSWERED
    };
    sample.state.store(state, Ordering::Release);
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
