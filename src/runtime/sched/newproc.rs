//! Making a G (Go's `newproc`) and its end: the task block one spawn
//! allocates, running its body, and handing its result to the joiner.
//!
//! A spawn makes one heap block, a [`Task`]: the closure and the join slot, behind
//! a type-erased header (`task/block.rs`). It takes a free G header from the pool
//! (`proc/p.rs`, `gfget`), points it at the task, and puts the G in the current P's
//! `runnext`, or in the global queue when called from a plain thread. No stack is
//! touched until the G first runs.
//!
//! The block is shared by the scheduler and the `JoinHandle` (`src/spawn.rs`);
//! whichever lets go last frees it. A `JoinHandle<T>` does not know the closure's
//! type, only `T`: it reads the slot through [`TaskHead<T>`], a `#[repr(C)]` prefix
//! of every `Task<F, T>`, which puts the slot at the same offset whatever `F` is.
//! The block's end wakes the joiner, a scheduler act: hence this file is in
//! `sched/`, not `task/`.

use super::mpark::wakep;
use super::ownership::with_p;
use crate::runtime::proc::m::{current_g, current_m, current_map};
use crate::runtime::proc::p::{bump, gfget, P};
use crate::runtime::proc::state::sched;
use crate::runtime::proc::waiter::Waiter;
use crate::runtime::task::block::{TaskHeader, TaskRef, TaskVtable};
use crate::runtime::task::g::{GRef, Spawn};
use crate::runtime::task::ids::GoId;
use crate::runtime::task::locals::destroy;
use crate::runtime::task::stack::round_size;
use std::any::Any;
use std::cell::UnsafeCell;
use std::io;
use std::panic::Location;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::NonNull;
use std::sync::atomic::Ordering;

/// Where a G comes from, for dumps: the call site and who made the call.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Origin {
    at: &'static Location<'static>,
    /// See `task::g::CREATOR_THREAD_BIT`.
    creator: u64,
}

impl Origin {
    /// The caller's call site (through `#[track_caller]` frames) and context.
    #[track_caller]
    pub(crate) fn here() -> Origin {
        Origin {
            at: Location::caller(),
            creator: creator(),
        }
    }
}

/// Makes a G running `f` and queues it (Go's `newproc`): `Builder::spawn`'s
/// work once it has checked the settings (`stack_size` at most
/// [`MAX_STACK_SIZE`](crate::runtime::task::stack::MAX_STACK_SIZE), `name`
/// without NUL). Returns the task block, of which the caller's `JoinHandle`
/// holds one reference, and the G's id.
#[inline(always)]
pub(crate) fn newproc<F, T>(name: Option<String>, stack_size: Option<usize>, origin: Origin, f: F) -> (TaskRef, GoId)
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    super::preempt::check();
    let s = sched();
    let stack_size = stack_size.map_or(s.config.stack_size, round_size);
    let spawn = Spawn {
        name: name.map(String::into_boxed_str),
        stack_size,
        creator: origin.creator,
        at: origin.at,
    };
    // One runtime section: the G's id, header and queue all come from the P
    // this M holds, which cannot be taken away meanwhile.
    let (id, task) = with_p(|p| {
        let id = next_goid(p);
        let task = Box::new(Task {
            head: TaskHead {
                header: TaskHeader::new(&Task::<F, T>::VTABLE),
                slot: JoinSlot::<T>::new(),
            },
            f: UnsafeCell::new(Some(f)),
        });
        // SAFETY: a fresh Task starts with its TaskHeader (#[repr(C)]).
        let task = unsafe { TaskRef::from_ptr(NonNull::from(Box::leak(task)).cast()) };
        let g = gfget(p);
        // SAFETY: gfget hands us the header exclusively.
        unsafe { g.init(id, spawn, task) };
        if crate::runtime::proc::tracing::on() {
            // SAFETY: `init` wrote the name and no other thread has the G yet.
            crate::runtime::proc::tracing::created(g, unsafe { g.name() });
        }
        queue_new(p, g);
        (id, task)
    });
    wakep();
    (task, GoId::from_raw(id))
}

/// Starts `f` in a goroutine named `name` that nobody joins: runtime code's
/// way to run user code (a destructor, say) outside the runtime. If `f` has
/// already finished when it is detached, its `()` result goes with the block.
pub(crate) fn go_detached(name: &str, origin: Origin, f: impl FnOnce() + Send + 'static) {
    let (task, _) = newproc(Some(name.to_owned()), None, origin, f);
    let lock = task.lock();
    lock.set_detached();
    drop(lock);
    // SAFETY: the handle's reference `newproc` returned, released once, here.
    unsafe { task.release() };
}

/// The part of every task block a `JoinHandle<T>` may see.
#[repr(C)]
pub(crate) struct TaskHead<T> {
    header: TaskHeader,
    slot: JoinSlot<T>,
}

/// One spawn's heap block: header, join slot, closure.
#[repr(C)]
struct Task<F, T> {
    head: TaskHead<T>,
    /// The body until it runs. Touched only by the G itself (or, if no stack could
    /// be had, by the M reporting that).
    f: UnsafeCell<Option<F>>,
}

impl<F, T> Task<F, T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    const VTABLE: TaskVtable = TaskVtable {
        run: Self::run,
        dealloc: Self::dealloc,
    };

    /// # Safety
    /// `t` heads a `Task<F, T>`; called once (`TaskVtable::run`).
    unsafe fn run(t: NonNull<TaskHeader>, no_stack: Option<io::Error>) {
        // SAFETY: `t` heads a Task<F, T> (caller's contract); `f` is ours alone.
        let task = unsafe { t.cast::<Task<F, T>>().as_ref() };
        // SAFETY: as above: only this one call touches `f`.
        let f = unsafe { (*task.f.get()).take() }.expect("goro: goroutine body ran twice");
        // SAFETY: `t` heads this task block (caller's contract).
        let task_ref = unsafe { TaskRef::from_ptr(t) };
        let result = match no_stack {
            None => {
                let result = catch_unwind(AssertUnwindSafe(|| __rust_begin_short_backtrace(f)));
                // A detached G's result has no reader: it drops now, while the
                // goroutine-locals its destructor may use still exist.
                let result = if task_ref.detached_now() {
                    drop_caught(result);
                    None
                } else {
                    Some(result)
                };
                // Its goroutine-locals drop here, on its own stack, before its
                // result is published.
                destroy_running();
                result
            }
            Some(err) => {
                // User destructors (the body's captures, then whatever they put
                // in goroutine-locals): a panic among them is printed by the hook
                // and stops there, so the joiner still gets its answer.
                drop_caught(f);
                drop_caught(DestroyRunning);
                // Said whether or not the handle is kept, as a panic is: a
                // handle dropped later, or dropped now without this G seeing
                // it yet, would drop the error unread.
                report_without_stack(&err);
                let msg = format!("goro: the goroutine did not run: {err}");
                Some(Err(Box::new(msg) as Box<dyn Any + Send>))
            }
        };
        count_completed();
        task.head.slot.complete(task_ref, result);
    }

    /// # Safety
    /// `t` heads a `Task<F, T>` allocated by `Builder::spawn`; last reference.
    unsafe fn dealloc(t: NonNull<TaskHeader>) {
        // SAFETY: allocated as Box<Task<F, T>> in Builder::spawn (caller's contract).
        drop(unsafe { Box::from_raw(t.cast::<Task<F, T>>().as_ptr()) });
    }
}

/// Drops the running G's goroutine-local values, on its own stack, at its end.
fn destroy_running() {
    // SAFETY: the map is this G's; its body has returned, so the G is ending.
    unsafe { destroy(current_map()) }
}

/// Runs [`destroy_running`] when dropped, so [`drop_caught`] can contain a
/// panic in a goroutine-local's destructor.
struct DestroyRunning;

impl Drop for DestroyRunning {
    fn drop(&mut self) {
        destroy_running();
    }
}

/// Drops a result nobody will read; a panic in its destructor has been printed
/// by the panic hook and goes no further (it must not unwind out of the G).
fn drop_caught<T>(result: T) {
    let _ = catch_unwind(AssertUnwindSafe(move || drop(result)));
}

/// Says on stderr that the running G never ran its body: no stack could be
/// mapped for it.
fn report_without_stack(err: &io::Error) {
    // A plain-thread context (`sched/syscall.rs`): the G is the M's `syscallg`.
    let g = current_g().or_else(|| current_m().and_then(|m| m.syscallg()));
    let (id, name) = g.map_or((0, String::new()), |g| {
        // SAFETY: the G is this M's, being retired; its name does not change.
        let name = unsafe { g.name() }.map(|n| format!(" {n:?}")).unwrap_or_default();
        (g.id(), name)
    });
    eprintln!("goroutine {id}{name} did not run: {err}");
}

/// Runs a goroutine's body. The name is std's marker for where a short
/// backtrace ends, so panic reports (goro's and std's) stop at the body.
#[inline(never)]
fn __rust_begin_short_backtrace<F: FnOnce() -> T, T>(f: F) -> T {
    let result = f();
    // Not a tail call: this frame stays on the stack while `f` runs.
    std::hint::black_box(());
    result
}

/// Counts the running G as finished, on its P. Done before the result is published,
/// so that `num_goroutine()` after a `join` no longer counts it.
fn count_completed() {
    with_p(|p| match p {
        Some(p) => bump(&p.counters.completed, 1),
        None => {
            sched().counters.completed_outside.fetch_add(1, Ordering::Relaxed);
        }
    });
}

/// Who is spawning, for dumps: the running G (also inside its `blocking` call),
/// else this plain thread.
fn creator() -> u64 {
    match current_g().or_else(|| current_m().and_then(|m| m.syscallg())) {
        Some(g) => g.id(),
        None => crate::runtime::task::creators::this_thread(),
    }
}

/// A fresh G id: from P `p`'s batch (Go's goidcache), or the global counter.
fn next_goid(p: Option<&P>) -> u64 {
    const BATCH: u64 = 16;
    let s = sched();
    match p {
        Some(p) => {
            // SAFETY: `p` is the current M's P, and no other reference to its local
            // state is live here.
            let local = unsafe { p.local() };
            if local.goid_next == local.goid_end {
                local.goid_next = s.next_goid.fetch_add(BATCH, Ordering::Relaxed);
                local.goid_end = local.goid_next + BATCH;
            }
            local.goid_next += 1;
            local.goid_next - 1
        }
        None => s.next_goid.fetch_add(1, Ordering::Relaxed),
    }
}

/// Queues a new G: to the `runnext` of `p` (the current M's P),
/// or the global queue from a plain thread. The caller then wakes an M.
fn queue_new(p: Option<&P>, g: GRef) {
    match p {
        Some(p) => {
            bump(&p.counters.spawned, 1);
            p.runq_put(g, true);
        }
        None => {
            let s = sched();
            s.counters.spawned_outside.fetch_add(1, Ordering::Relaxed);
            s.global.push(g);
        }
    }
}

/// The G's result, shared by the G and its [`JoinHandle`](crate::JoinHandle). Its fields are touched
/// only under the task's slot lock (`TaskRef::lock`).
pub(crate) struct JoinSlot<T> {
    result: UnsafeCell<Option<std::thread::Result<T>>>,
    /// A packed `Waiter` (`Waiter::into_raw`), 0 if none.
    waiter: UnsafeCell<usize>,
}

impl<T> JoinSlot<T> {
    /// The slot of `task`'s block.
    ///
    /// # Safety
    /// `task` heads a `Task<F, T>` for some `F` (made by [`newproc`] with this
    /// `T`); the caller's reference keeps it alive.
    pub(crate) unsafe fn of(task: &TaskRef) -> &JoinSlot<T> {
        // SAFETY: the block is a Task<F, T> for some F, which starts with a
        // TaskHead<T> (both #[repr(C)]); the caller's reference keeps it alive.
        unsafe { &task.as_ptr().cast::<TaskHead<T>>().as_ref().slot }
    }

    /// Takes the G's result, if stored.
    ///
    /// # Safety
    /// The caller holds the slot lock, or the task has finished and the caller
    /// owns the `JoinHandle` (the G touches the slot no more).
    pub(crate) unsafe fn take_result(&self) -> Option<std::thread::Result<T>> {
        // SAFETY: the caller's contract.
        unsafe { (*self.result.get()).take() }
    }

    /// Stores the joiner's waiter, which the G wakes once it has stored its
    /// result, and returns the one stored before (a future's earlier poll), to
    /// be dropped once the lock is released.
    ///
    /// # Safety
    /// The caller holds the slot lock.
    pub(crate) unsafe fn replace_waiter(&self, w: Waiter) -> Option<Waiter> {
        // SAFETY: the caller's contract.
        let earlier = unsafe { self.take_waiter() };
        // SAFETY: as above.
        unsafe { *self.waiter.get() = w.into_raw() };
        earlier
    }

    /// Whether the stored waiter is an async task's waker that wakes `w`'s task.
    ///
    /// # Safety
    /// The caller holds the slot lock.
    pub(crate) unsafe fn waiter_will_wake(&self, w: &std::task::Waker) -> bool {
        // SAFETY: the caller's contract; the word was packed by
        // `replace_waiter` and is still packed.
        unsafe { Waiter::raw_will_wake(*self.waiter.get(), w) }
    }

    /// Takes the stored waiter out (a handle detached while a future of it
    /// was pending), to be dropped once the lock is released.
    ///
    /// # Safety
    /// The caller holds the slot lock.
    pub(crate) unsafe fn take_waiter(&self) -> Option<Waiter> {
        // SAFETY: the caller's contract; the word was packed by
        // `replace_waiter` and is unpacked once, here.
        unsafe { Waiter::from_raw(std::mem::take(&mut *self.waiter.get())) }
    }

    fn new() -> Self {
        JoinSlot {
            result: UnsafeCell::new(None),
            waiter: UnsafeCell::new(0),
        }
    }

    /// Called on the G's stack with its result.
    /// `None`: the G saw itself detached and dropped its result already
    /// (detaching is final).
    fn complete(&self, task: TaskRef, result: Option<std::thread::Result<T>>) {
        let lock = task.lock();
        if lock.detached() {
            drop(lock);
            // Nobody will read it: drop it here, on the G's own stack, so its
            // destructor runs as goroutine code (it may block), never on the
            // scheduler's stack.
            drop_caught(result);
            return;
        }
        let result = result.expect("goro: a result dropped as detached, then not detached");
        // SAFETY: we hold the slot lock.
        let waiter = unsafe {
            *self.result.get() = Some(result);
            std::mem::take(&mut *self.waiter.get())
        };
        lock.unlock_finished();
        // SAFETY: the packed waiter was stored by `join` and is unpacked once, here.
        if let Some(w) = unsafe { Waiter::from_raw(waiter) } {
            w.wake();
        }
    }
}
