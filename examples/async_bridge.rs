//! goro and Tokio in one program, both ways (needs the `tokio` feature):
//!
//! 1. A Tokio program offloads blocking-style work to goroutines and awaits
//!    them: `goro::go!(..).await`. 100,000 jobs that each wait 1 ms take a
//!    fraction of a second and a handful of threads, where
//!    `tokio::task::spawn_blocking` would use up to 512 threads and queue the
//!    rest.
//! 2. Goroutines call a Tokio-based client (a `tokio::net` TCP client)
//!    through the bridge, `goro::tokio::block_on`, against an echo server
//!    written with goro's own blocking-style `goro::net`.
//!
//! ```text
//! cargo run --release --features tokio --example async_bridge [JOBS] [CLIENTS]
//! ```

use std::io::{Read, Write};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mut args = std::env::args().skip(1).map(|a| a.parse::<usize>().expect("a number"));
    let jobs = args.next().unwrap_or(100_000);
    let clients = args.next().unwrap_or(100);
    // The bridge runs its futures on this program's runtime.
    goro::tokio::set_handle(tokio::runtime::Handle::current()).expect("the bridge is unused so far");

    offload(jobs).await;
    echo_through_the_bridge(clients).await;
}

/// Part 1: `jobs` goroutines, each a blocking-style job (a 1 ms wait and a
/// result), awaited by the Tokio task.
async fn offload(jobs: usize) {
    let start = Instant::now();
    let handles: Vec<goro::JoinHandle<usize>> = (0..jobs)
        .map(|i| {
            goro::go!(move || {
                goro::time::sleep(Duration::from_millis(1)); // blocking-style, parks only the goroutine
                i * 2
            })
        })
        .collect();
    let mut sum = 0;
    for h in handles {
        sum += h.await.expect("the job panicked");
    }
    assert_eq!(sum, jobs * (jobs - 1));
    println!(
        "offload: {jobs} jobs of 1 ms in {:.0} ms, {} threads in the process",
        start.elapsed().as_secs_f64() * 1e3,
        threads()
    );
}

/// Part 2: a goro echo server; `clients` goroutines each connect with
/// `tokio::net::TcpStream` through the bridge and check the echo.
async fn echo_through_the_bridge(clients: usize) {
    let listener = goro::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("local address");
    goro::go!(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            goro::go!(move || {
                let mut buf = [0u8; 512];
                while let Ok(n @ 1..) = conn.read(&mut buf) {
                    if conn.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            });
        }
    });

    let start = Instant::now();
    let callers: Vec<goro::JoinHandle<String>> = (0..clients)
        .map(|i| {
            goro::go!(move || {
                // Blocking-style code in the goroutine; the async client runs on
                // Tokio, and only this goroutine waits for it.
                goro::tokio::block_on(async move {
                    let mut s = tokio::net::TcpStream::connect(addr).await?;
                    let msg = format!("hello from goroutine {i}");
                    s.write_all(msg.as_bytes()).await?;
                    let mut back = vec![0u8; msg.len()];
                    s.read_exact(&mut back).await?;
                    Ok::<_, std::io::Error>(String::from_utf8(back).expect("utf-8"))
                })
                .expect("echo")
            })
        })
        .collect();
    for (i, h) in callers.into_iter().enumerate() {
        assert_eq!(
            h.await.expect("the client panicked"),
            format!("hello from goroutine {i}")
        );
    }
    println!(
        "bridge: {clients} goroutines called a tokio::net client in {:.1} ms",
        start.elapsed().as_secs_f64() * 1e3
    );
}

/// The process's OS threads now.
fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").map(|d| d.count()).unwrap_or(0)
}
