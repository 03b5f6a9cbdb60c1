//! The cooperative half of preemption: sysmon flags an M whose G has run 10 ms
//! without a switch (`M::preempt`), counting time in short blocking calls as
//! running, and goro calls that may switch anyway call [`check`] on entry, as
//! does `blocking` when its call returns; it yields if the flag is up. The flag
//! is cleared each time the M resumes a G. A G that makes no such call is dealt
//! with by sysmon's retake of its P (`sysmon.rs`).

use crate::runtime::proc::m::{current_g, current_m};
use std::sync::atomic::Ordering;

/// Yields the running G if sysmon asked it to. Small enough to inline into
/// every goro call; the yield itself is out of line.
#[inline]
pub(crate) fn check() {
    if let Some(m) = current_m() {
        if m.preempt.load(Ordering::Relaxed) && current_g().is_some() {
            m.preempt.store(false, Ordering::Relaxed);
            if crate::runtime::proc::tracing::on() {
                crate::runtime::proc::tracing::preempting(m);
            }
            preempted();
        }
    }
}

#[cold]
#[inline(never)]
fn preempted() {
    super::switch::yield_now();
}
