//! The channel for async code: [`Receiver::recv_async`], [`Sender::send_async`],
//! [`Receiver::stream`] and [`Sender::sink`], futures that work under any
//! executor (Tokio, smol, `futures::executor`, [`goro::block_on`](crate::block_on)).
//!
//! # How they wait
//! - A receive future is never handed a value: when there is nothing to
//!   receive it registers its waker with the channel (`wakers.rs`), is woken
//!   when something arrives, and takes it when polled. Dropping it removes
//!   the registration, and a wake-up it received but did not use goes to the
//!   next waiting receive future, so no value is stranded.
//! - A send future that cannot complete at once queues a sudog in the
//!   channel's `sendq`, as a blocked `send` does, but on the heap (the future
//!   may move between polls) with a [`Claim`] whose waiter is a `Waker`
//!   forwarding to the task's latest one. Receivers take its value as they
//!   take any blocked sender's, so an unbuffered send completes only once a
//!   receiver has the value. Dropping it takes the sudog out of the queue
//!   under the lock, unless a receiver or a close already claimed it.
//!
//! The records another thread can reach (the registration, the heap sudog
//! and its claim, the forwarding waker) live off the future, so a future may
//! move between polls (all four types are `Unpin`).

use super::channel::{wake_one, Chan};
use super::error::{RecvError, SendError, TrySendError};
use super::{Receiver, Sender};
use crate::runtime::wait::{Claim, Guarded, Sudog, Waiter, UNCLAIMED};
use futures_core::Stream;
use futures_sink::Sink;
use std::future::Future;
use std::pin::Pin;
use std::ptr::NonNull;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

impl<T> Receiver<T> {
    /// Receives a value from async code: the future completes as
    /// [`recv`](Receiver::recv) returns, without blocking a thread.
    ///
    /// Dropping the future before it completes loses no value: a receive
    /// future is woken when something can be received and takes it only
    /// when polled. (A pending future that is leaked, `mem::forget`, never
    /// leaves the channel's list: a wake-up meant for it is lost with it, and
    /// another receive future may then wait for the next value.) Polling it
    /// again after it completed panics. [`select!`](crate::select!) is for goroutines and threads;
    /// in async code use the executor's own select (`tokio::select!`,
    /// `futures::select!`) over these futures.
    ///
    /// ```
    /// let (tx, rx) = goro::chan::bounded(0);
    /// goro::go!(move || tx.send("from a goroutine").unwrap());
    /// // any executor; goro::block_on is one
    /// assert_eq!(goro::block_on(rx.recv_async()), Ok("from a goroutine"));
    /// ```
    ///
    /// # Errors
    /// [`RecvError`] once the channel is closed and drained.
    pub fn recv_async(&self) -> RecvFut<'_, T> {
        RecvFut {
            wait: RecvWait {
                chan: &self.chan,
                id: None,
            },
            done: false,
        }
    }

    /// The received values as a [`Stream`], which ends once the channel is
    /// closed and drained: [`recv_async`](Receiver::recv_async) in a loop.
    ///
    /// ```
    /// use futures_core::Stream;
    /// use std::pin::pin;
    /// use std::task::{Context, Poll};
    ///
    /// let (tx, rx) = goro::chan::bounded(4);
    /// goro::go!(move || (1..=3).for_each(|i| tx.send(i).unwrap()));
    /// let mut stream = pin!(rx.stream());
    /// let mut got = Vec::new();
    /// while let Some(v) = goro::block_on(std::future::poll_fn(|cx| stream.as_mut().poll_next(cx))) {
    ///     got.push(v);
    /// }
    /// assert_eq!(got, [1, 2, 3]);
    /// ```
    pub fn stream(&self) -> RecvStream<'_, T> {
        RecvStream(RecvWait {
            chan: &self.chan,
            id: None,
        })
    }
}

impl<T> Sender<T> {
    /// Sends `v` from async code: the future completes as
    /// [`send`](Sender::send) returns (on an unbuffered channel, once a
    /// receiver has taken the value), without blocking a thread.
    ///
    /// Dropping the future before it completes withdraws the value (it is
    /// dropped with the future), unless a receiver already took it: then the
    /// send happened.
    ///
    /// ```
    /// let (tx, rx) = goro::chan::bounded(0);
    /// let receiver = goro::go!(move || rx.recv().unwrap());
    /// goro::block_on(tx.send_async(7)).unwrap(); // any executor
    /// assert_eq!(receiver.join().unwrap(), 7);
    /// ```
    ///
    /// # Errors
    /// [`SendError`] holding `v` if the channel is or becomes closed first.
    pub fn send_async(&self, v: T) -> SendFut<'_, T> {
        SendFut {
            chan: &self.chan,
            state: SendState::Start(v),
        }
    }

    /// The sender as a [`Sink`]: each item is sent as by
    /// [`send_async`](Sender::send_async), one at a time (`poll_ready` waits
    /// for the previous item's send). Closing the sink flushes it; the channel
    /// stays open until [`close`](Sender::close) or the last `Sender` drops.
    pub fn sink(&self) -> SendSink<'_, T> {
        SendSink {
            tx: self,
            pending: None,
        }
    }
}

/// A receive future's registration with its channel; see the module docs.
struct RecvWait<'a, T> {
    chan: &'a Chan<T>,
    /// Its place among the channel's waiting receive futures, if registered.
    id: Option<u64>,
}

impl<T> RecvWait<'_, T> {
    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<Result<T, RecvError>> {
        self.chan.poll_recv(&mut self.id, cx.waker())
    }
}

impl<T> Drop for RecvWait<'_, T> {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            self.chan.cancel_recv(id);
        }
    }
}

/// The future of [`Receiver::recv_async`].
#[must_use = "futures do nothing unless polled"]
pub struct RecvFut<'a, T> {
    wait: RecvWait<'a, T>,
    done: bool,
}

impl<T> Future for RecvFut<'_, T> {
    type Output = Result<T, RecvError>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        assert!(!self.done, "a recv_async future polled after it completed");
        let r = self.wait.poll(cx);
        self.done = r.is_ready();
        r
    }
}

/// The stream of [`Receiver::stream`].
#[must_use = "streams do nothing unless polled"]
pub struct RecvStream<'a, T>(RecvWait<'a, T>);

impl<T> Stream for RecvStream<'_, T> {
    type Item = T;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        self.0.poll(cx).map(Result::ok)
    }
}

/// The future of [`Sender::send_async`].
#[must_use = "futures do nothing unless polled"]
pub struct SendFut<'a, T> {
    chan: &'a Chan<T>,
    state: SendState<T>,
}

enum SendState<T> {
    /// Not polled yet.
    Start(T),
    /// Queued in the channel's `sendq`: a record made by `Box::into_raw`,
    /// freed by this future (never by the channel).
    Queued(NonNull<QueuedSend<T>>),
    Done,
}

// SAFETY: the value moves to another thread with the future, hence T: Send.
// The queued record is touched by other threads only under the channel's lock
// (`waitq.rs`), and by this future only under that lock or once it is out of
// the queue.
unsafe impl<T: Send> Send for SendFut<'_, T> {}

// SAFETY: no method reads the future through `&self`: sharing a reference to
// it shares nothing.
unsafe impl<T: Send> Sync for SendFut<'_, T> {}

// The value is never pinned (it is moved, never polled), so the future may
// move whatever T is.
impl<T> Unpin for SendFut<'_, T> {}

/// A send future's wait, on the heap: the sudog in `sendq` and the claim it
/// is ended through, whose waiter is a `Waker` for `forward`.
struct QueuedSend<T> {
    sudog: Sudog<T>,
    claim: Claim,
    forward: Arc<Forward>,
}

/// A waker that wakes the task's latest waker: a claim's waiter is fixed when
/// it is queued, but the task may poll again with another waker.
struct Forward(Guarded<Option<Waker>>);

impl Wake for Forward {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let waker = self.0.lock().clone();
        if let Some(w) = waker {
            w.wake();
        }
    }
}

impl Forward {
    fn set(&self, waker: &Waker) {
        let mut w = self.0.lock();
        if !w.as_ref().is_some_and(|w| w.will_wake(waker)) {
            *w = Some(waker.clone());
        }
    }
}

impl<T> SendFut<'_, T> {
    /// First poll: sends now, or queues the value on the heap and waits.
    fn start(&mut self, v: T, waker: &Waker) -> Poll<Result<(), SendError<T>>> {
        let mut l = self.chan.lock();
        let v = match self.chan.try_send_locked(l.st(), v) {
            Ok(wake) => {
                drop(l);
                wake_one(wake);
                return Poll::Ready(Ok(()));
            }
            Err(TrySendError::Closed(v)) => return Poll::Ready(Err(SendError(v))),
            Err(TrySendError::Full(v)) => v,
        };
        let forward = Arc::new(Forward(Guarded::new(Some(waker.clone()))));
        let record = NonNull::from(Box::leak(Box::new(QueuedSend {
            sudog: Sudog::new(Some(v)),
            claim: Claim::new(Waiter::Task(Waker::from(forward.clone()))),
            forward,
        })));
        // SAFETY: just made; freed only by this future (`finish`, `drop`).
        let rec = unsafe { record.as_ref() };
        rec.sudog.bind(&rec.claim, 0);
        let wake = self.chan.queue_sender(l.st(), &rec.sudog);
        self.state = SendState::Queued(record);
        drop(l);
        wake_one(wake);
        Poll::Pending
    }

    /// Later polls: done once a receiver or a close claimed the sudog.
    fn poll_queued(&mut self, record: NonNull<QueuedSend<T>>, waker: &Waker) -> Poll<Result<(), SendError<T>>> {
        // SAFETY: the record lives until this future frees it.
        let rec = unsafe { record.as_ref() };
        // The waker first: a claim after the check below wakes this one.
        rec.forward.set(waker);
        let claimed = {
            let _l = self.chan.lock();
            rec.claim.winner() != UNCLAIMED
        };
        if !claimed {
            return Poll::Pending;
        }
        // Out of the queue and finished under the lock we took after the claimer.
        let result = if rec.sudog.success() {
            Ok(())
        } else {
            Err(SendError(rec.sudog.take().expect("an unsent value comes back")))
        };
        self.state = SendState::Done;
        // SAFETY: made by Box::leak in `start`; no queue holds it any more.
        drop(unsafe { Box::from_raw(record.as_ptr()) });
        Poll::Ready(result)
    }
}

impl<T> Future for SendFut<'_, T> {
    type Output = Result<(), SendError<T>>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match std::mem::replace(&mut self.state, SendState::Done) {
            SendState::Start(v) => self.start(v, cx.waker()),
            SendState::Queued(record) => {
                self.state = SendState::Queued(record);
                self.poll_queued(record, cx.waker())
            }
            SendState::Done => panic!("a send_async future polled after it completed"),
        }
    }
}

impl<T> Drop for SendFut<'_, T> {
    fn drop(&mut self) {
        let SendState::Queued(record) = self.state else { return };
        {
            // SAFETY: the record lives until it is freed below.
            let rec = unsafe { record.as_ref() };
            let mut l = self.chan.lock();
            if rec.claim.winner() == UNCLAIMED {
                l.st().sendq.remove(&rec.sudog);
            }
        }
        // SAFETY: made by Box::leak in `start`, freed once, here, now that it is
        // out of the queue; the value, if not taken, drops with it (unlocked).
        drop(unsafe { Box::from_raw(record.as_ptr()) });
    }
}

/// The sink of [`Sender::sink`].
#[must_use = "sinks do nothing unless polled"]
pub struct SendSink<'a, T> {
    tx: &'a Sender<T>,
    /// The item being sent.
    pending: Option<SendFut<'a, T>>,
}

impl<T> SendSink<'_, T> {
    fn poll_pending(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), SendError<T>>> {
        let Some(fut) = self.pending.as_mut() else {
            return Poll::Ready(Ok(()));
        };
        let r = std::task::ready!(Pin::new(fut).poll(cx));
        self.pending = None;
        Poll::Ready(r)
    }
}

impl<T> Sink<T> for SendSink<'_, T> {
    type Error = SendError<T>;

    fn poll_ready(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.poll_pending(cx)
    }

    fn start_send(mut self: Pin<&mut Self>, item: T) -> Result<(), Self::Error> {
        assert!(self.pending.is_none(), "SendSink::start_send without poll_ready");
        self.pending = Some(self.tx.send_async(item));
        Ok(())
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.poll_pending(cx)
    }

    fn poll_close(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.poll_pending(cx)
    }
}
