//! `TcpListener` and `TcpStream` on the netpoller: std's types in
//! non-blocking mode inside a `Registered` (`runtime/netpoll/registered.rs`),
//! whose I/O loop parks the calling G on `EAGAIN` until the poller sees the
//! next edge or the operation's deadline passes.
//!
//! Invariants: a connecting socket is registered only once `connect` has
//! started (a socket not yet connecting polls as hung up, which would mark it
//! sticky for good: docs/decisions/0024-netpoll-short-read-skip.md); any
//! number of Gs may read, write and accept on one socket at once, each waiting
//! on its direction's readiness generation; dropping deregisters, wakes the
//! waiters with an error, then closes the fd exactly once (`Registered`'s
//! drop). `incoming()` backs off on fd exhaustion instead of failing
//! (docs/decisions/0031-listener-backlog-and-accept.md).

use super::{rawio, sockaddr};
use crate::runtime::deadline_in;
use crate::runtime::netpoll::{Dir, Registered};
use std::fmt;
use std::io::{self, IoSlice, IoSliceMut, Read, Write};
use std::net::{Shutdown, SocketAddr, ToSocketAddrs};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// A TCP server socket, as `std::net::TcpListener` (Go's `net.Listen("tcp", ...)`).
///
/// [`accept`](TcpListener::accept) parks the goroutine until a connection
/// arrives (a plain thread blocks). The usual server is an accept loop that
/// starts a goroutine per connection, as in Go.
///
/// ```
/// use goro::net::{TcpListener, TcpStream};
/// use std::io::{BufRead, BufReader, Write};
///
/// let listener = TcpListener::bind("127.0.0.1:0")?;
/// let addr = listener.local_addr()?;
/// goro::go!(move || {
///     for conn in listener.incoming() {
///         let conn = conn.unwrap();
///         goro::go!(move || {
///             // Upper-case each line back to the client.
///             let mut out = &conn;
///             for line in BufReader::new(&conn).lines() {
///                 writeln!(out, "{}", line.unwrap().to_uppercase()).unwrap();
///             }
///         });
///     }
/// });
///
/// let conn = TcpStream::connect(addr)?;
/// (&conn).write_all(b"hello\n")?;
/// let mut reply = String::new();
/// BufReader::new(&conn).read_line(&mut reply)?;
/// assert_eq!(reply, "HELLO\n");
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct TcpListener {
    inner: Registered<std::net::TcpListener>,
}

/// A TCP connection, as `std::net::TcpStream` (Go's `net.Conn` from
/// `net.Dial("tcp", ...)`).
///
/// `std::io::Read` and `Write` are implemented for `TcpStream` and for
/// `&TcpStream`, so one goroutine can read while another writes through a shared
/// reference (or an `Arc`). A read, write or connect that would block parks the
/// goroutine until the socket is ready (a plain thread blocks). Writes are not
/// buffered: `flush` does nothing. Dropping the stream closes the connection.
///
/// ```
/// use goro::net::{TcpListener, TcpStream};
/// use std::io::{Read, Write};
///
/// let listener = TcpListener::bind("127.0.0.1:0")?;
/// let addr = listener.local_addr()?;
/// let server = goro::go!(move || -> std::io::Result<Vec<u8>> {
///     let (mut conn, _) = listener.accept()?;
///     let mut all = Vec::new();
///     conn.read_to_end(&mut all)?; // until the client shuts down its side
///     conn.write_all(b"got it")?;
///     Ok(all)
/// });
/// let mut client = TcpStream::connect(addr)?;
/// client.write_all(b"some bytes")?;
/// client.shutdown(std::net::Shutdown::Write)?;
/// let mut reply = String::new();
/// client.read_to_string(&mut reply)?;
/// assert_eq!(reply, "got it");
/// assert_eq!(server.join().unwrap()?, b"some bytes");
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct TcpStream {
    inner: Registered<std::net::TcpStream>,
}

impl TcpListener {
    /// Binds to `addr` and listens (Go's `net.Listen`). `addr` is anything
    /// `ToSocketAddrs` accepts; of several addresses, the first that can be bound
    /// is used. Port 0 picks a free port: read it with
    /// [`local_addr`](TcpListener::local_addr). The accept backlog is the
    /// system's maximum (`net.core.somaxconn`), as Go asks, not std's 128.
    ///
    /// ```
    /// let l = goro::net::TcpListener::bind("127.0.0.1:0")?;
    /// assert_ne!(l.local_addr()?.port(), 0);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ///
    /// # Errors
    /// Resolution, bind or listen errors, as std's (e.g. `AddrInUse`).
    pub fn bind<A: ToSocketAddrs>(addr: A) -> io::Result<TcpListener> {
        let l = std::net::TcpListener::bind(addr)?;
        // std listens with a backlog of 128; a burst of connections overflows that
        // (each overflow costs the client a 1 s SYN retry). Go asks for the
        // system's maximum; calling listen(2) again raises it (the kernel caps
        // the value at net.core.somaxconn).
        // SAFETY: listen(2) on a socket we own.
        if unsafe { libc::listen(l.as_raw_fd(), libc::c_int::MAX) } < 0 {
            return Err(io::Error::last_os_error());
        }
        TcpListener::try_from(l)
    }

    /// Accepts a connection, parking the goroutine (or blocking the thread) until
    /// one arrives. Returns the connection and the peer's address.
    ///
    /// ```
    /// use goro::net::{TcpListener, TcpStream};
    ///
    /// let l = TcpListener::bind("127.0.0.1:0")?;
    /// let addr = l.local_addr()?;
    /// let client = goro::go!(move || TcpStream::connect(addr));
    /// let (conn, peer) = l.accept()?;
    /// let client = client.join().unwrap()?;
    /// assert_eq!(peer, client.local_addr()?);
    /// assert_eq!(conn.peer_addr()?, peer);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ///
    /// # Errors
    /// Accept errors; the listener stays usable after them (for `EMFILE`/`ENFILE`,
    /// see [`TcpListener::incoming`], which backs off and retries).
    pub fn accept(&self) -> io::Result<(TcpStream, SocketAddr)> {
        let (s, peer) = self.inner.io(Dir::Read, |l| l.accept())?;
        Ok((TcpStream::try_from(s)?, peer))
    }

    /// An endless iterator of accepted connections, for an accept loop: each
    /// `next` is an [`accept`](TcpListener::accept) without the peer address.
    /// When the process is out of file descriptors (`EMFILE`/`ENFILE`) it waits
    /// and retries — 5 ms, doubling up to 1 s, as Go's HTTP server does —
    /// instead of yielding the error, so the loop survives descriptor exhaustion;
    /// other errors are yielded.
    ///
    /// ```
    /// use goro::net::{TcpListener, TcpStream};
    ///
    /// let l = TcpListener::bind("127.0.0.1:0")?;
    /// let addr = l.local_addr()?;
    /// let clients: Vec<_> = (0..3).map(|_| goro::go!(move || TcpStream::connect(addr))).collect();
    /// let accepted = l.incoming().take(3).filter(|c| c.is_ok()).count();
    /// assert_eq!(accepted, 3);
    /// # for c in clients { c.join().unwrap()?; }
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn incoming(&self) -> Incoming<'_> {
        Incoming { listener: self }
    }

    /// The address the listener is bound to, with the actual port if it was bound
    /// to port 0.
    ///
    /// ```
    /// let l = goro::net::TcpListener::bind("127.0.0.1:0")?;
    /// let addr = l.local_addr()?;
    /// assert!(addr.ip().is_loopback() && addr.port() != 0);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ///
    /// # Errors
    /// As std's.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.get_ref().local_addr()
    }

    /// Another handle to the same listening socket (a duplicated descriptor), for
    /// instance to accept from several goroutines.
    ///
    /// ```
    /// let l = goro::net::TcpListener::bind("127.0.0.1:0")?;
    /// let l2 = l.try_clone()?;
    /// assert_eq!(l.local_addr()?, l2.local_addr()?);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ///
    ///
    /// # Errors
    /// As std's `try_clone`.
    pub fn try_clone(&self) -> io::Result<TcpListener> {
        TcpListener::try_from(self.inner.get_ref().try_clone()?)
    }
}

impl TryFrom<std::net::TcpListener> for TcpListener {
    type Error = io::Error;

    /// Takes over a std listener (switched to non-blocking mode).
    fn try_from(l: std::net::TcpListener) -> io::Result<TcpListener> {
        l.set_nonblocking(true)?;
        Ok(TcpListener {
            inner: super::register(l)?,
        })
    }
}

/// The endless iterator of [`TcpListener::incoming`]: yields each accepted
/// connection, parking between them, and rides out file-descriptor exhaustion.
///
/// ```
/// use goro::net::{TcpListener, TcpStream};
/// use std::io::Write;
///
/// let l = TcpListener::bind("127.0.0.1:0")?;
/// let addr = l.local_addr()?;
/// goro::go!(move || {
///     for conn in l.incoming() {
///         let _ = conn.and_then(|mut c| c.write_all(b"hi"));
///     }
/// });
/// let mut buf = String::new();
/// std::io::Read::read_to_string(&mut TcpStream::connect(addr)?, &mut buf)?;
/// assert_eq!(buf, "hi");
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct Incoming<'a> {
    listener: &'a TcpListener,
}

impl Iterator for Incoming<'_> {
    type Item = io::Result<TcpStream>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut backoff = Duration::from_millis(5);
        loop {
            match self.listener.accept() {
                Ok((s, _)) => return Some(Ok(s)),
                Err(e) if matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) => {
                    crate::time::sleep(backoff);
                    backoff = (backoff * 2).min(Duration::from_secs(1));
                }
                Err(e) => return Some(Err(e)),
            }
        }
    }
}

impl TcpStream {
    /// Opens a connection to `addr` (Go's `net.Dial("tcp", addr)`), trying each
    /// address it resolves to in turn, and parking the goroutine (or blocking the
    /// thread) while each attempt is in progress. There is no connect timeout
    /// other than the system's; to bound one attempt, use
    /// [`TcpStream::connect_timeout`].
    ///
    /// ```
    /// use goro::net::{TcpListener, TcpStream};
    ///
    /// let l = TcpListener::bind("127.0.0.1:0")?;
    /// let s = TcpStream::connect(l.local_addr()?)?; // the kernel completes the handshake
    /// assert_eq!(s.peer_addr()?, l.local_addr()?);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ///
    /// # Errors
    /// Resolution errors, or the last address's connect error (e.g.
    /// `ConnectionRefused`); `InvalidInput` if `addr` resolves to no address.
    pub fn connect<A: ToSocketAddrs>(addr: A) -> io::Result<TcpStream> {
        let mut last = None;
        for a in addr.to_socket_addrs()? {
            match connect_addr(&a, None) {
                Ok(s) => return Ok(s),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no addresses to connect to")))
    }

    /// Connects to one address, giving up after `timeout` (like std's
    /// `TcpStream::connect_timeout`). The goroutine parks while it waits.
    ///
    /// # Errors
    ///
    /// `TimedOut` when the handshake has not finished in time; otherwise as
    /// [`connect`](TcpStream::connect). A zero timeout is `InvalidInput`, as in std.
    ///
    /// ```
    /// use goro::net::{TcpListener, TcpStream};
    /// use std::time::Duration;
    ///
    /// let l = TcpListener::bind("127.0.0.1:0")?;
    /// let s = TcpStream::connect_timeout(&l.local_addr()?, Duration::from_secs(1))?;
    /// assert_eq!(s.peer_addr()?, l.local_addr()?);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn connect_timeout(addr: &SocketAddr, timeout: Duration) -> io::Result<TcpStream> {
        if timeout.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "cannot connect with a zero timeout",
            ));
        }
        connect_addr(addr, deadline_in(timeout))
    }

    /// Bounds how long each read (and [`peek`](TcpStream::peek)) may wait;
    /// `None`, the default, waits forever. A read that times out fails with
    /// `io::ErrorKind::TimedOut` and the stream stays usable. As in std, the bound
    /// is per call, not a deadline for a series of calls (unlike Go's
    /// `SetReadDeadline`). It is not shared with [`try_clone`](TcpStream::try_clone)d
    /// handles.
    ///
    /// ```
    /// use goro::net::{TcpListener, TcpStream};
    /// use std::io::{ErrorKind, Read};
    /// use std::time::Duration;
    ///
    /// let l = TcpListener::bind("127.0.0.1:0")?;
    /// let mut s = TcpStream::connect(l.local_addr()?)?;
    /// s.set_read_timeout(Some(Duration::from_millis(5)))?;
    /// let err = s.read(&mut [0; 8]).unwrap_err(); // the peer sends nothing
    /// assert_eq!(err.kind(), ErrorKind::TimedOut);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ///
    /// # Errors
    /// `InvalidInput` for `Some(Duration::ZERO)`, as std.
    pub fn set_read_timeout(&self, d: Option<Duration>) -> io::Result<()> {
        self.inner.set_timeout(Dir::Read, d)
    }

    /// Bounds how long each write may wait for room in the socket's send buffer;
    /// `None`, the default, waits forever. A write that times out fails with
    /// `io::ErrorKind::TimedOut` (a `write_all` may have written part of the
    /// data by then). Per call, as std's, and not shared with
    /// [`try_clone`](TcpStream::try_clone)d handles.
    ///
    /// ```
    /// use goro::net::{TcpListener, TcpStream};
    /// use std::io::{ErrorKind, Write};
    /// use std::time::Duration;
    ///
    /// let l = TcpListener::bind("127.0.0.1:0")?;
    /// let mut s = TcpStream::connect(l.local_addr()?)?;
    /// s.set_write_timeout(Some(Duration::from_millis(5)))?;
    /// // Nobody reads: the buffers fill up and a write ends up waiting.
    /// let chunk = vec![0u8; 1 << 20];
    /// let err = loop {
    ///     if let Err(e) = s.write(&chunk) {
    ///         break e;
    ///     }
    /// };
    /// assert_eq!(err.kind(), ErrorKind::TimedOut);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ///
    /// # Errors
    /// `InvalidInput` for `Some(Duration::ZERO)`, as std.
    pub fn set_write_timeout(&self, d: Option<Duration>) -> io::Result<()> {
        self.inner.set_timeout(Dir::Write, d)
    }

    /// The read timeout set by [`set_read_timeout`](TcpStream::set_read_timeout).
    ///
    /// ```
    /// use std::time::Duration;
    /// let l = goro::net::TcpListener::bind("127.0.0.1:0")?;
    /// let s = goro::net::TcpStream::connect(l.local_addr()?)?;
    /// assert_eq!(s.read_timeout()?, None);
    /// s.set_read_timeout(Some(Duration::from_secs(1)))?;
    /// assert_eq!(s.read_timeout()?, Some(Duration::from_secs(1)));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ///
    /// # Errors
    /// Never; the `io::Result` is std's signature.
    pub fn read_timeout(&self) -> io::Result<Option<Duration>> {
        Ok(self.inner.timeout(Dir::Read))
    }

    /// The write timeout set by [`set_write_timeout`](TcpStream::set_write_timeout).
    ///
    /// ```
    /// use std::time::Duration;
    /// let l = goro::net::TcpListener::bind("127.0.0.1:0")?;
    /// let s = goro::net::TcpStream::connect(l.local_addr()?)?;
    /// s.set_write_timeout(Some(Duration::from_millis(250)))?;
    /// assert_eq!(s.write_timeout()?, Some(Duration::from_millis(250)));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ///
    /// # Errors
    /// Never; the `io::Result` is std's signature.
    pub fn write_timeout(&self) -> io::Result<Option<Duration>> {
        Ok(self.inner.timeout(Dir::Write))
    }

    /// Shuts down the reading side, the writing side or both (Go's `CloseRead` /
    /// `CloseWrite`). After `Shutdown::Write` the peer reads end of file, while
    /// this side can still read its reply. A goroutine parked reading from this
    /// stream wakes with end of file after `Shutdown::Read`.
    ///
    /// ```
    /// use goro::net::{TcpListener, TcpStream};
    /// use std::io::Read;
    /// use std::net::Shutdown;
    ///
    /// let l = TcpListener::bind("127.0.0.1:0")?;
    /// let client = TcpStream::connect(l.local_addr()?)?;
    /// let (mut server_side, _) = l.accept()?;
    /// client.shutdown(Shutdown::Write)?;
    /// assert_eq!(server_side.read(&mut [0; 8])?, 0); // end of file
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ///
    /// # Errors
    /// As std's.
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        self.inner.get_ref().shutdown(how)
    }

    /// Another handle to the same connection (a duplicated descriptor), for
    /// instance to move the reading half into one goroutine and the writing half
    /// into another. (Sharing `&TcpStream` does the same without a descriptor.)
    /// Unlike std's, the clone starts without read and write timeouts: each handle
    /// has its own.
    ///
    /// ```
    /// use goro::net::{TcpListener, TcpStream};
    /// use std::io::{Read, Write};
    ///
    /// let l = TcpListener::bind("127.0.0.1:0")?;
    /// let mut client = TcpStream::connect(l.local_addr()?)?;
    /// let (server_side, _) = l.accept()?;
    /// let mut writer = server_side.try_clone()?;
    /// goro::go!(move || writer.write_all(b"from the clone").unwrap());
    /// let mut buf = [0; 14];
    /// client.read_exact(&mut buf)?;
    /// assert_eq!(&buf, b"from the clone");
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ///
    /// # Errors
    /// As std's `try_clone`.
    pub fn try_clone(&self) -> io::Result<TcpStream> {
        TcpStream::try_from(self.inner.get_ref().try_clone()?)
    }

    /// The address of the remote end (Go's `RemoteAddr`).
    ///
    /// ```
    /// let l = goro::net::TcpListener::bind("127.0.0.1:0")?;
    /// let s = goro::net::TcpStream::connect(l.local_addr()?)?;
    /// assert_eq!(s.peer_addr()?, l.local_addr()?);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ///
    /// # Errors
    /// As std's, e.g. `NotConnected`.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.inner.get_ref().peer_addr()
    }

    /// The address of this end (Go's `LocalAddr`).
    ///
    /// ```
    /// let l = goro::net::TcpListener::bind("127.0.0.1:0")?;
    /// let s = goro::net::TcpStream::connect(l.local_addr()?)?;
    /// let (_, peer) = l.accept()?;
    /// assert_eq!(s.local_addr()?, peer);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ///
    /// # Errors
    /// As std's.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.get_ref().local_addr()
    }

    /// Sets `TCP_NODELAY`: `true` turns Nagle's algorithm off, so small writes
    /// are sent at once instead of being coalesced. Off by default, as in std
    /// (Go turns it on for every connection).
    ///
    /// ```
    /// let l = goro::net::TcpListener::bind("127.0.0.1:0")?;
    /// let s = goro::net::TcpStream::connect(l.local_addr()?)?;
    /// s.set_nodelay(true)?;
    /// assert!(s.nodelay()?);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ///
    ///
    /// # Errors
    /// As std's.
    pub fn set_nodelay(&self, on: bool) -> io::Result<()> {
        self.inner.get_ref().set_nodelay(on)
    }

    /// Whether `TCP_NODELAY` is set (see [`set_nodelay`](TcpStream::set_nodelay)).
    ///
    /// ```
    /// let l = goro::net::TcpListener::bind("127.0.0.1:0")?;
    /// let s = goro::net::TcpStream::connect(l.local_addr()?)?;
    /// assert!(!s.nodelay()?);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ///
    /// # Errors
    /// As std's.
    pub fn nodelay(&self) -> io::Result<bool> {
        self.inner.get_ref().nodelay()
    }

    /// Reads data without consuming it: the next read returns the same bytes.
    /// Parks the goroutine (or blocks the thread) until some data is available,
    /// bounded by the read timeout. Returns 0 at end of file.
    ///
    /// ```
    /// use goro::net::{TcpListener, TcpStream};
    /// use std::io::{Read, Write};
    ///
    /// let l = TcpListener::bind("127.0.0.1:0")?;
    /// let mut client = TcpStream::connect(l.local_addr()?)?;
    /// let (mut server_side, _) = l.accept()?;
    /// client.write_all(b"abc")?;
    /// let mut buf = [0; 3];
    /// let n = server_side.peek(&mut buf)?;
    /// assert_eq!(&buf[..n], &b"abc"[..n]);
    /// server_side.read_exact(&mut buf)?; // still there
    /// assert_eq!(&buf, b"abc");
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ///
    /// # Errors
    /// As std's, or `TimedOut`.
    pub fn peek(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.io(Dir::Read, |s| s.peek(buf))
    }
}

/// Connects to `addr` ([`connect_one`]), and again, up to twice, if the socket
/// came back connected to itself, as Go's `Dial` does. Connecting to a local
/// port that nobody listens on can do that: the kernel may pick that very port
/// as the source port, and the handshake then completes with itself (Go's
/// `TestTCPSelfConnect`: once every few hundred to few ten thousand tries here).
/// The next try most likely gets another source port, and the honest answer,
/// `ConnectionRefused`.
fn connect_addr(addr: &SocketAddr, deadline: Option<u64>) -> io::Result<TcpStream> {
    let mut stream = connect_one(addr, deadline)?;
    for _ in 0..2 {
        if !connected_to_itself(&stream) {
            break;
        }
        stream = connect_one(addr, deadline)?;
    }
    Ok(stream)
}

fn connected_to_itself(stream: &TcpStream) -> bool {
    let s = stream.inner.get_ref();
    matches!((s.local_addr(), s.peer_addr()), (Ok(l), Ok(p)) if l == p)
}

/// Non-blocking connect: start it, park until the socket is writable (or the
/// runtime clock reaches `deadline`: `TimedOut`), then ask the kernel how it went.
fn connect_one(addr: &SocketAddr, deadline: Option<u64>) -> io::Result<TcpStream> {
    let domain = if addr.is_ipv4() { libc::AF_INET } else { libc::AF_INET6 };
    // SAFETY: plain syscall; the result is checked before use.
    let fd = unsafe { libc::socket(domain, libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh socket that nothing else owns.
    let std_stream = std::net::TcpStream::from(unsafe { OwnedFd::from_raw_fd(fd) });
    let (storage, len) = sockaddr::to_c(addr);
    // SAFETY: `storage` holds a valid sockaddr of `len` bytes.
    let r = unsafe { libc::connect(fd, std::ptr::addr_of!(storage).cast(), len) };
    if r != 0 {
        let err = io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EINPROGRESS) {
            return Err(err);
        }
    }
    // Registered only now, as Go does: a socket not yet connecting polls as
    // hung up, and that event would mark both directions sticky for good
    // (`netpoll::Registered`'s short-transfer skip would then never apply).
    // A connection that completes before or after this is seen below.
    let stream = TcpStream {
        inner: super::register(std_stream)?,
    };
    if r == 0 {
        return Ok(stream);
    }
    loop {
        // The generation is read before the checks, so a completion after them
        // is an edge the wait sees.
        let seen = stream.inner.gen(Dir::Write);
        if let Some(e) = stream.inner.get_ref().take_error()? {
            return Err(e);
        }
        if stream.inner.get_ref().peer_addr().is_ok() {
            return Ok(stream);
        }
        stream.inner.wait(Dir::Write, seen, deadline)?;
    }
}

impl TryFrom<std::net::TcpStream> for TcpStream {
    type Error = io::Error;

    /// Takes over a std stream (switched to non-blocking mode).
    fn try_from(s: std::net::TcpStream) -> io::Result<TcpStream> {
        s.set_nonblocking(true)?;
        Ok(TcpStream {
            inner: super::register(s)?,
        })
    }
}

/// A read into no buffer space returns 0 at once, as Go's `Read` does and as a
/// blocking `recv` of 0 bytes does; the non-blocking `recv` says `EAGAIN` on a
/// socket with no data, which would park the reader until data came.
impl Read for &TcpStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let want = buf.len();
        if want == 0 {
            return Ok(0);
        }
        self.inner
            .stream_io(Dir::Read, want, |s| rawio::recv(s.as_raw_fd(), buf))
    }

    fn read_vectored(&mut self, bufs: &mut [IoSliceMut<'_>]) -> io::Result<usize> {
        let want = rawio::vectored_len(bufs.iter().map(|b| b.len()));
        if want == 0 {
            return Ok(0);
        }
        self.inner
            .stream_io(Dir::Read, want, |s| rawio::readv(s.as_raw_fd(), bufs))
    }
}

impl Write for &TcpStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.inner
            .stream_io(Dir::Write, buf.len(), |s| rawio::send(s.as_raw_fd(), buf))
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        let want = rawio::vectored_len(bufs.iter().map(|b| b.len()));
        self.inner
            .stream_io(Dir::Write, want, |s| rawio::send_vectored(s.as_raw_fd(), bufs))
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Read for TcpStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        (&*self).read(buf)
    }

    fn read_vectored(&mut self, bufs: &mut [IoSliceMut<'_>]) -> io::Result<usize> {
        (&*self).read_vectored(bufs)
    }
}

impl Write for TcpStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        (&*self).write(buf)
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        (&*self).write_vectored(bufs)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl AsRawFd for TcpStream {
    fn as_raw_fd(&self) -> RawFd {
        self.inner.get_ref().as_raw_fd()
    }
}

impl AsRawFd for TcpListener {
    fn as_raw_fd(&self) -> RawFd {
        self.inner.get_ref().as_raw_fd()
    }
}

impl fmt::Debug for TcpStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TcpStream")
            .field("local", &self.local_addr().ok())
            .field("peer", &self.peer_addr().ok())
            .finish()
    }
}

impl fmt::Debug for TcpListener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TcpListener")
            .field("local", &self.local_addr().ok())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn open_fds() -> usize {
        std::fs::read_dir("/proc/self/fd").map(|d| d.count()).unwrap_or(0)
    }

    /// Thousands of sockets opened and dropped: every fd is closed (and
    /// deregistered) exactly once — the count returns to where it was.
    #[test]
    fn sockets_do_not_leak_descriptors() {
        // The runtime's own descriptors (poller, monitor pipe) exist from its start.
        crate::runtime::gomaxprocs();
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let before = open_fds();
        for _ in 0..2000 {
            let c = TcpStream::connect(addr).unwrap();
            let (s, _) = l.accept().unwrap();
            let c2 = c.try_clone().unwrap();
            drop((c, s, c2));
        }
        assert_eq!(open_fds(), before);
    }
}
