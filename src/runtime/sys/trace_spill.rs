//! The execution tracer's spill file: while a trace is recorded, its writer
//! thread appends the events of full chunks here, 32 bytes each, and turns
//! them into JSON only when the trace stops. Appending a chunk is one `write`
//! of 64 KiB, so the writer takes almost no CPU from the traced program while
//! it runs (docs/decisions/0032-trace-spill.md); memory stays bounded by the
//! chunks, and the file is unnamed (`O_TMPFILE` in the temporary directory,
//! else a name removed at once), so nothing is left behind. The file takes 32
//! bytes an event; if it cannot grow (a full disk, or the soft `RLIMIT_FSIZE`,
//! which stops it with `EFBIG` instead of `SIGXFSZ`: `file_size.rs`), the
//! writer turns what it holds into JSON and goes on without it
//! (`runtime/trace.rs`).
//!
//! Thread: owned by the trace writer thread.

use super::file_size::Capped;
use super::trace_buf::{Event, Kind};
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Bytes of one event in the file.
const RECORD: usize = 32;
/// Bytes read back at a time.
const READ_AT_ONCE: usize = RECORD * 4096;

/// The spill file of one trace.
pub(crate) struct Spill {
    file: Capped,
    buf: Vec<u8>,
    /// Bytes of whole appends: what a read-back covers (an append that failed
    /// part-way is not read back).
    good: u64,
}

impl Spill {
    /// An unnamed file in the temporary directory (`TMPDIR`), else in
    /// `/tmp`, `/var/tmp` or `/dev/shm`, the first that takes one.
    pub(crate) fn create() -> io::Result<Spill> {
        let mut dirs = vec![std::env::temp_dir()];
        for dir in ["/tmp", "/var/tmp", "/dev/shm"] {
            if !dirs.iter().any(|d| d.as_path() == Path::new(dir)) {
                dirs.push(dir.into());
            }
        }
        let mut last = io::Error::from(io::ErrorKind::NotFound);
        for dir in &dirs {
            match unnamed_file_in(dir) {
                Ok(file) => {
                    return Ok(Spill {
                        file: Capped::new(file),
                        buf: Vec::new(),
                        good: 0,
                    })
                }
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    /// Appends `events`; returns how many.
    pub(crate) fn append(&mut self, events: impl Iterator<Item = Event>) -> io::Result<u64> {
        self.buf.clear();
        for ev in events {
            encode(&ev, &mut self.buf);
        }
        self.file.write_all(&self.buf)?;
        self.good += self.buf.len() as u64;
        Ok((self.buf.len() / RECORD) as u64)
    }

    /// Calls `f` on every event appended, in order.
    pub(crate) fn read_back(&mut self, mut f: impl FnMut(&Event) -> io::Result<()>) -> io::Result<()> {
        let file = self.file.get_mut();
        file.seek(SeekFrom::Start(0))?;
        let mut left = self.good;
        let mut buf = vec![0u8; READ_AT_ONCE];
        while left > 0 {
            let n = (left.min(READ_AT_ONCE as u64)) as usize;
            file.read_exact(&mut buf[..n])?;
            left -= n as u64;
            for record in buf[..n].chunks_exact(RECORD) {
                if let Some(ev) = decode(record) {
                    f(&ev)?;
                }
            }
        }
        Ok(())
    }
}

/// A file in `dir` with no name: `O_TMPFILE`, or where the file system has
/// none, a fresh name removed at once.
fn unnamed_file_in(dir: &Path) -> io::Result<File> {
    let unnamed = OpenOptions::new()
        .read(true)
        .write(true)
        .mode(0o600)
        .custom_flags(libc::O_TMPFILE)
        .open(dir);
    if unnamed.is_ok() {
        return unnamed;
    }
    let name = dir.join(format!(
        "goro-trace-{}-{}.spill",
        std::process::id(),
        super::trace_buf::monotonic_ns()
    ));
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&name)?;
    std::fs::remove_file(&name)?;
    Ok(file)
}

fn encode(ev: &Event, out: &mut Vec<u8>) {
    out.extend_from_slice(&ev.ts.to_le_bytes());
    out.extend_from_slice(&ev.g.to_le_bytes());
    out.extend_from_slice(&ev.arg.to_le_bytes());
    out.extend_from_slice(&ev.m.to_le_bytes());
    out.extend_from_slice(&ev.p.to_le_bytes());
    out.push(ev.kind as u8);
    out.push(ev.small);
}

/// The event of a record; `None` for a kind this build does not know.
fn decode(r: &[u8]) -> Option<Event> {
    let u64_at = |i: usize| u64::from_le_bytes(r[i..i + 8].try_into().expect("8 bytes"));
    Some(Event {
        ts: u64_at(0),
        g: u64_at(8),
        arg: u64_at(16),
        m: u32::from_le_bytes(r[24..28].try_into().expect("4 bytes")),
        p: u16::from_le_bytes(r[28..30].try_into().expect("2 bytes")),
        kind: Kind::from_u8(r[30])?,
        small: r[31],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_come_back_as_appended() {
        let mut spill = Spill::create().expect("a spill file");
        let mk = |i: u64| Event {
            ts: i * 3,
            g: i,
            arg: u64::MAX - i,
            m: i as u32,
            p: (i % 7) as u16,
            kind: Kind::from_u8((i % 15) as u8).expect("a kind"),
            small: (i % 5) as u8,
        };
        let n = 10_000;
        for start in (0..n).step_by(2048) {
            let appended = spill.append((start..(start + 2048).min(n)).map(mk)).unwrap();
            assert_eq!(appended, (start + 2048).min(n) - start);
        }
        let mut seen = 0;
        spill
            .read_back(|ev| {
                let want = mk(seen);
                assert_eq!(
                    (ev.ts, ev.g, ev.arg, ev.m, ev.p),
                    (want.ts, want.g, want.arg, want.m, want.p)
                );
                assert_eq!((ev.kind, ev.small), (want.kind, want.small));
                seen += 1;
                Ok(())
            })
            .unwrap();
        assert_eq!(seen, n);
    }
}
