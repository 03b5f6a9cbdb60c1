//! Who holds a P, and how a P is taken from an M that is busy with something else:
//! sysmon's retake of a P whose G hogs it or sits in a blocking call, and a
//! stop-the-world collecting every P.
//!
//! # Runtime depth
//! An M is "in the runtime" whenever it runs scheduler code or a runtime call made
//! by its G (`M::depth` > 0), and "in user code" while its G runs the user's code
//! (`depth` == 0). The P's private state (its ring, caches, counters) is only ever
//! touched in the runtime. So a P may be taken away from its M exactly while that M
//! is in user code; the M notices when it next enters the runtime
//! ([`enter_runtime`]), forgets the P, and carries on without one.
//!
//! # Taking a running P ([`try_take_running`])
//! A Dekker-style handshake between the taker (sysmon, a stop-the-world) and the M:
//!
//! | M entering the runtime            | taker                                   |
//! |-----------------------------------|-----------------------------------------|
//! | `depth = 1`                       | CAS state `(m, Running)` → `(m, Retaking)` |
//! | light barrier                     | heavy barrier                           |
//! | read state: `Retaking`? wait; `(m, Running)`? still mine; else lost | read `depth`: 0? CAS → `(none, to)`; else CAS back to `(m, Running)` |
//!
//! Both sides store, fence, then load what the other stored, so at least one sees
//! the other: the taker never commits while the M is inside the runtime, and an M
//! entering after the commit sees it. If both see each other the M waits for the
//! taker's verdict (a few µs at most: it is between two loads). Every transition
//! the M makes itself happens inside the runtime and overwrites `Retaking`; the
//! taker's commit and abort are CASes from `Retaking`, so they lose to it.
//!
//! The barrier pair is asymmetric: the M's side runs on every runtime entry from a
//! G (every spawn, every wake-up), the taker's side a few times a second at most.
//! With Linux `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)` the light side is a
//! compiler fence and the heavy side makes every running thread of the process
//! execute a full fence (liburcu and folly use the same pair); without it (old
//! kernels, or under loom) both sides are `SeqCst` fences.
//!
//! # Blocking calls ([`enter_syscall`] / [`exit_syscall`])
//! Go's `entersyscall`: the M keeps its P as `oldp` in state `Syscall` and runs the
//! call P-less. Sysmon may CAS `(m, Syscall)` → `(none, Idle)` and hand the P to
//! another M; on return the M CASes `(m, Syscall)` → `(m, Running)` to keep it.
//! Exactly one CAS wins, so no barrier is needed there.
//!
//! Orderings: state transitions are `Release`, reads `Acquire` (`P::state`), so a
//! new holder sees what the old one wrote; `depth` is stored with `Release` on the
//! way out and read by the taker with `Acquire`.

use super::mpark::idle_p_unless_stopping;
use crate::runtime::proc::m::{current_m, set_current_g, M};
use crate::runtime::proc::p::{PState, PStatus, P};
use crate::runtime::proc::state::sched;
use crate::runtime::proc::tracing;
use crate::runtime::sys::sync_prims::{fence, spin_yield, AtomicU32, AtomicUsize, Ordering};
use crate::runtime::task::g::{GRef, Status, Switch};
#[cfg(not(loom))]
use std::sync::atomic::compiler_fence;

/// `membarrier` is registered: the light barrier may be a compiler fence.
static MEMBARRIER: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Registers the process for expedited membarriers; called once at start-up,
/// before any M runs a G.
pub(crate) fn init_barrier() {
    const QUERY: libc::c_int = 0;
    const REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;
    // SAFETY: membarrier takes plain integers and touches no memory of ours.
    let supported = unsafe { libc::syscall(libc::SYS_membarrier, QUERY, 0, 0) };
    if supported >= 0 && supported as libc::c_int & PRIVATE_EXPEDITED != 0 {
        // SAFETY: as above.
        let r = unsafe { libc::syscall(libc::SYS_membarrier, REGISTER_PRIVATE_EXPEDITED, 0, 0) };
        MEMBARRIER.store(r == 0, std::sync::atomic::Ordering::Relaxed);
    }
}

const PRIVATE_EXPEDITED: libc::c_int = 1 << 3;

/// The M's side of the barrier pair (module docs).
#[inline]
fn light_barrier() {
    #[cfg(not(loom))]
    if MEMBARRIER.load(std::sync::atomic::Ordering::Relaxed) {
        compiler_fence(Ordering::SeqCst);
        return;
    }
    fence(Ordering::SeqCst);
}

/// The taker's side of the barrier pair (module docs). False if it could not be
/// had: with the M's side a compiler fence, only a membarrier will do, so the
/// taker must then give up.
#[must_use]
fn heavy_barrier() -> bool {
    #[cfg(not(loom))]
    if MEMBARRIER.load(std::sync::atomic::Ordering::Relaxed) {
        // SAFETY: membarrier takes plain integers and touches no memory of ours.
        let r = unsafe { libc::syscall(libc::SYS_membarrier, PRIVATE_EXPEDITED, 0, 0) };
        return r == 0;
    }
    fence(Ordering::SeqCst);
    true
}

/// The M is about to run user code (its G's body).
pub(crate) fn leave_runtime(m: &M) {
    leave(&m.depth);
}

/// Lowers a runtime depth (the M's side; `Release` pairs with the taker's read).
pub(crate) fn leave(depth: &AtomicU32) {
    let d = depth.load(Ordering::Relaxed);
    debug_assert!(d > 0, "goro: runtime depth underflow");
    depth.store(d - 1, Ordering::Release);
}

/// The M enters the runtime (from user code, or nested). Returns its P if it
/// still holds one; if the P was taken meanwhile, forgets it (marking in the
/// trace where its G's run left it) and returns `None`.
pub(crate) fn enter_runtime(m: &'static M) -> Option<&'static P> {
    let outer = enter(&m.depth);
    let p = m.p()?;
    // Already inside: nobody can have taken the P since we last confirmed it.
    if !outer || still_held(&p.state, PState::new(Some(m), PStatus::Running)) {
        return Some(p);
    }
    m.drop_p();
    tracing::lost_p(m, p.id);
    None
}

/// Raises a runtime depth; true if it was 0 (entering from user code).
pub(crate) fn enter(depth: &AtomicU32) -> bool {
    let d = depth.load(Ordering::Relaxed);
    depth.store(d + 1, Ordering::Relaxed);
    d == 0
}

/// The M's half of the handshake, after [`enter`] returned true: does the P's
/// state still say `mine` (held by this M, running)? Waits out a taker that is
/// deciding.
pub(crate) fn still_held(state: &AtomicUsize, mine: PState) -> bool {
    light_barrier();
    let retaking = mine.with_status(PStatus::Retaking);
    loop {
        let st = PState(state.load(Ordering::Acquire));
        if st == mine {
            return true;
        }
        if st != retaking {
            return false;
        }
        // The taker is between two loads; its verdict comes at once.
        spin_yield();
    }
}

/// Runs `f` inside the runtime with the P this thread's M holds (None on a plain
/// thread, in a blocking call, or when the P was taken away). The P cannot be
/// taken while `f` runs. `f` must not switch Gs, unwind, or run user code (a user
/// `Drop` could do either): runtime code only.
#[inline]
pub(crate) fn with_p<R>(f: impl FnOnce(Option<&'static P>) -> R) -> R {
    match current_m() {
        None => f(None),
        Some(m) => {
            let p = enter_runtime(m);
            let r = f(p);
            debug_assert!(
                current_m().is_some_and(|now| std::ptr::eq(now, m)),
                "goro: switched Gs inside the runtime"
            );
            leave_runtime(m);
            r
        }
    }
}

/// Takers (sysmon, a stop-the-world) take turns: two at once could both write the
/// same `(M, Retaking)` word, and one commit on the other's (an ABA that a
/// `goro::blocking` round trip by the M makes reachable).
static ONE_TAKER: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Tries to take P `p`, seen in state `seen` = (M, Running), from its M while that
/// M runs user code; `still` re-checks the taker's reason after the barrier.
/// On success the P is in state `(none, to)` and belongs to the caller.
pub(crate) fn try_take_running(p: &P, seen: PState, to: PStatus, still: impl FnOnce() -> bool) -> bool {
    debug_assert_eq!(seen.status(), PStatus::Running);
    let Some(m) = seen.m() else { return false };
    let _turn = ONE_TAKER.lock().unwrap_or_else(|e| e.into_inner());
    take(&p.state, seen, PState::new(None, to), &m.depth, still)
}

/// The taker's half of the handshake (module docs): `state` goes from `seen` to
/// `taken` if the M whose runtime depth is `depth` is in user code.
pub(crate) fn take(
    state: &AtomicUsize,
    seen: PState,
    taken: PState,
    depth: &AtomicU32,
    still: impl FnOnce() -> bool,
) -> bool {
    let retaking = seen.with_status(PStatus::Retaking);
    let cas = |from: PState, to: PState| {
        state
            .compare_exchange(from.0, to.0, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    };
    if !cas(seen, retaking) {
        return false;
    }
    if heavy_barrier() && depth.load(Ordering::Acquire) == 0 && still() && cas(retaking, taken) {
        return true;
    }
    // Abort. If the M made a transition meanwhile, it has overwritten `Retaking`
    // and this CAS fails, leaving its state in place.
    cas(retaking, seen);
    false
}

/// The running G `g` enters a blocking call (Go's `entersyscall`): its P stays
/// reserved for it (`Syscall`) but the M runs the call without one, as a plain
/// thread as far as goro is concerned (waits inside block the thread). The
/// caller has entered the runtime: `p` is what [`enter_runtime`] returned.
/// Returns in user code.
///
/// Never inlined (nor is [`exit_syscall`]): both write the thread's current G,
/// and inlined into a caller that parks between two `blocking` calls they could
/// write another thread's.
#[inline(never)]
pub(crate) fn enter_syscall(m: &'static M, g: GRef, p: Option<&'static P>) {
    if let Some(p) = p {
        crate::runtime::proc::p::bump(&p.syscalltick, 1);
        m.set_oldp(Some(p));
        m.drop_p();
        p.set_state(PState::new(Some(m), PStatus::Syscall));
    }
    g.owner_set_status(Status::Running, Status::Syscall);
    m.set_syscallg(Some(g));
    set_current_g(None);
    leave_runtime(m);
    sched().sysmon.syscall_entered();
}

/// The blocking call returned (Go's `exitsyscall`): take the old P back if sysmon
/// did not hand it away, else any idle P; else queue the G and let its M stop
/// until the scheduler runs the G again. With a P the G goes on on this M;
/// queued, it runs on whichever M takes it. Returns in user code.
#[inline(never)]
pub(crate) fn exit_syscall(m: &'static M, g: GRef) {
    let got = take_p_after_syscall(m, g);
    if got && tracing::on() {
        // Inside the runtime, so the P the run starts on cannot be taken before
        // the start is recorded. Queued for want of a P, the G's next run is
        // recorded by the M that takes it.
        tracing::runnable(g);
        tracing::started(m, g, false);
    }
    leave_runtime(m);
    if !got {
        // No P: the G goes to the global queue from the scheduler side (its M then
        // has no P and stops), and continues wherever an M picks it up.
        // SAFETY: `g` is the G running this code.
        unsafe { super::switch::switch_out(&g, Switch::Yield) };
    }
}

/// [`exit_syscall`] up to the switch: the G runs again as itself and the M
/// takes its old P back, or any idle one. Returns whether it got one, inside
/// the runtime (the caller leaves it).
pub(crate) fn take_p_after_syscall(m: &'static M, g: GRef) -> bool {
    enter(&m.depth);
    set_current_g(Some(g));
    m.set_syscallg(None);
    g.owner_set_status(Status::Syscall, Status::Running);
    let mut got = false;
    if let Some(p) = m.oldp() {
        m.set_oldp(None);
        let reserved = PState::new(Some(m), PStatus::Syscall);
        if p.cas_state(reserved, reserved.with_status(PStatus::Running)) {
            m.adopt_p(p);
            got = true;
        }
    }
    if !got {
        if let Some(p) = idle_p_unless_stopping() {
            m.acquire_p(p);
            got = true;
        }
    }
    got
}
