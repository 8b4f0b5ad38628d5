//! Agent notes (seed 004): after every attempt the feature's `notes/<FEATURE>.md` gets a section
//! with the tail of the agent's output, so the next attempt — a fresh process that remembers
//! nothing — sees what the last ones did. Removed when the feature is accepted as done.

use std::io;
use std::path::Path;

use crate::base::atomic::write_atomic;
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

/// The notes as a prompt carries them: whole, or their newest whole sections within
/// [`PROMPT_CHARS`] after a line saying how many were left out (they stay in the file).
pub fn for_prompt(notes: &str) -> std::borrow::Cow<'_, str> {
    if notes.chars().count() <= PROMPT_CHARS {
        return std::borrow::Cow::Borrowed(notes);
    }
    let tail = tail_chars(notes, PROMPT_CHARS);
    // Start at a section boundary so no section is cut in the middle.
    let kept = match tail.find("\n## ") {
        Some(at) => &tail[at + 1..],
        None => tail,
    };
    let sections = |text: &str| text.lines().filter(|l| l.starts_with("## ")).count();
    let left_out = sections(notes).saturating_sub(sections(kept));
    std::borrow::Cow::Owned(format!(
        "({left_out} earlier sections left out; all are in .harness/notes/)\n\n{kept}"
    ))
}

/// Appends `section` to the feature's notes (a whole-file atomic rewrite: never a torn section).
pub fn append(state: &StateDir, feature: &FeatureId, section: &str) -> io::Result<()> {
    let path = state.notes(feature);
    fs::create_dir_all(&state.notes_dir())?;
    let mut text = fs::read_optional(&path)?.unwrap_or_default();
    if !text.is_empty() && !text.ends_with(b"\n") {
        text.push(b'\n');
    }
    text.extend_from_slice(section.as_bytes());
    write_atomic(&path, &text)
}

/// The feature's notes, or `None` when there are none.
pub fn read(state: &StateDir, feature: &FeatureId) -> io::Result<Option<String>> {
    crate::state::memory::read_layer(&state.notes(feature))
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
        let mut notes = String::new();
        for attempt in 1..=30 {
            notes.push_str(&note(attempt, &"x".repeat(2000)));
        }
        let short = for_prompt(&notes);
        assert!(short.chars().count() <= PROMPT_CHARS + 100);
        assert!(short.contains("## Attempt 30 — worker"));
        assert!(!short.contains("## Attempt 1 — worker"));
        let first_kept = short
            .lines()
            .find(|l| l.starts_with("## "))
            .unwrap()
            .to_string();
        let kept_from: u32 = first_kept["## Attempt ".len()..]
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(
            short.starts_with(&format!("({} earlier sections left out", kept_from - 1)),
            "{short}"
        );
        assert_eq!(for_prompt("## Attempt 1\nshort"), "## Attempt 1\nshort");
    }

    #[test]
    fn attempts_accumulate_and_cleanup_removes_them() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateDir::new(dir.path());
        let feature = FeatureId::parse("F-001").unwrap();
        assert_eq!(read(&state, &feature).unwrap(), None);
        append(&state, &feature, &note(1, "first")).unwrap();
        append(&state, &feature, &note(2, "second")).unwrap();
        let text = read(&state, &feature).unwrap().unwrap();
        assert!(text.find("## Attempt 1").unwrap() < text.find("## Attempt 2").unwrap());
        assert!(remove(&state, &feature).unwrap());
        assert!(!remove(&state, &feature).unwrap());
    }
}
