//! The small example programs, run as a user runs them: `worker_pool`'s output
//! has the seed's shape and its jobs overlap; `skynet` sums right and refuses a
//! bad size.

use crate::common;

use std::process::Command;
use std::time::{Duration, Instant};

#[test]
fn worker_pool_runs_five_one_second_jobs_on_three_workers_in_two_seconds() {
    let started = Instant::now();
    let out = Command::new(common::example_bin("worker_pool")).output().unwrap();
    let elapsed = started.elapsed();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5 + 5 + 3, "{text}");
    for job in 1..=5 {
        let started = lines
            .iter()
            .position(|l| l.starts_with("worker ") && l.ends_with(&format!(" started  job {job}")));
        let finished = lines
            .iter()
            .position(|l| l.starts_with("worker ") && l.ends_with(&format!(" finished job {job}")));
        match (started, finished) {
            (Some(s), Some(f)) => assert!(s < f, "job {job} finished before it started:\n{text}"),
            _ => panic!("job {job} missing:\n{text}"),
        }
    }
    // A worker exits once the closed channel is drained: after its own jobs.
    for id in 1..=3 {
        let exit = format!("worker {id} exiting");
        let at = lines.iter().position(|l| *l == exit);
        let last_job = lines
            .iter()
            .rposition(|l| l.starts_with(&format!("worker {id} ")) && l.contains(" job "));
        assert!(at.is_some() && at > last_job, "{text}");
    }
    // Two rounds of one-second jobs: never less than 2 s; far less than the 5 s
    // a single worker would take.
    assert!(elapsed >= Duration::from_secs(2), "{elapsed:?}");
    assert!(
        elapsed < Duration::from_secs(4),
        "{elapsed:?}: the jobs did not overlap"
    );
}

#[test]
fn skynet_sums_every_leaf() {
    for (size, sum) in [("1", 0u64), ("1000", 499_500), ("100000", 4_999_950_000)] {
        let out = Command::new(common::example_bin("skynet")).arg(size).output().unwrap();
        assert!(out.status.success());
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.starts_with(&format!("Result: {sum} in ")), "{text}");
    }
    for bad in ["0", "12", "-10", "ten"] {
        let out = Command::new(common::example_bin("skynet")).arg(bad).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("power of 10"));
    }
}
