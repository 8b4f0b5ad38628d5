//! Agent notes (seed 004): after every attempt the feature's `notes/<FEATURE>.md` gets a section
//! with the tail of the agent's output, so the next attempt — a fresh process that remembers
//! nothing — sees what the last ones did. Removed when the feature is accepted as done.

use std::io;
use std::path::Path;

use crate::atomic::write_atomic;
use crate::features::FeatureId;
use crate::layout::StateDir;
use crate::role::Role;
use crate::time::{self, Timestamp};

/// How much of the end of an attempt's output a note keeps, in characters.
pub const TAIL_CHARS: usize = 3000;

/// What one attempt leaves in the notes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptNote<'a> {
    /// The attempt number (the worker iteration).
    pub attempt: u32,
    /// Who ran.
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

/// The last `count` characters of `text` (on a character boundary).
pub fn tail_chars(text: &str, count: usize) -> &str {
    if count == 0 {
        return "";
    }
    match text.char_indices().rev().nth(count - 1) {
        Some((index, _)) => &text[index..],
        None => text,
    }
}

/// Appends `section` to the feature's notes (a whole-file atomic rewrite: never a torn section).
pub fn append(state: &StateDir, feature: &FeatureId, section: &str) -> io::Result<()> {
    let path = state.notes(feature);
    std::fs::create_dir_all(state.notes_dir())?;
    let mut text = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == io::ErrorKind::NotFound => Vec::new(),
        Err(error) => return Err(error),
    };
    if !text.is_empty() && !text.ends_with(b"\n") {
        text.push(b'\n');
    }
    text.extend_from_slice(section.as_bytes());
    write_atomic(&path, &text)
}

/// The feature's notes, or `None` when there are none.
pub fn read(state: &StateDir, feature: &FeatureId) -> io::Result<Option<String>> {
    crate::memory::read_layer(&state.notes(feature))
}

/// Deletes the feature's notes; returns whether there were any.
pub fn remove(state: &StateDir, feature: &FeatureId) -> io::Result<bool> {
    remove_file_if_exists(&state.notes(feature))
}

fn remove_file_if_exists(path: &Path) -> io::Result<bool> {
    match std::fs::remove_file(path) {
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
    fn keeps_only_the_last_3000_characters() {
        let output = format!("{}{}", "a".repeat(5000), "é".repeat(3000));
        let section = note(1, &output);
        assert!(!section.contains('a'));
        assert_eq!(section.matches('é').count(), 3000);
        assert_eq!(tail_chars("héllo", 3), "llo");
        assert_eq!(tail_chars("hi", 3), "hi");
        assert_eq!(tail_chars("hi", 0), "");
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
