//! The `cluster_node` example, driven as its users drive it: a child process fed
//! JSON lines on stdin, its replies read from stdout. Every read has a timeout, so a
//! hung node fails the test instead of stalling it.

use crate::common;

use proptest::prelude::*;
use serde_json::{json, Value};
use std::io::Write;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::Duration;

/// How long any one reply may take (a `run_simulation` reply included).
const REPLY_TIMEOUT: Duration = Duration::from_secs(20);
/// The node's limits, as `examples/cluster_node.rs` sets them.
const MAX_MESSAGE_BYTES: usize = 64 << 10;
const MAX_MESSAGE_LINES: usize = 1024;

/// A running node: its stdin, and its stdout lines arriving on a channel from a
/// reader thread.
struct Node {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
}

impl Node {
    fn start() -> Node {
        let mut child = Command::new(common::example_bin("cluster_node"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start cluster_node");
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Node { child, stdin, lines }
    }

    /// Writes raw bytes to the node's stdin.
    fn send_bytes(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin still open");
        stdin
            .write_all(bytes)
            .and_then(|()| stdin.flush())
            .expect("write to the node (did it die?)");
    }

    fn send_line(&mut self, line: &str) {
        self.send_bytes(format!("{line}\n").as_bytes());
    }

    /// The next stdout line, exactly as printed.
    fn recv_line(&self) -> String {
        match self.lines.recv_timeout(REPLY_TIMEOUT) {
            Ok(line) => line,
            Err(RecvTimeoutError::Timeout) => panic!("no reply within {REPLY_TIMEOUT:?}"),
            Err(RecvTimeoutError::Disconnected) => panic!("the node closed stdout"),
        }
    }

    /// The next reply, parsed.
    fn recv(&self) -> Value {
        let line = self.recv_line();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("reply {line:?} is not JSON: {e}"))
    }

    /// Sends `body` from `client` to `cluster` and returns the reply's body, after
    /// checking the reply's envelope.
    fn request(&mut self, body: Value) -> Value {
        self.send_line(&envelope(body).to_string());
        let reply = self.recv();
        assert_eq!(reply["src"], "cluster", "{reply}");
        assert_eq!(reply["dest"], "client", "{reply}");
        reply["body"].clone()
    }

    fn cluster_state(&mut self, msg_id: u64) -> Value {
        let body = self.request(json!({"type": "check_cluster_state", "msg_id": msg_id}));
        assert_eq!(body["type"], "cluster_state_ok", "{body}");
        assert_eq!(body["in_reply_to"], msg_id, "{body}");
        body
    }

    /// Closes stdin, returns what the node printed after that, and checks that it
    /// exited with status 0.
    fn finish(mut self) -> Vec<String> {
        drop(self.stdin.take());
        let mut rest = Vec::new();
        loop {
            match self.lines.recv_timeout(REPLY_TIMEOUT) {
                Ok(line) => rest.push(line),
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => panic!("the node did not exit at end of input"),
            }
        }
        let status = self.child.wait().expect("wait for the node");
        assert!(status.success(), "the node exited with {status}");
        rest
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn envelope(body: Value) -> Value {
    json!({"src": "client", "dest": "cluster", "body": body})
}

fn steal(msg_id: u64, thief: &str, busy: &[&str]) -> Value {
    json!({"type": "steal_job", "msg_id": msg_id, "thief_worker": thief, "busy_workers": busy})
}

fn init(msg_id: u64, workers: &[&str], jobs: u64) -> Value {
    json!({"type": "init", "msg_id": msg_id, "workers": workers, "jobs_to_distribute": jobs})
}

/// Asserts `body` is an `error` reply with `code` to `in_reply_to`.
#[track_caller]
fn assert_error(body: &Value, code: u64, in_reply_to: Value) {
    assert_eq!(body["type"], "error", "{body}");
    assert_eq!(body["code"], code, "{body}");
    assert_eq!(body["in_reply_to"], in_reply_to, "{body}");
    let text = body["text"].as_str().expect("error text");
    assert!(!text.is_empty(), "{body}");
}

/// The seed's expected answer to its `steal_job` sample, byte for byte.
const SEED_JOB_STOLEN: &str = r#"{"src": "cluster", "dest": "client", "body": {"type": "job_stolen", "in_reply_to": 1, "thief": "w3", "victim": "w1", "job_id": "job2", "victim_queue_size": 2}}"#;

#[test]
fn seed_sample_steal_from_the_default_cluster() {
    let mut node = Node::start();
    node.send_line(
        r#"{"src":"client","dest":"cluster","body":{"type":"steal_job","msg_id":1,"thief_worker":"w3","busy_workers":["w1","w2"]}}"#,
    );
    assert_eq!(node.recv_line(), SEED_JOB_STOLEN);
    assert!(node.finish().is_empty());
}

#[test]
fn seed_sample_pretty_printed_over_many_lines() {
    let mut node = Node::start();
    let input = r#"{
  "src": "client",
  "dest": "cluster",
  "body": {
    "type": "steal_job",
    "msg_id": 1,
    "thief_worker": "w3",
    "busy_workers": [
      "w1",
      "w2"
    ]
  }
}
"#;
    node.send_bytes(input.as_bytes());
    assert_eq!(node.recv_line(), SEED_JOB_STOLEN);
    assert!(node.finish().is_empty());
}

#[test]
fn seed_sample_init_then_simulation() {
    let mut node = Node::start();
    node.send_line(
        r#"{"src":"client","dest":"cluster","body":{"type":"init","msg_id":1,"workers":["w1","w2","w3"],"jobs_to_distribute":6}}"#,
    );
    assert_eq!(
        node.recv_line(),
        r#"{"src": "cluster", "dest": "client", "body": {"type": "init_ok", "in_reply_to": 1}}"#
    );
    node.send_line(
        r#"{"src":"client","dest":"cluster","body":{"type":"run_simulation","msg_id":2,"duration_ms":1000}}"#,
    );
    let body = node.recv()["body"].clone();
    assert_eq!(body["type"], "run_simulation_ok", "{body}");
    assert_eq!(body["in_reply_to"], 2, "{body}");
    // 6 jobs of 5 ms on 3 workers take far less than the 1000 ms allowed.
    assert_eq!(body["processed"], 6, "{body}");
    assert_eq!(body["remaining"], 0, "{body}");
    assert_eq!(body["all_idle"], true, "{body}");
    assert!(node.finish().is_empty());
}

#[test]
fn init_spreads_jobs_in_contiguous_blocks() {
    let mut node = Node::start();
    assert_eq!(node.request(init(1, &["a", "b", "c"], 7))["type"], "init_ok");
    let state = node.cluster_state(2);
    assert_eq!(
        state["workers"],
        json!({
            "a": {"queue_size": 3, "state": "busy"},
            "b": {"queue_size": 2, "state": "busy"},
            "c": {"queue_size": 2, "state": "busy"},
        })
    );
    assert_eq!(state["all_idle"], false);
    // The blocks are contiguous: a holds job0..job2, so its last job is job2.
    let stolen = node.request(steal(3, "c", &["a"]));
    assert_eq!(stolen["job_id"], "job2", "{stolen}");

    // Fewer jobs than workers: the last workers get none, and are idle.
    node.request(init(4, &["a", "b", "c", "d"], 2));
    let state = node.cluster_state(5);
    assert_eq!(state["workers"]["a"], json!({"queue_size": 1, "state": "busy"}));
    assert_eq!(state["workers"]["c"], json!({"queue_size": 0, "state": "idle"}));
    assert_eq!(state["all_idle"], false);

    node.request(init(6, &["x"], 0));
    let state = node.cluster_state(7);
    assert_eq!(state["workers"], json!({"x": {"queue_size": 0, "state": "idle"}}));
    assert_eq!(state["all_idle"], true);
    assert!(node.finish().is_empty());
}

#[test]
fn steal_ties_go_to_the_first_listed_busy_worker() {
    let mut node = Node::start();
    let body = node.request(steal(1, "w3", &["w2", "w1"]));
    assert_eq!(
        body,
        json!({"type": "job_stolen", "in_reply_to": 1, "thief": "w3", "victim": "w2",
               "job_id": "job5", "victim_queue_size": 2})
    );
    // The stolen job joined the thief's queue.
    let state = node.cluster_state(2);
    assert_eq!(state["workers"]["w3"], json!({"queue_size": 1, "state": "busy"}));
    assert_eq!(state["workers"]["w2"]["queue_size"], 2);
    assert!(node.finish().is_empty());
}

#[test]
fn steal_picks_the_longest_queue() {
    let mut node = Node::start();
    node.request(init(1, &["a", "b", "c"], 7)); // a: 3, b: 2, c: 2
    let body = node.request(steal(2, "c", &["b", "a"]));
    assert_eq!(body["victim"], "a", "{body}");
    assert_eq!(body["victim_queue_size"], 2, "{body}");
    assert!(node.finish().is_empty());
}

#[test]
fn steal_until_nothing_is_left() {
    let mut node = Node::start();
    // w1: job0..job2, w2: job3..job5. Each steal takes the back of the longer queue,
    // w1 on ties.
    let expected = [
        ("w1", "job2", 2),
        ("w2", "job5", 2),
        ("w1", "job1", 1),
        ("w2", "job4", 1),
        ("w1", "job0", 0),
        ("w2", "job3", 0),
    ];
    for (i, (victim, job, left)) in (1..).zip(expected) {
        let body = node.request(steal(i, "w3", &["w1", "w2"]));
        assert_eq!(body["type"], "job_stolen", "{body}");
        assert_eq!(
            (&body["victim"], &body["job_id"], &body["victim_queue_size"]),
            (&json!(victim), &json!(job), &json!(left)),
            "{body}"
        );
    }
    assert_error(&node.request(steal(7, "w3", &["w1", "w2"])), 22, json!(7));
    let state = node.cluster_state(8);
    assert_eq!(state["workers"]["w3"]["queue_size"], 6);
    assert_eq!(state["workers"]["w1"]["state"], "idle");
    assert_eq!(state["all_idle"], false);
    assert!(node.finish().is_empty());
}

/// Bad inputs, one a line: `code | in_reply_to ("-": null) | what | input`. An input
/// `body:{..}` is that body in an envelope from `client` to `cluster`.
const BAD_INPUTS: &str = r#"
12 | - | not JSON                      | hello there
12 | - | two values on a line          | {} {}
12 | - | not an object                 | [1, 2, 3]
12 | - | a bare number                 | 42
12 | - | no body                       | {"src":"client","dest":"cluster"}
12 | - | body not an object            | body:[]
12 | - | no msg_id                     | body:{"type":"check_cluster_state"}
12 | - | msg_id a string               | body:{"type":"init","msg_id":"1"}
12 | - | msg_id negative               | body:{"type":"init","msg_id":-1}
12 | 3 | no type                       | body:{"msg_id":3}
12 | 4 | type not a string             | body:{"type":7,"msg_id":4}
10 | 5 | unknown type                  | body:{"type":"explode","msg_id":5}
12 | 6 | init without workers          | body:{"type":"init","msg_id":6,"jobs_to_distribute":3}
12 | 7 | init workers not a list       | body:{"type":"init","msg_id":7,"workers":"w1","jobs_to_distribute":3}
12 | 8 | init with no workers          | body:{"type":"init","msg_id":8,"workers":[],"jobs_to_distribute":3}
12 | 9 | init duplicate workers        | body:{"type":"init","msg_id":9,"workers":["a","a"],"jobs_to_distribute":3}
12 | 10 | init negative jobs           | body:{"type":"init","msg_id":10,"workers":["a"],"jobs_to_distribute":-3}
12 | 11 | init absurd jobs             | body:{"type":"init","msg_id":11,"workers":["a"],"jobs_to_distribute":1000000000000}
20 | 12 | steal unknown thief          | body:{"type":"steal_job","msg_id":12,"thief_worker":"w9","busy_workers":["w1"]}
20 | 13 | steal unknown victim         | body:{"type":"steal_job","msg_id":13,"thief_worker":"w3","busy_workers":["w1","w9"]}
12 | 14 | steal thief listed busy      | body:{"type":"steal_job","msg_id":14,"thief_worker":"w1","busy_workers":["w1","w2"]}
12 | 15 | steal busy not a list        | body:{"type":"steal_job","msg_id":15,"thief_worker":"w3","busy_workers":"w1"}
12 | 16 | steal without thief          | body:{"type":"steal_job","msg_id":16,"busy_workers":["w1"]}
22 | 17 | steal from nobody            | body:{"type":"steal_job","msg_id":17,"thief_worker":"w3","busy_workers":[]}
22 | 18 | steal from an idle worker    | body:{"type":"steal_job","msg_id":18,"thief_worker":"w1","busy_workers":["w3"]}
12 | 19 | simulation too long          | body:{"type":"run_simulation","msg_id":19,"duration_ms":60001}
12 | 20 | simulation huge              | body:{"type":"run_simulation","msg_id":20,"duration_ms":1e30}
12 | 21 | simulation duration a string | body:{"type":"run_simulation","msg_id":21,"duration_ms":"5"}
12 | 22 | simulation without duration  | body:{"type":"run_simulation","msg_id":22}
"#;

/// [`BAD_INPUTS`], parsed, plus a 1 MiB line: `(what, line, code, in_reply_to)`.
fn bad_inputs() -> Vec<(String, String, u64, Value)> {
    let mut inputs: Vec<_> = BAD_INPUTS
        .lines()
        .filter(|row| !row.trim().is_empty())
        .map(|row| {
            let cols: Vec<&str> = row.splitn(4, '|').map(str::trim).collect();
            let [code, reply_to, what, input] = cols[..] else {
                panic!("bad table row {row:?}");
            };
            let line = match input.strip_prefix("body:") {
                Some(body) => format!(r#"{{"src":"client","dest":"cluster","body":{body}}}"#),
                None => input.to_string(),
            };
            let in_reply_to = match reply_to {
                "-" => Value::Null,
                id => json!(id.parse::<u64>().expect("in_reply_to column")),
            };
            let code = code.parse().expect("code column");
            (what.to_string(), line, code, in_reply_to)
        })
        .collect();
    let pad = "x".repeat(1 << 20);
    let huge = json!({"type": "check_cluster_state", "msg_id": 23, "pad": pad});
    inputs.push(("oversized line".into(), envelope(huge).to_string(), 12, Value::Null));
    inputs
}

#[test]
fn every_bad_input_gets_an_error_and_the_node_goes_on() {
    let mut node = Node::start();
    for (i, (what, line, code, in_reply_to)) in (1000..).zip(bad_inputs()) {
        node.send_line(&line);
        let reply = node.recv();
        assert!(reply["src"].is_string(), "{what}: {reply}");
        let body = &reply["body"];
        assert_eq!(body["type"], "error", "{what}: {body}");
        assert_eq!(body["code"], code, "{what}: {body}");
        assert_eq!(body["in_reply_to"], in_reply_to, "{what}: {body}");
        assert!(body["text"].as_str().is_some_and(|t| !t.is_empty()), "{what}: {body}");
        // The node still answers, and the bad input changed nothing.
        let state = node.cluster_state(i);
        assert_eq!(state["workers"]["w1"]["queue_size"], 3, "{what}");
        assert_eq!(state["workers"]["w3"]["queue_size"], 0, "{what}");
    }
    assert!(node.finish().is_empty());
}

#[test]
fn bytes_that_are_not_utf8_are_read_as_replacement_characters() {
    let mut node = Node::start();
    node.send_bytes(b"\xff\xfe\x00garbage\n");
    assert_error(&node.recv()["body"], 12, Value::Null);
    node.send_bytes(b"{\"src\":\"client\",\"dest\":\"cluster\",\"body\":{\"type\":\"\xff\",\"msg_id\":7}}\n");
    assert_error(&node.recv()["body"], 10, json!(7));
    node.cluster_state(8);
    assert!(node.finish().is_empty());
}

#[test]
fn a_large_message_under_the_limit_is_served() {
    let mut node = Node::start();
    let pad = "y".repeat(MAX_MESSAGE_BYTES / 2);
    let body = node.request(json!({"type": "check_cluster_state", "msg_id": 1, "pad": pad}));
    assert_eq!(body["type"], "cluster_state_ok", "{body}");
    assert!(node.finish().is_empty());
}

#[test]
fn a_truncated_message_costs_only_itself() {
    let mut node = Node::start();
    node.send_line(r#"{"src":"client","dest":"cluster","body":{"type":"steal_job","msg_id":1,"thi"#);
    node.send_line(r#"{"src":"client","dest":"cluster","body":{"type":"check_cluster_state","msg_id":2}}"#);
    assert_error(&node.recv()["body"], 12, Value::Null);
    let body = node.recv()["body"].clone();
    assert_eq!(body["type"], "cluster_state_ok", "{body}");
    assert_eq!(body["in_reply_to"], 2, "{body}");
    assert!(node.finish().is_empty());
}

#[test]
fn end_of_input_inside_a_message_gets_an_error_then_exit_0() {
    let mut node = Node::start();
    node.send_line("{");
    node.send_line(r#"  "src": "client","#);
    let rest = node.finish();
    assert_eq!(rest.len(), 1, "{rest:?}");
    let reply: Value = serde_json::from_str(&rest[0]).expect("JSON reply");
    assert_error(&reply["body"], 12, Value::Null);
}

#[test]
fn blank_lines_between_messages_are_skipped() {
    let mut node = Node::start();
    node.send_bytes(b"\n   \n\r\n");
    node.cluster_state(1);
    assert!(node.finish().is_empty());
}

#[test]
fn simulation_runs_workers_that_steal() {
    let mut node = Node::start();
    node.request(init(1, &["w1", "w2", "w3"], 60)); // 20 jobs each
    for i in 0..20 {
        let body = node.request(steal(2 + i, "w1", &["w3"]));
        assert_eq!(body["type"], "job_stolen", "{body}");
    }
    let state = node.cluster_state(30); // w1: 40 jobs, w2: 20, w3: none
    assert_eq!(state["workers"]["w1"]["queue_size"], 40);
    assert_eq!(state["workers"]["w3"]["state"], "idle");

    let body = node.request(json!({"type": "run_simulation", "msg_id": 31, "duration_ms": 200}));
    assert_eq!(body["type"], "run_simulation_ok", "{body}");
    assert_eq!(body["in_reply_to"], 31, "{body}");
    let workers = body["workers"].as_object().expect("workers");
    let count = |w: &str, what: &str| workers[w][what].as_u64().expect("a count");
    let processed: u64 = ["w1", "w2", "w3"].iter().map(|w| count(w, "processed")).sum();
    let remaining = body["remaining"].as_u64().expect("remaining");
    assert_eq!(body["processed"], processed, "{body}");
    assert_eq!(processed + remaining, 60, "jobs were lost or made up: {body}");
    // w3 started empty: everything it did, it stole first.
    assert!(count("w3", "stolen") > 0, "the empty worker never stole: {body}");
    assert!(count("w3", "processed") > 0, "{body}");
    assert!(count("w1", "processed") > 0 && count("w2", "processed") > 0, "{body}");
    assert_eq!(body["all_idle"], remaining == 0, "{body}");

    // What is left stays in the cluster.
    let state = node.cluster_state(32);
    let queued: u64 = ["w1", "w2", "w3"]
        .iter()
        .map(|w| state["workers"][w]["queue_size"].as_u64().unwrap())
        .sum();
    assert_eq!(queued, remaining, "{state}");
    assert!(node.finish().is_empty());
}

#[test]
fn a_zero_length_simulation_processes_nothing() {
    let mut node = Node::start();
    let body = node.request(json!({"type": "run_simulation", "msg_id": 1, "duration_ms": 0}));
    assert_eq!(body["processed"], 0, "{body}");
    assert_eq!(body["remaining"], 6, "{body}");
    assert_eq!(body["all_idle"], false, "{body}");
    assert_eq!(node.cluster_state(2)["workers"]["w1"]["queue_size"], 3);
    assert!(node.finish().is_empty());
}

/// How many replies the node owes for `input`: the framing rules of the example's
/// module docs, restated. Lines are split at `\n`; a line that completes a message
/// (or breaks one) owes one reply.
fn replies_owed(input: &[u8]) -> usize {
    let mut pieces: Vec<&[u8]> = input.split(|&b| b == b'\n').collect();
    if input.is_empty() || input.ends_with(b"\n") {
        pieces.pop(); // the empty piece after the last newline is no line
    }
    let (mut pending, mut lines, mut owed) = (String::new(), 0, 0);
    for raw in pieces {
        if raw.len() > MAX_MESSAGE_BYTES {
            (pending, lines, owed) = (String::new(), 0, owed + 1);
            continue;
        }
        let line = String::from_utf8_lossy(raw);
        if pending.is_empty() && line.trim().is_empty() {
            continue;
        }
        let starts_message = matches!(serde_json::from_str::<Value>(&line),
            Ok(Value::Object(m)) if m.contains_key("body"));
        if !pending.is_empty() && starts_message {
            (pending, lines, owed) = (String::new(), 0, owed + 1);
        }
        if !pending.is_empty() {
            pending.push('\n');
        }
        pending.push_str(&line);
        lines += 1;
        let done = pending.len() > MAX_MESSAGE_BYTES
            || lines > MAX_MESSAGE_LINES
            || !matches!(serde_json::from_str::<Value>(&pending), Err(e) if e.is_eof());
        if done {
            (pending, lines, owed) = (String::new(), 0, owed + 1);
        }
    }
    owed + usize::from(!pending.is_empty())
}

/// Valid requests the fuzzer mixes in (no `run_simulation`: it takes time).
fn valid_body() -> impl Strategy<Value = Value> {
    let worker = prop::sample::select(vec!["w1", "w2", "w3", "w4"]);
    prop_oneof![
        (0..1000u64).prop_map(|id| json!({"type": "check_cluster_state", "msg_id": id})),
        (0..1000u64, worker.clone(), prop::collection::vec(worker.clone(), 0..3))
            .prop_map(|(id, t, b)| steal(id, t, &b)),
        (0..1000u64, prop::collection::vec(worker, 1..4), 0..20u64).prop_map(|(id, w, n)| init(id, &w, n)),
        (0..1000u64).prop_map(|id| json!({"type": "frobnicate", "msg_id": id})),
    ]
}

/// One fuzz input chunk (it may hold several lines, or none).
fn chunk() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        3 => valid_body().prop_map(|b| envelope(b).to_string().into_bytes()),
        2 => valid_body().prop_map(|b| serde_json::to_vec_pretty(&envelope(b)).unwrap()),
        3 => (valid_body(), any::<prop::sample::Index>()).prop_map(|(b, cut)| {
            let text = envelope(b).to_string().into_bytes();
            text[..cut.index(text.len())].to_vec()
        }),
        2 => prop::collection::vec(any::<u8>(), 0..64),
        2 => "[\\[\\]{}\":, a-z0-9\n]{0,40}".prop_map(String::into_bytes),
        1 => (MAX_MESSAGE_BYTES - 8..MAX_MESSAGE_BYTES + 8, prop::bool::ANY).prop_map(|(n, brace)| {
            let mut big = vec![b'x'; n];
            if brace {
                big[0] = b'{';
            }
            big
        }),
        1 => Just(vec![b'z'; 1 << 20]),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Whatever comes in, every completed (or broken) message gets exactly one
    /// reply, the node survives, and a final valid request is answered.
    #[test]
    fn any_input_gets_one_reply_per_message(chunks in prop::collection::vec(chunk(), 0..12)) {
        const FINAL_ID: u64 = 999_999;
        let mut input = chunks.join(&b'\n');
        input.push(b'\n');
        let last = envelope(json!({"type": "check_cluster_state", "msg_id": FINAL_ID}));
        input.extend_from_slice(format!("{last}\n").as_bytes());
        let owed = replies_owed(&input);

        let mut node = Node::start();
        node.send_bytes(&input);
        let mut replies = Vec::new();
        loop {
            let reply = node.recv();
            let body = &reply["body"];
            prop_assert!(body["type"].is_string(), "{}", reply);
            if body["type"] == "error" {
                prop_assert!(matches!(body["code"].as_u64(), Some(10 | 12 | 20 | 22)), "{}", reply);
                prop_assert!(body["text"].is_string(), "{}", reply);
            }
            replies.push(reply.clone());
            if body["in_reply_to"] == FINAL_ID {
                prop_assert_eq!(&body["type"], "cluster_state_ok");
                break;
            }
        }
        prop_assert_eq!(replies.len(), owed, "replies: {:?}", replies);
        prop_assert!(node.finish().is_empty());
    }
}
