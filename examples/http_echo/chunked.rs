//! Incremental decoding of a `Transfer-Encoding: chunked` request body
//! (RFC 9112 §7.1): `size[;ext]CRLF data CRLF ... 0CRLF [trailers] CRLF`.
//!
//! The decoder is fed whatever bytes have arrived and consumes all it can,
//! keeping its place between reads in a byte-level state machine: every byte of
//! the framing is looked at once, in order, so the outcome (the body, or the
//! refusal and its reason) is the same however the input is split across reads.
//! Bytes after the body's end (a pipelined request) are left alone.
//!
//! The framing is held to the grammar, since any leniency is an ambiguity that a
//! proxy in front could resolve the other way (request smuggling); each is a 400
//! and, through [`HttpError`], a closed connection:
//! - every line ends in CRLF: a bare LF, or a CR not followed by LF, anywhere in
//!   the size lines, after chunk data, in the trailers or the final line;
//! - a size line is `1*HEXDIG *( BWS ";" BWS token [ BWS "=" BWS ( token /
//!   quoted-string ) ] )` (§7.1.1), at most [`MAX_SIZE_LINE`] bytes: an empty
//!   size, a size that overflows `u64`, whitespace that leads nowhere, and any
//!   control byte (NUL, CR, LF) in an extension are refused. Leading zeros are
//!   accepted (`000a` is 10): clients send them and they are unambiguous;
//! - a trailer line is `token ":" field-value`: no colon, whitespace before the
//!   colon, a line starting with whitespace (obs-fold), or a control byte in the
//!   value are refused.
//!
//! A body over [`MAX_BODY`] is 413, as soon as a size line that would exceed
//! it is complete; trailers over [`MAX_HEAD`] in all are 431. Extensions and
//! trailer fields are checked and dropped.

use crate::request::{HttpError, MAX_BODY, MAX_HEAD};

/// Longest chunk-size line (size and extensions, CRLF included) accepted.
pub const MAX_SIZE_LINE: usize = 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// In a chunk-size line.
    Size(SizeLine),
    /// Inside a chunk's data, with this many bytes still to come.
    Data(u64),
    /// Expecting the CR, then the LF, that end a chunk's data.
    DataCr,
    DataLf,
    /// After the last (zero-size) chunk: trailer lines until an empty one.
    Trailer(TrailerLine),
    Done,
}

/// Where in a chunk-size line the decoder is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SizeLine {
    /// In the size's hex digits (none yet at the line's start).
    Digits,
    /// Whitespace after the size or an extension's value: only `;` may follow.
    BeforeSemi,
    /// After `;`: whitespace, then an extension's name.
    NameStart,
    Name,
    /// Whitespace after an extension's name: `;` or `=` may follow.
    AfterName,
    /// After `=`: whitespace, then a token or a quoted string.
    ValueStart,
    ValueToken,
    Quoted,
    /// After a backslash in a quoted string.
    QuotedPair,
    /// After a quoted string's closing quote.
    AfterQuoted,
    /// After the line's CR.
    Lf,
}

/// Where in the trailer section the decoder is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TrailerLine {
    /// At a line's start: a field name, or the CR of the final empty line.
    Start,
    Name,
    Value,
    /// After a field line's CR.
    Lf,
    /// After the final empty line's CR.
    FinalLf,
}

/// A chunked body being decoded.
#[derive(Debug)]
pub struct Chunked {
    state: State,
    body: Vec<u8>,
    /// The size of the chunk whose size line is being read.
    size: u64,
    /// Bytes of the current size line so far.
    line_len: usize,
    trailer_bytes: usize,
}

fn bad(reason: &'static str) -> HttpError {
    HttpError::new(400, reason)
}

/// The refusal for an unexpected byte: a bare LF says so, since it is what
/// smuggling attempts use.
fn unexpected(b: u8, reason: &'static str) -> HttpError {
    if b == b'\n' {
        bad("bare LF in chunked framing")
    } else {
        bad(reason)
    }
}

/// A CR must be followed by LF.
fn lone_cr() -> HttpError {
    bad("CR not followed by LF in chunked framing")
}

/// `tchar` (RFC 9110 §5.6.2).
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn is_ws(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// `qdtext` (RFC 9110 §5.6.4): HTAB, SP, VCHAR except `"` and `\`, obs-text.
fn is_qdtext(b: u8) -> bool {
    b == b'\t' || b == b' ' || b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b) || b >= 0x80
}

/// A byte of a field value: HTAB, SP, VCHAR, obs-text (no controls).
fn is_field_byte(b: u8) -> bool {
    b == b'\t' || (0x20..=0x7e).contains(&b) || b >= 0x80
}

impl Chunked {
    pub fn new() -> Self {
        Chunked {
            state: State::Size(SizeLine::Digits),
            body: Vec::new(),
            size: 0,
            line_len: 0,
            trailer_bytes: 0,
        }
    }

    /// Decodes from `input`; returns how many bytes it consumed: all of them,
    /// unless the body ends first. Bytes after the body's end are left alone
    /// (they belong to the next request).
    pub fn feed(&mut self, input: &[u8]) -> Result<usize, HttpError> {
        let mut pos = 0;
        while pos < input.len() {
            match self.state {
                State::Done => break,
                State::Data(left) => pos += self.data(&input[pos..], left),
                State::Size(at) => {
                    self.size_byte(at, input[pos])?;
                    pos += 1;
                }
                State::DataCr => {
                    self.state = match input[pos] {
                        b'\r' => State::DataLf,
                        b => return Err(unexpected(b, "chunk data not followed by CRLF")),
                    };
                    pos += 1;
                }
                State::DataLf => {
                    self.state = match input[pos] {
                        b'\n' => State::Size(SizeLine::Digits),
                        _ => return Err(lone_cr()),
                    };
                    pos += 1;
                }
                State::Trailer(at) => {
                    self.trailer_byte(at, input[pos])?;
                    pos += 1;
                }
            }
        }
        Ok(pos)
    }

    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// The decoded body, once [`Chunked::is_done`].
    pub fn into_body(self) -> Vec<u8> {
        self.body
    }

    /// Takes chunk data from `rest` (not empty); returns the bytes taken.
    fn data(&mut self, rest: &[u8], left: u64) -> usize {
        let take = rest.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        self.body.extend_from_slice(&rest[..take]);
        let left = left - take as u64;
        self.state = if left == 0 { State::DataCr } else { State::Data(left) };
        take
    }

    /// One byte `b` of a chunk-size line, where the line is `at`.
    fn size_byte(&mut self, at: SizeLine, b: u8) -> Result<(), HttpError> {
        use SizeLine::*;
        self.line_len += 1;
        if self.line_len > MAX_SIZE_LINE {
            return Err(bad("chunk size line too long"));
        }
        let next = match (at, b) {
            (Digits, _) if b.is_ascii_hexdigit() => {
                let digit = u64::from(if b.is_ascii_digit() {
                    b - b'0'
                } else {
                    (b | 0x20) - b'a' + 10
                });
                self.size = self
                    .size
                    .checked_mul(16)
                    .and_then(|n| n.checked_add(digit))
                    .ok_or(bad("chunk size overflows"))?;
                Digits
            }
            (Digits, _) if self.line_len == 1 => return Err(unexpected(b, "empty chunk size")),
            (Digits | Name | AfterName | ValueToken | AfterQuoted | BeforeSemi, b';') => NameStart,
            (Digits | ValueToken | AfterQuoted | BeforeSemi, _) if is_ws(b) => BeforeSemi,
            (Digits | Name | ValueToken | AfterQuoted, b'\r') => Lf,
            (NameStart, _) if is_ws(b) => NameStart,
            (NameStart | Name, _) if is_tchar(b) => Name,
            (Name | AfterName, _) if is_ws(b) => AfterName,
            (Name | AfterName, b'=') => ValueStart,
            (ValueStart, _) if is_ws(b) => ValueStart,
            (ValueStart | ValueToken, _) if is_tchar(b) => ValueToken,
            (ValueStart, b'"') => Quoted,
            (Quoted, b'"') => AfterQuoted,
            (Quoted, b'\\') => QuotedPair,
            (Quoted, _) if is_qdtext(b) => Quoted,
            // HTAB, SP, VCHAR, obs-text.
            (QuotedPair, _) if b == b'\t' || b == b' ' || (0x21..=0x7e).contains(&b) || b >= 0x80 => Quoted,
            (Lf, b'\n') => return self.size_line_done(),
            (Lf, _) => return Err(lone_cr()),
            (Digits, _) => return Err(unexpected(b, "bad chunk size")),
            _ => return Err(unexpected(b, "bad chunk extension")),
        };
        self.state = State::Size(next);
        Ok(())
    }

    /// A size line's LF: on to the chunk's data, or the trailers after the
    /// last chunk.
    fn size_line_done(&mut self) -> Result<(), HttpError> {
        let size = std::mem::take(&mut self.size);
        self.line_len = 0;
        let total = (self.body.len() as u64).saturating_add(size);
        if total > MAX_BODY as u64 {
            return Err(HttpError::new(413, "content too large"));
        }
        self.state = if size == 0 {
            State::Trailer(TrailerLine::Start)
        } else {
            State::Data(size)
        };
        Ok(())
    }

    /// One byte `b` of the trailer section, where it is `at`.
    fn trailer_byte(&mut self, at: TrailerLine, b: u8) -> Result<(), HttpError> {
        use TrailerLine::*;
        self.trailer_bytes += 1;
        if self.trailer_bytes > MAX_HEAD {
            return Err(HttpError::new(431, "trailer fields too large"));
        }
        let next = match (at, b) {
            (Start, b'\r') => FinalLf,
            (Start, _) if is_ws(b) => return Err(bad("folded or indented trailer field")),
            (Start | Name, _) if is_tchar(b) => Name,
            (Name, b':') => Value,
            (Name, _) => return Err(unexpected(b, "malformed trailer field")),
            (Value, b'\r') => Lf,
            (Value, _) if is_field_byte(b) => Value,
            (Lf, b'\n') => Start,
            (FinalLf, b'\n') => {
                self.state = State::Done;
                return Ok(());
            }
            (Lf | FinalLf, _) => return Err(lone_cr()),
            _ => return Err(unexpected(b, "malformed trailer field")),
        };
        self.state = State::Trailer(next);
        Ok(())
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
            (b"10000000000000000\r\n", 400),
        ] {
            let err = Chunked::new().feed(wire).unwrap_err();
            assert_eq!(err.status, status, "{:?}", String::from_utf8_lossy(wire));
        }
    }
}
