//! [`print!`](crate::print!), [`println!`](crate::println!),
//! [`eprint!`](crate::eprint!), [`eprintln!`](crate::eprintln!): std's print
//! macros made safe for arguments whose formatting waits.
//!
//! std's macros hold the stream's re-entrant lock for the whole `write_fmt`,
//! and call each argument's `Display`/`Debug` while holding it. That lock knows
//! its owner by OS thread. If an argument's formatting parks the goroutine (it
//! locks a `goro::sync::Mutex`, receives from a channel, yields), the goroutine
//! resumes on another thread still "inside" the lock, while the goroutines that
//! now run on the old thread enter it as its owner: two threads in one
//! `RefCell`, a panic or interleaved bytes. std offers no way to see that a
//! thread holds the lock, so goro cannot catch it in std's macros.
//!
//! These macros format first, into a buffer, with no lock held: an argument
//! may wait there. Then the whole text is written in one call that cannot park
//! (a [`blocking`](fn@crate::blocking) call: a write to a full pipe hands the
//! goroutine's P on rather than stalling it), so a line is never split by
//! another goroutine's output.

use std::borrow::Cow;
use std::fmt;
use std::io::{self, Write};

/// Which std stream a print goes to.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// Formats `args` (user code that may wait), then writes the text to `stream`
/// in one locked write. Panics as std's macros do when the write fails.
#[doc(hidden)]
#[inline(never)]
pub fn print_to(stream: Stream, args: fmt::Arguments<'_>) {
    let text: Cow<'_, str> = match args.as_str() {
        Some(s) => Cow::Borrowed(s),
        None => Cow::Owned(fmt::format(args)),
    };
    let written = crate::blocking(|| match stream {
        Stream::Stdout => io::stdout().lock().write_all(text.as_bytes()),
        Stream::Stderr => io::stderr().lock().write_all(text.as_bytes()),
    });
    if let Err(e) = written {
        let name = match stream {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
        };
        panic!("failed printing to {name}: {e}");
    }
}

/// std's [`print!`](std::print!) for goroutine code: the arguments are
/// formatted before the stream is locked, so an argument whose `Display` or
/// `Debug` waits (a lock, a channel) is allowed; the text is written in one
/// piece. Same syntax and output as std's.
///
/// ```
/// goro::go!(|| goro::print!("{} + {} = {}\n", 1, 2, 1 + 2)).join().unwrap();
/// ```
#[macro_export]
macro_rules! print {
    ($($arg:tt)*) => {
        $crate::__print::print_to($crate::__print::Stream::Stdout, ::core::format_args!($($arg)*))
    };
}

/// std's [`println!`](std::println!) for goroutine code: formats first, then
/// writes the line and its newline in one piece (see [`print!`](crate::print!)).
///
/// ```
/// use std::fmt;
///
/// /// Formatting it waits for a goroutine-safe lock.
/// struct Shared(std::sync::Arc<goro::sync::Mutex<u32>>);
/// impl fmt::Display for Shared {
///     fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
///         write!(f, "{}", *self.0.lock())
///     }
/// }
///
/// let v = Shared(std::sync::Arc::new(goro::sync::Mutex::new(7)));
/// goro::go!(move || goro::println!("value: {v}")).join().unwrap();
/// ```
#[macro_export]
macro_rules! println {
    () => {
        $crate::__print::print_to($crate::__print::Stream::Stdout, ::core::format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::__print::print_to(
            $crate::__print::Stream::Stdout,
            ::core::format_args!("{}\n", ::core::format_args!($($arg)*)),
        )
    };
}

/// std's [`eprint!`](std::eprint!) for goroutine code: formats first, then
/// writes to stderr in one piece (see [`print!`](crate::print!)).
#[macro_export]
macro_rules! eprint {
    ($($arg:tt)*) => {
        $crate::__print::print_to($crate::__print::Stream::Stderr, ::core::format_args!($($arg)*))
    };
}

/// std's [`eprintln!`](std::eprintln!) for goroutine code: formats first, then
/// writes the line to stderr in one piece (see [`print!`](crate::print!)).
///
/// ```
/// goro::go!(|| goro::eprintln!("goroutine {:?} done", goro::current())).join().unwrap();
/// ```
#[macro_export]
macro_rules! eprintln {
    () => {
        $crate::__print::print_to($crate::__print::Stream::Stderr, ::core::format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::__print::print_to(
            $crate::__print::Stream::Stderr,
            ::core::format_args!("{}\n", ::core::format_args!($($arg)*)),
        )
    };
}
