//! Files the runtime writes itself (the trace's spill file, the `GORO_TRACE`
//! file) stopped at the soft `RLIMIT_FSIZE` with `EFBIG`, as the kernel would
//! if `SIGXFSZ` were ignored, without the kernel's `SIGXFSZ`, whose default
//! action kills the process. The program's own disposition of `SIGXFSZ` stays
//! as it is, for its own files.
//!
//! A write is cut to the room left below the limit at the file's offset, and
//! one at the limit fails; so the kernel's check (`offset + length` past the
//! limit) never trips. The limit is read at each write (one `getrlimit` and one
//! `lseek` per write: the runtime writes 64 KiB at a time), so a limit lowered
//! while the file is open is kept too. The file must not be in append mode
//! (its offset is where it grows).
//!
//! Thread: a [`Capped`] is owned by the thread that writes it.

use std::fs::File;
use std::io::{self, Seek, Write};

/// A file whose writes stop at the soft `RLIMIT_FSIZE`.
pub(crate) struct Capped {
    file: File,
}

impl Capped {
    pub(crate) fn new(file: File) -> Capped {
        Capped { file }
    }

    pub(crate) fn get_mut(&mut self) -> &mut File {
        &mut self.file
    }

    /// Bytes the file may still grow by at its offset before the limit.
    fn room(&mut self) -> io::Result<u64> {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: `getrlimit` writes one `rlimit` through a pointer to a live,
        // properly aligned local.
        if unsafe { libc::getrlimit(libc::RLIMIT_FSIZE, &mut lim) } != 0 || lim.rlim_cur == libc::RLIM_INFINITY {
            return Ok(u64::MAX);
        }
        Ok(lim.rlim_cur.saturating_sub(self.file.stream_position()?))
    }
}

impl Write for Capped {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let room = self.room()?;
        if room == 0 {
            return Err(io::Error::from_raw_os_error(libc::EFBIG));
        }
        let n = usize::try_from(room).map_or(buf.len(), |room| room.min(buf.len()));
        self.file.write(&buf[..n])
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}
