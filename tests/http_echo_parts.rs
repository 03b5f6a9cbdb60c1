//! The HTTP echo example's parsing and writing modules, compiled into this test
//! so their unit tests run under `cargo test` (an example built as a test would
//! not also be built as the binary that `tests/http_echo.rs` drives).
#![allow(dead_code)] // the example's main uses what this test does not

#[path = "../examples/http_echo/chunked.rs"]
mod chunked;
#[path = "../examples/http_echo/request.rs"]
mod request;
#[path = "../examples/http_echo/response.rs"]
mod response;
