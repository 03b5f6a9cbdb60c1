//! The Rust side of the side-by-side benchmarks of goro, Go, Tokio and may
//! (scripts/compare.sh builds and runs them; README.md says how).
//!
//! The workload binaries `goro`, `tokio` and `may` (src/bin/) are one program
//! on three runtimes: [`harness`] is the frame (command line, result line,
//! failures, the [`harness::Runtime`] trait of primitives) and [`workloads`]
//! what is measured; each binary only implements [`harness::Runtime`]. Their
//! command line is `<impl> <workload> [--n N] [--port P]`, and each run prints
//! exactly one line on stdout:
//!
//! ```text
//! BENCH workload=<name> impl=<goro|go|tokio|may> procs=<P> value=<number> unit=<unit>
//! ```
//!
//! Go's twin is go/main.go. The HTTP servers of the `http_echo` benchmark are
//! binaries of their own (`http_tokio`, `http_may`), with their shared parts in
//! [`http`]; `echo_client` is the load generator of `echo_server` and `charts`
//! draws the report's charts. `bridge` holds the rows of "goro with async
//! Rust" (goro and Tokio in one program, no Go or may twin); it uses the
//! result line and failure exits of [`harness`] but not its `Runtime` trait.

pub mod harness;
pub mod http;
pub mod workloads;
