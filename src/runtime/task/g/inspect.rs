//! A dump's view of a G: [`snapshot`], what a dump prints of a live G, read
//! under the header's `meta` lock; and [`inspect`], where a parked G is
//! parked: the dump pins it (`SCAN` in its status, so no `ready` can run it),
//! resumes its coroutine on the dumping thread for the one capture the G
//! makes of its own frames ([`record`], from `G::suspend`'s loop), and unpins
//! it. Thread: any (the dumping thread); the G is owned by it only while
//! pinned.

use super::{swap, Status, G};
use crate::runtime::sys::frames::{capture_below, Captured};
use crate::runtime::task::ids::WaitReason;
use corosensei::CoroutineResult;
use std::panic::Location;
use std::sync::atomic::Ordering;

/// Stack a parked G must have left for a dump to record its frames there
/// (the unwinder's capture needs a few KiB).
const INSPECT_ROOM: usize = 8 << 10;

/// Yields a dump waits, at most, for a G that has just parked to be off its
/// stack (its M's next few instructions).
const OFF_CPU_PATIENCE: usize = 1000;

/// A live G as a dump sees it ([`snapshot`]).
pub(crate) struct Snapshot {
    pub(crate) id: u64,
    pub(crate) status: Status,
    pub(crate) reason: WaitReason,
    pub(crate) name: Option<String>,
    pub(crate) creator: u64,
    pub(crate) created_at: &'static Location<'static>,
    pub(crate) wait_since_ms: u64,
    pub(crate) locked: bool,
    pub(crate) m: i64,
}

/// What a dump shows of this G, if it is alive: read under `meta`.
pub(crate) fn snapshot(g: &G) -> Option<Snapshot> {
    g.with_meta(|| {
        let raw = g.status.load(Ordering::Acquire);
        let status = Status::from_u8(raw);
        if matches!(status, Status::Dead | Status::Idle) {
            return None;
        }
        Some(Snapshot {
            id: g.id(),
            status,
            reason: g.wait_reason(),
            // SAFETY: under `meta`, after an Acquire read of a live status
            // (module docs): the name is the live G's and not being freed.
            name: unsafe { (*g.name.get()).as_deref().map(str::to_owned) },
            creator: g.creator.load(Ordering::Relaxed),
            created_at: g.created_at.get(),
            wait_since_ms: g.wait_since.load(Ordering::Relaxed),
            locked: !g.lockedm_raw().is_null(),
            m: g.m_id(),
        })
    })
}

/// Records where this parked G is parked: pins it (`SCAN`, so no `ready`
/// can run it meanwhile), resumes its coroutine on the calling thread for
/// the one capture [`G::suspend`] makes, and unpins it. `None` if the G is
/// not parked and off its stack, is no longer goroutine `id`, or has too
/// little stack left for the capture.
pub(crate) fn inspect(g: &G, id: u64) -> Option<Captured> {
    // A G that has just turned `Waiting` is still switching out: its M marks
    // it off its stack a moment later.
    for _ in 0..OFF_CPU_PATIENCE {
        if g.off_cpu.load(Ordering::Acquire) || g.status() != Status::Waiting {
            break;
        }
        std::thread::yield_now();
    }
    if !swap::pin_parked_waiting(g) {
        return None;
    }
    // `off_cpu` first: its Acquire makes this park's `resume_sp` visible.
    let parked = g.id() == id && g.off_cpu.load(Ordering::Acquire);
    let room = || g.resume_sp.load(Ordering::Relaxed).saturating_sub(g.guard.get().1);
    let captured = if parked && room() >= INSPECT_ROOM {
        // SAFETY: the G is parked, off its stack (its coroutine stored back)
        // and pinned by SCAN: no M may resume it until we clear the bit, so
        // this thread owns it.
        let ctx = unsafe { g.ctx() };
        if let Some(frames) = swap::frames_while_out(g) {
            swap::unpin(g);
            return Some(frames);
        }
        // A swapped-out stack comes back for the capture, and goes out again
        // with the frames, which later dumps then reuse.
        // SAFETY: as above.
        let was_out = unsafe { swap::take_swapped(g) } > 0;
        // SAFETY: as above; the G's own code never touches its coroutine.
        let captured = unsafe { g.coroutine() }.as_mut().and_then(|co| {
            ctx.inspecting = true;
            let result = co.resume(());
            // SAFETY: the G suspended again (below), so we own it again.
            let ctx = unsafe { g.ctx() };
            ctx.inspecting = false;
            debug_assert!(matches!(result, CoroutineResult::Yield(())));
            ctx.inspected.take()
        });
        if was_out {
            swap::swap_out_pinned(g);
            if let Some(c) = &captured {
                swap::remember_frames(g, c);
            }
        }
        captured
    } else {
        None
    };
    swap::unpin(g);
    captured
}

/// Records this G's frames for a dump that resumed it ([`inspect`]).
#[cold]
#[inline(never)]
pub(super) fn record(g: &G) {
    // The frames of the dump's own thread, below the coroutine, are not the G's.
    let frames = capture_below(g.guard.get().1 + g.stack_size());
    // SAFETY: the dump resumed us and waits: this G owns it.
    unsafe { g.ctx() }.inspected = Some(frames);
}
