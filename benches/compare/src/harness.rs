//! The frame of the workload binaries `goro`, `tokio` and `may`, written once.
//!
//! This module owns what does not depend on the workload: the command line
//! (`<impl> <workload> [--n N] [--port P]`, exit 2 on bad input), the one result
//! line and its number format, the failure exits (`FAILED: <reason>`, exit 1,
//! which scripts/compare.sh puts in the report), the parallelism from env
//! `GOMAXPROCS`, the process readings the workloads take (CPU time), and the
//! [`Runtime`] trait: the primitives (spawn, join, yield, sleep, channels, a
//! mutex, TCP) through which the shared workloads of [`crate::workloads`] run
//! on one runtime. A binary implements [`Runtime`] for a unit type and calls
//! [`main`]; nothing else in it is needed.
//!
//! goro and may block a G / coroutine where Tokio awaits: their primitives make
//! the blocking call and return a future that is already ready, and
//! [`complete`] polls a task's future once on the G or coroutine that owns it.
//! The same async workload code thus runs, with no executor in between, on all
//! three.

use std::future::Future;
use std::io::{self, Write};
use std::net::SocketAddr;
use std::ops::DerefMut;
use std::pin::{pin, Pin};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use crate::workloads::{self, Workload};

/// What a workload returns: the value and its unit. Lower is better, except for
/// rates (a unit ending in `/s`, e.g. `buffered`'s `msgs/s`), where higher is.
pub type Measure = (f64, &'static str);

/// A workload ready to run as the driver task (see [`Runtime::run`]).
pub type Driver = Pin<Box<dyn Future<Output = Measure> + Send>>;

/// One runtime's primitives. Every future returned must be `Send` (Tokio's
/// multi-thread scheduler moves tasks between threads). goro and may do the
/// work when the function is called and return a ready future, so a workload
/// awaits each primitive at once. Only `u64` crosses the channels.
pub trait Runtime: 'static {
    /// The `impl=` of the result line and the binary's name in messages.
    const NAME: &'static str;
    /// What the runtime calls one of its tasks, in failure messages.
    const TASK: &'static str;

    /// A handle to a spawned task; dropping it detaches the task.
    type Task<T: Send + 'static>: Send + 'static;
    /// Ends of a channel that one task receives from (`pingpong`, `skynet`).
    type Tx: Clone + Send + 'static;
    type Rx: Send + 'static;
    /// Ends of a channel that several tasks receive from (`buffered`).
    type MpmcTx: Clone + Send + 'static;
    type MpmcRx: Clone + Send + 'static;
    /// The runtime's mutex around a `u64` counter.
    type Mutex: Send + Sync + 'static;
    type Listener: Send + Sync + 'static;
    type Stream: Send + 'static;

    /// Runs `driver` as the first task, as Go runs `main` in a goroutine, with
    /// the parallelism of env `GOMAXPROCS`; returns its value and the
    /// parallelism to report (`procs=`). Tasks still running are left alone:
    /// the process exits right after.
    fn run(driver: Driver) -> (Measure, usize);
    /// Starts a task running the future `f()`. On goro and may, `f` is called
    /// on the new G or coroutine, so a spawn moves only what `f` captures, not
    /// a whole future (sized for its every await point).
    fn spawn<F, Fut>(f: F) -> Self::Task<Fut::Output>
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future + Send + 'static,
        Fut::Output: Send + 'static;
    /// Waits for the task: its value, or why it failed (a panic message).
    fn join<T: Send + 'static>(task: Self::Task<T>) -> impl Future<Output = Result<T, String>> + Send;
    fn yield_now() -> impl Future<Output = ()> + Send;
    fn sleep(d: Duration) -> impl Future<Output = ()> + Send;

    /// A channel of capacity `cap` (0: unbuffered), or the nearest the runtime
    /// has. Send and receive return what the runtime's own calls return (only
    /// `Ok` / `Some` is looked at), so that Tokio's futures need no wrapper.
    fn channel(cap: usize) -> (Self::Tx, Self::Rx);
    /// `Err` if the receiver is gone.
    fn send(tx: &mut Self::Tx, v: u64) -> impl Future<Output = Result<(), impl Sized>> + Send;
    /// `None` once every sender is gone and the channel is empty.
    fn recv(rx: &mut Self::Rx) -> impl Future<Output = Option<u64>> + Send;
    /// As [`Runtime::channel`] and [`Runtime::send`], with receivers that clone.
    fn mpmc_channel(cap: usize) -> (Self::MpmcTx, Self::MpmcRx);
    fn mpmc_send(tx: &mut Self::MpmcTx, v: u64) -> impl Future<Output = Result<(), impl Sized>> + Send;
    /// `Err` once every sender is gone and the channel is empty.
    fn mpmc_recv(rx: &mut Self::MpmcRx) -> impl Future<Output = Result<u64, impl Sized>> + Send;

    fn mutex(v: u64) -> Self::Mutex;
    /// Locks `m`; the guard unlocks it when dropped.
    fn lock(m: &Self::Mutex) -> impl Future<Output = impl DerefMut<Target = u64>> + Send;

    fn listen(addr: SocketAddr) -> impl Future<Output = io::Result<Self::Listener>> + Send;
    fn local_port(l: &Self::Listener) -> io::Result<u16>;
    fn accept(l: &Self::Listener) -> impl Future<Output = io::Result<Self::Stream>> + Send;
    fn set_nodelay(s: &Self::Stream) -> io::Result<()>;
    fn read(s: &mut Self::Stream, buf: &mut [u8]) -> impl Future<Output = io::Result<usize>> + Send;
    fn write_all(s: &mut Self::Stream, buf: &[u8]) -> impl Future<Output = io::Result<()>> + Send;
}

/// The TCP items of a [`Runtime`] impl, for a blocking runtime whose `net`
/// module has `std::net`'s API (`goro::net`, `may::net`): write
/// `compare::std_net_tcp!(goro::net);` inside the impl.
#[macro_export]
macro_rules! std_net_tcp {
    ($($net:ident)::+) => {
        type Listener = $($net)::+::TcpListener;
        type Stream = $($net)::+::TcpStream;

        fn listen(
            addr: ::std::net::SocketAddr,
        ) -> impl ::std::future::Future<Output = ::std::io::Result<Self::Listener>> + Send {
            ::std::future::ready($($net)::+::TcpListener::bind(addr))
        }

        fn local_port(l: &Self::Listener) -> ::std::io::Result<u16> {
            Ok(l.local_addr()?.port())
        }

        fn accept(l: &Self::Listener) -> impl ::std::future::Future<Output = ::std::io::Result<Self::Stream>> + Send {
            ::std::future::ready(l.accept().map(|(s, _)| s))
        }

        fn set_nodelay(s: &Self::Stream) -> ::std::io::Result<()> {
            s.set_nodelay(true)
        }

        fn read(
            s: &mut Self::Stream,
            buf: &mut [u8],
        ) -> impl ::std::future::Future<Output = ::std::io::Result<usize>> + Send {
            ::std::future::ready(::std::io::Read::read(s, buf))
        }

        fn write_all(
            s: &mut Self::Stream,
            buf: &[u8],
        ) -> impl ::std::future::Future<Output = ::std::io::Result<()>> + Send {
            ::std::future::ready(::std::io::Write::write_all(s, buf))
        }
    };
}

/// The whole program of a workload binary: parses the command line, runs the
/// workload on `R`, prints the result line and exits.
pub fn main<R: Runtime>() -> ! {
    let table = workloads::table::<R>();
    let (w, args) = parse_args(R::NAME, &table);
    let (m, procs) = R::run((w.driver)(&args));
    emit_and_exit(w.name, R::NAME, procs, m)
}

/// Runs a task's future to its end on this G or coroutine, for the blocking
/// runtimes (goro, may): their primitives block and return ready futures, so
/// the first poll finishes it.
pub fn complete<F: Future>(f: F) -> F::Output {
    match pin!(f).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => v,
        Poll::Pending => fail("a future of a blocking runtime was not ready at its first poll"),
    }
}

/// The command line's numbers for the workload's driver.
pub struct Args {
    /// `--n`, else the workload's default size.
    pub n: u64,
    /// `--port` (only `echo_server` uses it): 0 = any free port.
    pub port: u16,
}

/// Parses `<workload> [--n N] [--port P]`; exits 2 with a usage line on bad input.
fn parse_args<'t>(impl_name: &str, table: &'t [Workload]) -> (&'t Workload, Args) {
    let usage = |msg: &str| -> ! {
        eprintln!("{impl_name}: {msg}");
        eprintln!("usage: {impl_name} <workload> [--n N] [--port P]   (env GOMAXPROCS sets the parallelism)");
        std::process::exit(2)
    };
    let mut it = std::env::args().skip(1);
    let workload = it.next().unwrap_or_else(|| usage("missing workload"));
    let mut n = None;
    let mut port = 0u16;
    while let Some(a) = it.next() {
        match a.as_str() {
            "--n" => {
                let v = it.next().unwrap_or_else(|| usage("--n needs a value"));
                n = Some(
                    v.parse::<u64>()
                        .ok()
                        .filter(|&v| v > 0)
                        .unwrap_or_else(|| usage("--n must be a positive integer")),
                );
            }
            "--port" => {
                let v = it.next().unwrap_or_else(|| usage("--port needs a value"));
                port = v.parse().unwrap_or_else(|_| usage("--port must be 0..=65535"));
            }
            _ => usage(&format!("unknown argument {a:?}")),
        }
    }
    let Some(w) = table.iter().find(|w| w.name == workload) else {
        eprintln!("{impl_name}: unknown workload {workload:?}");
        std::process::exit(2)
    };
    let n = n.unwrap_or(w.default_n);
    (w, Args { n, port })
}

/// Prints the one result line, flushes, and exits the process at once (tasks
/// still parked, e.g. in `parked_rss`, are not waited for).
fn emit_and_exit(workload: &str, impl_name: &str, procs: usize, m: Measure) -> ! {
    let (value, unit) = m;
    let mut out = io::stdout().lock();
    let _ = writeln!(
        out,
        "BENCH workload={workload} impl={impl_name} procs={procs} value={} unit={unit}",
        fmt_value(value, unit)
    );
    let _ = out.flush();
    std::process::exit(0)
}

/// The value of a result line in its unit; same formatting as go/main.go's fmtValue.
pub fn fmt_value(v: f64, unit: &str) -> String {
    match unit {
        "s" => format!("{v:.4}"),
        "ms" => format!("{v:.3}"),
        "msgs/s" | "threads" => format!("{v:.0}"),
        _ => format!("{v:.2}"),
    }
}

/// Exits 1 with a message that the report shows as the reason.
pub fn fail(msg: &str) -> ! {
    eprintln!("FAILED: {msg}");
    std::process::exit(1)
}

/// A panic payload as text, for the report.
pub fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_string()
    }
}

/// Parallelism from env GOMAXPROCS, else the number of CPUs (as Go).
pub fn procs_from_env() -> usize {
    std::env::var("GOMAXPROCS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&p| p > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// The Tokio runtime of the Tokio binaries for parallelism `procs`, and the
/// number of threads that run its tasks: `current_thread` (1) at one P, as Go
/// with GOMAXPROCS=1 runs everything on one thread, else `multi_thread` with
/// `procs` workers; env `TOKIO_FLAVOR=current|multi` overrides.
pub fn tokio_runtime(procs: usize) -> io::Result<(tokio::runtime::Runtime, usize)> {
    let current = match std::env::var("TOKIO_FLAVOR").as_deref() {
        Ok("current") => true,
        Ok("multi") => false,
        _ => procs == 1,
    };
    if current {
        Ok((tokio::runtime::Builder::new_current_thread().enable_all().build()?, 1))
    } else {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(procs)
            .enable_all()
            .build()?;
        Ok((rt, procs))
    }
}

/// User + system CPU time of the whole process so far (getrusage(RUSAGE_SELF)).
pub fn process_cpu_time() -> Duration {
    // SAFETY: getrusage only writes the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        fail(&format!("getrusage: {}", io::Error::last_os_error()));
    }
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}
