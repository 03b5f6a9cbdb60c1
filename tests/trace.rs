//! The execution trace (`goro::runtime::trace`, `GORO_TRACE`): a trace of an
//! imbalanced workload is valid Chrome Trace Event JSON with one track per P,
//! no two runs overlapping on a P, no event lost, a steal event per steal the
//! counters saw, and a wake-up behind every run that followed a park; a
//! wake-up in the middle of a run is dated there, not at the run's clock
//! reads; a yield at GOMAXPROCS=1 hands over in one clock read; Gs running
//! or blocking through the whole trace are drawn; a run leaves a P a
//! `set_gomaxprocs` took; a run still going when the trace stops ends there; a trace
//! taken while Gs panic, block and migrate is still valid; a G back from a
//! blocking call with no P free is drawn once, on a P; traces taken one after
//! another while Gs run hold only their own events; a spill file that reaches
//! `RLIMIT_FSIZE` is drained into the trace, which goes on, and a `GORO_TRACE`
//! file that reaches it is cut there and reported, neither raising `SIGXFSZ`;
//! `start` as the first goro call under `GORO_TRACE` is
//! refused, not stuck; start and stop are
//! checked. Its own binary: tracing is process-wide, and the steal count is
//! compared with the process's counters. (`GORO_TRACE` through the deadlock
//! report's exit is a scenario of `tests/deadlock_report.rs`, which has no
//! libtest threads to keep the report quiet.)

mod common;

use serde_json::Value;
use std::collections::HashMap;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const PROCS: usize = 4;
/// Where the Ms' tracks begin (the runtime's `trace_json::M_TRACK`).
const M_TRACK: u64 = 10_000;

/// One trace at a time: tests of this binary take turns.
static TRACING: Mutex<()> = Mutex::new(());

/// Takes this binary's turn to trace (tests take turns) and starts the
/// runtime with `PROCS` Ps.
fn one_trace_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    let turn = TRACING.lock().unwrap_or_else(|e| e.into_inner());
    common::init_procs(PROCS);
    turn
}

/// Computes without a switch until sysmon next takes a P from a G that
/// hogs it (this G's, or another's).
fn compute_until_a_retake() {
    let retakes = goro::runtime::stats().preempt_retakes;
    while goro::runtime::stats().preempt_retakes == retakes {
        std::hint::black_box(spin(1_000));
    }
}

/// Cycles GOMAXPROCS through 1..=PROCS, `rounds` times `every` apart, then
/// sets it back to `PROCS`.
fn resize(rounds: usize, every: Duration) {
    for round in 0..rounds {
        goro::runtime::set_gomaxprocs(1 + round % PROCS);
        std::thread::sleep(every);
    }
    goro::runtime::set_gomaxprocs(PROCS);
}

/// A trace written into memory.
#[derive(Clone, Default)]
struct Buf(Arc<Mutex<Vec<u8>>>);

impl Write for Buf {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Traces `f` and returns the trace's events.
fn trace(f: impl FnOnce()) -> Vec<Value> {
    let buf = Buf::default();
    goro::runtime::trace::start(buf.clone()).expect("start");
    f();
    goro::runtime::trace::stop().expect("stop");
    let bytes = buf.0.lock().unwrap().clone();
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Array(events)) => events,
        other => panic!("not a JSON array: {other:?}"),
    }
}

fn spin(n: u64) -> u64 {
    (0..n).fold(0u64, |a, i| std::hint::black_box(a.wrapping_add(i ^ 0x5555)))
}

/// The runs (`X` slices of category `g`) per track, sorted by start.
fn runs_by_track(events: &[Value]) -> HashMap<u64, Vec<&Value>> {
    let mut runs: HashMap<u64, Vec<&Value>> = HashMap::new();
    for e in events.iter().filter(|e| e["ph"] == "X" && e["cat"] == "g") {
        runs.entry(e["tid"].as_u64().unwrap()).or_default().push(e);
    }
    for v in runs.values_mut() {
        v.sort_by(|a, b| a["ts"].as_f64().unwrap().total_cmp(&b["ts"].as_f64().unwrap()));
    }
    runs
}

/// No two runs overlap on any track: a P's, or an M's (the parts of runs
/// after a retake).
fn assert_tracks_do_not_overlap(events: &[Value]) {
    for (tid, runs) in runs_by_track(events) {
        assert_no_overlap(tid, &runs);
    }
}

/// No two of a track's runs (sorted by start) overlap; timestamps are
/// rounded to the ns.
fn assert_no_overlap(tid: u64, runs: &[&Value]) {
    for w in runs.windows(2) {
        let end = w[0]["ts"].as_f64().unwrap() + w[0]["dur"].as_f64().unwrap();
        assert!(
            end <= w[1]["ts"].as_f64().unwrap() + 0.002,
            "overlap on track {tid}: {} / {}",
            w[0],
            w[1]
        );
    }
}

/// No run starts before its G became runnable, and no G runs on two tracks
/// at once.
fn assert_runs_follow_their_wake_ups(events: &[Value]) {
    let mut per_g: HashMap<u64, Vec<(f64, f64)>> = HashMap::new();
    for e in runs_by_track(events).into_values().flatten() {
        let ts = e["ts"].as_f64().unwrap();
        if let Some(ready) = e["args"]["ready_ts"].as_f64() {
            assert!(ready <= ts + 0.002, "a run before its G was runnable: {e}");
        }
        let g = e["args"]["g"].as_u64().unwrap();
        per_g.entry(g).or_default().push((ts, ts + e["dur"].as_f64().unwrap()));
    }
    for (g, mut runs) in per_g {
        runs.sort_by(|a, b| a.0.total_cmp(&b.0));
        for w in runs.windows(2) {
            assert!(
                w[0].1 <= w[1].0 + 0.002,
                "G{g} runs twice at once: {:?} and {:?}",
                w[0],
                w[1]
            );
        }
    }
}

/// Gs that compute briefly and yield, two per P, until `done`: work waiting,
/// so that sysmon takes the Ps of Gs that do not switch.
fn yielders(done: &Arc<std::sync::atomic::AtomicBool>) -> Vec<goro::JoinHandle<()>> {
    (0..2 * PROCS)
        .map(|_| {
            let done = done.clone();
            goro::go!(move || {
                while !done.load(std::sync::atomic::Ordering::SeqCst) {
                    std::hint::black_box(spin(1_000));
                    goro::yield_now();
                }
            })
        })
        .collect()
}

/// No event lost, no track with two runs at once, no run before its wake-up
/// nor a G on two tracks at once.
fn assert_whole_and_consistent(events: &[Value]) {
    assert_eq!(lost(events), 0, "events were lost");
    assert_tracks_do_not_overlap(events);
    assert_runs_follow_their_wake_ups(events);
}

fn lost(events: &[Value]) -> u64 {
    let end = events
        .iter()
        .find(|e| e["name"] == "goro_trace")
        .expect("the trace's closing totals");
    end["args"]["lost"].as_u64().unwrap()
}

#[test]
fn a_trace_of_an_imbalanced_workload_is_consistent() {
    let _one = one_trace_at_a_time();
    let before = goro::runtime::stats().steals;
    let events = trace(|| {
        // Every G spawned from one: the other Ps must steal or take from the
        // global queue to get any; some park on a channel in between.
        goro::go!(|| {
            let (tx, rx) = goro::chan::bounded::<u64>(0);
            let hs: Vec<_> = (0..400)
                .map(|i| {
                    let tx = tx.clone();
                    goro::go!(move || {
                        let v = spin(20_000 + i * 50);
                        if i % 4 == 0 {
                            tx.send(v).unwrap();
                        }
                        v
                    })
                })
                .collect();
            for _ in 0..100 {
                rx.recv().unwrap();
            }
            for h in hs {
                h.join().unwrap();
            }
        })
        .join()
        .unwrap();
    });
    let steals = goro::runtime::stats().steals - before;
    assert_eq!(lost(&events), 0, "events were lost");

    // One named track per P.
    let p_tracks: Vec<u64> = events
        .iter()
        .filter(|e| e["name"] == "thread_name" && e["args"]["name"].as_str().unwrap().starts_with('P'))
        .map(|e| e["tid"].as_u64().unwrap())
        .collect();
    let mut distinct = p_tracks.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), p_tracks.len(), "a P track named twice");
    assert!(distinct.iter().all(|&t| (t as usize) < PROCS), "{distinct:?}");
    let runs = runs_by_track(&events);
    assert!(runs.len() >= 2, "the work did not spread: {:?}", runs.keys());

    assert_tracks_do_not_overlap(&events);

    // A steal event per steal.
    let steal_events = events.iter().filter(|e| e["ph"] == "i" && e["name"] == "steal").count() as u64;
    assert_eq!(steal_events, steals, "steal events vs stats().steals");

    // Every run after a park was caused by a traced wake-up: its flow end
    // matches a flow start at or before it.
    let starts: HashMap<&str, f64> = events
        .iter()
        .filter(|e| e["ph"] == "s")
        .map(|e| (e["id"].as_str().unwrap(), e["ts"].as_f64().unwrap()))
        .collect();
    let ends: HashMap<&str, f64> = events
        .iter()
        .filter(|e| e["ph"] == "f")
        .map(|e| (e["id"].as_str().unwrap(), e["ts"].as_f64().unwrap()))
        .collect();
    let mut per_g: HashMap<u64, Vec<&Value>> = HashMap::new();
    for e in runs.values().flatten() {
        per_g.entry(e["args"]["g"].as_u64().unwrap()).or_default().push(e);
    }
    let mut parks = 0;
    for (g, mut rs) in per_g {
        rs.sort_by(|a, b| a["ts"].as_f64().unwrap().total_cmp(&b["ts"].as_f64().unwrap()));
        for w in rs.windows(2) {
            if w[0]["args"]["end"] != "park" {
                continue;
            }
            parks += 1;
            let next_start = w[1]["ts"].as_f64().unwrap();
            let woken = ends.iter().any(|(id, &ts)| {
                id.starts_with(&format!("{g}."))
                    && (ts - next_start).abs() < 0.002
                    && starts.get(id).is_some_and(|&s| s <= ts + 0.002)
            });
            assert!(woken, "G{g}'s run at {next_start} follows a park without a wake-up");
        }
    }
    assert!(parks > 0, "no G parked and ran again");
}

/// Events of one G switch share a clock read, but a wake-up is dated when it
/// happens: a G that computes for 6 ms, readies another and computes 6 ms
/// more shows the wake-up about 6 ms after its run began and before it ended,
/// not at either end (the reads nearest to it).
#[test]
fn a_wake_up_in_the_middle_of_a_run_is_dated_there() {
    let _one = one_trace_at_a_time();
    let ids = Arc::new(Mutex::new((0, 0)));
    let events = trace(|| {
        let (tx, rx) = goro::chan::bounded::<()>(0);
        let receiver = goro::go!(move || {
            rx.recv().unwrap();
            rx.recv().unwrap();
        });
        let sender = goro::go!(move || {
            // `try_send` on an unbuffered channel succeeds only if the receiver
            // waits. The first may yield; the second is in one run, between
            // two stretches of computing.
            while tx.try_send(()).is_err() {
                goro::yield_now();
            }
            let compute = |ms| {
                let began = std::time::Instant::now();
                while began.elapsed() < Duration::from_millis(ms) {
                    std::hint::black_box(spin(1_000));
                }
            };
            compute(6);
            while tx.try_send(()).is_err() {
                std::hint::black_box(spin(100));
            }
            compute(6);
        });
        *ids.lock().unwrap() = (sender.id().as_u64(), receiver.id().as_u64());
        sender.join().unwrap();
        receiver.join().unwrap();
    });
    assert_eq!(lost(&events), 0, "events were lost");
    let (sender, receiver) = *ids.lock().unwrap();
    let mut woke: Vec<f64> = events
        .iter()
        .filter(|e| e["ph"] == "s" && e["id"].as_str().unwrap().starts_with(&format!("{receiver}.")))
        .map(|e| e["ts"].as_f64().unwrap())
        .collect();
    woke.sort_by(f64::total_cmp);
    assert_eq!(woke.len(), 2, "the receiver's wake-ups: {woke:?}");
    let second = woke[1];
    let runs = runs_by_track(&events);
    let run = runs
        .values()
        .flatten()
        .filter(|e| e["args"]["g"].as_u64() == Some(sender))
        .map(|e| {
            let ts = e["ts"].as_f64().unwrap();
            (ts, ts + e["dur"].as_f64().unwrap())
        })
        .find(|&(from, to)| from <= second && second <= to)
        .unwrap_or_else(|| panic!("no run of the sender holds its wake-up at {second} µs"));
    assert!(
        second - run.0 >= 4_000.0 && run.1 - second >= 4_000.0,
        "the wake-up at {second} µs, in the sender's run {run:?} µs"
    );
}

/// At GOMAXPROCS=1 a G that yields hands over in one clock read: the next
/// run starts at the instant the yielder's ended, though both pass through
/// the global queue's lock (taken at the first try, not a wait). Not every
/// one: the busy P's look at the network every 61 rounds reads anew.
#[test]
fn a_yield_hands_over_in_one_clock_read() {
    if common::is_child() {
        let _w = common::watchdog(Duration::from_secs(60));
        let events = trace(|| {
            let yielders: Vec<_> = (0..2)
                .map(|_| {
                    goro::go!(|| {
                        for _ in 0..2_000 {
                            goro::yield_now();
                        }
                    })
                })
                .collect();
            yielders.into_iter().for_each(|h| h.join().unwrap());
        });
        assert_eq!(lost(&events), 0, "events were lost");
        let runs = runs_by_track(&events);
        let (mut handed, mut abut) = (0, 0);
        for w in runs.values().flat_map(|r| r.windows(2)) {
            if w[0]["args"]["end"] != "yield" {
                continue;
            }
            handed += 1;
            let end = w[0]["ts"].as_f64().unwrap() + w[0]["dur"].as_f64().unwrap();
            if (w[1]["ts"].as_f64().unwrap() - end).abs() <= 0.002 {
                abut += 1;
            }
        }
        assert!(handed >= 3_000, "{handed} runs ended by a yield");
        assert!(
            abut * 10 >= handed * 9,
            "{abut} of {handed} yields handed over in one read"
        );
        return;
    }
    let out = common::run_child_in(
        module_path!(),
        "a_yield_hands_over_in_one_clock_read",
        &[("GOMAXPROCS", "1")],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// A G that runs through the whole trace (started before it, still
/// computing after it) records no event, yet is drawn from the trace's start
/// to its stop; so is one inside `goro::blocking` all along.
#[test]
fn gs_running_and_blocking_through_the_whole_trace_are_drawn() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let _one = one_trace_at_a_time();
    let started = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let (s, d) = (started.clone(), done.clone());
    let spinner = goro::go!(move || {
        s.fetch_add(1, Ordering::SeqCst);
        while !d.load(Ordering::SeqCst) {
            std::hint::black_box(spin(1_000));
        }
    });
    let (s, d) = (started.clone(), done.clone());
    let blocker = goro::go!(move || {
        goro::blocking(|| {
            s.fetch_add(1, Ordering::SeqCst);
            while !d.load(Ordering::SeqCst) {
                std::thread::yield_now();
            }
        })
    });
    while started.load(Ordering::SeqCst) < 2 {
        std::thread::yield_now();
    }
    let events = trace(|| std::thread::sleep(Duration::from_millis(30)));
    done.store(true, Ordering::SeqCst);
    let (spinner_id, blocker_id) = (spinner.id().as_u64(), blocker.id().as_u64());
    spinner.join().unwrap();
    blocker.join().unwrap();
    let slices_of = |g: u64, cat: &str| -> Vec<(f64, f64)> {
        events
            .iter()
            .filter(|e| e["ph"] == "X" && e["cat"] == cat && e["args"]["g"].as_u64() == Some(g))
            .map(|e| (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap()))
            .collect()
    };
    let spins = slices_of(spinner_id, "g");
    assert!(
        spins.iter().any(|&(ts, _)| ts == 0.0),
        "the spinner from the start: {spins:?}"
    );
    let spun: f64 = spins.iter().map(|&(_, dur)| dur).sum();
    assert!(spun >= 25_000.0, "the spinner's runs cover the trace: {spins:?}");
    let blocks = slices_of(blocker_id, "blocking");
    assert!(
        blocks.iter().any(|&(ts, dur)| ts == 0.0 && dur >= 25_000.0),
        "the blocking call through the trace: {blocks:?}"
    );
}

/// `set_gomaxprocs` takes the Ps of Gs that are not switching (a
/// stop-the-world): their runs leave the P there, so no P's track holds two
/// runs at once.
#[test]
fn runs_leave_a_p_that_a_resize_took() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let _one = one_trace_at_a_time();
    let done = Arc::new(AtomicBool::new(false));
    let events = trace(|| {
        let workers: Vec<_> = (0..6)
            .map(|i| {
                let done = done.clone();
                goro::go!(move || {
                    while !done.load(Ordering::SeqCst) {
                        std::hint::black_box(spin(if i % 2 == 0 { 2_000_000 } else { 1_000 }));
                        goro::yield_now();
                    }
                })
            })
            .collect();
        resize(40, Duration::from_millis(2));
        done.store(true, Ordering::SeqCst);
        workers.into_iter().for_each(|h| h.join().unwrap());
    });
    assert_whole_and_consistent(&events);
}

/// Gs looping on short blocking calls while `set_gomaxprocs` changes every
/// 0.7 ms, with an OS thread spinning on every core so that Ms lose their
/// CPU anywhere: a G back from a call is drawn on the P it got back, which
/// no resize can take before its run is recorded there.
#[test]
fn gs_back_from_blocking_calls_are_drawn_on_the_p_they_got() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let _one = one_trace_at_a_time();
    let _w = common::watchdog(Duration::from_secs(120));
    let _spinners = common::cpu_hogs();
    for _ in 0..3 {
        let done = Arc::new(AtomicBool::new(false));
        let events = trace(|| {
            let gs: Vec<_> = (0..2 * PROCS)
                .map(|_| {
                    let done = done.clone();
                    goro::go!(move || {
                        while !done.load(Ordering::Relaxed) {
                            goro::blocking(|| std::hint::black_box(spin(200)));
                            std::hint::black_box(spin(2_000));
                        }
                    })
                })
                .collect();
            resize(200, Duration::from_micros(700));
            done.store(true, Ordering::Relaxed);
            gs.into_iter().for_each(|h| h.join().unwrap());
        });
        assert_whole_and_consistent(&events);
    }
}

/// A future that is ready once its flag is set, waking whoever polled it.
#[derive(Clone, Default)]
struct Flag(Arc<Mutex<(bool, Option<std::task::Waker>)>>);

impl Flag {
    fn set(&self) {
        let mut s = self.0.lock().unwrap();
        s.0 = true;
        if let Some(w) = s.1.take() {
            w.wake();
        }
    }
}

impl std::future::Future for Flag {
    type Output = ();
    fn poll(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        let mut s = self.0.lock().unwrap();
        if std::mem::take(&mut s.0) {
            return std::task::Poll::Ready(());
        }
        s.1 = Some(cx.waker().clone());
        std::task::Poll::Pending
    }
}

/// Hogs that wake a G parked in `block_on` after sysmon took a P (the
/// waker's call is user code, with no preemption check before the ready):
/// each wake-up is drawn inside its waker's run, on the track that run is on
/// at that moment (the P's, or after the retake the M's), never on a P the
/// hog no longer holds.
#[test]
fn a_wake_up_by_a_hog_that_lost_its_p_is_drawn_inside_its_run() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let _one = one_trace_at_a_time();
    let _w = common::watchdog(Duration::from_secs(60));
    let mut hog_ids = Vec::new();
    let mut sleeper_ids = Vec::new();
    let done = Arc::new(AtomicBool::new(false));
    let events = trace(|| {
        let (sleepers, hogs): (Vec<_>, Vec<_>) = (0..PROCS)
            .map(|_| {
                let flag = Flag::default();
                let set = flag.clone();
                let (ack_tx, ack_rx) = goro::chan::bounded::<()>(1);
                let sleeper = goro::go!(move || {
                    for _ in 0..3 {
                        goro::block_on(flag.clone());
                        ack_tx.send(()).unwrap();
                    }
                });
                let hog = goro::go!(move || {
                    for _ in 0..3 {
                        compute_until_a_retake();
                        set.set();
                        ack_rx.recv().unwrap();
                    }
                });
                (sleeper, hog)
            })
            .unzip();
        let yielders = yielders(&done);
        hog_ids = hogs.iter().map(|h| h.id().as_u64()).collect();
        sleeper_ids = sleepers.iter().map(|h| h.id().as_u64()).collect();
        hogs.into_iter().for_each(|h| h.join().unwrap());
        sleepers.into_iter().for_each(|h| h.join().unwrap());
        done.store(true, Ordering::SeqCst);
        yielders.into_iter().for_each(|h| h.join().unwrap());
    });
    assert_eq!(lost(&events), 0, "events were lost");
    let runs = runs_by_track(&events);
    let wake_ups: Vec<_> = events
        .iter()
        .filter(|e| e["ph"] == "s" && sleeper_ids.contains(&e["args"]["g"].as_u64().unwrap()))
        .collect();
    assert!(!wake_ups.is_empty(), "no wake-up of a sleeper in the trace");
    for w in wake_ups {
        let ts = w["ts"].as_f64().unwrap();
        let inside = runs.get(&w["tid"].as_u64().unwrap()).is_some_and(|track| {
            track.iter().any(|r| {
                let start = r["ts"].as_f64().unwrap();
                hog_ids.contains(&r["args"]["g"].as_u64().unwrap())
                    && start <= ts + 0.002
                    && ts <= start + r["dur"].as_f64().unwrap() + 0.002
            })
        });
        assert!(inside, "a hog's wake-up outside its run on that track: {w}");
    }
}

/// A G whose P sysmon took while it computed, and that then enters a
/// blocking call, leaves the P at the retake, not at the call: the P's
/// track, where other Gs run meanwhile, has no overlap, and the G no two
/// runs at once.
#[test]
fn a_hog_that_lost_its_p_and_then_blocks_leaves_the_p_at_the_retake() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let _one = one_trace_at_a_time();
    let _w = common::watchdog(Duration::from_secs(60));
    let done = Arc::new(AtomicBool::new(false));
    let events = trace(|| {
        let hogs: Vec<_> = (0..PROCS)
            .map(|_| {
                goro::go!(|| {
                    for _ in 0..3 {
                        compute_until_a_retake();
                        goro::blocking(|| std::hint::black_box(spin(1_000)));
                    }
                })
            })
            .collect();
        let yielders = yielders(&done);
        hogs.into_iter().for_each(|h| h.join().unwrap());
        done.store(true, Ordering::SeqCst);
        yielders.into_iter().for_each(|h| h.join().unwrap());
    });
    assert_whole_and_consistent(&events);
}

/// A G that sysmon took the P from before the trace began, and that computes
/// through it, is drawn on its M's track, not on the P that others use.
#[test]
fn a_g_without_its_p_when_the_trace_starts_is_drawn_off_it() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let _one = one_trace_at_a_time();
    let _w = common::watchdog(Duration::from_secs(60));
    let (running, done) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
    let retakes = goro::runtime::stats().preempt_retakes;
    let (r, d) = (running.clone(), done.clone());
    let hog = goro::go!(move || {
        r.store(true, Ordering::SeqCst);
        while !d.load(Ordering::SeqCst) {
            std::hint::black_box(spin(1_000));
        }
    });
    while !running.load(Ordering::SeqCst) || goro::runtime::stats().preempt_retakes == retakes {
        std::thread::yield_now();
    }
    let events = trace(|| {
        let yielders: Vec<_> = (0..2 * PROCS)
            .map(|_| {
                goro::go!(|| {
                    for _ in 0..2_000 {
                        goro::yield_now();
                    }
                })
            })
            .collect();
        yielders.into_iter().for_each(|h| h.join().unwrap());
    });
    done.store(true, Ordering::SeqCst);
    let hog_id = hog.id().as_u64();
    hog.join().unwrap();
    assert_tracks_do_not_overlap(&events);
    for (tid, runs) in runs_by_track(&events) {
        assert!(
            tid >= M_TRACK
                || runs
                    .iter()
                    .all(|e| e["args"]["g"].as_u64() != Some(hog_id) || e["ts"].as_f64() != Some(0.0)),
            "the hog drawn on P{tid} from the start"
        );
    }
}

/// A G still running when the trace stops has its run drawn up to the stop,
/// ended `running`.
#[test]
fn a_run_going_on_when_the_trace_stops_ends_there() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let _one = one_trace_at_a_time();
    let started = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicBool::new(false));
    let mut spinner = None;
    let events = trace(|| {
        let (running, done) = (started.clone(), done.clone());
        spinner = Some(goro::go!(move || {
            running.store(true, Ordering::SeqCst);
            while !done.load(Ordering::SeqCst) {
                std::hint::black_box(spin(1_000));
            }
        }));
        while !started.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
    });
    done.store(true, Ordering::SeqCst);
    let spinner = spinner.unwrap();
    let g = spinner.id().as_u64();
    spinner.join().unwrap();
    let runs: Vec<_> = runs_by_track(&events)
        .into_values()
        .flatten()
        .filter(|e| e["args"]["g"].as_u64() == Some(g))
        .collect();
    assert!(
        runs.iter().any(|e| e["args"]["end"] == "running"),
        "the spinner's runs: {runs:?}"
    );
}

#[test]
fn a_trace_taken_while_gs_panic_block_and_migrate_is_valid() {
    let _one = one_trace_at_a_time();
    let events = trace(|| {
        let hs: Vec<_> = (0..32)
            .map(|i| {
                goro::go!(move || {
                    match i % 4 {
                        0 => panic!("traced panic {i}"),
                        1 => goro::blocking(|| std::thread::sleep(Duration::from_millis(2))),
                        2 => goro::time::sleep(Duration::from_millis(1)),
                        _ => {
                            for _ in 0..50 {
                                goro::yield_now();
                            }
                        }
                    }
                    spin(10_000);
                })
            })
            .collect();
        for h in hs {
            let _ = h.join();
        }
    });
    assert_eq!(lost(&events), 0);
    assert!(events.iter().any(|e| e["cat"] == "blocking"), "no blocking-call slice");
    assert!(events.iter().any(|e| e["args"]["end"] == "exit"));
    assert!(events.iter().any(|e| e["args"]["end"] == "yield"));
}

#[test]
fn gs_leaving_blocking_calls_with_every_p_busy_are_drawn_once() {
    let _one = one_trace_at_a_time();
    let events = trace(|| {
        // Yielding hogs keep every P busy, so a G back from a blocking call
        // finds its P handed away and none idle: it is queued, and its next
        // run is recorded by whichever M takes it.
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let hogs: Vec<_> = (0..PROCS)
            .map(|_| {
                let done = done.clone();
                goro::go!(move || {
                    while !done.load(std::sync::atomic::Ordering::Relaxed) {
                        spin(20_000);
                        goro::yield_now();
                    }
                })
            })
            .collect();
        let blockers: Vec<_> = (0..16)
            .map(|_| {
                goro::go!(|| {
                    for _ in 0..5 {
                        goro::blocking(|| std::thread::sleep(Duration::from_millis(1)));
                        spin(5_000);
                    }
                })
            })
            .collect();
        for h in blockers {
            h.join().unwrap();
        }
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        for h in hogs {
            h.join().unwrap();
        }
    });
    assert_eq!(lost(&events), 0);
    assert!(events.iter().filter(|e| e["cat"] == "blocking").count() >= 80);
    let created: HashMap<u64, f64> = events
        .iter()
        .filter(|e| e["ph"] == "i" && e["name"] == "go")
        .map(|e| (e["args"]["g"].as_u64().unwrap(), e["ts"].as_f64().unwrap()))
        .collect();
    let runs = runs_by_track(&events);
    for (tid, rs) in &runs {
        assert!(*tid < 20_000, "a run on the runtime's track: {}", rs[0]);
        for r in rs {
            let g = r["args"]["g"].as_u64().unwrap();
            if let Some(&at) = created.get(&g) {
                let ts = r["ts"].as_f64().unwrap();
                assert!(ts + 0.002 >= at, "G{g} runs at {ts}, before its creation at {at}: {r}");
            }
        }
        assert_no_overlap(*tid, rs);
    }
}

#[test]
fn traces_taken_one_after_another_while_gs_run_hold_only_their_own_events() {
    let _one = one_trace_at_a_time();
    // Ping-pong pairs and blocking calls record events on every M the whole
    // time; each trace must start clean (no event of the one before, whose
    // time would fall before its start) and end complete.
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let pairs: Vec<_> = (0..PROCS)
        .map(|i| {
            let done = done.clone();
            goro::go!(move || {
                let (ping_tx, ping_rx) = goro::chan::bounded::<u64>(0);
                let (pong_tx, pong_rx) = goro::chan::bounded::<u64>(0);
                let echo = goro::go!(move || {
                    for v in ping_rx.iter() {
                        if v % 64 == 0 {
                            goro::blocking(|| std::hint::black_box(v));
                        }
                        pong_tx.send(v).unwrap();
                    }
                });
                let mut n = i as u64;
                while !done.load(std::sync::atomic::Ordering::Relaxed) {
                    ping_tx.send(n).unwrap();
                    n = pong_rx.recv().unwrap() + 1;
                }
                drop(ping_tx);
                echo.join().unwrap();
            })
        })
        .collect();
    for _ in 0..12 {
        let events = trace(|| {
            let hs: Vec<_> = (0..50).map(|i| goro::go!(move || spin(2_000 + i))).collect();
            for h in hs {
                h.join().unwrap();
            }
        });
        assert_eq!(lost(&events), 0);
        let written = events.iter().find(|e| e["name"] == "goro_trace").unwrap()["args"]["events"]
            .as_u64()
            .unwrap();
        assert!(written > 100, "{written} events");
        let creates = events.iter().filter(|e| e["ph"] == "i" && e["name"] == "go").count();
        assert!(creates >= 50, "{creates} `go` instants for 50 spawns");
        for e in events
            .iter()
            .filter(|e| matches!(e["ph"].as_str(), Some("i" | "s" | "f")))
        {
            assert!(e["ts"].as_f64().unwrap() > 0.0, "an event from before the trace: {e}");
        }
        assert_runs_follow_their_wake_ups(&events);
    }
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    for h in pairs {
        h.join().unwrap();
    }
}

#[test]
fn start_as_the_first_goro_call_under_goro_trace_is_refused_not_stuck() {
    if common::is_child() {
        // The runtime is not running yet: `start` starts it, which begins the
        // GORO_TRACE trace.
        let _w = common::watchdog(Duration::from_secs(60));
        let err = goro::runtime::trace::start(std::io::sink()).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists);
        goro::go!(goro::yield_now).join().unwrap();
        return;
    }
    let path = std::env::temp_dir().join(format!("goro-trace-first-{}.json", std::process::id()));
    let out = common::run_child_in(
        module_path!(),
        "start_as_the_first_goro_call_under_goro_trace_is_refused_not_stuck",
        &[("GORO_TRACE", path.to_str().unwrap())],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let bytes = std::fs::read(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    let events: Vec<Value> = serde_json::from_slice(&bytes).expect("the GORO_TRACE trace, closed at exit");
    assert_eq!(lost(&events), 0);
}

/// Files may grow to `bytes` in this process (soft and hard limit), and
/// `SIGXFSZ` keeps its default action, which kills a process that writes past
/// the limit: the runtime's own files must stop short of it.
fn limit_file_size(bytes: u64) {
    let limit = libc::rlimit {
        rlim_cur: bytes,
        rlim_max: bytes,
    };
    // SAFETY: plain calls with a live, aligned `rlimit`.
    unsafe {
        assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &limit), 0);
        assert_eq!(libc::signal(libc::SIGXFSZ, libc::SIG_DFL), libc::SIG_DFL);
    }
}

/// `SIGXFSZ`'s action in this process is still the default.
fn assert_sigxfsz_default() {
    // SAFETY: `sigaction` with a null new action only reads the current one
    // into a zeroed, live `sigaction`.
    let action = unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        assert_eq!(libc::sigaction(libc::SIGXFSZ, std::ptr::null(), &mut old), 0);
        old.sa_sigaction
    };
    assert_eq!(action, libc::SIG_DFL, "the runtime changed SIGXFSZ's action");
}

/// The outcome of a child test: its status by signal, if it was killed.
fn assert_child_passed(out: &std::process::Output) {
    use std::os::unix::process::ExitStatusExt;
    assert!(
        out.status.success(),
        "{:?} (signal {:?}):\n{}{}",
        out.status,
        out.status.signal(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_spill_file_at_the_file_size_limit_is_drained_and_the_trace_goes_on() {
    if common::is_child() {
        // Files may grow to 64 KiB: the spill file fills after 2,048 events.
        limit_file_size(64 << 10);
        common::init_procs(PROCS);
        // Every G makes a `go` instant and an `exit` run: countable, whatever
        // the interleaving. About 4 events each, 60 times the file's room
        // (without the spill drained into the JSON, about 500 of each are
        // missing).
        let gs = 30_000;
        let events = trace(|| {
            let hs: Vec<_> = (0..gs).map(|i| goro::go!(move || spin(i % 64))).collect();
            for h in hs {
                h.join().unwrap();
            }
        });
        assert_eq!(lost(&events), 0);
        let creates = events.iter().filter(|e| e["ph"] == "i" && e["name"] == "go").count() as u64;
        assert_eq!(creates, gs, "`go` instants of {gs} Gs");
        // A G's run ends after its join returns: the last one on each M may
        // end after the trace stopped.
        let exits = events
            .iter()
            .filter(|e| e["cat"] == "g" && e["args"]["end"] == "exit")
            .count() as u64;
        assert!(exits + 2 * PROCS as u64 >= gs, "{exits} `exit` runs of {gs} Gs");
        let runs = runs_by_track(&events);
        for (tid, rs) in &runs {
            assert_no_overlap(*tid, rs);
        }
        assert_sigxfsz_default();
        return;
    }
    let out = common::run_child_in(
        module_path!(),
        "a_spill_file_at_the_file_size_limit_is_drained_and_the_trace_goes_on",
        &[],
    );
    assert_child_passed(&out);
}

#[test]
fn a_goro_trace_file_at_the_file_size_limit_is_cut_there_and_reported() {
    const LIMIT: u64 = 64 << 10;
    if common::is_child() {
        // Before the runtime starts, and with it the GORO_TRACE trace.
        limit_file_size(LIMIT);
        common::init_procs(PROCS);
        // About 4 events a G, 130 bytes of JSON each: 300 Gs make about
        // 150 KB, past the limit, and fill no spill chunk (2,048 events).
        for i in 0..300 {
            goro::go!(move || spin(i)).join().unwrap();
        }
        assert_sigxfsz_default();
        // The trace is written at the exit, after the test returns.
        return;
    }
    let path = std::env::temp_dir().join(format!("goro-trace-fsize-{}.json", std::process::id()));
    let out = common::run_child_in(
        module_path!(),
        "a_goro_trace_file_at_the_file_size_limit_is_cut_there_and_reported",
        &[("GORO_TRACE", path.to_str().unwrap())],
    );
    let written = std::fs::read(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    assert_child_passed(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("goro: writing the trace: File too large"),
        "the exit does not report the cut trace:\n{stderr}"
    );
    assert_eq!(written.len() as u64, LIMIT, "the trace fills the file up to the limit");
    assert!(written.starts_with(b"["));
}

#[test]
fn start_twice_and_stop_without_start_are_errors() {
    let _one = one_trace_at_a_time();
    let err = goro::runtime::trace::stop().unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
    goro::runtime::trace::start(std::io::sink()).unwrap();
    let err = goro::runtime::trace::start(std::io::sink()).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists);
    goro::runtime::trace::stop().unwrap();
    assert!(goro::runtime::trace::stop().is_err());
}

/// A writer that fails: `stop` reports the error.
struct Broken;

impl Write for Broken {
    fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
        Err(std::io::Error::other("disk full"))
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_failing_writer_is_reported_by_start_or_stop() {
    let _one = one_trace_at_a_time();
    assert!(goro::runtime::trace::start(Broken).is_err(), "the first write fails");
    // Nothing is left running: a new trace starts.
    goro::runtime::trace::start(std::io::sink()).unwrap();
    goro::runtime::trace::stop().unwrap();
}
