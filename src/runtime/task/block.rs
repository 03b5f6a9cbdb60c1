//! The task block: what one spawn allocates, and what a `JoinHandle` keeps alive.
//!
//! A task block is a `#[repr(C)]` struct starting with a [`TaskHeader`] (its
//! concrete type, with the closure and the typed join slot, lives in
//! `sched/newproc.rs`).
//! The G that runs it is a separate, pooled header (`g.rs`, `gfree.rs`); the task
//! block is small, so a million finished-but-unjoined goroutines cost a million
//! small blocks, not a million Gs.
//!
//! Two references keep a block alive: the scheduler's, dropped when the G exits,
//! and the `JoinHandle`'s, dropped on join or detach. Whoever drops the last frees
//! it; usually that is the joiner, which is also the thread that allocated it, so
//! the allocator sees no cross-thread free.
//!
//! # The state word
//! One `AtomicUsize` holds the reference count (2 bits), a lock bit guarding the
//! join slot (result and waiter), and the `FINISHED` / `DETACHED` flags. One word
//! keeps a trivial task's block at 48 bytes, so unjoined tasks touch few pages
//! (docs/decisions/0005-spawn-cost.md).
//!
//! Orderings: the reference count is decremented with `AcqRel`, so everything
//! either holder did with the block happens-before the free. The lock is taken with
//! an `Acquire` CAS and released with a `Release` `fetch_and`; the slot's fields are
//! touched only while it is held. It is held for a few instructions (store or take
//! a result and a waiter), never across a park, so waiters spin.

use std::io;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The type-erased operations of a task block.
pub(crate) struct TaskVtable {
    /// Runs the body: called with `None` on the G's own stack, or with the error on
    /// the M's stack if no stack could be mapped (it then drops the body, as a
    /// plain-thread context, never unwinding, and reports the error on stderr and
    /// to whoever joins). Called at most once.
    pub(crate) run: unsafe fn(NonNull<TaskHeader>, Option<io::Error>),
    /// Drops and frees the whole block. Called once, when the last reference goes.
    pub(crate) dealloc: unsafe fn(NonNull<TaskHeader>),
}

/// One reference, in the low two bits of the state word.
const REF: usize = 1;
const REF_MASK: usize = 0b11;
/// The join slot is locked.
const LOCKED: usize = 1 << 2;
/// The body has finished and its result is (or was) in the slot.
const FINISHED: usize = 1 << 3;
/// The JoinHandle is gone: nobody will read the result.
const DETACHED: usize = 1 << 4;

/// The first field of every task block.
#[repr(C)]
pub(crate) struct TaskHeader {
    vtable: &'static TaskVtable,
    state: AtomicUsize,
}

impl TaskHeader {
    /// A header with two references: the scheduler's and the JoinHandle's.
    pub(crate) fn new(vtable: &'static TaskVtable) -> Self {
        TaskHeader {
            vtable,
            state: AtomicUsize::new(2 * REF),
        }
    }
}

/// The join slot's lock, held: released on drop.
pub(crate) struct SlotLock(TaskRef);

impl SlotLock {
    /// Unlocks and marks the result as stored, in one step. After this the G no
    /// longer touches the slot, so a joiner that sees `FINISHED` (with `Acquire`)
    /// may take the result without the lock.
    pub(crate) fn unlock_finished(self) {
        let task = self.0;
        std::mem::forget(self);
        task.header().state.fetch_xor(LOCKED | FINISHED, Ordering::Release);
    }

    /// Marks the handle as gone.
    pub(crate) fn set_detached(&self) {
        self.0.header().state.fetch_or(DETACHED, Ordering::Relaxed);
    }

    pub(crate) fn detached(&self) -> bool {
        self.0.header().state.load(Ordering::Relaxed) & DETACHED != 0
    }
}

impl Drop for SlotLock {
    fn drop(&mut self) {
        self.0.header().state.fetch_and(!LOCKED, Ordering::Release);
    }
}

/// A pointer to a task block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TaskRef(NonNull<TaskHeader>);

// SAFETY: the block's shared parts are its atomics and the join slot's lock; the
// closure is touched only by the one G that runs it. The body and result are Send.
unsafe impl Send for TaskRef {}
// SAFETY: as above.
unsafe impl Sync for TaskRef {}

impl TaskRef {
    /// # Safety
    /// `p` points to a live task block that starts with a `TaskHeader`.
    pub(crate) unsafe fn from_ptr(p: NonNull<TaskHeader>) -> TaskRef {
        TaskRef(p)
    }

    pub(crate) fn as_ptr(self) -> NonNull<TaskHeader> {
        self.0
    }

    fn header(&self) -> &TaskHeader {
        // SAFETY: a TaskRef is used only while its holder's reference keeps the
        // block alive.
        unsafe { self.0.as_ref() }
    }

    /// Runs the body (see [`TaskVtable::run`]).
    ///
    /// # Safety
    /// Called once per block, by the G that runs it (or by its M when no stack
    /// could be had).
    pub(crate) unsafe fn run(self, no_stack: Option<io::Error>) {
        // SAFETY: the caller's contract is `run`'s.
        unsafe { (self.header().vtable.run)(self.0, no_stack) }
    }

    /// Drops one reference; the last frees the block.
    ///
    /// # Safety
    /// The caller holds one of the block's two references and does not use this
    /// TaskRef afterwards.
    pub(crate) unsafe fn release(self) {
        let prev = self.header().state.fetch_sub(REF, Ordering::AcqRel);
        debug_assert!(prev & REF_MASK != 0, "task released more often than referenced");
        if prev & REF_MASK == REF {
            // SAFETY: that was the last reference.
            unsafe { (self.header().vtable.dealloc)(self.0) };
        }
    }

    /// Takes the join slot's lock. It is held for a few instructions, but a joiner
    /// holds it across its park until the scheduler releases it, so a holder may be
    /// descheduled by the OS: after a short spin, yield the thread.
    pub(crate) fn lock(self) -> SlotLock {
        let state = &self.header().state;
        let mut spins = 0u32;
        loop {
            let s = state.load(Ordering::Relaxed);
            if s & LOCKED == 0
                && state
                    .compare_exchange_weak(s, s | LOCKED, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                return SlotLock(self);
            }
            spins += 1;
            if spins < 64 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }

    /// Has the handle been dropped? Detaching is final, so a `true` stays true;
    /// a `false` may turn (the slot lock decides, in the G's `complete`).
    pub(crate) fn detached_now(self) -> bool {
        self.header().state.load(Ordering::Relaxed) & DETACHED != 0
    }

    /// Has the body finished (its result stored)?
    pub(crate) fn finished(self) -> bool {
        self.header().state.load(Ordering::Acquire) & FINISHED != 0
    }
}
