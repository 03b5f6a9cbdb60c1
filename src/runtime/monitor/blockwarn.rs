//! `GODEBUG=blockwarn=1`: one line on stderr per goroutine and call site that
//! blocks its thread in the kernel outside `goro::blocking` long enough to lose
//! its P (sysmon's judgement, `sysmon.rs`):
//!
//! ```text
//! goro: goroutine 7 "w" blocked its thread over 20 ms in a system call outside goro::blocking (at src/main.rs:12)
//! ```
//!
//! sysmon only hands the M and the goroutine over; a reporter thread of its own
//! (started by the first report, with a stack large enough to resolve frames)
//! asks the M for the goroutine's frames (`running.rs`), names the first frame
//! of the program's own code as the call site, and prints each (goroutine, site)
//! once. Off by default: then nothing here runs.

use super::running;
use crate::runtime::proc::m::M;
use crate::runtime::sys::frames::{self, Keep, Symbolizer};
use crate::runtime::task::g::{all_gs, snapshot};
use std::collections::HashSet;
use std::sync::mpsc::{channel, Sender};
use std::sync::{Mutex, OnceLock};

/// One goroutine that blocked its thread: its M, its id, how long (ns).
struct Blocked {
    m: &'static M,
    g: u64,
    held_ns: u64,
}

/// The reporter's queue, made with the thread by the first report.
static REPORTER: OnceLock<Option<Mutex<Sender<Blocked>>>> = OnceLock::new();

/// Hands goroutine `g` of `m`, which held its P `held_ns` in the kernel, to
/// the reporter. Called by sysmon; never waits.
pub(crate) fn report(m: &'static M, g: u64, held_ns: u64) {
    if g == 0 {
        return;
    }
    let queue = REPORTER.get_or_init(|| {
        let (tx, rx) = channel::<Blocked>();
        std::thread::Builder::new()
            .name("goro-blockwarn".into())
            .stack_size(8 << 20)
            .spawn(move || serve(rx.into_iter()))
            .ok()
            .map(|_| Mutex::new(tx))
    });
    if let Some(q) = queue {
        let _ = q
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .send(Blocked { m, g, held_ns });
    }
}

/// Goroutine and call site pairs named at most: the lines, and the memory
/// that remembers them, stay bounded.
const TOLD_MAX: usize = 4096;

fn serve(reports: impl Iterator<Item = Blocked>) {
    let _runtime_thread = crate::runtime::sys::os_threads::register();
    let mut sym = Symbolizer::new();
    let mut told: HashSet<(u64, String)> = HashSet::new();
    for b in reports {
        if told.len() >= TOLD_MAX {
            if told.len() == TOLD_MAX {
                eprintln!("goro: more goroutines blocked their threads outside goro::blocking; {TOLD_MAX} were named, the rest are not");
                told.insert((u64::MAX, String::new()));
            }
            continue;
        }
        // What needs the goroutine still there first: its frames, its name.
        let frames = running::frames_of(b.m, b.g);
        let snap = all_gs().into_iter().filter_map(|g| snapshot(&g)).find(|s| s.id == b.g);
        let created_at = snap.as_ref().map(|s| s.created_at.file());
        let site = frames.and_then(|c| call_site(&mut sym, &c, created_at));
        let name = snap
            .and_then(|s| s.name)
            .map_or_else(String::new, |n| format!(" {n:?}"));
        if !told.insert((b.g, site.clone().unwrap_or_default())) {
            continue;
        }
        let at = site.map_or_else(String::new, |s| format!(" (at {s})"));
        eprintln!(
            "goro: goroutine {}{name} blocked its thread over {} ms in a system call outside goro::blocking{at}",
            b.g,
            b.held_ns / 1_000_000
        );
    }
}

/// Where the goroutine blocked: the first frame of the program's own Rust
/// code (a `.rs` path relative to where it was built), else the first Rust
/// frame outside std and the dependencies (a whole path: the build root is
/// not known), else the first Rust function by name (a build without line
/// tables), never a C library's file. `created_at`, the file the goroutine
/// was created in, may name the build root (`frames::learn_root`).
fn call_site(sym: &mut Symbolizer, captured: &frames::Captured, created_at: Option<&str>) -> Option<String> {
    let all = sym.resolve(captured);
    if let Some(at) = created_at {
        frames::learn_root(at, &all, frames::Side::Outermost);
    }
    let kept = frames::trim(&all, Keep::Parked);
    let rust = |f: &&frames::Frame| f.file.as_deref().is_some_and(|p| p.ends_with(".rs"));
    let own = |f: &&frames::Frame| {
        f.file
            .as_deref()
            .map(frames::shorten)
            .is_some_and(|p| !p.starts_with('/') && !p.starts_with("./"))
    };
    let not_deps = |f: &&frames::Frame| f.file.as_deref().is_some_and(|p| !frames::is_dependency(p));
    let by_file = kept
        .iter()
        .filter(rust)
        .find(own)
        .or_else(|| kept.iter().filter(rust).find(not_deps));
    let Some(f) = by_file else {
        // No line tables: the first function that is not the C library's.
        return kept
            .iter()
            .find(|f| f.file.is_none() && f.name.contains("::"))
            .map(|f| f.name.clone());
    };
    let file = frames::shorten(f.file.as_deref().unwrap_or_default());
    Some(match f.line {
        Some(line) => format!("{file}:{line}"),
        None => file.to_owned(),
    })
}
