//! The goroutine dump (`runtime::goroutines`, `write_goroutines`) and SIGQUIT:
//! every live G with its name, state in Go's words, creator and call site, and
//! where a parked G is parked; plain threads in goro waits; dumps taken while Gs
//! are woken concurrently lose no wake-up.

use crate::{common, no_crowd, until_state};

use goro::runtime::{goroutines, write_goroutines, GoState, WaitReason};
use std::sync::Arc;
use std::time::Duration;

#[inline(never)]
fn parks_in_recv(rx: goro::chan::Receiver<u8>) -> u8 {
    rx.recv().unwrap_or(0)
}

#[inline(never)]
fn parks_on_mutex(m: Arc<goro::sync::Mutex<()>>) {
    drop(m.lock());
}

#[test]
fn the_dump_lists_every_g_with_state_creator_and_frames() {
    let _c = no_crowd();
    let _w = common::watchdog(Duration::from_secs(60));
    let (tx, rx) = goro::chan::bounded::<u8>(0);
    let receiver = goro::go!(goro::Builder::new().name("receiver"), move || parks_in_recv(rx)).unwrap();
    let m = Arc::new(goro::sync::Mutex::new(()));
    let held = m.lock();
    let m2 = m.clone();
    // A G spawned by a G: its parent is that G.
    let (child_id_tx, child_id_rx) = goro::chan::bounded(1);
    let parent = goro::go!(move || {
        let child = goro::go!(move || parks_on_mutex(m2));
        child_id_tx.send(child.id()).unwrap();
        child.join().unwrap();
    });
    let child_id = child_id_rx.recv().unwrap();
    let sleeper = goro::go!(|| goro::time::sleep(Duration::from_secs(3600)));

    let r = until_state(receiver.id(), GoState::Waiting(WaitReason::ChanRecv));
    assert_eq!(r.name(), Some("receiver"));
    assert_eq!(r.parent(), None, "spawned by a plain thread");
    assert_eq!(r.created_at().file(), "tests/behaviour/goroutine_dump.rs");
    let stack = r.stack().expect("a parked G's frames");
    assert!(stack.contains("parks_in_recv"), "{stack}");
    assert!(
        !stack.contains("goro::runtime") && !stack.contains("corosensei"),
        "{stack}"
    );
    assert!(r.waiting_for().is_some());
    let text = r.to_string();
    assert!(
        text.starts_with(&format!("goroutine {} \"receiver\" [chan receive]:\n", receiver.id())),
        "{text}"
    );
    assert!(text.contains("\ncreated by thread "), "{text}");

    let c = until_state(child_id, GoState::Waiting(WaitReason::SyncMutexLock));
    assert_eq!(c.parent(), Some(parent.id()));
    assert!(c.stack().unwrap_or("").contains("parks_on_mutex"), "{:?}", c.stack());
    assert!(c.to_string().contains(&format!(
        "created by goroutine {} at tests/behaviour/goroutine_dump.rs:",
        parent.id()
    )));
    until_state(parent.id(), GoState::Waiting(WaitReason::Join));

    // A G started by a timer shows where `after_func` was called, and by whom.
    let (af_tx, af_rx) = goro::chan::bounded::<goro::GoId>(1);
    let (hold_tx, hold_rx) = goro::chan::bounded::<()>(0);
    let after_func_line = line!() + 1;
    let _t = goro::time::after_func(Duration::from_millis(1), move || {
        af_tx.send(goro::current().unwrap()).unwrap();
        let _ = hold_rx.recv();
    });
    let af = until_state(af_rx.recv().unwrap(), GoState::Waiting(WaitReason::ChanRecv));
    assert_eq!(af.created_at().file(), "tests/behaviour/goroutine_dump.rs");
    assert_eq!(af.created_at().line(), after_func_line);
    assert_eq!(af.parent(), None);
    drop(hold_tx);
    until_state(sleeper.id(), GoState::Waiting(WaitReason::Sleep));

    // A G asking for a dump sees itself running (not in the blocking call the
    // collection is).
    let me = goro::go!(|| {
        let me = goro::current().unwrap();
        goroutines().into_iter().find(|g| g.id() == me).map(|g| g.state())
    });
    assert_eq!(me.join().unwrap(), Some(GoState::Running));

    // A plain thread in a goro wait is listed as a thread entry.
    let (ttx, trx) = goro::chan::bounded::<u8>(0);
    let t = std::thread::Builder::new()
        .name("plain-waiter".into())
        .spawn(move || trx.recv().unwrap())
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let text = loop {
        let mut out = Vec::new();
        write_goroutines(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        if text.contains("thread \"plain-waiter\" [chan receive]:") {
            break text;
        }
        assert!(std::time::Instant::now() < deadline, "no thread entry:\n{text}");
    };
    assert!(
        text.contains(&format!("goroutine {} \"receiver\" [chan receive]:", receiver.id())),
        "{text}"
    );
    ttx.send(7).unwrap();
    assert_eq!(t.join().unwrap(), 7);

    // Everything still wakes up after being dumped.
    tx.send(9).unwrap();
    assert_eq!(receiver.join().unwrap(), 9);
    drop(held);
    parent.join().unwrap();
    drop(sleeper);
}

/// Dumps taken over and over while Gs wake each other: a dump pins a parked G
/// for a moment, and a waker that meets the pin waits it out; no wake-up is lost.
#[test]
fn dumps_during_ping_pong_lose_no_wake_up() {
    let _c = no_crowd();
    let _w = common::watchdog(Duration::from_secs(120));
    const PAIRS: usize = 16;
    const ROUNDS: u32 = 20_000;
    let hs: Vec<_> = (0..PAIRS)
        .map(|_| {
            let (atx, arx) = goro::chan::bounded::<u32>(0);
            let (btx, brx) = goro::chan::bounded::<u32>(0);
            let echo = goro::go!(move || {
                for v in &arx {
                    btx.send(v + 1).unwrap();
                }
            });
            goro::go!(move || {
                let mut v = 0;
                for _ in 0..ROUNDS {
                    atx.send(v).unwrap();
                    v = brx.recv().unwrap();
                }
                drop(atx);
                echo.join().unwrap();
                v
            })
        })
        .collect();
    let mut dumps = 0;
    while !hs.iter().all(|h| h.is_finished()) {
        let mut sink = Vec::new();
        write_goroutines(&mut sink).unwrap();
        dumps += 1;
    }
    for h in hs {
        assert_eq!(h.join().unwrap(), ROUNDS);
    }
    assert!(dumps > 0);
}

/// SIGQUIT prints the dump and exits with status 2, as Go does.
#[test]
fn sigquit_prints_the_dump_and_exits_2() {
    if common::is_child() {
        let (_tx, rx) = goro::chan::bounded::<u8>(0);
        let h = goro::go!(goro::Builder::new().name("stuck"), move || parks_in_recv(rx)).unwrap();
        until_state(h.id(), GoState::Waiting(WaitReason::ChanRecv));
        // SAFETY: raising a signal at our own process.
        unsafe { libc::raise(libc::SIGQUIT) };
        // Resolving the dump's frames reads the binary's debug info: seconds
        // on a loaded machine, so a wide margin.
        std::thread::sleep(Duration::from_secs(120));
        unreachable!("SIGQUIT must end the process");
    }
    let out = common::run_child_in(module_path!(), "sigquit_prints_the_dump_and_exits_2", &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.starts_with("SIGQUIT: quit\n\n"), "{stderr}");
    assert!(stderr.contains("\"stuck\" [chan receive]:\n"), "{stderr}");
    assert!(stderr.contains("parks_in_recv"), "{stderr}");
}

static HANDLED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn own_handler(_: libc::c_int) {
    HANDLED.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// A SIGQUIT handler the program installed before the runtime started is left
/// in place.
#[test]
fn a_programs_own_sigquit_handler_is_left_alone() {
    if common::is_child() {
        // SAFETY: installing a one-argument handler that only stores a flag.
        unsafe { libc::signal(libc::SIGQUIT, own_handler as *const () as libc::sighandler_t) };
        goro::go!(|| ()).join().unwrap(); // the runtime starts after
                                          // SAFETY: raising a signal at our own process.
        unsafe { libc::raise(libc::SIGQUIT) };
        assert!(HANDLED.load(std::sync::atomic::Ordering::SeqCst));
        println!("CHILD-HANDLED");
        return;
    }
    let out = common::run_child_in(module_path!(), "a_programs_own_sigquit_handler_is_left_alone", &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("CHILD-HANDLED"));
}

/// A G whose stack cannot be mapped says so on stderr, whether its handle is
/// dropped before it runs, after it finished, or kept and joined (the join
/// also returns the message).
#[test]
fn a_g_without_a_stack_says_so() {
    if common::is_child() {
        goro::go!(|| ()).join().unwrap();
        // Address space for little more than what is mapped now: no room for a
        // 1 GiB stack.
        common::limit_address_space(256 << 20);
        let huge = || goro::go!(goro::Builder::new().name("huge").stack_size(1 << 30), || ()).unwrap();
        let mut ids = Vec::new();
        // Dropped at once: it may run before or after the drop.
        for _ in 0..2 {
            let h = huge();
            ids.push(h.id());
            drop(h);
        }
        // Dropped once it finished: its error was stored for a join.
        for _ in 0..2 {
            let h = huge();
            ids.push(h.id());
            while !h.is_finished() {
                std::thread::yield_now();
            }
            drop(h);
        }
        let h = huge();
        ids.push(h.id());
        let err = h.join().unwrap_err();
        let msg = err.downcast_ref::<String>().expect("a String payload");
        assert!(
            msg.starts_with("goro: the goroutine did not run: cannot map its stack"),
            "{msg}"
        );
        // Each counts as finished once its failure is reported.
        while goro::runtime::num_goroutine() > 0 {
            std::thread::yield_now();
        }
        let ids: Vec<String> = ids.iter().map(|id| id.to_string()).collect();
        println!("HUGE-IDS {}", ids.join(" "));
        return;
    }
    let out = common::run_child_in(module_path!(), "a_g_without_a_stack_says_so", &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // libtest's "test ... " starts the line.
    let ids = stdout
        .split_once("HUGE-IDS ")
        .and_then(|(_, rest)| rest.lines().next())
        .unwrap_or_else(|| panic!("no ids:\n{stdout}"));
    assert_eq!(ids.split(' ').count(), 5, "{ids}");
    for id in ids.split(' ') {
        let line = format!("goroutine {id} \"huge\" did not run: cannot map its stack of 1073741824 bytes");
        assert!(stderr.contains(&line), "no {line:?} in:\n{stderr}");
    }
}

/// A dump's frame paths read as its `created by` paths do (from the root the
/// program was built in), whatever the working directory.
#[test]
fn frame_paths_do_not_depend_on_the_working_directory() {
    if common::is_child() {
        std::env::set_current_dir("/").unwrap();
        let (tx, rx) = goro::chan::bounded::<u8>(0);
        let h = goro::go!(move || parks_in_recv(rx));
        let text = until_state(h.id(), GoState::Waiting(WaitReason::ChanRecv)).to_string();
        println!("CHILD-DUMP\n{text}");
        tx.send(1).unwrap();
        h.join().unwrap();
        return;
    }
    let out = common::run_child_in(
        module_path!(),
        "frame_paths_do_not_depend_on_the_working_directory",
        &[],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let here = "tests/behaviour/goroutine_dump.rs:";
    assert!(
        stdout.contains(&format!("\n\t{here}")),
        "a frame's path is not {here}...:\n{stdout}"
    );
    assert!(stdout.contains(&format!(" at {here}")), "{stdout}");
}

/// Spins until `stop` is set, never calling into goro.
#[inline(never)]
fn spins_until(stop: &std::sync::atomic::AtomicBool) {
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        std::hint::spin_loop();
    }
}

/// Sleeps in the kernel inside `goro::blocking`.
#[inline(never)]
fn sleeps_in_blocking(stop: &std::sync::atomic::AtomicBool) {
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        goro::blocking(|| std::thread::sleep(Duration::from_millis(1)));
    }
}

/// A goroutine in a tight loop, and one inside `goro::blocking`, dump with
/// the frames of where they are, through their Ms' threads.
#[test]
fn running_goroutines_dump_with_their_frames() {
    let _c = no_crowd();
    let _w = common::watchdog(Duration::from_secs(120));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let s = stop.clone();
    let spinner = goro::go!(goro::Builder::new().name("spinner"), move || spins_until(&s)).unwrap();
    let s = stop.clone();
    let blocked = goro::go!(goro::Builder::new().name("in-blocking"), move || sleeps_in_blocking(&s)).unwrap();
    until_state(spinner.id(), GoState::Running);
    let found = |id: goro::GoId, func: &str| {
        (0..200).any(|_| {
            goroutines()
                .into_iter()
                .find(|g| g.id() == id)
                .and_then(|g| g.stack().map(|s| s.contains(func)))
                .unwrap_or(false)
        })
    };
    assert!(found(spinner.id(), "spins_until"), "the spinner's frames");
    assert!(found(blocked.id(), "sleeps_in_blocking"), "the blocking call's frames");
    let mut text = Vec::new();
    write_goroutines(&mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    let at = text
        .find("\"spinner\" [running]:\n")
        .expect("the spinner is listed as running");
    let entry = &text[at..text[at..].find("\n\n").map_or(text.len(), |e| at + e)];
    assert!(
        entry.contains("spins_until") && entry.contains("tests/behaviour/goroutine_dump.rs"),
        "{entry}"
    );
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    spinner.join().unwrap();
    blocked.join().unwrap();
}

/// `GODEBUG=dumpsig=0`: no signal, running goroutines dump without frames
/// (and the dump does not wait for them).
#[test]
fn dumpsig_0_dumps_running_goroutines_without_frames() {
    if common::is_child() {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let s = stop.clone();
        let spinner = goro::go!(move || spins_until(&s));
        let g = until_state(spinner.id(), GoState::Running);
        assert_eq!(g.stack(), None);
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        spinner.join().unwrap();
        println!("CHILD-OK");
        return;
    }
    let out = common::run_child_in(
        module_path!(),
        "dumpsig_0_dumps_running_goroutines_without_frames",
        &[("GODEBUG", "dumpsig=0")],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("CHILD-OK"));
}

/// 10,000 parked goroutines (most sharing their frames) dump in a bounded
/// time: each distinct address is resolved once. The bound is for a debug
/// build on a shared host, with a wide margin; release figures are in
/// docs/GUARANTEES.md (`cargo bench --bench dump`).
#[test]
fn ten_thousand_goroutines_dump_in_bounded_time() {
    let _c = crate::crowd();
    let _w = common::watchdog(Duration::from_secs(120));
    let (tx, rx) = goro::chan::bounded::<u8>(0);
    let hs: Vec<_> = (0..10_000)
        .map(|_| {
            let rx = rx.clone();
            goro::go!(move || parks_in_recv(rx))
        })
        .collect();
    while goroutines()
        .iter()
        .filter(|g| g.state() == GoState::Waiting(WaitReason::ChanRecv))
        .count()
        < 10_000
    {
        std::thread::yield_now();
    }
    let mut text = Vec::new();
    write_goroutines(&mut text).unwrap(); // loads the symbols
    let t = std::time::Instant::now();
    text.clear();
    write_goroutines(&mut text).unwrap();
    let took = t.elapsed();
    let text = String::from_utf8(text).unwrap();
    assert!(text.matches("parks_in_recv").count() >= 10_000);
    assert!(took < Duration::from_secs(8), "10,000 goroutines dumped in {took:?}");
    drop(tx);
    for h in hs {
        h.join().unwrap();
    }
}

/// Dumps taken while goroutines switch all the time: a signal that lands in
/// an M's switch into or out of a goroutine finds a half-switched stack,
/// which the handler must not walk (it answers "busy" and is asked again).
#[test]
fn dumps_beside_goroutines_that_switch_all_the_time() {
    if common::is_child() {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut hs = Vec::new();
        for _ in 0..4 {
            let s = stop.clone();
            hs.push(goro::go!(move || while !s.load(std::sync::atomic::Ordering::Relaxed) {
                goro::yield_now()
            }));
        }
        let (tx, rx) = goro::chan::bounded::<u64>(0);
        let (back_tx, back_rx) = goro::chan::bounded::<u64>(0);
        hs.push(goro::go!(move || while let Ok(v) = rx.recv() {
            let _ = back_tx.send(v);
        }));
        let s = stop.clone();
        hs.push(goro::go!(move || {
            let mut i = 0;
            while !s.load(std::sync::atomic::Ordering::Relaxed) {
                tx.send(i).unwrap();
                i = back_rx.recv().unwrap() + 1;
            }
        }));
        for _ in 0..3000 {
            let _ = goroutines();
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        hs.into_iter().for_each(|h| h.join().unwrap());
        println!("CHILD-OK");
        return;
    }
    let out = common::run_child_in(
        module_path!(),
        "dumps_beside_goroutines_that_switch_all_the_time",
        &[("GOMAXPROCS", "2")],
    );
    assert!(
        out.status.success(),
        "{:?} {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("CHILD-OK"));
}

/// The dump signal carrying a value that is not one of goro's requests (the
/// program's own `sigqueue`, or another process's) is ignored, never taken
/// for a pointer; and a program that blocks every signal on its threads
/// before goro starts still gets its running goroutines' frames.
#[test]
fn foreign_dump_signals_are_ignored_and_blocked_masks_still_give_frames() {
    if common::is_child() {
        // SAFETY: a full signal set, blocked on this thread before the
        // runtime's threads (which inherit it) exist.
        unsafe {
            let mut all: libc::sigset_t = std::mem::zeroed();
            libc::sigfillset(&mut all);
            libc::pthread_sigmask(libc::SIG_BLOCK, &all, std::ptr::null_mut());
        }
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let s = stop.clone();
        let spinner = goro::go!(move || spins_until(&s));
        until_state(spinner.id(), GoState::Running);
        let framed = (0..100).any(|_| {
            goroutines()
                .into_iter()
                .find(|g| g.id() == spinner.id())
                .and_then(|g| g.stack().map(|s| s.contains("spins_until")))
                .unwrap_or(false)
        });
        // Values no request has: to every M's thread, through the process.
        for v in [1usize, 42, 64, 0xdead_beef, usize::MAX] {
            let value = libc::sigval {
                sival_ptr: v as *mut libc::c_void,
            };
            // SAFETY: sigqueue with a valid signal and a plain value.
            unsafe { libc::sigqueue(libc::getpid(), libc::SIGRTMIN() + 6, value) };
        }
        let _ = goroutines();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        spinner.join().unwrap();
        println!("CHILD-OK framed={framed}");
        return;
    }
    let out = common::run_child_in(
        module_path!(),
        "foreign_dump_signals_are_ignored_and_blocked_masks_still_give_frames",
        &[("GOMAXPROCS", "2")],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{:?} {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("CHILD-OK framed=true"), "{stdout}");
}
