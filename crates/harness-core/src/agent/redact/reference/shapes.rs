//! What a secret looks like in a stream of bytes, and where one may start: well-known token
//! shapes, secrets known by the label before them, passwords in URLs, and exact values. Every
//! matcher lets one line break (raw, or `\n` written inside a JSON string) stand between two
//! characters of a secret, and says when the bytes end too early to decide.

use std::ops::Range;

/// Which bytes make up the body of a secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Body {
    /// Letters, digits, `-` and `_`: API keys.
    Key,
    /// The same and `.`: JSON Web Tokens, SendGrid keys.
    Dotted,
    /// Base64: AWS secret access keys, PEM private keys.
    Base64,
    /// RFC 6750's token68: bearer tokens.
    Token68,
}

impl Body {
    fn holds(self, byte: u8) -> bool {
        match self {
            Body::Key => is_key_byte(byte),
            Body::Dotted => is_key_byte(byte) || byte == b'.',
            Body::Base64 => byte.is_ascii_alphanumeric() || matches!(byte, b'+' | b'/' | b'='),
            Body::Token68 => is_key_byte(byte) || matches!(byte, b'.' | b'~' | b'+' | b'/' | b'='),
        }
    }
}

/// A letter, a digit, `-` or `_`: what words of keys are made of.
pub(super) fn is_key_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_'
}

/// A well-known key: this prefix at the start of a word, then at least `min` body bytes. The
/// whole word is the secret.
struct Prefixed {
    prefix: &'static str,
    min: usize,
    body: Body,
}

const fn key(prefix: &'static str, min: usize) -> Prefixed {
    Prefixed {
        prefix,
        min,
        body: Body::Key,
    }
}

/// The providers' documented key prefixes (OpenAI and Anthropic, Stripe, GitHub, GitLab, Slack,
/// AWS access key ids, Google, Hugging Face, npm, PyPI, SendGrid, JSON Web Tokens).
const PREFIXED: [Prefixed; 25] = [
    key("sk-", 20),
    key("sk_live_", 16),
    key("sk_test_", 16),
    key("rk_live_", 16),
    key("rk_test_", 16),
    key("ghp_", 20),
    key("gho_", 20),
    key("ghu_", 20),
    key("ghs_", 20),
    key("ghr_", 20),
    key("github_pat_", 20),
    key("glpat-", 20),
    key("xoxa-", 10),
    key("xoxb-", 10),
    key("xoxp-", 10),
    key("xoxr-", 10),
    key("xoxs-", 10),
    key("xapp-", 10),
    key("AKIA", 16),
    key("ASIA", 16),
    key("AIza", 30),
    key("hf_", 30),
    key("npm_", 30),
    key("pypi-", 50),
    Prefixed {
        prefix: "eyJ",
        min: 30,
        body: Body::Dotted,
    },
];

/// `SG.` keys and Google's `ya29.` tokens hold a dot after the prefix.
const DOTTED_PREFIXED: [Prefixed; 2] = [
    Prefixed {
        prefix: "SG.",
        min: 40,
        body: Body::Dotted,
    },
    Prefixed {
        prefix: "ya29.",
        min: 20,
        body: Body::Dotted,
    },
];

/// A secret known by what stands before it: the label (in any case), separators, then at least
/// `min` body bytes. Only the body is the secret.
struct Labelled {
    label: &'static str,
    /// Whether the label must start a word (`bearer`, not `cupbearer`).
    word_start: bool,
    separators: &'static [u8],
    /// How many separators at least.
    min_separators: usize,
    min: usize,
    body: Body,
}

/// What may stand between an AWS label and its key: `= `, `: "`, `\"` inside JSON.
const ASSIGN: &[u8] = b" \t\"':=\\";

const fn aws(label: &'static str) -> Labelled {
    Labelled {
        label,
        word_start: false,
        separators: ASSIGN,
        min_separators: 1,
        min: 16,
        body: Body::Base64,
    }
}

/// AWS secret access keys (`aws_secret_access_key = …` in ~/.aws/credentials,
/// `AWS_SECRET_ACCESS_KEY=…`, `"SecretAccessKey": "…"` from the CLI), bearer tokens, and the
/// body of a PEM private key.
const LABELLED: [Labelled; 5] = [
    aws("secret_access_key"),
    aws("secretaccesskey"),
    aws("secret-access-key"),
    Labelled {
        label: "bearer",
        word_start: true,
        separators: b" ",
        min_separators: 1,
        min: 16,
        body: Body::Token68,
    },
    Labelled {
        label: "private key-----",
        word_start: false,
        separators: b"",
        min_separators: 0,
        min: 16,
        body: Body::Base64,
    },
];

/// The most separators between a label and its secret.
const MAX_SEPARATORS: usize = 8;
/// The longest user name and password looked at in a URL.
const MAX_USERINFO: usize = 256;

/// What starts at one byte of the output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Found {
    /// No secret starts here.
    Nothing,
    /// The bytes end before it is known whether a secret starts here: hold them back from
    /// this position (here, or the backslash before an escaped value).
    Undecided(usize),
    /// A secret at `range`; when `open` names a body, the secret reaches the end of the bytes
    /// (or a line break at their end) and may go on with more bytes of that body.
    Secret {
        range: Range<usize>,
        open: Option<Body>,
    },
}

/// Every line break a secret may be split by: raw, or written inside a JSON string.
const BREAKS: [&[u8]; 4] = [b"\r\n", b"\n", b"\\r\\n", b"\\n"];

/// What is at one position, as far as line breaks go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Break {
    None,
    /// A line break of this many bytes.
    Whole(usize),
    /// The bytes end where a line break may be beginning.
    Cut,
}

/// The line break at `at`, if any.
pub(super) fn line_break(bytes: &[u8], at: usize) -> Break {
    let rest = &bytes[at..];
    if let Some(found) = BREAKS.iter().find(|b| rest.starts_with(b)) {
        return Break::Whole(found.len());
    }
    if BREAKS.iter().any(|b| b.starts_with(rest)) {
        return Break::Cut;
    }
    Break::None
}

/// How a literal matched at a position.
enum Literal {
    No,
    /// The bytes end inside it.
    Partial,
    /// It ends here.
    Ends(usize),
}

/// Matches `literal` at `start` (in any case when `fold_case`), one line break allowed between
/// two of its characters; `more`: whether more bytes may come after `bytes`.
fn literal(bytes: &[u8], start: usize, literal: &[u8], fold_case: bool, more: bool) -> Literal {
    let same = |a: u8, b: u8| a == b || (fold_case && a.eq_ignore_ascii_case(&b));
    let partial = if more { Literal::Partial } else { Literal::No };
    let mut at = start;
    for (index, &want) in literal.iter().enumerate() {
        if index > 0 && !(at < bytes.len() && same(bytes[at], want)) {
            match line_break(bytes, at) {
                Break::Whole(length) => at += length,
                Break::Cut => return partial,
                Break::None => return Literal::No,
            }
        }
        if at == bytes.len() {
            return partial;
        }
        if !same(bytes[at], want) {
            return Literal::No;
        }
        at += 1;
    }
    Literal::Ends(at)
}

/// A run of body bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Run {
    /// Just after its last body byte.
    pub end: usize,
    /// How many body bytes (line breaks not counted).
    pub count: usize,
    /// Whether it reaches the end of the bytes and may go on.
    pub open: bool,
}

/// How much of the next line a key's body may go on with is looked at to decide whether it does.
const WRAP_LOOKAHEAD: usize = 64;

/// The run of `body` bytes from `start`. One line break may stand before a body byte: always
/// while fewer than `min` body bytes were seen (the key is not complete yet), and after that only
/// when the next line's run looks random (see [`looks_random`]): a key wrapped onto the next line
/// goes on there, a word that starts the next line after a key does not.
pub(super) fn body_run(bytes: &[u8], start: usize, body: Body, min: usize, more: bool) -> Run {
    let mut run = Run {
        end: start,
        count: 0,
        open: false,
    };
    let mut at = start;
    loop {
        if at == bytes.len() {
            run.open = more;
            return run;
        }
        if body.holds(bytes[at]) {
            at += 1;
            run.count += 1;
            run.end = at;
            continue;
        }
        let after = match line_break(bytes, at) {
            Break::Whole(length) => at + length,
            Break::Cut => {
                run.open = more;
                return run;
            }
            Break::None => return run,
        };
        let next_line = bytes[after..]
            .iter()
            .take(WRAP_LOOKAHEAD)
            .take_while(|&&byte| body.holds(byte))
            .count();
        let seen_all = after + next_line == bytes.len() && next_line < WRAP_LOOKAHEAD;
        if seen_all && more {
            run.open = true;
            return run;
        }
        if next_line == 0 || (run.count >= min && !looks_random(&bytes[after..after + next_line])) {
            return run;
        }
        at = after;
    }
}

/// Whether a run of characters looks like the rest of a key rather than a word: it holds a
/// digit, or a capital right after a small letter.
fn looks_random(run: &[u8]) -> bool {
    run.iter().any(u8::is_ascii_digit)
        || run
            .windows(2)
            .any(|pair| pair[0].is_ascii_lowercase() && pair[1].is_ascii_uppercase())
}

/// Whether a word starts at `at`: after a byte that is no key byte, or after a JSON escape
/// (`\n`, `\t`, `\r`), whose letter is no part of the word.
pub(super) fn word_start(bytes: &[u8], at: usize) -> bool {
    match at {
        0 => true,
        1 => !is_key_byte(bytes[0]),
        _ => {
            !is_key_byte(bytes[at - 1])
                || (bytes[at - 2] == b'\\' && matches!(bytes[at - 1], b'n' | b't' | b'r'))
        }
    }
}

/// The secret of a well-known shape, a label or a URL that starts at `at`.
pub(super) fn shape_at(bytes: &[u8], at: usize, more: bool) -> Found {
    let mut undecided = false;
    let starts_word = word_start(bytes, at);
    let first = bytes[at];
    if starts_word {
        for shape in PREFIXED.iter().chain(&DOTTED_PREFIXED) {
            if shape.prefix.as_bytes()[0] != first {
                continue;
            }
            match prefixed(bytes, at, shape, more) {
                Found::Nothing => {}
                Found::Undecided(_) => undecided = true,
                found => return found,
            }
        }
    }
    for label in &LABELLED {
        if (label.word_start && !starts_word)
            || !label.label.as_bytes()[0].eq_ignore_ascii_case(&first)
        {
            continue;
        }
        match labelled(bytes, at, label, more) {
            Found::Nothing => {}
            Found::Undecided(_) => undecided = true,
            found => return found,
        }
    }
    match url_password(bytes, at, more) {
        Found::Nothing if undecided => Found::Undecided(at),
        found => found,
    }
}

fn prefixed(bytes: &[u8], at: usize, shape: &Prefixed, more: bool) -> Found {
    match literal(bytes, at, shape.prefix.as_bytes(), false, more) {
        Literal::No => Found::Nothing,
        Literal::Partial => Found::Undecided(at),
        Literal::Ends(end) => body_secret(bytes, at, end, shape.body, shape.min, more),
    }
}

/// The secret from `start` whose body begins at `body_start`, if the body is long enough.
fn body_secret(
    bytes: &[u8],
    start: usize,
    body_start: usize,
    body: Body,
    min: usize,
    more: bool,
) -> Found {
    let run = body_run(bytes, body_start, body, min, more);
    if run.count >= min {
        Found::Secret {
            range: start..run.end,
            open: run.open.then_some(body),
        }
    } else if run.open {
        Found::Undecided(start)
    } else {
        Found::Nothing
    }
}

fn labelled(bytes: &[u8], at: usize, label: &Labelled, more: bool) -> Found {
    let end = match literal(bytes, at, label.label.as_bytes(), true, more) {
        Literal::No => return Found::Nothing,
        Literal::Partial => return Found::Undecided(at),
        Literal::Ends(end) => end,
    };
    let separators = bytes[end..]
        .iter()
        .take(MAX_SEPARATORS)
        .take_while(|byte| label.separators.contains(byte))
        .count();
    let body_start = end + separators;
    if body_start == bytes.len() && more {
        return Found::Undecided(at);
    }
    if separators < label.min_separators {
        return Found::Nothing;
    }
    body_secret(bytes, body_start, body_start, label.body, label.min, more)
}

/// The password of `scheme://user:password@host` when `at` is the `://`.
fn url_password(bytes: &[u8], at: usize, more: bool) -> Found {
    let undecided = if more {
        Found::Undecided(at)
    } else {
        Found::Nothing
    };
    let start = match literal(bytes, at, b"://", false, more) {
        Literal::No => return Found::Nothing,
        Literal::Partial => return undecided,
        Literal::Ends(end) => end,
    };
    let user = bytes[start..]
        .iter()
        .take(MAX_USERINFO)
        .take_while(|&&byte| is_userinfo_byte(byte) && byte != b':')
        .count();
    let colon = start + user;
    match bytes.get(colon) {
        None => return undecided,
        Some(b':') => {}
        Some(_) => return Found::Nothing,
    }
    let password = bytes[colon + 1..]
        .iter()
        .take(MAX_USERINFO)
        .take_while(|&&byte| is_userinfo_byte(byte))
        .count();
    let at_sign = colon + 1 + password;
    match bytes.get(at_sign) {
        None => undecided,
        Some(b'@') if password > 0 => Found::Secret {
            range: colon + 1..at_sign,
            open: None,
        },
        Some(_) => Found::Nothing,
    }
}

/// What a URL's user name or password is made of (RFC 3986's unreserved and sub-delims,
/// percent escapes, and `:` inside a password).
fn is_userinfo_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"-._~%!$&'()*+,;=:".contains(&byte)
}

/// Matches the exact secret `value` at `at`, one line break allowed between two characters.
pub(super) fn value_at(bytes: &[u8], at: usize, value: &[u8], more: bool) -> Found {
    // After a backslash that escapes (in JSON), the backslash goes too: a lone `\` before
    // `[REDACTED]` would escape its bracket and break the line's JSON.
    let start = escaped_start(bytes, at);
    match literal(bytes, at, value, false, more) {
        Literal::No => Found::Nothing,
        Literal::Partial => Found::Undecided(start),
        Literal::Ends(end) => Found::Secret {
            range: start..end,
            open: None,
        },
    }
}

/// `at`, or the position before it when an odd run of backslashes ends there.
fn escaped_start(bytes: &[u8], at: usize) -> usize {
    let backslashes = bytes[..at]
        .iter()
        .rev()
        .take_while(|&&byte| byte == b'\\')
        .count();
    if backslashes % 2 == 1 {
        at - 1
    } else {
        at
    }
}

/// The bytes a shape, a label or a URL password may start with (a fast filter): anywhere, or
/// only at the start of a word.
#[derive(Debug, Clone, Copy)]
pub(super) struct ShapeStarts {
    pub anywhere: [bool; 256],
    pub word: [bool; 256],
}

impl ShapeStarts {
    pub fn new() -> Self {
        let mut starts = Self {
            anywhere: [false; 256],
            word: [false; 256],
        };
        for shape in PREFIXED.iter().chain(&DOTTED_PREFIXED) {
            starts.word[usize::from(shape.prefix.as_bytes()[0])] = true;
        }
        for label in &LABELLED {
            let table = if label.word_start {
                &mut starts.word
            } else {
                &mut starts.anywhere
            };
            let first = label.label.as_bytes()[0];
            table[usize::from(first.to_ascii_lowercase())] = true;
            table[usize::from(first.to_ascii_uppercase())] = true;
        }
        starts.anywhere[usize::from(b':')] = true;
        starts
    }

    /// Whether a shape may start at `at`.
    pub fn at(&self, bytes: &[u8], at: usize) -> bool {
        let byte = usize::from(bytes[at]);
        self.anywhere[byte] || (self.word[byte] && word_start(bytes, at))
    }
}
