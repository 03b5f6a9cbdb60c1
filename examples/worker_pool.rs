//! Worker pools, the goroutine way: three worker goroutines take jobs from one
//! channel and send results on another. Each job "works" for a second
//! (`goro::time::sleep`, which parks the goroutine and keeps its thread free),
//! so the five jobs take about two seconds, not five.
//!
//! ```text
//! $ time cargo run --release --example worker_pool
//! worker 1 started  job 1
//! worker 2 started  job 2
//! worker 3 started  job 3
//! worker 1 finished job 1
//! worker 1 started  job 4
//! ...
//! worker 3 exiting
//! ```
//! Which worker takes which job varies from run to run, as with Go.

use goro::chan::{Receiver, Sender};
use std::time::Duration;

const WORKERS: usize = 3;
const JOBS: u64 = 5;

/// Takes jobs until the channel is closed and drained, sending each result.
fn worker(id: usize, jobs: Receiver<u64>, results: Sender<u64>) {
    for job in jobs.iter() {
        println!("worker {id} started  job {job}");
        goro::time::sleep(Duration::from_secs(1));
        println!("worker {id} finished job {job}");
        if results.send(job * 2).is_err() {
            break; // nobody collects results any more
        }
    }
    println!("worker {id} exiting");
}

fn main() {
    let (jobs_tx, jobs) = goro::chan::bounded(JOBS as usize);
    let (results_tx, results) = goro::chan::bounded(JOBS as usize);

    // Three workers, parked until there are jobs.
    let workers: Vec<_> = (1..=WORKERS)
        .map(|id| {
            let (jobs, results) = (jobs.clone(), results_tx.clone());
            goro::go!(move || worker(id, jobs, results))
        })
        .collect();

    // Five jobs, then close the channel: that is the workers' signal to stop.
    for job in 1..=JOBS {
        jobs_tx.send(job).expect("workers are running");
    }
    drop(jobs_tx);

    // Collect every result, then wait for the workers to exit.
    let total: u64 = (0..JOBS).map(|_| results.recv().expect("a result")).sum();
    assert_eq!(total, (1..=JOBS).map(|j| j * 2).sum());
    for w in workers {
        w.join().expect("a worker panicked");
    }
}
