//! sysmon with a single P: a blocking call and a CPU hog must not stop the P's
//! other goroutines. With one P, nothing else could run them: these
//! tests fail if sysmon does not hand off or retake the P.

mod common;

use goro::go;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[test]
fn a_blocking_call_does_not_stop_the_other_gs() {
    common::init_procs(1);
    let _w = common::watchdog(Duration::from_secs(30));
    let before = goro::runtime::stats().syscall_handoffs;
    let count = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let (c, d) = (count.clone(), done.clone());
    let spinner = go!(move || {
        while !d.load(Ordering::Relaxed) {
            c.fetch_add(1, Ordering::Relaxed);
            goro::yield_now();
        }
    });
    let c = count.clone();
    let progressed = go!(move || {
        // Let the spinner start, so both Gs share the one P.
        while c.load(Ordering::Relaxed) == 0 {
            goro::yield_now();
        }
        let at_start = c.load(Ordering::Relaxed);
        goro::blocking(|| std::thread::sleep(Duration::from_millis(200)));
        c.load(Ordering::Relaxed) - at_start
    })
    .join()
    .unwrap();
    done.store(true, Ordering::Relaxed);
    spinner.join().unwrap();
    assert!(
        progressed > 100,
        "the other G ran only {progressed} iterations during a 200 ms blocking call"
    );
    assert!(goro::runtime::stats().syscall_handoffs > before);
}

#[test]
fn a_cpu_hog_does_not_stop_a_timer_driven_g() {
    common::init_procs(1);
    let _w = common::watchdog(Duration::from_secs(30));
    let before = goro::runtime::stats().preempt_retakes;
    let hogging = Arc::new(AtomicBool::new(true));
    let ticks = Arc::new(AtomicU64::new(0));
    let (h, t) = (hogging.clone(), ticks.clone());
    // Sleeps of 5 ms, already going steadily when the hog starts: the sleep that
    // is pending then is the one the hog delays.
    let ticker = go!(move || {
        let mut worst = Duration::ZERO;
        while h.load(Ordering::Relaxed) {
            let start = Instant::now();
            goro::time::sleep(Duration::from_millis(5));
            worst = worst.max(start.elapsed().saturating_sub(Duration::from_millis(5)));
            t.fetch_add(1, Ordering::Relaxed);
        }
        worst
    });
    while ticks.load(Ordering::Relaxed) < 3 {
        std::thread::yield_now();
    }
    let at_start = ticks.load(Ordering::Relaxed);
    let h = hogging.clone();
    let hog = go!(move || {
        // A tight loop with no goro call: nothing cooperative can stop it.
        let t = Instant::now();
        let mut x = 0u64;
        while t.elapsed() < Duration::from_millis(400) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        h.store(false, Ordering::Relaxed);
        x
    });
    hog.join().unwrap();
    let during = ticks.load(Ordering::Relaxed) - at_start;
    let worst = ticker.join().unwrap();
    eprintln!("hog: {during} ticks during it, worst lateness {worst:?}");
    assert!(
        during >= 10,
        "the timer-driven G ran {during} times during a 400 ms hog"
    );
    // sysmon retakes after 20 ms of hogging; the slack covers a loaded 2-core
    // CI machine.
    assert!(worst < Duration::from_millis(60), "worst lateness {worst:?}");
    assert!(goro::runtime::stats().preempt_retakes > before);
}

#[test]
fn a_hog_calling_goro_yields_when_flagged() {
    common::init_procs(1);
    let _w = common::watchdog(Duration::from_secs(30));
    let (tx, rx) = goro::chan::bounded::<u64>(1);
    let other_ran = Arc::new(AtomicBool::new(false));
    let o = other_ran.clone();
    // The hog keeps the P busy with channel calls that never block (it is its own
    // receiver): only the preemption flag makes it yield to `other`.
    let hog = go!(move || {
        let t = Instant::now();
        let mut n = 0u64;
        while !o.load(Ordering::Relaxed) && t.elapsed() < Duration::from_secs(5) {
            tx.send(n).unwrap();
            n += rx.recv().unwrap();
        }
        t.elapsed()
    });
    let o = other_ran.clone();
    let other = go!(move || o.store(true, Ordering::Relaxed));
    let took = hog.join().unwrap();
    other.join().unwrap();
    assert!(
        took < Duration::from_secs(1),
        "the flagged hog yielded only after {took:?}"
    );
}
