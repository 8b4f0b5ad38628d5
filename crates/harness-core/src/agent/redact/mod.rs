//! Secrets never reach output.log, the terminal, the notes, raw.md or anything else the harness
//! writes: the agent's output is redacted as it streams in, before anything reads it. Redacted,
//! each replaced by `[REDACTED]`:
//!
//! - the value of every environment variable whose name says it is secret (see
//!   [`is_secret_name`]), at least 8 characters long; a value of several lines counts line by
//!   line; also as written inside a JSON string (`"` and `\` escaped);
//! - well-known token shapes at the start of a word (`sk-…`, `ghp_…`, `AKIA…`, … see
//!   `shapes.rs`), the whole word;
//! - what follows a label that names a secret: an AWS secret access key, a bearer token, the
//!   body of a PEM private key; and the password in `scheme://user:password@host`.
//!
//! A secret split by one line break between two of its characters (a raw `\n` or `\r\n`, or
//! `\n` written inside a JSON string) is still one secret: each piece is replaced and the line
//! breaks are kept, so the output keeps its lines.

mod shapes;
mod stream;

use std::borrow::Cow;

pub use stream::RedactingStream;

/// What stands in for a secret.
pub const REDACTED: &str = "[REDACTED]";

/// The shortest environment value treated as a secret (shorter ones are too common to hide).
const MIN_SECRET_LEN: usize = 8;

/// Words that make an environment variable's name secret wherever they are in it.
const SECRET_PARTS: [&str; 8] = [
    "KEY",
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "PASSPHRASE",
    "CREDENTIAL",
    "BEARER",
];

/// Words that make a name secret only as a whole word between `_` (`GITHUB_PAT`, not `PATH`).
const SECRET_WORDS: [&str; 2] = ["PAT", "PASS"];

/// Whether an environment variable of this name holds a secret: its name contains `KEY`,
/// `TOKEN`, `SECRET`, `PASSWORD`, `PASSWD`, `PASSPHRASE`, `CREDENTIAL` or `BEARER`; or a word
/// (between `_`) holding `AUTH` (`AUTHOR`, as in `GIT_AUTHOR_NAME`, only as `AUTHORIZATION`);
/// or the word `PAT` or `PASS`. In any case.
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    let mut words = upper.split(|c: char| !c.is_ascii_alphanumeric());
    SECRET_PARTS.iter().any(|part| upper.contains(part))
        || words.any(|word| {
            SECRET_WORDS.contains(&word)
                || (word.contains("AUTH")
                    && (!word.contains("AUTHOR") || word.contains("AUTHORIZ")))
        })
}

/// Finds and hides secrets in output.
#[derive(Debug, Clone)]
pub struct Redactor {
    /// Secret values from the environment, each also as written in JSON, longest first.
    values: Vec<Vec<u8>>,
    /// What each byte may start (flags of `stream.rs`: a value, a shape anywhere or at a word).
    starts: [u8; 256],
    /// Where a shape, a label or a URL password may start.
    shape_starts: shapes::ShapeStarts,
    /// What may follow the first byte of a secret (a second fast filter).
    seconds: stream::Seconds,
    /// What may follow the first two (a third, for the few the second lets through).
    thirds: stream::Thirds,
    /// The filters above left out: only in the tests that check them against the matchers.
    #[cfg(test)]
    unfiltered: bool,
}

impl Default for Redactor {
    fn default() -> Self {
        Self::from_env(std::iter::empty::<(&str, &str)>())
    }
}

/// The forms of one secret value that are looked for: each line of it long enough (trimmed),
/// as it is and as written inside a JSON string.
fn secret_forms(value: &str) -> Vec<Vec<u8>> {
    let mut forms = Vec::new();
    for line in value.lines().map(str::trim) {
        if line.len() < MIN_SECRET_LEN {
            continue;
        }
        forms.push(line.as_bytes().to_vec());
        let json = serde_json::to_string(line).unwrap_or_default();
        if let Some(json) = json.strip_prefix('"').and_then(|j| j.strip_suffix('"')) {
            if json != line {
                forms.push(json.as_bytes().to_vec());
            }
        }
    }
    forms
}

/// The forms of the secret values among `vars` (name, value), as the redactor looks for them.
fn secret_values<I, K, V>(vars: I) -> Vec<Vec<u8>>
where
    I: IntoIterator<Item = (K, V)>,
    K: AsRef<str>,
    V: AsRef<str>,
{
    vars.into_iter()
        .filter(|(name, _)| is_secret_name(name.as_ref()))
        .flat_map(|(_, value)| secret_forms(value.as_ref()))
        .collect()
}

impl Redactor {
    /// A redactor for the secret values among `vars` (name, value).
    pub fn from_env<I, K, V>(vars: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<str>,
    {
        Self::from_values(secret_values(vars))
    }

    /// A redactor for the secrets of this process's environment and of `extra` (what an agent
    /// or a hook gets besides). The process's are read once: nothing changes its environment
    /// while it runs, and reading it cost a worker's iteration more than the rest of this.
    pub fn of_process_and<I, K, V>(extra: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<str>,
    {
        static PROCESS: std::sync::OnceLock<Vec<Vec<u8>>> = std::sync::OnceLock::new();
        let mut values = PROCESS
            .get_or_init(|| secret_values(std::env::vars()))
            .clone();
        values.extend(secret_values(extra));
        Self::from_values(values)
    }

    /// A redactor for `values`, each a form of a secret.
    fn from_values(mut values: Vec<Vec<u8>>) -> Self {
        values.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
        values.dedup();
        let shape_starts = shapes::ShapeStarts::new();
        let mut starts = [0u8; 256];
        for (byte, flags) in starts.iter_mut().enumerate() {
            if shape_starts.anywhere[byte] {
                *flags |= stream::ANYWHERE;
            }
            if shape_starts.word[byte] {
                *flags |= stream::AT_WORD;
            }
        }
        for value in &values {
            starts[usize::from(value[0])] |= stream::VALUE;
        }
        Self {
            seconds: stream::Seconds::new(&values),
            thirds: stream::Thirds::new(&values),
            values,
            starts,
            shape_starts,
            #[cfg(test)]
            unfiltered: false,
        }
    }

    /// `bytes` with every secret replaced by [`REDACTED`].
    pub fn redact_bytes<'a>(&self, bytes: &'a [u8]) -> Cow<'a, [u8]> {
        let mut out = Vec::new();
        let mut stream = RedactingStream::new(self);
        stream.push(bytes, |clean| out.extend_from_slice(clean));
        stream.finish(|clean| out.extend_from_slice(clean));
        if out == bytes {
            Cow::Borrowed(bytes)
        } else {
            Cow::Owned(out)
        }
    }

    /// `text` with every secret replaced by [`REDACTED`].
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        match self.redact_bytes(text.as_bytes()) {
            Cow::Borrowed(_) => Cow::Borrowed(text),
            Cow::Owned(bytes) => Cow::Owned(String::from_utf8_lossy(&bytes).into_owned()),
        }
    }
}

#[cfg(test)]
mod equivalence;
#[cfg(test)]
mod tests;
