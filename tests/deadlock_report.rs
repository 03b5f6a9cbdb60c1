//! The deadlock report: fires when nothing can ever run again, and never when
//! something still can. Each scenario runs as a child process of this binary,
//! whose `main` is the program's (no test harness: libtest's threads would be
//! threads goro knows nothing of, which rightly keep the report quiet).
//!
//! `cargo test --test deadlock_report`; `-- NAME` runs the scenarios whose name
//! contains NAME.

use std::io::Read as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CHILD: &str = "GORO_DEADLOCK_SCENARIO";
/// Long enough for the report (two looks 100 ms apart) even on a loaded machine;
/// the scenarios that must not report finish well inside it.
const PATIENCE: Duration = Duration::from_secs(20);
/// How long a scenario with the report turned off is watched before it is
/// killed (it must still be hanging, silently).
const WATCH_OFF: Duration = Duration::from_secs(2);
const FATAL: &str = "fatal error: all goroutines are asleep - deadlock!\n\n";

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
];

fn main() {
    if let Ok(name) = std::env::var(CHILD) {
        let all = DEADLOCKS
            .iter()
            .chain(NOT_DEADLOCKS)
            .chain([&("deadlock_off", main_recv_with_nobody_to_send as Scenario)]);
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

/// A finished child: exit code (None if killed), stdout, stderr.
struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    took: Duration,
}

fn run(name: &str, envs: &[(&str, &str)], limit: Duration) -> Ran {
    let exe = std::env::current_exe().expect("test binary path");
    let mut cmd = Command::new(exe);
    cmd.env(CHILD, name).stdout(Stdio::piped()).stderr(Stdio::piped());
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let started = Instant::now();
    let mut child = cmd.spawn().expect("start child");
    // Drain the pipes on threads so a large dump cannot block the child.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let code = loop {
        if let Some(status) = child.try_wait().expect("wait child") {
            break status.code();
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Ran {
        code,
        took: started.elapsed(),
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
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
