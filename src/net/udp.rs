//! `UdpSocket` on the netpoller: std's socket in non-blocking mode inside a
//! `Registered` (`runtime/netpoll/registered.rs`), whose I/O loop parks the
//! calling G on `EAGAIN` until the next readiness edge or the deadline.
//!
//! Invariants: every datagram operation is one syscall (no short-transfer
//! skip: a datagram socket's reads are whole messages); any number of Gs may
//! send and receive on one socket at once; dropping deregisters, wakes the
//! waiters with an error, then closes the fd exactly once.

use crate::runtime::netpoll::{Dir, Registered};
use std::fmt;
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

/// A UDP socket, as `std::net::UdpSocket` (Go's `net.ListenUDP` /
/// `net.DialUDP`).
///
/// A receive parks the goroutine until a datagram arrives, and a send parks it
/// while the socket's send buffer is full (a plain thread blocks instead). Each
/// call sends or receives one whole datagram; a datagram longer than the buffer
/// is truncated, as in std.
///
/// ```
/// use goro::net::UdpSocket;
///
/// let server = UdpSocket::bind("127.0.0.1:0")?;
/// let addr = server.local_addr()?;
/// let echo = goro::go!(move || -> std::io::Result<()> {
///     let mut buf = [0; 64];
///     let (n, from) = server.recv_from(&mut buf)?;
///     server.send_to(&buf[..n], from)?;
///     Ok(())
/// });
/// let client = UdpSocket::bind("127.0.0.1:0")?;
/// client.connect(addr)?;
/// client.send(b"ping")?;
/// let mut buf = [0; 64];
/// let n = client.recv(&mut buf)?;
/// assert_eq!(&buf[..n], b"ping");
/// echo.join().unwrap()?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct UdpSocket {
    inner: Registered<std::net::UdpSocket>,
}

impl UdpSocket {
    /// Creates a socket bound to `addr` (port 0 picks a free port). Of several
    /// addresses, the first that can be bound is used.
    ///
    /// ```
    /// let s = goro::net::UdpSocket::bind("127.0.0.1:0")?;
    /// assert_ne!(s.local_addr()?.port(), 0);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ///
    /// # Errors
    /// As std's (e.g. `AddrInUse`).
    pub fn bind<A: ToSocketAddrs>(addr: A) -> io::Result<UdpSocket> {
        UdpSocket::try_from(std::net::UdpSocket::bind(addr)?)
    }

    /// Sends `buf` as one datagram to `addr` (the first address it resolves
    /// to); returns the number of bytes sent. Parks while the send buffer is full.
    ///
    /// ```
    /// use goro::net::UdpSocket;
    /// let (a, b) = (UdpSocket::bind("127.0.0.1:0")?, UdpSocket::bind("127.0.0.1:0")?);
    /// assert_eq!(a.send_to(b"hey", b.local_addr()?)?, 3);
    /// let mut buf = [0; 8];
    /// assert_eq!(b.recv_from(&mut buf)?, (3, a.local_addr()?));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ///
    /// # Errors
    /// As std's, or `TimedOut`.
    pub fn send_to<A: ToSocketAddrs>(&self, buf: &[u8], addr: A) -> io::Result<usize> {
        let addr = addr
            .to_socket_addrs()?
            .next()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no address to send to"))?;
        self.inner.io(Dir::Write, |s| s.send_to(buf, addr))
    }

    /// Receives one datagram, parking the goroutine (or blocking the thread) until
    /// one arrives; returns its size and the sender's address. Bounded by the
    /// read timeout, if set.
    ///
    /// ```
    /// use goro::net::UdpSocket;
    /// let rx = UdpSocket::bind("127.0.0.1:0")?;
    /// let addr = rx.local_addr()?;
    /// goro::go!(move || UdpSocket::bind("127.0.0.1:0")?.send_to(b"hello", addr));
    /// let mut buf = [0; 16];
    /// let (n, _from) = rx.recv_from(&mut buf)?;
    /// assert_eq!(&buf[..n], b"hello");
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ///
    /// # Errors
    /// As std's, or `TimedOut`.
    pub fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        self.inner.io(Dir::Read, |s| s.recv_from(buf))
    }

    /// Sets the socket's peer: [`send`](UdpSocket::send) goes to it, and only
    /// datagrams from it are received. No packet is sent.
    ///
    /// ```
    /// use goro::net::UdpSocket;
    /// let (a, b) = (UdpSocket::bind("127.0.0.1:0")?, UdpSocket::bind("127.0.0.1:0")?);
    /// a.connect(b.local_addr()?)?;
    /// assert_eq!(a.peer_addr()?, b.local_addr()?);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ///
    /// # Errors
    /// As std's.
    pub fn connect<A: ToSocketAddrs>(&self, addr: A) -> io::Result<()> {
        self.inner.get_ref().connect(addr)
    }

    /// Sends `buf` as one datagram to the peer set by
    /// [`connect`](UdpSocket::connect); returns the number of bytes sent.
    ///
    /// ```
    /// use goro::net::UdpSocket;
    /// let (a, b) = (UdpSocket::bind("127.0.0.1:0")?, UdpSocket::bind("127.0.0.1:0")?);
    /// a.connect(b.local_addr()?)?;
    /// a.send(b"one")?;
    /// let mut buf = [0; 8];
    /// assert_eq!(b.recv_from(&mut buf)?.0, 3);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ///
    /// # Errors
    /// As std's (`NotConnected` without a peer), or `TimedOut`.
    pub fn send(&self, buf: &[u8]) -> io::Result<usize> {
        self.inner.io(Dir::Write, |s| s.send(buf))
    }

    /// Receives one datagram from the peer set by
    /// [`connect`](UdpSocket::connect), parking until one arrives; returns its
    /// size. Bounded by the read timeout, if set.
    ///
    /// ```
    /// use goro::net::UdpSocket;
    /// let (a, b) = (UdpSocket::bind("127.0.0.1:0")?, UdpSocket::bind("127.0.0.1:0")?);
    /// b.connect(a.local_addr()?)?;
    /// a.send_to(b"two", b.local_addr()?)?;
    /// let mut buf = [0; 8];
    /// assert_eq!(b.recv(&mut buf)?, 3);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ///
    /// # Errors
    /// As std's, or `TimedOut`.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.io(Dir::Read, |s| s.recv(buf))
    }

    /// The address the socket is bound to.
    ///
    /// ```
    /// let s = goro::net::UdpSocket::bind("127.0.0.1:0")?;
    /// assert!(s.local_addr()?.ip().is_loopback());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ///
    /// # Errors
    /// As std's.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.get_ref().local_addr()
    }

    /// The peer set by [`connect`](UdpSocket::connect).
    ///
    /// ```
    /// let s = goro::net::UdpSocket::bind("127.0.0.1:0")?;
    /// assert!(s.peer_addr().is_err()); // not connected
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ///
    /// # Errors
    /// As std's: `NotConnected` without a peer.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.inner.get_ref().peer_addr()
    }

    /// Bounds how long each receive may wait; `None`, the default, waits
    /// forever. A receive that times out fails with `io::ErrorKind::TimedOut`.
    /// Not shared with [`try_clone`](UdpSocket::try_clone)d handles.
    ///
    /// ```
    /// use std::time::Duration;
    /// let s = goro::net::UdpSocket::bind("127.0.0.1:0")?;
    /// s.set_read_timeout(Some(Duration::from_millis(2)))?;
    /// let err = s.recv_from(&mut [0; 8]).unwrap_err();
    /// assert_eq!(err.kind(), std::io::ErrorKind::TimedOut);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ///
    /// # Errors
    /// `InvalidInput` for a zero duration, as std.
    pub fn set_read_timeout(&self, d: Option<Duration>) -> io::Result<()> {
        self.inner.set_timeout(Dir::Read, d)
    }

    /// Bounds how long each send may wait for room in the send buffer; `None`,
    /// the default, waits forever. A send that times out fails with
    /// `io::ErrorKind::TimedOut`. Not shared with
    /// [`try_clone`](UdpSocket::try_clone)d handles.
    ///
    /// ```
    /// use std::time::Duration;
    /// let s = goro::net::UdpSocket::bind("127.0.0.1:0")?;
    /// s.set_write_timeout(Some(Duration::from_secs(1)))?;
    /// assert!(s.set_write_timeout(Some(Duration::ZERO)).is_err());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ///
    /// # Errors
    /// `InvalidInput` for a zero duration, as std.
    pub fn set_write_timeout(&self, d: Option<Duration>) -> io::Result<()> {
        self.inner.set_timeout(Dir::Write, d)
    }

    /// Another handle to the same socket (a duplicated descriptor), for instance
    /// to receive in one goroutine and send in another. The clone starts without
    /// timeouts.
    ///
    /// ```
    /// let s = goro::net::UdpSocket::bind("127.0.0.1:0")?;
    /// let s2 = s.try_clone()?;
    /// s2.send_to(b"self", s.local_addr()?)?;
    /// let mut buf = [0; 8];
    /// assert_eq!(s.recv_from(&mut buf)?.0, 4);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ///
    /// # Errors
    /// As std's `try_clone`.
    pub fn try_clone(&self) -> io::Result<UdpSocket> {
        UdpSocket::try_from(self.inner.get_ref().try_clone()?)
    }
}

impl TryFrom<std::net::UdpSocket> for UdpSocket {
    type Error = io::Error;

    /// Takes over a std socket (switched to non-blocking mode).
    fn try_from(s: std::net::UdpSocket) -> io::Result<UdpSocket> {
        s.set_nonblocking(true)?;
        Ok(UdpSocket {
            inner: super::register(s)?,
        })
    }
}

impl AsRawFd for UdpSocket {
    fn as_raw_fd(&self) -> RawFd {
        self.inner.get_ref().as_raw_fd()
    }
}

impl fmt::Debug for UdpSocket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UdpSocket")
            .field("local", &self.local_addr().ok())
            .finish()
    }
}
