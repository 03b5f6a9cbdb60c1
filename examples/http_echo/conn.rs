//! One connection, served by one goroutine: read, answer every complete request
//! already buffered (pipelining), write the answers in one go, read again.
//!
//! Every wait parks the goroutine on the netpoller, never its thread. A read
//! that finds nothing for the idle timeout ends the connection (with 408 if a
//! request was half-sent); a refused request (see [`HttpError`]) is answered and
//! the connection closed, after a short lingering drain so the client reads the
//! answer instead of a reset.

use crate::chunked::Chunked;
use crate::request::{parse_head, Body, Head, HttpError};
use crate::response::{Response, CONTINUE};
use crate::routes;
use goro::net::TcpStream;
use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::ops::Range;
use std::time::Duration;

/// Bytes asked of the socket per read.
const READ_SIZE: usize = 16 * 1024;
/// Pipelined answers are written out once this many bytes pile up.
const FLUSH_AT: usize = 64 * 1024;
/// After refusing a request: how long and how much to read and discard.
const LINGER: Duration = Duration::from_millis(500);
const LINGER_BYTES: usize = 256 * 1024;

/// Serves `stream` until the client closes it, it idles for `idle`, or a request
/// is refused. I/O errors end the connection quietly: the peer is gone.
pub fn serve(stream: TcpStream, idle: Duration) {
    let _ = stream.set_nodelay(true);
    if stream.set_read_timeout(Some(idle)).is_err() || stream.set_write_timeout(Some(idle)).is_err() {
        return;
    }
    let mut conn = Conn {
        stream,
        input: InputBuffer::new(),
        out: Vec::with_capacity(READ_SIZE),
        pending: None,
    };
    if let Err(refused) = conn.run() {
        conn.refuse(&refused);
    }
}

struct Conn {
    stream: TcpStream,
    input: InputBuffer,
    out: Vec<u8>,
    /// A request whose head is parsed and whose body is still arriving.
    pending: Option<Pending>,
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
    /// The request loop; `Err` is a request to refuse, `Ok` a connection that
    /// ended (closed by the client, idle, answered with `Connection: close`, or
    /// an I/O error).
    fn run(&mut self) -> Result<(), HttpError> {
        loop {
            while let Some((head, body)) = self.next_request()? {
                let bytes = match &body {
                    BodyBytes::Buffered(range) => &self.input.data()[range.clone()],
                    BodyBytes::Decoded(bytes) => bytes,
                };
                routes::answer(&head, bytes, &mut self.out);
                if let BodyBytes::Buffered(range) = body {
                    self.input.consume(range.len());
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
            match self.input.fill(&mut self.stream) {
                Ok(0) => return Ok(()),
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
    fn next_request(&mut self) -> Result<Option<(Head, BodyBytes)>, HttpError> {
        let mut p = match self.pending.take() {
            Some(p) => p,
            None => match parse_head(self.input.data())? {
                Some(head) => {
                    self.input.consume(head.len);
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

    fn flush(&mut self) -> io::Result<()> {
        if self.out.is_empty() {
            return Ok(());
        }
        let result = self.stream.write_all(&self.out);
        self.out.clear();
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
    /// has read our last answer.
    fn linger(&mut self) {
        if self.stream.shutdown(Shutdown::Write).is_err() || self.stream.set_read_timeout(Some(LINGER)).is_err() {
            return;
        }
        let mut sink = [0u8; 4096];
        let mut drained = 0;
        while drained < LINGER_BYTES {
            match self.stream.read(&mut sink) {
                Ok(0) | Err(_) => return,
                Ok(n) => drained += n,
            }
        }
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

    /// Reads once from `src` into free space (moving unconsumed bytes to the
    /// front, or growing, to make at least `READ_SIZE / 4` free). Returns the
    /// bytes read; 0 means end of stream.
    fn fill(&mut self, src: &mut impl Read) -> io::Result<usize> {
        if self.buf.len() - self.end < READ_SIZE / 4 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
            if self.buf.len() - self.end < READ_SIZE / 4 {
                self.buf.resize(self.buf.len() * 2, 0);
            }
        }
        let n = src.read(&mut self.buf[self.end..])?;
        self.end += n;
        Ok(n)
    }
}
