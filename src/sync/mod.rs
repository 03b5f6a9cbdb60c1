//! Synchronisation for goroutines: Go's `sync` package, in std's shapes.
//!
//! Every blocking call parks the calling goroutine (its M goes on running other
//! Gs), or blocks the calling thread outside a goroutine. Waiters queue first
//! come, first served. There is no poisoning (Go has none): a guard dropped during
//! a panic simply releases the lock.
//!
//! Use these, not `std::sync::Mutex`, for locks held across blocking calls in a
//! goroutine: a std lock blocks the whole M, and with it every G queued on its P.

mod condvar;
pub(crate) mod guarded;
mod mutex;
mod once;
mod rwlock;
mod semaphore;
mod waitgroup;

pub use condvar::Condvar;
pub use mutex::{Mutex, MutexGuard};
pub use once::Once;
pub use rwlock::{RwLock, RwLockReadGuard, RwLockWriteGuard};
pub use semaphore::{Semaphore, SemaphorePermit};
pub use waitgroup::WaitGroup;
