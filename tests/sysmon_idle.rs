//! sysmon's cost when nothing happens: under 1% of a core.

mod common;

use std::time::{Duration, Instant};

fn cpu_time() -> Duration {
    // SAFETY: getrusage writes into the zeroed struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid out-pointer.
    assert_eq!(unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) }, 0);
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

#[test]
fn an_idle_runtime_costs_under_one_percent_of_a_core() {
    common::init_procs(2);
    // Some activity first, so Ms, timers and the poller have all been used.
    let hs: Vec<_> = (0..100)
        .map(|_| goro::go!(|| goro::time::sleep(Duration::from_millis(1))))
        .collect();
    hs.into_iter().for_each(|h| h.join().unwrap());
    let listener = goro::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let _waiting = goro::go!(move || listener.accept().map(|_| ()));
    std::thread::sleep(Duration::from_millis(100));

    let (cpu0, wall0) = (cpu_time(), Instant::now());
    std::thread::sleep(Duration::from_secs(5));
    let (cpu, wall) = (cpu_time() - cpu0, wall0.elapsed());
    let share = cpu.as_secs_f64() / wall.as_secs_f64();
    eprintln!("idle: {cpu:?} CPU over {wall:?} ({:.3}% of a core)", share * 100.0);
    assert!(
        share < 0.01,
        "idle runtime used {cpu:?} of CPU in {wall:?} ({:.2}%)",
        share * 100.0
    );
}
