//! Networking: `std::net`'s blocking-style API, on Go's netpoller.
//!
//! [`TcpListener`], [`TcpStream`] and [`UdpSocket`] have std's names, methods and
//! error types, and implement `std::io::Read` / `Write` where std's do, so code
//! written against `std::net` ports by changing the import. What differs is how
//! they wait: a goroutine that reads, writes, accepts or connects and would block
//! is parked on the runtime's epoll netpoller, and its M runs other goroutines
//! meanwhile, as in Go. Thousands of connections therefore cost thousands of
//! goroutines, not threads. Called from a plain thread, the same calls block the
//! thread. Every socket is non-blocking underneath and registered once
//! (edge-triggered). Sockets made with `std::net` convert with `TryFrom`.
//!
//! ```
//! use goro::net::{TcpListener, TcpStream};
//! use std::io::{Read, Write};
//!
//! let l = TcpListener::bind("127.0.0.1:0")?;
//! let addr = l.local_addr()?;
//! let server = goro::go!(move || -> std::io::Result<()> {
//!     let (mut s, _) = l.accept()?;
//!     let mut buf = [0; 5];
//!     s.read_exact(&mut buf)?;
//!     s.write_all(&buf)
//! });
//! let mut c = TcpStream::connect(addr)?;
//! c.write_all(b"hello")?;
//! let mut back = [0; 5];
//! c.read_exact(&mut back)?;
//! assert_eq!(&back, b"hello");
//! server.join().unwrap()?;
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! Timeouts set with `set_read_timeout` / `set_write_timeout` bound each call, as
//! std's do, and expire with `io::ErrorKind::TimedOut` (std on Linux reports
//! `WouldBlock`). Linux only, as the netpoller is epoll.

use crate::runtime::netpoll::Registered;
use std::os::fd::AsRawFd;

mod rawio;
mod sockaddr;
mod tcp;
mod udp;

pub use tcp::{Incoming, TcpListener, TcpStream};
pub use udp::UdpSocket;

/// Registers `io` (non-blocking already) with the poller: an entry point, so
/// the runtime starts first if it has not.
fn register<S: AsRawFd>(io: S) -> std::io::Result<Registered<S>> {
    crate::runtime::exports::started();
    Registered::new(io)
}
