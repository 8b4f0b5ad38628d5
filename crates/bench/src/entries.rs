//! Synthetic raw.md entries that look like a long mission's log: outcome lines of every
//! iteration, lessons that recur (in slightly different words each time) and one-off remarks,
//! over a vocabulary in which a few words are common and most are rare, as in real text.
//! Seeded, so every run of the benchmarks curates the same log.

use harness_core::spec::features::FeatureId;
use harness_core::spec::role::Role;
use harness_core::state::memory::{RawEntry, Tag};

use crate::stats::Random;

/// Words a coding agent's remarks are full of; they come first, so the skewed pick favours them.
const COMMON: &[&str] = &[
    "test",
    "build",
    "cargo",
    "migration",
    "schema",
    "parser",
    "config",
    "module",
    "handler",
    "route",
    "query",
    "index",
    "cache",
    "lock",
    "fixture",
    "snapshot",
    "timeout",
    "retry",
    "logger",
    "client",
    "server",
    "token",
    "session",
    "endpoint",
    "database",
    "table",
    "column",
    "import",
    "export",
    "release",
    "debug",
    "lint",
    "format",
    "docker",
    "compose",
    "script",
    "deploy",
    "branch",
    "commit",
    "merge",
    "rebase",
    "worktree",
    "feature",
    "spec",
    "prompt",
    "notes",
    "memory",
    "summary",
    "validator",
    "worker",
    "planner",
    "curator",
    "harness",
];

/// A source of raw.md lines.
#[derive(Debug, Clone)]
pub struct EntryMaker {
    random: Random,
    vocabulary: Vec<String>,
    /// Lessons that come back again and again, each with its tag.
    recurring: Vec<(Tag, Vec<usize>)>,
    features: Vec<FeatureId>,
    /// Seconds since the epoch of the next entry.
    clock: i64,
}

impl EntryMaker {
    /// A maker seeded with `seed`, with a vocabulary of about 20,000 words, 400 recurring
    /// lessons and 200 features.
    pub fn new(seed: u64) -> Self {
        let mut random = Random::new(seed);
        let mut vocabulary: Vec<String> = COMMON.iter().map(|w| w.to_string()).collect();
        vocabulary.extend((0..20_000).map(pseudo_word));
        let recurring = (0..400)
            .map(|_| {
                let tag = [
                    Tag::Trick,
                    Tag::Lesson,
                    Tag::Avoid,
                    Tag::Decision,
                    Tag::Fail,
                ][random.below(5)];
                let length = 6 + random.below(4);
                let words = (0..length)
                    .map(|_| random.skewed(vocabulary.len()))
                    .collect();
                (tag, words)
            })
            .collect();
        let features = (1..=200)
            .map(|n| FeatureId::parse(&format!("F-{n:03}")).expect("a valid id"))
            .collect();
        Self {
            random,
            vocabulary,
            recurring,
            features,
            // 2026-01-01T00:00:00Z
            clock: 1_767_225_600,
        }
    }

    /// The next entry, as its raw.md line (without the newline).
    pub fn line(&mut self) -> String {
        self.entry().to_string()
    }

    /// The next entry: 30 % outcome lines, 45 % recurring lessons, 25 % one-off remarks.
    pub fn entry(&mut self) -> RawEntry {
        self.clock += 1 + self.random.below(60) as i64;
        let time = chrono::DateTime::from_timestamp(self.clock, 0).expect("a valid time");
        let feature = self.features[self.random.skewed(self.features.len())].clone();
        let role = match self.random.below(20) {
            0 | 1 => Role::Validator,
            2 => Role::Planner,
            _ => Role::Worker,
        };
        let roll = self.random.below(100);
        let (tag, text) = if roll < 30 {
            let iteration = 1 + self.random.below(10);
            (
                Tag::Outcome,
                format!(
                    "{feature} iteration {iteration}/10: ended without the promise; {} left",
                    10 - iteration
                ),
            )
        } else if roll < 75 {
            let index = self.random.skewed(self.recurring.len());
            let (tag, words) = self.recurring[index].clone();
            let mut text = self.sentence(&words);
            // The same lesson is rarely said twice in the same words.
            match self.random.below(3) {
                0 => text.push_str(&format!(" (seen again in part {})", self.random.below(50))),
                1 => {
                    let extra = self.random.skewed(self.vocabulary.len());
                    text.push(' ');
                    text.push_str(&self.vocabulary[extra]);
                }
                _ => {}
            }
            (tag, text)
        } else {
            let tag = [
                Tag::Trick,
                Tag::Lesson,
                Tag::Avoid,
                Tag::Decision,
                Tag::Fail,
            ][self.random.below(5)];
            let length = 6 + self.random.below(7);
            let words: Vec<usize> = (0..length)
                .map(|_| self.random.skewed(self.vocabulary.len()))
                .collect();
            (tag, self.sentence(&words))
        };
        RawEntry {
            time,
            role,
            feature: Some(feature),
            tag,
            text,
        }
    }

    /// The next entry an agent would print: `TAG: text` (never an outcome line, which the
    /// harness writes itself).
    pub fn agent_line(&mut self) -> String {
        loop {
            let entry = self.entry();
            if entry.tag != Tag::Outcome {
                return format!("{}: {}", entry.tag.as_str(), entry.text);
            }
        }
    }

    fn sentence(&self, words: &[usize]) -> String {
        let mut text = String::new();
        for (position, &word) in words.iter().enumerate() {
            if position > 0 {
                text.push(' ');
            }
            text.push_str(&self.vocabulary[word]);
            if position == 2 {
                text.push_str(" in");
            }
        }
        text
    }
}

/// A pronounceable made-up word for `index` (distinct for distinct indices).
fn pseudo_word(index: usize) -> String {
    const CONSONANTS: &[u8] = b"bdfgklmnprstvz";
    const VOWELS: &[u8] = b"aeiou";
    let mut word = String::new();
    let mut rest = index + CONSONANTS.len() * VOWELS.len();
    while rest > 0 {
        let syllable = rest % (CONSONANTS.len() * VOWELS.len());
        word.push(CONSONANTS[syllable / VOWELS.len()] as char);
        word.push(VOWELS[syllable % VOWELS.len()] as char);
        rest /= CONSONANTS.len() * VOWELS.len();
    }
    word
}

/// `count` raw.md lines, each followed by a newline.
pub fn raw_text(maker: &mut EntryMaker, count: usize) -> String {
    let mut text = String::with_capacity(count * 110);
    for _ in 0..count {
        text.push_str(&maker.line());
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_line_is_a_valid_raw_entry() {
        let mut maker = EntryMaker::new(1);
        for _ in 0..2_000 {
            let line = maker.line();
            assert_eq!(
                RawEntry::parse(&line).map(|e| e.to_string()),
                Ok(line.clone())
            );
        }
    }

    #[test]
    fn the_same_seed_makes_the_same_log() {
        let a = raw_text(&mut EntryMaker::new(3), 100);
        let b = raw_text(&mut EntryMaker::new(3), 100);
        assert_eq!(a, b);
    }

    #[test]
    fn pseudo_words_are_distinct() {
        let words: std::collections::BTreeSet<String> = (0..5_000).map(pseudo_word).collect();
        assert_eq!(words.len(), 5_000);
    }
}
