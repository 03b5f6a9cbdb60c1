//! Runtime configuration: `Config::init` before first use, `AlreadyStarted` after,
//! and `GOMAXPROCS` from the environment (child processes).

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
