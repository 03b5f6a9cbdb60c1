//! Stack-overflow reporting: a SIGSEGV/SIGBUS handler on an alternate signal stack.
//!
//! A G that runs off the bottom of its stack touches the guard page below it (Rust
//! emits stack probes for large frames, so no frame can jump over the page). The
//! handler runs on the M's `sigaltstack` (`sys/altstack.rs`), sees that the faulting address is inside
//! the guard page of the G this thread is running (`CURRENT_G`, a plain TLS read),
//! or of the G whose `blocking` call this M runs (`M::syscallg`: the call runs on
//! the G's stack while `CURRENT_G` is clear), prints
//! `goroutine N "name" stack overflow (stack size S bytes)` with the remedy, and
//! aborts. Any other fault is passed to the handler that was installed before ours
//! (Rust's own stack-overflow reporter for ordinary threads), or to the default
//! action.
//!
//! Everything the handler does is async-signal-safe: TLS and plain memory reads,
//! `write(2)`, `sigaction(2)`, `abort(3)`.

use crate::runtime::proc::m::{current_m_here, CURRENT_G};
use crate::runtime::sys::decimal;
use crate::runtime::task::g::G;
use std::sync::OnceLock;

/// The handlers that were installed before ours, for chaining.
static PREVIOUS: OnceLock<[libc::sigaction; 2]> = OnceLock::new();
const SIGNALS: [libc::c_int; 2] = [libc::SIGSEGV, libc::SIGBUS];

/// Installs the handler (once per process). The handlers in place before are
/// recorded first, so a fault on another thread meanwhile still finds them.
pub(crate) fn install() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: a zeroed sigaction is a valid out-buffer; a null new action only
        // reads the current one.
        let previous = unsafe {
            let mut previous: [libc::sigaction; 2] = std::mem::zeroed();
            for (sig, prev) in SIGNALS.iter().zip(previous.iter_mut()) {
                libc::sigaction(*sig, std::ptr::null(), prev);
            }
            previous
        };
        let _ = PREVIOUS.set(previous);
        // SAFETY: zeroed sigaction is a valid "no handler" value; we fill it in and
        // pass valid pointers to sigaction(2).
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = handler as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut action.sa_mask);
            for sig in SIGNALS {
                libc::sigaction(sig, &action, std::ptr::null_mut());
            }
        }
    });
}

extern "C" fn handler(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo for SA_SIGINFO handlers.
    let addr = unsafe { (*info).si_addr() } as usize;
    let running = CURRENT_G.with(|c| c.get());
    // SAFETY: CURRENT_G is non-null only while this thread runs that G, which is
    // alive.
    let running = unsafe { running.as_ref() };
    let in_blocking = || current_m_here().and_then(|m| m.syscallg());
    let g: Option<&G> = match running {
        Some(g) => Some(g),
        // SAFETY: a G in a blocking call on this M is alive and parked in the call.
        None => in_blocking().map(|g| unsafe { g.as_ptr().as_ref() }),
    };
    if let Some(g) = g {
        // `guard` is written only by the thread running the G: this one.
        let (lo, hi) = g.guard.get();
        if addr >= lo && addr < hi {
            // SAFETY: the name is written only by `init` and `finish`, neither of
            // which can run while the G is on this thread.
            report_overflow(g.id(), unsafe { g.name() }, g.stack_size());
        }
    }
    chain(sig, info, ctx);
}

fn report_overflow(id: u64, name: Option<&str>, stack_size: usize) -> ! {
    let mut buf = [0u8; 512];
    let mut len = 0;
    // Cut a long name so the size and the remedy always fit.
    let (open, name, close) = match name {
        Some(n) if n.len() > NAME_MAX => (" \"", &n[..floor_char_boundary(n, NAME_MAX)], "...\""),
        Some(n) => (" \"", n, "\""),
        None => ("", "", ""),
    };
    for part in [
        Part::Str("goroutine "),
        Part::Num(id),
        Part::Str(open),
        Part::Str(name),
        Part::Str(close),
        Part::Str(" stack overflow (stack size "),
        Part::Num(stack_size as u64),
        Part::Str(" bytes)\n"),
        Part::Str(REMEDY),
    ] {
        len += part.write(&mut buf[len..]);
    }
    // SAFETY: write(2) and abort(3) are async-signal-safe; buf[..len] is initialised.
    unsafe {
        libc::write(2, buf.as_ptr().cast(), len);
        libc::abort();
    }
}

/// The longest name an overflow report prints (bytes).
const NAME_MAX: usize = 128;

/// The largest char boundary of `s` at or below `i`.
fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The second line of an overflow report.
const REMEDY: &str = "goro: goroutine stacks have a fixed size and do not grow (unlike Go's); \
give this goroutine a bigger one with goro::Builder::stack_size, or every goroutine \
with goro::runtime::Config::stack_size\n";

enum Part<'a> {
    Str(&'a str),
    Num(u64),
}

impl Part<'_> {
    /// Formats without allocating; returns bytes written.
    fn write(&self, out: &mut [u8]) -> usize {
        match self {
            Part::Str(s) => {
                // Cut at the buffer's end; a name cut mid-character prints as is.
                let n = s.len().min(out.len());
                out[..n].copy_from_slice(&s.as_bytes()[..n]);
                n
            }
            Part::Num(v) => {
                let mut buf = [0; decimal::MAX_DIGITS];
                let digits = decimal::digits(*v, &mut buf);
                let n = digits.len().min(out.len());
                out[..n].copy_from_slice(&digits[..n]);
                n
            }
        }
    }
}

/// Hands a fault that is not ours to the previous handler, or to the default action.
fn chain(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    let idx = SIGNALS.iter().position(|&s| s == sig).unwrap_or(0);
    let prev = PREVIOUS.get().map(|p| p[idx]);
    match prev {
        Some(prev) if prev.sa_sigaction != libc::SIG_DFL && prev.sa_sigaction != libc::SIG_IGN => {
            if prev.sa_flags & libc::SA_SIGINFO != 0 {
                // SAFETY: the previous handler was installed as a 3-argument handler.
                let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                    unsafe { std::mem::transmute(prev.sa_sigaction) };
                f(sig, info, ctx);
            } else {
                // SAFETY: the previous handler was installed as a 1-argument handler.
                let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(prev.sa_sigaction) };
                f(sig);
            }
        }
        _ => {
            // Restore the default action; returning re-executes the faulting
            // instruction, which now kills the process with the right signal.
            // SAFETY: zeroed sigaction with SIG_DFL is valid.
            unsafe {
                let mut dfl: libc::sigaction = std::mem::zeroed();
                dfl.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(sig, &dfl, std::ptr::null_mut());
            }
        }
    }
}
