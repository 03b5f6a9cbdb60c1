//! may's primitives for the shared workloads (src/workloads.rs): stackful
//! coroutines, `may::config().set_workers(GOMAXPROCS)`, worker pinning off
//! (goro, Go and Tokio do not pin by default either), default coroutine stack
//! (0x1000 words = 32 KiB). The driver is itself a coroutine.
//!
//! may 0.3 has no bounded channel at all (no `sync_channel`), so both channels
//! are unbounded whatever the capacity asked: `may::sync::mpsc::channel()`
//! (pingpong, skynet: a skynet node's 10 senders of one value each never fill
//! more than a capacity-10 channel would) and `may::sync::mpmc::channel()`
//! (buffered: its producers never wait). The mutex is `may::sync::Mutex`, TCP
//! is `may::net`. Every primitive blocks the coroutine and returns a ready
//! future (see `harness::complete`). may cannot preempt, but its timer thread
//! resumes an expired sleep itself, so the `hog_latency` ticker keeps running
//! beside the hog when a second CPU is free.

use std::future::{ready, Future};
use std::ops::DerefMut;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;

use compare::harness::{self, complete, fail, panic_message, procs_from_env, Driver, Measure, Runtime};
use may::sync::{mpmc, mpsc};

struct May;

impl Runtime for May {
    const NAME: &'static str = "may";
    const TASK: &'static str = "coroutine";

    type Task<T: Send + 'static> = may::coroutine::JoinHandle<T>;
    type Tx = mpsc::Sender<u64>;
    type Rx = mpsc::Receiver<u64>;
    type MpmcTx = mpmc::Sender<u64>;
    type MpmcRx = mpmc::Receiver<u64>;
    type Mutex = may::sync::Mutex<u64>;

    fn run(driver: Driver) -> (Measure, usize) {
        may::config().set_workers(procs_from_env()).set_worker_pin(false);
        match Self::spawn(move || driver).join() {
            Ok(m) => (m, may::config().get_workers()),
            Err(p) => fail(&explain(format!("driver coroutine panicked: {}", panic_message(&*p)))),
        }
    }

    /// may allocates the coroutine's stack here and panics if it cannot: that
    /// ends the process with the reason, instead of leaving a parent (a skynet
    /// node) waiting forever.
    fn spawn<F, Fut>(f: F) -> Self::Task<Fut::Output>
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future + Send + 'static,
        Fut::Output: Send + 'static,
    {
        // SAFETY: may's spawn is unsafe because TLS access and stack overflow
        // are UB in a coroutine; the workloads touch no TLS across a blocking
        // call and use no deep stacks.
        match catch_unwind(AssertUnwindSafe(|| unsafe {
            may::coroutine::spawn(move || complete(f()))
        })) {
            Ok(h) => h,
            Err(p) => fail(&explain(format!("spawn panicked: {}", panic_message(&*p)))),
        }
    }

    fn join<T: Send + 'static>(task: Self::Task<T>) -> impl Future<Output = Result<T, String>> + Send {
        ready(task.join().map_err(|p| panic_message(&*p)))
    }

    fn yield_now() -> impl Future<Output = ()> + Send {
        may::coroutine::yield_now();
        ready(())
    }

    fn sleep(d: Duration) -> impl Future<Output = ()> + Send {
        may::coroutine::sleep(d);
        ready(())
    }

    fn channel(_cap: usize) -> (Self::Tx, Self::Rx) {
        mpsc::channel()
    }

    fn send(tx: &mut Self::Tx, v: u64) -> impl Future<Output = Result<(), impl Sized>> + Send {
        ready(tx.send(v))
    }

    fn recv(rx: &mut Self::Rx) -> impl Future<Output = Option<u64>> + Send {
        ready(rx.recv().ok())
    }

    fn mpmc_channel(_cap: usize) -> (Self::MpmcTx, Self::MpmcRx) {
        mpmc::channel()
    }

    fn mpmc_send(tx: &mut Self::MpmcTx, v: u64) -> impl Future<Output = Result<(), impl Sized>> + Send {
        ready(tx.send(v))
    }

    fn mpmc_recv(rx: &mut Self::MpmcRx) -> impl Future<Output = Result<u64, impl Sized>> + Send {
        ready(rx.recv())
    }

    fn mutex(v: u64) -> Self::Mutex {
        may::sync::Mutex::new(v)
    }

    // Not `ready(..)`: a guard is not `Send`, so it is taken at the first poll.
    async fn lock(m: &Self::Mutex) -> impl DerefMut<Target = u64> {
        m.lock().unwrap_or_else(|e| fail(&format!("mutex: {e}")))
    }

    compare::std_net_tcp!(may::net);
}

/// Adds the likely cause to a panic message about a failed stack allocation.
fn explain(mut msg: String) -> String {
    if msg.contains("alloc sys stack") {
        // Each may stack is its own mmap plus a guard page (two mappings).
        let max = std::fs::read_to_string("/proc/sys/vm/max_map_count").unwrap_or_default();
        msg += &format!(
            " [each may stack is an mmap + guard page; vm.max_map_count={}]",
            max.trim()
        );
    }
    msg
}

fn main() {
    harness::main::<May>()
}
