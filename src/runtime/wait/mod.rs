//! The wait layer: the one contract every blocking primitive of goro builds on
//! (chan, sync, time, net). Its re-exports below are all the rest of goro may
//! use of the runtime's waiting.

pub(in crate::runtime) mod guarded;
pub(in crate::runtime) mod park;
pub(in crate::runtime) mod thread_waits;
pub(in crate::runtime) mod waitq;

pub(crate) use crate::runtime::proc::m::current_g;
pub(crate) use crate::runtime::proc::timers::{Action, Fire};
pub(crate) use crate::runtime::proc::waiter::{Claim, Waiter, UNCLAIMED};
pub(crate) use crate::runtime::sched::preempt::check as preempt_check;
pub(crate) use crate::runtime::sched::timers::{add_timer, add_timer_parked};
pub(crate) use crate::runtime::sys::lock::{RawGuard, RawMutex};
pub(crate) use crate::runtime::sys::sync_prims::{const_unless_loom, AtomicBool, AtomicU32, Ordering};
pub(crate) use crate::runtime::task::g::swap::Relocate;
pub(crate) use crate::runtime::task::ids::WaitReason;
pub(crate) use guarded::{pop_all, wait_in, wait_in_timeout, Guarded};
pub(crate) use park::{OnDrop, Parker};
pub(crate) use waitq::{block, park_at, HeapClaim, HeapSudog, Sudog, WaitQueue};
