//! The deadlock report: fires when nothing can ever run again, and never when
//! something still can. Each scenario runs as a child process of this binary,
//! whose `main` is the program's (no test harness: libtest's threads would be
//! threads goro knows nothing of, which rightly keep the report quiet).
//!
//! Also SIGQUIT while the process exits (from `main`, a goroutine's
//! `process::exit`, the deadlock report, an earlier SIGQUIT): the process
//! always ends, the exit under way winning with its own status. Each such
//! child writes its `GORO_TRACE` trace into a FIFO that the test reads only
//! when it chooses, so the exit, writing the trace, waits as long as the test
//! needs.
//!
//! `cargo test --test deadlock_report`; `-- NAME` runs the scenarios whose name
//! contains NAME.

use std::io::Read as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::os::unix::io::AsRawFd as _;
use std::os::unix::process::ExitStatusExt as _;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const CHILD: &str = "GORO_DEADLOCK_SCENARIO";
/// Long enough for the report (two looks 100 ms apart) even on a loaded machine;
/// the scenarios that must not report finish well inside it.
const PATIENCE: Duration = Duration::from_secs(20);
/// How long a scenario with the report turned off is watched before it is
/// killed (it must still be hanging, silently).
const WATCH_OFF: Duration = Duration::from_secs(2);
const FATAL: &str = "fatal error: all goroutines are asleep - deadlock!\n\n";
const QUIT: &str = "SIGQUIT: quit\n\n";
/// How long a SIGQUIT scenario may take: the dump resolves its frames from the
/// binary's debug info, seconds on a loaded machine.
const QUIT_PATIENCE: Duration = Duration::from_secs(120);
/// Bytes in the trace FIFO once the exit writes the trace: the trace's start
/// (written when tracing starts) is a few hundred, the exit's first write 64 KiB.
const EXIT_WRITING: usize = 4096;

type Scenario = fn();

/// Scenarios that deadlock: the report must fire.
const DEADLOCKS: &[(&str, Scenario)] = &[
    ("join_a_g_stuck_in_recv", join_a_g_stuck_in_recv),
    ("main_recv_with_nobody_to_send", main_recv_with_nobody_to_send),
    ("two_gs_wait_on_each_other", two_gs_wait_on_each_other),
    (
        "select_forever_holds_the_only_sender",
        select_forever_holds_the_only_sender,
    ),
    ("waitgroup_never_done", waitgroup_never_done),
    ("locked_g_waits_forever", locked_g_waits_forever),
    ("stopped_timers_do_not_delay_it", stopped_timers_do_not_delay_it),
    ("a_thread_lingers_then_exits", a_thread_lingers_then_exits),
    ("unread_ticker_1ms", unread_ticker_1ms),
    ("unread_ticker_1s", unread_ticker_1s),
    ("unread_tick_1ms", unread_tick_1ms),
    ("unread_after_1h", unread_after_1h),
    ("future_whose_waker_was_dropped", future_whose_waker_was_dropped),
];

/// Scenarios that only look stuck for a while: the report must not fire.
const NOT_DEADLOCKS: &[(&str, Scenario)] = &[
    ("plain_thread_sleeps_then_sends", plain_thread_sleeps_then_sends),
    ("g_in_blocking_then_sends", g_in_blocking_then_sends),
    ("timer_pending", timer_pending),
    ("ticker_pending", ticker_pending),
    ("g_waits_on_a_socket", g_waits_on_a_socket),
    ("g_locked_to_its_thread_sleeps", g_locked_to_its_thread_sleeps),
    ("main_computes_while_gs_wait_on_it", main_computes_while_gs_wait_on_it),
    ("plain_threads_condvar", plain_threads_condvar),
    ("foreign_thread_holds_the_sender", foreign_thread_holds_the_sender),
    ("timed_wait_in_main", timed_wait_in_main),
    ("g_receives_from_a_ticker", g_receives_from_a_ticker),
    ("g_selects_on_a_ticker", g_selects_on_a_ticker),
    ("main_receives_from_after", main_receives_from_after),
    ("future_woken_by_a_sleeping_thread", future_woken_by_a_sleeping_thread),
];

/// The test's part of a scenario: starts the child and judges how it ended.
type Expect = fn(&str) -> Result<(), String>;

/// SIGQUIT while the process exits: the child's part, and the test's.
const QUIT_DURING_EXIT: &[(&str, Scenario, Expect)] = &[
    ("quit_while_main_exits", traced_work, quit_while_main_exits),
    (
        "quit_while_a_goroutine_exits",
        exit_3_from_a_goroutine,
        quit_while_a_goroutine_exits,
    ),
    (
        "quit_during_the_deadlock_report",
        traced_deadlock,
        quit_during_the_deadlock_report,
    ),
    ("quit_twice", traced_work_then_read_stdin, quit_twice),
    (
        "quit_just_before_main_returns",
        traced_work_then_read_stdin,
        quit_just_before_main_returns,
    ),
];

fn main() {
    if let Ok(name) = std::env::var(CHILD) {
        let quit_children = QUIT_DURING_EXIT.iter().map(|(n, f, _)| (*n, *f));
        let all = DEADLOCKS
            .iter()
            .chain(NOT_DEADLOCKS)
            .copied()
            .chain([("deadlock_off", main_recv_with_nobody_to_send as Scenario)])
            .chain(quit_children);
        let (_, f) = all.into_iter().find(|(n, _)| *n == name).expect("unknown scenario");
        f();
        println!("SCENARIO-FINISHED");
        return;
    }
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let wanted = |n: &str| filter.as_deref().is_none_or(|f| n.contains(f));
    let mut failed = Vec::new();
    let mut passed = 0;
    for (name, _) in DEADLOCKS.iter().filter(|(n, _)| wanted(n)) {
        check(name, expect_report(name), &mut passed, &mut failed);
    }
    for (name, _) in NOT_DEADLOCKS.iter().filter(|(n, _)| wanted(n)) {
        check(name, expect_no_report(name), &mut passed, &mut failed);
    }
    if wanted("deadlock_off") {
        check("deadlock_off", expect_silent_hang(), &mut passed, &mut failed);
    }
    if wanted("goro_trace_through_the_exit") {
        check(
            "goro_trace_through_the_exit",
            expect_trace_written(),
            &mut passed,
            &mut failed,
        );
    }
    for (name, _, expect) in QUIT_DURING_EXIT.iter().filter(|(n, _, _)| wanted(n)) {
        check(name, expect(name), &mut passed, &mut failed);
    }
    for (name, why) in &failed {
        println!("---- {name} ----\n{why}");
    }
    println!(
        "\ntest result: {}. {passed} passed; {} failed",
        if failed.is_empty() { "ok" } else { "FAILED" },
        failed.len()
    );
    if !failed.is_empty() {
        std::process::exit(1);
    }
}

fn check(name: &str, result: Result<(), String>, passed: &mut usize, failed: &mut Vec<(String, String)>) {
    match result {
        Ok(()) => {
            println!("test {name} ... ok");
            *passed += 1;
        }
        Err(why) => {
            println!("test {name} ... FAILED");
            failed.push((name.to_string(), why));
        }
    }
}

/// A finished child: exit code (None if killed), the signal that ended it
/// (if it did not exit), stdout, stderr.
struct Ran {
    code: Option<i32>,
    signal: Option<i32>,
    stdout: String,
    stderr: String,
    took: Duration,
}

impl Ran {
    /// How it ended, and its stderr.
    fn outcome(&self) -> String {
        match (self.code, self.signal) {
            (Some(code), _) => format!("exit {code} after {:?}\n{}", self.took, self.stderr),
            (None, Some(sig)) => format!("signal {sig} after {:?}\n{}", self.took, self.stderr),
            (None, None) => format!("still running after {:?}: killed\n{}", self.took, self.stderr),
        }
    }
}

fn run(name: &str, envs: &[(&str, &str)], limit: Duration) -> Ran {
    Watched::spawn(name, envs, limit).finish()
}

fn expect_report(name: &str) -> Result<(), String> {
    let r = run(name, &[], PATIENCE);
    if r.code != Some(2) || !r.stderr.starts_with(FATAL) {
        return Err(format!(
            "expected the report and exit 2; got {:?} after {:?}\n{}",
            r.code, r.took, r.stderr
        ));
    }
    if !r.stderr.contains("\ngoroutine ") && !r.stderr.contains("\nthread \"main\" [") {
        return Err(format!("the report has no dump:\n{}", r.stderr));
    }
    if !r.stderr.contains("thread \"main\" [") {
        return Err(format!("the dump does not list main's wait:\n{}", r.stderr));
    }
    Ok(())
}

/// `GORO_TRACE` traces a run that ends in the deadlock report: the trace is
/// written out at its exit and parses, with the G that parked in it.
fn expect_trace_written() -> Result<(), String> {
    let path = std::env::temp_dir().join(format!("goro-deadlock-trace-{}.json", std::process::id()));
    let r = run(
        "join_a_g_stuck_in_recv",
        &[("GORO_TRACE", path.to_str().unwrap())],
        PATIENCE,
    );
    let bytes = std::fs::read(&path).map_err(|e| format!("no trace file: {e}"));
    let _ = std::fs::remove_file(&path);
    if r.code != Some(2) {
        return Err(format!("expected exit 2, got {:?}\n{}", r.code, r.stderr));
    }
    let events: Vec<serde_json::Value> = serde_json::from_slice(&bytes?).map_err(|e| format!("not JSON: {e}"))?;
    let parked = events
        .iter()
        .any(|e| e["cat"] == "g" && e["args"]["end"] == "park" && e["args"]["reason"] == "chan receive");
    let closed = events
        .iter()
        .any(|e| e["name"] == "goro_trace" && e["args"]["lost"] == 0);
    if !parked || !closed {
        return Err(format!(
            "the trace lacks the parked G or its totals: {} events",
            events.len()
        ));
    }
    Ok(())
}

fn expect_no_report(name: &str) -> Result<(), String> {
    let r = run(name, &[], PATIENCE);
    if r.code != Some(0) || !r.stdout.contains("SCENARIO-FINISHED") || r.stderr.contains("fatal error") {
        return Err(format!(
            "expected a normal exit; got {:?} after {:?}\nstderr:\n{}",
            r.code, r.took, r.stderr
        ));
    }
    Ok(())
}

fn expect_silent_hang() -> Result<(), String> {
    let r = run("deadlock_off", &[("GODEBUG", "deadlock=0")], WATCH_OFF);
    if r.code.is_some() || r.stderr.contains("fatal error") {
        return Err(format!(
            "GODEBUG=deadlock=0: expected a silent hang; got {:?}\n{}",
            r.code, r.stderr
        ));
    }
    Ok(())
}

// ---- scenarios that deadlock ----

fn join_a_g_stuck_in_recv() {
    let (_tx, rx) = goro::chan::bounded::<u32>(0);
    let h = goro::go!(goro::Builder::new().name("worker-1"), move || rx.recv().unwrap()).unwrap();
    h.join().unwrap();
}

fn main_recv_with_nobody_to_send() {
    let (tx, rx) = goro::chan::bounded::<u32>(0);
    let _kept = tx; // a sender exists, but nobody will ever use it
    rx.recv().unwrap();
}

fn two_gs_wait_on_each_other() {
    let (atx, arx) = goro::chan::bounded::<u32>(0);
    let (btx, brx) = goro::chan::bounded::<u32>(0);
    let a = goro::go!(move || atx.send(brx.recv().unwrap()).unwrap());
    let b = goro::go!(move || btx.send(arx.recv().unwrap()).unwrap());
    a.join().unwrap();
    b.join().unwrap();
}

fn select_forever_holds_the_only_sender() {
    let (tx, rx) = goro::chan::bounded::<u32>(0);
    goro::go!(move || {
        let _only_sender = tx;
        goro::select! {}
    });
    rx.recv().unwrap();
}

fn waitgroup_never_done() {
    let wg = goro::sync::WaitGroup::new();
    let (_tx, rx) = goro::chan::bounded::<u32>(0);
    wg.go(move || {
        rx.recv().unwrap();
    });
    wg.wait();
}

fn locked_g_waits_forever() {
    let (_tx, rx) = goro::chan::bounded::<u32>(0);
    goro::go!(move || {
        goro::runtime::lock_os_thread();
        rx.recv().unwrap()
    })
    .join()
    .unwrap();
}

fn stopped_timers_do_not_delay_it() {
    // Stopped, superseded and abandoned timers stay in the heap until their
    // deadline: they must not count as pending.
    let t = goro::time::Timer::new(Duration::from_secs(3600));
    assert!(t.stop());
    let tick = goro::time::Ticker::new(Duration::from_secs(3600));
    tick.stop();
    let (_tx, rx) = goro::chan::bounded::<u32>(0);
    goro::select! {
        recv(goro::time::after(Duration::from_millis(1))) -> _ => {},
        recv(goro::time::after(Duration::from_secs(3600))) -> _ => {},
    }
    rx.recv().unwrap();
}

fn a_thread_lingers_then_exits() {
    // A thread goro does not know keeps the report back while it lives; after
    // it exits, the report comes without any further goro event.
    let (tx, rx) = goro::chan::bounded::<u32>(1);
    let _kept = tx.clone(); // the channel stays open: nobody will send again
    std::thread::spawn(move || {
        tx.send(1).unwrap();
        std::thread::sleep(Duration::from_millis(300));
    });
    rx.recv().unwrap();
    rx.recv().unwrap();
}

// A timer or ticker channel nobody waits on wakes no one when it fires (Go
// 1.23's timer channels): holding one unread does not keep the report away,
// however often it fires.

fn unread_ticker_1ms() {
    let (_tx, rx) = goro::chan::bounded::<u32>(0);
    goro::go!(move || {
        let ticker = goro::time::Ticker::new(Duration::from_millis(1));
        // Read for a while, each way a receive can wait, then stop reading.
        ticker.receiver().recv().unwrap();
        ticker.receiver().recv_timeout(Duration::from_secs(3600)).unwrap();
        goro::select! {
            recv(ticker.receiver()) -> _ => {},
            recv(rx) -> _ => unreachable!(),
        }
        rx.recv().unwrap()
    })
    .join()
    .unwrap();
}

fn unread_ticker_1s() {
    let (_tx, rx) = goro::chan::bounded::<u32>(0);
    goro::go!(move || {
        let _ticker = goro::time::Ticker::new(Duration::from_secs(1));
        rx.recv().unwrap()
    })
    .join()
    .unwrap();
}

fn unread_tick_1ms() {
    let (_tx, rx) = goro::chan::bounded::<u32>(0);
    goro::go!(move || {
        let _ticks = goro::time::tick(Duration::from_millis(1));
        rx.recv().unwrap()
    })
    .join()
    .unwrap();
}

fn unread_after_1h() {
    let (_tx, rx) = goro::chan::bounded::<u32>(0);
    let _timeout = goro::time::after(Duration::from_secs(3600));
    rx.recv().unwrap();
}

// ---- scenarios that only look stuck ----

const WHILE: Duration = Duration::from_millis(400);

fn plain_thread_sleeps_then_sends() {
    let (tx, rx) = goro::chan::bounded::<u32>(0);
    std::thread::spawn(move || {
        std::thread::sleep(WHILE);
        tx.send(1).unwrap();
    });
    rx.recv().unwrap();
}

fn g_in_blocking_then_sends() {
    let (tx, rx) = goro::chan::bounded::<u32>(0);
    goro::go!(move || {
        goro::blocking(|| std::thread::sleep(WHILE));
        tx.send(1).unwrap();
    });
    rx.recv().unwrap();
}

fn timer_pending() {
    let (tx, rx) = goro::chan::bounded::<u32>(0);
    goro::go!(move || {
        goro::time::sleep(WHILE);
        tx.send(1).unwrap();
    });
    rx.recv().unwrap();
}

fn ticker_pending() {
    let ticks = goro::time::tick(WHILE);
    ticks.recv().unwrap();
    ticks.recv().unwrap();
}

fn g_waits_on_a_socket() {
    let sock = goro::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = sock.local_addr().unwrap().port();
    // Another process sends, later: meanwhile no thread of ours can act.
    let mut sender = Command::new("bash")
        .arg("-c")
        .arg(format!("sleep 0.4; echo hi > /dev/udp/127.0.0.1/{port}"))
        .spawn()
        .expect("bash");
    let h = goro::go!(move || {
        let mut buf = [0u8; 16];
        sock.recv_from(&mut buf).unwrap().0
    });
    assert!(h.join().unwrap() > 0);
    sender.wait().unwrap();
}

fn g_locked_to_its_thread_sleeps() {
    let (tx, rx) = goro::chan::bounded::<u32>(0);
    goro::go!(move || {
        goro::runtime::lock_os_thread();
        goro::time::sleep(WHILE);
        tx.send(1).unwrap();
    });
    rx.recv().unwrap();
}

fn main_computes_while_gs_wait_on_it() {
    let (tx, rx) = goro::chan::bounded::<u64>(0);
    let hs: Vec<_> = (0..4)
        .map(|_| {
            let rx = rx.clone();
            goro::go!(move || rx.recv().unwrap())
        })
        .collect();
    let until = Instant::now() + WHILE;
    let mut x = 1u64;
    while Instant::now() < until {
        x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
    }
    for _ in 0..4 {
        tx.send(x).unwrap();
    }
    hs.into_iter().for_each(|h| assert_eq!(h.join().unwrap(), x));
}

fn plain_threads_condvar() {
    let (tx, rx) = goro::chan::bounded::<u32>(0);
    let pair = std::sync::Arc::new((std::sync::Mutex::new(false), std::sync::Condvar::new()));
    let p = pair.clone();
    std::thread::spawn(move || {
        let (lock, cv) = &*p;
        let mut ready = lock.lock().unwrap();
        while !*ready {
            ready = cv.wait(ready).unwrap();
        }
        tx.send(1).unwrap();
    });
    std::thread::spawn(move || {
        std::thread::sleep(WHILE);
        *pair.0.lock().unwrap() = true;
        pair.1.notify_one();
    });
    rx.recv().unwrap();
}

fn foreign_thread_holds_the_sender() {
    let (tx, rx) = goro::chan::bounded::<u32>(0);
    std::thread::spawn(move || loop {
        std::thread::sleep(WHILE);
        if tx.try_send(1).is_ok() {
            return;
        }
    });
    goro::go!(move || rx.recv().unwrap()).join().unwrap();
}

fn timed_wait_in_main() {
    let (_tx, rx) = goro::chan::bounded::<u32>(0);
    assert!(rx.recv_timeout(WHILE).is_err());
}

fn g_receives_from_a_ticker() {
    goro::go!(|| {
        let ticker = goro::time::Ticker::new(WHILE);
        ticker.receiver().recv().unwrap();
        ticker.receiver().recv_timeout(Duration::from_secs(3600)).unwrap();
    })
    .join()
    .unwrap();
}

fn g_selects_on_a_ticker() {
    let (_tx, rx) = goro::chan::bounded::<u32>(0);
    goro::go!(move || {
        let ticker = goro::time::Ticker::new(WHILE);
        for _ in 0..2 {
            goro::select! {
                recv(ticker.receiver()) -> _ => {},
                recv(rx) -> _ => unreachable!(),
            }
        }
    })
    .join()
    .unwrap();
}

fn main_receives_from_after() {
    goro::time::after(WHILE).recv().unwrap();
    let (_tx, rx) = goro::chan::bounded::<u32>(0);
    goro::select! {
        recv(goro::time::after(WHILE)) -> _ => {},
        recv(rx) -> _ => unreachable!(),
    }
}

/// Pending on its first poll, having handed its waker to `keep`; ready after.
struct HandsOverItsWaker<K>(Option<K>);

impl<K: FnOnce(std::task::Waker) + Unpin> std::future::Future for HandsOverItsWaker<K> {
    type Output = ();
    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        match self.0.take() {
            Some(keep) => {
                keep(cx.waker().clone());
                std::task::Poll::Pending
            }
            None => std::task::Poll::Ready(()),
        }
    }
}

/// Nobody holds the future's waker any more: nothing can ever wake the G.
fn future_whose_waker_was_dropped() {
    goro::go!(|| goro::block_on(HandsOverItsWaker(Some(drop))))
        .join()
        .unwrap();
}

/// The waker is held by a thread goro does not know, asleep: it may wake it.
fn future_woken_by_a_sleeping_thread() {
    goro::go!(|| {
        goro::block_on(HandsOverItsWaker(Some(|w: std::task::Waker| {
            std::thread::spawn(move || {
                std::thread::sleep(WHILE);
                w.wake();
            });
        })))
    })
    .join()
    .unwrap();
}

// ---- SIGQUIT while the process exits ----

/// Goroutines switch enough for a trace of megabytes (its JSON is written
/// at the exit), then one stays parked for good, the dump's last goroutine;
/// the channel stays open, so this is no deadlock.
fn traced_work() {
    let hs: Vec<_> = (0..4)
        .map(|_| {
            let (atx, arx) = goro::chan::bounded::<u32>(0);
            let (btx, brx) = goro::chan::bounded::<u32>(0);
            goro::go!(move || {
                for v in &arx {
                    btx.send(v + 1).unwrap();
                }
            });
            goro::go!(move || {
                let mut v = 0;
                for _ in 0..500 {
                    atx.send(v).unwrap();
                    v = brx.recv().unwrap();
                }
                v
            })
        })
        .collect();
    for h in hs {
        assert_eq!(h.join().unwrap(), 500);
    }
    let (tx, rx) = goro::chan::bounded::<u32>(0);
    std::mem::forget(tx);
    goro::go!(goro::Builder::new().name("parked-for-good"), move || rx.recv()).unwrap();
}

fn exit_3_from_a_goroutine() {
    traced_work();
    println!("EXITING");
    goro::go!(|| std::process::exit(3)).join().unwrap();
}

fn traced_deadlock() {
    traced_work();
    main_recv_with_nobody_to_send();
}

/// Main waits outside goro (no deadlock report) until the test ends it.
fn traced_work_then_read_stdin() {
    traced_work();
    println!("READY");
    let _ = std::io::stdin().read_line(&mut String::new());
}

/// The dump lists the parked goroutine with where it was created.
fn dump_complete(stderr: &str) -> bool {
    stderr
        .split_once("\"parked-for-good\" [")
        .is_some_and(|(_, rest)| rest.contains("\ncreated by "))
}

/// `main` returns; SIGQUIT comes while the exit writes the trace. The dump
/// is printed, the exit's own work goes on to its end (it writes to stderr
/// that the trace's reader went away), then the process ends with SIGQUIT's
/// status 2.
fn quit_while_main_exits(name: &str) -> Result<(), String> {
    let mut w = Watched::traced(name)?;
    w.until("main returned and the exit writes the trace", |w| {
        w.stdout().contains("SCENARIO-FINISHED") && w.trace_pending() >= EXIT_WRITING
    })?;
    w.quit();
    w.until("the dump", |w| w.stderr().contains(QUIT))?;
    w.close_trace();
    let r = w.finish();
    if r.code != Some(2) || !r.stderr.starts_with(QUIT) || !dump_complete(&r.stderr) {
        return Err(format!("expected the dump, then exit 2; got {}", r.outcome()));
    }
    if !r.stderr.contains("goro: writing the trace: ") {
        return Err(format!("the exit did not report the trace's error:\n{}", r.stderr));
    }
    Ok(())
}

/// A goroutine calls `process::exit(3)`; SIGQUIT comes while that exit writes
/// the trace. The dump is printed, the trace written whole, and the process
/// ends with SIGQUIT's status 2.
fn quit_while_a_goroutine_exits(name: &str) -> Result<(), String> {
    let mut w = Watched::traced(name)?;
    w.until("the goroutine's exit writes the trace", |w| {
        w.stdout().contains("EXITING") && w.trace_pending() >= EXIT_WRITING
    })?;
    w.quit();
    w.until("the dump", |w| dump_complete(&w.stderr()))?;
    let trace = w.drain_trace();
    let r = w.finish();
    if r.code != Some(2) || !r.stderr.starts_with(QUIT) {
        return Err(format!("expected the dump, then exit 2; got {}", r.outcome()));
    }
    whole_trace(trace)
}

/// SIGQUIT while the deadlock report's exit writes the trace: that exit ends
/// the process with 2, the trace whole, and no second dump.
fn quit_during_the_deadlock_report(name: &str) -> Result<(), String> {
    let mut w = Watched::traced(name)?;
    w.until("the report's exit writes the trace", |w| {
        w.stderr().starts_with(FATAL) && w.trace_pending() >= EXIT_WRITING
    })?;
    w.quit();
    w.until("SIGQUIT delivered", |w| !w.quit_pending())?;
    let trace = w.drain_trace();
    let r = w.finish();
    if r.code != Some(2) || !r.stderr.starts_with(FATAL) || r.stderr.contains(QUIT) {
        return Err(format!("expected the report alone, then exit 2; got {}", r.outcome()));
    }
    whole_trace(trace)
}

/// A second SIGQUIT while the first one's exit writes the trace: that exit
/// ends the process with 2, the trace whole, after one dump.
fn quit_twice(name: &str) -> Result<(), String> {
    let mut w = Watched::traced(name)?;
    w.until("main waits on stdin", |w| w.stdout().contains("READY"))?;
    w.quit();
    w.until("the first SIGQUIT's exit writes the trace", |w| {
        w.stderr().contains(QUIT) && w.trace_pending() >= EXIT_WRITING
    })?;
    w.quit();
    w.until("the second SIGQUIT delivered", |w| !w.quit_pending())?;
    let trace = w.drain_trace();
    let r = w.finish();
    if r.code != Some(2) || r.stderr.matches(QUIT).count() != 1 || !dump_complete(&r.stderr) {
        return Err(format!("expected one dump, then exit 2; got {}", r.outcome()));
    }
    whole_trace(trace)
}

/// SIGQUIT, then `main` returns at once, while the dump is being made: the
/// exit waits for the dump and the process ends with 2 (no trace here).
fn quit_just_before_main_returns(name: &str) -> Result<(), String> {
    let mut w = Watched::spawn(name, &[], QUIT_PATIENCE);
    w.until("main waits on stdin", |w| w.stdout().contains("READY"))?;
    w.quit();
    w.until("SIGQUIT delivered", |w| !w.quit_pending())?;
    w.child.stdin = None; // main returns
    let r = w.finish();
    if r.code != Some(2) || !r.stderr.starts_with(QUIT) || !dump_complete(&r.stderr) {
        return Err(format!("expected the dump, then exit 2; got {}", r.outcome()));
    }
    Ok(())
}

/// The trace read from the FIFO parses and ends with its totals.
fn whole_trace(trace: JoinHandle<Vec<u8>>) -> Result<(), String> {
    let bytes = trace.join().map_err(|_| "the trace reader panicked".to_string())?;
    let events: Vec<serde_json::Value> = serde_json::from_slice(&bytes)
        .map_err(|e| format!("the trace ({} bytes) is not whole JSON: {e}", bytes.len()))?;
    if !events.last().is_some_and(|e| e["name"] == "goro_trace") {
        return Err(format!("the trace lacks its totals: {} events", events.len()));
    }
    Ok(())
}

/// A running child, its stdout and stderr gathered as they come (so a large
/// dump cannot block it), its stdin held open; killed if still running past
/// its limit or when dropped. A traced one writes its `GORO_TRACE` trace into
/// a FIFO whose read end the test holds: until the test reads, the child's
/// exit waits in the trace's write.
struct Watched {
    child: Child,
    out: Arc<Mutex<Vec<u8>>>,
    err: Arc<Mutex<Vec<u8>>>,
    readers: Vec<JoinHandle<()>>,
    /// The FIFO's path and read end (until drained or closed).
    fifo: Option<PathBuf>,
    trace: Option<std::fs::File>,
    started: Instant,
    limit: Duration,
}

impl Watched {
    fn spawn(name: &str, envs: &[(&str, &str)], limit: Duration) -> Watched {
        let mut cmd = Command::new(std::env::current_exe().expect("test binary path"));
        cmd.env(CHILD, name)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in envs {
            cmd.env(k, v);
        }
        let started = Instant::now();
        let mut child = cmd.spawn().expect("start child");
        let gather = |mut from: Box<dyn std::io::Read + Send>, into: Arc<Mutex<Vec<u8>>>| {
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n @ 1..) = from.read(&mut buf) {
                    into.lock().unwrap().extend_from_slice(&buf[..n]);
                }
            })
        };
        let (out, err) = (Arc::default(), Arc::default());
        let readers = vec![
            gather(Box::new(child.stdout.take().unwrap()), Arc::clone(&out)),
            gather(Box::new(child.stderr.take().unwrap()), Arc::clone(&err)),
        ];
        Watched {
            child,
            out,
            err,
            readers,
            fifo: None,
            trace: None,
            started,
            limit,
        }
    }

    /// Scenario `name`, tracing into a FIFO, within [`QUIT_PATIENCE`].
    fn traced(name: &str) -> Result<Watched, String> {
        let fifo = std::env::temp_dir().join(format!("goro-quit-{}-{name}.fifo", std::process::id()));
        let _ = std::fs::remove_file(&fifo);
        let c_path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        if unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) } != 0 {
            return Err(format!("mkfifo: {}", std::io::Error::last_os_error()));
        }
        // Non-blocking: the open returns with no writer yet, and the child's
        // open for writing then finds a reader.
        let trace = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&fifo)
            .map_err(|e| format!("open the FIFO: {e}"))?;
        let mut w = Watched::spawn(name, &[("GORO_TRACE", fifo.to_str().unwrap())], QUIT_PATIENCE);
        w.fifo = Some(fifo);
        w.trace = Some(trace);
        Ok(w)
    }

    fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.out.lock().unwrap()).into_owned()
    }

    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.err.lock().unwrap()).into_owned()
    }

    /// Waits until `cond` holds; an error if the child ends first or the limit
    /// runs out.
    fn until(&mut self, what: &str, cond: impl Fn(&Watched) -> bool) -> Result<(), String> {
        loop {
            if cond(self) {
                return Ok(());
            }
            if let Some(status) = self.child.try_wait().expect("wait child") {
                return Err(format!(
                    "the child ended ({status}) before {what}\nstderr:\n{}",
                    self.stderr()
                ));
            }
            if self.started.elapsed() > self.limit {
                return Err(format!("no {what} after {:?}\nstderr:\n{}", self.limit, self.stderr()));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Bytes written to the trace FIFO and not read.
    fn trace_pending(&self) -> usize {
        let Some(trace) = &self.trace else { return 0 };
        let mut n: libc::c_int = 0;
        // SAFETY: FIONREAD on an open pipe writes one int.
        unsafe { libc::ioctl(trace.as_raw_fd(), libc::FIONREAD, &mut n) };
        usize::try_from(n).unwrap_or(0)
    }

    fn quit(&self) {
        // SAFETY: signalling our own child, which has not been waited for.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGQUIT) };
    }

    /// A SIGQUIT sent to the process is still pending: no thread took it yet.
    fn quit_pending(&self) -> bool {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("ShdPnd:"))
            .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
            .is_some_and(|mask| mask & (1 << (libc::SIGQUIT - 1)) != 0)
    }

    /// Reads the trace to its end, on a thread: the child's exit goes on.
    fn drain_trace(&mut self) -> JoinHandle<Vec<u8>> {
        let mut trace = self.trace.take().expect("the trace is still held");
        // SAFETY: clearing O_NONBLOCK on a descriptor we own.
        unsafe { libc::fcntl(trace.as_raw_fd(), libc::F_SETFL, 0) };
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = trace.read_to_end(&mut bytes);
            bytes
        })
    }

    /// Closes the trace's read end: the child's writes fail from here on.
    fn close_trace(&mut self) {
        self.trace = None;
    }

    /// Waits for the child to end, killing it past the limit.
    fn finish(mut self) -> Ran {
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("wait child") {
                break Some(status);
            }
            if self.started.elapsed() > self.limit {
                break None;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        self.end();
        Ran {
            code: status.and_then(|s| s.code()),
            signal: status.and_then(|s| s.signal()),
            took: self.started.elapsed(),
            stdout: self.stdout(),
            stderr: self.stderr(),
        }
    }

    /// Kills the child if it still runs, and collects the rest of its output.
    fn end(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.child.stdin = None;
        for r in self.readers.drain(..) {
            let _ = r.join();
        }
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        self.end();
        if let Some(fifo) = &self.fifo {
            let _ = std::fs::remove_file(fifo);
        }
    }
}
