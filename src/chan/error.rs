//! Channel error types, shaped as std's and crossbeam's: each carries back the value
//! that could not be sent, and none requires `T: Debug` to be `Debug`.

use std::error::Error;
use std::fmt;

/// The error of [`Sender::send`](super::Sender::send): the channel is closed. The
/// value that was not sent is the public field `.0`.
///
/// ```
/// use goro::chan::{bounded, SendError};
///
/// let (tx, rx) = bounded::<String>(1);
/// drop(rx); // no receiver left: the channel is closed
/// let SendError(back) = tx.send("lost?".to_string()).unwrap_err();
/// assert_eq!(back, "lost?");
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct SendError<T>(pub T);

/// The error of [`Sender::try_send`](super::Sender::try_send), holding the value
/// that was not sent.
///
/// ```
/// use goro::chan::{bounded, TrySendError};
///
/// let (tx, _rx) = bounded(0);
/// match tx.try_send(7) {
///     Err(TrySendError::Full(v)) => assert_eq!(v, 7), // no receiver waiting
///     other => panic!("unexpected {other:?}"),
/// }
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum TrySendError<T> {
    /// The buffer is full, or (unbuffered) no receiver is waiting.
    Full(T),
    /// The channel is closed.
    Closed(T),
}

/// The error of [`Sender::send_timeout`](super::Sender::send_timeout), holding the
/// value that was not sent.
///
/// ```
/// use goro::chan::{bounded, SendTimeoutError};
/// use std::time::Duration;
///
/// let (tx, rx) = bounded(1);
/// tx.send(1).unwrap();
/// let err = tx.send_timeout(2, Duration::from_millis(1)).unwrap_err();
/// assert_eq!(err, SendTimeoutError::Timeout(2));
/// drop(rx);
/// assert_eq!(tx.send_timeout(3, Duration::from_millis(1)), Err(SendTimeoutError::Closed(3)));
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum SendTimeoutError<T> {
    /// No room before the deadline.
    Timeout(T),
    /// The channel is closed.
    Closed(T),
}

/// The error of [`Receiver::recv`](super::Receiver::recv): the channel is closed and
/// drained.
///
/// No value will ever come. A `recv` arm of [`select!`](crate::select!) gets this
/// error too in that case.
///
/// ```
/// use goro::chan::{bounded, RecvError};
///
/// let (tx, rx) = bounded::<u8>(0);
/// drop(tx);
/// assert_eq!(rx.recv(), Err(RecvError));
/// assert_eq!(RecvError.to_string(), "receiving on a closed and empty channel");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvError;

/// The error of [`Receiver::try_recv`](super::Receiver::try_recv).
///
/// ```
/// use goro::chan::{bounded, TryRecvError};
///
/// let (tx, rx) = bounded::<u8>(1);
/// assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
/// tx.close();
/// assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TryRecvError {
    /// Nothing to receive right now.
    Empty,
    /// Closed and drained.
    Closed,
}

/// The error of [`Receiver::recv_timeout`](super::Receiver::recv_timeout).
///
/// ```
/// use goro::chan::{bounded, RecvTimeoutError};
/// use std::time::Duration;
///
/// let (tx, rx) = bounded::<u8>(0);
/// let err = rx.recv_timeout(Duration::from_millis(1)).unwrap_err();
/// assert_eq!(err, RecvTimeoutError::Timeout);
/// drop(tx);
/// assert_eq!(rx.recv_timeout(Duration::from_millis(1)), Err(RecvTimeoutError::Closed));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecvTimeoutError {
    /// Nothing arrived before the deadline.
    Timeout,
    /// Closed and drained.
    Closed,
}

impl<T> SendError<T> {
    /// The value that was not sent (the same as `.0`).
    ///
    /// ```
    /// let (tx, rx) = goro::chan::bounded(1);
    /// drop(rx);
    /// assert_eq!(tx.send(vec![1, 2]).unwrap_err().into_inner(), [1, 2]);
    /// ```
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> TrySendError<T> {
    /// The value that was not sent, whatever the reason.
    ///
    /// ```
    /// let (tx, _rx) = goro::chan::bounded(0);
    /// assert_eq!(tx.try_send("v").unwrap_err().into_inner(), "v");
    /// ```
    pub fn into_inner(self) -> T {
        match self {
            TrySendError::Full(v) | TrySendError::Closed(v) => v,
        }
    }

    /// True for [`TrySendError::Full`]: the send would have had to wait.
    ///
    /// ```
    /// let (tx, _rx) = goro::chan::bounded(1);
    /// tx.try_send(1).unwrap();
    /// assert!(tx.try_send(2).unwrap_err().is_full());
    /// ```
    pub fn is_full(&self) -> bool {
        matches!(self, TrySendError::Full(_))
    }

    /// True for [`TrySendError::Closed`]: the channel is closed.
    ///
    /// ```
    /// let (tx, rx) = goro::chan::bounded(1);
    /// drop(rx);
    /// assert!(tx.try_send(1).unwrap_err().is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        matches!(self, TrySendError::Closed(_))
    }
}

impl<T> SendTimeoutError<T> {
    /// The value that was not sent, whatever the reason.
    ///
    /// ```
    /// use std::time::Duration;
    /// let (tx, _rx) = goro::chan::bounded(0);
    /// let err = tx.send_timeout(5u8, Duration::from_millis(1)).unwrap_err();
    /// assert_eq!(err.into_inner(), 5);
    /// ```
    pub fn into_inner(self) -> T {
        match self {
            SendTimeoutError::Timeout(v) | SendTimeoutError::Closed(v) => v,
        }
    }
}

impl<T> fmt::Debug for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SendError { .. }")
    }
}

impl<T> fmt::Debug for TrySendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrySendError::Full(_) => f.write_str("Full(..)"),
            TrySendError::Closed(_) => f.write_str("Closed(..)"),
        }
    }
}

impl<T> fmt::Debug for SendTimeoutError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SendTimeoutError::Timeout(_) => f.write_str("Timeout(..)"),
            SendTimeoutError::Closed(_) => f.write_str("Closed(..)"),
        }
    }
}

impl<T> fmt::Display for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("sending on a closed channel")
    }
}

impl<T> fmt::Display for TrySendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrySendError::Full(_) => f.write_str("sending on a full channel"),
            TrySendError::Closed(_) => f.write_str("sending on a closed channel"),
        }
    }
}

impl<T> fmt::Display for SendTimeoutError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SendTimeoutError::Timeout(_) => f.write_str("timed out waiting on send operation"),
            SendTimeoutError::Closed(_) => f.write_str("sending on a closed channel"),
        }
    }
}

impl fmt::Display for RecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("receiving on a closed and empty channel")
    }
}

impl fmt::Display for TryRecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TryRecvError::Empty => f.write_str("receiving on an empty channel"),
            TryRecvError::Closed => f.write_str("receiving on a closed and empty channel"),
        }
    }
}

impl fmt::Display for RecvTimeoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecvTimeoutError::Timeout => f.write_str("timed out waiting on receive operation"),
            RecvTimeoutError::Closed => f.write_str("receiving on a closed and empty channel"),
        }
    }
}

impl<T> Error for SendError<T> {}
impl<T> Error for TrySendError<T> {}
impl<T> Error for SendTimeoutError<T> {}
impl Error for RecvError {}
impl Error for TryRecvError {}
impl Error for RecvTimeoutError {}
