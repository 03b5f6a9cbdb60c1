//! Every G header ever made (Go's `allgs`), for goroutine dumps, scheddetail
//! traces and the deadlock check. A header is recorded once, when it is first
//! allocated, never per spawn; headers are never freed, so the list only grows
//! to the peak number of live Gs. Readers take a copy of the list and then look
//! at each header through its own protocol (`G::snapshot`, `G::inspect`).

use crate::runtime::task::g::GRef;
use std::sync::Mutex;

static ALL: Mutex<Vec<GRef>> = Mutex::new(Vec::new());

/// Records a newly allocated header.
pub(crate) fn add(g: GRef) {
    ALL.lock().unwrap_or_else(|e| e.into_inner()).push(g);
}

/// Every header so far, in allocation order.
pub(crate) fn all() -> Vec<GRef> {
    ALL.lock().unwrap_or_else(|e| e.into_inner()).clone()
}
