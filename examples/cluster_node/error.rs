//! Maelstrom error codes and the error type every request handler returns.

/// A Maelstrom error code (the subset this node uses).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Code {
    NotSupported = 10,
    MalformedRequest = 12,
    Crash = 13,
    KeyDoesNotExist = 20,
    PreconditionFailed = 22,
}

/// A request that could not be served: answered with an `error` body.
#[derive(Debug, PartialEq, Eq)]
pub struct RpcError {
    pub code: Code,
    pub text: String,
}

impl RpcError {
    pub fn new(code: Code, text: impl Into<String>) -> Self {
        RpcError {
            code,
            text: text.into(),
        }
    }

    pub fn malformed(text: impl Into<String>) -> Self {
        Self::new(Code::MalformedRequest, text)
    }
}
