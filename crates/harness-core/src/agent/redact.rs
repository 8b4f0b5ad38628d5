//! Secrets never reach output.log, the terminal, the notes or raw.md: common API-key shapes and
//! the values of environment variables whose names say they are secret (`KEY`, `TOKEN`,
//! `SECRET`, `PASSWORD`) are replaced by `[REDACTED]` as the output streams in.

use std::borrow::Cow;

/// What stands in for a secret.
pub const REDACTED: &str = "[REDACTED]";

/// Key shapes: a prefix, then at least this many key characters.
const SHAPES: [(&str, usize); 12] = [
    ("sk-ant-", 20),
    ("sk-", 20),
    ("ghp_", 20),
    ("gho_", 20),
    ("ghu_", 20),
    ("ghs_", 20),
    ("github_pat_", 20),
    ("glpat-", 20),
    ("xoxb-", 10),
    ("xoxp-", 10),
    ("AKIA", 16),
    ("AIza", 30),
];

/// The shortest environment value treated as a secret (shorter ones are too common to hide).
const MIN_SECRET_LEN: usize = 8;

/// Finds and hides secrets in output.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    /// Secret values from the environment, longest first (so a longer one wins an overlap).
    values: Vec<Vec<u8>>,
}

fn is_key_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_'
}

/// Whether an environment variable of this name holds a secret.
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ["KEY", "TOKEN", "SECRET", "PASSWORD"]
        .iter()
        .any(|word| upper.contains(word))
}

impl Redactor {
    /// A redactor for the secret values among `vars` (name, value).
    pub fn from_env<I, K, V>(vars: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<str>,
    {
        let mut values: Vec<Vec<u8>> = vars
            .into_iter()
            .filter(|(name, value)| {
                is_secret_name(name.as_ref()) && value.as_ref().len() >= MIN_SECRET_LEN
            })
            .map(|(_, value)| value.as_ref().as_bytes().to_vec())
            .collect();
        values.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
        values.dedup();
        Self { values }
    }

    /// The redactor of this process's environment.
    pub fn from_process_env() -> Self {
        Self::from_env(std::env::vars())
    }

    /// `bytes` with every secret replaced by [`REDACTED`].
    pub fn redact_bytes<'a>(&self, bytes: &'a [u8]) -> Cow<'a, [u8]> {
        let ranges = self.secret_ranges(bytes);
        if ranges.is_empty() {
            return Cow::Borrowed(bytes);
        }
        let mut out = Vec::with_capacity(bytes.len());
        let mut at = 0;
        for (start, end) in ranges {
            out.extend_from_slice(&bytes[at..start]);
            out.extend_from_slice(REDACTED.as_bytes());
            at = end;
        }
        out.extend_from_slice(&bytes[at..]);
        Cow::Owned(out)
    }

    /// `text` with every secret replaced by [`REDACTED`].
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        match self.redact_bytes(text.as_bytes()) {
            Cow::Borrowed(_) => Cow::Borrowed(text),
            Cow::Owned(bytes) => Cow::Owned(String::from_utf8_lossy(&bytes).into_owned()),
        }
    }

    /// Sorted, merged byte ranges of the secrets in `bytes`.
    fn secret_ranges(&self, bytes: &[u8]) -> Vec<(usize, usize)> {
        let mut ranges = Vec::new();
        for value in &self.values {
            let mut from = 0;
            while let Some(found) = find(&bytes[from..], value) {
                let start = from + found;
                ranges.push((start, start + value.len()));
                from = start + value.len();
            }
        }
        for (index, &byte) in bytes.iter().enumerate() {
            // A shape starts a word: "task-…" holds "sk-" but is no key.
            if !matches!(byte, b's' | b'g' | b'x' | b'A')
                || (index > 0 && is_key_byte(bytes[index - 1]))
            {
                continue;
            }
            for (prefix, min) in SHAPES {
                if bytes[index..].starts_with(prefix.as_bytes()) {
                    let body = bytes[index + prefix.len()..]
                        .iter()
                        .take_while(|&&b| is_key_byte(b))
                        .count();
                    if body >= min {
                        ranges.push((index, index + prefix.len() + body));
                        break;
                    }
                }
            }
        }
        ranges.sort_unstable();
        let mut merged: Vec<(usize, usize)> = Vec::with_capacity(ranges.len());
        for (start, end) in ranges {
            match merged.last_mut() {
                Some(last) if start <= last.1 => last.1 = last.1.max(end),
                _ => merged.push((start, end)),
            }
        }
        merged
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || needle.len() > haystack.len() {
        return None;
    }
    let first = needle[0];
    let mut from = 0;
    while let Some(offset) = haystack[from..=haystack.len() - needle.len()]
        .iter()
        .position(|&b| b == first)
    {
        let start = from + offset;
        if &haystack[start..start + needle.len()] == needle {
            return Some(start);
        }
        from = start + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redactor() -> Redactor {
        Redactor::from_env([
            ("ANTHROPIC_API_KEY", "not-a-shape-but-secret-123"),
            ("MY_PASSWORD", "hunter2hunter2"),
            ("GITHUB_TOKEN", "short"),
            ("HOME", "/home/someone-long-enough"),
        ])
    }

    #[test]
    fn common_key_shapes_are_hidden() {
        let r = Redactor::default();
        for key in [
            "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz012345",
            "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx",
            "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
            "AKIAIOSFODNN7EXAMPLE",
            "AIzaSyA-1234567890abcdefghijklmnopqrstu",
            "xoxb-1234567890-abcdef",
        ] {
            let line = format!("export KEY={key} # done");
            assert_eq!(r.redact(&line), "export KEY=[REDACTED] # done", "{key}");
        }
    }

    #[test]
    fn ordinary_words_are_left_alone() {
        let r = Redactor::default();
        for text in [
            "task-list is fine",
            "sk-short",
            "risk-assessment-of-the-whole-thing-here",
            "ghp_tiny",
        ] {
            assert_eq!(r.redact(text), text);
        }
    }

    #[test]
    fn secret_environment_values_are_hidden_and_others_kept() {
        let r = redactor();
        assert_eq!(
            r.redact("key=not-a-shape-but-secret-123 pw=hunter2hunter2 home=/home/someone-long-enough short"),
            "key=[REDACTED] pw=[REDACTED] home=/home/someone-long-enough short"
        );
        assert!(is_secret_name("openai_api_key"));
        assert!(!is_secret_name("PATH"));
    }

    #[test]
    fn bytes_that_are_not_utf8_pass_through() {
        let r = redactor();
        let bytes = b"\xff\xfe hunter2hunter2 \x00";
        assert_eq!(r.redact_bytes(bytes).as_ref(), b"\xff\xfe [REDACTED] \x00");
    }
}
