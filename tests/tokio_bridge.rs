//! The `tokio` feature: goroutines run Tokio futures through `goro::tokio::block_on`
//! (timers by the ten thousand, panics, the lazily started runtime), Tokio tasks
//! await goroutines and goro channels (with `tokio::select!` cancelling receive
//! futures), and `goro::block_on` refuses a Tokio worker. Its own binary: the
//! bridge's runtime is a process-wide choice (`set_handle` is in tokio_handle.rs).

mod common;

use common::watchdog;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").unwrap().count()
}

fn tokio_rt(workers: usize) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn ten_thousand_goroutines_await_tokio_timers_through_the_bridge() {
    let _w = watchdog(Duration::from_secs(120));
    let on_bridge = Arc::new(AtomicUsize::new(0));
    let hs: Vec<_> = (0..10_000)
        .map(|i| {
            let on_bridge = on_bridge.clone();
            goro::go!(move || {
                goro::tokio::block_on(async move {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    if std::thread::current().name() == Some("goro-tokio") {
                        on_bridge.fetch_add(1, Ordering::Relaxed);
                    }
                    i
                })
            })
        })
        .collect();
    let peak = threads();
    let sum: usize = hs.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(sum, 10_000 * 9_999 / 2);
    assert_eq!(
        on_bridge.load(Ordering::Relaxed),
        10_000,
        "every future ran on the bridge's runtime"
    );
    // The goroutines wait without threads: GOMAXPROCS Ms, a few spares, sysmon,
    // the one Tokio worker, libtest's threads.
    assert!(
        peak < goro::runtime::gomaxprocs() + 16,
        "{peak} threads while 10,000 goroutines waited"
    );
    assert_eq!(
        goro::tokio::set_handle(tokio_rt(1).handle().clone()),
        Err(goro::tokio::HandleAlreadySet),
        "the bridge started its own runtime"
    );
}

#[test]
fn a_panic_in_a_bridged_future_resumes_in_the_goroutine() {
    let h = goro::go!(|| goro::tokio::block_on(async { panic!("inside tokio") }));
    let payload = h.join().unwrap_err();
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"inside tokio"));
    // And from a plain thread.
    let r = std::panic::catch_unwind(|| goro::tokio::block_on(async { panic!("again") }));
    assert!(r.is_err());
}

#[test]
fn goro_block_on_panics_on_a_tokio_worker_and_in_runtime_block_on() {
    let rt = tokio_rt(1);
    let in_task = rt.block_on(async {
        tokio::spawn(async { std::panic::catch_unwind(|| goro::block_on(async { 1 })) })
            .await
            .unwrap()
    });
    let msg = in_task.unwrap_err();
    let msg = msg.downcast_ref::<String>().unwrap();
    assert!(
        msg.contains("Tokio runtime's thread") && msg.contains(".await"),
        "{msg}"
    );
    let in_block_on = rt.block_on(async { std::panic::catch_unwind(|| goro::block_on(async { 1 })) });
    assert!(in_block_on.is_err());
    // Threads that have Tokio's context but drive none of its tasks may wait.
    let in_blocking = rt.block_on(async {
        tokio::task::spawn_blocking(|| goro::block_on(async { 2 }))
            .await
            .unwrap()
    });
    assert_eq!(in_blocking, 2);
    let _entered = rt.enter();
    assert_eq!(goro::block_on(async { 3 }), 3);
    // A goroutine started from a Tokio task is not in Tokio's context.
    let from_goroutine = rt.block_on(async { goro::go!(|| goro::block_on(async { 5 })).await.unwrap() });
    assert_eq!(from_goroutine, 5);
}

#[test]
fn tokio_tasks_await_goroutines_and_channels() {
    let _w = watchdog(Duration::from_secs(120));
    let rt = tokio_rt(2);
    rt.block_on(async {
        // JoinHandle as a future.
        let hs: Vec<_> = (0..1000u64).map(|i| goro::go!(move || i * i)).collect();
        let mut sum = 0;
        for h in hs {
            sum += h.await.unwrap();
        }
        assert_eq!(sum, (0..1000u64).map(|i| i * i).sum::<u64>());

        // Goroutines send on an unbuffered channel; Tokio tasks receive, half of
        // them through a select! that keeps cancelling the receive future.
        let (tx, rx) = goro::chan::bounded::<u64>(0);
        let senders: Vec<_> = (0..4u64)
            .map(|s| {
                let tx = tx.clone();
                goro::go!(move || (0..500).for_each(|i| tx.send(s * 1000 + i).unwrap()))
            })
            .collect();
        drop(tx);
        let receivers: Vec<_> = (0..4)
            .map(|r| {
                let rx = rx.clone();
                tokio::spawn(async move {
                    let mut got = Vec::new();
                    loop {
                        let v = if r % 2 == 0 {
                            rx.recv_async().await
                        } else {
                            tokio::select! {
                                v = rx.recv_async() => v,
                                _ = tokio::time::sleep(Duration::from_micros(50)) => continue,
                            }
                        };
                        match v {
                            Ok(v) => got.push(v),
                            Err(_) => break got,
                        }
                    }
                })
            })
            .collect();
        drop(rx);
        let mut all = Vec::new();
        for r in receivers {
            all.extend(r.await.unwrap());
        }
        for s in senders {
            s.await.unwrap();
        }
        all.sort_unstable();
        let want: Vec<u64> = (0..4).flat_map(|s| (0..500).map(move |i| s * 1000 + i)).collect();
        assert_eq!(all, want, "every value exactly once through cancelled receive futures");

        // A Tokio task sends; a goroutine receives.
        let (tx, rx) = goro::chan::bounded::<u32>(0);
        let sum = goro::go!(move || rx.iter().sum::<u32>());
        for i in 0..100 {
            tx.send_async(i).await.unwrap();
        }
        drop(tx);
        assert_eq!(sum.await.unwrap(), 4950);
    });
}
