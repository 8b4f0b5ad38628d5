//! Property tests of every parser the harness runs on text it does not control: raw.md lines and
//! the harvest of memory entries, the notes, summary.md and MEMORY.md sections, the promise and
//! verdict detectors over any chunking of the agent's output, config.yaml and features.yaml,
//! the defanging of prompts, and the redaction of secrets from a stream. Each property is what a
//! user relies on when an agent or a hand edit throws something strange at the harness.

use std::path::Path;

use harness_core::agent::{End, OutputReader, RedactingStream, Redactor};
use harness_core::roles::curator::document::{Document, Layer};
use harness_core::roles::prompt::{completion_tag, defang};
use harness_core::roles::validator::{self, Verdict, FAIL_TAG, PASS_TAG, REASONS_CHARS};
use harness_core::spec::config::{AgentConfig, AgentSpec, Config, OutputFormat};
use harness_core::spec::features::{FeatureId, FeatureList};
use harness_core::spec::layout::StateDir;
use harness_core::spec::role::Role;
use harness_core::state::memory::{self, RawEntry, Tag, MAX_ENTRY_CHARS};
use harness_core::state::notes::{self, AttemptNote};
use proptest::prelude::*;

const PROMISE_TAG: &str = "<promise>TASK_COMPLETE</promise>";

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 128,
        ..ProptestConfig::default()
    }
}

/// Text rich in what the parsers look for: tags, markers, brackets, control characters,
/// newlines, non-ASCII and lookalikes, besides arbitrary characters.
fn tricky_text() -> impl Strategy<Value = String> {
    let pieces = prop_oneof![
        Just("<promise>".to_string()),
        Just("</promise>".to_string()),
        Just("TASK_COMPLETE".to_string()),
        Just("<verdict>".to_string()),
        Just("</verdict>".to_string()),
        Just("PASS".to_string()),
        Just("FAIL".to_string()),
        Just("&lt;".to_string()),
        Just("<".to_string()),
        Just(">".to_string()),
        Just("/".to_string()),
        Just("TRICK: ".to_string()),
        Just("LESSON:".to_string()),
        Just("## ".to_string()),
        Just("## Attempt 3 — worker (x)\n".to_string()),
        Just("<!-- ".to_string()),
        Just(" -->".to_string()),
        Just("\n".to_string()),
        Just("\r\n".to_string()),
        Just("\t".to_string()),
        Just("\u{0}".to_string()),
        Just("\u{1b}[31m".to_string()),
        Just("\u{feff}".to_string()),
        Just("Ｆ‐001 ".to_string()),
        Just("é".to_string()),
        Just(" ".to_string()),
        "[a-zA-Z0-9 _.-]{1,12}",
        any::<String>(),
    ];
    prop::collection::vec(pieces, 0..24).prop_map(|pieces| pieces.concat())
}

/// Tags cut open with other tags (or text) inside, nested a few levels deep:
/// `<verdict><verdict>FAIL</verdict>PASS</verdict>`, `<pro<promise>mise>`, … The inputs on
/// which taking tags out, or escaping them, could leave a whole one behind.
fn interleaved(tags: &'static [&'static str]) -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        prop::sample::select(tags).prop_map(str::to_string),
        "[a-zA-Z <>/&;]{0,4}",
    ];
    leaf.prop_recursive(4, 48, 3, move |inner| {
        prop_oneof![
            (
                prop::sample::select(tags),
                any::<prop::sample::Index>(),
                inner.clone()
            )
                .prop_map(|(tag, at, inside)| {
                    let cut = at.index(tag.len() + 1);
                    format!("{}{inside}{}", &tag[..cut], &tag[cut..])
                }),
            (inner.clone(), inner).prop_map(|(first, second)| first + &second),
        ]
    })
}

const VERDICT_PIECES: &[&str] = &[
    "<verdict>PASS</verdict>",
    "<verdict>FAIL</verdict>",
    "<verdict>",
    "</verdict>",
    "PASS",
    "FAIL",
];

const TAG_PIECES: &[&str] = &[
    "<promise>TASK_COMPLETE</promise>",
    "<verdict>PASS</verdict>",
    "<promise>",
    "</promise>",
    "<verdict>",
    "</verdict>",
    "&lt;",
    "&gt;",
];

/// `bytes` cut at the given points (taken modulo its length), in order.
fn chunked(bytes: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
    let mut points: Vec<usize> = cuts.iter().map(|cut| cut % (bytes.len() + 1)).collect();
    points.sort_unstable();
    points.dedup();
    let mut chunks = Vec::new();
    let mut at = 0;
    for point in points {
        chunks.push(bytes[at..point].to_vec());
        at = point;
    }
    chunks.push(bytes[at..].to_vec());
    chunks
}

fn read_output(format: OutputFormat, markers: &[String], chunks: &[Vec<u8>]) -> OutputReader {
    let mut reader = OutputReader::new(format, markers);
    for chunk in chunks {
        reader.feed(chunk);
    }
    reader.finish();
    reader
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

fn feature_id() -> impl Strategy<Value = FeatureId> {
    "[A-Za-z0-9_][A-Za-z0-9_-]{0,20}(\\.[0-9]{1,2})?".prop_map(|id| FeatureId::parse(&id).unwrap())
}

fn tag() -> impl Strategy<Value = Tag> {
    prop::sample::select(vec![
        Tag::Trick,
        Tag::Lesson,
        Tag::Decision,
        Tag::Avoid,
        Tag::Fail,
        Tag::Outcome,
    ])
}

fn agent() -> AgentConfig {
    AgentConfig::try_from(AgentSpec {
        command: Some(vec!["agent".into()]),
        timeout_secs: Some(60),
        ..AgentSpec::default()
    })
    .unwrap()
}

fn end() -> impl Strategy<Value = End> {
    prop_oneof![
        (-3i32..4).prop_map(End::Exited),
        (1i32..32).prop_map(End::Signaled),
        Just(End::TimedOut),
        Just(End::IdleTimedOut),
        Just(End::Lingered),
        any::<u64>().prop_map(End::Handoff),
        any::<u64>().prop_map(End::OverBudget),
        Just(End::OutOfTime),
        any::<u64>().prop_map(End::OverCost),
        (1i32..32).prop_map(End::Interrupted),
    ]
}

proptest! {
    #![proptest_config(config())]

    // ---- raw.md lines ----

    /// What the harness writes, it reads back: `parse(entry.to_string()) == entry` for every entry
    /// whose text is one clean line (what `one_line` makes of anything).
    #[test]
    fn raw_entries_round_trip(
        seconds in 0i64..4_102_444_800,
        role in prop::sample::select(Role::ALL.to_vec()),
        feature in prop::option::of(feature_id()),
        tag in tag(),
        text in tricky_text(),
    ) {
        let entry = RawEntry {
            time: chrono::DateTime::from_timestamp(seconds, 0).unwrap(),
            role,
            feature,
            tag,
            text: memory::one_line(&text),
        };
        let line = entry.to_string();
        prop_assert!(!line.contains('\n'), "{line:?}");
        prop_assert_eq!(RawEntry::parse(&line), Ok(entry));
    }

    /// Whatever a line of raw.md holds (a hand edit, a torn write), parsing it never panics, and
    /// what it accepts is exactly what `Display` writes back.
    #[test]
    fn parsing_any_raw_line_is_total_and_exact(line in tricky_text()) {
        for line in line.split('\n') {
            if let Ok(entry) = RawEntry::parse(line) {
                prop_assert_eq!(entry.to_string(), line);
            }
        }
        // A real entry with garbage glued on either side is still read exactly.
        let glued = format!("[2026-04-24T10:05:12Z] worker F-1 TRICK: {}", line.replace('\n', " "));
        if let Ok(entry) = RawEntry::parse(&glued) {
            prop_assert_eq!(entry.to_string(), glued);
        }
    }

    /// A line of agent output becomes at most one clean, bounded entry that raw.md can hold and
    /// read back, and harvesting never panics.
    #[test]
    fn harvest_yields_one_clean_line(line in tricky_text(), prefix in prop::sample::select(vec!["", "TRICK:", "  LESSON: ", "DECISION:\t", "AVOID:", "FAIL: "])) {
        let line = format!("{prefix}{line}");
        if let Some((tag, text)) = memory::harvest_line(&line) {
            prop_assert!(Tag::AGENT_TAGS.contains(&tag));
            prop_assert!(!text.is_empty());
            prop_assert!(text.chars().count() <= MAX_ENTRY_CHARS, "{} chars", text.chars().count());
            prop_assert!(!text.chars().any(|c| c.is_control()), "{text:?}");
            prop_assert!(!text.contains("  ") && text.trim() == text, "{text:?}");
            let entry = RawEntry {
                time: chrono::DateTime::from_timestamp(1_777_025_112, 0).unwrap(),
                role: Role::Worker,
                feature: Some(FeatureId::parse("F-001").unwrap()),
                tag,
                text,
            };
            prop_assert_eq!(RawEntry::parse(&entry.to_string()), Ok(entry));
        }
    }

    // ---- notes ----

    /// The last `count` characters, on any Unicode: a suffix of the text, never split inside a
    /// character, of exactly `min(count, length)` characters.
    #[test]
    fn tail_chars_is_a_whole_suffix(text in any::<String>(), count in 0usize..64) {
        let tail = harness_core::base::text::tail_chars(&text, count);
        prop_assert!(text.ends_with(tail));
        prop_assert_eq!(tail.chars().count(), count.min(text.chars().count()));
    }

    /// Appending sections keeps each one whole and in order, after whatever the file held (a
    /// hand edit, without a final newline included); a section renders with its heading first and
    /// ends with a blank line whatever the output held; the notes read back are exactly those.
    #[test]
    fn notes_sections_stay_whole(
        existing in prop::option::of(tricky_text()),
        outputs in prop::collection::vec(tricky_text(), 1..5),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let state = StateDir::new(dir.path());
        let feature = FeatureId::parse("F-001").unwrap();
        let mut expected = String::new();
        if let Some(existing) = &existing {
            std::fs::create_dir_all(state.notes_dir()).unwrap();
            std::fs::write(state.notes(&feature), existing).unwrap();
            if !existing.trim().is_empty() {
                expected.push_str(existing);
            }
        }
        for (index, output) in outputs.iter().enumerate() {
            let section = AttemptNote {
                attempt: index as u32 + 1,
                role: Role::Worker,
                time: chrono::DateTime::from_timestamp(1_770_333_300, 0).unwrap(),
                turns: None,
                commits: Some(index as u64),
                outcome: "ended without the promise",
                output,
            }
            .render();
            let heading = format!("## Attempt {} — worker (2026-02-05T23:15:00Z)\n", index + 1);
            prop_assert!(section.starts_with(&heading), "{section:?}");
            prop_assert!(section.ends_with("\n\n"));
            notes::append(&state, &feature, &section).unwrap();
            expected.push_str(&section);
        }
        let file = std::fs::read(state.notes(&feature)).unwrap();
        prop_assert!(file.ends_with(notes::END.as_bytes()));
        let expected = expected.replace('\0', "");
        let expected = expected.trim_start_matches('\u{feff}').trim();
        prop_assert_eq!(notes::read(&state, &feature).unwrap().unwrap(), expected);
    }

    /// What a prompt carries of long notes: the notes themselves when short; else their newest
    /// whole sections, within the bound, after one line saying that earlier ones were left out.
    #[test]
    fn notes_for_the_prompt_are_a_bounded_suffix(sections in prop::collection::vec((tricky_text(), 0usize..4000), 1..12)) {
        let mut text = String::new();
        let mut all = String::new();
        for (index, (output, padding)) in sections.iter().enumerate() {
            let section = AttemptNote {
                attempt: index as u32 + 1,
                role: Role::Worker,
                time: chrono::DateTime::from_timestamp(1_770_333_300, 0).unwrap(),
                turns: None,
                commits: None,
                outcome: "x",
                output: &format!("{output}{}", "y".repeat(*padding)),
            }.render();
            text.push_str(&section);
            text.push_str(notes::END);
            all.push_str(&section);
        }
        let carried = notes::for_prompt(&text, true, notes::PROMPT_CHARS);
        if all.chars().count() <= notes::PROMPT_CHARS {
            prop_assert_eq!(carried.as_str(), all.as_str());
        } else {
            let (said, kept) = carried.split_once("\n\n").unwrap();
            prop_assert_eq!(said, "(earlier sections left out; all are in .harness/notes/)");
            prop_assert!(all.ends_with(kept));
            prop_assert!(kept.chars().count() <= notes::PROMPT_CHARS);
            prop_assert!(kept.starts_with("## Attempt "), "{kept:?}");
        }
    }

    // ---- summary.md and MEMORY.md ----

    /// A hand-mangled summary.md or MEMORY.md is read without a panic, and every line of the
    /// user's survives a rendering, in order, and reads back the same.
    #[test]
    fn memory_sections_keep_every_line_of_the_user(text in tricky_text(), memory_file in any::<bool>()) {
        let layer = if memory_file { Layer::Memory } else { Layer::Summary };
        let document = Document::parse(layer, Some(&text));
        let user: Vec<String> = document.user_lines().map(str::to_string).collect();
        let rendered = document.render_user_only();
        let again = Document::parse(layer, Some(&rendered));
        let user_again: Vec<String> = again.user_lines().map(str::to_string).collect();
        prop_assert_eq!(&user_again, &user);
        for line in &user {
            prop_assert!(rendered.contains(line.as_str()), "{line:?} lost");
        }
        prop_assert_eq!(again.render_user_only(), rendered);
    }

    // ---- the promise detector ----

    /// Plain text: the promise is found if and only if its exact tag is in the output, wherever
    /// the pipe happened to cut it, whatever bytes surround it (invalid UTF-8, NUL, CRLF).
    #[test]
    fn the_promise_is_found_iff_its_tag_is_there(
        before in tricky_text(),
        after in tricky_text(),
        with_tag in any::<bool>(),
        noise in prop::collection::vec(any::<u8>(), 0..16),
        cuts in prop::collection::vec(any::<usize>(), 0..12),
    ) {
        let mut bytes = before.into_bytes();
        bytes.extend_from_slice(&noise);
        if with_tag {
            bytes.extend_from_slice(PROMISE_TAG.as_bytes());
        }
        bytes.extend_from_slice(after.as_bytes());
        let expected = contains(&bytes, PROMISE_TAG.as_bytes());
        let reader = read_output(OutputFormat::Text, &[PROMISE_TAG.to_string()], &chunked(&bytes, &cuts));
        let summary = reader.snapshot();
        prop_assert_eq!(summary.found(0), expected);
        prop_assert_eq!(summary.bytes, bytes.len() as u64);
    }

    /// Claude's stream-json: only the final answer counts, whatever the chunking, and a promise
    /// in tool output or plain stderr lines never does.
    #[test]
    fn the_final_answer_alone_holds_the_promise(
        answer in tricky_text(),
        tool_output in tricky_text(),
        with_tag in any::<bool>(),
        cuts in prop::collection::vec(any::<usize>(), 0..12),
    ) {
        let answer = if with_tag { format!("{answer}{PROMISE_TAG}") } else { answer };
        let stream = format!(
            "{}\n{PROMISE_TAG} on stderr\n{}\n",
            serde_json::json!({"type": "user", "message": {"content": [{"type": "tool_result", "content": format!("{tool_output}{PROMISE_TAG}")}]}}),
            serde_json::json!({"type": "result", "num_turns": 1, "result": answer}),
        );
        let reader = read_output(OutputFormat::ClaudeStreamJson, &[PROMISE_TAG.to_string()], &chunked(stream.as_bytes(), &cuts));
        prop_assert_eq!(reader.snapshot().found(0), answer.contains(PROMISE_TAG));
    }

    /// Every output format reads any bytes without a panic.
    #[test]
    fn every_format_reads_any_bytes(bytes in prop::collection::vec(any::<u8>(), 0..2048), text in tricky_text(), cuts in prop::collection::vec(any::<usize>(), 0..8)) {
        let mut bytes = bytes;
        bytes.extend_from_slice(text.as_bytes());
        for format in [
            OutputFormat::Text,
            OutputFormat::ClaudeStreamJson,
            OutputFormat::CodexJson,
            OutputFormat::GeminiStreamJson,
            OutputFormat::OpencodeJson,
            OutputFormat::Aider,
        ] {
            let reader = read_output(format, &[PROMISE_TAG.to_string()], &chunked(&bytes, &cuts));
            let summary = reader.snapshot();
            prop_assert!(summary.entries.len() <= memory::MAX_ENTRIES_PER_INVOCATION);
        }
    }

    // ---- the verdict detector ----

    /// A pass needs an agent that finished by itself and said PASS, never FAIL; anything else
    /// is a fail, with reasons that are bounded and hold no whole verdict tag.
    #[test]
    fn only_a_clean_lone_pass_passes(
        end in end(),
        passes in 0u64..3,
        fails in 0u64..3,
        answer in prop_oneof![tricky_text(), interleaved(VERDICT_PIECES)],
    ) {
        let verdict = validator::decide(end, passes, fails, &answer, &agent());
        let should_pass = end.is_clean() && passes > 0 && fails == 0;
        prop_assert_eq!(matches!(verdict, Verdict::Pass { .. }), should_pass);
        let reasons = verdict.reasons();
        prop_assert!(!reasons.contains(PASS_TAG) && !reasons.contains(FAIL_TAG), "{reasons:?}");
        // The harness's own words (why it failed) come first, then at most the answer's end.
        prop_assert!(reasons.chars().count() <= REASONS_CHARS + 200, "{}", reasons.chars().count());
    }

    /// From the output to the verdict: counted in the answer however it was chunked.
    #[test]
    fn verdicts_are_counted_across_chunks(
        text in tricky_text(),
        pass in any::<bool>(),
        fail in any::<bool>(),
        cuts in prop::collection::vec(any::<usize>(), 0..12),
    ) {
        let mut answer = text;
        if pass { answer.push_str("\n<verdict>PASS</verdict>\n"); }
        if fail { answer.push_str("reasons <verdict>FAIL</verdict>"); }
        let markers = [PASS_TAG.to_string(), FAIL_TAG.to_string()];
        let summary = read_output(OutputFormat::Text, &markers, &chunked(answer.as_bytes(), &cuts)).snapshot();
        let verdict = validator::decide(End::Exited(0), summary.marker_counts[0], summary.marker_counts[1], summary.answer(), &agent());
        let lone_pass = answer.contains(PASS_TAG) && !answer.contains(FAIL_TAG);
        prop_assert_eq!(matches!(verdict, Verdict::Pass { .. }), lone_pass);
    }

    // ---- config.yaml and features.yaml ----

    /// Any text, YAML-looking or not, is either a config or an error naming the file; never a
    /// panic (nor a hang: nesting is bounded before the parser runs).
    #[test]
    fn config_and_features_parse_is_total(text in yaml_like()) {
        let path = Path::new(".harness/config.yaml");
        if let Err(error) = Config::parse(&text, path) {
            prop_assert!(error.to_string().starts_with(".harness/config.yaml"), "{error}");
            prop_assert!(!error.message.is_empty());
        }
        let path = Path::new(".harness/features.yaml");
        match FeatureList::parse(&text, path) {
            Ok(list) => {
                for feature in &list.features {
                    prop_assert!(FeatureId::parse(feature.id.as_str()).is_ok());
                }
            }
            Err(error) => prop_assert!(error.to_string().starts_with(".harness/features.yaml"), "{error}"),
        }
    }

    // ---- defang ----

    /// Text that goes into a prompt without being the harness's own words never holds an active
    /// tag once defanged, so an agent echoing its prompt can neither complete nor pass.
    #[test]
    fn defanged_text_holds_no_active_tag(
        text in prop_oneof![tricky_text(), interleaved(TAG_PIECES)],
        cuts in prop::collection::vec(any::<usize>(), 0..8),
    ) {
        let safe = defang(&text);
        for tag in ["<promise>", "</promise>", "<verdict>", "</verdict>"] {
            prop_assert!(!safe.contains(tag), "{tag} in {safe:?}");
        }
        prop_assert!(!safe.contains(&completion_tag("TASK_COMPLETE")));
        // Echoed back through the reader, it completes nothing and gives no verdict.
        let markers = [PROMISE_TAG.to_string(), PASS_TAG.to_string(), FAIL_TAG.to_string()];
        let summary = read_output(OutputFormat::Text, &markers, &chunked(safe.as_bytes(), &cuts)).snapshot();
        prop_assert_eq!(summary.marker_counts, vec![0, 0, 0]);
        // Text with no tag is left as it was.
        if !["<promise>", "</promise>", "<verdict>", "</verdict>"].iter().any(|t| text.contains(t)) {
            prop_assert_eq!(safe, text);
        }
    }

    // ---- redaction ----

    /// A key of a known shape, or a secret from the environment, embedded anywhere in the output
    /// (short lines, or a line far longer than a pipe's read), and the secret split over two
    /// lines by one line break anywhere inside it, never survives the stream, however the pipe
    /// cut the output.
    #[test]
    fn no_secret_survives_the_stream(
        (prefix, body) in key_shape(),
        secret in "[a-z0-9]{8,40}",
        // Any length, or one that puts the key across the 64 KiB a long line is held up to.
        filler in prop_oneof![0usize..140_000, 65_436usize..65_556],
        separator in prop::sample::select(vec![" ", "\n", "=", "\"", ":", "\t", "'", "("]),
        newlines in any::<bool>(),
        after in tricky_text(),
        near_the_key in prop::collection::vec(-80i64..80, 1..4),
        cuts in prop::collection::vec(any::<usize>(), 0..12),
        split in prop::option::of((1usize..40, prop::sample::select(vec!["\n", "\r\n", "\\n"]))),
    ) {
        let key = format!("{prefix}{body}");
        let redactor = Redactor::from_env([("MY_API_TOKEN", secret.as_str())]);
        let line = if newlines { "lorem ipsum\n" } else { "lorem ipsum " };
        let mut output = line.repeat(filler / line.len() + 1).into_bytes();
        output.truncate(filler);
        output.extend_from_slice(separator.as_bytes());
        let key_at = output.len() as i64;
        output.extend_from_slice(key.as_bytes());
        output.extend_from_slice(b" and ");
        // Split at a place inside it, or whole.
        let at = split.map_or(secret.len(), |(at, _)| at.min(secret.len() - 1));
        let (head, rest) = secret.split_at(at);
        output.extend_from_slice(head.as_bytes());
        if let Some((_, line_break)) = split {
            output.extend_from_slice(line_break.as_bytes());
        }
        output.extend_from_slice(rest.as_bytes());
        output.extend_from_slice(after.as_bytes());
        output.extend_from_slice(line.repeat(filler / 3 / line.len()).as_bytes());

        // The pipe delivers the output in pieces of any size: some tiny, some the whole 64 KiB,
        // and some ending inside the key.
        let mut cuts = cuts;
        cuts.extend(near_the_key.iter().map(|offset| (key_at + offset).max(0) as usize));
        let mut delivered = Vec::new();
        let mut stream = RedactingStream::new(&redactor);
        for chunk in chunked(&output, &cuts) {
            for piece in chunk.chunks(64 << 10) {
                stream.push(piece, |clean| delivered.extend_from_slice(clean));
            }
        }
        stream.finish(|clean| delivered.extend_from_slice(clean));

        prop_assert!(!contains(&delivered, body.as_bytes()), "the key's body survived");
        // Not a piece of it either: its last 12 characters, as a cut in the middle would leave.
        prop_assert!(!contains(&delivered, &body.as_bytes()[body.len() - 12..]), "the key's end survived");
        prop_assert!(!contains(&delivered, secret.as_bytes()), "the secret survived");
        let longer = if head.len() >= rest.len() { head } else { rest };
        prop_assert!(
            longer.len() < 6 || !contains(&delivered, longer.as_bytes()),
            "a piece of the split secret survived"
        );
        prop_assert!(contains(&delivered, b"[REDACTED]"));
    }
}

/// A key of one of the known shapes: a prefix and a body long enough to count.
fn key_shape() -> impl Strategy<Value = (String, String)> {
    prop_oneof![
        Just(("sk-ant-api03-", 20usize)),
        Just(("sk-proj-", 20)),
        Just(("ghp_", 20)),
        Just(("github_pat_", 20)),
        Just(("glpat-", 20)),
        Just(("xoxb-", 12)),
        Just(("AKIA", 16)),
        Just(("AIza", 30)),
    ]
    .prop_flat_map(|(prefix, min)| {
        (
            Just(prefix.to_string()),
            prop::string::string_regex(&format!("[A-Z][A-Za-z0-9]{{{},60}}", min.max(20))).unwrap(),
        )
    })
}

/// Text made of YAML's own tokens (keys of config.yaml and features.yaml among them), so that
/// generated inputs get deep into the parser rather than failing on the first character.
fn yaml_like() -> impl Strategy<Value = String> {
    let token = prop_oneof![
        Just("agent:".to_string()),
        Just("command:".to_string()),
        Just("features:".to_string()),
        Just("- id: F-001".to_string()),
        Just("title:".to_string()),
        Just("depends_on:".to_string()),
        Just("max_iterations:".to_string()),
        Just("preset: claude".to_string()),
        Just("\n".to_string()),
        Just("\n  ".to_string()),
        Just("\n    ".to_string()),
        Just(" ".to_string()),
        Just("[".to_string()),
        Just("]".to_string()),
        Just("{".to_string()),
        Just("}".to_string()),
        Just(",".to_string()),
        Just("&a ".to_string()),
        Just("*a".to_string()),
        Just("!!str ".to_string()),
        Just("---\n".to_string()),
        Just("\"".to_string()),
        Just("'".to_string()),
        Just("#".to_string()),
        Just("|\n".to_string()),
        Just("~".to_string()),
        Just("-1".to_string()),
        Just("1e400".to_string()),
        Just("\u{0}".to_string()),
        Just("\u{feff}".to_string()),
        "[a-z0-9_.-]{1,8}",
        any::<String>(),
    ];
    prop_oneof![
        prop::collection::vec(token, 0..40).prop_map(|tokens| tokens.concat()),
        (1usize..2000).prop_map(|depth| format!(
            "agent:\n  command: {}{}\n",
            "[".repeat(depth),
            "]".repeat(depth)
        )),
    ]
}
