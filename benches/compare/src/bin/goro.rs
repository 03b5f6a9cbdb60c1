//! goro's primitives for the shared workloads (src/workloads.rs), written
//! against goro's public API only.
//!
//! A task is a G (`goro::go!`); the driver runs in one, like Go's main
//! goroutine, and GOMAXPROCS comes from the environment, which goro reads
//! natively. Channels are `goro::chan::bounded` (MPMC; capacity 0 is a
//! rendezvous, as Go's unbuffered channel), the mutex is `goro::sync::Mutex`,
//! TCP is `goro::net` (blocking-style `Read`/`Write` on the netpoller). Every
//! primitive blocks the G and returns a ready future (see
//! `harness::complete`). In `hog_latency`, goro's sysmon takes the hog's P
//! after 20 ms and the ticker runs on another M.

use std::future::{ready, Future};
use std::ops::DerefMut;
use std::time::Duration;

use compare::harness::{self, complete, fail, panic_message, Driver, Measure, Runtime};
use goro::chan::{Receiver, Sender};

struct Goro;

impl Runtime for Goro {
    const NAME: &'static str = "goro";
    const TASK: &'static str = "G";

    type Task<T: Send + 'static> = goro::JoinHandle<T>;
    type Tx = Sender<u64>;
    type Rx = Receiver<u64>;
    type MpmcTx = Sender<u64>;
    type MpmcRx = Receiver<u64>;
    type Mutex = goro::sync::Mutex<u64>;

    fn run(driver: Driver) -> (Measure, usize) {
        match goro::go!(move || complete(driver)).join() {
            Ok(m) => (m, goro::runtime::gomaxprocs()),
            Err(p) => fail(&format!("driver G panicked: {}", panic_message(&*p))),
        }
    }

    fn spawn<F, Fut>(f: F) -> Self::Task<Fut::Output>
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future + Send + 'static,
        Fut::Output: Send + 'static,
    {
        goro::go!(move || complete(f()))
    }

    fn join<T: Send + 'static>(task: Self::Task<T>) -> impl Future<Output = Result<T, String>> + Send {
        ready(task.join().map_err(|p| panic_message(&*p)))
    }

    fn yield_now() -> impl Future<Output = ()> + Send {
        goro::yield_now();
        ready(())
    }

    fn sleep(d: Duration) -> impl Future<Output = ()> + Send {
        goro::time::sleep(d);
        ready(())
    }

    fn channel(cap: usize) -> (Self::Tx, Self::Rx) {
        goro::chan::bounded(cap)
    }

    fn send(tx: &mut Self::Tx, v: u64) -> impl Future<Output = Result<(), impl Sized>> + Send {
        ready(tx.send(v))
    }

    fn recv(rx: &mut Self::Rx) -> impl Future<Output = Option<u64>> + Send {
        ready(rx.recv().ok())
    }

    fn mpmc_channel(cap: usize) -> (Self::MpmcTx, Self::MpmcRx) {
        Self::channel(cap)
    }

    fn mpmc_send(tx: &mut Self::MpmcTx, v: u64) -> impl Future<Output = Result<(), impl Sized>> + Send {
        Self::send(tx, v)
    }

    fn mpmc_recv(rx: &mut Self::MpmcRx) -> impl Future<Output = Result<u64, impl Sized>> + Send {
        ready(rx.recv())
    }

    fn mutex(v: u64) -> Self::Mutex {
        goro::sync::Mutex::new(v)
    }

    // Not `ready(..)`: a guard is not `Send`, so it is taken at the first poll.
    async fn lock(m: &Self::Mutex) -> impl DerefMut<Target = u64> {
        m.lock()
    }

    compare::std_net_tcp!(goro::net);
}

fn main() {
    harness::main::<Goro>()
}
