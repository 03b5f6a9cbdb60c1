//! `Timer`, `Ticker`, `after`, `tick`, `after_func`: timers whose firing sends the
//! time on a channel or runs a function in a new G, on the per-P timer heaps.
//!
//! # Go 1.23 semantics
//! A timer's state (`seq`, `active`, the next deadline) is behind a mutex that is
//! held while it fires. `stop` and `reset` take the same mutex, bump `seq` (so heap
//! entries armed before are recognised as dead when they come due, and dropped by
//! compaction) and drain the channel. So once `stop` or `reset` returns, no value
//! from the old deadline can be received. Timer channels never close. A fired timer
//! whose value was not received yet counts as not expired: `stop` returns true and
//! discards the value, as Go's synchronous timer channels do.
//!
//! A ticker that falls behind skips ticks rather than queueing them (its channel
//! holds one value). A `tick` ticker stops once every receiver is gone; a `Timer` or
//! `after` timer whose receivers are all gone is dead too, and compaction drops it
//! from the heap (Go 1.23 collects unreferenced timers).
//!
//! Lock order: timer state, then the channel's lock, then a P's timer heap.
//! Heap compaction asks timers whether they are live while holding the heap's
//! lock, so that check must not take the timer's state lock: it reads `armed`, an
//! atomic mirror of the armed generation kept in step under the state lock.

use crate::chan::{self, Receiver, Sender};
use crate::runtime::sched::sched;
use crate::runtime::timers::{add_timer, Action, Fire};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// What a firing does.
enum Kind {
    /// Send the time (a timer's or ticker's channel).
    Send(Sender<Instant>),
    /// Run the function in a new goroutine (`after_func`).
    Func(Arc<dyn Fn() + Send + Sync>),
}

struct State {
    /// Generation of the armed deadline; heap entries of other generations are dead.
    seq: u64,
    active: bool,
    /// The armed deadline (runtime clock, ns).
    when: u64,
    /// Ticker period in ns; 0 for a one-shot timer.
    period: u64,
}

struct Inner {
    state: Mutex<State>,
    /// The generation that is armed and will fire, or 0: `State::seq` while
    /// `State::active`. Written under the state lock, read without it.
    armed: AtomicU64,
    kind: Kind,
}

impl Inner {
    fn new(kind: Kind, period: u64) -> Arc<Inner> {
        Arc::new(Inner {
            state: Mutex::new(State {
                seq: 0,
                active: false,
                when: 0,
                period,
            }),
            armed: AtomicU64::new(0),
            kind,
        })
    }

    /// Keeps `armed` in step with the state; call after changing `seq`/`active`.
    fn publish(&self, st: &State) {
        self.armed.store(if st.active { st.seq } else { 0 }, Ordering::Release);
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Arms a new generation `d` from now (never, if that overflows the clock).
    fn arm(self: &Arc<Self>, st: &mut State, d: Duration) {
        st.seq += 1;
        st.active = false;
        let when = u64::try_from(d.as_nanos())
            .ok()
            .and_then(|ns| sched().nanotime().checked_add(ns));
        if let Some(when) = when {
            st.active = true;
            st.when = when;
            self.publish(st);
            add_timer(when, Action::Fire(self.clone(), st.seq));
        } else {
            self.publish(st);
        }
    }

    /// Disarms; returns whether the timer was pending (armed, or fired with the
    /// value not yet received, which is then discarded).
    fn disarm(&self, st: &mut State) -> bool {
        let was_active = st.active;
        st.seq += 1;
        st.active = false;
        self.publish(st);
        let unreceived = match &self.kind {
            Kind::Send(tx) => drain(tx),
            Kind::Func(_) => false,
        };
        was_active || unreceived
    }
}

/// Empties a timer channel; true if there was a value.
fn drain(tx: &Sender<Instant>) -> bool {
    tx.drain_buffer() > 0
}

impl Fire for Inner {
    fn fire(self: Arc<Self>, seq: u64, now: u64) {
        let mut st = self.lock();
        if st.seq != seq || !st.active {
            return;
        }
        match &self.kind {
            Kind::Send(tx) => {
                // A full channel means the receiver is behind: drop this tick.
                let _ = tx.try_send(Instant::now());
                if st.period == 0 || !tx.has_receivers() {
                    // One-shot, or a `tick` whose receivers are all gone.
                    st.active = false;
                    self.publish(&st);
                } else {
                    // Next tick on the period grid, skipping any we are late for.
                    let late = now.saturating_sub(st.when);
                    st.when += st.period * (late / st.period + 1);
                    add_timer(st.when, Action::Fire(self.clone(), st.seq));
                }
            }
            Kind::Func(f) => {
                st.active = false;
                self.publish(&st);
                let f = f.clone();
                drop(st);
                drop(crate::spawn(move || f()));
            }
        }
    }

    fn is_live(&self, seq: u64) -> bool {
        self.armed.load(Ordering::Acquire) == seq
            && match &self.kind {
                Kind::Send(tx) => tx.has_receivers(),
                Kind::Func(_) => true,
            }
    }
}

/// A single event in the future: sends the time on its channel once (Go's
/// `time.Timer`).
///
/// ```
/// use std::time::Duration;
/// let t = goro::time::Timer::new(Duration::from_millis(10));
/// let fired_at = t.receiver().recv().unwrap();
/// assert!(!t.stop(), "already fired and received");
/// assert!(!t.reset(Duration::from_secs(3600)), "nothing was pending");
/// assert!(t.stop(), "stopped before it fired");
/// # let _ = fired_at;
/// ```
pub struct Timer {
    inner: Arc<Inner>,
    rx: Receiver<Instant>,
}

impl Timer {
    /// A timer that fires once after `d`. `Duration::MAX` never fires.
    pub fn new(d: Duration) -> Timer {
        let (tx, rx) = chan::bounded_unclosable(1);
        let inner = Inner::new(Kind::Send(tx), 0);
        inner.arm(&mut inner.lock(), d);
        Timer { inner, rx }
    }

    /// The channel the time is sent on when the timer fires. It never closes.
    pub fn receiver(&self) -> &Receiver<Instant> {
        &self.rx
    }

    /// Stops the timer. Returns true if this stopped it (it had not fired, or its
    /// value had not been received and is now discarded); false if it had already
    /// fired and been received, or was stopped.
    pub fn stop(&self) -> bool {
        let mut st = self.inner.lock();
        self.inner.disarm(&mut st)
    }

    /// Re-arms the timer to fire after `d`, discarding a pending value. Returns what
    /// [`Timer::stop`] would have. For an `after_func` timer, runs the function
    /// again when it fires (Go's rule).
    pub fn reset(&self, d: Duration) -> bool {
        let mut st = self.inner.lock();
        let was = self.inner.disarm(&mut st);
        self.inner.arm(&mut st, d);
        was
    }
}

impl fmt::Debug for Timer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Timer")
            .field("active", &self.inner.lock().active)
            .finish()
    }
}

/// Sends the time every period (Go's `time.Ticker`). Slow receivers miss ticks
/// rather than queue them. Dropping the ticker stops it.
///
/// ```
/// use std::time::Duration;
/// let k = goro::time::Ticker::new(Duration::from_millis(2));
/// for _ in 0..3 {
///     k.receiver().recv().unwrap();
/// }
/// k.stop();
/// ```
pub struct Ticker {
    inner: Arc<Inner>,
    rx: Receiver<Instant>,
}

impl Ticker {
    /// A ticker with period `d`.
    ///
    /// # Panics
    /// If `d` is zero (Go: "non-positive interval for NewTicker").
    pub fn new(d: Duration) -> Ticker {
        let (inner, rx) = new_ticker(d);
        Ticker { inner, rx }
    }

    /// The channel ticks are sent on. It never closes.
    pub fn receiver(&self) -> &Receiver<Instant> {
        &self.rx
    }

    /// Stops the ticker; no tick is received after this returns.
    pub fn stop(&self) {
        let mut st = self.inner.lock();
        self.inner.disarm(&mut st);
    }

    /// Restarts the ticker with period `d`, the next tick `d` from now.
    ///
    /// # Panics
    /// If `d` is zero.
    pub fn reset(&self, d: Duration) {
        let period = period_ns(d); // panics before anything changes, as Go
        let mut st = self.inner.lock();
        self.inner.disarm(&mut st);
        st.period = period;
        self.inner.arm(&mut st, d);
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop();
    }
}

impl fmt::Debug for Ticker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ticker")
            .field("active", &self.inner.lock().active)
            .finish()
    }
}

fn period_ns(d: Duration) -> u64 {
    assert!(!d.is_zero(), "goro::time: non-positive interval for a ticker");
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

fn new_ticker(d: Duration) -> (Arc<Inner>, Receiver<Instant>) {
    let (tx, rx) = chan::bounded_unclosable(1);
    let inner = Inner::new(Kind::Send(tx), period_ns(d));
    inner.arm(&mut inner.lock(), d);
    (inner, rx)
}

/// A channel that receives the time once, after `d` (Go's `time.After`).
/// `Duration::MAX` never fires.
///
/// ```
/// use std::time::Duration;
/// let (_tx, rx) = goro::chan::bounded::<u8>(0);
/// let timed_out = goro::select! {
///     recv(rx) -> _ => false,
///     recv(goro::time::after(Duration::from_millis(5))) -> _ => true,
/// };
/// assert!(timed_out);
/// ```
pub fn after(d: Duration) -> Receiver<Instant> {
    Timer::new(d).rx
}

/// A channel that receives the time every `d` (Go's `time.Tick`). The ticker stops
/// once every receiver is dropped.
///
/// # Panics
/// If `d` is zero.
pub fn tick(d: Duration) -> Receiver<Instant> {
    new_ticker(d).1
}

/// Runs `f` in a new goroutine after `d` (Go's `time.AfterFunc`). Dropping the
/// returned timer does not cancel it; `stop` does; `reset` after it fired runs `f`
/// again.
///
/// ```
/// use std::time::Duration;
/// let (tx, rx) = goro::chan::bounded(1);
/// let _t = goro::time::after_func(Duration::from_millis(1), move || { let _ = tx.try_send("ran"); });
/// assert_eq!(rx.recv(), Ok("ran"));
/// ```
pub fn after_func<F>(d: Duration, f: F) -> Timer
where
    F: Fn() + Send + Sync + 'static,
{
    let inner = Inner::new(Kind::Func(Arc::new(f)), 0);
    inner.arm(&mut inner.lock(), d);
    Timer {
        inner,
        rx: chan::never(),
    }
}
