//! Runtime configuration: `Config::init` before first use, `AlreadyStarted` after,
//! `GOMAXPROCS` from the environment, and a start with no descriptor left for
//! the poller (child processes).

use crate::common;

use goro::runtime::{AlreadyStarted, Config};

#[test]
fn config_init_applies_and_second_init_fails() {
    if common::is_child() {
        Config::new().procs(3).stack_size(64 << 10).init().unwrap();
        assert_eq!(goro::runtime::gomaxprocs(), 3);
        assert_eq!(Config::new().procs(5).init(), Err(AlreadyStarted));
        assert_eq!(goro::runtime::gomaxprocs(), 3);
        assert_eq!(goro::go!(|| 1).join().unwrap(), 1);
        return;
    }
    let out = common::run_child_in(
        module_path!(),
        "config_init_applies_and_second_init_fails",
        &[("GOMAXPROCS", "7")],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn gomaxprocs_comes_from_the_environment() {
    if common::is_child() {
        println!("PROCS={}", goro::runtime::gomaxprocs());
        return;
    }
    for (env, want) in [("3", "3"), ("1", "1")] {
        let out = common::run_child_in(
            module_path!(),
            "gomaxprocs_comes_from_the_environment",
            &[("GOMAXPROCS", env)],
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("PROCS={want}")));
    }
    // An invalid value is reported and ignored.
    let out = common::run_child_in(
        module_path!(),
        "gomaxprocs_comes_from_the_environment",
        &[("GOMAXPROCS", "lots")],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("ignoring GOMAXPROCS=\"lots\""), "{stderr}");
    let ncpu = std::thread::available_parallelism().unwrap().get();
    assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("PROCS={ncpu}")));
}

/// CPUs in the calling thread's affinity mask.
fn allowed_cpus() -> usize {
    // SAFETY: a zeroed cpu_set_t is valid; sched_getaffinity fills it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        assert_eq!(
            libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set),
            0
        );
        libc::CPU_COUNT(&set) as usize
    }
}

#[test]
fn pin_threads_pins_each_m_to_one_core() {
    if common::is_child() {
        Config::new().procs(2).pin_threads(true).init().unwrap();
        let hs: Vec<_> = (0..50)
            .map(|_| {
                goro::go!(|| {
                    goro::yield_now();
                    allowed_cpus()
                })
            })
            .collect();
        for h in hs {
            assert_eq!(h.join().unwrap(), 1, "an M running a G is not pinned");
        }
        return;
    }
    if allowed_cpus() < 2 {
        return; // nothing to observe on a one-CPU machine
    }
    let out = common::run_child_in(module_path!(), "pin_threads_pins_each_m_to_one_core", &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// With no descriptor left for the poller (`ulimit -n` at the descriptors
/// already open), the runtime's start is a fatal error as Go's: the message
/// names the limit, and the exit status is 2, not an abort.
#[test]
fn no_descriptor_for_the_poller_is_a_fatal_error_naming_the_limit() {
    if common::is_child() {
        // SAFETY: plain calls: the lowest free descriptor, closed at once, is
        // the new soft limit, so the next descriptor the process asks for
        // (the poller's) is over it.
        let limit = unsafe {
            let lowest = libc::fcntl(0, libc::F_DUPFD_CLOEXEC, 0);
            assert!(lowest >= 0);
            libc::close(lowest);
            let mut lim = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim), 0);
            lim.rlim_cur = lowest as libc::rlim_t;
            assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &lim), 0);
            lowest
        };
        println!("LIMIT={limit}");
        let _ = goro::go!(|| ()).join();
        unreachable!("the runtime started without a poller");
    }
    use std::os::unix::process::ExitStatusExt;
    let out = common::run_child_in(
        module_path!(),
        "no_descriptor_for_the_poller_is_a_fatal_error_naming_the_limit",
        &[],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // libtest's own line may precede it on its line.
    let limit = stdout
        .split_once("LIMIT=")
        .and_then(|(_, rest)| rest.lines().next())
        .unwrap_or_else(|| panic!("the child printed no limit:\n{stdout}\n{stderr}"));
    assert_eq!(
        (out.status.code(), out.status.signal()),
        (Some(2), None),
        "exit status 2, no signal:\n{stderr}"
    );
    let want = format!(
        "fatal error: goro: cannot create the epoll poller: Too many open files (os error 24) \
         (the process's open-files limit, RLIMIT_NOFILE or `ulimit -n`, is {limit})\n"
    );
    assert!(stderr.contains(&want), "want {want:?} in:\n{stderr}");
}
