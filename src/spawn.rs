//! Spawning and joining goroutines: [`spawn`], [`Builder`], [`JoinHandle`].
//!
//! The checks of a spawn's settings and the handle are here; making and
//! queueing the G, and the task block the handle shares with it, are the
//! runtime's (`runtime/sched/newproc.rs`).

use crate::runtime::exports::{newproc, GoId, JoinSlot, Origin, TaskRef, MAX_STACK_SIZE};
use crate::runtime::wait::{preempt_check, Parker, WaitReason, Waiter};
use std::any::Any;
use std::fmt;
use std::future::Future;
use std::io;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};

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
/// covers `thread_local!` statics, `std::thread::current()`, `rand::rng()`,
/// `HashMap::new()` (std's per-thread hash keys), an `Rc` or guard obtained
/// from a thread-local, and `std::io::stdout().lock()` (its re-entrant lock
/// knows its owner by thread). So no formatted argument of std's `print!`
/// family, or of a `write!` to a locked std stream, may wait while the stream
/// is locked: [`goro::println!`](crate::println!) and its siblings format
/// before they lock, and allow it. Without a waiting argument, std's print
/// macros and `panic!` make their thread-local accesses inside std's own
/// functions; goro's tests use them in goroutines in release and fat-LTO
/// builds. That is an observation of what the compiler does, not a guarantee
/// from it.
/// Use [`local!`](crate::local!) for per-goroutine state: its values follow
/// their goroutine. `docs/SAFETY.md` explains the hazard and the alternatives.
///
/// # Panics
/// Never: this is [`Builder::spawn`] with default settings, which has no
/// setting to refuse. The goroutine's stack is mapped when it first runs, and
/// that can fail (an address-space limit, strict overcommit, too many mappings):
/// the goroutine then does not run, its closure is dropped (as a plain thread's
/// code: a destructor may wait) and [`JoinHandle::join`] returns `Err` saying
/// so and naming the stack's size.
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
        .expect("a default Builder has no setting to refuse")
}

/// Starts `f` as a G that dumps show as made at `origin` (a timer's
/// `after_func`, which spawns when it fires, not where it was called).
pub(crate) fn go_from<F>(origin: Origin, f: F) -> JoinHandle<()>
where
    F: FnOnce() + Send + 'static,
{
    Builder::new()
        .start_from(origin, f)
        .expect("a default Builder has no setting to refuse")
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
    /// that fails, the goroutine does not run: its closure is dropped, goro
    /// prints `goroutine N "name" did not run: ` and the reason on stderr, as
    /// for a panic, and `join` returns the reason as the goroutine's panic
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
        crate::runtime::exports::started();
        let (task, id) = newproc(self.name, self.stack_size, origin, f);
        Ok(JoinHandle {
            task,
            id,
            _result: PhantomData,
        })
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
        // SAFETY: the block was made by `newproc` with this `T`; our
        // reference keeps it alive.
        unsafe { JoinSlot::of(&self.task) }
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
    /// A goroutine whose stack could not be mapped did not run: its payload is
    /// a `String`, `goro: the goroutine did not run: cannot map its stack of N
    /// bytes: ` and the system's reason.
    pub fn join(self) -> Result<T, Box<dyn Any + Send + 'static>> {
        preempt_check();
        let slot = self.slot();
        loop {
            if self.task.finished() {
                // The G stored the result and will not touch the slot again; the
                // Acquire load of FINISHED made its store visible.
                // SAFETY: after FINISHED only the handle's owner (us) uses the slot.
                let result = unsafe { slot.take_result() }.expect("goro: finished task without a result");
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
            // SAFETY: we hold the slot lock.
            let earlier = unsafe { slot.replace_waiter(parker.waiter()) };
            parker.park(WaitReason::Join, lock);
            drop(earlier);
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

    /// The goroutine's id, the same [`current`](fn@crate::current) returns inside it.
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

/// Async code awaits a goroutine: `handle.await` gives what
/// [`join`](JoinHandle::join) returns, under any executor, without blocking
/// the executor's thread (the goroutine's end wakes the awaiting task).
/// Awaiting costs one spawn; dropping a pending `await` detaches the goroutine,
/// as dropping the handle does. Polling again after `Ready` panics.
///
/// ```
/// let h = goro::go!(|| 6 * 7);
/// // Any executor: here goro's own `block_on` on a plain thread.
/// assert_eq!(goro::block_on(async { h.await.unwrap() }), 42);
/// ```
impl<T: Send + 'static> Future for JoinHandle<T> {
    type Output = Result<T, Box<dyn Any + Send + 'static>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &*self;
        let slot = this.slot();
        if !this.task.finished() {
            let lock = this.task.lock();
            if !this.task.finished() {
                // A re-poll by the same task keeps its stored waker.
                // SAFETY: we hold the slot lock.
                if unsafe { slot.waiter_will_wake(cx.waker()) } {
                    return Poll::Pending;
                }
                // SAFETY: we hold the slot lock.
                let earlier = unsafe { slot.replace_waiter(Waiter::Task(cx.waker().clone())) };
                drop(lock);
                drop(earlier);
                return Poll::Pending;
            }
        }
        // The G stored the result and will not touch the slot again (the
        // Acquire load of FINISHED made its store visible).
        // SAFETY: after FINISHED only the handle's owner (us) uses the slot.
        match unsafe { slot.take_result() } {
            Some(result) => Poll::Ready(result),
            None => panic!("goro: JoinHandle polled after it returned Ready"),
        }
    }
}

/// The handle is a pointer to the task block: moving it moves nothing pinned.
impl<T> Unpin for JoinHandle<T> {}

impl<T> Drop for JoinHandle<T> {
    /// Detaches. If the G already finished, its result is dropped here, in the
    /// dropping context; otherwise the G drops it on its own stack when it finishes.
    /// Either way it is never dropped on the scheduler's stack, where a destructor
    /// that blocks would block the whole M.
    fn drop(&mut self) {
        let lock = self.task.lock();
        let (unread, waiter) = if self.task.finished() {
            // SAFETY: we hold the slot lock.
            (unsafe { self.slot().take_result() }, None)
        } else {
            lock.set_detached();
            // A pending `await`'s waker: nobody will be woken now.
            // SAFETY: we hold the slot lock.
            (None, unsafe { self.slot().take_waiter() })
        };
        drop(lock);
        drop(waiter);
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
