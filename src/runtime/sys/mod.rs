//! The bottom layer.

pub(crate) mod altstack;
pub(crate) mod coarse_clock;
pub(crate) mod epoll;
pub(crate) mod frames;
pub(crate) mod futex;
pub(crate) mod lock;
pub(crate) mod note;
pub(crate) mod os_threads;
pub(crate) mod quadheap;
pub(crate) mod sync_prims;
