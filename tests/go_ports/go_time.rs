//! A port of Go's timer tests, `src/time/sleep_test.go` and `src/time/tick_test.go`,
//! to `goro::time`: sleep, after, tick, Timer, Ticker and after_func, under Go 1.23's
//! synchronous timer-channel rules (the tests' `asynctimerchan=0` mode).
//!
//! Go's `NewTimer` maps to [`Timer::new`], `AfterFunc` to [`after_func`], `NewTicker`
//! to [`Ticker::new`], `t.C` to `receiver()`, a nil channel to `goro::chan::never()`,
//! and Go's test goroutine to a G spawned per test ([`go_test`]). Go's "newTimerFunc"
//! (an AfterFunc that sends the time on its own channel) is [`FuncTimer`].
//!
//! Timing checks are lower bounds (a timer never fires early) plus upper bounds of
//! seconds; where Go retries a timing-sensitive test with longer delays, so does
//! the port. Scales (goroutine and iteration counts) are cut down from Go's so the
//! file stays fast in a debug build; each test says what it changed.
//!
//! Left out, because goro has no counterpart: the `asynctimerchan=1`/`=2` GODEBUG
//! modes, `runtime.GC` (replaced by `yield_now` where it is only a scheduler
//! disturbance), Time values and monotonic-clock internals, negative durations
//! (Rust's `Duration` cannot be negative: `Duration::ZERO` takes their place), zero
//! `Timer` values (`TestZeroTimer{Reset,Stop}Panics`: a `Timer` cannot be built
//! uninitialised), and a Ticker built around a caller's channel.

use crate::{common, go_test, go_test_at_one_proc, in_g, running, PROCS};

use goro::chan::{self, Receiver, TryRecvError};
use goro::sync::WaitGroup;
use goro::time::{after, after_func, sleep, tick, Ticker, Timer};
use goro::{go, select};
use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};

const MS: Duration = Duration::from_millis(1);
const NS: Duration = Duration::from_nanos(1);
const HOUR: Duration = Duration::from_secs(3600);
/// Go's `Duration(1<<63 - 1)`: about 292 years, so a real (far) deadline here.
const GO_BIG: Duration = Duration::from_nanos(i64::MAX as u64);

/// Runs `n` copies of `f` in goroutines at once and waits for them all.
fn in_gs(n: usize, f: impl Fn() + Send + Sync + 'static) {
    let f = Arc::new(f);
    let hs: Vec<_> = (0..n)
        .map(|_| {
            let f = f.clone();
            go!(move || f())
        })
        .collect();
    hs.into_iter().for_each(|h| h.join().unwrap());
}

/// Runs `f` beside the churn of Go's stress tests: a G that sleeps 1 ns over and
/// over (Go also runs the GC there; here it yields).
fn beside_churn(f: impl FnOnce()) {
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let churn = go!(move || {
        while !s.load(SeqCst) {
            goro::yield_now();
            sleep(NS);
        }
    });
    f();
    stop.store(true, SeqCst);
    churn.join().unwrap();
}

/// The timer operations the Go tests use, for Timer, an after_func timer with its
/// own channel, and a Ticker.
trait TimerLike: Send + Sync + 'static {
    fn stop(&self) -> bool;
    fn reset(&self, d: Duration) -> bool;
    fn rx(&self) -> &Receiver<Instant>;
}

impl TimerLike for Timer {
    fn stop(&self) -> bool {
        Timer::stop(self)
    }
    fn reset(&self, d: Duration) -> bool {
        Timer::reset(self, d)
    }
    fn rx(&self) -> &Receiver<Instant> {
        self.receiver()
    }
}

/// Go's `newTimerFunc`: an after_func timer whose function sends the time on a
/// channel of its own, so the tests run both the channel and the function paths.
struct FuncTimer {
    timer: Timer,
    rx: Receiver<Instant>,
}

fn new_timer_func(d: Duration) -> FuncTimer {
    let (tx, rx) = chan::bounded(1);
    let timer = after_func(d, move || {
        let _ = tx.send(Instant::now());
    });
    FuncTimer { timer, rx }
}

impl TimerLike for FuncTimer {
    fn stop(&self) -> bool {
        self.timer.stop()
    }
    fn reset(&self, d: Duration) -> bool {
        self.timer.reset(d)
    }
    fn rx(&self) -> &Receiver<Instant> {
        &self.rx
    }
}

/// A Ticker whose stop and reset report whether it was running, as Go's
/// `tickerTimer` in tick_test.go.
struct TickerTimer {
    ticker: Ticker,
    stopped: AtomicBool,
}

impl TimerLike for TickerTimer {
    fn stop(&self) -> bool {
        let pending = !self.stopped.swap(true, SeqCst);
        self.ticker.stop();
        pending
    }
    fn reset(&self, d: Duration) -> bool {
        let pending = !self.stopped.swap(false, SeqCst);
        self.ticker.reset(d);
        pending
    }
    fn rx(&self) -> &Receiver<Instant> {
        self.ticker.receiver()
    }
}

/// A small xorshift generator (no rand crate here), seeded from the clock.
struct Rng(u64);

impl Rng {
    fn from_clock() -> Rng {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64;
        Rng(nanos | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

// ---------------------------------------------------------------------------
// sleep_test.go
// ---------------------------------------------------------------------------

/// Go's TestSleep: a sleep is never cut short, even when something else happens in
/// the runtime halfway through (Go interrupts the sleeping thread with a signal;
/// here another G spawns and yields at that point). Also from a plain thread.
#[test]
fn sleep_is_never_short() {
    let _running = running();
    const DELAY: Duration = Duration::from_millis(100);
    in_g(|| {
        let stir = go!(|| {
            sleep(DELAY / 2);
            for _ in 0..100 {
                drop(go!(goro::yield_now));
                goro::yield_now();
            }
        });
        let start = Instant::now();
        sleep(DELAY);
        let took = start.elapsed();
        assert!(took >= DELAY, "sleep({DELAY:?}) slept only {took:?}");
        assert!(took < Duration::from_secs(10), "sleep({DELAY:?}) took {took:?}");
        stir.join().unwrap();
    });
    let start = Instant::now();
    sleep(DELAY);
    assert!(start.elapsed() >= DELAY, "plain-thread sleep was short");
}

/// One step of the after_func chain of `after_func_chain`: count down, and while
/// the count lasts schedule the next step at once, then linger in a sleep.
fn after_func_step(left: Arc<AtomicI32>, done: chan::Sender<bool>) {
    if left.fetch_sub(1, SeqCst) > 0 {
        let (l, d) = (left.clone(), done.clone());
        let _ = after_func(Duration::ZERO, move || after_func_step(l.clone(), d.clone()));
        sleep(Duration::from_secs(1));
    } else {
        done.send(true).unwrap();
    }
}

/// Go's TestAfterFunc: a function run by after_func(0) schedules the next one, ten
/// times over; the last one reports back. Each function sleeps after scheduling,
/// so the chain only completes if every after_func runs in its own G.
#[test]
fn after_func_chain() {
    go_test(|| {
        let left = Arc::new(AtomicI32::new(10));
        let (tx, rx) = chan::bounded(0);
        let start = Instant::now();
        let _ = after_func(Duration::ZERO, move || after_func_step(left.clone(), tx.clone()));
        assert_eq!(rx.recv(), Ok(true));
        // The steps' one-second sleeps overlap: the chain does not wait for them.
        assert!(
            start.elapsed() < Duration::from_secs(9),
            "after_func chain ran serially"
        );
    });
}

/// Go's TestTickerStress (formerly TestAfterStress): a 1 ns ticker delivers 100
/// ticks while another G keeps sleeping for 1 ns (Go also runs the GC there; here
/// it yields).
#[test]
fn ticker_stress() {
    go_test(|| {
        beside_churn(|| {
            let ticker = Ticker::new(NS);
            for _ in 0..100 {
                ticker.receiver().recv().unwrap();
            }
            ticker.stop();
        })
    });
}

/// Go's TestTickerConcurrentStress: ten Gs each take 100 ticks from one shared
/// 1 ns ticker, beside the sleeping churn G.
#[test]
fn ticker_concurrent_stress() {
    go_test(|| {
        beside_churn(|| {
            let ticker = Arc::new(Ticker::new(NS));
            let t = ticker.clone();
            in_gs(10, move || {
                for _ in 0..100 {
                    t.receiver().recv().unwrap();
                }
            });
            ticker.stop();
        })
    });
}

/// Go's TestAfterFuncStarvation: at GOMAXPROCS=1, two Gs ping-pong on a buffered
/// channel so one of them is always runnable; an after_func(1 µs) that tells them
/// to stop must still get to run. (Holds the other tests off while Ps are 1.)
#[test]
fn after_func_starvation() {
    go_test_at_one_proc(|| {
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = chan::bounded::<bool>(1);
        let s = stop.clone();
        let sender = go!(move || {
            while !s.load(SeqCst) {
                tx.send(true).unwrap();
            }
            tx.close();
        });
        let receiver = go!(move || for _ in &rx {});
        let s = stop.clone();
        let _t = after_func(Duration::from_micros(1), move || s.store(true, SeqCst));
        sender.join().unwrap();
        receiver.join().unwrap();
    });
}

/// Go's TestAfter: the value from after(d) comes no earlier than d, and the time
/// it carries is no earlier than start + d. Also from a plain thread.
#[test]
fn after_is_never_early() {
    let _running = running();
    const DELAY: Duration = Duration::from_millis(100);
    let check = || {
        let start = Instant::now();
        let end = after(DELAY).recv().unwrap();
        let took = start.elapsed();
        assert!(took >= DELAY, "after({DELAY:?}) came after only {took:?}");
        assert!(
            end >= start + DELAY,
            "after({DELAY:?}) sent a time {:?} after start",
            end - start
        );
        assert!(took < Duration::from_secs(10), "after({DELAY:?}) took {took:?}");
    };
    in_g(check);
    check();
}

/// Go's TestAfterTick: ten after(delta) in a row take at least ten deltas (Go's
/// short-mode delta, 10 ms, doubled; the upper bound is seconds, not Go's 3x).
#[test]
fn after_tick() {
    go_test(|| {
        const COUNT: u32 = 10;
        const DELTA: Duration = Duration::from_millis(20);
        let t0 = Instant::now();
        for _ in 0..COUNT {
            after(DELTA).recv().unwrap();
        }
        let d = t0.elapsed();
        let target = DELTA * COUNT;
        assert!(d >= target, "{COUNT} after({DELTA:?}) too fast: took {d:?}");
        assert!(
            d < target + Duration::from_secs(10),
            "{COUNT} after({DELTA:?}) too slow: took {d:?}"
        );
    });
}

/// Go's testAfterStop, for one kind of timer: stop a 50 ms timer and a 150 ms
/// after_func before they fire, and see neither fire by 200 ms; a second stop
/// returns false. Retried five times (timing-sensitive, as Go's).
fn after_stop_with<T: TimerLike>(new_timer: fn(Duration) -> T) {
    let mut errs = Vec::new();
    for _ in 0..5 {
        let _noise = after_func(Duration::from_millis(100), || {});
        let t0 = new_timer(Duration::from_millis(50));
        let (c1_tx, c1) = chan::bounded(1);
        let t1 = after_func(Duration::from_millis(150), move || {
            let _ = c1_tx.send(true);
        });
        let c2 = after(Duration::from_millis(200));
        if !t0.stop() {
            errs.push("failed to stop event 0");
            continue;
        }
        if !t1.stop() {
            errs.push("failed to stop event 1");
            continue;
        }
        c2.recv().unwrap();
        let stale = select! {
            recv(t0.rx()) -> _ => Some("event 0 was not stopped"),
            recv(c1) -> _ => Some("event 1 was not stopped"),
            default => None,
        };
        if let Some(e) = stale {
            // Not a timing accident: a stopped timer must never deliver.
            panic!("{e}");
        }
        assert!(!t1.stop(), "stop returned true twice");
        if !errs.is_empty() {
            eprintln!("after_stop: ignored earlier attempts: {errs:?}");
        }
        return;
    }
    panic!("after_stop failed 5 times: {errs:?}");
}

/// Go's TestAfterStop, impl=chan and impl=func.
#[test]
fn after_stop() {
    go_test(|| {
        after_stop_with(Timer::new);
        after_stop_with(new_timer_func);
    });
}

/// One round of Go's testAfterQueuing: Gs wait on timers due at slot × delta in a
/// scrambled order; the values must arrive in slot order, each within
/// [target - delta/2, target + 10 delta] of the start.
fn after_queuing_once(delta: Duration, after_fn: fn(Duration) -> Receiver<Instant>) -> Result<(), String> {
    const SLOTS: [u32; 13] = [5, 3, 6, 6, 6, 1, 1, 2, 7, 9, 4, 8, 0];
    let (result_tx, result_rx) = chan::bounded(SLOTS.len());
    let t0 = Instant::now();
    for slot in SLOTS {
        let c = after_fn(delta * slot);
        let tx = result_tx.clone();
        drop(go!(move || tx.send((slot, c.recv().unwrap())).unwrap()));
    }
    let mut order = Vec::new();
    let mut times = Vec::new();
    for _ in SLOTS {
        let (slot, t) = result_rx.recv().unwrap();
        order.push(slot);
        times.push(t);
    }
    if order.windows(2).any(|w| w[1] < w[0]) {
        return Err(format!("timers delivered out of order: {order:?}"));
    }
    for (slot, t) in order.iter().zip(times) {
        let dt = t - t0;
        let target = delta * *slot;
        if dt + delta / 2 < target || dt > target + delta * 10 {
            return Err(format!("after({target:?}) arrived at {dt:?}"));
        }
    }
    Ok(())
}

fn after_queuing_with(after_fn: fn(Duration) -> Receiver<Instant>) {
    let mut err = String::new();
    for i in 0..5u32 {
        let delta = MS * (20 + i * 50);
        match after_queuing_once(delta, after_fn) {
            Ok(()) => return,
            Err(e) => {
                eprintln!("after_queuing: attempt {i} failed: {e}");
                err = e;
            }
        }
    }
    panic!("after_queuing: {err}");
}

/// Go's TestAfterQueuing, impl=chan and impl=func.
#[test]
fn after_queuing() {
    go_test(|| {
        after_queuing_with(after);
        after_queuing_with(|d| {
            // Keep the timer alive (its drop does not cancel it anyway).
            let t = new_timer_func(d);
            t.rx
        });
    });
}

/// Go's TestTimerStopStress: 100 Gs each stop their own after_func before it is
/// due; none of the functions may run. (Go: 2 s timers stopped at 1 s, checked at
/// 3 s; here 1 s timers stopped at 0.3 s, checked at 1.5 s.)
#[test]
fn timer_stop_stress() {
    go_test(|| {
        let start = Instant::now();
        let fired = Arc::new(AtomicUsize::new(0));
        let hs: Vec<_> = (0..100)
            .map(|_| {
                let fired = fired.clone();
                go!(move || {
                    let t = after_func(Duration::from_secs(1), move || {
                        fired.fetch_add(1, SeqCst);
                    });
                    sleep(Duration::from_millis(300));
                    t.stop()
                })
            })
            .collect();
        for (i, h) in hs.into_iter().enumerate() {
            assert!(h.join().unwrap(), "timer {i}: stop before its deadline returned false");
        }
        let until = start + Duration::from_millis(1500);
        sleep(until.saturating_duration_since(Instant::now()));
        assert_eq!(fired.load(SeqCst), 0, "stopped after_func timers ran");
    });
}

/// Go's TestSleepZeroDeadlock: sleep(0) mixed with channel operations, beside a G
/// that disturbs the scheduler (Go: runs the GC 100 times; here yields), at 4 Ps.
#[test]
fn sleep_zero_deadlock() {
    go_test(|| {
        let (c_tx, c_rx) = chan::bounded(0);
        let h = go!(move || {
            for _ in 0..100 {
                goro::yield_now();
            }
            c_tx.send(true).unwrap();
        });
        for _ in 0..100 {
            sleep(Duration::ZERO);
            let (tx, rx) = chan::bounded(1);
            tx.send(true).unwrap();
            rx.recv().unwrap();
        }
        assert_eq!(c_rx.recv(), Ok(true));
        h.join().unwrap();
    });
}

/// One round of Go's testReset with unit `d`.
fn reset_once(d: Duration) -> Result<(), &'static str> {
    let t0 = Timer::new(2 * d);
    sleep(d);
    if !t0.reset(3 * d) {
        return Err("resetting unfired timer returned false");
    }
    sleep(2 * d);
    if t0.receiver().try_recv().is_ok() {
        return Err("timer fired early");
    }
    sleep(2 * d);
    if t0.receiver().try_recv().is_err() {
        return Err("reset timer did not fire");
    }
    if t0.reset(Duration::from_millis(50)) {
        return Err("resetting expired timer returned true");
    }
    Ok(())
}

/// Go's TestReset: reset an unfired timer later, see it not fire at the old
/// deadline and fire at the new one; the unit doubles from 1 ms on failure.
#[test]
fn reset() {
    go_test(|| {
        let mut d = MS;
        loop {
            match reset_once(d) {
                Ok(()) => break,
                Err(e) => {
                    d *= 2;
                    assert!(d <= Duration::from_secs(2), "reset: {e}");
                    eprintln!("reset: {e}; trying unit {d:?}");
                }
            }
        }
    });
}

static BIG_SLEEP_RETURNED: AtomicBool = AtomicBool::new(false);

/// Go's TestOverflowSleep: sleeps and timers of durations too long to ever end
/// neither fire nor disturb the other timers; a zero duration (Go: the most
/// negative one) returns or fires at once.
#[test]
fn overflow_sleep() {
    go_test(|| {
        for big in [Duration::MAX, GO_BIG, Duration::from_nanos(u64::MAX)] {
            drop(go!(move || {
                sleep(big);
                BIG_SLEEP_RETURNED.store(true, SeqCst);
            }));
            let fired = select! {
                recv(after(big)) -> _ => true,
                recv(after(Duration::from_millis(25))) -> _ => false,
            };
            assert!(!fired, "after({big:?}) fired");
        }
        let start = Instant::now();
        sleep(Duration::ZERO);
        assert!(
            start.elapsed() < Duration::from_secs(1),
            "sleep(0) did not return at once"
        );
        let fired = select! {
            recv(after(Duration::ZERO)) -> _ => true,
            recv(after(Duration::from_secs(1))) -> _ => false,
        };
        assert!(fired, "after(0) did not fire before after(1s)");
        assert!(!BIG_SLEEP_RETURNED.load(SeqCst), "a sleep of a huge duration returned");
    });
}

/// Go semantics TestOverflowSleep does not check: a timer whose duration is too
/// long to ever expire is still pending, so stop and reset report true (Go
/// clamps the deadline and keeps the timer in its heap), and an after_func's
/// stop == true promises the function will not run.
#[test]
fn overflow_timer_is_pending() {
    go_test(|| {
        for big in [GO_BIG, Duration::MAX] {
            let t = Timer::new(big);
            assert!(
                t.stop(),
                "Timer::new({big:?}).stop() = false, want true (it never fired)"
            );
            let t = Timer::new(big);
            assert!(t.reset(HOUR), "Timer::new({big:?}).reset() = false, want true");
            let f = after_func(big, || {});
            assert!(
                f.stop(),
                "after_func({big:?}).stop() = false, want true (f will never run)"
            );
        }
    });
}

/// Go's TestIssue5745, goro's way: a panic must not leave a timer lock held.
/// A G that panics while owning a Ticker and a Timer drops them during the unwind
/// (which stops the ticker), and timers keep working after; an after_func whose
/// function panics can be reset and runs again, and other timers still fire.
#[test]
fn panic_does_not_break_timers() {
    go_test(|| {
        let ticker = Arc::new(Ticker::new(HOUR));
        let k = ticker.clone();
        let h = go!(move || {
            let _own = Ticker::new(HOUR);
            let _t = Timer::new(HOUR);
            k.reset(HOUR);
            panic!("deliberate panic while owning timers");
        });
        assert!(h.join().is_err(), "expected a panic");
        ticker.stop(); // would hang if the unwind left a timer lock held

        let runs = Arc::new(AtomicUsize::new(0));
        let r = runs.clone();
        let t = after_func(Duration::ZERO, move || {
            r.fetch_add(1, SeqCst);
            panic!("deliberate panic in an after_func");
        });
        let deadline = Instant::now() + Duration::from_secs(10);
        while runs.load(SeqCst) < 1 {
            assert!(Instant::now() < deadline, "after_func(0) never ran");
            sleep(MS);
        }
        assert!(!t.reset(Duration::ZERO), "reset after the function ran returned true");
        while runs.load(SeqCst) < 2 {
            assert!(Instant::now() < deadline, "after_func did not run again after reset");
            sleep(MS);
        }
        let start = Instant::now();
        after(Duration::from_millis(10)).recv().unwrap();
        assert!(start.elapsed() >= Duration::from_millis(10));
        let k = Ticker::new(MS);
        k.receiver().recv().unwrap();
        k.stop();
    });
}

/// Go's TestOverflowPeriodRuntimeTimer (CheckRuntimeTimerPeriodOverflow): a ticker
/// with a period too large to add to the clock neither fires nor blocks the other
/// timers, and can be stopped. (goro's API cannot give a ticker a first deadline
/// apart from its period, so the huge period is also the first deadline; one
/// ticker is moved to it by reset after ticking on a short period.)
#[test]
fn overflow_period_ticker() {
    go_test(|| {
        let bigs = [GO_BIG, Duration::from_nanos(u64::MAX), Duration::MAX];
        let tickers: Vec<_> = bigs.iter().map(|&d| Ticker::new(d)).collect();
        let moved = Ticker::new(MS);
        moved.receiver().recv().unwrap();
        moved.reset(GO_BIG);
        let start = Instant::now();
        after(Duration::from_millis(25)).recv().unwrap();
        assert!(start.elapsed() >= Duration::from_millis(25));
        for (k, d) in tickers.iter().zip(bigs) {
            assert!(k.receiver().try_recv().is_err(), "ticker of period {d:?} ticked");
            k.stop();
        }
        assert!(
            moved.receiver().try_recv().is_err(),
            "ticker reset to a huge period ticked"
        );
        moved.stop();
    });
}

/// Go's testZeroTimer: a zero-duration timer is never missed: each one's value
/// arrives within 2 s. (Go: a million rounds per kind; here 20,000.)
fn zero_timer_with<T: TimerLike>(mut new_timer: impl FnMut(Duration) -> Arc<T>) {
    for i in 0..20_000 {
        let s = Instant::now();
        let t = new_timer(Duration::ZERO);
        let v = t.rx().recv_timeout(Duration::from_secs(10));
        assert!(v.is_ok(), "round {i}: zero timer never fired");
        let diff = s.elapsed();
        assert!(diff <= Duration::from_secs(2), "round {i}: zero timer took {diff:?}");
    }
}

/// Go's TestZeroTimer: impl=chan, impl=func, and impl=cache (one after_func timer
/// reset to zero over and over).
#[test]
fn zero_timer() {
    go_test(|| {
        zero_timer_with(|d| Arc::new(Timer::new(d)));
        zero_timer_with(|d| Arc::new(new_timer_func(d)));
        let cached = Arc::new(new_timer_func(HOUR));
        zero_timer_with(move |d| {
            cached.reset(d);
            cached.clone()
        });
    });
}

/// Go's TestTimerModifiedEarlier: moving an after_func timer from an hour away to
/// "now" (Go: to a past time) ten times in a row must not lose it: it fires well
/// within a 10 s deadline. 1000 rounds, as Go.
#[test]
fn timer_modified_earlier() {
    go_test(|| {
        let mut fail = 0;
        for i in 0..1000 {
            let timer = new_timer_func(HOUR);
            for _ in 0..10 {
                if !timer.stop() {
                    timer.rx().recv().unwrap();
                }
                timer.reset(Duration::ZERO);
            }
            let deadline = Timer::new(Duration::from_secs(10));
            let now = Instant::now();
            select! {
                recv(timer.rx()) -> _ => {
                    let since = now.elapsed();
                    if since > Duration::from_secs(8) {
                        eprintln!("round {i}: timer took too long ({since:?})");
                        fail += 1;
                    }
                },
                recv(deadline.receiver()) -> _ => panic!("round {i}: deadline expired: timer lost"),
            }
            deadline.stop();
        }
        assert_eq!(fail, 0, "{fail} slow timers");
    });
}

/// Go's TestAdjustTimers: 100 after_func timers are walked in random order through
/// fire, reset far, stop, reset to zero and fire again; the results of stop and
/// reset must match each state, and the final zero reset must fire promptly.
#[test]
fn adjust_timers() {
    go_test(|| {
        let mut rng = Rng::from_clock();
        let seed = rng.0;
        let mut timers: Vec<Option<FuncTimer>> = (0..100).map(|_| None).collect();
        let mut states = [0u32; 100];
        let mut indices: Vec<usize> = (0..100).collect();
        for k in (1..indices.len()).rev() {
            let j = rng.below(k + 1);
            indices.swap(k, j);
        }
        while !indices.is_empty() {
            let ii = rng.below(indices.len());
            let i = indices[ii];
            let state = states[i];
            states[i] += 1;
            let timer = || timers[i].as_ref().unwrap();
            match state {
                0 => timers[i] = Some(new_timer_func(Duration::ZERO)),
                1 => {
                    timer().rx().recv().unwrap(); // now idle
                }
                2 | 4 | 6 => {
                    let d = Duration::from_secs(60 * [1, 3, 2][(state / 2 - 1) as usize]);
                    assert!(
                        !timer().reset(d),
                        "seed {seed}: timer {i} state {state}: idle timer was active"
                    );
                }
                3 | 5 | 7 => {
                    if !timer().stop() {
                        eprintln!("seed {seed}: timer {i} state {state}: stop returned false");
                        timer().rx().recv().unwrap();
                    }
                }
                8 => assert!(
                    !timer().reset(Duration::ZERO),
                    "seed {seed}: timer {i}: reset of a stopped timer returned true"
                ),
                9 => {
                    let now = Instant::now();
                    timer().rx().recv().unwrap();
                    let dur = now.elapsed();
                    assert!(
                        dur < Duration::from_secs(5),
                        "seed {seed}: timer {i} took {dur:?} to fire"
                    );
                }
                _ => {
                    indices.swap_remove(ii);
                }
            }
        }
    });
}

/// Go's testStopResetResult: Gs race two 1 ms timers; whichever fires first, the
/// other is stopped (or reset an hour away), and when that reports false its
/// value must be there to receive. (Go: 1000 Gs × 100 rounds; here 1000 × 25.)
fn stop_reset_result(test_stop: bool) {
    const GS: usize = 1000;
    const ROUNDS: usize = 25;
    let stop_or_reset = move |t: &Timer| if test_stop { t.stop() } else { t.reset(HOUR) };
    let (start_tx, start_rx) = chan::bounded::<()>(0);
    let wg = WaitGroup::new();
    wg.add(GS);
    for _ in 0..GS {
        let (wg, start_rx) = (wg.clone(), start_rx.clone());
        drop(go!(move || {
            let _ = start_rx.recv();
            for _ in 0..ROUNDS {
                let t1 = Timer::new(MS);
                let t2 = Timer::new(MS);
                let (what, other) = select! {
                    recv(t1.receiver()) -> _ => ("timer2", &t2),
                    recv(t2.receiver()) -> _ => ("timer1", &t1),
                };
                if !stop_or_reset(other) {
                    let v = other.receiver().recv_timeout(Duration::from_secs(10));
                    assert!(v.is_ok(), "{what}: stop/reset said it had fired, but no value came");
                }
            }
            wg.done();
        }));
    }
    start_tx.close();
    wg.wait();
}

/// Go's TestStopResult (asynctimerchan=0).
#[test]
fn stop_result() {
    go_test(|| stop_reset_result(true));
}

/// Go's TestResetResult (asynctimerchan=0).
#[test]
fn reset_result() {
    go_test(|| stop_reset_result(false));
}

/// Go's TestMultiWakeupTicker: GOMAXPROCS Gs all wait on one 1 µs ticker, each
/// round with an after(1 ms) escape. (Go: 100,000 rounds; here 20,000.)
#[test]
fn multi_wakeup_ticker() {
    go_test(|| {
        let ticker = Ticker::new(Duration::from_micros(1));
        in_gs(PROCS, move || {
            for _ in 0..20_000 {
                select! {
                    recv(ticker.receiver()) -> _ => {},
                    recv(after(MS)) -> _ => {},
                }
            }
        });
    });
}

/// Go's TestMultiWakeupTimer: GOMAXPROCS Gs poll one 1 ns timer and reset it,
/// 10,000 rounds each, as Go.
#[test]
fn multi_wakeup_timer() {
    go_test(|| {
        let timer = Timer::new(NS);
        in_gs(PROCS, move || {
            for _ in 0..10_000 {
                select! {
                    recv(timer.receiver()) -> _ => {},
                    default => {},
                }
                timer.reset(NS);
            }
        });
    });
}

// ---------------------------------------------------------------------------
// tick_test.go
// ---------------------------------------------------------------------------

/// Go's TestTicker: count/2 ticks of delta, reset to 2 × delta, count/2 more; the
/// whole takes 3 × delta × count/2 (± 30 %), and after stop no tick comes. Early is
/// a hard failure; late retries with a longer delta (Go retries at 1 s, 8 ticks;
/// here 50 ms then 200 ms, the last with an upper bound of seconds).
#[test]
fn ticker() {
    go_test(|| {
        let tries = [(10u32, 20 * MS), (10, 50 * MS), (6, 200 * MS)];
        for (n, &(count, delta)) in tries.iter().enumerate() {
            let last = n == tries.len() - 1;
            let ticker = Ticker::new(delta);
            let t0 = Instant::now();
            for _ in 0..count / 2 {
                ticker.receiver().recv().unwrap();
            }
            ticker.reset(delta * 2);
            for _ in 0..count - count / 2 {
                ticker.receiver().recv().unwrap();
            }
            ticker.stop();
            let dt = t0.elapsed();
            let target = delta * 3 * (count / 2);
            let slop = target * 3 / 10;
            assert!(
                dt >= target - slop,
                "{count} ticks of {delta:?}/{:?} too fast: {dt:?}",
                delta * 2
            );
            let limit = if last {
                target * 3 + Duration::from_secs(5)
            } else {
                target + slop
            };
            if dt > limit {
                assert!(!last, "{count} ticks of {delta:?}/{:?} too slow: {dt:?}", delta * 2);
                eprintln!("ticker: {count} ticks of {delta:?} took {dt:?}, retrying");
                sleep(Duration::from_millis(100));
                continue;
            }
            sleep(delta * 2);
            assert!(ticker.receiver().try_recv().is_err(), "ticker did not shut down");
            return;
        }
    });
}

/// Go's TestTickerStopWithDirectInitialization / TestManualTicker, as far as goro
/// has them: stopping tickers that never ticked (one that never will, one stopped
/// twice, one stopped then dropped) must not crash or hang.
#[test]
fn ticker_stop_never_ticked() {
    go_test(|| {
        let k = Ticker::new(Duration::MAX);
        k.stop();
        k.stop();
        let k = Ticker::new(HOUR);
        k.stop();
        drop(k);
        let k = Ticker::new(HOUR);
        drop(k);
    });
}

/// Go's TestTeardown: make a ticker, take one tick, stop it; three times, without
/// deadlocking (Go's short-mode 20 ms).
#[test]
fn teardown() {
    go_test(|| {
        for _ in 0..3 {
            let k = Ticker::new(20 * MS);
            k.receiver().recv().unwrap();
            k.stop();
        }
    });
}

fn panics(f: impl FnOnce()) -> bool {
    catch_unwind(AssertUnwindSafe(f)).is_err()
}

/// Go's TestTick: Go returns nil from Tick(-1); goro's API panics on a zero
/// period instead (API.md), so that is what is checked.
#[test]
fn tick_zero_panics() {
    let _running = running();
    assert!(panics(|| drop(tick(Duration::ZERO))), "tick(0) did not panic");
    in_g(|| assert!(panics(|| drop(tick(Duration::ZERO))), "tick(0) did not panic in a G"));
}

/// Go's TestNewTickerLtZeroDuration: a ticker with a zero period panics.
#[test]
fn new_ticker_zero_panics() {
    go_test(|| {
        assert!(
            panics(|| drop(Ticker::new(Duration::ZERO))),
            "Ticker::new(0) did not panic"
        )
    });
}

/// Go's TestTickerResetLtZeroDuration: resetting a ticker to a zero period panics
/// (and, per API.md, leaves it ticking as before).
#[test]
fn ticker_reset_zero_panics() {
    go_test(|| {
        let k = Ticker::new(20 * MS);
        assert!(panics(|| k.reset(Duration::ZERO)), "Ticker::reset(0) did not panic");
        let v = k.receiver().recv_timeout(Duration::from_secs(10));
        assert!(v.is_ok(), "ticker stopped ticking after the failed reset");
    });
}

/// Go's TestLongAdjustTimers: with a timer heap built up by 5000 short sleepers,
/// a queueing G and the test G ping-pong work items through select, each receive
/// guarded by after(5 s); it must not crawl. (Go: 50,000 rounds of 20; here
/// 4,000, under a 40 s after_func deadline.)
#[test]
fn long_adjust_timers() {
    go_test(|| {
        const COUNT: usize = 5000;
        const ROUNDS: usize = 4000;
        const TRY: usize = 20;
        let wg = WaitGroup::new();
        wg.add(COUNT);
        for _ in 0..COUNT {
            let wg = wg.clone();
            drop(go!(move || {
                sleep(Duration::from_micros(10));
                wg.done();
            }));
        }
        for _ in 0..COUNT {
            sleep(Duration::from_micros(1));
        }

        let (done_tx, done_rx) = chan::bounded::<()>(0);
        let expiry = after_func(Duration::from_secs(40), move || done_tx.close());

        let (in_tx, in_rx) = chan::bounded::<fn()>(0);
        let (out_tx, out_rx) = chan::bounded::<fn()>(0);
        wg.add(1);
        let (wg2, done_q) = (wg.clone(), done_rx.clone());
        drop(go!(move || {
            // A send arm whose channel nobody receives from: Go's nil channel.
            let (nil_tx, _nil_rx) = chan::bounded::<fn()>(0);
            let mut q: VecDeque<fn()> = VecDeque::new();
            loop {
                let (send_to, send) = match q.front() {
                    Some(&f) => (&out_tx, f),
                    None => (&nil_tx, (|| {}) as fn()),
                };
                let stop = select! {
                    send(send_to, send) -> _ => { q.pop_front(); false },
                    recv(in_rx) -> f => match f {
                        Ok(f) => { q.push_back(f); false },
                        Err(_) => true,
                    },
                    recv(done_q) -> _ => true,
                };
                if stop {
                    break;
                }
            }
            out_tx.close();
            wg2.done();
        }));

        for i in 0..ROUNDS {
            for _ in 0..TRY {
                in_tx.send(|| {}).unwrap();
            }
            for _ in 0..TRY {
                select! {
                    recv(out_rx) -> f => assert!(f.is_ok(), "output channel is closed"),
                    recv(after(Duration::from_secs(5))) -> _ => panic!("failed to read work, round {i}"),
                    recv(done_rx) -> _ => panic!("40 s timer expired, round {i}"),
                }
            }
        }
        in_tx.close();
        expiry.stop();
        wg.wait();
    });
}

/// The timers `timer_gc` leaves unreferenced: each kind made and dropped.
const TIMER_GC_KINDS: [(&str, fn()); 6] = [
    ("after", || drop(after(HOUR))),
    ("tick", || drop(tick(HOUR))),
    ("timer", || drop(Timer::new(HOUR))),
    ("ticker", || drop(Ticker::new(HOUR))),
    ("timer-stop", || {
        Timer::new(HOUR).stop();
    }),
    ("ticker-stop", || Ticker::new(HOUR).stop()),
];

/// Child of `timer_gc`: makes 10,000 unreferenced timers of each kind, printing
/// markers around each batch for the parent to find the scheddetail lines by.
fn timer_gc_child() {
    const N: usize = 10_000;
    in_g(move || {
        for (what, make) in TIMER_GC_KINDS {
            eprintln!("TIMERGC begin {what}");
            for _ in 0..N {
                make();
            }
            // Several schedtrace periods (50 ms).
            sleep(Duration::from_millis(200));
            eprintln!("TIMERGC end {what}");
        }
    });
}

/// Go's TestTimerGC, goro's way: a timer nobody can receive from any more is
/// collected (API.md: Go 1.23 rules). Go counts heap objects after a GC; here a
/// child process with scheddetail reports each P's timer heap length
/// (`timerslen`), which must stay far below the 10,000 timers made.
#[test]
fn timer_gc() {
    let _running = running();
    if common::is_child() {
        timer_gc_child();
        return;
    }
    let out = common::run_child_in(
        module_path!(),
        "timer_gc",
        &[("GODEBUG", "schedtrace=50,scheddetail=1")],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "child failed:\n{stderr}");
    for (what, _) in TIMER_GC_KINDS {
        let begin = format!("TIMERGC begin {what}");
        let end = format!("TIMERGC end {what}");
        let lines: Vec<&str> = stderr
            .lines()
            .skip_while(|l| *l != begin)
            .take_while(|l| *l != end)
            .collect();
        let last_sched = lines
            .iter()
            .rposition(|l| l.starts_with("SCHED "))
            .unwrap_or_else(|| panic!("{what}: no SCHED report in the batch:\n{stderr}"));
        let lens: Vec<usize> = lines[last_sched + 1..]
            .iter()
            .filter(|l| l.starts_with("  P"))
            .map(|l| {
                let v = l.split("timerslen=").nth(1).expect("timerslen field");
                v.split_whitespace().next().unwrap().parse().unwrap()
            })
            .collect();
        assert_eq!(lens.len(), PROCS, "{what}: P lines:\n{stderr}");
        let total: usize = lens.iter().sum();
        assert!(
            total < 1000,
            "{what}: {total} timers still in the heaps ({lens:?}): not collected"
        );
    }
}

const SCHED: Duration = Duration::from_millis(10);
const TRIES: usize = 100;

fn no_tick(c: &Receiver<Instant>, at: &str) {
    assert!(c.try_recv().is_err(), "extra tick ({at})");
}

fn assert_tick(c: &Receiver<Instant>, at: &str) {
    if c.try_recv().is_ok() {
        return;
    }
    for _ in 0..TRIES {
        sleep(SCHED);
        if c.try_recv().is_ok() {
            return;
        }
    }
    panic!("missing tick ({at})");
}

fn is_done(done: &Receiver<bool>) -> bool {
    !matches!(done.try_recv(), Err(TryRecvError::Empty))
}

fn not_done(done: &Receiver<bool>, at: &str) {
    assert!(!is_done(done), "early done ({at})");
}

fn wait_done(done: &Receiver<bool>, at: &str) {
    for _ in 0..TRIES {
        sleep(SCHED);
        if is_done(done) {
            return;
        }
    }
    panic!("never got done ({at})");
}

/// Go's testTimerChan with synchronous timer channels, for a Timer or a Ticker.
fn timer_chan<T: TimerLike>(tim: Arc<T>, is_ticker: bool) {
    let c = tim.rx().clone();
    let far = Duration::from_secs(10_000);

    // Stop and reset of a timer that is far away.
    tim.stop();
    no_tick(&c, "after stop");
    tim.reset(far);
    no_tick(&c, "after reset far");

    // The async-mode sequence, whose draining is a no-op with sync channels.
    tim.reset(NS);
    assert_tick(&c, "reset to 1ns");
    sleep(SCHED);
    tim.reset(far);
    no_tick(&c, "reset far after firing");
    tim.reset(NS);
    assert_tick(&c, "reset to 1ns again");
    tim.stop();
    tim.reset(NS);
    assert_tick(&c, "stop, then reset to 1ns");

    // The sync-mode sequence: reset a pending timer to fire at once.
    tim.reset(NS);
    sleep(SCHED);
    assert_tick(&c, "reset to 1ns, then a pause");

    // A ticker has ticked again by now; reset must not let that tick through.
    sleep(SCHED);
    tim.reset(far);
    no_tick(&c, "reset far after a pause");

    tim.reset(far);
    // A G blocked receiving while the timer is stopped and reset.
    let (done_tx, done) = chan::bounded::<bool>(0);
    not_done(&done, "before the receiver");
    let c2 = c.clone();
    let receiver = go!(move || {
        let _ = c2.recv();
        done_tx.close();
    });
    sleep(SCHED);
    not_done(&done, "receiver blocked");
    tim.reset(far * 2);
    sleep(SCHED);
    not_done(&done, "reset farther with a receiver blocked");
    tim.reset(NS);
    wait_done(&done, "reset to 1ns with a receiver blocked");
    receiver.join().unwrap();
    if is_ticker {
        assert_tick(&c, "ticker after the blocked receiver's tick");
    } else {
        no_tick(&c, "timer after the blocked receiver's value");
    }
    tim.stop();
    no_tick(&c, "stop");

    // Two Gs blocked in select on the channel.
    tim.reset(far);
    let (done_tx, done) = chan::bounded::<bool>(2);
    let (stop_tx, stop) = chan::bounded::<bool>(0);
    let mut closers = Vec::new();
    let mut selectors = Vec::new();
    for _ in 0..2 {
        let (c, done_tx, stop) = (c.clone(), done_tx.clone(), stop.clone());
        let (fin_tx, fin) = chan::bounded::<bool>(0);
        closers.push(fin);
        selectors.push(go!(move || {
            select! {
                recv(c) -> _ => done_tx.send(true).unwrap(),
                recv(stop) -> _ => {},
            }
            fin_tx.close();
        }));
    }
    drop(done_tx);
    sleep(SCHED);
    not_done(&done, "two selectors blocked");
    tim.reset(SCHED / 2);
    sleep(SCHED);
    wait_done(&done, "reset to 5ms with two selectors");
    tim.stop();
    stop_tx.close();
    wait_done(&closers[0], "selector 1 finished");
    wait_done(&closers[1], "selector 2 finished");
    for h in selectors {
        h.join().unwrap();
    }
    if is_ticker {
        // The second selector may have had a tick too, and one may be buffered.
        let _ = done.try_recv();
        let _ = c.try_recv();
    }
    // Both senders of `done` are gone now: it reads as closed, but must hold no value.
    assert!(done.try_recv().is_err(), "extra done");

    // Gs blocked in select on a stopped timer receive nothing.
    let (stop_tx, stop) = chan::bounded::<bool>(0);
    let (done_tx, done) = chan::bounded::<bool>(2);
    let mut hs = Vec::new();
    for _ in 0..2 {
        let (c, done_tx, stop) = (c.clone(), done_tx.clone(), stop.clone());
        hs.push(go!(move || {
            select! {
                recv(c) -> _ => panic!("unexpected value from a stopped timer"),
                recv(stop) -> _ => {},
            }
            done_tx.send(true).unwrap();
        }));
    }
    sleep(SCHED);
    stop_tx.close();
    wait_done(&done, "first selector on a stopped timer");
    wait_done(&done, "second selector on a stopped timer");
    for h in hs {
        h.join().unwrap();
    }

    // Stop and reset block old values from being received (go.dev/issue/37196).
    tim.reset(NS);
    sleep(10 * MS);
    assert!(tim.stop(), "stop of a fired, unreceived timer = false, want true");
    no_tick(&c, "stop after firing");
    tim.reset(HOUR);
    no_tick(&c, "reset an hour away");
    assert!(tim.reset(NS), "reset of a pending timer = false, want true");
    assert_tick(&c, "reset to 1ns from an hour");
    sleep(10 * MS);
    if is_ticker {
        assert_tick(&c, "ticker keeps ticking");
        sleep(10 * MS);
    } else {
        no_tick(&c, "timer fired once");
    }
    assert_eq!(tim.reset(HOUR), is_ticker, "reset after the value was received");
    no_tick(&c, "final reset an hour away");
}

/// Go's TestChan, asynctimerchan=0, Timer and Ticker: the Go 1.23 channel rules
/// through stop and reset, with receivers blocked on the channel.
#[test]
fn chan_sync_rules() {
    go_test(|| {
        timer_chan(Arc::new(Timer::new(Duration::from_secs(10_000))), false);
        let ticker = TickerTimer {
            ticker: Ticker::new(Duration::from_secs(10_000)),
            stopped: AtomicBool::new(false),
        };
        timer_chan(Arc::new(ticker), true);
    });
}

/// The part of Go's TestChan that the sync mode leaves as a comment, and Go 1.23's
/// documented behaviour: a timer or ticker channel is unbuffered, so len() and
/// capacity() are 0, even when the timer has fired and nobody has received yet.
#[test]
fn chan_len_is_zero() {
    go_test(|| {
        let t = Timer::new(NS);
        sleep(SCHED);
        let k = Ticker::new(NS);
        sleep(SCHED);
        for (what, c) in [("timer", t.receiver()), ("ticker", k.receiver())] {
            let (len, cap) = (c.len(), c.capacity());
            assert!(c.try_recv().is_ok(), "{what}: fired value missing");
            assert_eq!(
                (len, cap),
                (0, 0),
                "{what}: (len, capacity) of a fired timer channel, want (0, 0)"
            );
        }
    });
}

/// Go's TestAfterTimes: the time sent by after(10 ms) is its firing time, not the
/// time it is received (500 ms later); up to 10 tries, as Go.
#[test]
fn after_times() {
    sends_the_firing_time("after", after);
}

/// Go's TestTickTimes: the same for tick(10 ms).
#[test]
fn tick_times() {
    sends_the_firing_time("tick", tick);
}

/// The body of `after_times` and `tick_times`, for the channel `make(10 ms)`.
fn sends_the_firing_time(name: &'static str, make: fn(Duration) -> Receiver<Instant>) {
    go_test(move || {
        for _ in 0..10 {
            let start = Instant::now();
            let c = make(10 * MS);
            sleep(500 * MS);
            let dt = c.recv().unwrap() - start;
            assert!(dt >= 10 * MS, "{name}(10ms) sent a time only {dt:?} after start");
            if dt < 400 * MS {
                return;
            }
            eprintln!("{name}(10ms) time is +{dt:?}, want < 400ms");
        }
        panic!("{name} sends the receive time, not the firing time");
    });
}
