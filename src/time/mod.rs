//! Time: [`sleep`], [`after`], [`tick`], [`Timer`], [`Ticker`], [`after_func`].
//!
//! All of them live on the per-P timer heaps of the scheduler: a sleeping G is
//! parked (no OS thread blocks), and an idle runtime waits for the next deadline in
//! `epoll_pwait2`, precise to microseconds rather than Go's millisecond.

use crate::runtime::g::WaitReason;
use crate::runtime::m::current_g;
use crate::runtime::park::{OnDrop, Parker};
use crate::runtime::sched::sched;
use crate::runtime::timers::{add_timer, Action};
use std::time::Duration;

mod timer;

pub use timer::{after, after_func, tick, Ticker, Timer};

/// Pauses the current goroutine for at least `d`. In a G the G is parked on a timer
/// and its M runs other Gs; on a plain thread the thread sleeps.
/// `sleep(Duration::ZERO)` returns at once; `sleep(Duration::MAX)` never returns.
///
/// ```
/// use std::time::{Duration, Instant};
/// let t = Instant::now();
/// goro::go!(|| goro::time::sleep(Duration::from_millis(5))).join().unwrap();
/// assert!(t.elapsed() >= Duration::from_millis(5));
/// ```
pub fn sleep(d: Duration) {
    crate::runtime::preempt::check();
    let Some(g) = current_g() else {
        return std::thread::sleep(d);
    };
    if d.is_zero() {
        return;
    }
    let s = sched();
    let when = u64::try_from(d.as_nanos())
        .ok()
        .and_then(|ns| s.nanotime().checked_add(ns));
    let parker = Parker::new();
    match when {
        // Too far away to ever fire: park for good, as Go's Sleep of a huge duration.
        None => parker.park(WaitReason::Forever, ()),
        Some(when) => {
            // The timer is armed on the scheduler side of the park, so it cannot
            // fire (and ready the G) before the G is off its stack.
            parker.park(
                WaitReason::Sleep,
                OnDrop::new(move || add_timer(when, Action::Ready(g))),
            );
        }
    }
}
