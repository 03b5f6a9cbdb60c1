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
//! [`bounded`] makes a channel with a buffer of `cap` values; `cap == 0` is Go's
//! unbuffered channel, where a send waits for a receiver. Both ends are `Clone`,
//! `Send` and `Sync`: any number of goroutines and threads may send and receive
//! (multi-producer, multi-consumer, as in Go), and each value goes to exactly one
//! receiver.
//!
//! Every blocking call parks the calling goroutine (its M runs other goroutines),
//! or blocks the calling thread when called outside a goroutine; a goroutine and a
//! thread can talk over the same channel. Values are received in the order they
//! were sent, and blocked senders and receivers are served first come, first
//! served. Each blocking operation has a non-blocking `try_` form and a `_timeout`
//! form, and [`select!`](crate::select!) waits on several at once.
//!
//! # Closing
//!
//! A channel closes on [`Sender::close`] (Go's `close`), when every `Sender` is
//! dropped, or when every `Receiver` is dropped. After that, sends fail and hand
//! the value back; receives still get the buffered values, then fail. Where Go
//! panics (sending on a closed channel, closing twice) or returns a zero value
//! (receiving from a closed channel), goro returns an error or does nothing:
//!
//! ```
//! let (tx, rx) = goro::chan::bounded(4);
//! tx.send(1).unwrap();
//! tx.close();
//! tx.close(); // idempotent
//! assert_eq!(tx.send(2), Err(goro::chan::SendError(2)));
//! assert_eq!(rx.recv(), Ok(1)); // buffered values survive the close
//! assert!(rx.recv().is_err());
//! ```
//!
//! Go's nil channel, which is never ready, is [`never()`].

mod channel;
mod error;
mod futures;
#[cfg(all(test, loom))]
mod loom_models;
mod select;
mod wakers;

use channel::Chan;
pub use error::{RecvError, RecvTimeoutError, SendError, SendTimeoutError, TryRecvError, TrySendError};
pub use futures::{RecvFut, RecvStream, SendFut, SendSink};
use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// Internals used by the `select!` macro expansion. Not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use super::select::{select, select_forever, Case, ClaimRef, Ctx, LockRef, RecvCase, SendCase};
}

/// Creates a channel with `cap` buffer slots: Go's `make(chan T, cap)`.
///
/// With `cap > 0`, a send completes at once while the buffer has room and waits
/// while it is full. `cap == 0` makes an unbuffered channel (Go's
/// `make(chan T)`): each send waits until a receiver takes the value, a
/// rendezvous. The buffer is allocated as it fills, so a large `cap` costs
/// nothing up front.
///
/// ```
/// let (tx, rx) = goro::chan::bounded(2);
/// tx.send("a").unwrap();
/// tx.send("b").unwrap();
/// assert!(tx.try_send("c").unwrap_err().is_full());
/// assert_eq!((rx.recv(), rx.len(), rx.capacity()), (Ok("a"), 1, 2));
/// ```
pub fn bounded<T>(cap: usize) -> (Sender<T>, Receiver<T>) {
    start_runtime();
    let chan = Arc::new(Chan::new(cap, 1, 1));
    (Sender { chan: chan.clone() }, Receiver { chan })
}

/// A channel is an entry point: the runtime starts with the first one, so a
/// thread that then waits on it for good has a deadlock check watching.
/// (Under loom the models drive channels between loom's threads alone.)
#[inline]
fn start_runtime() {
    #[cfg(not(loom))]
    crate::runtime::exports::started();
}

/// A timer's channel: one slot its senders can never close (the close-on-last-drop
/// rule is switched off by one sender count nobody holds), and `len`/`capacity`
/// report 0, as Go 1.23's timer channels.
pub(crate) fn timer_channel<T>() -> (Sender<T>, Receiver<T>) {
    let chan = Arc::new(Chan::new_timer());
    (Sender { chan: chan.clone() }, Receiver { chan })
}

/// A receiver that never receives anything and never closes: Go's nil channel.
///
/// Its use is to switch off an arm of a [`select!`](crate::select!) while keeping
/// the arm in the source, e.g. once the channel it was reading is exhausted. A
/// plain `recv()` on it waits forever; `try_recv` always returns `Empty`.
///
/// ```
/// use goro::chan::{self, Receiver};
///
/// let (tx_a, rx_a) = chan::bounded(2);
/// let (tx_b, rx_b) = chan::bounded(2);
/// tx_a.send("a").unwrap();
/// drop(tx_a); // rx_a: one value, then closed
/// tx_b.send("b1").unwrap();
/// tx_b.send("b2").unwrap();
/// drop(tx_b);
///
/// let (mut a, mut b): (Receiver<&str>, Receiver<&str>) = (rx_a, rx_b);
/// let mut got = Vec::new();
/// let mut open = 2;
/// while open > 0 {
///     goro::select! {
///         recv(a) -> v => match v {
///             Ok(v) => got.push(v),
///             Err(_) => { a = chan::never(); open -= 1; } // switch the arm off
///         },
///         recv(b) -> v => match v {
///             Ok(v) => got.push(v),
///             Err(_) => { b = chan::never(); open -= 1; }
///         },
///     }
/// }
/// got.sort();
/// assert_eq!(got, ["a", "b1", "b2"]);
/// ```
pub fn never<T>() -> Receiver<T> {
    start_runtime();
    // One sender count that no Sender holds: the channel can never close.
    Receiver {
        chan: Arc::new(Chan::new(0, 1, 1)),
    }
}

/// The sending half of a channel, made by [`bounded`].
///
/// Cloneable, `Send` and `Sync`: any number of goroutines and threads may send,
/// through clones or through a shared reference. The channel closes when
/// [`close`](Sender::close) is called or the last `Sender` is dropped.
///
/// ```
/// let (tx, rx) = goro::chan::bounded(0);
/// let senders: Vec<_> = (0..3)
///     .map(|i| {
///         let tx = tx.clone();
///         goro::go!(move || tx.send(i).unwrap())
///     })
///     .collect();
/// drop(tx); // the clones keep the channel open until their goroutines end
/// let mut got: Vec<i32> = rx.iter().collect();
/// got.sort();
/// assert_eq!(got, [0, 1, 2]);
/// senders.into_iter().for_each(|h| h.join().unwrap());
/// ```
pub struct Sender<T> {
    chan: Arc<Chan<T>>,
}

/// The receiving half of a channel, made by [`bounded`] or [`never()`].
///
/// Cloneable, `Send` and `Sync`: any number of goroutines and threads may
/// receive, and each value goes to exactly one of them. `for v in &rx` (or
/// [`iter`](Receiver::iter)) receives until the channel is closed and drained.
/// When the last `Receiver` is dropped the channel closes, and sends fail.
///
/// ```
/// let (tx, rx) = goro::chan::bounded(16);
/// let workers: Vec<_> = (0..4)
///     .map(|_| {
///         let rx = rx.clone();
///         goro::go!(move || rx.iter().map(|n: u64| n * n).sum::<u64>())
///     })
///     .collect();
/// for n in 1..=10 {
///     tx.send(n).unwrap();
/// }
/// drop(tx); // closes the channel: the workers' loops end
/// let total: u64 = workers.into_iter().map(|h| h.join().unwrap()).sum();
/// assert_eq!(total, 385);
/// ```
pub struct Receiver<T> {
    chan: Arc<Chan<T>>,
}

impl<T> Sender<T> {
    /// Sends `v` (Go's `ch <- v`): waits until a buffer slot is free or, on an
    /// unbuffered channel, until a receiver takes the value. Waiting parks the
    /// goroutine, or blocks the thread outside one; blocked senders are served in
    /// arrival order.
    ///
    /// ```
    /// let (tx, rx) = goro::chan::bounded(0);
    /// let h = goro::go!(move || tx.send("hi")); // waits for the receive below
    /// assert_eq!(rx.recv(), Ok("hi"));
    /// assert_eq!(h.join().unwrap(), Ok(()));
    /// ```
    ///
    /// # Errors
    /// [`SendError`] holding `v` if the channel is closed, or closes while the
    /// send waits (Go would panic).
    pub fn send(&self, v: T) -> Result<(), SendError<T>> {
        crate::runtime::wait::preempt_check();
        self.chan.send(v)
    }

    /// Sends `v` if that can be done without waiting: Go's `select` with a send
    /// arm and a `default`. Never blocks.
    ///
    /// ```
    /// use goro::chan::{bounded, TrySendError};
    ///
    /// let (tx, rx) = bounded(1);
    /// assert_eq!(tx.try_send(1), Ok(()));
    /// assert_eq!(tx.try_send(2), Err(TrySendError::Full(2)));
    /// drop(rx);
    /// assert_eq!(tx.try_send(3), Err(TrySendError::Closed(3)));
    /// ```
    ///
    /// # Errors
    /// [`TrySendError::Full`] if no buffer slot is free (on an unbuffered channel:
    /// if no receiver is waiting); [`TrySendError::Closed`] if the channel is
    /// closed. Both hold `v`.
    pub fn try_send(&self, v: T) -> Result<(), TrySendError<T>> {
        self.chan.try_send(v)
    }

    /// As [`Sender::send`], waiting at most `timeout`. A zero `timeout` makes it a
    /// [`try_send`](Sender::try_send).
    ///
    /// ```
    /// use goro::chan::{bounded, SendTimeoutError};
    /// use std::time::Duration;
    ///
    /// let (tx, _rx) = bounded(0); // nobody receives
    /// let r = tx.send_timeout('x', Duration::from_millis(1));
    /// assert_eq!(r, Err(SendTimeoutError::Timeout('x')));
    /// ```
    ///
    /// # Errors
    /// [`SendTimeoutError::Timeout`] if the value could not be sent in time,
    /// [`SendTimeoutError::Closed`] if the channel is or becomes closed. Both hold
    /// `v`.
    pub fn send_timeout(&self, v: T, timeout: Duration) -> Result<(), SendTimeoutError<T>> {
        crate::runtime::wait::preempt_check();
        self.chan.send_timeout(v, timeout)
    }
}

impl<T> Receiver<T> {
    /// Receives a value (Go's `v, ok := <-ch`), waiting until one is available.
    /// Waiting parks the goroutine, or blocks the thread outside one; blocked
    /// receivers are served in arrival order.
    ///
    /// ```
    /// let (tx, rx) = goro::chan::bounded(1);
    /// goro::go!(move || tx.send(42).unwrap()); // then drops tx: closed
    /// assert_eq!(rx.recv(), Ok(42));
    /// assert_eq!(rx.recv(), Err(goro::chan::RecvError));
    /// ```
    ///
    /// # Errors
    /// [`RecvError`] once the channel is closed and its buffer drained (where Go
    /// returns the zero value and `ok == false`).
    pub fn recv(&self) -> Result<T, RecvError> {
        crate::runtime::wait::preempt_check();
        self.chan.recv()
    }

    /// Receives a value if one is available now: Go's `select` with a receive arm
    /// and a `default`. Never blocks. On an unbuffered channel, a value is
    /// available only if a sender is waiting.
    ///
    /// ```
    /// use goro::chan::{bounded, TryRecvError};
    ///
    /// let (tx, rx) = bounded(1);
    /// assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    /// tx.send(5).unwrap();
    /// drop(tx);
    /// assert_eq!(rx.try_recv(), Ok(5));
    /// assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
    /// ```
    ///
    /// # Errors
    /// [`TryRecvError::Empty`] if nothing is there now; [`TryRecvError::Closed`]
    /// once the channel is closed and drained.
    pub fn try_recv(&self) -> Result<T, TryRecvError> {
        self.chan.try_recv()
    }

    /// As [`Receiver::recv`], waiting at most `timeout`. A zero `timeout` makes it
    /// a [`try_recv`](Receiver::try_recv).
    ///
    /// ```
    /// use goro::chan::{bounded, RecvTimeoutError};
    /// use std::time::Duration;
    ///
    /// let (tx, rx) = bounded::<i32>(1);
    /// assert_eq!(rx.recv_timeout(Duration::from_millis(1)), Err(RecvTimeoutError::Timeout));
    /// drop(tx);
    /// assert_eq!(rx.recv_timeout(Duration::from_millis(1)), Err(RecvTimeoutError::Closed));
    /// ```
    ///
    /// # Errors
    /// [`RecvTimeoutError::Timeout`] if nothing arrived in time;
    /// [`RecvTimeoutError::Closed`] once the channel is closed and drained.
    pub fn recv_timeout(&self, timeout: Duration) -> Result<T, RecvTimeoutError> {
        crate::runtime::wait::preempt_check();
        self.chan.recv_timeout(timeout)
    }

    /// A blocking iterator over received values, which ends once the channel is
    /// closed and drained: Go's `for v := range ch`. `for v in &rx` is the same.
    ///
    /// ```
    /// let (tx, rx) = goro::chan::bounded(0);
    /// goro::go!(move || (1..=3).for_each(|i| tx.send(i).unwrap()));
    /// assert_eq!(rx.iter().collect::<Vec<_>>(), [1, 2, 3]);
    /// ```
    pub fn iter(&self) -> Iter<'_, T> {
        Iter { rx: self }
    }

    /// An iterator over the values available now, which ends instead of
    /// waiting: [`try_recv`](Receiver::try_recv) until it fails.
    ///
    /// ```
    /// let (tx, rx) = goro::chan::bounded(4);
    /// tx.send(1).unwrap();
    /// tx.send(2).unwrap();
    /// assert_eq!(rx.try_iter().collect::<Vec<_>>(), [1, 2]);
    /// assert_eq!(rx.try_iter().next(), None); // empty, though still open
    /// ```
    pub fn try_iter(&self) -> TryIter<'_, T> {
        TryIter { rx: self }
    }
}

/// What both ends of a channel can tell and do.
macro_rules! both_ends {
    ($($end:ident),+) => {$(
        impl<T> $end<T> {
            /// The number of values in the buffer (Go's `len(ch)`). Always 0 on an
            /// unbuffered channel: a value waiting in a blocked `send` is not
            /// counted. Always 0 on a timer's channel too (Go 1.23).
            ///
            /// ```
            /// let (tx, rx) = goro::chan::bounded(3);
            /// tx.send('a').unwrap();
            /// tx.send('b').unwrap();
            /// assert_eq!((tx.len(), rx.len()), (2, 2));
            /// ```
            pub fn len(&self) -> usize {
                self.chan.len()
            }

            /// True if the buffer holds no value (`len() == 0`).
            ///
            /// ```
            /// let (tx, rx) = goro::chan::bounded(1);
            /// assert!(rx.is_empty());
            /// tx.send(()).unwrap();
            /// assert!(!tx.is_empty());
            /// ```
            pub fn is_empty(&self) -> bool {
                self.len() == 0
            }

            /// The number of buffer slots, fixed at creation (Go's `cap(ch)`): 0 for
            /// an unbuffered channel, and for a timer's channel (Go 1.23).
            ///
            /// ```
            /// let (tx, rx) = goro::chan::bounded::<u8>(8);
            /// assert_eq!((tx.capacity(), rx.capacity()), (8, 8));
            /// assert_eq!(goro::chan::bounded::<u8>(0).0.capacity(), 0);
            /// ```
            pub fn capacity(&self) -> usize {
                self.chan.capacity()
            }

            /// True once the channel is closed, by [`Sender::close`] or by dropping
            /// every sender or every receiver. A closed channel may still hold
            /// buffered values for its receivers.
            ///
            /// ```
            /// let (tx, rx) = goro::chan::bounded(1);
            /// tx.send(1).unwrap();
            /// assert!(!rx.is_closed());
            /// drop(tx);
            /// assert!(rx.is_closed());
            /// assert_eq!(rx.recv(), Ok(1));
            /// ```
            pub fn is_closed(&self) -> bool {
                self.chan.is_closed()
            }
        }
    )+};
}

both_ends!(Sender, Receiver);

impl<T> Sender<T> {
    /// Closes the channel, like Go's `close(ch)`, for every sender and receiver.
    /// Closing again does nothing (Go panics). Receivers blocked on the channel
    /// wake and, once the buffer is drained, get an error; blocked senders wake
    /// and get their value back in a [`SendError`]. Only the sending side can
    /// close, as in Go; timer channels, which hand out only receivers, therefore
    /// never close.
    ///
    /// ```
    /// let (tx, rx) = goro::chan::bounded::<i32>(0);
    /// let waiting = goro::go!(move || rx.recv()); // parks: nothing is sent
    /// tx.close();
    /// assert!(waiting.join().unwrap().is_err());
    /// assert!(tx.is_closed() && tx.send(1).is_err());
    /// ```
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

    /// On a timer's channel: true while a receiver is blocked on it (in a
    /// `recv`, a `recv_timeout` or a `select!` arm). Lock-free.
    pub(crate) fn has_waiting_receivers(&self) -> bool {
        self.chan.has_waiting_receivers()
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

/// A blocking iterator over a borrowed [`Receiver`], made by [`Receiver::iter`] or
/// `for v in &rx`; it ends when the channel is closed and drained.
///
/// ```
/// let (tx, rx) = goro::chan::bounded(2);
/// tx.send("x").unwrap();
/// tx.send("y").unwrap();
/// drop(tx);
/// let mut seen = Vec::new();
/// for v in &rx {
///     seen.push(v);
/// }
/// assert_eq!(seen, ["x", "y"]);
/// ```
pub struct Iter<'a, T> {
    rx: &'a Receiver<T>,
}

impl<T> Iterator for Iter<'_, T> {
    type Item = T;
    fn next(&mut self) -> Option<T> {
        self.rx.recv().ok()
    }
}

/// A non-blocking iterator over the values a [`Receiver`] has available now, made
/// by [`Receiver::try_iter`].
///
/// ```
/// let (tx, rx) = goro::chan::bounded(3);
/// (0..3).for_each(|i| tx.send(i).unwrap());
/// assert_eq!(rx.try_iter().sum::<i32>(), 3);
/// ```
pub struct TryIter<'a, T> {
    rx: &'a Receiver<T>,
}

impl<T> Iterator for TryIter<'_, T> {
    type Item = T;
    fn next(&mut self) -> Option<T> {
        self.rx.try_recv().ok()
    }
}

/// A blocking iterator that owns a [`Receiver`], made by `rx.into_iter()` or
/// `for v in rx`; it ends when the channel is closed and drained.
///
/// ```
/// let (tx, rx) = goro::chan::bounded(0);
/// goro::go!(move || (0..4).for_each(|i| tx.send(i).unwrap()));
/// let h = goro::go!(move || rx.into_iter().max());
/// assert_eq!(h.join().unwrap(), Some(3));
/// ```
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
