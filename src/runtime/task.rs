//! The task block: what one spawn allocates, and what a `JoinHandle` keeps alive.
//!
//! A task block is a `#[repr(C)]` struct starting with a [`TaskHeader`] (its
//! concrete type, with the closure and the typed join slot, lives in `spawn.rs`).
//! The G that runs it is a separate, pooled header (`g.rs`, `gfree.rs`); the task
//! block is small, so a million finished-but-unjoined goroutines cost a million
//! small blocks, not a million Gs.
//!
//! Two references keep a block alive: the scheduler's, dropped when the G exits,
//! and the `JoinHandle`'s, dropped on join or detach. Whoever drops the last frees
//! it; usually that is the joiner, which is also the thread that allocated it, so
//! the allocator sees no cross-thread free.
//!
//! Orderings: `refs` is decremented with `AcqRel`, so everything either holder did
//! with the block happens-before the free.

use std::io;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The type-erased operations of a task block.
pub(crate) struct TaskVtable {
    /// Runs the body: called with `None` on the G's own stack, or with the error on
    /// the M's stack if no stack could be had (it then only reports the error to
    /// whoever joins). Called at most once.
    pub(crate) run: unsafe fn(NonNull<TaskHeader>, Option<io::Error>),
    /// Drops and frees the whole block. Called once, when the last reference goes.
    pub(crate) dealloc: unsafe fn(NonNull<TaskHeader>),
}

/// The first field of every task block.
#[repr(C)]
pub(crate) struct TaskHeader {
    vtable: &'static TaskVtable,
    refs: AtomicUsize,
}

impl TaskHeader {
    /// A header with two references: the scheduler's and the JoinHandle's.
    pub(crate) fn new(vtable: &'static TaskVtable) -> Self {
        TaskHeader {
            vtable,
            refs: AtomicUsize::new(2),
        }
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
        if self.header().refs.fetch_sub(1, Ordering::AcqRel) == 1 {
            // SAFETY: that was the last reference.
            unsafe { (self.header().vtable.dealloc)(self.0) };
        }
    }
}
