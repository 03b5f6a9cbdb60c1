//! Spawning and joining goroutines: [`spawn`], [`Builder`], [`JoinHandle`],
//! [`GoId`], [`yield_now`] and [`current`].
//!
//! A spawn makes one heap block, a [`Task`]: the closure and the join slot, behind
//! a type-erased header (`runtime::task`). It takes a free G header from the pool
//! (`runtime::gfree`), points it at the task, and puts the G in the current P's
//! `runnext` (Go's `newproc`), or in the global queue when called from a plain
//! thread. No stack is touched until the G first runs.
//!
//! The block is shared by the scheduler and the [`JoinHandle`]; whichever lets go
//! last frees it. A `JoinHandle<T>` does not know the closure's type, only `T`: it
//! reads the slot through [`TaskHead<T>`], a `#[repr(C)]` prefix of every
//! `Task<F, T>`, which puts the slot at the same offset whatever `F` is.

use crate::runtime::g::{GRef, Switch, WaitReason};
use crate::runtime::gfree::gfget;
use crate::runtime::m::{current_g, current_m};
use crate::runtime::ownership::with_p;
use crate::runtime::p::{bump, P};
use crate::runtime::park::{Parker, Waiter};
use crate::runtime::sched::sched;
use crate::runtime::stack::MAX_STACK_SIZE;
use crate::runtime::task::{TaskHeader, TaskRef, TaskVtable};
use crate::runtime::wake::wakep;
use std::any::Any;
use std::cell::UnsafeCell;
use std::fmt;
use std::io;
use std::marker::PhantomData;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::NonNull;
use std::sync::atomic::Ordering;

/// A goroutine's id: unique for the life of the process, as Go's goid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GoId(u64);

impl GoId {
    /// The number, as Go prints it (`goroutine 17`).
    pub fn as_u64(self) -> u64 {
        self.0
    }
}

impl fmt::Display for GoId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

/// Spawns a goroutine running `f` and returns a handle to join it.
///
/// ```
/// let h = goro::spawn(|| 6 * 7);
/// assert_eq!(h.join().unwrap(), 42);
/// ```
///
/// # Panics
/// Never for ordinary use: this is [`Builder::spawn`] with default settings, which
/// cannot fail.
pub fn spawn<F, T>(f: F) -> JoinHandle<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    Builder::new()
        .spawn(f)
        .expect("spawn with default settings cannot fail")
}

/// Goroutine settings: a name (shown in panic messages and traces) and a stack size.
///
/// ```
/// let h = goro::Builder::new().name("worker-1").stack_size(512 << 10).spawn(|| "done")?;
/// assert_eq!(h.join().unwrap(), "done");
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct Builder {
    name: Option<String>,
    stack_size: Option<usize>,
}

impl Builder {
    /// Default settings: no name, the runtime's default stack size.
    pub fn new() -> Self {
        Self::default()
    }

    /// Names the goroutine.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Stack size in bytes, rounded up to whole pages (at least 16 KiB). Only touched
    /// pages use memory. Overflowing it aborts the process with
    /// `goroutine N stack overflow (stack size S)`.
    pub fn stack_size(mut self, bytes: usize) -> Self {
        self.stack_size = Some(bytes);
        self
    }

    /// Spawns the goroutine.
    ///
    /// # Errors
    /// `InvalidInput` for a stack size above 1 GiB or a name containing a NUL byte.
    /// (Stacks are mapped when the G first runs; if that fails, `join` returns the
    /// error as the G's panic payload.)
    pub fn spawn<F, T>(self, f: F) -> io::Result<JoinHandle<T>>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        if let Some(size) = self.stack_size {
            if size > MAX_STACK_SIZE {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("goroutine stack size {size} exceeds the maximum of {MAX_STACK_SIZE} bytes"),
                ));
            }
        }
        if self.name.as_deref().is_some_and(|n| n.contains('\0')) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "goroutine name contains a NUL byte",
            ));
        }
        crate::runtime::preempt::check();
        let s = sched();
        let stack_size = self
            .stack_size
            .map_or(s.config.stack_size, crate::runtime::stack::round_size);
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
            unsafe { g.init(id, self.name.map(String::into_boxed_str), stack_size, task) };
            if let Some(all) = &s.allgs {
                all.lock().unwrap_or_else(|e| e.into_inner()).insert(id, g);
            }
            newproc(p, g);
            (id, task)
        });
        wakep();
        Ok(JoinHandle {
            task,
            id: GoId(id),
            _result: PhantomData,
        })
    }
}

/// The part of every task block a `JoinHandle<T>` may see.
#[repr(C)]
struct TaskHead<T> {
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
        let result = match no_stack {
            None => catch_unwind(AssertUnwindSafe(f)),
            Some(err) => {
                drop(f);
                Err(Box::new(format!("goro: cannot allocate a goroutine stack: {err}")) as Box<dyn Any + Send>)
            }
        };
        count_completed();
        // SAFETY: `t` heads this task block (caller's contract).
        task.head.slot.complete(unsafe { TaskRef::from_ptr(t) }, result);
    }

    /// # Safety
    /// `t` heads a `Task<F, T>` allocated by `Builder::spawn`; last reference.
    unsafe fn dealloc(t: NonNull<TaskHeader>) {
        // SAFETY: allocated as Box<Task<F, T>> in Builder::spawn (caller's contract).
        drop(unsafe { Box::from_raw(t.cast::<Task<F, T>>().as_ptr()) });
    }
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

/// Queues a new G (Go's `newproc`): to the `runnext` of `p` (the current M's P),
/// or the global queue from a plain thread. The caller then wakes an M.
fn newproc(p: Option<&P>, g: GRef) {
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

/// The G's result, shared by the G and its [`JoinHandle`]. Its fields are touched
/// only under the task's slot lock (`TaskRef::lock`).
struct JoinSlot<T> {
    result: UnsafeCell<Option<std::thread::Result<T>>>,
    /// A packed `Waiter` (`Waiter::into_raw`), 0 if none.
    waiter: UnsafeCell<usize>,
}

impl<T> JoinSlot<T> {
    fn new() -> Self {
        JoinSlot {
            result: UnsafeCell::new(None),
            waiter: UnsafeCell::new(0),
        }
    }

    /// Called on the G's stack with its result.
    fn complete(&self, task: TaskRef, result: std::thread::Result<T>) {
        let lock = task.lock();
        if lock.detached() {
            drop(lock);
            // Nobody will read it: drop it here, on the G's own stack, so its
            // destructor runs as goroutine code (it may block), never on the
            // scheduler's stack.
            drop(result);
            return;
        }
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

/// An owned permission to join a goroutine. Dropping it detaches the goroutine.
pub struct JoinHandle<T> {
    task: TaskRef,
    id: GoId,
    _result: PhantomData<T>,
}

// SAFETY: the handle only reaches the join slot, which is locked; `T` crosses
// threads with the result, hence `T: Send`. Same bounds as std's JoinHandle.
unsafe impl<T: Send> Send for JoinHandle<T> {}
// SAFETY: `&JoinHandle` only reads the finished flag and the id.
unsafe impl<T: Send> Sync for JoinHandle<T> {}

impl<T> JoinHandle<T> {
    fn slot(&self) -> &JoinSlot<T> {
        // SAFETY: the block is a Task<F, T> for some F, which starts with a
        // TaskHead<T> (both #[repr(C)]); our reference keeps the block alive.
        unsafe { &self.task.as_ptr().cast::<TaskHead<T>>().as_ref().slot }
    }

    /// Waits for the goroutine to finish and returns its result, or the panic
    /// payload if it panicked. From a G this parks the G; from a plain thread it
    /// blocks the thread.
    ///
    /// ```
    /// let h = goro::go!(|| panic!("boom"));
    /// let err = h.join().unwrap_err();
    /// assert_eq!(err.downcast_ref::<&str>(), Some(&"boom"));
    /// ```
    ///
    /// # Errors
    /// The panic payload, if the goroutine panicked.
    pub fn join(self) -> Result<T, Box<dyn Any + Send + 'static>> {
        crate::runtime::preempt::check();
        let slot = self.slot();
        loop {
            if self.task.finished() {
                // The G stored the result and will not touch the slot again; the
                // Acquire load of FINISHED made its store visible.
                // SAFETY: after FINISHED only the handle's owner (us) uses the slot.
                let result = unsafe { (*slot.result.get()).take() }.expect("goro: finished task without a result");
                let task = self.task;
                std::mem::forget(self); // nothing to detach: the result is taken
                                        // SAFETY: the handle's reference, dropped exactly once, here.
                unsafe { task.release() };
                return result;
            }
            let lock = self.task.lock();
            if self.task.finished() {
                continue; // finished while we took the lock
            }
            let parker = Parker::new();
            // SAFETY: we hold the slot lock; the G unpacks the waiter once.
            unsafe { *slot.waiter.get() = parker.waiter().into_raw() };
            parker.park(WaitReason::Join, lock);
        }
    }

    /// True once the goroutine has finished (its result is ready for `join`).
    pub fn is_finished(&self) -> bool {
        self.task.finished()
    }

    /// The goroutine's id.
    pub fn id(&self) -> GoId {
        self.id
    }
}

impl<T> Drop for JoinHandle<T> {
    /// Detaches. If the G already finished, its result is dropped here, in the
    /// dropping context; otherwise the G drops it on its own stack when it finishes.
    /// Either way it is never dropped on the scheduler's stack, where a destructor
    /// that blocks would block the whole M.
    fn drop(&mut self) {
        let lock = self.task.lock();
        let unread = if self.task.finished() {
            // SAFETY: we hold the slot lock.
            unsafe { (*self.slot().result.get()).take() }
        } else {
            lock.set_detached();
            None
        };
        drop(lock);
        drop(unread);
        // SAFETY: the handle's reference, dropped exactly once, here.
        unsafe { self.task.release() };
    }
}

impl<T> fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinHandle")
            .field("id", &self.id)
            .field("finished", &self.is_finished())
            .finish()
    }
}

/// Lets other goroutines run (Go's `runtime.Gosched`): the current G goes to the
/// back of the global run queue. On a plain thread, yields the thread.
///
/// ```
/// goro::go!(|| for _ in 0..3 { goro::yield_now() }).join().unwrap();
/// ```
pub fn yield_now() {
    match current_g() {
        // SAFETY: `g` is the G running this code.
        Some(g) => unsafe { g.switch_out(Switch::Yield) },
        None => std::thread::yield_now(),
    }
}

/// The id of the goroutine running this code, or `None` on a plain thread.
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
        .map(|g| GoId(g.id()))
}
