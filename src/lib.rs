//! # goro — Go's runtime scheduler, in Rust
//!
//! `goro::go!(|| ...)` starts a goroutine: a stackful green thread scheduled in
//! Go's G/M/P model. Code inside it is plain blocking-style Rust; every wait
//! (`join`, `sleep`, ...) parks the goroutine and frees its OS thread for others.
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
//! The runtime starts on first use with `GOMAXPROCS` Ps (the environment variable,
//! else the number of CPUs); [`runtime::Config`] sets it up explicitly.
//! `GODEBUG=schedtrace=1000` prints Go's scheduler trace. The design is described
//! in `docs/DESIGN.md`; the hazards of green threads (thread-locals across parks,
//! std locks in goroutines) in `docs/SAFETY.md`.

#![warn(missing_docs)]

mod blocking;
pub mod chan;
pub mod net;
pub(crate) mod netpoll;
pub mod runtime;
mod spawn;
pub mod sync;
pub mod time;

pub use blocking::blocking;
pub use spawn::{current, spawn, yield_now, Builder, GoId, JoinHandle};

/// Internals exposed only for `benches/` (not part of the API, no stability).
#[doc(hidden)]
pub mod __bench {
    pub use crate::runtime::runq::{RunQueue, RING_CAP};
}

/// Spawns a goroutine: `goro::go!(|| expr)` or `goro::go!(move || expr)`. Returns
/// its [`JoinHandle`].
///
/// ```
/// let data = vec![1, 2, 3];
/// let h = goro::go!(move || data.iter().sum::<i32>());
/// assert_eq!(h.join().unwrap(), 6);
/// ```
#[macro_export]
macro_rules! go {
    ($f:expr) => {
        $crate::spawn($f)
    };
}

/// The README's examples, compiled and run as doc-tests so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
