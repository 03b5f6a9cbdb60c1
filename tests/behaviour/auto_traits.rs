//! The auto traits API.md promises, checked at compile time.

use std::time::Instant;

fn send_sync<T: Send + Sync>() {}
fn send<T: Send>() {}

#[test]
fn public_types_are_send_and_sync() {
    send_sync::<goro::chan::Sender<String>>();
    send_sync::<goro::chan::Receiver<String>>();
    send_sync::<goro::chan::Receiver<Instant>>();
    send_sync::<goro::JoinHandle<String>>();
    send_sync::<goro::GoId>();
    send_sync::<goro::time::Timer>();
    send_sync::<goro::time::Ticker>();
    send_sync::<goro::sync::Mutex<Vec<u8>>>();
    send_sync::<goro::sync::RwLock<Vec<u8>>>();
    send_sync::<goro::sync::Condvar>();
    send_sync::<goro::sync::Semaphore>();
    send_sync::<goro::sync::WaitGroup>();
    send_sync::<goro::sync::Once>();
    send_sync::<goro::sync::MutexGuard<'static, u8>>();
    send::<goro::chan::SendError<String>>();
    send_sync::<goro::runtime::Stats>();
}
