//! Incremental decoding of a `Transfer-Encoding: chunked` request body
//! (RFC 9112 §7.1): `size[;ext]CRLF data CRLF ... 0CRLF [trailers] CRLF`.
//!
//! The decoder is fed whatever bytes have arrived, consumes what it can, and
//! keeps its place between reads, so a body split anywhere across reads (or
//! pipelined behind by the next request) decodes the same. Chunk extensions
//! and trailer fields are read and dropped.

use crate::request::{HttpError, MAX_BODY, MAX_HEAD};

/// Longest chunk-size line (size plus extensions) accepted.
const MAX_SIZE_LINE: usize = 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Expecting a chunk-size line.
    Size,
    /// Inside a chunk's data, with this many bytes still to come.
    Data(u64),
    /// Expecting the CRLF that ends a chunk's data.
    DataEnd,
    /// After the last (zero-size) chunk: trailer lines until a blank one.
    Trailers,
    Done,
}

/// A chunked body being decoded.
#[derive(Debug)]
pub struct Chunked {
    state: State,
    body: Vec<u8>,
    trailer_bytes: usize,
}

impl Chunked {
    pub fn new() -> Self {
        Chunked {
            state: State::Size,
            body: Vec::new(),
            trailer_bytes: 0,
        }
    }

    /// Decodes from `input`; returns how many bytes it consumed. Bytes after the
    /// body's end are left alone (they belong to the next request).
    pub fn feed(&mut self, input: &[u8]) -> Result<usize, HttpError> {
        let mut pos = 0;
        loop {
            let rest = &input[pos..];
            let used = match self.state {
                State::Done => return Ok(pos),
                State::Size => self.size_line(rest)?,
                State::Data(left) => self.data(rest, left),
                State::DataEnd => self.data_end(rest)?,
                State::Trailers => self.trailer_line(rest)?,
            };
            match used {
                Some(n) => pos += n,
                None => return Ok(pos),
            }
        }
    }

    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// The decoded body, once [`Chunked::is_done`].
    pub fn into_body(self) -> Vec<u8> {
        self.body
    }

    /// Each step returns the bytes it consumed, or `None` when it needs more.
    fn size_line(&mut self, rest: &[u8]) -> Result<Option<usize>, HttpError> {
        match httparse::parse_chunk_size(rest) {
            Ok(httparse::Status::Complete((used, size))) => {
                let total = (self.body.len() as u64).saturating_add(size);
                if total > MAX_BODY as u64 {
                    return Err(HttpError::new(413, "content too large"));
                }
                self.state = if size == 0 { State::Trailers } else { State::Data(size) };
                Ok(Some(used))
            }
            Ok(httparse::Status::Partial) if rest.len() > MAX_SIZE_LINE => {
                Err(HttpError::new(400, "chunk size line too long"))
            }
            Ok(httparse::Status::Partial) => Ok(None),
            Err(_) => Err(HttpError::new(400, "bad chunk size")),
        }
    }

    fn data(&mut self, rest: &[u8], left: u64) -> Option<usize> {
        if rest.is_empty() {
            return None;
        }
        let take = rest.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        self.body.extend_from_slice(&rest[..take]);
        let left = left - take as u64;
        self.state = if left == 0 { State::DataEnd } else { State::Data(left) };
        Some(take)
    }

    fn data_end(&mut self, rest: &[u8]) -> Result<Option<usize>, HttpError> {
        match rest {
            [b'\r', b'\n', ..] => {
                self.state = State::Size;
                Ok(Some(2))
            }
            [] | [b'\r'] => Ok(None),
            _ => Err(HttpError::new(400, "chunk data not followed by CRLF")),
        }
    }

    fn trailer_line(&mut self, rest: &[u8]) -> Result<Option<usize>, HttpError> {
        let Some(lf) = rest.iter().position(|&b| b == b'\n') else {
            return if self.trailer_bytes + rest.len() > MAX_HEAD {
                Err(HttpError::new(431, "trailer fields too large"))
            } else {
                Ok(None)
            };
        };
        let line = &rest[..lf];
        if line.last() != Some(&b'\r') {
            return Err(HttpError::new(400, "bare LF in trailer"));
        }
        self.trailer_bytes += lf + 1;
        if self.trailer_bytes > MAX_HEAD {
            return Err(HttpError::new(431, "trailer fields too large"));
        }
        if line.len() == 1 {
            self.state = State::Done;
        } else if !line.contains(&b':') {
            return Err(HttpError::new(400, "malformed trailer field"));
        }
        Ok(Some(lf + 1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_in_pieces(wire: &[u8], piece: usize) -> Result<(Vec<u8>, usize), HttpError> {
        let mut dec = Chunked::new();
        let mut pending = Vec::new();
        let mut consumed = 0;
        for part in wire.chunks(piece) {
            pending.extend_from_slice(part);
            let used = dec.feed(&pending)?;
            pending.drain(..used);
            consumed += used;
            if dec.is_done() {
                break;
            }
        }
        assert!(dec.is_done(), "body not finished");
        Ok((dec.into_body(), consumed))
    }

    #[test]
    fn decodes_split_anywhere_and_stops_at_the_end() {
        let wire = b"5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nX-T: 1\r\n\r\nGET / HTTP/1.1\r\n";
        let body_end = wire.len() - b"GET / HTTP/1.1\r\n".len();
        for piece in 1..wire.len() {
            let (body, consumed) = decode_in_pieces(wire, piece).unwrap();
            assert_eq!(body, b"hello, world", "piece size {piece}");
            assert!(consumed <= body_end);
        }
        let mut dec = Chunked::new();
        assert_eq!(dec.feed(wire).unwrap(), body_end);
    }

    #[test]
    fn refuses_bad_framing() {
        for (wire, status) in [
            (&b"zz\r\n"[..], 400),
            (b"3\r\nabcX", 400),
            (b"0\r\nno colon\r\n\r\n", 400),
            (b"100001\r\n", 413),
            (b"ffffffffffffffff\r\n", 413),
        ] {
            let err = Chunked::new().feed(wire).unwrap_err();
            assert_eq!(err.status, status, "{:?}", String::from_utf8_lossy(wire));
        }
    }
}
