//! The M: an OS thread that runs Gs while it holds a P.
//!
//! # Ownership
//! Ms are created by the scheduler (`sched/mpark.rs`, `start_m`), and their
//! threads run the loop the runtime was started with (`Hooks::m_main`). Their records are `&'static M`:
//! an M whose thread exits (retired when idle too long, or after its locked G
//! exited) leaves its record on a free list, and the next new M reuses it with a
//! new id. Fields are atomics so that traces and sysmon can read them; apart from
//! `nextp`/`retire` (handed over by the waker, published by the note's
//! release/acquire pair) and `preempt` (sysmon's request) each is written only by
//! the M's own thread.
//!
//! # Thread-locals
//! `CURRENT_M` and `CURRENT_G` say what this OS thread is running. A G may resume on
//! another M after any park, and the compiler may keep a thread-local's address in
//! a register across the call that switched stacks; so both are read only through
//! the `#[inline(never)]` accessors below, which compute the address afresh on
//! every call. Code running in a G must never cache their results across a park.

use super::handover::Handover;
use super::p::{PState, PStatus, P};
use super::pollspin::BUDGET_NS;
use super::state::sched;
use super::tracing;
use crate::runtime::sys::note::Note;
use crate::runtime::sys::trace_buf::{Kind, TraceBuf};
use crate::runtime::task::g::{GRef, G};
use crate::runtime::task::ids::GoId;
use crate::runtime::task::locals::{thread_map_here, LocalMap};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicPtr, AtomicU64, AtomicUsize, Ordering};

thread_local! {
    static CURRENT_M: Cell<*const M> = const { Cell::new(std::ptr::null()) };
    /// Also read by the SIGSEGV handler: const-initialised, no destructor, so the
    /// access is a plain TLS load (async-signal-safe).
    pub(crate) static CURRENT_G: Cell<*const G> = const { Cell::new(std::ptr::null()) };
}

/// `p`/`nextp` value meaning "none" (P ids are stored +1).
const NO_P: usize = 0;

/// `nextp` value telling a parked M to exit instead of taking a P.
const RETIRE: usize = usize::MAX;

pub(crate) struct M {
    id: AtomicI64,
    /// The P it holds, null if none. Own thread writes.
    p: AtomicPtr<P>,
    /// The P its G held when it entered a blocking call (Go's `oldp`).
    oldp: AtomicPtr<P>,
    /// P handed to this M by a waker before waking it (id + 1, [`NO_P`], or
    /// [`RETIRE`]). Waker writes, M reads after its note fires.
    nextp: AtomicUsize,
    /// Depth of runtime code on this thread: 0 while a G runs user code (the only
    /// time its P may be retaken), >0 in the scheduler and in runtime calls made by
    /// the G. Own thread writes; see `sched/ownership.rs`.
    pub(crate) depth: crate::runtime::sys::sync_prims::AtomicU32,
    /// Sysmon asks the running G to yield at its next goro call.
    pub(crate) preempt: AtomicBool,
    /// The G wired to this M by `lock_os_thread`, null if none. Own thread writes.
    lockedg: AtomicPtr<G>,
    /// The G in a blocking call on this M, null if none. Own thread writes.
    syscallg: AtomicPtr<G>,
    /// When it last parked on the idle list (runtime clock), for retirement.
    pub(crate) idle_since: AtomicU64,
    spinning: AtomicBool,
    /// Parked on its note or blocked in the poller (traces).
    blocked: AtomicBool,
    /// Id of the G it runs, 0 if none (traces, dumps).
    curg: AtomicU64,
    /// Its thread's kernel id while the thread runs, 0 before and after
    /// (dumps signal it: `monitor/running.rs`). Own thread writes.
    tid: std::sync::atomic::AtomicI32,
    /// Its thread's CPU-time clock (`pthread_getcpuclockid`), 0 if none:
    /// sysmon tells a G blocked in the kernel from one on the CPU by it.
    /// Own thread writes.
    cpu_clock: std::sync::atomic::AtomicI32,
    pub(crate) note: Note,
    rng: AtomicU64,
    /// Core this thread is pinned to + 1, 0 if not pinned.
    pinned: AtomicUsize,
    /// How long it may poll-spin before sleeping (ns). Own thread only; see
    /// [`super::pollspin`].
    pub(crate) poll_spin_budget: AtomicU64,
    /// When it last left its CPU, and whether handing it over pays. Own thread
    /// only; see [`super::handover`].
    pub(crate) handover: Handover,
    /// Its execution-trace buffer. Own thread only; see `sys/trace_buf.rs`.
    pub(crate) trace: TraceBuf,
    /// Its G yields because sysmon asked it to (traced as a preemption). Own
    /// thread only, and only while tracing.
    pub(crate) preempting: AtomicBool,
    /// When a taker (sysmon, a resize) took its P from its running G (trace
    /// ticks), 0 if not. The taker writes it before committing the take
    /// (`tracing::retaking`), and the M reads and clears it when it finds the
    /// P gone (`tracing::lost_p`): the commit's `Release` and the M's
    /// `Acquire` read of the P's state order the two.
    pub(crate) retaken_at: crate::runtime::sys::sync_prims::AtomicU64,
}

impl M {
    pub(crate) fn new(id: i64) -> M {
        M {
            id: AtomicI64::new(id),
            p: AtomicPtr::new(std::ptr::null_mut()),
            oldp: AtomicPtr::new(std::ptr::null_mut()),
            nextp: AtomicUsize::new(NO_P),
            depth: crate::runtime::sys::sync_prims::AtomicU32::new(1),
            preempt: AtomicBool::new(false),
            lockedg: AtomicPtr::new(std::ptr::null_mut()),
            syscallg: AtomicPtr::new(std::ptr::null_mut()),
            idle_since: AtomicU64::new(0),
            spinning: AtomicBool::new(false),
            blocked: AtomicBool::new(false),
            curg: AtomicU64::new(0),
            tid: std::sync::atomic::AtomicI32::new(0),
            cpu_clock: std::sync::atomic::AtomicI32::new(0),
            note: Note::new(),
            // Any odd seed works for xorshift; mix the id in so Ms differ.
            rng: AtomicU64::new(0x9E37_79B9_7F4A_7C15 ^ ((id as u64 + 1) << 17) | 1),
            pinned: AtomicUsize::new(0),
            poll_spin_budget: AtomicU64::new(BUDGET_NS),
            handover: Handover::new(),
            trace: TraceBuf::new(),
            preempting: AtomicBool::new(false),
            retaken_at: crate::runtime::sys::sync_prims::AtomicU64::new(0),
        }
    }

    pub(crate) fn id(&self) -> i64 {
        self.id.load(Ordering::Relaxed)
    }

    /// Gives a recycled record a new identity (its thread is gone).
    pub(crate) fn reuse(&self, id: i64) {
        self.id.store(id, Ordering::Relaxed);
        self.depth.store(1, Ordering::Relaxed);
        self.preempt.store(false, Ordering::Relaxed);
        self.pinned.store(0, Ordering::Relaxed);
        self.poll_spin_budget.store(BUDGET_NS, Ordering::Relaxed);
        self.retaken_at.store(0, Ordering::Relaxed);
        self.handover.reset();
    }

    /// The P this M holds. From G context, use `ownership::with_p` instead:
    /// sysmon may have taken it meanwhile.
    pub(crate) fn p(&self) -> Option<&'static P> {
        // SAFETY: non-null values are `&'static P` from `acquire_p`.
        unsafe { self.p.load(Ordering::Relaxed).as_ref() }
    }

    pub(crate) fn p_id(&self) -> Option<usize> {
        self.p().map(|p| p.id)
    }

    /// Forgets the P without touching it: it was taken away (`ownership`).
    pub(crate) fn drop_p(&self) {
        self.p.store(std::ptr::null_mut(), Ordering::Relaxed);
    }

    pub(crate) fn oldp(&self) -> Option<&'static P> {
        // SAFETY: as in `p`.
        unsafe { self.oldp.load(Ordering::Relaxed).as_ref() }
    }

    pub(crate) fn set_oldp(&self, p: Option<&'static P>) {
        self.oldp.store(
            p.map_or(std::ptr::null_mut(), |p| p as *const P as *mut P),
            Ordering::Relaxed,
        );
    }

    pub(crate) fn set_nextp(&self, p: usize) {
        self.nextp.store(p + 1, Ordering::Relaxed);
    }

    /// Tells a parked M to exit when woken.
    pub(crate) fn set_retire(&self) {
        self.nextp.store(RETIRE, Ordering::Relaxed);
    }

    /// What a waker handed over: `Some(Some(p))` a P, `Some(None)` "exit".
    pub(crate) fn take_nextp(&self) -> Option<Option<usize>> {
        match self.nextp.swap(NO_P, Ordering::Relaxed) {
            NO_P => None,
            RETIRE => Some(None),
            i => Some(Some(i - 1)),
        }
    }

    pub(crate) fn lockedg(&self) -> Option<GRef> {
        GRef::from_raw(self.lockedg.load(Ordering::Relaxed))
    }

    pub(crate) fn set_lockedg(&self, g: Option<GRef>) {
        store_g(&self.lockedg, g);
    }

    pub(crate) fn syscallg(&self) -> Option<GRef> {
        GRef::from_raw(self.syscallg.load(Ordering::Relaxed))
    }

    pub(crate) fn set_syscallg(&self, g: Option<GRef>) {
        store_g(&self.syscallg, g);
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

    /// Its thread's kernel id, 0 if its thread is not running.
    pub(crate) fn tid(&self) -> i32 {
        self.tid.load(Ordering::Relaxed)
    }

    /// The CPU time its thread has used (ns), if its clock can be read.
    pub(crate) fn cpu_time_ns(&self) -> Option<u64> {
        let clock = self.cpu_clock.load(Ordering::Relaxed);
        if clock == 0 {
            return None;
        }
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: a valid out-pointer; a stale clock id (the thread exited)
        // fails with EINVAL.
        let ok = unsafe { libc::clock_gettime(clock, &mut ts) } == 0;
        ok.then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
    }

    /// Whether its thread is runnable now, on a CPU or waiting for one (state
    /// `R` in `/proc/self/task/<tid>/stat`), if the kernel says: a thread in
    /// a system call sleeps (`S`, `D`). Read by sysmon only.
    pub(crate) fn thread_runnable(&self) -> Option<bool> {
        let tid = self.tid();
        if tid == 0 {
            return None;
        }
        let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).ok()?;
        // `pid (comm) state ...`: comm may hold spaces and parentheses.
        let state = stat.get(stat.rfind(')')? + 1..)?.split_whitespace().next()?;
        Some(state == "R")
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

    /// Takes P `p` (Go's `acquirep`). The P must be off the idle list and owned
    /// by the caller (handed over by a waker, taken from the idle list, ...).
    pub(crate) fn acquire_p(&'static self, p: usize) {
        debug_assert!(self.p_id().is_none(), "M{} acquiring P{p} while holding one", self.id());
        let s = sched();
        let pp = s.p(p);
        // A slice flagged before the P idled is not this holder's.
        pp.slice_over.store(false, Ordering::Relaxed);
        pp.set_state(PState::new(Some(self), PStatus::Running));
        self.p.store(pp as *const P as *mut P, Ordering::Relaxed);
        if tracing::on() {
            tracing::emit_on(self, Kind::PAcquire, 0, 0, 0);
        }
        s.sysmon.p_acquired();
        if s.config.pin_threads && !s.cores.is_empty() {
            let core = p % s.cores.len();
            if self.pinned.load(Ordering::Relaxed) != core + 1 {
                // Pinning is best effort: a refused affinity leaves the thread free.
                core_affinity::set_for_current(s.cores[core]);
                self.pinned.store(core + 1, Ordering::Relaxed);
            }
        }
    }

    /// Holds `p`, already in state `(self, Running)` (a blocking call's old P won back).
    pub(crate) fn adopt_p(&self, p: &'static P) {
        self.p.store(p as *const P as *mut P, Ordering::Relaxed);
    }

    /// Gives up the held P (Go's `releasep`); the caller puts it on the idle list
    /// or hands it on.
    pub(crate) fn release_p(&self) -> usize {
        let p = self.p().expect("release_p without a P");
        if tracing::on() {
            tracing::emit_on(self, Kind::PRelease, 0, 0, 0);
        }
        p.set_state(PState::new(None, PStatus::Idle));
        self.drop_p();
        p.id
    }
}

/// The M `g` is wired to by `lock_os_thread`, if any.
#[inline]
pub(crate) fn lockedm(g: &G) -> Option<&'static M> {
    // SAFETY: non-null values are `&'static M` stored by `set_lockedm`.
    unsafe { g.lockedm_raw().cast::<M>().as_ref() }
}

/// Wires `g` to `m`, or unwires it (`None`). The wired G itself only.
pub(crate) fn set_lockedm(g: &G, m: Option<&'static M>) {
    g.set_lockedm_raw(m.map_or(std::ptr::null(), |m| (m as *const M).cast()));
}

/// Stores an optional G link (own thread only).
fn store_g(link: &AtomicPtr<G>, g: Option<GRef>) {
    link.store(
        g.map_or(std::ptr::null_mut(), |g| g.as_ptr().as_ptr()),
        Ordering::Relaxed,
    );
}

/// The M this thread is, if it is one.
#[inline(never)]
pub(crate) fn current_m() -> Option<&'static M> {
    current_m_here()
}

/// [`current_m`]'s read, inlined: only for the body of another `#[inline(never)]`
/// accessor, as [`current_g_here`].
#[inline(always)]
pub(crate) fn current_m_here() -> Option<&'static M> {
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
    current_g_here()
}

/// The id of the goroutine running this code, or `None` on a plain OS thread. Inside
/// [`blocking`](fn@crate::blocking), it is still the calling goroutine's id.
///
/// ```
/// assert_eq!(goro::current(), None);
/// let h = goro::go!(|| goro::current());
/// let id = h.id();
/// assert_eq!(h.join().unwrap(), Some(id));
/// ```
pub fn current() -> Option<GoId> {
    current_g()
        .or_else(|| current_m().and_then(|m| m.syscallg()))
        .map(|g| GoId::from_raw(g.id()))
}

/// [`current_g`]'s read, inlined: only for the body of another `#[inline(never)]`
/// accessor, which computes the thread-local's address afresh on each call.
#[inline(always)]
pub(crate) fn current_g_here() -> Option<GRef> {
    let g = CURRENT_G.with(|c| c.get());
    std::ptr::NonNull::new(g as *mut G).map(GRef::from_ptr)
}

/// The running context's map of goroutine-local values (`task::locals`): the
/// current G's (also inside its `blocking` call), else this thread's. Never
/// inlined, like every accessor of the current G here.
#[inline(never)]
pub(crate) fn current_map() -> *mut LocalMap {
    if let Some(g) = current_g_here().or_else(|| current_m_here().and_then(|m| m.syscallg())) {
        return g.locals();
    }
    thread_map_here()
}

pub(crate) fn set_current_g(g: Option<GRef>) {
    let p = g.map_or(std::ptr::null(), |g| g.as_ptr().as_ptr() as *const G);
    CURRENT_G.with(|c| c.set(p));
}

/// Spawns the OS thread of a new M that starts holding P `p` and runs the
/// scheduler's loop (`Hooks::m_main`) until the M exits.
pub(crate) fn spawn_thread(m: &'static M, p: usize, spinning: bool) {
    let m_main = sched().hooks.m_main;
    m.set_nextp(p);
    m.set_spinning(spinning);
    let res = std::thread::Builder::new()
        .name(format!("goro-m{}", m.id()))
        .spawn(move || {
            let _runtime_thread = crate::runtime::sys::os_threads::register();
            crate::runtime::sys::dump_signal::unblock_here();
            CURRENT_M.with(|c| c.set(m));
            // SAFETY: gettid(2) has no preconditions.
            m.tid.store(unsafe { libc::gettid() }, Ordering::Relaxed);
            let mut clock: libc::clockid_t = 0;
            // SAFETY: our own thread's handle and a valid out-pointer.
            if unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut clock) } == 0 {
                m.cpu_clock.store(clock, Ordering::Relaxed);
            }
            crate::runtime::sys::altstack::on_thread_start();
            let p = m.take_nextp().flatten().expect("new M without a P");
            m.acquire_p(p);
            m_main(m);
            // Retired: the record goes back for reuse; this thread touches it no more.
            m.trace.release();
            m.tid.store(0, Ordering::Relaxed);
            m.cpu_clock.store(0, Ordering::Relaxed);
            CURRENT_M.with(|c| c.set(std::ptr::null()));
            crate::runtime::sys::altstack::on_thread_exit();
            sched().m_exited(m);
        });
    if let Err(e) = res {
        // Without a thread nothing can run the P's work; Go throws here too.
        crate::runtime::sys::fatal::die_now(&format!(
            "fatal error: goro: cannot start an OS thread for M{}: {e}\n",
            m.id()
        ));
    }
}
