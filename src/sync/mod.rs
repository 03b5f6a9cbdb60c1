//! Synchronisation for goroutines: Go's `sync` package, in std's shapes.
//!
//! | Go | goro |
//! |---|---|
//! | `sync.Mutex` | [`Mutex<T>`], holding the data it guards, as std's |
//! | `sync.RWMutex` | [`RwLock<T>`] |
//! | `sync.Cond` | [`Condvar`], used with a goro [`Mutex`] |
//! | `sync.WaitGroup` | [`WaitGroup`] |
//! | `sync.Once` | [`Once`] |
//! | `x/sync/semaphore`, a buffered channel used as one | [`Semaphore`] |
//!
//! Every blocking call parks the calling goroutine (its M goes on running other
//! goroutines), or blocks the calling thread outside a goroutine, so goroutines and
//! threads can share these freely. Waiters queue first come, first served. There is
//! no poisoning (Go has none): a guard dropped during a panic simply releases the
//! lock.
//!
//! Use these, not `std::sync::Mutex`, for a lock a goroutine may wait for long or
//! hold across a blocking call: waiting for a std lock blocks the whole M, and with
//! it every goroutine queued on its P.
//!
//! ```
//! use goro::sync::{Mutex, WaitGroup};
//! use std::sync::Arc;
//!
//! let hits = Arc::new(Mutex::new(Vec::new()));
//! let wg = WaitGroup::new();
//! for i in 0..8 {
//!     let hits = hits.clone();
//!     wg.go(move || hits.lock().push(i));
//! }
//! wg.wait();
//! let mut hits = hits.lock().clone();
//! hits.sort();
//! assert_eq!(hits, (0..8).collect::<Vec<_>>());
//! ```

mod condvar;
#[cfg(all(test, loom))]
mod loom_models;
mod mutex;
mod once;
mod rwlock;
mod semaphore;
mod waitgroup;

pub use condvar::Condvar;
pub use mutex::{Mutex, MutexGuard};
pub use once::Once;
pub use rwlock::{RwLock, RwLockReadGuard, RwLockWriteGuard};
pub use semaphore::{OwnedSemaphorePermit, Semaphore, SemaphorePermit};
pub use waitgroup::{WaitGroup, WaitGroupGuard};
