//! # goro — Go's runtime scheduler, in Rust
//!
//! `goro::go!(|| ...)` starts a goroutine: a stackful green thread scheduled in
//! Go's G/M/P model. Code inside it is plain blocking-style Rust; every wait
//! (`join`, `sleep`, a channel receive, a socket read, ...) parks the goroutine and
//! frees its OS thread for other goroutines.
//!
//! ```
//! use std::time::Duration;
//!
//! let handles: Vec<_> = (0..1000u64)
//!     .map(|i| goro::go!(move || {
//!         goro::time::sleep(Duration::from_millis(1));
//!         i * 2
//!     }))
//!     .collect();
//! let sum: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
//! assert_eq!(sum, 999 * 1000);
//! ```
//!
//! # What is where
//!
//! | Go | goro |
//! |---|---|
//! | `go f()` | [`go!`], [`spawn`](fn@spawn), [`Builder`] → [`JoinHandle`] |
//! | `runtime.Gosched`, `runtime.GOMAXPROCS`, `runtime.NumGoroutine`, `runtime.LockOSThread` | [`yield_now`], [`runtime`] |
//! | `make(chan T, n)`, `close`, `select` | [`chan`], [`select!`] |
//! | `time.Sleep`, `time.After`, `time.Timer`, `time.Ticker` | [`time`] |
//! | `sync.Mutex`, `sync.WaitGroup`, `sync.Once`, ... | [`sync`] |
//! | `net.Listen`, `net.Dial` | [`net`] |
//! | a blocking system call | [`blocking`](fn@blocking) |
//!
//! # Goroutines and threads
//!
//! Every blocking call of this crate works in two contexts: inside a goroutine it
//! parks the goroutine, and its OS thread (an M) runs other goroutines meanwhile;
//! on a plain OS thread, such as `fn main` or a `std::thread`, it blocks that
//! thread. Goroutines and threads can therefore share channels, locks and wait
//! groups freely. Waiting never keeps a core busy (a contended [`sync::Mutex`]
//! spins for a moment before it parks).
//!
//! Calls that block the OS thread without goro knowing (std's locks, file I/O,
//! `std::thread::sleep`, FFI) stall every goroutine queued on that thread's P:
//! wrap them in [`blocking`](fn@blocking), or use the goro equivalents. `docs/SAFETY.md` lists
//! this and the other hazards of code that runs as a goroutine: tight loops,
//! stack size, the end of `main`, and thread-locals.
//!
//! # The thread-local rule
//!
//! A goroutine moves between OS threads when it parks, and optimised code may
//! then touch the previous thread's thread-locals. So goroutine code uses no
//! thread-local, its own or a library's, except inside
//! [`blocking`](fn@blocking), or in a goroutine that [`runtime::lock_os_thread`]
//! wired to its thread before its first park, while it stays wired; [`local!`]
//! is the per-goroutine storage to use instead. The types
//! cannot check this: [`spawn`](fn@spawn) and [`Builder::spawn`] are `unsafe fn`
//! with the rule as their contract, and [`go!`] is safe to call but carries the
//! same rule. goro is not sound against thread-locals.
//!
//! # The runtime
//!
//! There is one runtime per process. It starts on first use with `GOMAXPROCS` Ps
//! (the environment variable, else the number of CPUs); [`runtime::Config`] sets it
//! up explicitly instead, before first use. A panic in a goroutine stays in that
//! goroutine: it is printed to stderr, as a std thread's is, and returned by
//! [`JoinHandle::join`]. As in Go, returning from `main` ends the process, and
//! goroutines still running stop there.
//!
//! `GODEBUG=schedtrace=1000` prints Go's scheduler trace every second
//! (`docs/SCHEDTRACE.md` explains how to read it). The design is described in
//! `docs/ARCHITECTURE.md`, each measured choice in `docs/decisions/`.

#![warn(missing_docs)]

mod block_on;
pub mod chan;
mod local;
pub mod net;
mod print;
pub mod runtime;
mod spawn;
pub mod sync;
pub mod time;
#[cfg(feature = "tokio")]
pub mod tokio;

pub use block_on::block_on;
pub use local::LocalKey;
pub use runtime::exports::{blocking, current, yield_now, GoId};
#[doc(hidden)]
pub use spawn::{go as __go, go_with as __go_with};
pub use spawn::{spawn, Builder, JoinHandle};

/// Internals used by the print macros' expansion. Not part of the API.
#[doc(hidden)]
pub mod __print {
    pub use crate::print::{print_to, Stream};
}

/// Internals exposed only for `benches/` (not part of the API, no stability).
#[doc(hidden)]
pub mod __bench {
    pub use crate::runtime::exports::{RunQueue, RING_CAP};
}

/// Starts a goroutine, like Go's `go` statement: `goro::go!(|| expr)` or
/// `goro::go!(move || expr)` returns its [`JoinHandle`];
/// `goro::go!(builder, || expr)` starts it with a [`Builder`]'s name and stack
/// size and returns `io::Result<JoinHandle<T>>`. The closure must keep the
/// thread-local rule, spelled out next.
///
/// **The thread-local rule, which the types cannot check:** the goroutine's code,
/// and all it calls, uses no thread-local — its own or a library's
/// (`thread_local!`, `std::thread::current()`, `rand::rng()`, `HashMap::new()`,
/// `std::io::stdout().lock()`, a std `println!` whose argument waits) — except inside [`blocking`](fn@crate::blocking),
/// or in a goroutine that [`runtime::lock_os_thread`] wired to its thread before
/// its first park, while it stays wired. A goroutine moves
/// between threads at any park, and optimised code may then touch the previous
/// thread's value (a data race). [`spawn`](fn@spawn)'s `# Safety` section says
/// why and what is allowed; [`local!`] is the per-goroutine storage to use
/// instead. `go!` is a safe macro (usable under `#![forbid(unsafe_code)]`: the
/// closure is never placed in an `unsafe` block), so keeping this rule is on the
/// caller, exactly as with the `unsafe fn`s [`spawn`](fn@spawn) and
/// [`Builder::spawn`].
///
/// The closure must be `Send + 'static` and so must its result. The new
/// goroutine is queued to run next on the current P (Go's `runnext`), or on the
/// global run queue when called from a plain thread; the caller carries on
/// without waiting for it. Dropping the handle detaches the goroutine.
///
/// ```
/// let data = vec![1, 2, 3];
/// let h = goro::go!(move || data.iter().sum::<i32>());
/// assert_eq!(h.join().unwrap(), 6);
///
/// let named = goro::go!(goro::Builder::new().name("adder"), || 40 + 2)?;
/// assert_eq!(named.join().unwrap(), 42);
/// # Ok::<(), std::io::Error>(())
/// ```
#[macro_export]
macro_rules! go {
    ($f:expr $(,)?) => {
        $crate::__go($f)
    };
    ($builder:expr, $f:expr $(,)?) => {
        $crate::__go_with($builder, $f)
    };
}

/// The README's examples, compiled and run as doc-tests so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
