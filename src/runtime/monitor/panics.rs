//! What a panicking G prints.
//!
//! A panic in a G is caught at the G's root and handed to `JoinHandle::join` as
//! `Err(payload)`; the runtime and other Gs carry on. Like a std thread, the G also
//! reports the panic on stderr when it happens, naming the goroutine rather than
//! the M thread it happened to run on, in std's shape:
//! `goroutine 17 "worker-1" panicked at src/main.rs:4:9:` + the message, then, as
//! `RUST_BACKTRACE` asks, std's hint (once per process), a short backtrace from
//! the panic down to the goroutine's entry, or every frame. A G inside a
//! `blocking` call is named too.
//!
//! The frames are captured on the G's stack, which needs a few KiB, and resolved
//! on a helper thread, which needs far more: a goroutine with a small stack gets
//! its backtrace rather than an overflow. With too little stack left even to
//! capture, the report says so instead.
//!
//! The hook is installed when the runtime starts and wraps the hook in place then:
//! panics outside Gs go to it unchanged. A hook installed later by the program
//! replaces ours (and then sees G panics too; `goro::current()` says which G).

use crate::runtime::proc::m::{current_g, current_m};
use crate::runtime::sys::frames::{self, Keep};
use crate::runtime::task::g::GRef;
use std::panic::{self, PanicHookInfo};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

/// Stack the capture itself may need; with less left, no backtrace is taken.
const CAPTURE_ROOM: usize = 8 << 10;

pub(crate) fn install_hook() {
    let previous = panic::take_hook();
    panic::set_hook(Box::new(move |info| {
        if quiet_here() {
            return;
        }
        match current_g().or_else(|| current_m().and_then(|m| m.syscallg())) {
            Some(g) => report(g, info),
            None => previous(info),
        }
    }));
}

std::thread_local! {
    /// This thread runs a probe whose panic is an answer, not a report.
    static QUIET: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether this thread's panics are silenced ([`quietly`]). Never inlined,
/// like every thread-local reader the runtime has.
#[inline(never)]
fn quiet_here() -> bool {
    QUIET.with(std::cell::Cell::get)
}

/// Runs `f`, catching its panic without the hook printing it: for a call
/// whose panic only answers a question (is this thread inside a Tokio
/// runtime?). The caller has started the runtime, so the hook is goro's.
#[cfg(feature = "tokio")]
#[inline(never)]
pub(crate) fn quietly<R>(f: impl FnOnce() -> R) -> std::thread::Result<R> {
    QUIET.with(|q| q.set(true));
    let r = panic::catch_unwind(panic::AssertUnwindSafe(f));
    QUIET.with(|q| q.set(false));
    r
}

/// What `RUST_BACKTRACE` asks for (read once, as std does).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Style {
    Off,
    Short,
    Full,
}

fn style() -> Style {
    static STYLE: OnceLock<Style> = OnceLock::new();
    *STYLE.get_or_init(|| match std::env::var_os("RUST_BACKTRACE") {
        None => Style::Off,
        Some(v) if v == "0" => Style::Off,
        Some(v) if v == "full" => Style::Full,
        Some(_) => Style::Short,
    })
}

fn report(g: GRef, info: &PanicHookInfo<'_>) {
    let msg = payload_text(info.payload());
    let loc = info
        .location()
        .map(|l| format!(" at {}:{}:{}", l.file(), l.line(), l.column()))
        .unwrap_or_default();
    // SAFETY: the hook runs on the panicking G (or in its blocking call), whose
    // name does not change while it runs.
    let name = unsafe { g.name() }.map(|n| format!(" {n:?}")).unwrap_or_default();
    let mut out = format!("goroutine {}{name} panicked{loc}:\n{msg}\n", g.id());
    match style() {
        Style::Off => {
            static HINTED: AtomicBool = AtomicBool::new(false);
            if !HINTED.swap(true, Ordering::Relaxed) {
                out.push_str("note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n");
            }
        }
        style => backtrace(&mut out, g, style, info.location().map(|l| l.file())),
    }
    eprint!("{out}");
}

/// Appends the panicking G's backtrace to `out`; `at`, the panic's file,
/// may name the build root (`frames::learn_root`).
fn backtrace(out: &mut String, g: GRef, style: Style, at: Option<&str>) {
    let here = 0u8;
    let (_, stack_bottom) = g.guard.get();
    let room = (std::ptr::addr_of!(here) as usize).saturating_sub(stack_bottom);
    if room < CAPTURE_ROOM {
        out.push_str(&format!(
            "stack backtrace: not captured, {room} bytes of the goroutine's stack left (stack size {})\n",
            g.stack_size()
        ));
        return;
    }
    let captured = frames::capture();
    let keep = if style == Style::Full { Keep::All } else { Keep::Panic };
    // Resolving needs a large stack: a helper thread's, not the goroutine's.
    let text = std::thread::scope(|s| {
        std::thread::Builder::new()
            .name("goro-backtrace".into())
            .spawn_scoped(s, move || {
                let frames = captured.resolve();
                if let Some(at) = at {
                    frames::learn_root(at, &frames, frames::Side::Innermost);
                }
                let mut text = String::from("stack backtrace:\n");
                frames::write_std(&mut text, frames::trim(&frames, keep));
                text
            })
            .ok()
            .and_then(|h| h.join().ok())
    });
    match text {
        Some(text) => out.push_str(&text),
        None => out.push_str("stack backtrace: not resolved (no thread to resolve it on)\n"),
    }
    if style == Style::Short {
        out.push_str("note: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose backtrace.\n");
    }
}

/// The text of a panic payload (`&str` or `String`), as std prints it.
pub(crate) fn payload_text(p: &(dyn std::any::Any + Send)) -> &str {
    if let Some(s) = p.downcast_ref::<&str>() {
        s
    } else if let Some(s) = p.downcast_ref::<String>() {
        s
    } else {
        "Box<dyn Any>"
    }
}
