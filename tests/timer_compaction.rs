//! Timer heap compaction drops dead timers, and with a dead `after_func` the
//! user's closure and whatever it owns. That must not happen under the heap lock
//! or a channel's lock: a `recv_timeout` arms its timer while holding its
//! channel's lock, and a compaction there that dropped a closure owning a Sender
//! of that same channel would deadlock on the lock it holds. One P, own binary.

mod common;

use goro::chan::RecvTimeoutError;
use std::time::Duration;

#[test]
fn compaction_drops_user_closures_with_no_lock_held() {
    common::init_procs(1);
    let _w = common::watchdog(Duration::from_secs(20));
    let r = goro::go!(|| {
        let (tx, rx) = goro::chan::bounded::<()>(0);
        let t = goro::time::after_func(Duration::from_secs(3600), move || {
            let _ = tx.try_send(());
        });
        assert!(t.stop());
        drop(t); // the dead heap entry now owns the closure, and with it `tx`
                 // Bring this P's heap to the compaction threshold with live timers, so the
                 // next arm (by `recv_timeout`) compacts.
        let keep: Vec<_> = (0..62)
            .map(|_| goro::time::Timer::new(Duration::from_secs(3600)))
            .collect();
        let r = rx.recv_timeout(Duration::from_millis(5));
        drop(keep);
        r
    })
    .join()
    .unwrap();
    // Compaction dropped the last Sender: the channel closed under the waiter.
    assert_eq!(r, Err(RecvTimeoutError::Closed));
}
