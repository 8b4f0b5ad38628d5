//! The fast filters only ever skip what no matcher would find: the redactor gives, byte for
//! byte and read by read, what it gives with every place handed to the matchers, over generated
//! output cut anywhere; and a timing of both side by side (ignored: run it by hand, in release,
//! to see ns per byte).

use proptest::prelude::*;

use super::{RedactingStream, Redactor};

fn fragments() -> Vec<&'static str> {
    let keys = super::tests::SHAPED_KEYS.iter();
    keys.chain(FRAGMENTS).copied().collect()
}

fn redactor() -> Redactor {
    Redactor::from_env([
        ("ANTHROPIC_API_KEY", "not-a-shape-but-secret-123"),
        ("MY_PASSWORD", "hunter2hunter2"),
        ("DB_PASS", "p@ss word!"),
        ("SERVICE_CREDENTIAL", "abcdefgh12345678"),
        (
            "DEPLOY_KEY",
            "first-line-of-it\r\n  second\\line\"of-it  \nshort\n",
        ),
        ("MY_TOKEN", "twelve-chars-x"),
        ("HOME", "/home/someone-long-enough"),
    ])
}

/// What each push delivered, in turn, then what the finish delivered.
fn deliveries(redactor: &Redactor, pieces: &[&[u8]]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut stream = RedactingStream::new(redactor);
    for piece in pieces {
        let mut got = Vec::new();
        stream.push(piece, |clean| got.extend_from_slice(clean));
        out.push(got);
    }
    let mut got = Vec::new();
    stream.finish(|clean| got.extend_from_slice(clean));
    out.push(got);
    out
}

/// Pieces of output that start, nearly start, end or break secrets of every kind (with a key of
/// each shape, [`super::tests::SHAPED_KEYS`]).
const FRAGMENTS: &[&str] = &[
    "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    r#""SecretAccessKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY""#,
    r#"\"secret-access-key\": \"wJalrXUtnFEMI/K7MDENG\""#,
    "Authorization: Bearer abc.DEF-ghi_jkl~mno+pqr/stu=",
    "bearer ",
    "cupbearer abcdefghijklmnopqrstuv",
    "https://bot:s3cr%40t-pass@example.com/repo.git",
    "https://example.com:8080/path",
    "://",
    "u:pw@",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo\n",
    "PRIVATE KEY-----",
    "not-a-shape-but-secret-123",
    "hunter2hunter2",
    "hunter2",
    "p@ss word!",
    "abcdefgh",
    "12345678",
    "first-line-of-it",
    r#"second\\line\"of-it"#,
    "second\\line\"of-it",
    "twelve-chars-x",
    "\\twelve-chars-x",
    "sk-",
    "sk_",
    "ghp_",
    "eyJ",
    "SG.",
    "ya29.",
    "AKIA",
    "secret_",
    "Secret",
    "\n",
    "\r\n",
    "\\n",
    "\\r\\n",
    "\\",
    "\\\\",
    "\"",
    " ",
    "=",
    ":",
    "\t",
    "the ",
    "risk-assessment ",
    "task-list ",
    "AbCdEfGhIj",
    "abcdefghij",
    "0123456789",
    "QrStUvWxYz012345",
];

/// Output made of fragments and short random runs, and where to cut it into reads.
fn output_and_cuts() -> impl Strategy<Value = (Vec<u8>, Vec<usize>)> {
    let piece = prop_oneof![
        3 => proptest::sample::select(fragments()).prop_map(|f| f.as_bytes().to_vec()),
        1 => "[a-zA-Z0-9_./:@=\"\\\\ \n\r-]{0,12}".prop_map(String::into_bytes),
        1 => proptest::collection::vec(any::<u8>(), 0..4),
    ];
    (
        proptest::collection::vec(piece, 0..40).prop_map(|pieces| pieces.concat()),
        proptest::collection::vec(any::<usize>(), 0..8),
    )
}

/// The reads that `cuts` (positions, wrapped to the output) make of `bytes`.
fn pieces<'a>(bytes: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut cuts: Vec<usize> = cuts.iter().map(|cut| cut % (bytes.len() + 1)).collect();
    cuts.sort_unstable();
    let mut pieces = Vec::new();
    let mut at = 0;
    for cut in cuts {
        pieces.push(&bytes[at..cut]);
        at = cut;
    }
    pieces.push(&bytes[at..]);
    pieces
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn the_filters_skip_only_what_no_matcher_finds((bytes, cuts) in output_and_cuts()) {
        for new in [redactor(), Redactor::default()] {
            let all = new.unfiltered();
            prop_assert_eq!(new.redact_bytes(&bytes).into_owned(), all.redact_bytes(&bytes).into_owned());
            let pieces = pieces(&bytes, &cuts);
            prop_assert_eq!(deliveries(&new, &pieces), deliveries(&all, &pieces));
            let one_by_one: Vec<&[u8]> = bytes.chunks(1).collect();
            prop_assert_eq!(deliveries(&new, &one_by_one), deliveries(&all, &one_by_one));
        }
    }
}

#[test]
fn the_second_byte_filter_knows_every_line_break() {
    for line_break in super::shapes::BREAKS {
        assert!(super::shapes::LINE_BREAK_FIRSTS.contains(&line_break[0]));
    }
}

#[test]
fn the_samples_timed_give_what_the_matchers_alone_give() {
    let new = redactor();
    let all = new.unfiltered();
    for sample in [prompt(), transcript()] {
        assert_eq!(
            new.redact_bytes(&sample).into_owned(),
            all.redact_bytes(&sample).into_owned()
        );
        for size in [1, 7, 4096, 65_536] {
            let pieces: Vec<&[u8]> = sample.chunks(size).collect();
            assert_eq!(deliveries(&new, &pieces), deliveries(&all, &pieces));
        }
    }
}

/// A prompt of about 8 KB as a worker writes one: prose, paths, code, a few `KEY=value` lines,
/// URLs, one secret value.
fn prompt() -> Vec<u8> {
    let section = "\
## Task

Read `crates/harness-core/src/agent/redact/stream.rs` and make the scan faster. The worker \
runs each attempt in a fresh directory under /tmp/harness/attempts/0042; see \
https://example.com/docs/harness#redaction for the design, and the notes in \
notes/2026-11-27.md for what was tried. Keep the output byte-identical: the tests compare it \
with the previous release, and a secret that leaks once is leaked for good.

```rust
fn main() -> anyhow::Result<()> {
    let redactor = Redactor::of_process_and([(\"EXTRA\", \"value\")]);
    println!(\"{}\", redactor.redact(&read_to_string(\"prompt.md\")?));
    Ok(())
}
```

Environment for the build:

    RUST_LOG=debug
    CARGO_TARGET_DIR=/tmp/target
    DATABASE_URL=postgres://app:hunter2hunter2@db.internal:5432/app
    OPENAI_API_KEY=sk-proj-AbCdEfGhIjKlMnOpQrStUvWx

- [ ] measure before and after, several runs, the median;
- [ ] say what is left; the secret-access-key rule and the bearer rule stay as they are.
";
    let mut out = Vec::new();
    while out.len() < 8 * 1024 {
        out.extend_from_slice(section.as_bytes());
    }
    out.truncate(8 * 1024);
    out
}

/// 64 KB of an agent's stream of JSON events: assistant text, tool calls and their results.
fn transcript() -> Vec<u8> {
    let events = [
        r#"{"type":"assistant","message":{"content":[{"type":"text","text":"Let me look at the stream first.\nThe plan walks every byte; most of them start nothing."}]}}"#,
        r#"{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Bash","input":{"command":"cd /work/repo && cargo test -p harness-core redact 2>&1 | tail -20"}}]}}"#,
        r#"{"type":"user","message":{"content":[{"type":"tool_result","content":"running 14 tests\ntest agent::redact::tests::ordinary_text_is_left_alone ... ok\ntest result: ok. 14 passed; 0 failed; 0 ignored\n"}]}}"#,
        r#"{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Read","input":{"file_path":"/work/repo/crates/harness-core/src/agent/redact/shapes.rs"}}]}}"#,
        r#"{"type":"user","message":{"content":[{"type":"tool_result","content":"     1\t//! What a secret looks like in a stream of bytes\n     2\tuse std::ops::Range;\n     3\t\n     4\tpub(super) fn is_key_byte(byte: u8) -> bool {\n     5\t    byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_'\n     6\t}\n"}]}}"#,
        r#"{"type":"assistant","message":{"content":[{"type":"text","text":"The token is twelve-chars-x, which the redactor must hide; see https://docs.rs/memchr for the scanning idea."}]}}"#,
        r#"{"type":"result","subtype":"success","usage":{"input_tokens":19459,"output_tokens":812,"cache_read_input_tokens":120000}}"#,
    ];
    let mut out = Vec::new();
    let mut index = 0;
    while out.len() < 64 * 1024 {
        out.extend_from_slice(events[index % events.len()].as_bytes());
        out.push(b'\n');
        index += 1;
    }
    out.truncate(64 * 1024);
    out
}

/// The median time per byte of `redact` over `sample`, in ns.
fn ns_per_byte(sample: &[u8], runs: usize, mut redact: impl FnMut(&[u8]) -> usize) -> f64 {
    let mut times: Vec<f64> = (0..runs)
        .map(|_| {
            let start = std::time::Instant::now();
            std::hint::black_box(redact(std::hint::black_box(sample)));
            start.elapsed().as_nanos() as f64 / sample.len() as f64
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

/// How many bytes `redactor` delivers of `bytes` read `read` at a time.
fn streamed(redactor: &Redactor, bytes: &[u8], read: usize) -> usize {
    let mut stream = RedactingStream::new(redactor);
    let mut n = 0;
    for piece in bytes.chunks(read) {
        stream.push(piece, |clean| n += clean.len());
    }
    stream.finish(|clean| n += clean.len());
    n
}

/// `cargo test --release -p harness-core redaction_timing -- --ignored --nocapture`
#[test]
#[ignore = "a timing to read, not a test"]
fn redaction_timing() {
    let new = redactor();
    let all = new.unfiltered();
    let (prompt, transcript) = (prompt(), transcript());
    for (name, sample, read) in [
        ("prompt 8 KB, whole", &prompt, prompt.len()),
        ("transcript 64 KB, whole", &transcript, transcript.len()),
        ("transcript 64 KB, 4 KiB reads", &transcript, 4096),
    ] {
        let runs = if sample.len() > 10_000 { 200 } else { 1000 };
        let mut rounds: Vec<(f64, f64)> = Vec::new();
        // Unfiltered and filtered in turn, so that both see the same machine.
        for _ in 0..5 {
            let before = ns_per_byte(sample, runs, |bytes| streamed(&all, bytes, read));
            let after = ns_per_byte(sample, runs, |bytes| streamed(&new, bytes, read));
            rounds.push((before, after));
        }
        let mut before: Vec<f64> = rounds.iter().map(|r| r.0).collect();
        let mut after: Vec<f64> = rounds.iter().map(|r| r.1).collect();
        before.sort_by(f64::total_cmp);
        after.sort_by(f64::total_cmp);
        println!(
            "{name:32} unfiltered {:6.2} ns/byte   filtered {:6.2} ns/byte",
            before[before.len() / 2],
            after[after.len() / 2]
        );
    }
}
