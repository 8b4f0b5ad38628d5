//! Agent notes (seed 004): after every attempt the feature's `notes/<FEATURE>.md` gets a section
//! with the tail of the agent's output, so the next attempt — a fresh process that remembers
//! nothing — sees what the last ones did. Removed when the feature is accepted as done.
//!
//! The file is append-only: each section is appended whole, ended by an [`END`] line, never
//! rewritten, and a prompt reads only the end of the file. A kill mid-append leaves at most a
//! torn last section, which reading drops and the next append cuts off.

use std::io;
use std::path::Path;

use crate::base::append;
use crate::base::fs;
use crate::base::text::tail_chars;
use crate::base::time::{self, Timestamp};
use crate::spec::features::FeatureId;
use crate::spec::layout::StateDir;
use crate::spec::role::Role;
use crate::state::lifecycle::GateRecord;

/// How much of the end of an attempt's output a note keeps, in characters.
pub const TAIL_CHARS: usize = 3000;

/// What one attempt leaves in the notes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptNote<'a> {
    /// The attempt number (the worker iteration).
    pub attempt: u32,
    pub role: Role,
    /// When it ended.
    pub time: Timestamp,
    /// Turns, when the agent reports them.
    pub turns: Option<u64>,
    /// New commits, when the working directory is a git repository.
    pub commits: Option<u64>,
    /// How it ended, in words.
    pub outcome: &'a str,
    /// The agent's output (only its last [`TAIL_CHARS`] characters are kept).
    pub output: &'a str,
}

impl AttemptNote<'_> {
    /// The markdown section:
    /// `## Attempt 2 — worker (<time>)`, `Turns: X | Commits: Y`, the outcome, the output tail.
    pub fn render(&self) -> String {
        let unknown = |value: Option<u64>| value.map_or("?".to_string(), |v| v.to_string());
        let tail = tail_chars(self.output.trim_end(), TAIL_CHARS);
        format!(
            "## Attempt {} — {} ({})\nTurns: {} | Commits: {}\nOutcome: {}\n\n{}\n\n",
            self.attempt,
            self.role,
            time::format(self.time),
            unknown(self.turns),
            unknown(self.commits),
            self.outcome,
            if tail.is_empty() { "(no output)" } else { tail },
        )
    }
}

/// How much of a failed check's output a gate's section keeps, in characters.
pub const CHECK_TAIL_CHARS: usize = 2000;

/// What a gate that refused a promise leaves in the notes: its own section after the attempt's,
/// so that the next attempt sees exactly what failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateNote<'a> {
    /// The attempt whose promise it refused.
    pub attempt: u32,
    pub time: Timestamp,
    /// The phase's label (`plan (1 of 4)`), when the feature has phases.
    pub phase: Option<String>,
    pub gate: &'a GateRecord,
    /// What each check ran and printed.
    pub outputs: &'a [CheckOutput<'a>],
}

/// A check's command and the end of its output, for its gate's section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckOutput<'a> {
    pub name: &'a str,
    pub command: &'a str,
    pub output: &'a str,
}

impl GateNote<'_> {
    /// `## Gate after attempt 3 (<time>)`, what the gate refused, then each failed check (name,
    /// exit code, command, the end of its output) and the paths outside the allow list.
    pub fn render(&self) -> String {
        let mut text = format!(
            "## Gate after attempt {} ({})\n",
            self.attempt,
            time::format(self.time)
        );
        if let Some(phase) = &self.phase {
            text.push_str(&format!("Phase: {phase}\n"));
        }
        text.push_str("The promise did not count:\n");
        for reason in self.gate.reasons() {
            text.push_str(&format!("- {reason}\n"));
        }
        for check in self.gate.failed_checks() {
            let (command, output) = self
                .outputs
                .iter()
                .find(|output| output.name == check.name)
                .map_or(("?", ""), |output| (output.command, output.output));
            let tail = tail_chars(output.trim_end(), CHECK_TAIL_CHARS);
            text.push_str(&format!(
                "\n### Check `{}` ({}): `{command}`\n\n{}\n",
                check.name,
                check.outcome.describe(),
                if tail.is_empty() { "(no output)" } else { tail }
            ));
        }
        if !self.gate.outside_allow.is_empty() {
            text.push_str("\n### Changed outside the phase's allow list\n\n");
            for path in &self.gate.outside_allow {
                text.push_str(&format!("- {path}\n"));
            }
        }
        text.push('\n');
        text
    }
}

/// How much of the notes a prompt carries, in characters: the newest sections, so that a long
/// run's prompt does not grow with its history.
pub const PROMPT_CHARS: usize = 12_000;

/// The most of the notes file read for a prompt: its end, enough for [`PROMPT_CHARS`] characters
/// of any width (the file itself grows with every attempt).
const PROMPT_BYTES: u64 = 4 * PROMPT_CHARS as u64 + 4096;

/// The line that ends each section: a section counts once it is written whole. Taken out of
/// what a prompt carries.
pub const END: &str = "<!-- end of section -->\n\n";

/// The headings the harness starts its sections with: the worker's attempts, the gates that
/// refused a promise, the validator's rejections. After the last end line, text that starts with
/// one is a section a kill tore.
const HEADINGS: [&str; 3] = [
    "## Attempt ",
    "## Gate after attempt ",
    "## Validator verdict",
];

/// Whether `tail`, the text after the last end line, is a section torn by a kill (dropped on
/// reading, cut off before the next append) rather than a hand edit (kept).
fn is_torn(tail: &[u8]) -> bool {
    HEADINGS
        .iter()
        .any(|heading| tail.starts_with(heading.as_bytes()) || heading.as_bytes().starts_with(tail))
}

/// The sections of `text` as a reader sees them, oldest first, their end lines taken out: what
/// precedes the first end line (a file an older version wrote whole, or nothing), then every
/// section that is whole, then a hand edit after the last one; not a torn last section. When
/// `text` is only the end of the file (`from_start` false), its first section, cut, is left out
/// too; the flag returned says whether anything was.
fn sections(text: &str, from_start: bool) -> (Vec<&str>, bool) {
    let mut pieces: Vec<&str> = text.split(END).collect();
    let tail = pieces.pop().unwrap_or_default();
    let mut left_out = false;
    if pieces.is_empty() {
        // No end line: a file an older version wrote whole (or the end of one).
        return (vec![tail], !from_start);
    }
    if !from_start {
        pieces.remove(0);
        left_out = true;
    }
    if !is_torn(tail.as_bytes()) {
        pieces.push(tail);
    }
    pieces.retain(|piece| !piece.trim().is_empty());
    (pieces, left_out)
}

/// The notes as a prompt carries them from `text` (the file, or its end when `from_start` is
/// false): the newest whole sections within `budget` characters (at most [`PROMPT_CHARS`]),
/// oldest first, after a line saying that earlier ones were left out when some were (they stay
/// in the file).
pub fn for_prompt(text: &str, from_start: bool, budget: usize) -> String {
    let (pieces, mut left_out) = sections(text, from_start);
    let mut kept = Vec::new();
    let mut room = budget.min(PROMPT_CHARS);
    for piece in pieces.iter().rev() {
        let size = piece.chars().count();
        if size <= room {
            kept.push(*piece);
            room -= size;
            continue;
        }
        if kept.is_empty() {
            // The newest section alone is too long (or an older version's file): its end,
            // from a heading where there is one, so that no section is cut in the middle.
            let end = tail_chars(piece, room);
            kept.push(end.find("\n## ").map_or(end, |at| &end[at + 1..]));
        }
        left_out = true;
        break;
    }
    kept.reverse();
    let notes = kept.concat();
    if left_out {
        format!("(earlier sections left out; all are in .harness/notes/)\n\n{notes}")
    } else {
        notes
    }
}

/// Appends `section` to the feature's notes, in one write, ended by its [`END`] line; a section
/// a kill tore is cut off first. Not flushed (see the durability policy in DESIGN.md): a power
/// cut may lose the last sections, a kill never loses a whole one.
pub fn append(state: &StateDir, feature: &FeatureId, section: &str) -> io::Result<()> {
    fs::create_dir_all(&state.notes_dir())?;
    let record = format!("{}\n\n{END}", section.trim_end());
    append::append(
        &state.notes(feature),
        record.as_bytes(),
        END.as_bytes(),
        |tail| tail.is_none_or(|tail| !is_torn(tail)),
    )
    .map(drop)
}

/// The feature's notes as a reader sees them (see [`sections`]), or `None` when there are none.
pub fn read(state: &StateDir, feature: &FeatureId) -> io::Result<Option<String>> {
    Ok(fs::read_optional(&state.notes(feature))?.and_then(|bytes| {
        let text = clean(bytes);
        let notes = sections(&text, true).0.concat();
        (!notes.trim().is_empty()).then(|| notes.trim().to_string())
    }))
}

/// What a prompt carries of the feature's notes within `budget` characters ([`for_prompt`]),
/// read from the end of the file only; `None` when there are none.
pub fn read_for_prompt(
    state: &StateDir,
    feature: &FeatureId,
    budget: usize,
) -> io::Result<Option<String>> {
    let Some((bytes, from_start)) = fs::read_tail(&state.notes(feature), PROMPT_BYTES)? else {
        return Ok(None);
    };
    let notes = for_prompt(&clean(bytes), from_start, budget);
    Ok((!notes.trim().is_empty()).then(|| notes.trim().to_string()))
}

/// Text read from a notes file: invalid UTF-8 (a mangled hand edit, or a character the read
/// began in the middle of) shown with replacement characters, NULs and a BOM dropped.
fn clean(bytes: Vec<u8>) -> String {
    // The common case, valid text without NULs or a BOM, is taken as it is, uncopied.
    let mut text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(error) => String::from_utf8_lossy(error.as_bytes()).into_owned(),
    };
    if text.contains('\0') {
        text.retain(|c| c != '\0');
    }
    match text.strip_prefix('\u{feff}') {
        Some(rest) => rest.trim_start_matches('\u{feff}').to_string(),
        None => text,
    }
}

/// Deletes the feature's notes; returns whether there were any.
pub fn remove(state: &StateDir, feature: &FeatureId) -> io::Result<bool> {
    remove_file_if_exists(&state.notes(feature))
}

fn remove_file_if_exists(path: &Path) -> io::Result<bool> {
    match fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(error) => Err(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(attempt: u32, output: &str) -> String {
        AttemptNote {
            attempt,
            role: Role::Worker,
            time: chrono::DateTime::from_timestamp(1_770_333_300, 0).unwrap(),
            turns: Some(100),
            commits: Some(0),
            outcome: "ended without the promise",
            output,
        }
        .render()
    }

    #[test]
    fn section_has_the_seed_format() {
        assert_eq!(
            note(2, "did things\n"),
            "## Attempt 2 — worker (2026-02-05T23:15:00Z)\nTurns: 100 | Commits: 0\nOutcome: ended without the promise\n\ndid things\n\n"
        );
        let unknown = AttemptNote {
            turns: None,
            commits: None,
            ..AttemptNote {
                attempt: 1,
                role: Role::Worker,
                time: chrono::DateTime::from_timestamp(0, 0).unwrap(),
                turns: None,
                commits: None,
                outcome: "x",
                output: "",
            }
        }
        .render();
        assert!(unknown.contains("Turns: ? | Commits: ?"));
        assert!(unknown.contains("(no output)"));
    }

    #[test]
    fn a_gate_section_names_each_failed_check_with_its_output() {
        use crate::state::lifecycle::{CheckRecord, CommandOutcome};
        let record = |name: &str, outcome, exit_code| CheckRecord {
            name: name.into(),
            outcome,
            exit_code,
            signal: None,
            duration_ms: 1,
            log: String::new(),
        };
        let gate = GateRecord {
            passed: false,
            checks: vec![
                record("lint", CommandOutcome::Passed, Some(0)),
                record("tests", CommandOutcome::Failed, Some(1)),
            ],
            outside_allow: vec!["src/main.rs".into()],
            outside_allow_count: 1,
            error: None,
        };
        let tests = format!("{}test a ... FAILED\n", "x".repeat(5000));
        let outputs = [
            CheckOutput {
                name: "lint",
                command: "cargo clippy",
                output: "clean\n",
            },
            CheckOutput {
                name: "tests",
                command: "cargo test",
                output: &tests,
            },
        ];
        let text = GateNote {
            attempt: 3,
            time: chrono::DateTime::from_timestamp(1_770_333_300, 0).unwrap(),
            phase: Some("build (3 of 4)".into()),
            gate: &gate,
            outputs: &outputs,
        }
        .render();
        assert!(text.starts_with("## Gate after attempt 3 (2026-02-05T23:15:00Z)\nPhase: build (3 of 4)\nThe promise did not count:\n- check `tests` failed: exit code 1\n- 1 path changed outside"), "{text}");
        assert!(text.contains("### Check `tests` (failed): `cargo test`\n\n"));
        assert!(text.contains("test a ... FAILED\n"));
        assert!(
            !text.contains("clean"),
            "a passed check's output is left out"
        );
        assert!(text.len() < 2500);
        assert!(text.contains("### Changed outside the phase's allow list\n\n- src/main.rs\n"));
    }

    #[test]
    fn keeps_only_the_last_3000_characters() {
        let output = format!("{}{}", "a".repeat(5000), "é".repeat(3000));
        let section = note(1, &output);
        assert!(!section.contains('a'));
        assert_eq!(section.matches('é').count(), 3000);
    }

    #[test]
    fn a_prompt_carries_only_the_newest_whole_sections() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateDir::new(dir.path());
        let feature = FeatureId::parse("F-001").unwrap();
        for attempt in 1..=300 {
            append(&state, &feature, &note(attempt, &"x".repeat(2000))).unwrap();
        }
        let short = read_for_prompt(&state, &feature, PROMPT_CHARS)
            .unwrap()
            .unwrap();
        assert!(short.chars().count() <= PROMPT_CHARS + 100);
        assert!(short.starts_with("(earlier sections left out; all are in .harness/notes/)\n\n"));
        assert!(short.ends_with(note(300, &"x".repeat(2000)).trim_end()));
        assert!(!short.contains(END.trim()));
        let headings: Vec<&str> = short.lines().filter(|l| l.starts_with("## ")).collect();
        assert_eq!(headings.len(), 5, "{headings:?}");
        assert!(headings[0].starts_with("## Attempt 296 — worker"));
        // Whole sections only: each as it was written.
        for attempt in 296..=300 {
            assert!(short.contains(note(attempt, &"x".repeat(2000)).trim_end()));
        }
        // Short notes are carried whole, and a smaller budget leaves out more.
        assert_eq!(
            for_prompt("## Attempt 1\nshort", true, PROMPT_CHARS),
            "## Attempt 1\nshort"
        );
        let two = read_for_prompt(&state, &feature, 5000).unwrap().unwrap();
        assert_eq!(two.lines().filter(|l| l.starts_with("## ")).count(), 2);
    }

    #[test]
    fn every_section_the_harness_writes_counts_as_torn_when_cut_and_a_hand_edit_does_not() {
        let gate = "## Gate after attempt 3 (2026-02-05T23:15:00Z)\nThe promise did not count:\n- check `tests` failed: exit code 1\n\n";
        let verdict = "## Validator verdict — fail (2026-02-05T23:15:00Z)\n\nno tests\n\n";
        for section in [note(2, "second"), gate.to_string(), verdict.to_string()] {
            assert!(is_torn(&section.as_bytes()[..30]), "{section}");
            assert!(is_torn(&section.as_bytes()[..5]), "{section}");
        }
        assert!(!is_torn(b"My own note: try the other parser\n"));
    }

    #[test]
    fn a_torn_last_section_is_dropped_on_reading_and_cut_before_the_next_append() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateDir::new(dir.path());
        let feature = FeatureId::parse("F-001").unwrap();
        append(&state, &feature, &note(1, "first")).unwrap();
        let whole = std::fs::read(state.notes(&feature)).unwrap();
        // A kill in the middle of the second append.
        let torn = note(2, "second, never finished");
        let mut bytes = whole.clone();
        bytes.extend_from_slice(&torn.as_bytes()[..40]);
        std::fs::write(state.notes(&feature), &bytes).unwrap();
        let read_back = read(&state, &feature).unwrap().unwrap();
        assert_eq!(read_back, note(1, "first").trim_end());
        let carried = read_for_prompt(&state, &feature, PROMPT_CHARS)
            .unwrap()
            .unwrap();
        assert_eq!(carried, note(1, "first").trim_end());
        append(&state, &feature, &note(3, "third")).unwrap();
        let text = std::fs::read_to_string(state.notes(&feature)).unwrap();
        assert!(text.starts_with(std::str::from_utf8(&whole).unwrap()));
        assert!(!text.contains("## Attempt 2"));
        assert_eq!(
            read(&state, &feature).unwrap().unwrap(),
            format!("{}{}", note(1, "first"), note(3, "third").trim_end())
        );
    }

    #[test]
    fn a_hand_edit_after_the_last_section_and_an_older_file_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateDir::new(dir.path());
        let feature = FeatureId::parse("F-001").unwrap();
        // Written whole by an older version: no end lines.
        let older = format!("{}{}", note(1, "one"), note(2, "two"));
        std::fs::create_dir_all(state.notes_dir()).unwrap();
        std::fs::write(state.notes(&feature), &older).unwrap();
        assert_eq!(read(&state, &feature).unwrap().unwrap(), older.trim_end());
        append(&state, &feature, &note(3, "three")).unwrap();
        let mut text = std::fs::read_to_string(state.notes(&feature)).unwrap();
        text.push_str("Use the staging database, not prod.");
        std::fs::write(state.notes(&feature), &text).unwrap();
        let expected = format!(
            "{older}{}Use the staging database, not prod.",
            note(3, "three")
        );
        assert_eq!(read(&state, &feature).unwrap().unwrap(), expected);
        append(&state, &feature, &note(4, "four")).unwrap();
        assert_eq!(
            read(&state, &feature).unwrap().unwrap(),
            format!(
                "{older}{}Use the staging database, not prod.{}",
                note(3, "three"),
                note(4, "four").trim_end()
            )
        );
    }
}
