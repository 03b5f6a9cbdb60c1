//! Spawning and joining: many Gs, nested spawns, joins from Gs and from threads,
//! results, panics, ids, Builder settings, counters.

use crate::{common, crowd, no_crowd};

use goro::{go, Builder, JoinHandle};
use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[test]
fn a_million_goroutines_spawned_and_joined() {
    let _c = crowd();
    let _w = common::watchdog(Duration::from_secs(120));
    const N: usize = 1_000_000;
    let sum = go!(|| {
        let handles: Vec<JoinHandle<usize>> = (0..N).map(|i| go!(move || i)).collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum::<usize>()
    })
    .join()
    .unwrap();
    assert_eq!(sum, N * (N - 1) / 2);
}

#[test]
fn join_from_a_plain_thread_and_from_goroutines() {
    let from_thread = go!(|| 7).join().unwrap();
    assert_eq!(from_thread, 7);
    let from_g = go!(|| go!(|| 8).join().unwrap() + 1).join().unwrap();
    assert_eq!(from_g, 9);
    // A G joined by another plain thread.
    let h = go!(|| "hi".to_string());
    let got = std::thread::spawn(move || h.join().unwrap()).join().unwrap();
    assert_eq!(got, "hi");
}

#[test]
fn nested_spawns_build_a_tree() {
    fn tree(depth: u32) -> u64 {
        if depth == 0 {
            return 1;
        }
        let l = go!(move || tree(depth - 1));
        let r = go!(move || tree(depth - 1));
        l.join().unwrap() + r.join().unwrap()
    }
    assert_eq!(go!(|| tree(12)).join().unwrap(), 1 << 12);
}

#[test]
fn panics_are_delivered_by_join_and_do_not_hurt_others() {
    let n = std::hint::black_box(42);
    let h = go!(move || -> u32 { panic!("boom {n}") });
    let err = h.join().unwrap_err();
    assert_eq!(err.downcast_ref::<String>().map(String::as_str), Some("boom 42"));
    let h = go!(|| -> u32 { panic!("static") });
    assert_eq!(h.join().unwrap_err().downcast_ref::<&str>(), Some(&"static"));
    // A detached panicking G: the runtime keeps going.
    drop(go!(|| panic!("detached")));
    let ok: Vec<_> = (0..100).map(|i| go!(move || i * 2)).collect();
    assert_eq!(ok.into_iter().map(|h| h.join().unwrap()).sum::<i32>(), 9900);
}

#[test]
fn panic_message_names_the_goroutine() {
    if common::is_child() {
        let h = go!(Builder::new().name("worker-7"), || panic!("kaput")).unwrap();
        let id = h.id();
        assert!(h.join().is_err());
        println!("CHILD-ID {id}");
        return;
    }
    let out = common::run_child_in(module_path!(), "panic_message_names_the_goroutine", &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "child failed: {stderr}");
    let id = stdout
        .split("CHILD-ID ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .expect("child printed its G id");
    let want = format!("goroutine {id} \"worker-7\" panicked at");
    assert!(stderr.contains(&want), "stderr lacks {want:?}:\n{stderr}");
    assert!(stderr.contains("kaput"), "{stderr}");
}

#[test]
fn ids_are_unique_and_current_reports_them() {
    assert_eq!(goro::current(), None);
    let handles: Vec<_> = (0..1000).map(|_| go!(goro::current)).collect();
    let mut seen = HashSet::new();
    for h in handles {
        let id = h.id();
        assert_eq!(h.join().unwrap(), Some(id));
        assert!(seen.insert(id), "duplicate id {id}");
    }
}

#[test]
fn is_finished_and_detach() {
    let h = go!(|| 5);
    while !h.is_finished() {
        std::thread::yield_now();
    }
    assert_eq!(h.join().unwrap(), 5);
    // Dropping handles detaches: the Gs still run to completion.
    let ran = Arc::new(AtomicUsize::new(0));
    for _ in 0..100 {
        let ran = ran.clone();
        drop(go!(move || ran.fetch_add(1, Ordering::SeqCst)));
    }
    let last = go!(|| ()); // queued after the others on the global queue
    last.join().unwrap();
    while ran.load(Ordering::SeqCst) < 100 {
        goro::yield_now();
    }
}

#[test]
fn builder_rejects_bad_settings_and_applies_good_ones() {
    let e = go!(Builder::new().stack_size(8 << 30), || ()).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    // SAFETY: the goroutine touches no thread-local (it never starts).
    let e = unsafe { Builder::new().name("a\0b").spawn(|| ()) }.unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    // A deep recursion that needs more than the default stack runs with a big one.
    fn depth(n: u32) -> u32 {
        let pad = std::hint::black_box([0u8; 1024]);
        if n == 0 {
            pad[0] as u32
        } else {
            depth(n - 1) + 1 + std::hint::black_box(pad[1]) as u32
        }
    }
    // SAFETY: the goroutine touches no thread-local.
    let h = unsafe { Builder::new().name("deep").stack_size(16 << 20).spawn(|| depth(4000)) }.unwrap();
    assert_eq!(h.join().unwrap(), 4000);
}

#[test]
fn yield_now_on_a_plain_thread_is_harmless() {
    goro::yield_now();
    assert_eq!(goro::current(), None);
}

#[test]
fn counters_add_up() {
    let _c = no_crowd();
    let before = goro::runtime::stats();
    let hs: Vec<_> = (0..500).map(|i| go!(move || i)).collect();
    for h in hs {
        h.join().unwrap();
    }
    let after = goro::runtime::stats();
    assert!(after.spawned >= before.spawned + 500);
    assert!(after.completed >= before.completed + 500);
    assert!(after.context_switches >= before.context_switches + 500);
    assert_eq!(after.procs.len(), goro::runtime::gomaxprocs());
    assert!(goro::runtime::num_goroutine() as u64 <= after.live + 64);
}

/// A goroutine whose stack cannot be mapped does not run: `join` says why and
/// how large the stack was, and the destructors of what its closure captured
/// run as a plain thread's code, so they may wait (a sleep, a channel, a
/// `local!` value whose own destructor waits) or panic without harming the M.
#[test]
fn a_goroutine_without_a_stack_drops_its_closure_as_a_plain_thread() {
    goro::local! { static PARTING: RefCell<Option<WaitsOnDrop>> = const { RefCell::new(None) } }

    /// Waits on a goro sleep and a goro channel when dropped.
    struct WaitsOnDrop(goro::chan::Sender<&'static str>);
    impl Drop for WaitsOnDrop {
        fn drop(&mut self) {
            goro::time::sleep(Duration::from_millis(5));
            let (tx, rx) = goro::chan::bounded(0);
            let h = go!(move || tx.send(()).unwrap());
            rx.recv().unwrap();
            h.join().unwrap();
            self.0.send("dropped").unwrap();
        }
    }
    /// Leaves a goroutine-local value that waits, then waits itself (its
    /// field's drop).
    struct LeavesALocal {
        _waits: WaitsOnDrop,
        tx: goro::chan::Sender<&'static str>,
    }
    impl Drop for LeavesALocal {
        fn drop(&mut self) {
            let tx = self.tx.clone();
            PARTING.with(|p| *p.borrow_mut() = Some(WaitsOnDrop(tx)));
        }
    }
    struct PanicsOnDrop;
    impl Drop for PanicsOnDrop {
        fn drop(&mut self) {
            panic!("a destructor that panics");
        }
    }
    use std::cell::RefCell;

    if common::is_child() {
        let _w = common::watchdog(Duration::from_secs(60));
        goro::runtime::Config::new().procs(2).init().unwrap();
        go!(|| ()).join().unwrap();
        common::limit_address_space(256 << 20);
        let huge = || Builder::new().name("huge").stack_size(1 << 30);
        let (tx, rx) = goro::chan::bounded(8);
        let waits = WaitsOnDrop(tx.clone());
        let leaves = LeavesALocal {
            _waits: WaitsOnDrop(tx.clone()),
            tx: tx.clone(),
        };
        let panics = PanicsOnDrop;
        let joins = [
            go!(huge(), move || drop(waits)).unwrap(),
            go!(huge(), move || drop(leaves)).unwrap(),
            go!(huge(), move || drop(panics)).unwrap(),
        ];
        for h in joins {
            let err = h.join().expect_err("the goroutine cannot have run");
            let msg = err.downcast_ref::<String>().expect("a String payload");
            assert!(
                msg.contains("did not run: cannot map its stack of 1073741824 bytes"),
                "{msg}"
            );
        }
        // One from `waits`, one from `leaves`' field, one from the local.
        let got: Vec<_> = (0..3).map(|_| rx.recv().unwrap()).collect();
        assert_eq!(got, ["dropped"; 3]);
        // The Ms that ran those destructors still run goroutines.
        let sum: u64 = (0..64).map(|i| go!(move || i)).map(|h| h.join().unwrap()).sum();
        assert_eq!(sum, 64 * 63 / 2);
        println!("CHILD-OK");
        return;
    }
    let out = common::run_child_in(
        module_path!(),
        "a_goroutine_without_a_stack_drops_its_closure_as_a_plain_thread",
        &[],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "child failed: {:?}\n{stderr}", out.status);
    assert!(String::from_utf8_lossy(&out.stdout).contains("CHILD-OK"), "{stderr}");
    assert!(stderr.contains("a destructor that panics"), "{stderr}");
}

/// An M whose OS thread cannot be started is a fatal error with Go's status
/// 2, not an abort: here destructors of goroutines that could not start (no
/// room for their stacks) block their Ms for good, each blocked M's P goes to
/// a new M, and the address-space limit then refuses a thread.
#[test]
fn no_thread_for_an_m_is_a_fatal_error_with_status_2() {
    /// Blocks its thread for good when dropped (a plain-thread context).
    struct BlocksForever(goro::chan::Receiver<()>);
    impl Drop for BlocksForever {
        fn drop(&mut self) {
            let _ = self.0.recv();
        }
    }
    if common::is_child() {
        let _w = common::watchdog(Duration::from_secs(60));
        goro::runtime::Config::new().procs(2).init().unwrap();
        go!(|| ()).join().unwrap();
        let (tx, rx) = goro::chan::bounded::<()>(0);
        // Less room than an M's thread stack (std's 2 MiB): the first new M's
        // thread cannot be made, before it could run any code of its own.
        common::limit_address_space(1 << 20);
        let huge = || Builder::new().stack_size(1 << 30);
        let hs: Vec<_> = (0..2000)
            .map(|_| {
                let b = BlocksForever(rx.clone());
                go!(huge(), move || drop(b)).unwrap()
            })
            .collect();
        drop(hs);
        // The sender stays: the destructors block until the process ends.
        let _kept = tx;
        loop {
            std::thread::park();
        }
    }
    let out = common::run_child_in(module_path!(), "no_thread_for_an_m_is_a_fatal_error_with_status_2", &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{:?}\n{stderr}", out.status);
    assert!(
        stderr.contains("fatal error: goro: cannot start an OS thread for M"),
        "{stderr}"
    );
}
