//! Stack frames for panic reports and goroutine dumps: captured on one stack,
//! resolved to names and lines on another, trimmed to what the user wrote.
//!
//! Capturing walks the stack with the unwinder and stores return addresses only,
//! which needs a few KiB of the current stack; resolving reads debug info and
//! needs far more, so it runs where the stack is large (a dump thread, or a
//! helper thread for a panic on a small goroutine stack).
//!
//! Trimming follows std's short backtraces: the frames above
//! `__rust_end_short_backtrace` (the panic machinery) and below
//! `__rust_begin_short_backtrace` (how the goroutine was started; goro runs every
//! goroutine body through one) are left out, and for a parked goroutine so are
//! the runtime's own frames above the call that parked it.

use std::fmt::Write as _;
use std::path::Path;

/// Code addresses of a stack, innermost first, not yet resolved: return
/// addresses, as the unwinder reports them (the symbolizer looks one byte
/// back, into the call).
#[derive(Clone)]
pub(crate) struct Captured(Vec<usize>);

/// The most frames a capture keeps.
pub(crate) const MAX_FRAMES: usize = 100;

/// Captures the calling stack's frames (addresses only).
#[inline(never)]
pub(crate) fn capture() -> Captured {
    capture_below(usize::MAX)
}

/// As [`capture`], up to the first frame at or above `top`: a coroutine's
/// frames without those of the thread that resumed it.
#[inline(never)]
pub(crate) fn capture_below(top: usize) -> Captured {
    let mut ips = Vec::with_capacity(32);
    backtrace::trace(|f| {
        if f.sp() as usize >= top {
            return false;
        }
        ips.push(f.ip() as usize);
        ips.len() < MAX_FRAMES
    });
    Captured(ips)
}

impl Captured {
    /// Frames recorded elsewhere (a signal handler's), innermost first: `pc`,
    /// where the code was interrupted (exact, not a return address), then the
    /// return addresses below it.
    pub(crate) fn interrupted(pc: usize, return_addresses: &[usize]) -> Captured {
        // One past the exact pc, so that the symbolizer's step back lands on it.
        let mut ips = vec![pc + 1];
        ips.extend_from_slice(return_addresses);
        Captured(ips)
    }

    /// Resolves names and source lines: call on a stack with room to spare.
    pub(crate) fn resolve(self) -> Vec<Frame> {
        Symbolizer::new().resolve(&self)
    }
}

/// One resolved frame (an inlined call is a frame of its own).
#[derive(Clone, Debug)]
pub(crate) struct Frame {
    pub(crate) name: String,
    pub(crate) file: Option<String>,
    pub(crate) line: Option<u32>,
    pub(crate) col: Option<u32>,
    /// The runtime's own code, the unwinder's or the coroutine switch's: left
    /// out of a parked goroutine's frames.
    pub(crate) internal: bool,
    /// Any of goro's code (its wrappers between a body and its entry, such as
    /// `WaitGroup::go`'s, are left out too).
    pub(crate) in_goro: bool,
}

/// Where goro's sources are, as debug info names them.
const GORO_SRC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src/");
/// Where the runtime's sources are (the poller is part of it, as in Go).
const RUNTIME_SRC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src/runtime/");
/// The runtime code a parked goroutine's frames keep, by name and by file: the
/// wait helper of `goro::sync`'s types, so such a dump starts at `wait_in` and
/// the type's own method below it.
const KEPT_RUNTIME: (&str, &str) = ("goro::runtime::wait::guarded::", "/src/runtime/wait/guarded.rs");

/// Resolves addresses to frames, each distinct address once: the goroutines
/// of a program share most of their frames, so a dump of many of them costs
/// one lookup per call site, not per goroutine.
pub(crate) struct Symbolizer {
    cache: std::collections::HashMap<usize, Vec<Frame>>,
}

impl Symbolizer {
    pub(crate) fn new() -> Symbolizer {
        Symbolizer {
            cache: std::collections::HashMap::new(),
        }
    }

    /// The frames of `captured`, innermost first. Call on a stack with room
    /// to spare (the debug info reader's).
    pub(crate) fn resolve(&mut self, captured: &Captured) -> Vec<Frame> {
        let mut out = Vec::new();
        for &ip in &captured.0 {
            out.extend_from_slice(self.cache.entry(ip).or_insert_with(|| frames_at(ip)));
        }
        out
    }
}

/// The frames of one return address: the function, and the calls inlined
/// into it at that point (innermost first).
fn frames_at(ip: usize) -> Vec<Frame> {
    let mut out = Vec::new();
    backtrace::resolve(ip as *mut std::ffi::c_void, |s| {
        let name = s.name().map_or_else(|| "<unknown>".to_string(), |n| format!("{n:#}"));
        // Inlined frames carry short names: their files tell where they are.
        let internal = is_internal(&name, s.filename());
        let in_goro = internal
            || name.starts_with("goro::")
            || s.filename()
                .and_then(Path::to_str)
                .is_some_and(|f| f.starts_with(GORO_SRC));
        out.push(Frame {
            name,
            file: s.filename().map(|p| p.display().to_string()),
            line: s.lineno(),
            col: s.colno(),
            internal,
            in_goro,
        });
    });
    if out.is_empty() {
        out.push(Frame {
            name: format!("{:#x}", ip),
            file: None,
            line: None,
            col: None,
            internal: false,
            in_goro: false,
        });
    }
    out
}

/// A source path as the program's own `Location`s name it (a panic's
/// `panicked at`, a dump's `created by`): relative to the directory cargo built
/// the program in, when the file is below it; else whole. Never relative to
/// the working directory, so a dump reads the same wherever the program runs.
pub(crate) fn shorten(p: &str) -> &str {
    build_root()
        .and_then(|root| Path::new(p).strip_prefix(root).ok())
        .and_then(Path::to_str)
        .unwrap_or(p)
}

/// The directory cargo ran the compiler in for the program's own crates (its
/// workspace root), where `Location::file()` paths start: the parent of the
/// `target` folder the running executable lives in; else, for a binary
/// outside a `target` folder (a custom target directory, an installed one),
/// what [`learn_root`] found. `None` until then: paths are printed whole.
fn build_root() -> Option<&'static Path> {
    static ROOT: std::sync::OnceLock<Option<std::path::PathBuf>> = std::sync::OnceLock::new();
    ROOT.get_or_init(|| {
        let exe = std::env::current_exe().ok()?;
        exe.ancestors()
            .find(|a| a.file_name().is_some_and(|n| n == "target"))
            .and_then(Path::parent)
            .map(Path::to_path_buf)
    })
    .as_deref()
    .or_else(|| LEARNED_ROOT.get().map(std::path::PathBuf::as_path))
}

/// The build root found by [`learn_root`].
static LEARNED_ROOT: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();

/// Learns the build root from a `Location` path of the program (`at`) and
/// the frames of the same report: a frame whose whole path ends in `/` +
/// `at` (a relative `at`: one of the program's own files) names the root as
/// the rest. Which frame, `from`: a dump's `created by` is the file of the
/// closure the goroutine started with, its outermost frame; a panic's
/// `panicked at`, of the innermost frame that is the program's. Files of std
/// and of crates cargo fetched name no root.
pub(crate) fn learn_root(at: &str, frames: &[Frame], from: Side) {
    if build_root().is_some() {
        return;
    }
    let files = frames.iter().filter_map(|f| f.file.as_deref());
    let root = match from {
        Side::Innermost => root_of(at, files),
        Side::Outermost => root_of(at, files.rev()),
    };
    if let Some(root) = root {
        let _ = LEARNED_ROOT.set(root.into());
    }
}

/// Which end of a report's frames [`learn_root`] looks from.
#[derive(Clone, Copy)]
pub(crate) enum Side {
    Innermost,
    Outermost,
}

/// [`learn_root`]'s rule: the root that the first of `files` (whole paths)
/// and the relative `at` name together, if any.
fn root_of<'a>(at: &str, mut files: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    if at.starts_with('/') {
        return None;
    }
    files.find_map(|p| p.strip_suffix(at)?.strip_suffix('/').filter(|_| !is_dependency(p)))
}

/// A file of std's, or of a crate cargo fetched (from a registry or git,
/// wherever `CARGO_HOME` is), by its whole path.
pub(crate) fn is_dependency(p: &str) -> bool {
    p.starts_with("/rustc/") || p.contains("/registry/src/") || p.contains("/git/checkouts/")
}

/// Which frames a report keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Keep {
    /// A panic: from below the panic machinery to the goroutine's entry.
    Panic,
    /// A parked goroutine: from the call that parked it to its entry.
    Parked,
    /// Everything (`RUST_BACKTRACE=full`).
    All,
}

const END_MARKER: &str = "__rust_end_short_backtrace";
const BEGIN_MARKER: &str = "__rust_begin_short_backtrace";

/// The frames `keep` asks for, innermost first.
pub(crate) fn trim(frames: &[Frame], keep: Keep) -> &[Frame] {
    if keep == Keep::All {
        return frames;
    }
    let mut start = match keep {
        Keep::Panic => frames
            .iter()
            .rposition(|f| f.name.contains(END_MARKER))
            .map_or(0, |i| i + 1),
        _ => 0,
    };
    let end = frames[start..]
        .iter()
        .position(|f| f.name.contains(BEGIN_MARKER))
        .map_or(frames.len(), |i| start + i);
    if keep == Keep::Parked {
        // The runtime's frames of the park itself, and of the capture.
        while start < end && frames[start].internal {
            start += 1;
        }
    }
    let mut end = end;
    // The closure-call shims and goro's wrappers between the body and the
    // entry marker.
    while end > start && frames[end - 1].in_goro {
        end -= 1;
    }
    &frames[start..end]
}

fn is_internal(name: &str, file: Option<&Path>) -> bool {
    const NAMES: [&str; 4] = [
        "goro::runtime::",
        "backtrace::",
        "corosensei::",
        "core::ops::function::",
    ];
    let file = file.and_then(Path::to_str);
    if name.starts_with(KEPT_RUNTIME.0) || file.is_some_and(|f| f.ends_with(KEPT_RUNTIME.1)) {
        return false;
    }
    if NAMES.iter().any(|p| name.starts_with(p)) {
        return true;
    }
    let Some(file) = file else {
        return false;
    };
    file.starts_with(RUNTIME_SRC)
        || file.contains("/backtrace-0.")
        || file.contains("/corosensei-")
        || file.ends_with("core/src/ops/function.rs")
}

/// std's backtrace shape: `   N: name` then `             at file:line:col`.
pub(crate) fn write_std(out: &mut String, frames: &[Frame]) {
    for (i, f) in frames.iter().enumerate() {
        let _ = writeln!(out, "{i:4}: {}", f.name);
        if let Some(file) = &f.file {
            let _ = write!(out, "             at {}", shorten(file));
            if let Some(line) = f.line {
                let _ = write!(out, ":{line}");
                if let Some(col) = f.col {
                    let _ = write!(out, ":{col}");
                }
            }
            out.push('\n');
        }
    }
}

/// Go's traceback shape: the function, then a tab and `file:line`.
pub(crate) fn write_go(out: &mut String, frames: &[Frame]) {
    for f in frames {
        let _ = writeln!(out, "{}(...)", f.name);
        match (f.file.as_deref().map(shorten), f.line) {
            (Some(file), Some(line)) => {
                let _ = writeln!(out, "\t{file}:{line}");
            }
            (Some(file), None) => {
                let _ = writeln!(out, "\t{file}");
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_relative_location_and_a_whole_frame_path_name_the_build_root() {
        let files = ["/rustc/abc/library/std/src/rt.rs", "/home/u/app/tests/it.rs"];
        assert_eq!(root_of("tests/it.rs", files.into_iter()), Some("/home/u/app"));
        assert_eq!(
            root_of("it.rs", ["/home/u/app/tests/it.rs"].into_iter()),
            Some("/home/u/app/tests")
        );
        assert_eq!(
            root_of("ts/it.rs", ["/home/u/app/tests/it.rs"].into_iter()),
            None,
            "not at a '/'"
        );
        assert_eq!(
            root_of("/home/u/app/tests/it.rs", files.into_iter()),
            None,
            "a whole location"
        );
        let dep = "/usr/local/cargo/registry/src/index.crates.io-1/foo-1.0.0/src/lib.rs";
        assert_eq!(root_of("src/lib.rs", [dep].into_iter()), None, "a dependency's file");
        // A path dependency's `src/lib.rs` inside, the program's own outside:
        // a dump looks from the outermost frame (the goroutine's closure).
        let frames: Vec<Frame> = ["/w/dep/src/lib.rs", "/w/app/src/lib.rs"]
            .iter()
            .map(|p| Frame {
                file: Some((*p).to_owned()),
                ..f("x")
            })
            .collect();
        let files = || frames.iter().filter_map(|f| f.file.as_deref());
        assert_eq!(root_of("src/lib.rs", files().rev()), Some("/w/app"));
    }

    fn f(name: &str) -> Frame {
        Frame {
            name: name.to_string(),
            file: None,
            line: None,
            col: None,
            internal: is_internal(name, None),
            in_goro: name.starts_with("goro::"),
        }
    }

    #[test]
    fn panic_frames_run_from_below_the_machinery_to_the_entry() {
        let frames = [
            f("backtrace::capture"),
            f("std::sys::backtrace::__rust_end_short_backtrace"),
            f("core::panicking::panic_fmt"),
            f("app::work"),
            f("goro::runtime::sched::newproc::__rust_begin_short_backtrace"),
            f("corosensei::trampoline"),
        ];
        let kept: Vec<_> = trim(&frames, Keep::Panic).iter().map(|f| f.name.as_str()).collect();
        assert_eq!(kept, ["core::panicking::panic_fmt", "app::work"]);
        assert_eq!(trim(&frames, Keep::All).len(), frames.len());
    }

    #[test]
    fn parked_frames_start_at_the_call_that_parked() {
        let frames = [
            f("backtrace::capture"),
            f("goro::runtime::task::g::G::suspend"),
            f("goro::runtime::wait::park::park_g"),
            f("goro::chan::Receiver<T>::recv"),
            f("app::worker"),
            f("goro::runtime::sched::newproc::__rust_begin_short_backtrace"),
        ];
        let kept: Vec<_> = trim(&frames, Keep::Parked).iter().map(|f| f.name.as_str()).collect();
        assert_eq!(kept, ["goro::chan::Receiver<T>::recv", "app::worker"]);
        let on_mutex = [
            f("goro::runtime::wait::park::park_g"),
            f("goro::runtime::wait::waitq::block"),
            f("goro::runtime::wait::guarded::wait_in"),
            f("goro::sync::mutex::Mutex<T>::lock"),
            f("app::worker"),
        ];
        let kept: Vec<_> = trim(&on_mutex, Keep::Parked).iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            kept,
            [
                "goro::runtime::wait::guarded::wait_in",
                "goro::sync::mutex::Mutex<T>::lock",
                "app::worker"
            ]
        );
    }
}
