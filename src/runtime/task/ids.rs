//! The two faces of a goroutine the public API shows: its id ([`GoId`]) and
//! why it waits ([`WaitReason`], the words of a dump's `[...]`). Plain values:
//! no thread rule applies to them.

use std::fmt;

/// A goroutine's id, unique for the life of the process (Go's goid, the number in
/// `goroutine 17 [running]`). Ids are never reused.
///
/// Get one from [`JoinHandle::id`](crate::JoinHandle::id) or, inside the goroutine, from
/// [`current`](fn@crate::current). It
/// is `Copy`, hashable and ordered, so it can key a map; it prints as the bare
/// number.
///
/// ```
/// let a = goro::go!(|| goro::current().unwrap());
/// let b = goro::go!(|| ());
/// let (id_a, id_b) = (a.id(), b.id());
/// assert_ne!(id_a, id_b);
/// assert_eq!(a.join().unwrap(), id_a);
/// assert_eq!(id_a.to_string(), id_a.as_u64().to_string());
/// # b.join().unwrap();
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GoId(u64);

impl GoId {
    pub(crate) fn from_raw(id: u64) -> GoId {
        GoId(id)
    }

    /// The id as a number, as Go prints it (`goroutine 17`) and as goro's panic
    /// messages and `GODEBUG=scheddetail=1` traces show it.
    ///
    /// ```
    /// let h = goro::go!(|| ());
    /// let id = h.id();
    /// assert!(id.as_u64() > 0);
    /// assert_eq!(format!("goroutine {id}"), format!("goroutine {}", id.as_u64()));
    /// # h.join().unwrap();
    /// ```
    pub fn as_u64(self) -> u64 {
        self.0
    }
}

impl fmt::Display for GoId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

/// Why a goroutine (or a thread, in a goro wait) is waiting: the words in a
/// goroutine dump's `[...]` and in `GODEBUG=scheddetail`, Go's wording where Go
/// has the same wait (`Display` prints them).
///
/// ```
/// use goro::runtime::WaitReason;
/// assert_eq!(WaitReason::ChanRecv.to_string(), "chan receive");
/// assert_eq!(WaitReason::SyncWaitGroupWait.to_string(), "sync.WaitGroup.Wait");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
#[non_exhaustive]
pub enum WaitReason {
    /// Not waiting (internal: never shown).
    #[doc(hidden)]
    None = 0,
    /// `JoinHandle::join` (goro's own: Go has no join).
    Join,
    /// `time::sleep`.
    Sleep,
    /// `time::sleep(Duration::MAX)`: a sleep that never ends.
    Forever,
    /// A channel receive.
    ChanRecv,
    /// A channel send.
    ChanSend,
    /// `select!` with arms.
    Select,
    /// `select! {}`.
    SelectNoCases,
    /// `sync::Mutex::lock`.
    SyncMutexLock,
    /// `sync::RwLock::read`.
    SyncRWMutexRLock,
    /// `sync::RwLock::write`.
    SyncRWMutexLock,
    /// `sync::Condvar::wait`.
    SyncCondWait,
    /// `sync::WaitGroup::wait`.
    SyncWaitGroupWait,
    /// `sync::Semaphore::acquire`.
    Semacquire,
    /// `sync::Once::call_once` waiting for another caller.
    SyncOnce,
    /// A socket read, write, accept or connect.
    IoWait,
    /// `goro::block_on`: a future not ready yet (goro's own: Go has no futures).
    Future,
}

impl fmt::Display for WaitReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl WaitReason {
    const ALL: [WaitReason; 17] = [
        WaitReason::None,
        WaitReason::Join,
        WaitReason::Sleep,
        WaitReason::Forever,
        WaitReason::ChanRecv,
        WaitReason::ChanSend,
        WaitReason::Select,
        WaitReason::SelectNoCases,
        WaitReason::SyncMutexLock,
        WaitReason::SyncRWMutexRLock,
        WaitReason::SyncRWMutexLock,
        WaitReason::SyncCondWait,
        WaitReason::SyncWaitGroupWait,
        WaitReason::Semacquire,
        WaitReason::SyncOnce,
        WaitReason::IoWait,
        WaitReason::Future,
    ];

    pub(crate) fn from_u8(v: u8) -> WaitReason {
        Self::ALL.get(v as usize).copied().unwrap_or(WaitReason::None)
    }

    /// The text inside `status=4(...)`: Go's wording where Go has the same wait.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            WaitReason::None => "",
            WaitReason::Join => "goro.JoinHandle.join",
            WaitReason::Sleep => "sleep",
            WaitReason::Forever => "forever",
            WaitReason::ChanRecv => "chan receive",
            WaitReason::ChanSend => "chan send",
            WaitReason::Select => "select",
            WaitReason::SelectNoCases => "select (no cases)",
            WaitReason::SyncMutexLock => "sync.Mutex.Lock",
            WaitReason::SyncRWMutexRLock => "sync.RWMutex.RLock",
            WaitReason::SyncRWMutexLock => "sync.RWMutex.Lock",
            WaitReason::SyncCondWait => "sync.Cond.Wait",
            WaitReason::SyncWaitGroupWait => "sync.WaitGroup.Wait",
            WaitReason::Semacquire => "semacquire",
            WaitReason::SyncOnce => "sync.Once.Do",
            WaitReason::IoWait => "IO wait",
            WaitReason::Future => "future",
        }
    }
}
