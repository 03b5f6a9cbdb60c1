//! Shared test helpers: a watchdog for tests that would hang on a lost wake-up,
//! running this test binary again as a child process, starting the runtime with
//! a given GOMAXPROCS, making a socket reset its connection when closed,
//! counting the Ms' sleeps, keeping every core busy, and reading the RSS.
#![allow(dead_code)] // each test binary uses a different subset

use std::io::Write;
use std::process::{Command, Output};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// Starts the runtime with `procs` Ps (each test binary is its own process, so
/// every test in it sees the same runtime: a group binary's tests all use the
/// same `procs`).
pub fn init_procs(procs: usize) {
    let _ = goro::runtime::Config::new().procs(procs).init();
    assert_eq!(
        goro::runtime::gomaxprocs(),
        procs,
        "runtime started with another GOMAXPROCS"
    );
}

/// Aborts the process if not dropped within `limit`: a hang (a lost wake-up) must
/// fail the test, not stall CI.
#[must_use = "the watchdog watches until dropped: bind it to a named variable"]
pub struct Watchdog {
    done: Arc<(Mutex<bool>, Condvar)>,
}

/// A [`Watchdog`] for the test running on this thread, which its abort message
/// names: libtest runs each test on a thread named after it (the name `--exact`
/// takes), so the name is always the test's own. Panics on any other thread (a
/// goroutine's M, a plain thread, the main thread of a binary without libtest).
pub fn watchdog(limit: Duration) -> Watchdog {
    let test = std::thread::current()
        .name()
        .filter(|n| *n != "main" && n.chars().all(|c| c.is_alphanumeric() || c == '_' || c == ':'))
        .expect("a watchdog is armed on the thread libtest runs the test on")
        .to_string();
    let done = Arc::new((Mutex::new(false), Condvar::new()));
    let d = done.clone();
    std::thread::spawn(move || {
        let (lock, cv) = &*d;
        let guard = lock.lock().unwrap();
        let (guard, timeout) = cv.wait_timeout_while(guard, limit, |done| !*done).unwrap();
        if timeout.timed_out() && !*guard {
            // Straight to the stream: libtest captures `eprintln!` in the test's
            // threads, and the abort would lose what it captured.
            let _ = writeln!(
                std::io::stderr(),
                "watchdog: {test} did not finish within {limit:?}: hang (lost wake-up?)"
            );
            std::process::abort();
        }
    });
    Watchdog { done }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        let (lock, cv) = &*self.done;
        *lock.lock().unwrap() = true;
        cv.notify_all();
    }
}

/// The env var that tells a test it runs as the child of [`run_child`].
pub const CHILD: &str = "GORO_TEST_CHILD";

pub fn is_child() -> bool {
    std::env::var_os(CHILD).is_some()
}

/// Runs test `name` of this same binary in a child process with `envs` (the
/// form for a binary of one file, `tests/<name>.rs`).
pub fn run_child(name: &str, envs: &[(&str, &str)]) -> Output {
    run_child_named(name, envs)
}

/// Runs test `name` of module `module` (its `module_path!()`) of this same
/// binary in a child process with `envs`: the form for a test in a group binary
/// (`tests/<group>/main.rs`), whose tests are named `module::name`.
pub fn run_child_in(module: &str, name: &str, envs: &[(&str, &str)]) -> Output {
    run_child_named(&test_name(module, name), envs)
}

/// The name libtest knows test `name` of module `module` (its `module_path!()`)
/// by: the module path without the crate, then `name`.
pub fn test_name(module: &str, name: &str) -> String {
    match module.split_once("::") {
        Some((_crate, path)) => format!("{path}::{name}"),
        None => name.to_string(),
    }
}

fn run_child_named(name: &str, envs: &[(&str, &str)]) -> Output {
    let exe = std::env::current_exe().expect("test binary path");
    let mut cmd = Command::new(exe);
    cmd.args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env(CHILD, "1");
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run child test process");
    // A name that matches no test would run nothing and succeed.
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("running 1 test"),
        "the child ran no test named {name}: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    out
}

/// The path of example `name`'s binary. `cargo test` builds every example before
/// it runs the test binaries, into `target/<profile>/examples/`, the parent of
/// this test binary's `deps/` folder; `cargo test --test x` does not, so a binary
/// older than its sources (the example's, or the library's) is refused rather
/// than tested.
pub fn example_bin(name: &str) -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("test binary lives in target/<profile>/deps");
    let bin = profile_dir.join("examples").join(name);
    let hint = "build the examples first: `cargo test` does, or `cargo build --examples`";
    let built = std::fs::metadata(&bin)
        .and_then(|m| m.modified())
        .unwrap_or_else(|_| panic!("{} not built: {hint}", bin.display()));
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let sources = [
        root.join("examples").join(format!("{name}.rs")),
        root.join("examples").join(name),
        root.join("src"),
    ];
    if let Some(newer) = sources.iter().find_map(|p| newer_than(p, built)) {
        panic!("{} is older than {}: {hint}", bin.display(), newer.display());
    }
    bin
}

/// A file at or under `path` modified after `time`, if any.
fn newer_than(path: &std::path::Path, time: std::time::SystemTime) -> Option<std::path::PathBuf> {
    let meta = std::fs::metadata(path).ok()?;
    if meta.is_dir() {
        std::fs::read_dir(path)
            .ok()?
            .flatten()
            .find_map(|entry| newer_than(&entry.path(), time))
    } else {
        (meta.modified().ok()? > time).then(|| path.to_path_buf())
    }
}

/// Sends RST instead of FIN when `s` is dropped (SO_LINGER with a zero timeout).
pub fn reset_on_close(s: &impl std::os::fd::AsRawFd) {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: a valid socket fd and a correctly sized `linger` value.
    let rc = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    assert_eq!(rc, 0);
}

/// Voluntary context switches (sleeps: futex, epoll) of the runtime's M threads
/// so far, from /proc.
pub fn m_sleeps() -> u64 {
    thread_sleeps(|name| name.starts_with("goro-m"))
}

/// Voluntary context switches of the sysmon thread so far, from /proc.
pub fn sysmon_sleeps() -> u64 {
    thread_sleeps(|name| name.trim_end() == "goro-sysmon")
}

fn thread_sleeps(counted: impl Fn(&str) -> bool) -> u64 {
    let mut total = 0;
    for task in std::fs::read_dir("/proc/self/task").unwrap() {
        let dir = task.unwrap().path();
        let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        if !counted(&comm) {
            continue;
        }
        let status = std::fs::read_to_string(dir.join("status")).unwrap_or_default();
        total += status
            .lines()
            .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
            .map_or(0, |v| v.trim().parse::<u64>().unwrap());
    }
    total
}

/// Plain threads that compute without ever blocking, one per core, until
/// dropped: the machine as a busy neighbour process would leave it.
pub struct CpuHogs {
    stop: Arc<std::sync::atomic::AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

pub fn cpu_hogs() -> CpuHogs {
    use std::sync::atomic::{AtomicBool, Ordering};
    let stop = Arc::new(AtomicBool::new(false));
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let threads = (0..cores)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            })
        })
        .collect();
    CpuHogs { stop, threads }
}

impl Drop for CpuHogs {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// The value at quantile `q` (0..=1) of `samples`, sorted in place.
pub fn quantile<T: Ord + Copy>(samples: &mut [T], q: f64) -> T {
    samples.sort_unstable();
    samples[((samples.len() - 1) as f64 * q).round() as usize]
}

/// This process's resident memory (`VmRSS`), in KiB.
pub fn rss_kib() -> usize {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .expect("VmRSS in /proc/self/status")
}

/// Limits this process's address space to what is mapped now plus `room`
/// bytes (`RLIMIT_AS`): a child's way to make a large goroutine stack
/// impossible to map. Threads that allocate for the first time from here on
/// share glibc's existing malloc arenas: a new arena reserves 64 MiB, so a few
/// Ms started later (how many depends on the machine's load) would use up
/// `room` and fail small allocations.
pub fn limit_address_space(room: u64) {
    // SAFETY: mallopt with a valid parameter and value.
    assert_eq!(unsafe { libc::mallopt(libc::M_ARENA_MAX, 1) }, 1);
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let vm_kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmSize:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    let limit = libc::rlimit {
        rlim_cur: (vm_kb << 10) + room,
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: setrlimit with a valid struct.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_AS, &limit) }, 0);
}
