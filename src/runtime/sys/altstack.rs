//! Each M's alternate signal stack. The runtime's signal handlers run on it
//! (`SA_ONSTACK`): the stack-overflow report (`monitor/signal.rs`) because the
//! stack that overflowed cannot hold it, SIGQUIT's (`monitor/deadlock.rs`)
//! because the current stack may be a goroutine's small one.
//!
//! Thread: each function acts on the calling thread only.

/// Size of each M's alternate signal stack.
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
    // SAFETY: fresh anonymous mapping; checked below. It lives as long as the M's
    // thread; `on_thread_exit` unmaps it.
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
        return; // Overflows will then kill the process without our message.
    }
    let stack = libc::stack_t {
        ss_sp: mem,
        ss_flags: 0,
        ss_size: ALT_STACK_SIZE,
    };
    // SAFETY: `stack` describes the mapping above.
    unsafe { libc::sigaltstack(&stack, std::ptr::null_mut()) };
    OUR_ALT_STACK.with(|c| c.set(mem));
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
