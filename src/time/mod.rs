//! Time: Go's `time` package, as far as it concerns goroutines.
//!
//! | Go | goro |
//! |---|---|
//! | `time.Sleep(d)` | [`sleep`] |
//! | `time.After(d)`, `time.Tick(d)` | [`after`], [`tick`]: a [`Receiver`](crate::chan::Receiver)`<Instant>` |
//! | `time.NewTimer(d)`, `time.AfterFunc(d, f)` | [`Timer::new`], [`after_func`] |
//! | `time.NewTicker(d)` | [`Ticker::new`] |
//!
//! Durations are `std::time::Duration` and the values sent are
//! `std::time::Instant`s. Timers deliver on ordinary channels, so they combine
//! with [`select!`](crate::select!) for timeouts. They follow Go 1.23's rules:
//! once [`Timer::stop`], [`Timer::reset`], [`Ticker::stop`] or [`Ticker::reset`]
//! returns, no value from the old schedule is received; timer channels never
//! close; a timer nobody can receive from any more is collected.
//!
//! All of them live on the scheduler's per-P timer heaps: a sleeping goroutine is
//! parked, and no OS thread blocks for it. An idle runtime waits for the next
//! deadline in `epoll_pwait2`, precise to microseconds rather than Go's
//! millisecond. Called from a plain thread, [`sleep`] sleeps the thread.
//!
//! ```
//! use goro::time::{after, Ticker};
//! use std::time::Duration;
//!
//! // Count ticks until a deadline.
//! let ticker = Ticker::new(Duration::from_millis(1));
//! let deadline = after(Duration::from_millis(20));
//! let mut ticks = 0;
//! loop {
//!     goro::select! {
//!         recv(ticker.receiver()) -> _ => ticks += 1,
//!         recv(deadline) -> _ => break,
//!     }
//! }
//! assert!(ticks >= 1);
//! ```

use crate::runtime::deadline_in;
use crate::runtime::wait::{add_timer_parked, current_g, Action, OnDrop, Parker, WaitReason};
use std::time::Duration;

mod timer;

pub use timer::{after, after_func, tick, Ticker, Timer};

/// Pauses the current goroutine for at least `d` (Go's `time.Sleep`).
///
/// Inside a goroutine, the goroutine is parked on a timer and its M runs other
/// goroutines meanwhile; on a plain thread, the thread sleeps (`std::thread::sleep`).
/// `sleep(Duration::ZERO)` returns at once; a duration too long to ever expire,
/// such as `Duration::MAX`, parks for good, without panicking.
///
/// Many goroutines can sleep at once at little cost: a parked goroutine holds its
/// stack and one timer entry, no thread.
///
/// ```
/// use std::time::{Duration, Instant};
///
/// let start = Instant::now();
/// // 100 goroutines sleep at the same time, on a handful of threads.
/// let hs: Vec<_> = (0..100)
///     .map(|_| goro::go!(|| goro::time::sleep(Duration::from_millis(5))))
///     .collect();
/// hs.into_iter().for_each(|h| h.join().unwrap());
/// assert!(start.elapsed() >= Duration::from_millis(5));
/// ```
pub fn sleep(d: Duration) {
    crate::runtime::wait::preempt_check();
    let Some(g) = current_g() else {
        return std::thread::sleep(d);
    };
    if d.is_zero() {
        return;
    }
    let when = deadline_in(d);
    let parker = Parker::new();
    match when {
        // Too far away to ever fire: park for good, as Go's Sleep of a huge duration.
        None => parker.park(WaitReason::Forever, ()),
        Some(when) => {
            // The timer is armed on the scheduler side of the park, so it cannot
            // fire (and ready the G) before the G is off its stack.
            parker.park(
                WaitReason::Sleep,
                OnDrop::new(move || add_timer_parked(when, Action::Ready(g))),
            );
        }
    }
}
