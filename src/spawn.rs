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

use crate::runtime::sched::m::current_map;
use crate::runtime::sched::m::{current_g, current_m};
use crate::runtime::sched::mpark::wakep;
use crate::runtime::sched::ownership::with_p;
use crate::runtime::sched::p::{bump, gfget, P};
use crate::runtime::sched::ready::Waiter;
use crate::runtime::sched::state::sched;
use crate::runtime::task::g::{GRef, GoId, Spawn, WaitReason};
use crate::runtime::task::locals::destroy;
use crate::runtime::task::stack::MAX_STACK_SIZE;
use crate::runtime::task::{TaskHeader, TaskRef, TaskVtable};
use crate::runtime::wait::park::Parker;
use std::any::Any;
use std::cell::UnsafeCell;
use std::fmt;
use std::io;
use std::marker::PhantomData;
use std::panic::Location;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::NonNull;
use std::sync::atomic::Ordering;

/// Starts a goroutine running `f` and returns a handle to join it (Go's `go f()`).
/// Most code writes [`go!`](crate::go!)`(f)`, the safe form of this call under the
/// same rule.
///
/// Works from a goroutine and from a plain thread alike; the first call starts the
/// runtime if nothing else has. The new goroutine goes to the current P's
/// `runnext` slot (from a plain thread: the global run queue) and an idle P, if
/// any, is woken to run it; the caller does not wait for it. It gets the runtime's
/// default stack size ([`runtime::Config::stack_size`](crate::runtime::Config::stack_size));
/// use a [`Builder`] to choose another, or a name.
///
/// A panic in `f` ends only this goroutine: [`JoinHandle::join`] returns it as
/// `Err`. Dropping the handle detaches the goroutine, which runs on.
///
/// ```
/// // SAFETY: the goroutines touch no thread-local.
/// let h = unsafe { goro::spawn(|| 6 * 7) };
/// assert_eq!(h.join().unwrap(), 42);
/// ```
///
/// # Safety
/// A goroutine moves between OS threads at any park, and in optimised builds the
/// compiler may reuse a thread-local's address, computed before a park, after
/// the goroutine resumed on another thread: the code then reads and writes the
/// other thread's value, racing with whatever runs there. No rule about "not
/// holding a reference across a park" prevents this, so the rule is:
///
/// **`f`, and all it calls, uses no thread-local — its own or a library's —
/// except inside [`blocking`](fn@crate::blocking), or after
/// [`lock_os_thread`](crate::runtime::lock_os_thread) wired the goroutine to its
/// thread before its first park, for as long as it stays wired.** (A goroutine
/// wired only later may already have parked with a thread-local's address
/// computed: the compiler may compute it once, on entry to a function.) That
/// covers `thread_local!` statics, `std::thread::current()`,
/// `rand::thread_rng()`, an `Rc` or guard obtained from a thread-local, and
/// `std::io::stdout().lock()` (its re-entrant lock knows its owner by thread).
/// std's `print!` family and `panic!` make their thread-local accesses inside
/// std's own functions, which return without parking; goro's tests use them in
/// goroutines in release and fat-LTO builds. That is an observation of what the
/// compiler does, not a guarantee from it.
/// Use [`local!`](crate::local!) for per-goroutine state: its values follow
/// their goroutine. `docs/SAFETY.md` explains the hazard and the alternatives.
///
/// # Panics
/// Never for ordinary use: this is [`Builder::spawn`] with default settings, which
/// cannot fail.
#[track_caller]
pub unsafe fn spawn<F, T>(f: F) -> JoinHandle<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    go(f)
}

/// [`go!`](crate::go!)`(f)`: [`spawn`] as a safe call, under the rule of its
/// `# Safety` section, which the types cannot check.
#[doc(hidden)]
#[track_caller]
pub fn go<F, T>(f: F) -> JoinHandle<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    Builder::new()
        .start(f)
        .expect("spawn with default settings cannot fail")
}

/// Where a G comes from, for dumps: the call site and who made the call.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Origin {
    at: &'static Location<'static>,
    /// See `runtime::g::CREATOR_THREAD_BIT`.
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

/// Starts `f` as a G that dumps show as made at `origin` (a timer's
/// `after_func`, which spawns when it fires, not where it was called).
pub(crate) fn go_from<F>(origin: Origin, f: F) -> JoinHandle<()>
where
    F: FnOnce() + Send + 'static,
{
    Builder::new()
        .start_from(origin, f)
        .expect("spawn with default settings cannot fail")
}

/// [`go!`](crate::go!)`(builder, f)`: [`Builder::spawn`] as a safe call, under
/// the rule of [`spawn`]'s `# Safety` section, which the types cannot check.
#[doc(hidden)]
#[track_caller]
pub fn go_with<F, T>(builder: Builder, f: F) -> io::Result<JoinHandle<T>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    builder.start(f)
}

/// Goroutine settings: a name and a stack size, as std's `thread::Builder`.
///
/// The name shows in the goroutine's panic message. Go has no equivalent: its
/// goroutines are anonymous and their stacks grow.
///
/// ```
/// let h = goro::go!(goro::Builder::new().name("worker-1").stack_size(512 << 10), || "done")?;
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
    ///
    /// ```
    /// let h = goro::go!(goro::Builder::new(), || 1)?;
    /// assert_eq!(h.join().unwrap(), 1);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Names the goroutine. The name appears in its panic message
    /// (`goroutine 17 "worker-1" panicked at ...`). It must not contain a NUL byte
    /// ([`Builder::spawn`] fails).
    ///
    /// ```
    /// let h = goro::go!(goro::Builder::new().name("worker-1"), || 2 + 2)?;
    /// assert_eq!(h.join().unwrap(), 4);
    /// assert!(goro::go!(goro::Builder::new().name("bad\0name"), || ()).is_err());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Stack size in bytes, rounded up to whole pages (at least 16 KiB, at most
    /// 1 GiB: more makes [`Builder::spawn`] fail). Only the pages the goroutine
    /// touches use memory. Unlike Go's, goro's stacks do not grow: overflowing one
    /// hits a guard page and aborts the process with
    /// `goroutine N "name" stack overflow (stack size S bytes)` and this remedy.
    ///
    /// ```
    /// // Deep recursion wants a big stack.
    /// fn depth(n: u64) -> u64 { if n == 0 { 0 } else { 1 + depth(n - 1) } }
    /// let h = goro::go!(goro::Builder::new().stack_size(4 << 20), || depth(10_000))?;
    /// assert_eq!(h.join().unwrap(), 10_000);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn stack_size(mut self, bytes: usize) -> Self {
        self.stack_size = Some(bytes);
        self
    }

    /// Starts the goroutine with these settings; otherwise as [`spawn`].
    /// [`go!`](crate::go!)`(builder, f)` is the safe form of this call under the
    /// same rule.
    ///
    /// ```
    /// // SAFETY: the goroutine touches no thread-local.
    /// let h = unsafe { goro::Builder::new().name("adder").spawn(|| 40 + 2) }?;
    /// assert_eq!(h.join().unwrap(), 42);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ///
    /// # Errors
    /// `io::ErrorKind::InvalidInput` for a stack size above 1 GiB or a name that
    /// contains a NUL byte. (The stack is mapped when the goroutine first runs; if
    /// that fails, `join` returns the error message as the goroutine's panic
    /// payload.)
    ///
    /// # Safety
    /// As [`spawn`]'s: `f`, and all it calls, uses no thread-local except inside
    /// [`blocking`](fn@crate::blocking), or after
    /// [`lock_os_thread`](crate::runtime::lock_os_thread) wired it to its thread
    /// before its first park, while it stays wired.
    #[track_caller]
    pub unsafe fn spawn<F, T>(self, f: F) -> io::Result<JoinHandle<T>>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        self.start(f)
    }

    /// [`Builder::spawn`] without its contract: for the safe entry points
    /// (`go!`, `WaitGroup::go`, `time::after_func`), whose docs state the rule.
    #[track_caller]
    pub(crate) fn start<F, T>(self, f: F) -> io::Result<JoinHandle<T>>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        self.start_from(Origin::here(), f)
    }

    /// [`Builder::start`] for a G made on behalf of `origin`.
    fn start_from<F, T>(self, origin: Origin, f: F) -> io::Result<JoinHandle<T>>
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
        crate::runtime::sched::preempt::check();
        let s = sched();
        let stack_size = self
            .stack_size
            .map_or(s.config.stack_size, crate::runtime::task::stack::round_size);
        let spawn = Spawn {
            name: self.name.map(String::into_boxed_str),
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
            newproc(p, g);
            (id, task)
        });
        wakep();
        Ok(JoinHandle {
            task,
            id: GoId::from_raw(id),
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
                drop(f);
                // Whatever `f`'s destructors made (they ran on the M's stack).
                destroy_running();
                let msg = format!("goro: cannot allocate a goroutine stack: {err}");
                if task_ref.detached_now() {
                    // Nobody will join it to see the error.
                    report_detached_without_stack(&msg);
                }
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

/// Drops a result nobody will read; a panic in its destructor has been printed
/// by the panic hook and goes no further (it must not unwind out of the G).
fn drop_caught<T>(result: T) {
    let _ = catch_unwind(AssertUnwindSafe(move || drop(result)));
}

/// Says on stderr that a detached G never ran: no stack could be mapped for it.
fn report_detached_without_stack(msg: &str) {
    let (id, name) = current_g().map_or((0, String::new()), |g| {
        // SAFETY: the G is this M's, being retired; its name does not change.
        let name = unsafe { g.name() }.map(|n| format!(" {n:?}")).unwrap_or_default();
        (g.id(), name)
    });
    eprintln!("goroutine {id}{name} did not run: {msg}");
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

/// An owned permission to join a goroutine, as std's `thread::JoinHandle`.
///
/// [`join`](JoinHandle::join) waits for the goroutine and returns its result, or
/// the payload of its panic. Dropping the handle detaches the goroutine: it runs
/// on, and its result is dropped when it finishes. (Go has no join: there one
/// waits with a `sync.WaitGroup` or a channel.) The handle is `Send` and `Sync`,
/// so it can be joined from another goroutine or thread than the one that spawned.
///
/// ```
/// let h: goro::JoinHandle<String> = goro::go!(|| "done".to_string());
/// // Join from another goroutine: it parks until `h`'s goroutine finishes.
/// let joiner = goro::go!(move || h.join().unwrap());
/// assert_eq!(joiner.join().unwrap(), "done");
/// ```
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

    /// Waits for the goroutine to finish and returns its result, or the payload of
    /// its panic. Called from a goroutine, it parks the goroutine (its M runs
    /// others meanwhile); from a plain thread, it blocks the thread. Returns at
    /// once if the goroutine has already finished.
    ///
    /// ```
    /// let h = goro::go!(|| panic!("boom"));
    /// let err = h.join().unwrap_err();
    /// assert_eq!(err.downcast_ref::<&str>(), Some(&"boom"));
    /// ```
    ///
    /// # Errors
    /// `Err(payload)` if the goroutine panicked: the value passed to `panic!`
    /// (a `&'static str` or a `String` for a message), as `std::thread` gives it.
    pub fn join(self) -> Result<T, Box<dyn Any + Send + 'static>> {
        crate::runtime::sched::preempt::check();
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

    /// True once the goroutine has finished, by returning or by panicking; then
    /// [`join`](JoinHandle::join) returns without waiting. Never blocks.
    ///
    /// ```
    /// let (tx, rx) = goro::chan::bounded::<()>(0);
    /// let h = goro::go!(move || rx.recv());
    /// assert!(!h.is_finished()); // parked in recv
    /// drop(tx); // closes the channel: recv returns Err
    /// while !h.is_finished() {
    ///     goro::time::sleep(std::time::Duration::from_millis(1));
    /// }
    /// assert!(h.join().unwrap().is_err());
    /// ```
    pub fn is_finished(&self) -> bool {
        self.task.finished()
    }

    /// The goroutine's id, the same [`current`] returns inside it.
    ///
    /// ```
    /// let h = goro::go!(|| goro::current());
    /// let id = h.id();
    /// assert_eq!(h.join().unwrap(), Some(id));
    /// ```
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
