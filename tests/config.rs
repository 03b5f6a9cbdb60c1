//! Runtime configuration: `Config::init` before first use, `AlreadyStarted` after,
//! and `GOMAXPROCS` from the environment (child processes).

mod common;

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
    let out = common::run_child("config_init_applies_and_second_init_fails", &[("GOMAXPROCS", "7")]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn gomaxprocs_comes_from_the_environment() {
    if common::is_child() {
        println!("PROCS={}", goro::runtime::gomaxprocs());
        return;
    }
    for (env, want) in [("3", "3"), ("1", "1")] {
        let out = common::run_child("gomaxprocs_comes_from_the_environment", &[("GOMAXPROCS", env)]);
        assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("PROCS={want}")));
    }
    // An invalid value is reported and ignored.
    let out = common::run_child("gomaxprocs_comes_from_the_environment", &[("GOMAXPROCS", "lots")]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("ignoring GOMAXPROCS=\"lots\""), "{stderr}");
    let ncpu = std::thread::available_parallelism().unwrap().get();
    assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("PROCS={ncpu}")));
}
