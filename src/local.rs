//! Goroutine-local storage: [`local!`](crate::local!) and [`LocalKey`], the
//! per-goroutine counterpart of std's `thread_local!` and `LocalKey`.
//!
//! A key is a `static` holding its initializer and a slot number; the values live
//! in the running context's map (`runtime::task::locals`, which documents who
//! touches what and when values are dropped). This file is the typed face of that
//! map: it makes a key's value a `Box<T>` and hands out `&T`.

use crate::runtime::exports::{current_map, make, slot_of, LocalMap};
use std::cell::{Cell, RefCell};
use std::fmt;
use std::sync::atomic::AtomicUsize;

/// Declares goroutine-local keys: `static`s of type [`LocalKey<T>`], in the shape
/// of std's `thread_local!`.
///
/// Each goroutine has its own value of each key, made by the initializer on the
/// goroutine's first use of that key and dropped when the goroutine ends (before
/// [`JoinHandle::join`](crate::JoinHandle::join) returns, also after a panic). A
/// recycled goroutine never sees an earlier goroutine's value. On a plain OS
/// thread the value is the thread's own, and inside
/// [`blocking`](fn@crate::blocking) it is the calling goroutine's.
///
/// Unlike a `thread_local!`, a goroutine-local value follows its goroutine from
/// thread to thread, so it stays correct across any park, and a reference handed
/// to [`LocalKey::with`]'s closure stays valid across parks too. This is the safe
/// replacement for thread-locals in goroutine code (`docs/SAFETY.md`).
///
/// `T` must be `Send` (the value moves between threads with its goroutine) and
/// `'static`. The `const { ... }` form is accepted as std's is; the initializer
/// is then a constant expression.
///
/// ```
/// use std::cell::{Cell, RefCell};
///
/// goro::local! {
///     static COUNTER: Cell<u64> = Cell::new(0);
///     pub static NAME: RefCell<String> = RefCell::new(String::new());
///     static FAST: Cell<u32> = const { Cell::new(0) };
/// }
///
/// let hs: Vec<_> = (0..4u64)
///     .map(|i| goro::go!(move || {
///         for _ in 0..=i {
///             COUNTER.with(|c| c.set(c.get() + 1));
///             goro::yield_now(); // may resume on another thread: the value follows
///         }
///         NAME.with_borrow_mut(|n| n.push_str("worker"));
///         FAST.set(7);
///         (COUNTER.get(), NAME.with_borrow(|n| n.len()), FAST.get())
///     }))
///     .collect();
/// for (i, h) in hs.into_iter().enumerate() {
///     assert_eq!(h.join().unwrap(), (i as u64 + 1, 6, 7));
/// }
/// assert_eq!(COUNTER.get(), 0); // main's own value, untouched
/// ```
#[macro_export]
macro_rules! local {
    () => {};
    ($(#[$attr:meta])* $vis:vis static $name:ident: $t:ty = const { $init:expr }; $($rest:tt)*) => {
        $crate::__local_key!($(#[$attr])* $vis $name, $t, { const { $init } });
        $crate::local!($($rest)*);
    };
    ($(#[$attr:meta])* $vis:vis static $name:ident: $t:ty = const { $init:expr }) => {
        $crate::__local_key!($(#[$attr])* $vis $name, $t, { const { $init } });
    };
    ($(#[$attr:meta])* $vis:vis static $name:ident: $t:ty = $init:expr; $($rest:tt)*) => {
        $crate::__local_key!($(#[$attr])* $vis $name, $t, { $init });
        $crate::local!($($rest)*);
    };
    ($(#[$attr:meta])* $vis:vis static $name:ident: $t:ty = $init:expr) => {
        $crate::__local_key!($(#[$attr])* $vis $name, $t, { $init });
    };
}

/// One key of [`local!`]: a `static` whose initializer is a plain function.
#[doc(hidden)]
#[macro_export]
macro_rules! __local_key {
    ($(#[$attr:meta])* $vis:vis $name:ident, $t:ty, $init:block) => {
        $(#[$attr])*
        $vis static $name: $crate::LocalKey<$t> = {
            fn __init() -> $t $init
            $crate::LocalKey::__new(__init)
        };
    };
}

/// A goroutine-local key, declared with [`local!`](crate::local!): each goroutine
/// (and each plain thread) has its own value.
///
/// [`with`](LocalKey::with) lends the current context's value; for `Cell` and
/// `RefCell` values the shortcuts of std's `LocalKey` are here too
/// ([`get`](LocalKey::get), [`set`](LocalKey::set),
/// [`with_borrow_mut`](LocalKey::with_borrow_mut), ...).
pub struct LocalKey<T: 'static> {
    init: fn() -> T,
    /// The key's slot number + 1 in every map, 0 until first used.
    slot: AtomicUsize,
}

impl<T: Send + 'static> LocalKey<T> {
    #[doc(hidden)]
    pub const fn __new(init: fn() -> T) -> Self {
        LocalKey {
            init,
            slot: AtomicUsize::new(0),
        }
    }

    /// Calls `f` with the current goroutine's value (a plain thread's own value
    /// outside goroutines), making it first if this is the goroutine's first use.
    ///
    /// `f` may park, and the goroutine may resume on another thread: the
    /// reference stays valid and still names this goroutine's value. Nested `with`
    /// calls, of this key or others, are fine.
    ///
    /// ```
    /// use std::cell::Cell;
    /// goro::local! { static HITS: Cell<u32> = Cell::new(0); }
    ///
    /// let n = goro::go!(|| {
    ///     HITS.with(|h| {
    ///         h.set(1);
    ///         goro::time::sleep(std::time::Duration::from_millis(1)); // parks
    ///         h.set(h.get() + 1);
    ///     });
    ///     HITS.get()
    /// });
    /// assert_eq!(n.join().unwrap(), 2);
    /// ```
    ///
    /// # Panics
    /// If the initializer panics (the value is then not made; the next use tries
    /// again), if the initializer uses this same key, and when called from a
    /// goroutine-local destructor on a key already destroyed, or after the
    /// goroutine's values have all been dropped.
    pub fn with<F, R>(&'static self, f: F) -> R
    where
        F: FnOnce(&T) -> R,
    {
        let value = self.value();
        // SAFETY: `value` is the running context's Box<T>, which lives until that
        // context ends; it cannot end while `f` runs, and the map never moves or
        // frees a value before then. Only this context touches it (`T` is shared
        // across no thread: another context has its own value).
        f(unsafe { &*value })
    }

    /// The current context's value, made now if it does not exist yet.
    #[inline]
    fn value(&'static self) -> *const T {
        match self.find() {
            (_, _, Some(v)) => v,
            (map, slot, None) => self.make(map, slot, None),
        }
    }

    /// The running context's map, this key's slot in it, and its value there
    /// if made.
    #[inline]
    fn find(&'static self) -> (*mut LocalMap, usize, Option<*const T>) {
        let slot = slot_of(&self.slot);
        let map = current_map();
        // SAFETY: `map` is the running context's, and no borrow of it is live.
        let value = unsafe { (*map).get(slot) };
        (map, slot, value.map(|v| v.cast::<T>().cast_const()))
    }

    /// Sets the current context's value to `value`, without the initializer
    /// if it is not made yet; else hands `value` to `update`.
    fn set_with(&'static self, value: T, update: impl FnOnce(&T, T)) {
        match self.find() {
            // SAFETY: as in `with`: the current context's value, alive here.
            (_, _, Some(v)) => update(unsafe { &*v }, value),
            (map, slot, None) => {
                self.make(map, slot, Some(value));
            }
        }
    }

    #[cold]
    fn make(&'static self, map: *mut LocalMap, slot: usize, first: Option<T>) -> *const T {
        let mut first = first;
        let init = self.init;
        let mut boxed = || Box::into_raw(Box::new(first.take().unwrap_or_else(init))).cast::<u8>();
        // SAFETY: `map` is the running context's, with no borrow live; `drop_box::<T>`
        // drops what `boxed` makes.
        unsafe { make(map, slot, &mut boxed, drop_box::<T>) }.cast::<T>()
    }
}

/// Drops a value made by [`LocalKey::make`].
///
/// # Safety
/// `p` came from `Box::<T>::into_raw` and is dropped once.
unsafe fn drop_box<T>(p: *mut u8) {
    // SAFETY: the caller's contract.
    drop(unsafe { Box::from_raw(p.cast::<T>()) });
}

impl<T: Send + 'static> LocalKey<Cell<T>> {
    /// Sets the current context's value; a value not made yet is made from
    /// `value` without running the initializer. As std's `LocalKey::set`.
    ///
    /// ```
    /// use std::cell::Cell;
    /// goro::local! { static X: Cell<i32> = panic!("never run: set makes the value"); }
    /// X.set(3);
    /// assert_eq!(X.get(), 3);
    /// ```
    pub fn set(&'static self, value: T) {
        self.set_with(Cell::new(value), |c, v| c.set(v.into_inner()));
    }

    /// A copy of the current context's value.
    ///
    /// ```
    /// use std::cell::Cell;
    /// goro::local! { static X: Cell<i32> = Cell::new(1); }
    /// assert_eq!(X.get(), 1);
    /// ```
    pub fn get(&'static self) -> T
    where
        T: Copy,
    {
        self.with(Cell::get)
    }

    /// Takes the current context's value, leaving `T::default()`.
    ///
    /// ```
    /// use std::cell::Cell;
    /// goro::local! { static X: Cell<Option<i32>> = Cell::new(Some(1)); }
    /// assert_eq!(X.take(), Some(1));
    /// assert_eq!(X.take(), None);
    /// ```
    pub fn take(&'static self) -> T
    where
        T: Default,
    {
        self.with(Cell::take)
    }

    /// Replaces the current context's value, returning the old one.
    ///
    /// ```
    /// use std::cell::Cell;
    /// goro::local! { static X: Cell<i32> = Cell::new(1); }
    /// assert_eq!(X.replace(2), 1);
    /// assert_eq!(X.get(), 2);
    /// ```
    pub fn replace(&'static self, value: T) -> T {
        self.with(|c| c.replace(value))
    }
}

impl<T: Send + 'static> LocalKey<RefCell<T>> {
    /// Calls `f` with a shared borrow of the current context's value.
    ///
    /// ```
    /// use std::cell::RefCell;
    /// goro::local! { static V: RefCell<Vec<i32>> = RefCell::new(vec![1, 2]); }
    /// assert_eq!(V.with_borrow(|v| v.len()), 2);
    /// ```
    ///
    /// # Panics
    /// If the value is mutably borrowed.
    pub fn with_borrow<F, R>(&'static self, f: F) -> R
    where
        F: FnOnce(&T) -> R,
    {
        self.with(|c| f(&c.borrow()))
    }

    /// Calls `f` with a mutable borrow of the current context's value.
    ///
    /// ```
    /// use std::cell::RefCell;
    /// goro::local! { static V: RefCell<Vec<i32>> = RefCell::new(Vec::new()); }
    /// V.with_borrow_mut(|v| v.push(1));
    /// assert_eq!(V.with_borrow(|v| v.clone()), [1]);
    /// ```
    ///
    /// # Panics
    /// If the value is borrowed.
    pub fn with_borrow_mut<F, R>(&'static self, f: F) -> R
    where
        F: FnOnce(&mut T) -> R,
    {
        self.with(|c| f(&mut c.borrow_mut()))
    }

    /// Sets the current context's value; a value not made yet is made from
    /// `value` without running the initializer.
    ///
    /// ```
    /// use std::cell::RefCell;
    /// goro::local! { static V: RefCell<String> = RefCell::new(String::new()); }
    /// V.set("hi".to_string());
    /// assert_eq!(V.with_borrow(|s| s.clone()), "hi");
    /// ```
    ///
    /// # Panics
    /// If the value is borrowed.
    pub fn set(&'static self, value: T) {
        self.set_with(RefCell::new(value), |c, v| *c.borrow_mut() = v.into_inner());
    }

    /// Takes the current context's value, leaving `T::default()`.
    ///
    /// ```
    /// use std::cell::RefCell;
    /// goro::local! { static V: RefCell<Vec<i32>> = RefCell::new(vec![1]); }
    /// assert_eq!(V.take(), [1]);
    /// assert!(V.with_borrow(|v| v.is_empty()));
    /// ```
    ///
    /// # Panics
    /// If the value is borrowed.
    pub fn take(&'static self) -> T
    where
        T: Default,
    {
        self.with(RefCell::take)
    }

    /// Replaces the current context's value, returning the old one.
    ///
    /// ```
    /// use std::cell::RefCell;
    /// goro::local! { static V: RefCell<i32> = RefCell::new(1); }
    /// assert_eq!(V.replace(2), 1);
    /// ```
    ///
    /// # Panics
    /// If the value is borrowed.
    pub fn replace(&'static self, value: T) -> T {
        self.with(|c| c.replace(value))
    }
}

impl<T: 'static> fmt::Debug for LocalKey<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalKey").finish_non_exhaustive()
    }
}
