//! Runtime configuration: [`Config`] (API), the environment (`GOMAXPROCS`), and the
//! resolved values the scheduler starts with.

use std::fmt;

/// Highest GOMAXPROCS accepted (Go's limit too).
pub(crate) const MAX_PROCS: usize = 1024;
/// Default stack per G.
pub(crate) const DEFAULT_STACK_SIZE: usize = 256 << 10;

/// Configures the runtime before its first use.
///
/// ```
/// goro::runtime::Config::new().procs(2).stack_size(128 << 10).init().ok();
/// assert!(goro::runtime::gomaxprocs() >= 1);
/// ```
#[derive(Clone, Debug, Default)]
pub struct Config {
    procs: Option<usize>,
    stack_size: Option<usize>,
    pin_threads: bool,
}

/// Returned by [`Config::init`] when the runtime was already running (it starts
/// lazily on the first `go!`, `spawn` or runtime call).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AlreadyStarted;

impl fmt::Display for AlreadyStarted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the goro runtime is already running; Config::init must come before its first use")
    }
}

impl std::error::Error for AlreadyStarted {}

impl Config {
    /// Defaults: GOMAXPROCS from the environment or the number of CPUs, 256 KiB
    /// stacks, no pinning.
    pub fn new() -> Self {
        Self::default()
    }

    /// GOMAXPROCS: how many Ps (Gs running in parallel). Beats the `GOMAXPROCS`
    /// environment variable. 0 means "the default"; values above 1024 are capped.
    pub fn procs(mut self, n: usize) -> Self {
        self.procs = (n > 0).then_some(n);
        self
    }

    /// Default stack size per G, rounded up to whole pages, at least 16 KiB.
    /// Only touched pages use memory.
    pub fn stack_size(mut self, bytes: usize) -> Self {
        self.stack_size = Some(bytes);
        self
    }

    /// Pins the M that holds P *i* to core *i* (modulo the number of cores).
    pub fn pin_threads(mut self, pin: bool) -> Self {
        self.pin_threads = pin;
        self
    }

    /// Starts the runtime with this configuration.
    pub fn init(self) -> Result<(), AlreadyStarted> {
        if super::sched::start(self) {
            Ok(())
        } else {
            Err(AlreadyStarted)
        }
    }

    pub(crate) fn resolve(&self) -> Resolved {
        let procs = self.procs.unwrap_or_else(procs_from_env).min(MAX_PROCS);
        let stack_size = super::stack::round_size(self.stack_size.unwrap_or(DEFAULT_STACK_SIZE));
        Resolved {
            procs,
            stack_size,
            pin_threads: self.pin_threads,
        }
    }
}

/// The configuration the runtime runs with.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Resolved {
    pub(crate) procs: usize,
    pub(crate) stack_size: usize,
    pub(crate) pin_threads: bool,
}

fn ncpu() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// `GOMAXPROCS` from the environment, else the CPU count. Like Go, an invalid value
/// is ignored; unlike Go, we say so.
fn procs_from_env() -> usize {
    match std::env::var("GOMAXPROCS") {
        Err(_) => ncpu(),
        Ok(v) => match parse_procs(&v) {
            Ok(n) => n,
            Err(why) => {
                eprintln!("goro: ignoring GOMAXPROCS={v:?}: {why}; using {}", ncpu());
                ncpu()
            }
        },
    }
}

pub(crate) fn parse_procs(v: &str) -> Result<usize, String> {
    match v.trim().parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) if n > MAX_PROCS => Err(format!("must be at most {MAX_PROCS}")),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("not a positive integer ({e})")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gomaxprocs_env_values_are_checked() {
        assert_eq!(parse_procs("4"), Ok(4));
        assert_eq!(parse_procs(" 2 "), Ok(2));
        assert!(parse_procs("0").is_err());
        assert!(parse_procs("-1").is_err());
        assert!(parse_procs("four").is_err());
        assert!(parse_procs("100000").is_err());
    }

    #[test]
    fn stack_size_is_rounded_and_clamped() {
        let r = Config::new().stack_size(1).resolve();
        assert_eq!(r.stack_size, super::super::stack::MIN_STACK_SIZE);
        let r = Config::new().stack_size(100_000).resolve();
        assert_eq!(r.stack_size % super::super::stack::page_size(), 0);
        assert!(r.stack_size >= 100_000);
    }
}
