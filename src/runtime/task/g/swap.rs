//! Swapping a parked G's stack out: the live part of its stack (from just
//! below where it suspended to the top) copied into a heap buffer sized to
//! it, so that its pages can go back to the kernel (`MADV_DONTNEED`, by the
//! caller: `task::swapper` batches them); and copied back to the same
//! addresses before the G next runs, so every pointer into the stack stays
//! valid (docs/decisions/0037-swapping-idle-stacks.md).
//!
//! # Who may touch what
//! - A G's stack is swapped out only while it is pinned ([`pin_parked`]:
//!   `SCAN` in its `Waiting` status, as a dump's inspection pins it), off its
//!   stack and parked in a wait whose records live off its stack
//!   ([`WaitReason::records_off_stack`]) or have just been moved off it by
//!   the wait's [`Relocate`] site: no waker reads or writes the stack, and no
//!   `ready` can hand the G to an M until the pin is released.
//! - The copy ([`Swapped`]) is kept in the G's owner-only context. The
//!   swapper stores it before unpinning (`Release`); the waker's status CAS
//!   (`Acquire`, `G::cas_status`) and the run queue's hand-over order that
//!   store before the resuming M's [`take_swapped`], which copies the bytes
//!   back before the coroutine resumes.
//! - `out` is a hint for the swapper's sweep (which G to skip without
//!   pinning it): written by the owner beside the context's copy, read by
//!   anyone.
//!
//! # How far below the suspend point
//! A G records its stack pointer right before it switches out
//! (`resume_sp`); the switch (corosensei's suspend) writes a few words below
//! it. The copy starts [`switch_room`] lower, measured once per process on
//! a probe coroutine.

use super::{Status, G, SCAN};
use crate::runtime::sys::frames::Captured;
use crate::runtime::task::ids::WaitReason;
use crate::runtime::task::stack::{any_resident, page_size, release_pages};
use corosensei::stack::{DefaultStack, Stack};
use corosensei::{Coroutine, Yielder};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// A parked G's wait records that other threads reach (a sudog in a
/// queue, its claim), as the swapper sees them: they can move to the heap
/// while the G is out, so that nothing writes its stack (`wait/waitq.rs`
/// implements it for sudog waits; the G moves them back when it wakes).
pub(crate) trait Relocate {
    /// The swapper, holding the parked G pinned: moves the records to the
    /// heap under their queue's lock, if the wait is still on; false if it
    /// is ending (the G is being woken: it is not swapped).
    fn move_out(&self) -> bool;
}

/// The G's current wait's [`Relocate`], if it has one: set by the G itself
/// before it parks and cleared once it is back, read by the swapper under
/// the pin.
pub(crate) type Site = Option<std::ptr::NonNull<dyn Relocate>>;

impl G {
    /// Records (`Some`) or clears the wait's records for the swapper.
    ///
    /// # Safety
    /// Called by the running G on itself; a site stays valid (in the G's
    /// frame) until the G clears it.
    #[inline]
    pub(crate) unsafe fn set_wait_site(&self, site: Option<&dyn Relocate>) {
        // SAFETY: only the lifetime is erased: the caller keeps the site
        // alive until it clears it, and the swapper reads it only while
        // the G is parked, set.
        let site = site.map(|r| unsafe {
            std::mem::transmute::<std::ptr::NonNull<dyn Relocate + '_>, std::ptr::NonNull<dyn Relocate + 'static>>(
                std::ptr::NonNull::from(r),
            )
        });
        // SAFETY: the running G owns its context (caller's contract).
        unsafe { self.ctx() }.site = site;
    }
}

/// The live part of a swapped-out stack: the bytes of its top (they go
/// back to `[top - len, top)`), and what a dump saw of it.
pub(crate) struct Swapped {
    bytes: Box<[u8]>,
    /// Where the G is parked, once a dump has looked: its frames do not
    /// change while it is out, so later dumps need not bring it in.
    frames: Option<Box<Captured>>,
}

impl Swapped {
    /// Bytes kept on the heap.
    pub(crate) fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Copies the bytes back where they were, up to `top`.
    ///
    /// # Safety
    /// The caller owns the G this came from, whose stack ends at `top` and
    /// is not running.
    unsafe fn restore(self, top: usize) {
        let lo = top - self.bytes.len();
        // SAFETY: the caller's contract: the range is this G's stack, which
        // nothing else touches while it is owned and not running.
        unsafe { std::ptr::copy_nonoverlapping(self.bytes.as_ptr(), lo as *mut u8, self.bytes.len()) };
    }
}

/// The stack pointer here. Inlined into the caller, so it is the caller's
/// own: in [`G::suspend`](super::G::suspend), read right before the switch
/// out, everything the suspended G's resume reads lies at or above it, but
/// for what the switch itself writes below it ([`switch_room`]).
#[inline(always)]
pub(super) fn stack_pointer() -> usize {
    let sp: usize;
    #[cfg(target_arch = "x86_64")]
    // SAFETY: reads a register into a local; touches no memory.
    unsafe {
        std::arch::asm!("mov {}, rsp", out(reg) sp, options(nomem, nostack, preserves_flags));
    }
    #[cfg(target_arch = "aarch64")]
    // SAFETY: as above.
    unsafe {
        std::arch::asm!("mov {}, sp", out(reg) sp, options(nomem, nostack, preserves_flags));
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        let here = 0u8;
        sp = std::hint::black_box(std::ptr::addr_of!(here)) as usize;
    }
    sp
}

/// How far below [`stack_pointer`], read before a switch out, the switch
/// writes (corosensei's suspend and the registers it saves), with 256 bytes
/// to spare: measured once per process on a probe coroutine whose stack is
/// filled with two patterns in turn (the lowest byte that changed). About
/// 24 bytes in an optimised build, 600 in a debug one.
pub(crate) fn switch_room() -> usize {
    static ROOM: OnceLock<usize> = OnceLock::new();
    *ROOM
        .get_or_init(|| (written_below_the_switch(0xa5).max(written_below_the_switch(0x5a)) + 256).next_multiple_of(64))
}

/// Fills a probe coroutine's stack with `pattern`, suspends it as a G
/// suspends (the stack pointer read, then the switch), and returns how far
/// below that pointer the lowest byte it wrote lies.
fn written_below_the_switch(pattern: u8) -> usize {
    let stack = DefaultStack::new(64 << 10).expect("goro: cannot map a probe stack");
    // `limit` counts the probe stack's guard page, which is one page.
    let (lo, hi) = (stack.limit().get() + page_size(), stack.base().get());
    // SAFETY: the probe stack's usable range, mapped, writable and unused yet.
    unsafe { std::ptr::write_bytes(lo as *mut u8, pattern, hi - lo) };
    let sp = Arc::new(AtomicUsize::new(0));
    let recorded = sp.clone();
    let mut co = Coroutine::<(), (), (), DefaultStack>::with_stack(stack, move |y: &Yielder<(), ()>, ()| {
        recorded.store(stack_pointer(), Ordering::Relaxed);
        y.suspend(());
    });
    co.resume(());
    // SAFETY: the coroutine is suspended: nothing writes its stack while we read.
    let lowest = (lo..hi)
        .find(|&a| unsafe { *(a as *const u8) } != pattern)
        .expect("the probe wrote its stack");
    co.resume(());
    sp.load(Ordering::Relaxed).saturating_sub(lowest)
}

/// Stacks swapped out since the process started.
pub(crate) static SWAPPED_OUT: AtomicU64 = AtomicU64::new(0);
/// Stacks swapped back in since the process started.
pub(crate) static SWAPPED_IN: AtomicU64 = AtomicU64::new(0);
/// Gauge: bytes of swapped-out stacks held on the heap.
pub(crate) static HELD_BYTES: AtomicU64 = AtomicU64::new(0);

/// A sweep's cheap look, without pinning: whether `g` is parked, not yet
/// swapped out, in a wait that may be swapped ([`WaitReason::may_swap`]). Any answer may
/// be stale; [`swappable`] decides under the pin.
pub(crate) fn swap_candidate(g: &G) -> bool {
    !g.out.load(Ordering::Relaxed)
        && g.status.load(Ordering::Relaxed) == Status::Waiting as u8
        && g.wait_reason().may_swap()
}

/// Pins a `Waiting` G (`SCAN` in its status) so no `ready` can run it, if it
/// is one. The caller then owns the G until [`unpin`]; the G may still be on
/// its stack (`off_cpu` says).
pub(crate) fn pin_parked(g: &G) -> bool {
    let waiting = Status::Waiting as u8;
    g.status
        .compare_exchange(waiting, waiting | SCAN, Ordering::Acquire, Ordering::Relaxed)
        .is_ok()
}

/// As [`pin_parked`], waiting out another pin (the swapper's, or another
/// dump's, held for the time of one copy or one backtrace) instead of
/// giving up: a dump must see every parked G.
pub(crate) fn pin_parked_waiting(g: &G) -> bool {
    let waiting = Status::Waiting as u8;
    loop {
        match g
            .status
            .compare_exchange(waiting, waiting | SCAN, Ordering::Acquire, Ordering::Relaxed)
        {
            Ok(_) => return true,
            Err(actual) if actual == waiting | SCAN => std::thread::yield_now(),
            Err(_) => return false,
        }
    }
}

/// Releases a [`pin_parked`] pin: what the pinning thread did to the G
/// happens-before whatever its waker does next (`Release`).
pub(crate) fn unpin(g: &G) {
    g.status.store(Status::Waiting as u8, Ordering::Release);
}

/// The stack of a G pinned by [`pin_parked`] that may be swapped out now:
/// `[bottom, top)` of its whole usable range, to give back to the kernel once
/// [`swap_out`] has copied its live part. `None` if it is still on its
/// stack, already out, or parked in a wait whose records live on its stack.
pub(crate) fn swappable(g: &G) -> Option<(usize, usize)> {
    // `off_cpu` first: its Acquire makes this park's `resume_sp` visible.
    if !g.off_cpu.load(Ordering::Acquire) {
        return None;
    }
    // SAFETY: pinned (the caller's contract) and off its stack: we own it.
    let ctx = unsafe { g.ctx() };
    // SAFETY: as above.
    if ctx.swapped.is_some() || unsafe { g.coroutine() }.is_none() || ctx.inspecting {
        return None;
    }
    if ctx.site.is_none() && !g.wait_reason().records_off_stack() {
        return None;
    }
    let bottom = g.guard.get().1;
    Some((bottom, bottom + g.stack_size()))
}

/// Copies the live part of a pinned G's stack (one [`swappable`] said yes
/// to) into the heap and keeps it in the G's context, to be copied back
/// before it runs, after moving its wait's records to the heap. Returns the
/// bytes kept, or `None` if its wait is ending (nothing moved or copied).
/// The caller then releases the stack's pages and unpins the G.
pub(crate) fn swap_out(g: &G) -> Option<usize> {
    // SAFETY: pinned and off its stack (the caller's contract): we own it.
    if let Some(site) = unsafe { g.ctx() }.site {
        // SAFETY: the site lives in the parked G's frame while set.
        if !unsafe { site.as_ref() }.move_out() {
            return None;
        }
    }
    let bottom = g.guard.get().1;
    let top = bottom + g.stack_size();
    let sp = g.resume_sp.load(Ordering::Relaxed);
    let lo = sp.saturating_sub(switch_room()).max(bottom) & !15;
    // SAFETY: `[lo, top)` lies in the G's mapped stack; the G is pinned and
    // off its stack, so nothing writes it while we read.
    let bytes: Box<[u8]> = unsafe { std::slice::from_raw_parts(lo as *const u8, top - lo) }.into();
    let len = bytes.len();
    // SAFETY: pinned and off its stack (the caller's contract): we own it.
    unsafe { g.ctx() }.swapped = Some(Swapped { bytes, frames: None });
    g.out.store(true, Ordering::Relaxed);
    HELD_BYTES.fetch_add(len as u64, Ordering::Relaxed);
    Some(len)
}

/// Swaps a pinned G's stack out at once, its pages released on their own:
/// for a dump that brought it in for a capture (`inspect::inspect`).
pub(super) fn swap_out_pinned(g: &G) {
    if let Some((bottom, top)) = swappable(g) {
        if swap_out(g).is_some() {
            // A failed release leaves the pages resident: the copy stays right.
            let _ = release_pages(bottom, top);
            SWAPPED_OUT.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The frames a dump recorded of a pinned, swapped-out G, if one did.
pub(crate) fn frames_while_out(g: &G) -> Option<Captured> {
    // SAFETY: pinned (the caller's contract): we own the G.
    unsafe { g.ctx() }
        .swapped
        .as_ref()
        .and_then(|s| s.frames.as_deref().cloned())
}

/// Keeps `frames` with a pinned G's swapped-out stack, for later dumps.
pub(crate) fn remember_frames(g: &G, frames: &Captured) {
    // SAFETY: pinned (the caller's contract): we own the G.
    if let Some(s) = unsafe { g.ctx() }.swapped.as_mut() {
        s.frames = Some(Box::new(frames.clone()));
    }
}

/// The bytes of a swapped-out stack held on the heap, `None` if it is in.
///
/// # Safety
/// The caller owns the G, which is not running.
pub(crate) unsafe fn swapped_len(g: &G) -> Option<usize> {
    // SAFETY: the caller's contract.
    unsafe { g.ctx() }.swapped.as_ref().map(Swapped::len)
}

/// The owner of a G about to run it (or to inspect it): copies a swapped-out
/// stack back. Returns the bytes copied, 0 if the stack was in.
///
/// # Safety
/// The caller owns the G, which is not running.
#[inline]
pub(crate) unsafe fn take_swapped(g: &G) -> usize {
    // SAFETY: the caller's contract.
    let swapped = &mut unsafe { g.ctx() }.swapped;
    if swapped.is_none() {
        return 0;
    }
    swap_in(g, swapped.take().expect("checked"))
}

#[cold]
#[inline(never)]
fn swap_in(g: &G, s: Swapped) -> usize {
    let len = s.len();
    let top = g.guard.get().1 + g.stack_size();
    if any_resident(top - len, top) {
        touched_while_out(g);
    }
    // SAFETY: `take_swapped`'s caller owns the G, whose stack `s` came from
    // and ends at `top`.
    unsafe { s.restore(top) };
    g.out.store(false, Ordering::Relaxed);
    HELD_BYTES.fetch_sub(len as u64, Ordering::Relaxed);
    SWAPPED_IN.fetch_add(1, Ordering::Relaxed);
    len
}

/// Something read or wrote a swapped-out stack: a thread that borrows a
/// goroutine's locals across a goro wait (SAFETY.md, "Another thread in a
/// goroutine's stack"). Its writes went to pages the swap-in would
/// overwrite, and its reads saw zeros: the process stops rather than run
/// on with that.
#[cold]
#[inline(never)]
fn touched_while_out(g: &G) -> ! {
    eprintln!(
        "goro: fatal error: goroutine {}'s stack was touched by another thread while it was swapped out \
         (parked longer than Config::swap_idle_after); a thread that borrows a goroutine's locals must be \
         done with them before the goroutine waits, or turn swapping off",
        g.id()
    );
    std::process::abort()
}

impl WaitReason {
    /// Whether a G parked for this reason may be swapped out: its wait keeps
    /// nothing on its stack, or keeps a sudog there that can move to the heap
    /// (its wait's [`Relocate`] site decides, under the pin).
    fn may_swap(self) -> bool {
        self.records_off_stack()
            || matches!(
                self,
                WaitReason::ChanRecv
                    | WaitReason::ChanSend
                    | WaitReason::Select
                    | WaitReason::SyncMutexLock
                    | WaitReason::SyncRWMutexRLock
                    | WaitReason::SyncRWMutexLock
                    | WaitReason::SyncCondWait
                    | WaitReason::SyncWaitGroupWait
                    | WaitReason::Semacquire
                    | WaitReason::SyncOnce
                    | WaitReason::IoWait
            )
    }

    /// Whether a G parked for this reason leaves nothing on its stack that
    /// another thread reads or writes while it waits (its waker holds the
    /// G's header, a timer or a task block's join slot): such a G's stack
    /// may be swapped out. Channel, `select`, `sync` and network waits keep
    /// their sudogs and claims on the stack; a future awaited by `block_on`
    /// lives there, and may be linked into another thread's wait list
    /// (Tokio's `Notify` links its pinned futures so).
    pub(crate) fn records_off_stack(self) -> bool {
        matches!(
            self,
            WaitReason::Sleep | WaitReason::Forever | WaitReason::Join | WaitReason::SelectNoCases
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_switch_room_is_measured_and_small() {
        let room = switch_room();
        assert!((256..2048).contains(&room), "{room}");
    }
}
