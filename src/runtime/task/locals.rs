//! Goroutine-local storage: the per-G map behind [`crate::local!`].
//!
//! Every G header carries a [`LocalMap`] (in its owner-only context), and every
//! plain OS thread has one in a std thread-local. A key ([`crate::LocalKey`])
//! gets a small slot number the first time any context uses it; a map holds, per
//! slot, a pointer to that context's value, boxed so that its address never
//! changes while the map grows (a key first used inside another key's `with`
//! must not move the first key's value).
//!
//! # Who touches what
//! A G's map is touched only by code running as that G: on its own stack, or
//! inside its `goro::blocking` call, which runs on the same stack on the M that
//! holds the G. So one thread at a time touches it, and the run queues' hand-over
//! of the G (release/acquire) orders the accesses of successive Ms. A thread's
//! map is touched only by that thread. Values therefore need `Send` (a G's
//! values move with it between threads) and never `Sync`.
//!
//! [`current_map`](crate::runtime::proc::m::current_map) (in `proc/m.rs`,
//! which knows the current G) finds the map of the running context. It reads the thread's
//! current G from a thread-local, so it is `#[inline(never)]` and nothing may keep
//! its result across a park: the compiler may otherwise reuse a thread-local's
//! address after the G moved to another thread. The pointer it returns is the
//! G's own map, which moves with the G and stays valid until the G exits.
//!
//! # Lifetime
//! Values are made lazily, on a context's first use of a key, and dropped when
//! the G ends, on its own stack, before its result is published
//! ([`destroy`], from `sched/newproc.rs`); for a thread, when the thread exits. Destruction drops
//! values in reverse order of creation; a destructor may park, may use keys not
//! yet destroyed, and may make values of keys not yet used (they are dropped in
//! turn). Touching a key already destroyed, or any key once destruction is over,
//! panics. A destructor's panic is printed as any goroutine panic is, and the
//! rest are still dropped; the G's result is unchanged. The
//! scheduler empties the map when it recycles the header ([`LocalMap::reset`]),
//! so a recycled G never sees an earlier G's value.

use std::cell::UnsafeCell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Slot numbers handed out so far (keys are numbered from 1; 0 means "none yet").
static NEXT_SLOT: AtomicUsize = AtomicUsize::new(1);

/// A key's slot number, assigned on its first use by any context. `cell` is the
/// key's own counter: 0 until assigned, then fixed.
#[inline]
pub(crate) fn slot_of(cell: &AtomicUsize) -> usize {
    match cell.load(Ordering::Relaxed) {
        0 => assign_slot(cell),
        n => n - 1,
    }
}

#[cold]
fn assign_slot(cell: &AtomicUsize) -> usize {
    let fresh = NEXT_SLOT.fetch_add(1, Ordering::Relaxed);
    // Two contexts may race to number the key: the first store wins and the
    // loser's number is simply never used.
    match cell.compare_exchange(0, fresh, Ordering::Relaxed, Ordering::Relaxed) {
        Ok(_) => fresh - 1,
        Err(won) => won - 1,
    }
}

/// Drops a value made for a key (a `Box<T>` as a raw pointer).
pub(crate) type DropFn = unsafe fn(*mut u8);

/// Where a slot's value is in its life; read only off the fast path.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
enum SlotState {
    #[default]
    Empty,
    /// Its initializer is running.
    Initializing,
    Live,
    Destroyed,
}

/// One context's values, by slot.
#[derive(Default)]
pub(crate) struct LocalMap {
    /// By slot: the live value (made by `Box::into_raw`), else null. The one
    /// vector `with`'s fast path reads.
    values: Vec<*mut u8>,
    /// By slot: its state (`values` is non-null exactly when `Live`).
    states: Vec<SlotState>,
    /// The slots holding values, in order of creation, with each value's drop.
    made: Vec<(usize, DropFn)>,
    /// Destruction has finished: no value may be made or read any more.
    done: bool,
}

impl LocalMap {
    /// The value of `slot`, if one has been made and not destroyed.
    #[inline]
    pub(crate) fn get(&self, slot: usize) -> Option<*mut u8> {
        self.values.get(slot).copied().filter(|v| !v.is_null())
    }

    /// Empties a map whose values have all been dropped, keeping its capacity.
    pub(crate) fn reset(&mut self) {
        debug_assert!(self.made.is_empty(), "goro: local values left behind");
        self.values.clear();
        self.states.clear();
        self.made.clear();
        self.done = false;
    }
}

/// Makes the value of `slot` in `map` with `init`, or panics if that slot cannot
/// have one now (being made, destroyed, or the context is ending). `drop` drops
/// a value made by `init` (a `Box<T>` as raw pointer).
///
/// # Safety
/// `map` is the running context's map (`current_map`) and no reference into
/// its vectors is live; `drop` matches what `init` returns.
#[cold]
#[inline(never)]
pub(crate) unsafe fn make(map: *mut LocalMap, slot: usize, init: &mut dyn FnMut() -> *mut u8, drop: DropFn) -> *mut u8 {
    {
        // SAFETY: the running context's map (caller's contract); this borrow ends
        // before `init` runs, which may use the map itself.
        let m = unsafe { &mut *map };
        if m.values.len() <= slot {
            m.values.resize(slot + 1, std::ptr::null_mut());
            m.states.resize(slot + 1, SlotState::Empty);
        }
        match m.states[slot] {
            _ if m.done => destroyed_panic(),
            SlotState::Destroyed => destroyed_panic(),
            SlotState::Initializing => panic!("goro: a goroutine-local value's initializer used that same value"),
            SlotState::Live => unreachable!("goro: a live goroutine-local value was made again"),
            SlotState::Empty => m.states[slot] = SlotState::Initializing,
        }
    }
    /// Puts the slot back to "not made" if `init` panics.
    struct Unmark(*mut LocalMap, usize);
    impl Drop for Unmark {
        fn drop(&mut self) {
            // SAFETY: as above; runs on the same context, no borrow live.
            unsafe { (&mut *self.0).states[self.1] = SlotState::Empty };
        }
    }
    let unmark = Unmark(map, slot);
    let value = init();
    std::mem::forget(unmark);
    // SAFETY: as above; `init` has returned, so no borrow of the map is live.
    let m = unsafe { &mut *map };
    m.values[slot] = value;
    m.states[slot] = SlotState::Live;
    m.made.push((slot, drop));
    value
}

fn destroyed_panic() -> ! {
    panic!("goro: cannot access a goroutine-local value during or after its destruction")
}

/// Drops every value of `map`, newest first, including any made meanwhile by a
/// destructor. A destructor's panic has been printed by the panic hook; it is
/// caught so that the remaining values are still dropped.
///
/// # Safety
/// `map` is the running context's map, and that context is ending.
pub(crate) unsafe fn destroy(map: *mut LocalMap) {
    loop {
        let next = {
            // SAFETY: the running context's map; the borrow ends before the drop.
            let m = unsafe { &mut *map };
            m.made.pop().map(|(slot, drop)| {
                m.states[slot] = SlotState::Destroyed;
                (std::mem::replace(&mut m.values[slot], std::ptr::null_mut()), drop)
            })
        };
        let Some((value, drop)) = next else { break };
        // SAFETY: `value` was made for this slot with this `drop`, and is
        // dropped once: its slot now says Destroyed.
        let _ = catch_unwind(AssertUnwindSafe(|| unsafe { drop(value) }));
    }
    // SAFETY: as above.
    unsafe { (*map).done = true };
}

/// A plain thread's map, whose values drop when the thread exits.
struct ThreadMap(UnsafeCell<LocalMap>);

impl Drop for ThreadMap {
    fn drop(&mut self) {
        // SAFETY: the thread is exiting; nothing else holds its map. A value
        // whose destructor uses a goroutine-local key panics: this thread-local
        // is being destroyed (`current_map`).
        unsafe { destroy(self.0.get()) };
    }
}

thread_local! {
    static THREAD_MAP: ThreadMap = ThreadMap(UnsafeCell::new(LocalMap::default()));
}

/// This thread's map, for [`current_map`](crate::runtime::proc::m::current_map)
/// when no G runs here. Inlined into that `#[inline(never)]` accessor, so the
/// thread-local's address is computed afresh on each call (module docs).
#[inline(always)]
pub(crate) fn thread_map_here() -> *mut LocalMap {
    THREAD_MAP
        .try_with(|t| t.0.get())
        .unwrap_or_else(|_| panic!("goro: cannot access a goroutine-local value while this thread exits"))
}
