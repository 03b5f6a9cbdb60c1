//! Spawning and joining goroutines: [`spawn`], [`Builder`], [`JoinHandle`],
//! [`GoId`], [`yield_now`] and [`current`].
//!
//! A spawn allocates the G and a shared join slot and puts the G in the current
//! P's `runnext` (Go's `newproc`), or in the global queue when called from a plain
//! thread. No stack is touched until the G first runs, so a million queued Gs cost
//! only their small heap objects.

use crate::runtime::g::{Entry, GRef, Status, Switch, WaitReason, G};
use crate::runtime::m::{current_g, current_p};
use crate::runtime::p::bump;
use crate::runtime::park::{Parker, Waiter};
use crate::runtime::sched::sched;
use crate::runtime::stack::MAX_STACK_SIZE;
use crate::runtime::wake::wakep;
use std::any::Any;
use std::fmt;
use std::io;
use std::marker::PhantomData;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

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
                    format!(
                        "goroutine stack size {size} exceeds the maximum of {MAX_STACK_SIZE} bytes"
                    ),
                ));
            }
        }
        if self.name.as_deref().is_some_and(|n| n.contains('\0')) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "goroutine name contains a NUL byte",
            ));
        }
        let s = sched();
        let stack_size = self
            .stack_size
            .map_or(s.config.stack_size, crate::runtime::stack::round_size);
        let join = Arc::new(JoinState::<T>::new());
        let done = Arc::clone(&join);
        let entry: Entry = Box::new(move |no_stack| match no_stack {
            None => {
                let result = catch_unwind(AssertUnwindSafe(f));
                count_completed();
                done.complete(result);
            }
            Some(err) => {
                count_completed();
                let msg = format!("goro: cannot allocate a goroutine stack: {err}");
                done.complete(Err(Box::new(msg)));
            }
        });
        let id = next_goid();
        let g = GRef::new(G::new(
            id,
            self.name.map(String::into_boxed_str),
            stack_size,
            entry,
        ));
        if let Some(all) = &s.allgs {
            all.lock().unwrap_or_else(|e| e.into_inner()).insert(id, g);
        }
        newproc(g);
        Ok(JoinHandle {
            id: GoId(id),
            join,
            _not_sync_result: PhantomData,
        })
    }
}

/// Counts the running G as finished, on its P. Done before the result is published,
/// so that `num_goroutine()` after a `join` no longer counts it.
fn count_completed() {
    if let Some(p) = current_p() {
        bump(&p.counters.completed, 1);
    }
}

/// A fresh G id: from the current P's batch (Go's goidcache), or the global counter.
fn next_goid() -> u64 {
    const BATCH: u64 = 16;
    let s = sched();
    match current_p() {
        Some(p) => {
            // SAFETY: we run on the M holding `p`, and no other reference to its
            // local state is live here.
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

/// Queues a new G (Go's `newproc`): to the current P's `runnext`, or the global
/// queue from a plain thread; then maybe wakes an M.
fn newproc(g: GRef) {
    g.set_status(Status::Runnable);
    match current_p() {
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
    wakep();
}

/// The G's result, shared by the G and its [`JoinHandle`].
struct JoinState<T> {
    finished: AtomicBool,
    slot: Mutex<Slot<T>>,
}

struct Slot<T> {
    result: Option<std::thread::Result<T>>,
    waiter: Option<Waiter>,
}

impl<T> JoinState<T> {
    fn new() -> Self {
        JoinState {
            finished: AtomicBool::new(false),
            slot: Mutex::new(Slot {
                result: None,
                waiter: None,
            }),
        }
    }

    fn complete(&self, result: std::thread::Result<T>) {
        let waiter = {
            let mut slot = self.slot.lock().unwrap_or_else(|e| e.into_inner());
            slot.result = Some(result);
            self.finished.store(true, Ordering::Release);
            slot.waiter.take()
        };
        if let Some(w) = waiter {
            w.wake();
        }
    }
}

/// An owned permission to join a goroutine. Dropping it detaches the goroutine.
pub struct JoinHandle<T> {
    id: GoId,
    join: Arc<JoinState<T>>,
    /// `JoinHandle` is `Send + Sync` like std's; the marker keeps auto traits honest.
    _not_sync_result: PhantomData<fn() -> T>,
}

impl<T> JoinHandle<T> {
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
        let mut slot = self.join.slot.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(result) = slot.result.take() {
                return result;
            }
            let parker = Parker::new();
            slot.waiter = Some(parker.waiter());
            parker.park(WaitReason::Join, slot);
            slot = self.join.slot.lock().unwrap_or_else(|e| e.into_inner());
        }
    }

    /// True once the goroutine has finished (its result is ready for `join`).
    pub fn is_finished(&self) -> bool {
        self.join.finished.load(Ordering::Acquire)
    }

    /// The goroutine's id.
    pub fn id(&self) -> GoId {
        self.id
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
    current_g().map(|g| GoId(g.id))
}
