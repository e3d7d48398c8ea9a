//! What leniency costs: `parse_decision` on clean and on messy model
//! output, as a ratio of plain `serde_json` parsing of the same clean JSON
//! measured in the same run.
//!
//! ```sh
//! cargo bench --bench decision_parse
//! ```

use std::hint::black_box;
use std::time::{Duration, Instant};

use hermes::decision::parse_decision;

const CLEAN: &str = r#"{"thought": "Read the notes first.", "action": {"name": "read_file", "args": {"path": "notes.txt"}}}"#;

const MESSY: &[(&str, &str)] = &[
    ("fenced + prose", "Sure! Here is my decision:\n```json\n{\"thought\": \"Read the notes first.\", \"action\": {\"name\": \"read_file\", \"args\": {\"path\": \"notes.txt\"}}}\n```\nLet me know."),
    ("think block", "<think>I should {maybe} read</think>{\"thought\": \"Read.\", \"action\": {\"name\": \"read_file\", \"args\": {\"path\": \"notes.txt\"}}}"),
    ("python-ish", "{'thought': 'Read.', 'action': {'name': 'read_file', 'args': {'path': 'notes.txt', 'force': True,},},}"),
    ("truncated", "{\"thought\": \"Read the notes first.\", \"action\": {\"name\": \"read_file\", \"args\": {\"path\": \"notes.t"),
    ("react text", "Thought: read the notes\nAction: read_file\nAction Input: {\"path\": \"notes.txt\"}"),
    ("unescaped quotes", "{\"thought\": \"Write it.\", \"action\": {\"name\": \"write_file\", \"args\": {\"path\": \"a.py\", \"content\": \"print(\"a\", \"b\")\"}}}"),
    ("windows path", "{\"thought\": \"Read the notes first.\", \"action\": {\"name\": \"read_file\", \"args\": {\"path\": \"C:\\Users\\me\\notes.txt\"}}}"),
    ("call expression", "{\"thought\": \"Read the notes first.\", \"action\": \"read_file(path='notes.txt')\"}"),
];

fn per_call(iterations: u32, mut f: impl FnMut()) -> Duration {
    for _ in 0..iterations / 10 {
        f();
    }
    let started = Instant::now();
    for _ in 0..iterations {
        f();
    }
    started.elapsed() / iterations
}

fn main() {
    let iterations = 20_000;
    let baseline = per_call(iterations, || {
        black_box(serde_json::from_str::<serde_json::Value>(black_box(CLEAN)).unwrap());
    });
    println!(
        "baseline serde_json::from_str (clean): {:>8.2} µs",
        baseline.as_secs_f64() * 1e6
    );
    let clean = per_call(iterations, || {
        black_box(parse_decision(black_box(CLEAN)).unwrap());
    });
    println!(
        "parse_decision clean:                  {:>8.2} µs  ({:.1}x baseline)",
        clean.as_secs_f64() * 1e6,
        clean.as_secs_f64() / baseline.as_secs_f64()
    );
    for (name, raw) in MESSY {
        let time = per_call(iterations, || {
            black_box(parse_decision(black_box(raw)).unwrap());
        });
        println!(
            "parse_decision {name:<24} {:>8.2} µs  ({:.1}x baseline)",
            time.as_secs_f64() * 1e6,
            time.as_secs_f64() / baseline.as_secs_f64()
        );
    }
}
