//! What a panicking G prints.
//!
//! A panic in a G is caught at the G's root and handed to `JoinHandle::join` as
//! `Err(payload)`; the runtime and other Gs carry on. Like a std thread, the G also
//! reports the panic on stderr when it happens, naming the goroutine rather than
//! the M thread it happened to run on:
//! `goroutine 17 "worker-1" panicked at src/main.rs:4:9:` + the message.
//!
//! The hook is installed when the runtime starts and wraps the hook in place then:
//! panics outside Gs go to it unchanged. A hook installed later by the program
//! replaces ours (and then sees G panics too; `goro::current()` says which G).

use super::m::current_g;
use std::panic::{self, PanicHookInfo};

pub(crate) fn install_hook() {
    let previous = panic::take_hook();
    panic::set_hook(Box::new(move |info| match current_g() {
        // SAFETY: the hook runs on the panicking G itself.
        Some(g) => report(g.id(), unsafe { g.name() }, info),
        None => previous(info),
    }));
}

fn report(id: u64, name: Option<&str>, info: &PanicHookInfo<'_>) {
    let msg = payload_text(info.payload());
    let loc = info
        .location()
        .map(|l| format!(" at {}:{}:{}", l.file(), l.line(), l.column()))
        .unwrap_or_default();
    let name = name.map(|n| format!(" {n:?}")).unwrap_or_default();
    let bt = std::backtrace::Backtrace::capture();
    let bt = match bt.status() {
        std::backtrace::BacktraceStatus::Captured => format!("\n{bt}"),
        _ => String::new(),
    };
    eprintln!("goroutine {id}{name} panicked{loc}:\n{msg}{bt}");
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
