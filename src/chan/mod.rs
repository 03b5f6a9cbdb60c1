//! Channels: Go's `chan`, MPMC, with `select!`.
//!
//! ```
//! use goro::chan;
//!
//! let (tx, rx) = chan::bounded::<u32>(0); // unbuffered: a rendezvous, like make(chan u32)
//! let producer = goro::go!(move || {
//!     for i in 0..5 {
//!         tx.send(i).unwrap();
//!     }
//!     // dropping the last Sender closes the channel
//! });
//! let got: Vec<u32> = rx.iter().collect(); // until closed and drained
//! producer.join().unwrap();
//! assert_eq!(got, [0, 1, 2, 3, 4]);
//! ```
//!
//! Every blocking call parks the calling goroutine (its M runs other Gs), or
//! blocks the calling thread when called outside a goroutine; a G and a thread can
//! talk over the same channel. Values are received in the order they were sent,
//! and blocked senders and receivers are served first come, first served.
//!
//! A channel closes on [`Sender::close`], when every `Sender` is dropped, or when
//! every `Receiver` is dropped. After that, sends fail
//! and hand the value back, and receives drain what is buffered and then fail.

mod channel;
mod error;
mod select;

use channel::Chan;
pub use error::{RecvError, RecvTimeoutError, SendError, SendTimeoutError, TryRecvError, TrySendError};
use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// Internals used by the `select!` macro expansion. Not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use super::select::{select, select_forever, Case, Ctx, LockRef, RecvCase, SendCase};
}

/// Creates a channel with `cap` buffer slots. `cap == 0` makes an unbuffered
/// channel: each send waits for a receiver to take the value (Go's
/// `make(chan T)`).
///
/// ```
/// let (tx, rx) = goro::chan::bounded(2);
/// tx.send("a").unwrap();
/// tx.send("b").unwrap();
/// assert!(tx.try_send("c").unwrap_err().is_full());
/// assert_eq!((rx.recv(), rx.len(), rx.capacity()), (Ok("a"), 1, 2));
/// ```
pub fn bounded<T>(cap: usize) -> (Sender<T>, Receiver<T>) {
    let chan = Arc::new(Chan::new(cap, 1, 1));
    (Sender { chan: chan.clone() }, Receiver { chan })
}

/// A channel whose senders can never close it: the close-on-last-drop rule is
/// switched off by one sender count nobody holds (timer channels never close).
pub(crate) fn bounded_unclosable<T>(cap: usize) -> (Sender<T>, Receiver<T>) {
    let chan = Arc::new(Chan::new(cap, 2, 1));
    (Sender { chan: chan.clone() }, Receiver { chan })
}

/// A receiver that never receives anything: Go's nil channel, to switch off a
/// `select!` arm.
///
/// ```
/// let never = goro::chan::never::<i32>();
/// let r = goro::select! {
///     recv(never) -> _ => "impossible",
///     default => "default",
/// };
/// assert_eq!(r, "default");
/// ```
pub fn never<T>() -> Receiver<T> {
    // One sender count that no Sender holds: the channel can never close.
    Receiver {
        chan: Arc::new(Chan::new(0, 1, 1)),
    }
}

/// The sending half of a channel. Cloneable: any number of goroutines and threads
/// may send.
pub struct Sender<T> {
    chan: Arc<Chan<T>>,
}

/// The receiving half of a channel. Cloneable: any number of goroutines and
/// threads may receive (each value goes to exactly one of them).
pub struct Receiver<T> {
    chan: Arc<Chan<T>>,
}

impl<T> Sender<T> {
    /// Sends `v`: waits until a receiver takes it (unbuffered) or a buffer slot is
    /// free.
    ///
    /// # Errors
    /// The channel is closed; the value comes back.
    pub fn send(&self, v: T) -> Result<(), SendError<T>> {
        crate::runtime::preempt::check();
        self.chan.send(v)
    }

    /// Sends `v` if that can be done without waiting.
    ///
    /// # Errors
    /// `Full(v)` if no buffer slot is free (or, unbuffered, no receiver is
    /// waiting); `Closed(v)` if the channel is closed.
    pub fn try_send(&self, v: T) -> Result<(), TrySendError<T>> {
        self.chan.try_send(v)
    }

    /// As [`Sender::send`], waiting at most `timeout`.
    ///
    /// # Errors
    /// `Timeout(v)` or `Closed(v)`; the value comes back.
    pub fn send_timeout(&self, v: T, timeout: Duration) -> Result<(), SendTimeoutError<T>> {
        crate::runtime::preempt::check();
        self.chan.send_timeout(v, timeout)
    }
}

impl<T> Receiver<T> {
    /// Receives a value, waiting until one is available.
    ///
    /// # Errors
    /// The channel is closed and drained.
    pub fn recv(&self) -> Result<T, RecvError> {
        crate::runtime::preempt::check();
        self.chan.recv()
    }

    /// Receives a value if one is available now.
    ///
    /// # Errors
    /// `Empty`, or `Closed` once closed and drained.
    pub fn try_recv(&self) -> Result<T, TryRecvError> {
        self.chan.try_recv()
    }

    /// As [`Receiver::recv`], waiting at most `timeout`.
    ///
    /// # Errors
    /// `Timeout`, or `Closed` once closed and drained.
    pub fn recv_timeout(&self, timeout: Duration) -> Result<T, RecvTimeoutError> {
        crate::runtime::preempt::check();
        self.chan.recv_timeout(timeout)
    }

    /// Iterates over received values until the channel is closed and drained.
    pub fn iter(&self) -> Iter<'_, T> {
        Iter { rx: self }
    }

    /// Iterates over the values available now, without waiting.
    pub fn try_iter(&self) -> TryIter<'_, T> {
        TryIter { rx: self }
    }
}

/// What both ends of a channel can tell and do.
macro_rules! both_ends {
    ($($end:ident),+) => {$(
        impl<T> $end<T> {
            /// Values in the buffer.
            pub fn len(&self) -> usize {
                self.chan.len()
            }

            /// True if the buffer is empty.
            pub fn is_empty(&self) -> bool {
                self.len() == 0
            }

            /// Buffer slots (0 for unbuffered).
            pub fn capacity(&self) -> usize {
                self.chan.capacity()
            }

            /// True once the channel is closed.
            pub fn is_closed(&self) -> bool {
                self.chan.is_closed()
            }
        }
    )+};
}

both_ends!(Sender, Receiver);

impl<T> Sender<T> {
    /// Closes the channel (Go's `close`). Closing again does nothing. (Only the
    /// sending side can close, as in Go; timer channels, which hand out only
    /// receivers, therefore never close.)
    pub fn close(&self) {
        self.chan.close();
    }

    /// Drops every buffered value; returns how many (timers discard stale ticks).
    pub(crate) fn drain_buffer(&self) -> usize {
        let mut n = 0;
        while self.chan.try_recv_buffered().is_some() {
            n += 1;
        }
        n
    }

    /// True while some `Receiver` exists.
    pub(crate) fn has_receivers(&self) -> bool {
        self.chan.receivers.load(Ordering::Acquire) > 0
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        self.chan.senders.fetch_add(1, Ordering::Relaxed);
        Sender {
            chan: self.chan.clone(),
        }
    }
}

impl<T> Clone for Receiver<T> {
    fn clone(&self) -> Self {
        self.chan.receivers.fetch_add(1, Ordering::Relaxed);
        Receiver {
            chan: self.chan.clone(),
        }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        if self.chan.senders.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.chan.close();
        }
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        if self.chan.receivers.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.chan.close();
        }
    }
}

impl<T> fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sender")
            .field("len", &self.len())
            .field("cap", &self.capacity())
            .finish_non_exhaustive()
    }
}

impl<T> fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Receiver")
            .field("len", &self.len())
            .field("cap", &self.capacity())
            .finish_non_exhaustive()
    }
}

/// Blocking iterator over a [`Receiver`]; ends when the channel is closed and drained.
pub struct Iter<'a, T> {
    rx: &'a Receiver<T>,
}

impl<T> Iterator for Iter<'_, T> {
    type Item = T;
    fn next(&mut self) -> Option<T> {
        self.rx.recv().ok()
    }
}

/// Non-blocking iterator over the values available now.
pub struct TryIter<'a, T> {
    rx: &'a Receiver<T>,
}

impl<T> Iterator for TryIter<'_, T> {
    type Item = T;
    fn next(&mut self) -> Option<T> {
        self.rx.try_recv().ok()
    }
}

/// Owning blocking iterator over a [`Receiver`].
pub struct IntoIter<T> {
    rx: Receiver<T>,
}

impl<T> Iterator for IntoIter<T> {
    type Item = T;
    fn next(&mut self) -> Option<T> {
        self.rx.recv().ok()
    }
}

impl<'a, T> IntoIterator for &'a Receiver<T> {
    type Item = T;
    type IntoIter = Iter<'a, T>;
    fn into_iter(self) -> Iter<'a, T> {
        self.iter()
    }
}

impl<T> IntoIterator for Receiver<T> {
    type Item = T;
    type IntoIter = IntoIter<T>;
    fn into_iter(self) -> IntoIter<T> {
        IntoIter { rx: self }
    }
}
