//! Each M's alternate signal stack, and the main thread's. The runtime's
//! signal handlers run on it (`SA_ONSTACK`): the stack-overflow report
//! (`monitor/signal.rs`) because the stack that overflowed cannot hold it,
//! SIGQUIT's (`monitor/deadlock.rs`) because the current stack may be a
//! goroutine's small one.
//!
//! The main thread, when the runtime starts on it, gets a stack of the
//! runtime's in place of the one std made: std's `process::exit`, called on
//! any thread, unmaps the main thread's std-made stack without unregistering it
//! (rust-lang/rust#161018), and a signal the main thread takes while that
//! exit runs (a SIGQUIT during a goroutine's `process::exit`, the deadlock
//! report's exit or SIGQUIT's own, which write the trace) finds no stack and
//! kills the process with SIGSEGV. Nothing unmaps the main thread's: its end
//! is the process's.
//!
//! Thread: each function acts on the calling thread only.

/// Size of each alternate signal stack.
const ALT_STACK_SIZE: usize = 64 << 10;

/// Gives the calling M thread an alternate signal stack big enough for the handler.
pub(crate) fn on_thread_start() {
    // SAFETY: querying the current altstack with a null new-stack pointer.
    let mut current: libc::stack_t = unsafe { std::mem::zeroed() };
    // SAFETY: valid out-pointer.
    unsafe { libc::sigaltstack(std::ptr::null(), &mut current) };
    if current.ss_flags & libc::SS_DISABLE == 0 && current.ss_size >= ALT_STACK_SIZE {
        return;
    }
    if let Some(mem) = install() {
        OUR_ALT_STACK.with(|c| c.set(mem));
    }
}

/// The runtime starts on the calling thread: if it is the process's main
/// thread, gives it a stack of the runtime's (module docs).
pub(crate) fn on_runtime_start() {
    // SAFETY: getpid(2) and gettid(2) have no preconditions.
    if unsafe { libc::gettid() == libc::getpid() } {
        install();
    }
}

/// Maps an alternate signal stack and makes it the calling thread's; `None`
/// if no memory could be had (an overflow then kills the process without the
/// runtime's message).
fn install() -> Option<*mut libc::c_void> {
    // SAFETY: fresh anonymous mapping; checked below. An M's lives as long as
    // its thread (`on_thread_exit` unmaps it), the main thread's as long as
    // the process.
    let mem = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            ALT_STACK_SIZE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if mem == libc::MAP_FAILED {
        return None;
    }
    let stack = libc::stack_t {
        ss_sp: mem,
        ss_flags: 0,
        ss_size: ALT_STACK_SIZE,
    };
    // SAFETY: `stack` describes the mapping above; the calling thread is not
    // running on its current alternate stack (it is not in a signal handler).
    unsafe { libc::sigaltstack(&stack, std::ptr::null_mut()) };
    Some(mem)
}

thread_local! {
    /// The alternate signal stack `on_thread_start` mapped for this thread, if any.
    static OUR_ALT_STACK: std::cell::Cell<*mut libc::c_void> = const { std::cell::Cell::new(std::ptr::null_mut()) };
}

/// An M's thread is exiting: disables and unmaps the alternate stack it was given.
pub(crate) fn on_thread_exit() {
    let mem = OUR_ALT_STACK.with(|c| c.replace(std::ptr::null_mut()));
    if mem.is_null() {
        return;
    }
    let off = libc::stack_t {
        ss_sp: std::ptr::null_mut(),
        ss_flags: libc::SS_DISABLE,
        ss_size: 0,
    };
    // SAFETY: disabling this thread's altstack; no signal handler runs on it now
    // (we are not in a handler). Then the mapping is unused and ours to unmap.
    unsafe {
        libc::sigaltstack(&off, std::ptr::null_mut());
        libc::munmap(mem, ALT_STACK_SIZE);
    }
}
