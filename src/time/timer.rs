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
//! A timer whose channel no receiver is blocked on wakes no one when it fires:
//! the deadlock check does not count it as pending (`Fire::would_wake`), as Go
//! 1.23 keeps a channel timer in the heap only while a goroutine is blocked on
//! its channel. So a program that holds a ticker or an `after` channel unread,
//! while everything else waits for good, gets the deadlock report.
//!
//! Lock order: timer state, then the channel's lock, then a P's timer heap.
//! Heap compaction and the deadlock check ask timers whether they are live
//! while holding the heap's lock, so that check must take neither the timer's
//! state lock nor the channel's: it reads `armed`, an atomic mirror of the armed
//! generation kept in step under the state lock, and the channel's counts of
//! receivers (held, and blocked on it).

use crate::chan::{self, Receiver, Sender};
use crate::runtime::deadline_in;
use crate::runtime::exports::Origin;
use crate::runtime::wait::{add_timer, Action, Fire};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// What a firing does.
enum Kind {
    /// Send the time (a timer's or ticker's channel).
    Send(Sender<Instant>),
    /// Run the function in a new goroutine (`after_func`), shown in dumps as
    /// made where `after_func` was called.
    Func(Arc<dyn Fn() + Send + Sync>, Origin),
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

    /// Arms a new generation `d` from now. One that overflows the clock is pending
    /// for good (so `stop` and `reset` report it pending, as Go's) but has no heap
    /// entry: it can never fire.
    fn arm(self: &Arc<Self>, st: &mut State, d: Duration) {
        st.seq += 1;
        st.active = true;
        let when = deadline_in(d);
        st.when = when.unwrap_or(u64::MAX);
        self.publish(st);
        if let Some(when) = when {
            add_timer(when, Action::Fire(self.clone(), st.seq));
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
            Kind::Func(..) => false,
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
            Kind::Func(f, origin) => {
                st.active = false;
                self.publish(&st);
                let (f, origin) = (f.clone(), *origin);
                drop(st);
                drop(crate::spawn::go_from(origin, move || f()));
            }
        }
    }

    fn is_live(&self, seq: u64) -> bool {
        self.armed.load(Ordering::Acquire) == seq
            && match &self.kind {
                Kind::Send(tx) => tx.has_receivers(),
                Kind::Func(..) => true,
            }
    }

    fn would_wake(&self, seq: u64) -> bool {
        self.is_live(seq)
            && match &self.kind {
                Kind::Send(tx) => tx.has_waiting_receivers(),
                Kind::Func(..) => true,
            }
    }
}

/// A single event in the future (Go's `time.Timer`).
///
/// When it fires, the current `Instant` is sent on its channel,
/// [`receiver`](Timer::receiver), once. A timer made by [`after_func`] runs a
/// function instead.
///
/// A timer can be stopped and re-armed. Go 1.23's rules hold: after
/// [`stop`](Timer::stop) or [`reset`](Timer::reset) returns, no value from the old
/// deadline is received, even one sent before the call and not yet received. The
/// channel never closes; a fired value waits in it until received, stopped or
/// reset, but its `len()` and `capacity()` are 0, as Go 1.23's. Once the `Timer`
/// and every clone of its receiver are dropped, the timer is dead and leaves the
/// timer heap, fired or not (an [`after_func`] timer excepted: it runs
/// regardless). `Timer` is `Send` and `Sync`; its methods take `&self`.
///
/// ```
/// use std::time::Duration;
/// let t = goro::time::Timer::new(Duration::from_millis(1));
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
    /// A timer that fires once, `d` from now (Go's `time.NewTimer`). A zero `d`
    /// fires as soon as the scheduler checks its timers; a `d` too long to ever
    /// expire (such as `Duration::MAX`) never fires, and stays pending until
    /// stopped or reset. Its channel's `len()` and `capacity()` are 0, as Go
    /// 1.23's timer channels: a fired value not yet received is discarded by
    /// [`stop`](Timer::stop) and [`reset`](Timer::reset).
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let start = Instant::now();
    /// let t = goro::time::Timer::new(Duration::from_millis(2));
    /// let fired_at = t.receiver().recv().unwrap();
    /// assert!(fired_at >= start + Duration::from_millis(2));
    /// ```
    pub fn new(d: Duration) -> Timer {
        let (tx, rx) = chan::timer_channel();
        let inner = Inner::new(Kind::Send(tx), 0);
        inner.arm(&mut inner.lock(), d);
        Timer { inner, rx }
    }

    /// The channel the time is sent on when the timer fires (Go's `Timer.C`). It
    /// holds at most one value and never closes, so a `recv` on a stopped timer
    /// waits forever: use it in a [`select!`](crate::select!) or with a timeout.
    /// For an [`after_func`] timer it never receives anything.
    ///
    /// ```
    /// use std::time::Duration;
    /// let t = goro::time::Timer::new(Duration::from_millis(1));
    /// let rx = t.receiver().clone(); // a clone can move into a goroutine
    /// let h = goro::go!(move || rx.recv().is_ok());
    /// assert!(h.join().unwrap());
    /// ```
    pub fn receiver(&self) -> &Receiver<Instant> {
        &self.rx
    }

    /// Stops the timer (Go's `Timer.Stop`). Returns `true` if this call stopped
    /// it: it had not fired yet, or it had fired but its value had not been
    /// received (the value is discarded). Returns `false` if its value was already
    /// received or it was already stopped. For an [`after_func`] timer, `true`
    /// means the function will not run (for this deadline).
    ///
    /// ```
    /// use std::time::Duration;
    /// let t = goro::time::Timer::new(Duration::from_secs(60));
    /// assert!(t.stop());
    /// assert!(!t.stop()); // already stopped
    /// assert!(t.receiver().try_recv().is_err()); // and nothing will come
    /// ```
    pub fn stop(&self) -> bool {
        let mut st = self.inner.lock();
        self.inner.disarm(&mut st)
    }

    /// Re-arms the timer to fire `d` from now (Go's `Timer.Reset`), whether it was
    /// pending, fired or stopped; a value from the old deadline that was not
    /// received is discarded. Returns what [`Timer::stop`] would have returned.
    /// For an [`after_func`] timer, the function runs again when the new deadline
    /// comes, even if it already ran (Go's rule).
    ///
    /// ```
    /// use std::time::Duration;
    /// let t = goro::time::Timer::new(Duration::from_secs(60));
    /// assert!(t.reset(Duration::from_millis(1))); // it was pending
    /// assert!(t.receiver().recv().is_ok()); // fires after 1 ms, not 60 s
    /// ```
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

/// Sends the time on its channel every period (Go's `time.Ticker`).
///
/// Ticks stay on the grid `start + n × period`. The channel holds one tick: a
/// receiver that falls behind misses ticks rather than finding them queued, and a
/// late tick does not shift the later ones. After [`stop`](Ticker::stop) or
/// [`reset`](Ticker::reset) returns no old tick is received (Go 1.23). Dropping
/// the ticker stops it. The channel never closes. `Ticker` is `Send` and `Sync`;
/// its methods take `&self`.
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
    /// A ticker with period `d`, the first tick `d` from now (Go's
    /// `time.NewTicker`).
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let start = Instant::now();
    /// let k = goro::time::Ticker::new(Duration::from_millis(1));
    /// let t1 = k.receiver().recv().unwrap();
    /// let t2 = k.receiver().recv().unwrap();
    /// assert!(start < t1 && t1 < t2);
    /// ```
    ///
    /// # Panics
    /// If `d` is zero, as Go panics on a non-positive interval.
    pub fn new(d: Duration) -> Ticker {
        let (inner, rx) = new_ticker(d);
        Ticker { inner, rx }
    }

    /// The channel ticks are sent on (Go's `Ticker.C`). It holds at most one tick
    /// and never closes.
    ///
    /// ```
    /// use std::time::Duration;
    /// let k = goro::time::Ticker::new(Duration::from_millis(1));
    /// let ticks = k.receiver().iter().take(3).count();
    /// assert_eq!(ticks, 3);
    /// ```
    pub fn receiver(&self) -> &Receiver<Instant> {
        &self.rx
    }

    /// Stops the ticker (Go's `Ticker.Stop`): no tick is received after this
    /// returns, not even one sent before and not yet received. [`reset`](Ticker::reset)
    /// starts it again.
    ///
    /// ```
    /// use std::time::Duration;
    /// let k = goro::time::Ticker::new(Duration::from_millis(1));
    /// k.receiver().recv().unwrap();
    /// k.stop();
    /// let late = k.receiver().recv_timeout(Duration::from_millis(5));
    /// assert!(late.is_err());
    /// ```
    pub fn stop(&self) {
        let mut st = self.inner.lock();
        self.inner.disarm(&mut st);
    }

    /// Restarts the ticker, stopped or not, with period `d`, the next tick `d`
    /// from now (Go's `Ticker.Reset`). A tick of the old schedule not yet
    /// received is discarded.
    ///
    /// ```
    /// use std::time::Duration;
    /// let k = goro::time::Ticker::new(Duration::from_secs(60));
    /// k.reset(Duration::from_millis(1));
    /// assert!(k.receiver().recv_timeout(Duration::from_secs(10)).is_ok());
    /// ```
    ///
    /// # Panics
    /// If `d` is zero; the ticker is then left as it was.
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
    let (tx, rx) = chan::timer_channel();
    let inner = Inner::new(Kind::Send(tx), period_ns(d));
    inner.arm(&mut inner.lock(), d);
    (inner, rx)
}

/// A channel that receives the time once, `d` from now (Go's `time.After`).
///
/// It is the usual timeout arm of a [`select!`](crate::select!). Once the receiver
/// is dropped the timer is dead and leaves the timer heap, fired or not (Go 1.23).
/// A `d` too long to ever expire (such as `Duration::MAX`) never fires. Use a
/// [`Timer`] to be able to stop or re-arm it.
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

/// A channel that receives the time every `d` (Go's `time.Tick`).
///
/// It is a [`Ticker`] without the handle: the ticker stops once every receiver is
/// dropped. A slow receiver misses ticks rather than queueing them.
///
/// ```
/// use std::time::Duration;
/// let ticks = goro::time::tick(Duration::from_millis(1));
/// let h = goro::go!(move || ticks.iter().take(3).count());
/// assert_eq!(h.join().unwrap(), 3); // the ticker stopped with its receiver
/// ```
///
/// # Panics
/// If `d` is zero, as Go's `time.NewTicker` panics on a non-positive interval.
pub fn tick(d: Duration) -> Receiver<Instant> {
    new_ticker(d).1
}

/// Runs `f` in a new goroutine `d` from now (Go's `time.AfterFunc`), and returns
/// the [`Timer`] that controls it. `f` must keep the thread-local rule, spelled
/// out next.
///
/// `f` runs as a goroutine, so the thread-local rule of [`go!`](crate::go!) and
/// [`spawn`](fn@crate::spawn) applies to it, unchecked by the types: `f` uses no
/// thread-local except inside [`blocking`](fn@crate::blocking), or after
/// [`lock_os_thread`](crate::runtime::lock_os_thread) wired it before its first
/// park, while it stays wired; [`local!`](crate::local!) is the per-goroutine
/// storage to use instead.
///
/// [`Timer::stop`] cancels the call if it has not started (and returns `true`
/// then); dropping the `Timer` does not. [`Timer::reset`] schedules `f` again, even
/// after it ran, which is why `f` is `Fn`, not `FnOnce`. The timer's
/// [`receiver`](Timer::receiver) never receives anything.
///
/// ```
/// use std::time::Duration;
/// let (tx, rx) = goro::chan::bounded(1);
/// let _t = goro::time::after_func(Duration::from_millis(1), move || {
///     let _ = tx.try_send("ran");
/// });
/// assert_eq!(rx.recv(), Ok("ran"));
/// ```
#[track_caller]
pub fn after_func<F>(d: Duration, f: F) -> Timer
where
    F: Fn() + Send + Sync + 'static,
{
    let inner = Inner::new(Kind::Func(Arc::new(f), Origin::here()), 0);
    inner.arm(&mut inner.lock(), d);
    Timer {
        inner,
        rx: chan::never(),
    }
}
