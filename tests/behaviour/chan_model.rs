//! Property tests: channel operations against a sequential model (a bounded
//! queue plus a closed flag), and concurrent traffic against its invariants
//! (nothing lost, nothing duplicated, FIFO per sender).

use goro::chan::{self, RecvTimeoutError, SendTimeoutError, TryRecvError, TrySendError};
use proptest::prelude::*;
use std::collections::VecDeque;
use std::time::Duration;

#[derive(Clone, Debug)]
enum Op {
    TrySend(u8),
    TryRecv,
    SendZero(u8),
    RecvZero,
    Close,
    DropClone,
    Len,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => any::<u8>().prop_map(Op::TrySend),
        4 => Just(Op::TryRecv),
        1 => any::<u8>().prop_map(Op::SendZero),
        1 => Just(Op::RecvZero),
        1 => Just(Op::Close),
        1 => Just(Op::DropClone),
        1 => Just(Op::Len),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn single_threaded_ops_match_the_model(cap in 0usize..6, ops in prop::collection::vec(op(), 0..60)) {
        let (tx, rx) = chan::bounded::<u8>(cap);
        let mut model: VecDeque<u8> = VecDeque::new();
        let mut closed = false;
        for op in ops {
            match op {
                Op::TrySend(v) | Op::SendZero(v) => {
                    let got = match op {
                        Op::TrySend(_) => tx.try_send(v).map_err(|e| match e {
                            TrySendError::Full(v) => (false, v),
                            TrySendError::Closed(v) => (true, v),
                        }),
                        _ => tx.send_timeout(v, Duration::ZERO).map_err(|e| match e {
                            SendTimeoutError::Timeout(v) => (false, v),
                            SendTimeoutError::Closed(v) => (true, v),
                        }),
                    };
                    let want = if closed { Err((true, v)) } else if model.len() < cap { model.push_back(v); Ok(()) } else { Err((false, v)) };
                    prop_assert_eq!(got, want);
                }
                Op::TryRecv | Op::RecvZero => {
                    let got = match op {
                        Op::TryRecv => rx.try_recv().map_err(|e| e == TryRecvError::Closed),
                        _ => rx.recv_timeout(Duration::ZERO).map_err(|e| e == RecvTimeoutError::Closed),
                    };
                    let want = match model.pop_front() {
                        Some(v) => Ok(v),
                        None => Err(closed),
                    };
                    prop_assert_eq!(got, want);
                }
                Op::Close => {
                    tx.close();
                    closed = true;
                }
                Op::DropClone => drop(tx.clone()), // not the last sender: no close
                Op::Len => {
                    prop_assert_eq!(tx.len(), model.len());
                    prop_assert_eq!(rx.capacity(), cap);
                    prop_assert_eq!(rx.is_closed(), closed);
                }
            }
        }
        drop(tx);
        let rest: Vec<u8> = rx.iter().collect();
        prop_assert_eq!(rest, Vec::from(model), "drained after the last sender dropped");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn concurrent_traffic_keeps_every_value_once_and_fifo_per_sender(
        cap in 0usize..8,
        senders in 1usize..5,
        receivers in 1usize..5,
        per_sender in 0usize..400,
    ) {
        let (tx, rx) = chan::bounded::<(usize, usize)>(cap);
        let prods: Vec<_> = (0..senders).map(|s| {
            let tx = tx.clone();
            goro::go!(move || (0..per_sender).for_each(|i| tx.send((s, i)).unwrap()))
        }).collect();
        drop(tx);
        let cons: Vec<_> = (0..receivers).map(|_| {
            let rx = rx.clone();
            goro::go!(move || rx.iter().collect::<Vec<_>>())
        }).collect();
        drop(rx);
        prods.into_iter().for_each(|h| h.join().unwrap());
        let mut seen = vec![Vec::new(); senders];
        for c in cons {
            let got = c.join().unwrap();
            let mut last = vec![None; senders];
            for (s, i) in got {
                // Within one receiver, each sender's values arrive in order.
                prop_assert!(last[s].is_none_or(|l| l < i));
                last[s] = Some(i);
                seen[s].push(i);
            }
        }
        for mut v in seen {
            v.sort_unstable();
            prop_assert_eq!(v, (0..per_sender).collect::<Vec<_>>());
        }
    }
}
