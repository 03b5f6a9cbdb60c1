//! An accept loop survives running out of file descriptors (EMFILE): the child
//! process lowers RLIMIT_NOFILE, fills its fd table, and a client (the parent)
//! connects; `incoming()` backs off instead of failing, and serves the connection
//! once fds are free again. `accept()` itself reports EMFILE and leaves the
//! listener usable.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

fn child() {
    let lim = libc::rlimit {
        rlim_cur: 64,
        rlim_max: 64,
    };
    // SAFETY: setrlimit with a valid struct.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) }, 0);
    let l = goro::net::TcpListener::bind("127.0.0.1:0").unwrap();
    println!("PORT {}", l.local_addr().unwrap().port());
    // Fill the fd table.
    let mut hog = Vec::new();
    while let Ok(f) = std::fs::File::open("/dev/null") {
        hog.push(f);
    }
    println!("FULL");
    // accept() reports the exhaustion and the listener survives it.
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).unwrap(); // the parent has connected
    let e = l.accept().unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EMFILE), "{e}");
    // incoming() backs off; free the fds shortly after it starts waiting.
    let server = goro::go!(move || {
        let mut s = l.incoming().next().unwrap().unwrap();
        let mut buf = [0; 5];
        s.read_exact(&mut buf).unwrap();
        s.write_all(&buf).unwrap();
    });
    goro::time::sleep(Duration::from_millis(50));
    drop(hog);
    server.join().unwrap();
    println!("SERVED");
}

#[test]
fn accept_loop_survives_fd_exhaustion() {
    if common::is_child() {
        child();
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let name = common::test_name(module_path!(), "accept_loop_survives_fd_exhaustion");
    let mut c = Command::new(exe)
        .args(["--exact", &name, "--nocapture", "--test-threads=1"])
        .env(common::CHILD, "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(c.stdout.take().unwrap());
    let mut port = None;
    let mut line = String::new();
    while out.read_line(&mut line).unwrap() > 0 {
        if let Some(p) = line.split("PORT ").nth(1) {
            port = p.trim().parse::<u16>().ok();
        }
        if line.contains("FULL") {
            break;
        }
        line.clear();
    }
    let port = port.expect("child printed its port");
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    c.stdin.as_mut().unwrap().write_all(b"connected\n").unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(b"hello").unwrap();
    let mut back = [0; 5];
    s.read_exact(&mut back).unwrap();
    assert_eq!(&back, b"hello");
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    assert!(c.wait().unwrap().success());
    assert!(rest.contains("SERVED"), "{rest}");
}
