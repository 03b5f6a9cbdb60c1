//! Networking: `std::net`'s blocking-style API, on the netpoller.
//!
//! A goroutine that reads, writes, accepts or connects and would block is parked
//! on the epoll netpoller, and its M runs other goroutines meanwhile; called from a
//! plain thread, the same calls block the thread. Every socket is non-blocking
//! underneath and registered once (edge-triggered).
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
//! std's do, and expire with `io::ErrorKind::TimedOut`.

mod sockaddr;
mod tcp;
mod udp;

pub use tcp::{Incoming, TcpListener, TcpStream};
pub use udp::UdpSocket;
