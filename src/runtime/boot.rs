//! Start-up: the one file that names every layer. The runtime starts on first
//! use (`proc::state::started`, from an entry point, links to
//! [`start_default`] by name) or from [`Config::init`]; exactly one caller
//! makes it, the others find it made.

use super::monitor::{deadlock, panics, running, signal, sysmon};
use super::netpoll;
use super::proc::config::{AlreadyStarted, Config, Godebug};
use super::proc::state::{init_once, sched, try_sched, Hooks, Sched};
use super::sched::{ownership, schedule};
use super::sys::altstack;
use super::sys::epoll::Poller;
use super::sys::fatal;

/// Starts the runtime with `config`. Returns false if it was already running.
pub(crate) fn start(config: Config) -> bool {
    let (s, ours) = init_once(|| {
        let config = config.resolve();
        signal::install();
        altstack::on_runtime_start();
        panics::install_hook();
        ownership::init_barrier();
        let godebug = Godebug::from_env();
        running::install(godebug.dumpsig);
        let poller = Poller::new().unwrap_or_else(|e| {
            let hint = fatal::open_files_hint(&e);
            fatal::die(&format!(
                "fatal error: goro: cannot create the epoll poller: {e}{hint}\n"
            ))
        });
        let hooks = Hooks {
            net_events: netpoll::on_events,
            m_main: schedule::run,
        };
        Sched::new(config, godebug, poller, hooks)
    });
    if ours {
        // The reporter first: sysmon pokes it once running.
        deadlock::start(s);
        sysmon::start(s);
        super::trace::start_from_env();
    }
    ours
}

/// The runtime, started with the default configuration if nothing started it
/// yet: what every entry point calls first (the runtime's public functions,
/// and through `exports` the crate's spawns, channels, timers and sockets).
/// The layers below assume a started runtime (`proc::state::sched`).
#[inline]
pub(crate) fn started() -> &'static Sched {
    match try_sched() {
        Some(s) => s,
        None => start_default(),
    }
}

#[cold]
#[inline(never)]
fn start_default() -> &'static Sched {
    start(Config::new());
    sched()
}

impl Config {
    /// Starts the runtime with these settings. Call it once, before anything else
    /// uses goro; the runtime then lives as long as the process.
    ///
    /// ```
    /// // At the top of main:
    /// if let Err(e) = goro::runtime::Config::new().procs(2).init() {
    ///     eprintln!("warning: {e}"); // some earlier code used goro already
    /// }
    /// assert_eq!(goro::runtime::gomaxprocs(), 2);
    /// assert_eq!(goro::go!(|| 21 * 2).join().unwrap(), 42);
    /// ```
    ///
    /// # Errors
    /// [`AlreadyStarted`] if the runtime is already running (started by this
    /// `Config` or by an earlier use, with its defaults); the settings are then
    /// ignored.
    pub fn init(self) -> Result<(), AlreadyStarted> {
        if start(self) {
            Ok(())
        } else {
            Err(AlreadyStarted)
        }
    }
}
