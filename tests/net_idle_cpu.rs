//! A goroutine parked on a socket for 5 s costs no CPU: the M blocks in epoll,
//! nobody spins. (Its own binary: CPU time is per process.)

mod common;

use std::io::Read;
use std::time::Duration;

fn cpu_time() -> Duration {
    // SAFETY: getrusage fills a zeroed rusage.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

#[test]
fn a_goroutine_parked_on_a_socket_costs_no_cpu() {
    common::init_procs(2);
    let l = goro::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let _client = std::net::TcpStream::connect(addr).unwrap(); // connects, never writes
    let (s, _) = l.accept().unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let before = cpu_time();
    let r = goro::go!(move || (&s).read(&mut [0; 8])).join().unwrap();
    let used = cpu_time() - before;
    assert_eq!(r.unwrap_err().kind(), std::io::ErrorKind::TimedOut);
    assert!(
        used < Duration::from_millis(50),
        "5 s parked on a socket used {used:?} of CPU"
    );
}
