//! The Tokio bridge (cargo feature `tokio`): a goroutine runs a future that
//! needs Tokio (its `net`, `time`, and the crates built on them) on a Tokio
//! runtime, and parks until the output arrives.
//!
//! ```
//! use std::time::Duration;
//!
//! let h = goro::go!(|| {
//!     // a Tokio timer, awaited by a goroutine: only the goroutine waits
//!     goro::tokio::block_on(async {
//!         tokio::time::sleep(Duration::from_millis(5)).await;
//!         "slept"
//!     })
//! });
//! assert_eq!(h.join().unwrap(), "slept");
//! ```
//!
//! # Which runtime
//! The one given to [`set_handle`] before the bridge's first use; else a
//! multi-thread runtime with one worker (threads named `goro-tokio`, I/O and
//! timers enabled) that the first use starts and that lives until the
//! process exits.
//!
//! Its threads are not goro's, and could wake a goroutine at any time (as any
//! foreign thread pool could): once they exist, the deadlock report no longer
//! fires for a program that hangs; SIGQUIT's dump still shows every goroutine.
//!
//! # Why a bridge
//! A goroutine runs on whichever M has a P, and moves between threads at
//! every park. Tokio keeps its context (the runtime a future registers its
//! sockets and timers with, `tokio::spawn`'s target) in a thread-local of the
//! thread that polls. So calling Tokio APIs that read that context inside a
//! goroutine — `Handle::current`, `tokio::spawn`, `Runtime::block_on`, a
//! `tokio::net` or `tokio::time` future polled by `goro::block_on` — breaks
//! goro's thread-local rule (SAFETY.md): it panics for want of a runtime or,
//! worse, binds to a runtime entered on that M by something else. The bridge
//! polls the future on a Tokio worker instead, and hands the output back
//! through a goro channel, never by polling a Tokio handle in the goroutine.

use std::future::Future;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::OnceLock;
use std::task::Poll;
use tokio::runtime::{Handle, Runtime};

/// The bridge's runtime, set once: given, or started by the bridge.
static BRIDGE: OnceLock<Bridge> = OnceLock::new();

enum Bridge {
    Given(Handle),
    /// Started by the first use; never dropped (statics are not), so its
    /// threads serve the bridge until the process exits.
    Own(Runtime),
}

impl Bridge {
    fn handle(&self) -> &Handle {
        match self {
            Bridge::Given(h) => h,
            Bridge::Own(rt) => rt.handle(),
        }
    }
}

/// The error of [`set_handle`]: the bridge already has a runtime (given
/// before, or started by a use of the bridge).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HandleAlreadySet;

impl std::fmt::Display for HandleAlreadySet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("goro::tokio: the bridge already has a Tokio runtime (set_handle comes before its first use)")
    }
}

impl std::error::Error for HandleAlreadySet {}

/// Makes the bridge run its futures on the runtime of `handle` (e.g.
/// `tokio::runtime::Handle::current()` in `#[tokio::main]`). Call it before
/// the bridge's first use.
///
/// ```
/// let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
/// goro::tokio::set_handle(rt.handle().clone()).unwrap();
/// assert_eq!(goro::tokio::set_handle(rt.handle().clone()), Err(goro::tokio::HandleAlreadySet));
/// assert_eq!(goro::go!(|| goro::tokio::block_on(async { 7 })).join().unwrap(), 7);
/// ```
///
/// # Errors
/// [`HandleAlreadySet`] if the bridge already has a runtime: one given
/// before, or the one it started for an earlier [`block_on`].
pub fn set_handle(handle: Handle) -> Result<(), HandleAlreadySet> {
    BRIDGE.set(Bridge::Given(handle)).map_err(|_| HandleAlreadySet)
}

/// The bridge's runtime, started now if nothing set one.
fn handle() -> &'static Handle {
    if let Some(b) = BRIDGE.get() {
        return b.handle();
    }
    // Starting a runtime spawns its threads: a blocking call for a goroutine.
    crate::blocking(|| BRIDGE.get_or_init(start)).handle()
}

fn start() -> Bridge {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("goro-tokio")
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("goro::tokio: cannot start the bridge's Tokio runtime: {e}"));
    Bridge::Own(rt)
}

/// Runs `fut` on the bridge's Tokio runtime (see the module docs) and waits
/// for its output: in a goroutine, only the goroutine parks (a dump shows it
/// as `[chan receive]`); on a plain thread, the thread blocks.
///
/// The future runs as a Tokio task, so it may use everything that needs
/// Tokio's context: `tokio::net`, `tokio::time`, `tokio::spawn`, and the
/// crates built on them.
///
/// # Panics
/// A panic inside `fut` resumes in the caller. Panics if the runtime shut down
/// (a given runtime was dropped) before `fut` completed, and, like
/// [`goro::block_on`](crate::block_on), on a Tokio runtime's thread (a
/// worker running a task, or inside `Runtime::block_on`).
#[track_caller]
pub fn block_on<F>(fut: F) -> F::Output
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    crate::block_on::refuse_tokio_context("goro::tokio::block_on");
    let (tx, rx) = crate::chan::bounded(1);
    handle().spawn(async move {
        let mut fut = std::pin::pin!(fut);
        let out = std::future::poll_fn(|cx| match catch_unwind(AssertUnwindSafe(|| fut.as_mut().poll(cx))) {
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(payload) => Poll::Ready(Err(payload)),
        })
        .await;
        // One slot, one value, one sender: the send cannot fail.
        let _ = tx.try_send(out);
    });
    match rx.recv() {
        Ok(Ok(v)) => v,
        Ok(Err(payload)) => resume_unwind(payload),
        Err(_) => panic!("goro::tokio::block_on: the Tokio runtime shut down before the future completed"),
    }
}
