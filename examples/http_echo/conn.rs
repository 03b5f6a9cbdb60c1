//! One connection, served by one goroutine: read, answer every complete request
//! already buffered (pipelining), write the answers in one go, read again.
//!
//! Every wait parks the goroutine on the netpoller, never its thread. Each wait
//! is bounded by the deadline of the connection's phase ([`Timeouts`]): the
//! head, the body, the write of the answers, the idle time between requests.
//! A deadline is set when its phase begins and is not moved by bytes that
//! arrive, so a trickling client is closed on time. A read deadline that passes
//! ends the connection (with 408 if a request was half-sent); a write deadline
//! that passes ends it at once; a refused request (see [`HttpError`]) is
//! answered and the connection closed, after a lingering drain (bounded in time
//! and bytes) so the client reads the answer instead of a reset.

use crate::chunked::Chunked;
use crate::limits::Timeouts;
use crate::request::{parse_head, Body, Head, HttpError};
use crate::response::{Response, CONTINUE};
use crate::routes;
use goro::net::TcpStream;
use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::ops::Range;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

/// Bytes asked of the socket per read.
const READ_SIZE: usize = 16 * 1024;
/// How long an idle connection keeps its buffers: a keep-alive client's next
/// request usually comes sooner. After that it waits for the request's first
/// byte without them (an idle connection then holds no buffer, and its
/// goroutine's stack is swapped out a second later: `Config::swap_idle_after`).
const KEEP_BUFFERS: Duration = Duration::from_secs(1);
/// Pipelined answers are written out once this many bytes pile up.
const FLUSH_AT: usize = 64 * 1024;
/// After refusing a request: for how long at most, and how much, to read and
/// discard.
const LINGER: Duration = Duration::from_millis(500);
const LINGER_BYTES: usize = 256 * 1024;
/// Refusing at once: how much of what the client has already sent to read
/// and discard.
const AT_ONCE_BYTES: usize = 64 * 1024;

/// Serves `stream` until the client closes it, a deadline passes, or a request
/// is refused. I/O errors end the connection quietly: the peer is gone.
pub fn serve(stream: TcpStream, timeouts: Timeouts) {
    let mut conn = Conn::new(stream, timeouts);
    if let Err(refused) = conn.run() {
        conn.refuse(&refused);
    }
}

/// Why a connection beyond `--max-conns` is refused.
const TOO_MANY: HttpError = HttpError::new(503, "too many connections, try again later");

/// Answers 503 to a connection beyond `--max-conns` and closes it.
pub fn turn_away(stream: TcpStream, timeouts: Timeouts) {
    Conn::new(stream, timeouts).refuse(&TOO_MANY);
}

/// Answers 503 to a connection beyond `--max-conns` and closes it, waiting
/// for nothing: the answer is one write into the empty send buffer of a new
/// socket, the write side is shut, and what the client has already sent is
/// read and dropped (up to [`AT_ONCE_BYTES`]), so that the close sends no
/// reset. A request that arrives after the close is answered by the kernel
/// with a reset, which the client reads after the 503 and its end of stream.
pub fn turn_away_at_once(stream: TcpStream) {
    let mut answer = Vec::new();
    let text = format!("{TOO_MANY}\n");
    Response::text(TOO_MANY.status, &text).write_to(&mut answer, false, false);
    let fd = stream.as_raw_fd();
    // SAFETY: `fd` is the open socket `stream` owns, `answer` is live for the
    // call; MSG_DONTWAIT: never waits, MSG_NOSIGNAL: a closed peer is an
    // error, not SIGPIPE.
    let sent = unsafe {
        libc::send(
            fd,
            answer.as_ptr().cast(),
            answer.len(),
            libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
        )
    };
    if sent < 0 || stream.shutdown(Shutdown::Write).is_err() {
        return;
    }
    let mut sink = [0u8; 4096];
    let mut drained = 0;
    while drained < AT_ONCE_BYTES {
        // SAFETY: as above; `sink` is a live buffer of its length.
        let n = unsafe { libc::recv(fd, sink.as_mut_ptr().cast(), sink.len(), libc::MSG_DONTWAIT) };
        match usize::try_from(n) {
            Ok(n) if n > 0 => drained += n,
            _ => return,
        }
    }
}

struct Conn {
    stream: TcpStream,
    input: InputBuffer,
    out: Vec<u8>,
    /// A request whose head is parsed and whose body is still arriving.
    pending: Option<Pending>,
    timeouts: Timeouts,
    phase: Phase,
    /// When the current phase's time is up (for [`Phase::Idle`], counted from
    /// the end of the last write).
    deadline: Instant,
}

/// What the connection is waiting for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// The rest of a request's head (for a new connection: its first byte too).
    Head,
    /// The rest of a request's body.
    Body,
    /// The first byte of the next request.
    Idle,
}

struct Pending {
    head: Head,
    body: BodyState,
    continue_sent: bool,
}

/// How much of a pending request's body has arrived.
enum BodyState {
    /// `Content-Length` bytes, still to arrive whole in the input buffer.
    Length(usize),
    /// Chunks, decoded as they arrive.
    Chunked(Chunked),
}

/// Where a complete request's body is.
enum BodyBytes {
    /// In the input buffer.
    Buffered(Range<usize>),
    /// Decoded from chunks.
    Decoded(Vec<u8>),
}

impl Conn {
    fn new(stream: TcpStream, timeouts: Timeouts) -> Conn {
        let _ = stream.set_nodelay(true);
        let mut conn = Conn {
            stream,
            input: InputBuffer::new(),
            out: Vec::with_capacity(READ_SIZE),
            pending: None,
            timeouts,
            phase: Phase::Head,
            deadline: Instant::now(),
        };
        conn.enter(Phase::Head);
        conn
    }

    /// Starts `phase`, with its deadline counted from now.
    fn enter(&mut self, phase: Phase) {
        let t = self.timeouts;
        let limit = match phase {
            Phase::Head => t.header,
            Phase::Body => t.body,
            Phase::Idle => t.idle,
        };
        self.phase = phase;
        self.deadline = Instant::now() + limit;
    }

    /// The request loop; `Err` is a request to refuse, `Ok` a connection that
    /// ended (closed by the client, idle, answered with `Connection: close`, or
    /// an I/O error).
    fn run(&mut self) -> Result<(), HttpError> {
        loop {
            // The idle deadline counts from the last answer's write, not from
            // bytes that start no request (empty lines).
            let mut answered = false;
            while let Some((head, body)) = self.next_request()? {
                let bytes = match &body {
                    BodyBytes::Buffered(range) => &self.input.data()[range.clone()],
                    BodyBytes::Decoded(bytes) => bytes,
                };
                routes::answer(&head, bytes, &self.stream, &mut self.out);
                if let BodyBytes::Buffered(range) = body {
                    self.input.consume(range.len());
                }
                self.input.skip_empty_lines();
                if self.input.data().is_empty() {
                    self.phase = Phase::Idle;
                    answered = true;
                } else {
                    self.enter(Phase::Head);
                }
                if !head.keep_alive {
                    let _ = self.flush();
                    self.linger();
                    return Ok(());
                }
                if self.out.len() >= FLUSH_AT && self.flush().is_err() {
                    return Ok(());
                }
            }
            if self.flush().is_err() {
                return Ok(());
            }
            if answered && self.phase == Phase::Idle {
                self.enter(Phase::Idle);
            }
            match self.fill() {
                Ok(0) => return Ok(()),
                Ok(_) if self.phase == Phase::Idle => {
                    // Empty lines between requests are skipped (RFC 9112
                    // §2.2) and leave the connection idle, on the same deadline.
                    self.input.skip_empty_lines();
                    if !self.input.data().is_empty() {
                        self.enter(Phase::Head);
                    }
                }
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::TimedOut => {
                    return if self.pending.is_some() || !self.input.data().is_empty() {
                        Err(HttpError::new(408, "request not finished in time"))
                    } else {
                        Ok(())
                    };
                }
                Err(_) => return Ok(()),
            }
        }
    }

    /// The next complete request in the input, or `None` if more bytes are
    /// needed. A parsed head is kept in `pending` while its body arrives.
    /// Never inlined, nor is the answer: the parser's header slots and the
    /// answer's locals stay out of the frame of [`Conn::run`], which a
    /// connection waiting for its next request keeps on its stack (and in
    /// its stack's copy once swapped out).
    #[inline(never)]
    fn next_request(&mut self) -> Result<Option<(Head, BodyBytes)>, HttpError> {
        let mut p = match self.pending.take() {
            Some(p) => p,
            None => match parse_head(self.input.data())? {
                Some(head) => {
                    self.input.consume(head.len);
                    self.enter(Phase::Body);
                    let body = match head.body {
                        Body::None => BodyState::Length(0),
                        Body::Length(n) => BodyState::Length(n),
                        Body::Chunked => BodyState::Chunked(Chunked::new()),
                    };
                    Pending {
                        head,
                        body,
                        continue_sent: false,
                    }
                }
                None => return Ok(None),
            },
        };
        let body = match &mut p.body {
            BodyState::Length(n) => {
                let n = *n;
                self.input.reserve(n);
                (self.input.data().len() >= n).then_some(BodyBytes::Buffered(0..n))
            }
            BodyState::Chunked(decoder) => {
                let used = decoder.feed(self.input.data())?;
                self.input.consume(used);
                decoder.is_done().then(|| {
                    let done = std::mem::replace(decoder, Chunked::new());
                    BodyBytes::Decoded(done.into_body())
                })
            }
        };
        match body {
            Some(body) => Ok(Some((p.head, body))),
            None => {
                if p.head.expect_continue && !p.continue_sent {
                    self.out.extend_from_slice(CONTINUE);
                    p.continue_sent = true;
                }
                self.pending = Some(p);
                Ok(None)
            }
        }
    }

    /// Reads once, waiting until the phase's deadline at most. An idle
    /// connection waits with its buffers for [`KEEP_BUFFERS`], then without.
    fn fill(&mut self) -> io::Result<usize> {
        if self.phase == Phase::Idle && self.input.data().is_empty() {
            let keep_until = (Instant::now() + KEEP_BUFFERS).min(self.deadline);
            set_deadline(&self.stream, Dir::Read, keep_until)?;
            match self.input.fill(&mut self.stream) {
                Err(e) if e.kind() == io::ErrorKind::TimedOut && keep_until < self.deadline => {
                    self.wait_without_buffers()?;
                }
                read => return read,
            }
        }
        set_deadline(&self.stream, Dir::Read, self.deadline)?;
        self.input.fill(&mut self.stream)
    }

    /// Gives both buffers back and waits, until the idle deadline, for the
    /// next request's first byte (or the end of the stream) to arrive.
    fn wait_without_buffers(&mut self) -> io::Result<()> {
        self.input.release();
        self.out = Vec::new();
        set_deadline(&self.stream, Dir::Read, self.deadline)?;
        self.stream.peek(&mut [0u8; 1])?;
        self.out = Vec::with_capacity(READ_SIZE);
        Ok(())
    }

    /// Writes out the buffered answers within the write timeout, however the
    /// client paces its reading.
    fn flush(&mut self) -> io::Result<()> {
        if self.out.is_empty() {
            return Ok(());
        }
        let deadline = Instant::now() + self.timeouts.write;
        let mut rest = &self.out[..];
        let mut result = Ok(());
        while !rest.is_empty() {
            if let Err(e) = set_deadline(&self.stream, Dir::Write, deadline) {
                result = Err(e);
                break;
            }
            match self.stream.write(rest) {
                Ok(0) => {
                    result = Err(io::ErrorKind::WriteZero.into());
                    break;
                }
                Ok(n) => rest = &rest[n..],
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        self.out.clear();
        // A large answer grew the buffer; a waiting connection keeps only the
        // usual size.
        if self.out.capacity() > 4 * READ_SIZE {
            self.out = Vec::with_capacity(READ_SIZE);
        }
        result
    }

    /// Answers a refused request and closes the connection.
    fn refuse(&mut self, refused: &HttpError) {
        let text = format!("{refused}\n");
        Response::text(refused.status, &text).write_to(&mut self.out, false, false);
        let _ = self.flush();
        self.linger();
    }

    /// Half-closes, then reads and drops what the client still sends for a
    /// moment, so that closing does not reset the connection before the client
    /// has read our last answer. Never inlined: its 4 KiB sink would sit in the
    /// frame of [`Conn::run`] (which an idle connection's goroutine keeps on
    /// its stack, and in its stack's copy once swapped out).
    #[inline(never)]
    fn linger(&mut self) {
        if self.stream.shutdown(Shutdown::Write).is_err() {
            return;
        }
        let deadline = Instant::now() + LINGER;
        let mut sink = [0u8; 4096];
        let mut drained = 0;
        while drained < LINGER_BYTES {
            if set_deadline(&self.stream, Dir::Read, deadline).is_err() {
                return;
            }
            match self.stream.read(&mut sink) {
                Ok(0) | Err(_) => return,
                Ok(n) => drained += n,
            }
        }
    }
}

/// Which way a deadline bounds.
#[derive(Debug, Clone, Copy)]
enum Dir {
    Read,
    Write,
}

/// Bounds the next read or write on `stream` to end by `deadline`; `TimedOut`
/// if it has already passed.
fn set_deadline(stream: &TcpStream, dir: Dir, deadline: Instant) -> io::Result<()> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(io::ErrorKind::TimedOut.into());
    }
    match dir {
        Dir::Read => stream.set_read_timeout(Some(left)),
        Dir::Write => stream.set_write_timeout(Some(left)),
    }
}

/// The bytes read and not yet consumed: `buf[start..end]`. The buffer's length
/// is its capacity (zeroed once), so reads need no unsafe code.
struct InputBuffer {
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

impl InputBuffer {
    fn new() -> Self {
        InputBuffer {
            buf: vec![0; READ_SIZE],
            start: 0,
            end: 0,
        }
    }

    fn data(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    fn consume(&mut self, n: usize) {
        self.start += n;
        debug_assert!(self.start <= self.end);
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
            // A large body grew the buffer; an idle connection keeps only the
            // usual size.
            if self.buf.len() > 4 * READ_SIZE {
                self.buf = vec![0; READ_SIZE];
            }
        }
    }

    /// Gives the (empty) buffer back; the next [`InputBuffer::fill`] makes a
    /// new one.
    fn release(&mut self) {
        debug_assert!(self.data().is_empty());
        *self = InputBuffer {
            buf: Vec::new(),
            start: 0,
            end: 0,
        };
    }

    /// Drops the empty lines (CRLF) at the front.
    fn skip_empty_lines(&mut self) {
        let n = self.data().chunks_exact(2).take_while(|pair| pair == b"\r\n").count();
        self.consume(2 * n);
    }

    /// Makes room for `want` unconsumed bytes (a body of known length) and a
    /// read's worth beyond, growing to that size and no more.
    fn reserve(&mut self, want: usize) {
        let room = want + READ_SIZE / 4;
        if self.buf.len() - self.start < room {
            self.compact();
            if self.buf.len() < room {
                self.buf.resize(room, 0);
            }
        }
    }

    /// Moves the unconsumed bytes to the front.
    fn compact(&mut self) {
        self.buf.copy_within(self.start..self.end, 0);
        self.end -= self.start;
        self.start = 0;
    }

    /// Reads once from `src` into free space (moving unconsumed bytes to the
    /// front, or growing, to make at least `READ_SIZE / 4` free). Returns the
    /// bytes read; 0 means end of stream.
    fn fill(&mut self, src: &mut impl Read) -> io::Result<usize> {
        if self.buf.is_empty() {
            self.buf = vec![0; READ_SIZE];
        }
        if self.buf.len() - self.end < READ_SIZE / 4 {
            self.compact();
            if self.buf.len() - self.end < READ_SIZE / 4 {
                self.buf.resize(self.buf.len() * 2, 0);
            }
        }
        let n = src.read(&mut self.buf[self.end..])?;
        self.end += n;
        Ok(n)
    }
}
