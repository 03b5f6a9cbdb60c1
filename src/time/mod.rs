//! Time: [`sleep`] parks the G on its P's timer heap; no OS thread blocks.

use crate::runtime::g::WaitReason;
use crate::runtime::m::{current_g, current_p};
use crate::runtime::park::Parker;
use crate::runtime::sched::sched;
use crate::runtime::timers::Action;
use crate::runtime::wake::wake_netpoller;
use std::time::Duration;

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
            let arm = ArmOnDrop(Some(move || {
                let p = current_p().expect("a parking G's M holds a P");
                p.timers.add(when, Action::Ready(g));
                wake_netpoller(when);
            }));
            parker.park(WaitReason::Sleep, arm);
        }
    }
}

/// Runs a closure when dropped: how `sleep` hands "arm the timer" to the park
/// protocol as its unlock step.
struct ArmOnDrop<F: FnOnce()>(Option<F>);

impl<F: FnOnce()> Drop for ArmOnDrop<F> {
    fn drop(&mut self) {
        if let Some(f) = self.0.take() {
            f();
        }
    }
}
