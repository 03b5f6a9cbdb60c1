//! The M: an OS thread that runs Gs while it holds a P.
//!
//! # Ownership
//! Ms are created by [`super::wake::start_m`] and live for the rest of the process
//! (`&'static M`). Their fields are atomics so that traces can read them; apart
//! from `nextp` (handed over by the waker, published by the note's release/acquire
//! pair) each is written only by the M's own thread.
//!
//! # Thread-locals
//! `CURRENT_M` and `CURRENT_G` say what this OS thread is running. A G may resume on
//! another M after any park, and the compiler may keep a thread-local's address in
//! a register across the call that switched stacks; so both are read only through
//! the `#[inline(never)]` accessors below, which compute the address afresh on
//! every call. Code running in a G must never cache their results across a park.

use super::g::{GRef, G};
use super::note::Note;
use super::p::P;
use super::sched::sched;
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

thread_local! {
    static CURRENT_M: Cell<*const M> = const { Cell::new(std::ptr::null()) };
    /// Also read by the SIGSEGV handler: const-initialised, no destructor, so the
    /// access is a plain TLS load (async-signal-safe).
    pub(crate) static CURRENT_G: Cell<*const G> = const { Cell::new(std::ptr::null()) };
}

/// `p`/`nextp` value meaning "none" (P ids are stored +1).
const NO_P: usize = 0;

pub(crate) struct M {
    pub(crate) id: i64,
    /// Held P id + 1, or [`NO_P`]. Own thread writes.
    p: AtomicUsize,
    /// P handed to this M by a waker before waking it. Waker writes, M reads after
    /// its note fires.
    nextp: AtomicUsize,
    spinning: AtomicBool,
    /// Parked on its note or blocked in the poller (traces).
    blocked: AtomicBool,
    /// Id of the G it runs, 0 if none (traces).
    curg: AtomicU64,
    pub(crate) note: Note,
    rng: AtomicU64,
    /// Core this thread is pinned to + 1, 0 if not pinned.
    pinned: AtomicUsize,
}

impl M {
    pub(crate) fn new(id: i64) -> M {
        M {
            id,
            p: AtomicUsize::new(NO_P),
            nextp: AtomicUsize::new(NO_P),
            spinning: AtomicBool::new(false),
            blocked: AtomicBool::new(false),
            curg: AtomicU64::new(0),
            note: Note::new(),
            // Any odd seed works for xorshift; mix the id in so Ms differ.
            rng: AtomicU64::new(0x9E37_79B9_7F4A_7C15 ^ ((id as u64 + 1) << 17) | 1),
            pinned: AtomicUsize::new(0),
        }
    }

    /// The P this M holds.
    pub(crate) fn p(&self) -> Option<&'static P> {
        match self.p.load(Ordering::Relaxed) {
            NO_P => None,
            i => Some(&sched().allp[i - 1]),
        }
    }

    pub(crate) fn p_id(&self) -> Option<usize> {
        self.p.load(Ordering::Relaxed).checked_sub(1)
    }

    pub(crate) fn set_nextp(&self, p: usize) {
        self.nextp.store(p + 1, Ordering::Relaxed);
    }

    pub(crate) fn take_nextp(&self) -> Option<usize> {
        self.nextp.swap(NO_P, Ordering::Relaxed).checked_sub(1)
    }

    pub(crate) fn spinning(&self) -> bool {
        self.spinning.load(Ordering::Relaxed)
    }

    pub(crate) fn set_spinning(&self, v: bool) {
        self.spinning.store(v, Ordering::Relaxed);
    }

    pub(crate) fn blocked(&self) -> bool {
        self.blocked.load(Ordering::Relaxed)
    }

    pub(crate) fn set_blocked(&self, v: bool) {
        self.blocked.store(v, Ordering::Relaxed);
    }

    pub(crate) fn curg(&self) -> u64 {
        self.curg.load(Ordering::Relaxed)
    }

    pub(crate) fn set_curg(&self, id: u64) {
        self.curg.store(id, Ordering::Relaxed);
    }

    /// xorshift64*: cheap randomness for steal order. Own thread only.
    pub(crate) fn rand(&self) -> u32 {
        let mut x = self.rng.load(Ordering::Relaxed);
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng.store(x, Ordering::Relaxed);
        (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32) as u32
    }

    /// Takes P `p` (Go's `acquirep`). The P must be idle and off the idle list.
    pub(crate) fn acquire_p(&self, p: usize) {
        debug_assert!(self.p_id().is_none(), "M{} acquiring P{p} while holding one", self.id);
        let s = sched();
        s.allp[p].set_running(self.id);
        self.p.store(p + 1, Ordering::Relaxed);
        if s.config.pin_threads && !s.cores.is_empty() {
            let core = p % s.cores.len();
            if self.pinned.load(Ordering::Relaxed) != core + 1 {
                // Pinning is best effort: a refused affinity leaves the thread free.
                core_affinity::set_for_current(s.cores[core]);
                self.pinned.store(core + 1, Ordering::Relaxed);
            }
        }
    }

    /// Gives up the held P (Go's `releasep`); the caller puts it on the idle list.
    pub(crate) fn release_p(&self) -> usize {
        let p = self.p_id().expect("release_p without a P");
        sched().allp[p].set_idle();
        self.p.store(NO_P, Ordering::Relaxed);
        p
    }
}

/// The M this thread is, if it is one.
#[inline(never)]
pub(crate) fn current_m() -> Option<&'static M> {
    let m = CURRENT_M.with(|c| c.get());
    // SAFETY: Ms are leaked at creation and never freed.
    unsafe { m.as_ref() }
}

/// The P held by this thread's M, if any.
#[inline(never)]
pub(crate) fn current_p() -> Option<&'static P> {
    current_m().and_then(|m| m.p())
}

/// The G running on this thread, if any.
#[inline(never)]
pub(crate) fn current_g() -> Option<GRef> {
    let g = CURRENT_G.with(|c| c.get());
    std::ptr::NonNull::new(g as *mut G).map(GRef::from_ptr)
}

pub(crate) fn set_current_g(g: Option<GRef>) {
    let p = g.map_or(std::ptr::null(), |g| g.as_ptr().as_ptr() as *const G);
    CURRENT_G.with(|c| c.set(p));
}

/// Spawns the OS thread of a new M that starts holding P `p`.
pub(crate) fn spawn_thread(m: &'static M, p: usize, spinning: bool) {
    m.set_nextp(p);
    m.set_spinning(spinning);
    let res = std::thread::Builder::new()
        .name(format!("goro-m{}", m.id))
        .spawn(move || {
            CURRENT_M.with(|c| c.set(m));
            super::signal::on_thread_start();
            let p = m.take_nextp().expect("new M without a P");
            m.acquire_p(p);
            super::schedule::run(m)
        });
    if let Err(e) = res {
        // Without a thread nothing can run the P's work; Go throws here too.
        eprintln!("goro: fatal: cannot start an OS thread for M{}: {e}", m.id);
        std::process::abort();
    }
}
