//! Tokio's primitives for the shared workloads (src/workloads.rs).
//!
//! Runtime: GOMAXPROCS = 1 -> `current_thread` (one thread runs every task, as
//! Go with one P); GOMAXPROCS = P > 1 -> `multi_thread` with `worker_threads = P`
//! (env TOKIO_FLAVOR=multi|current overrides; `harness::tokio_runtime`). The
//! driver is itself a spawned task (like Go's main goroutine, it runs on a
//! worker, not on the block_on thread). Channels: Tokio has no rendezvous
//! channel, so `channel(0)` (pingpong) is `tokio::sync::mpsc::channel(1)`, the
//! smallest; the MPMC one (buffered) is `async_channel::bounded`, as Go's
//! channel. The mutex is `tokio::sync::Mutex`, TCP is `tokio::net`. Tokio
//! cannot preempt: `imbalanced` tasks run to completion once started, and at
//! GOMAXPROCS=1 the `hog_latency` ticker runs again only when the hog is done.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::ops::DerefMut;
use std::time::Duration;

use compare::harness::{self, fail, procs_from_env, tokio_runtime, Driver, Measure, Runtime};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

struct Tokio;

impl Runtime for Tokio {
    const NAME: &'static str = "tokio";
    const TASK: &'static str = "task";

    type Task<T: Send + 'static> = tokio::task::JoinHandle<T>;
    type Tx = mpsc::Sender<u64>;
    type Rx = mpsc::Receiver<u64>;
    type MpmcTx = async_channel::Sender<u64>;
    type MpmcRx = async_channel::Receiver<u64>;
    type Mutex = tokio::sync::Mutex<u64>;
    type Listener = tokio::net::TcpListener;
    type Stream = tokio::net::TcpStream;

    fn run(driver: Driver) -> (Measure, usize) {
        let (rt, procs) = tokio_runtime(procs_from_env()).unwrap_or_else(|e| fail(&format!("tokio runtime: {e}")));
        let m = match rt.block_on(async { tokio::spawn(driver).await }) {
            Ok(m) => m,
            Err(e) => fail(&format!("driver task failed: {e}")),
        };
        // Dropping the runtime would first cancel every task still parked
        // (parked_rss); the process exits right after instead.
        std::mem::forget(rt);
        (m, procs)
    }

    fn spawn<F, Fut>(f: F) -> Self::Task<Fut::Output>
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future + Send + 'static,
        Fut::Output: Send + 'static,
    {
        tokio::spawn(f())
    }

    async fn join<T: Send + 'static>(task: Self::Task<T>) -> Result<T, String> {
        task.await.map_err(|e| e.to_string())
    }

    fn yield_now() -> impl Future<Output = ()> + Send {
        tokio::task::yield_now()
    }

    fn sleep(d: Duration) -> impl Future<Output = ()> + Send {
        tokio::time::sleep(d)
    }

    fn channel(cap: usize) -> (Self::Tx, Self::Rx) {
        mpsc::channel(cap.max(1))
    }

    fn send(tx: &mut Self::Tx, v: u64) -> impl Future<Output = Result<(), impl Sized>> + Send {
        tx.send(v)
    }

    fn recv(rx: &mut Self::Rx) -> impl Future<Output = Option<u64>> + Send {
        rx.recv()
    }

    fn mpmc_channel(cap: usize) -> (Self::MpmcTx, Self::MpmcRx) {
        async_channel::bounded(cap)
    }

    fn mpmc_send(tx: &mut Self::MpmcTx, v: u64) -> impl Future<Output = Result<(), impl Sized>> + Send {
        tx.send(v)
    }

    fn mpmc_recv(rx: &mut Self::MpmcRx) -> impl Future<Output = Result<u64, impl Sized>> + Send {
        rx.recv()
    }

    fn mutex(v: u64) -> Self::Mutex {
        tokio::sync::Mutex::new(v)
    }

    fn lock(m: &Self::Mutex) -> impl Future<Output = impl DerefMut<Target = u64>> + Send {
        m.lock()
    }

    fn listen(addr: SocketAddr) -> impl Future<Output = io::Result<Self::Listener>> + Send {
        tokio::net::TcpListener::bind(addr)
    }

    fn local_port(l: &Self::Listener) -> io::Result<u16> {
        Ok(l.local_addr()?.port())
    }

    async fn accept(l: &Self::Listener) -> io::Result<Self::Stream> {
        Ok(l.accept().await?.0)
    }

    fn set_nodelay(s: &Self::Stream) -> io::Result<()> {
        s.set_nodelay(true)
    }

    async fn read(s: &mut Self::Stream, buf: &mut [u8]) -> io::Result<usize> {
        s.read(buf).await
    }

    async fn write_all(s: &mut Self::Stream, buf: &[u8]) -> io::Result<()> {
        s.write_all(buf).await
    }
}

fn main() {
    harness::main::<Tokio>()
}
