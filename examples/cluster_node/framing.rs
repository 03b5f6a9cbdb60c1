//! Turning input lines into messages (see "Framing" in the example's docs (`cluster_node.rs`)).

use crate::{MAX_MESSAGE_BYTES, MAX_MESSAGE_LINES};
use serde_json::Value;
use std::io::{self, BufRead};

/// One input line, without its `\n`.
pub enum Line {
    Text(Vec<u8>),
    /// A line longer than [`MAX_MESSAGE_BYTES`]: its bytes were skipped.
    TooLong,
}

/// What a line completed: a message, or an error to answer.
#[derive(Debug)]
pub enum Frame {
    Message(Value),
    Broken(String),
}

/// Reads the next line, keeping at most `MAX_MESSAGE_BYTES` of it in memory.
/// `None` at end of input.
pub fn read_line(input: &mut impl BufRead) -> io::Result<Option<Line>> {
    let mut line = Vec::new();
    let (mut read_any, mut too_long) = (false, false);
    loop {
        let chunk = match input.fill_buf() {
            Ok(chunk) => chunk,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            break;
        }
        read_any = true;
        let newline = chunk.iter().position(|&b| b == b'\n');
        let content = &chunk[..newline.unwrap_or(chunk.len())];
        if !too_long && line.len() + content.len() > MAX_MESSAGE_BYTES {
            too_long = true;
            line = Vec::new(); // free it: the rest of the line is skipped
        }
        if !too_long {
            line.extend_from_slice(content);
        }
        let used = newline.map_or(chunk.len(), |i| i + 1);
        input.consume(used);
        if newline.is_some() {
            break;
        }
    }
    Ok(match (read_any, too_long) {
        (false, _) => None,
        (true, true) => Some(Line::TooLong),
        (true, false) => Some(Line::Text(line)),
    })
}

/// Collects lines until they make one JSON value.
#[derive(Default)]
pub struct Framer {
    pending: String,
    lines: usize,
}

impl Framer {
    /// Takes the next line; returns what it completed (at most two frames: an
    /// abandoned message, then the line's own message).
    pub fn push(&mut self, line: Line) -> Vec<Frame> {
        let Line::Text(bytes) = line else {
            self.reset();
            return vec![too_large()];
        };
        let line = String::from_utf8_lossy(&bytes);
        let mut frames = Vec::new();
        if self.pending.is_empty() && line.trim().is_empty() {
            return frames;
        }
        if !self.pending.is_empty() && is_envelope(&line) {
            self.reset();
            frames.push(Frame::Broken(
                "incomplete JSON message: a new message began before it ended".into(),
            ));
        }
        self.append(&line);
        if self.pending.len() > MAX_MESSAGE_BYTES || self.lines > MAX_MESSAGE_LINES {
            self.reset();
            frames.push(too_large());
            return frames;
        }
        match serde_json::from_str::<Value>(&self.pending) {
            Ok(value) => frames.push(Frame::Message(value)),
            Err(e) if e.is_eof() => return frames,
            Err(e) => frames.push(Frame::Broken(format!("invalid JSON: {e}"))),
        }
        self.reset();
        frames
    }

    /// At end of input: an error for an unfinished message, if any.
    pub fn finish(&mut self) -> Option<Frame> {
        if self.pending.is_empty() {
            return None;
        }
        self.reset();
        Some(Frame::Broken("incomplete JSON message at end of input".into()))
    }

    fn append(&mut self, line: &str) {
        if !self.pending.is_empty() {
            self.pending.push('\n');
        }
        self.pending.push_str(line);
        self.lines += 1;
    }

    fn reset(&mut self) {
        self.pending.clear();
        self.lines = 0;
    }
}

/// Whether `line` alone is a JSON object with a `body`: the start of a new message.
fn is_envelope(line: &str) -> bool {
    matches!(serde_json::from_str::<Value>(line), Ok(Value::Object(m)) if m.contains_key("body"))
}

fn too_large() -> Frame {
    Frame::Broken(format!(
        "message too large: over {MAX_MESSAGE_BYTES} bytes or {MAX_MESSAGE_LINES} lines"
    ))
}
