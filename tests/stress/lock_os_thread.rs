//! `lock_os_thread`: a wired G stays on its thread across parks, and its thread
//! runs no other G meanwhile.

use crate::{common, serial, PROCS};

use goro::go;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;
use std::time::Duration;

#[test]
fn a_locked_g_keeps_its_thread_and_the_thread_runs_no_other_g() {
    let _s = serial();
    common::init_procs(PROCS);
    let _w = common::watchdog(Duration::from_secs(60));
    let seen_by_others: Arc<Mutex<HashSet<ThreadId>>> = Arc::default();
    let seen = seen_by_others.clone();
    let (locked_thread, others) = go!(move || {
        goro::runtime::lock_os_thread();
        let me = std::thread::current().id();
        // Other Gs start only now, so any of them on `me` would break the rule.
        let stop = Arc::new(AtomicBool::new(false));
        let others: Vec<_> = (0..8)
            .map(|_| {
                let (seen, stop) = (seen.clone(), stop.clone());
                go!(move || {
                    while !stop.load(Ordering::Relaxed) {
                        seen.lock().unwrap().insert(std::thread::current().id());
                        goro::time::sleep(Duration::from_micros(50));
                    }
                })
            })
            .collect();
        // 1,000 parks: channel round trips with a partner G, plus sleeps.
        let (to_partner, partner_rx) = goro::chan::bounded::<u32>(0);
        let (to_me, my_rx) = goro::chan::bounded::<u32>(0);
        let partner = go!(move || {
            for v in partner_rx.iter() {
                to_me.send(v + 1).unwrap();
            }
        });
        for i in 0..1000u32 {
            if i % 10 == 0 {
                goro::time::sleep(Duration::from_micros(10));
            } else {
                to_partner.send(i).unwrap();
                assert_eq!(my_rx.recv().unwrap(), i + 1);
            }
            assert_eq!(std::thread::current().id(), me, "the locked G moved at park {i}");
        }
        drop(to_partner);
        partner.join().unwrap();
        stop.store(true, Ordering::Relaxed);
        for h in others {
            h.join().unwrap();
        }
        goro::runtime::unlock_os_thread();
        (me, seen.lock().unwrap().clone())
    })
    .join()
    .unwrap();
    assert!(others.len() > 1, "the other Gs ran on {} threads", others.len());
    assert!(
        !others.contains(&locked_thread),
        "another G ran on the locked G's thread"
    );
}

#[test]
fn locks_nest_and_an_exiting_locked_g_takes_its_thread_along() {
    let _s = serial();
    common::init_procs(PROCS);
    let _w = common::watchdog(Duration::from_secs(60));
    let h = go!(|| {
        goro::runtime::lock_os_thread();
        goro::runtime::lock_os_thread();
        let me = std::thread::current().id();
        goro::runtime::unlock_os_thread();
        // Still locked once: parks keep the thread.
        for _ in 0..50 {
            goro::time::sleep(Duration::from_micros(20));
            assert_eq!(std::thread::current().id(), me);
        }
        me // exits locked: the thread goes with it
    });
    let gone = h.join().unwrap();
    // The runtime keeps working, and no G ever runs on the exited thread again.
    let ids: Vec<_> = (0..200)
        .map(|_| go!(|| std::thread::current().id()))
        .map(|h| h.join().unwrap())
        .collect();
    assert!(!ids.contains(&gone));
    // Unbalanced unlocks and calls from plain threads are harmless.
    goro::runtime::unlock_os_thread();
    goro::runtime::lock_os_thread();
    goro::runtime::unlock_os_thread();
    go!(goro::runtime::unlock_os_thread).join().unwrap();
}
