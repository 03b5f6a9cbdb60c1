//! `goro::tokio::set_handle`: the bridge runs on the runtime it is given, refuses
//! a second one, and says so when that runtime has shut down. One test: the
//! bridge's runtime is a process-wide choice, made once.

use goro::runtime::GoState;
use std::time::Duration;

#[test]
fn the_bridge_runs_on_the_given_runtime_until_it_shuts_down() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("given-runtime")
        .enable_all()
        .build()
        .unwrap();
    goro::tokio::set_handle(rt.handle().clone()).unwrap();
    let err = goro::tokio::set_handle(rt.handle().clone()).unwrap_err();
    assert!(err.to_string().contains("already has a Tokio runtime"), "{err}");

    let name = goro::go!(|| goro::tokio::block_on(async {
        tokio::time::sleep(Duration::from_millis(1)).await;
        std::thread::current().name().map(str::to_string)
    }))
    .join()
    .unwrap();
    assert_eq!(name.as_deref(), Some("given-runtime"));

    // A future still pending when the runtime shuts down, and one started after.
    let pending = goro::go!(|| goro::tokio::block_on(std::future::pending::<()>()));
    let waiting = |g: &goro::runtime::GoroutineInfo| g.id() == pending.id() && matches!(g.state(), GoState::Waiting(_));
    while !goro::runtime::goroutines().iter().any(waiting) {
        std::thread::yield_now();
    }
    rt.shutdown_timeout(Duration::from_secs(5));
    let msg = pending.join().unwrap_err();
    let msg = msg.downcast_ref::<&str>().unwrap();
    assert!(msg.contains("the Tokio runtime shut down"), "{msg}");
    let after = goro::go!(|| goro::tokio::block_on(async { 1 })).join().unwrap_err();
    assert!(after.downcast_ref::<&str>().unwrap().contains("shut down"));
}
