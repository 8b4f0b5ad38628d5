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

/// The most output held back waiting for the end of a line; past it, the line goes out in
/// pieces (cut where no secret can straddle the cut), so memory stays bounded.
pub const MAX_PENDING_BYTES: usize = 64 << 10;

/// The longest run of key characters (letters, digits, `-`, `_`) held back at the end of a long
/// line to see where it ends; a run longer than this is no key (real ones are under 200).
const MAX_KEY_BYTES: usize = 4 << 10;

/// Redacts output that arrives in pieces of any size, as an agent's does through a pipe: whole
/// lines at once, and a line longer than [`MAX_PENDING_BYTES`] in pieces cut only where no secret
/// can straddle the cut. So no secret survives, however the output is split.
#[derive(Debug)]
pub struct RedactingStream<'a> {
    redactor: &'a Redactor,
    pending: Vec<u8>,
}

impl<'a> RedactingStream<'a> {
    /// A stream redacted by `redactor`.
    pub fn new(redactor: &'a Redactor) -> Self {
        Self {
            redactor,
            pending: Vec::new(),
        }
    }

    /// Takes the next piece of output; hands what can go out now, redacted, to `deliver`.
    pub fn push(&mut self, bytes: &[u8], deliver: impl FnOnce(&[u8])) {
        self.pending.extend_from_slice(bytes);
        if let Some(cut) = self.redactor.safe_cut(&self.pending) {
            deliver(&self.redactor.redact_bytes(&self.pending[..cut]));
            self.pending.drain(..cut);
        }
    }

    /// The end of the output: hands the rest, redacted, to `deliver`.
    pub fn finish(&mut self, deliver: impl FnOnce(&[u8])) {
        if !self.pending.is_empty() {
            deliver(&self.redactor.redact_bytes(&self.pending));
            self.pending.clear();
        }
    }
}

impl Redactor {
    /// Where `pending` output may be cut, redacting what comes before on its own: after the last
    /// newline, or (a line past [`MAX_PENDING_BYTES`]) at its end; in both cases moved back before
    /// any secret that straddles the cut or may still be completed by what comes next. `None`:
    /// nothing can go out yet.
    fn safe_cut(&self, pending: &[u8]) -> Option<usize> {
        let mut cut = match pending.iter().rposition(|&b| b == b'\n') {
            Some(newline) => newline + 1,
            None if pending.len() >= MAX_PENDING_BYTES => pending.len(),
            None => return None,
        };
        loop {
            let moved = self.value_start(pending, key_run_start(pending, cut));
            if moved == cut {
                break;
            }
            cut = moved;
        }
        match cut {
            // All of it may be one secret still growing: hold it, up to a bound.
            0 if pending.len() < 4 * MAX_PENDING_BYTES => None,
            0 => Some(pending.len()),
            cut => Some(cut),
        }
    }

    /// The start of the earliest secret value that straddles `cut` in `pending`, whole or (at
    /// the end of `pending`) begun; else `cut`.
    fn value_start(&self, pending: &[u8], cut: usize) -> usize {
        self.values
            .iter()
            .filter_map(|value| {
                (cut.saturating_sub(value.len().saturating_sub(1))..cut).find(|&start| {
                    let end = (start + value.len()).min(pending.len());
                    end > cut && value.starts_with(&pending[start..end])
                })
            })
            .min()
            .unwrap_or(cut)
    }
}

/// The start of the run of key characters `cut` falls in (a key shape is always a whole run,
/// and a run at the end of `pending` may go on), unless that run is too long to be a key; else
/// `cut`.
fn key_run_start(pending: &[u8], cut: usize) -> usize {
    let inside_run = cut > 0
        && is_key_byte(pending[cut - 1])
        && pending.get(cut).is_none_or(|&byte| is_key_byte(byte));
    if !inside_run {
        return cut;
    }
    let start = pending[..cut]
        .iter()
        .rposition(|&byte| !is_key_byte(byte))
        .map_or(0, |index| index + 1);
    if cut - start > MAX_KEY_BYTES {
        cut
    } else {
        start
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

    fn streamed(redactor: &Redactor, pieces: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut stream = RedactingStream::new(redactor);
        for piece in pieces {
            stream.push(piece, |clean| out.extend_from_slice(clean));
        }
        stream.finish(|clean| out.extend_from_slice(clean));
        out
    }

    /// Regression: a line longer than the bound went out at whatever byte the pipe's read
    /// ended, so a key across that byte left its end in output.log.
    #[test]
    fn a_key_across_the_held_back_bound_is_still_redacted() {
        let key = b"sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz012345";
        let mut line = vec![b'x'; MAX_PENDING_BYTES - 20];
        line.push(b' ');
        line.extend_from_slice(key);
        line.extend_from_slice(b" and hunter2hunter2 tail\n");
        let redactor = redactor();
        for cut in MAX_PENDING_BYTES - 30..MAX_PENDING_BYTES + 30 {
            let out = streamed(&redactor, &[&line[..cut], &line[cut..]]);
            let text = String::from_utf8(out).unwrap();
            assert!(
                text.ends_with(" [REDACTED] and [REDACTED] tail\n"),
                "cut at {cut}: {}",
                &text[text.len() - 80..]
            );
            assert_eq!(text.len(), line.len() - key.len() - 14 + 20);
        }
    }

    #[test]
    fn a_stream_holds_back_no_more_than_it_must() {
        let redactor = Redactor::default();
        // Whole lines go out at once; the start of a long line goes out without waiting.
        assert_eq!(streamed(&redactor, &[b"one\ntw"]), b"one\ntw");
        let mut out = Vec::new();
        let mut stream = RedactingStream::new(&redactor);
        stream.push(b"one\ntw", |clean| out.extend_from_slice(clean));
        assert_eq!(out, b"one\n");
        let long = [
            b"word ".repeat(MAX_PENDING_BYTES / 5),
            b"sk-ant-partial".to_vec(),
        ]
        .concat();
        let mut out = Vec::new();
        stream.push(&long, |clean| out.extend_from_slice(clean));
        assert!(out.starts_with(b"twword word"), "the long line went out");
        assert!(
            out.ends_with(b"word "),
            "the key that may go on is held back"
        );
    }

    #[test]
    fn bytes_that_are_not_utf8_pass_through() {
        let r = redactor();
        let bytes = b"\xff\xfe hunter2hunter2 \x00";
        assert_eq!(r.redact_bytes(bytes).as_ref(), b"\xff\xfe [REDACTED] \x00");
    }
}
