//! The channel itself (Go's `hchan`): a lock, a bounded buffer, and the queues of
//! blocked senders and receivers.
//!
//! # Semantics (Go's, with Rust's drop rules)
//! - cap 0 is a rendezvous: a sender hands its value straight to a waiting
//!   receiver (no buffer slot); cap > 0 buffers up to `cap` values.
//! - A receiver takes from the buffer first; when senders are blocked on a full
//!   buffer it also moves the oldest sender's value to the buffer's tail, so FIFO
//!   order holds across the buffer and the queue.
//! - Closing wakes every blocked sender (they fail, value handed back) and receiver
//!   (they see the close once the buffer is drained). The channel closes on
//!   `close()`, when the last `Sender` drops, or when the last `Receiver` drops
//!   (then sends fail). Closing twice does nothing.
//! - Blocked senders and receivers are served FIFO.
//!
//! # Locking
//! `lock` guards `state`. Everything that touches `state` or a queued sudog holds
//! it; the `closed` and `len` atomics mirror `state` for lock-free reads by
//! `is_closed()` / `len()`, and on a timer's channel `waiting_receivers` counts
//! its blocked receivers for the timer heap, which may not take the lock.
//! Wake-ups happen after the lock is released, with the waiter copied out first
//! (see `waitq.rs`), so a woken waiter never waits for the lock its waker holds.

use super::error::{RecvError, RecvTimeoutError, SendError, SendTimeoutError, TryRecvError, TrySendError};
use super::wakers::AsyncReceivers;
use crate::runtime::wait::{block, OnDrop, RawGuard, RawMutex, Sudog, WaitQueue, WaitReason, Waiter};
use std::cell::UnsafeCell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::{Poll, Waker};
use std::time::Duration;

/// The state behind the lock.
pub(crate) struct State<T> {
    buf: VecDeque<T>,
    closed: bool,
    pub(crate) recvq: WaitQueue<T>,
    pub(crate) sendq: WaitQueue<T>,
    /// Receive futures waiting for something to receive (`wakers.rs`).
    async_recv: AsyncReceivers,
}

/// A channel shared by its `Sender`s and `Receiver`s.
pub(crate) struct Chan<T> {
    lock: RawMutex,
    cap: usize,
    /// A timer channel: one slot inside, but `len` and `capacity` report 0, as
    /// Go 1.23's timer channels do (they behave as unbuffered: `stop`/`reset`
    /// discard a value not yet received).
    timer: bool,
    state: UnsafeCell<State<T>>,
    closed: AtomicBool,
    len: AtomicUsize,
    /// On a timer channel: receivers blocked on it (a `recv` or a `select!`
    /// arm, each counted from before it parks until it returns, so never less
    /// than the receivers queued; a receive future while it is registered). Untouched on other channels. Read without the
    /// lock by the deadlock check, through the timer (`time/timer.rs`): a timer
    /// firing into a channel nobody waits on wakes no one.
    waiting_receivers: AtomicUsize,
    pub(crate) senders: AtomicUsize,
    pub(crate) receivers: AtomicUsize,
}

// SAFETY: `state` is only touched under `lock`; values of T move between threads,
// hence T: Send.
unsafe impl<T: Send> Send for Chan<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for Chan<T> {}

/// The channel's lock, held, with access to its state.
pub(crate) struct Locked<'a, T> {
    chan: &'a Chan<T>,
    _guard: RawGuard<'a>,
}

impl<T> Locked<'_, T> {
    pub(crate) fn st(&mut self) -> &mut State<T> {
        // SAFETY: we hold the lock, and `&mut self` makes this the only reference.
        unsafe { &mut *self.chan.state.get() }
    }
}

/// What a completed operation leaves to do after the lock is released.
pub(crate) type Wake = Option<Waiter>;

impl<T> Chan<T> {
    /// A channel with `cap` buffer slots, `senders` and `receivers` handles.
    pub(crate) fn new(cap: usize, senders: usize, receivers: usize) -> Self {
        Chan {
            lock: RawMutex::new(),
            cap,
            timer: false,
            state: UnsafeCell::new(State {
                buf: VecDeque::new(),
                closed: false,
                recvq: WaitQueue::new(),
                sendq: WaitQueue::new(),
                async_recv: AsyncReceivers::new(),
            }),
            closed: AtomicBool::new(false),
            len: AtomicUsize::new(0),
            waiting_receivers: AtomicUsize::new(0),
            senders: AtomicUsize::new(senders),
            receivers: AtomicUsize::new(receivers),
        }
    }

    pub(crate) fn lock(&self) -> Locked<'_, T> {
        Locked {
            chan: self,
            _guard: self.lock.guard(),
        }
    }

    /// The raw lock, for `select!`, which locks several channels at once.
    pub(crate) fn raw_lock(&self) -> &RawMutex {
        &self.lock
    }

    /// The state; the caller holds the lock (taken through [`Chan::raw_lock`]).
    ///
    /// # Safety
    /// The lock is held and no other reference to the state is live.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn state_locked(&self) -> &mut State<T> {
        // SAFETY: the caller's contract.
        unsafe { &mut *self.state.get() }
    }

    /// A timer's channel: one slot, shown as none (the field's doc), and no
    /// sender count that could close it.
    pub(crate) fn new_timer() -> Self {
        Chan {
            timer: true,
            ..Chan::new(1, 2, 1)
        }
    }

    pub(crate) fn capacity(&self) -> usize {
        if self.timer {
            0
        } else {
            self.cap
        }
    }

    pub(crate) fn len(&self) -> usize {
        if self.timer {
            0
        } else {
            self.len.load(Ordering::Relaxed)
        }
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// A receiver starts (`true`: lock held, before it parks) or ends (`false`:
    /// once woken or timed out) a blocked wait on this channel; counted on a
    /// timer's channel only (`waiting_receivers`).
    pub(crate) fn receiver_waits(&self, starts: bool) {
        if self.timer {
            if starts {
                self.waiting_receivers.fetch_add(1, Ordering::Release);
            } else {
                self.waiting_receivers.fetch_sub(1, Ordering::Release);
            }
        }
    }

    /// A timer's channel: whether a receiver is blocked on it.
    pub(crate) fn has_waiting_receivers(&self) -> bool {
        self.waiting_receivers.load(Ordering::Acquire) > 0
    }

    /// Lock held: sends now if a receiver waits or the buffer has room.
    pub(crate) fn try_send_locked(&self, st: &mut State<T>, v: T) -> Result<Wake, TrySendError<T>> {
        if st.closed {
            return Err(TrySendError::Closed(v));
        }
        if let Some(r) = st.recvq.pop_claimed() {
            r.give(v);
            return Ok(Some(r.finish(true)));
        }
        if st.buf.len() < self.cap {
            st.buf.push_back(v);
            self.len.store(st.buf.len(), Ordering::Relaxed);
            return Ok(self.next_async_receiver(st));
        }
        Err(TrySendError::Full(v))
    }

    /// Lock held: queues a blocked sender's `sg` and returns the receive
    /// future to wake for it (a queued sender is something to receive).
    pub(crate) fn queue_sender(&self, st: &mut State<T>, sg: &Sudog<T>) -> Wake {
        st.sendq.push(sg);
        self.next_async_receiver(st)
    }

    /// Lock held: the oldest waiting receive future, taken out to be woken
    /// (something became available to receive).
    #[inline]
    fn next_async_receiver(&self, st: &mut State<T>) -> Wake {
        let w = st.async_recv.pop()?;
        self.receiver_waits(false);
        Some(Waiter::Task(w))
    }

    /// A receive future's poll: takes what there is to receive now, or
    /// registers `waker` (under `id`, the future's registration, kept across
    /// polls; see `wakers.rs`) and returns `Pending`. Wakers are dropped and
    /// woken only after the lock is released (their code may use the channel).
    pub(crate) fn poll_recv(&self, id: &mut Option<u64>, waker: &Waker) -> Poll<Result<T, RecvError>> {
        let mut l = self.lock();
        let st = l.st();
        let (got, wake) = match self.try_recv_locked(st) {
            Ok((v, wake)) => (Ok(v), wake),
            Err(TryRecvError::Closed) => (Err(RecvError), None),
            Err(TryRecvError::Empty) => {
                let (new_id, added, replaced) = st.async_recv.register(*id, waker);
                if added {
                    self.receiver_waits(true);
                }
                *id = Some(new_id);
                drop(l);
                drop(replaced);
                return Poll::Pending;
            }
        };
        // Done: a registration still waiting leaves (no wake-up was spent on it).
        let left = id.take().and_then(|id| st.async_recv.remove(id));
        if left.is_some() {
            self.receiver_waits(false);
        }
        drop(l);
        drop(left);
        wake_one(wake);
        Poll::Ready(got)
    }

    /// A receive future registered as `id` is dropped before it completed. If
    /// it had been woken, the wake-up was meant for something to receive that
    /// it will not take: the next waiting future gets it.
    pub(crate) fn cancel_recv(&self, id: u64) {
        let mut l = self.lock();
        let st = l.st();
        let left = st.async_recv.remove(id);
        let wake = if left.is_some() {
            self.receiver_waits(false);
            None
        } else if !st.buf.is_empty() || !st.sendq.is_empty() {
            self.next_async_receiver(st)
        } else {
            None
        };
        drop(l);
        drop(left);
        wake_one(wake);
    }

    /// Lock held: receives now from the buffer or a waiting sender.
    pub(crate) fn try_recv_locked(&self, st: &mut State<T>) -> Result<(T, Wake), TryRecvError> {
        if let Some(v) = st.buf.pop_front() {
            // A blocked sender's value takes the freed slot, keeping FIFO order.
            let wake = st.sendq.pop_claimed().map(|s| {
                st.buf.push_back(s.take());
                s.finish(true)
            });
            self.len.store(st.buf.len(), Ordering::Relaxed);
            return Ok((v, wake));
        }
        if let Some(s) = st.sendq.pop_claimed() {
            let v = s.take();
            return Ok((v, Some(s.finish(true))));
        }
        if st.closed {
            return Err(TryRecvError::Closed);
        }
        Err(TryRecvError::Empty)
    }

    /// Takes one buffered value, if any (never a blocked sender's).
    pub(crate) fn try_recv_buffered(&self) -> Option<T> {
        let mut l = self.lock();
        let st = l.st();
        let v = st.buf.pop_front();
        self.len.store(st.buf.len(), Ordering::Relaxed);
        v
    }

    pub(crate) fn try_send(&self, v: T) -> Result<(), TrySendError<T>> {
        let mut l = self.lock();
        let wake = self.try_send_locked(l.st(), v)?;
        drop(l);
        wake_one(wake);
        Ok(())
    }

    pub(crate) fn try_recv(&self) -> Result<T, TryRecvError> {
        let mut l = self.lock();
        let (v, wake) = self.try_recv_locked(l.st())?;
        drop(l);
        wake_one(wake);
        Ok(v)
    }

    pub(crate) fn send(&self, v: T) -> Result<(), SendError<T>> {
        self.send_inner(v, None).map_err(|e| SendError(e.into_inner()))
    }

    pub(crate) fn send_timeout(&self, v: T, timeout: Duration) -> Result<(), SendTimeoutError<T>> {
        self.send_inner(v, Some(timeout))
    }

    fn send_inner(&self, v: T, timeout: Option<Duration>) -> Result<(), SendTimeoutError<T>> {
        let mut l = self.lock();
        let v = match self.try_send_locked(l.st(), v) {
            Ok(wake) => {
                drop(l);
                wake_one(wake);
                return Ok(());
            }
            Err(TrySendError::Closed(v)) => return Err(SendTimeoutError::Closed(v)),
            Err(TrySendError::Full(v)) => v,
        };
        if timeout == Some(Duration::ZERO) {
            return Err(SendTimeoutError::Timeout(v));
        }
        let sg = Sudog::new(Some(v));
        let wake = self.queue_sender(l.st(), &sg);
        // The receive future is woken once the lock is released (after the park).
        let unlock = OnDrop::new(move || {
            drop(l);
            wake_one(wake);
        });
        if !block(&sg, unlock, WaitReason::ChanSend, timeout, &|f| {
            f(&mut self.lock().st().sendq)
        }) {
            return Err(SendTimeoutError::Timeout(sg.take().expect("unsent value")));
        }
        if sg.success() {
            Ok(())
        } else {
            Err(SendTimeoutError::Closed(sg.take().expect("unsent value")))
        }
    }

    pub(crate) fn recv(&self) -> Result<T, RecvError> {
        self.recv_inner(None).map_err(|_| RecvError)
    }

    pub(crate) fn recv_timeout(&self, timeout: Duration) -> Result<T, RecvTimeoutError> {
        self.recv_inner(Some(timeout))
    }

    fn recv_inner(&self, timeout: Option<Duration>) -> Result<T, RecvTimeoutError> {
        let mut l = self.lock();
        match self.try_recv_locked(l.st()) {
            Ok((v, wake)) => {
                drop(l);
                wake_one(wake);
                return Ok(v);
            }
            Err(TryRecvError::Closed) => return Err(RecvTimeoutError::Closed),
            Err(TryRecvError::Empty) => {}
        }
        if timeout == Some(Duration::ZERO) {
            return Err(RecvTimeoutError::Timeout);
        }
        let sg = Sudog::new(None);
        l.st().recvq.push(&sg);
        self.receiver_waits(true);
        let received = block(&sg, l, WaitReason::ChanRecv, timeout, &|f| {
            f(&mut self.lock().st().recvq)
        });
        self.receiver_waits(false);
        if !received {
            return Err(RecvTimeoutError::Timeout);
        }
        match sg.take() {
            Some(v) => Ok(v),
            None => Err(RecvTimeoutError::Closed),
        }
    }

    /// Closes the channel (idempotent) and wakes everyone blocked on it.
    pub(crate) fn close(&self) {
        let mut l = self.lock();
        let st = l.st();
        if st.closed {
            return;
        }
        st.closed = true;
        self.closed.store(true, Ordering::Release);
        let mut wake = Vec::new();
        while let Some(r) = st.recvq.pop_claimed() {
            wake.push(r.finish(false));
        }
        while let Some(s) = st.sendq.pop_claimed() {
            wake.push(s.finish(false));
        }
        for w in st.async_recv.take_all() {
            self.receiver_waits(false);
            wake.push(Waiter::Task(w));
        }
        drop(l);
        for w in wake {
            w.wake();
        }
    }
}

/// Wakes the waiter an operation completed, if any (after the lock is released).
pub(crate) fn wake_one(wake: Wake) {
    if let Some(w) = wake {
        w.wake();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::chan::bounded;

    /// Parked senders and receivers on `chan`.
    fn waiting<T>(c: &Chan<T>) -> (usize, usize) {
        let mut l = c.lock();
        let st = l.st();
        (st.sendq.len(), st.recvq.len())
    }

    #[test]
    fn blocked_senders_and_receivers_are_served_fifo() {
        let (tx, rx) = bounded::<usize>(0);
        let mut hs = Vec::new();
        for i in 0..10 {
            let tx = tx.clone();
            hs.push(crate::go!(move || tx.send(i).unwrap()));
            while waiting(&rx.chan).0 < i + 1 {
                crate::yield_now();
            }
        }
        let got: Vec<usize> = (0..10).map(|_| rx.recv().unwrap()).collect();
        assert_eq!(got, (0..10).collect::<Vec<_>>());
        hs.into_iter().for_each(|h| h.join().unwrap());

        let mut hs = Vec::new();
        for i in 0..10 {
            let rx = rx.clone();
            hs.push(crate::go!(move || (i, rx.recv().unwrap())));
            while waiting(&tx.chan).1 < i + 1 {
                crate::yield_now();
            }
        }
        (0..10).for_each(|v| tx.send(v).unwrap());
        for h in hs {
            let (i, v) = h.join().unwrap();
            assert_eq!(i, v, "receiver {i} got value {v}: not FIFO");
        }
    }

    #[test]
    fn close_wakes_parked_senders_and_receivers() {
        let (tx, rx) = bounded::<u32>(0);
        let recv: Vec<_> = (0..3)
            .map(|_| {
                let rx = rx.clone();
                crate::go!(move || rx.recv())
            })
            .collect();
        while waiting(&rx.chan).1 < 3 {
            crate::yield_now();
        }
        let (stx, srx) = bounded::<u32>(0);
        let send: Vec<_> = (0..3)
            .map(|i| {
                let stx = stx.clone();
                crate::go!(move || stx.send(i))
            })
            .collect();
        while waiting(&srx.chan).0 < 3 {
            crate::yield_now();
        }
        tx.close();
        stx.close();
        for h in recv {
            assert_eq!(h.join().unwrap(), Err(RecvError));
        }
        for (i, h) in send.into_iter().enumerate() {
            assert_eq!(h.join().unwrap(), Err(SendError(i as u32)));
        }
    }

    #[test]
    fn timed_out_waiters_leave_the_queue() {
        let (tx, rx) = bounded::<u8>(0);
        for _ in 0..100 {
            assert!(rx.recv_timeout(Duration::from_micros(50)).is_err());
            assert!(tx.send_timeout(1, Duration::from_micros(50)).is_err());
        }
        assert_eq!(waiting(&rx.chan), (0, 0));
    }
}
