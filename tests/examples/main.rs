//! The example programs, run as their users run them: `cluster_node` fed JSON
//! lines, `http_echo` over real sockets, `worker_pool` and `skynet`
//! (`examples_small`), `trace_svg` on traces written by hand; and the HTTP echo example's parsing and writing modules
//! with their unit and property tests (`http_echo_parts`). Each example runs in
//! a process of its own (`common::example_bin`).

#[path = "../common/mod.rs"]
mod common;

mod cluster_node;
mod examples_small;
mod http_echo;
mod http_echo_parts;
mod trace_svg;

// The HTTP echo example's modules, at the crate root as in the example (they
// name each other `crate::request`...); `http_echo_parts` tests them. The
// example's `main` uses what the tests do not.
#[allow(dead_code)]
#[path = "../../examples/http_echo/chunked.rs"]
mod chunked;
#[allow(dead_code)]
#[path = "../../examples/http_echo/limits.rs"]
mod limits;
#[allow(dead_code)]
#[path = "../../examples/http_echo/request.rs"]
mod request;
#[allow(dead_code)]
#[path = "../../examples/http_echo/response.rs"]
mod response;
