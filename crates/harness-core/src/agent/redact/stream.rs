//! Redacting output that arrives in pieces of any size, in constant memory: each piece goes out
//! at once, except the few bytes at its end where a secret may be beginning; a key whose body
//! reaches the end goes out redacted at once, and the rest of its body is swallowed as it comes.

use std::ops::Range;

use super::shapes::{self, body_run, line_break, shape_at, value_at, Body, Break, Found};
use super::{Redactor, REDACTED};

/// Bytes already delivered that stay in front of the next ones, so that a word start or a
/// JSON escape just before a cut is still seen.
const CONTEXT_BYTES: usize = 8;

/// Redacts output that arrives in pieces of any size, as an agent's does through a pipe. What
/// is held back is bounded by the longest secret value (a few bytes for key shapes), so memory
/// stays constant however long a line is, and no secret survives however the output is cut.
#[derive(Debug)]
pub struct RedactingStream<'a> {
    redactor: &'a Redactor,
    /// Up to [`CONTEXT_BYTES`] delivered bytes, then the bytes not delivered yet.
    buffer: Vec<u8>,
    /// How many bytes at the start of `buffer` were delivered already.
    delivered: usize,
    /// Set inside the body of a key already redacted: more bytes of this body are swallowed.
    continuing: Option<Body>,
}

impl<'a> RedactingStream<'a> {
    /// A stream redacted by `redactor`.
    pub fn new(redactor: &'a Redactor) -> Self {
        Self {
            redactor,
            buffer: Vec::new(),
            delivered: 0,
            continuing: None,
        }
    }

    /// Takes the next piece of output; hands what can go out now, redacted, to `deliver`.
    pub fn push(&mut self, bytes: &[u8], deliver: impl FnOnce(&[u8])) {
        self.buffer.extend_from_slice(bytes);
        self.flush(true, deliver);
    }

    /// The end of the output: hands the rest, redacted, to `deliver`.
    pub fn finish(&mut self, deliver: impl FnOnce(&[u8])) {
        self.flush(false, deliver);
        self.buffer.clear();
        self.delivered = 0;
    }

    /// How many bytes are held back now (for the tests of bounded memory).
    pub fn held_back(&self) -> usize {
        self.buffer.len() - self.delivered
    }

    fn flush(&mut self, more: bool, deliver: impl FnOnce(&[u8])) {
        let plan = plan(
            self.redactor,
            &self.buffer,
            self.delivered,
            self.continuing,
            more,
        );
        if plan.cut > self.delivered {
            deliver(&render(
                &self.buffer[..plan.cut],
                self.delivered,
                &plan.secrets,
            ));
        }
        self.continuing = plan.continuing;
        let keep = plan.cut.saturating_sub(CONTEXT_BYTES);
        self.buffer.drain(..keep);
        self.delivered = plan.cut - keep;
    }
}

/// A secret in the buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Secret {
    range: Range<usize>,
    /// Whether its first piece gets a [`REDACTED`] (not when it goes on from an earlier one).
    marked: bool,
}

/// What to deliver now.
#[derive(Debug, Default)]
struct Plan {
    /// Deliver the buffer up to here.
    cut: usize,
    /// The secrets before `cut`, sorted and apart.
    secrets: Vec<Secret>,
    /// The body the stream is inside of at `cut`.
    continuing: Option<Body>,
}

/// Where the buffer may be cut, and the secrets before the cut: every secret that starts after
/// `from` is found; the cut comes before any place where one may still be beginning, and never
/// inside a secret, except the body of a key that is already known to be one.
fn plan(
    redactor: &Redactor,
    buffer: &[u8],
    from: usize,
    continuing: Option<Body>,
    more: bool,
) -> Plan {
    let mut secrets = Vec::new();
    // The earliest secret that may go on past the end: where it starts, its body, where it ends.
    let mut open: Option<(usize, Body, usize)> = None;
    if let Some(body) = continuing {
        let run = body_run(buffer, from, body, 0, more);
        if run.count == 0 && run.open {
            // Only (part of) a line break so far: the key may go on after it.
            return Plan {
                cut: from,
                secrets,
                continuing,
            };
        }
        if run.count > 0 {
            secrets.push(Secret {
                range: from..run.end,
                marked: false,
            });
            if run.open {
                open = Some((from, body, run.end));
            }
        }
    }
    let mut hold = buffer.len();
    for at in from..buffer.len() {
        if !redactor.may_start(buffer, at) {
            continue;
        }
        redactor.each_found(buffer, at, more, |found| match found {
            Found::Nothing => {}
            Found::Undecided(start) => hold = hold.min(start),
            Found::Secret { range, open: body } => {
                if let (Some(body), None) = (body, open) {
                    open = Some((range.start, body, range.end));
                }
                secrets.push(Secret {
                    range,
                    marked: true,
                });
            }
        });
    }
    if more && buffer.last() == Some(&b'\\') {
        // It may escape what comes next, which may be the start of a secret value.
        hold = hold.min(buffer.len() - 1);
    }
    let mut plan = cut_at(merge(secrets), from, hold.max(from), open);
    if plan.cut == from {
        // Nothing goes out: the stream stays where it was.
        plan.continuing = continuing;
    }
    plan
}

/// Sorts and joins overlapping secrets; a joined one is marked as its first one is. Secrets
/// that only touch stay apart, each with its mark.
fn merge(mut secrets: Vec<Secret>) -> Vec<Secret> {
    secrets.sort_by_key(|secret| (secret.range.start, secret.marked));
    let mut merged: Vec<Secret> = Vec::with_capacity(secrets.len());
    for secret in secrets {
        match merged.last_mut() {
            Some(last) if secret.range.start < last.range.end => {
                last.range.end = last.range.end.max(secret.range.end);
            }
            _ => merged.push(secret),
        }
    }
    merged
}

/// The plan for `secrets` when what is before `from` went out already, nothing at or after
/// `hold` may go out yet, and `open` (start, body, end) is a key that may go on past the end.
fn cut_at(
    mut secrets: Vec<Secret>,
    from: usize,
    hold: usize,
    open: Option<(usize, Body, usize)>,
) -> Plan {
    let mut cut = hold;
    let mut continuing = None;
    if let Some((start, body, end)) = open {
        // The line break after its last byte (whole or begun) waits: the key may go on after it.
        cut = cut.min(end);
        if cut > start {
            continuing = Some(body);
        }
    }
    // Never cut inside a secret, except inside the key that goes on (a secret that straddles
    // the cut then holds that key: it reaches the end).
    if continuing.is_none() {
        if let Some(straddling) = secrets
            .iter()
            .find(|secret| secret.range.start < cut && cut < secret.range.end)
        {
            cut = straddling.range.start.max(from);
        }
    }
    secrets.retain(|secret| secret.range.start < cut);
    if let Some(last) = secrets.last_mut() {
        last.range.end = last.range.end.min(cut);
    }
    Plan {
        cut,
        secrets,
        continuing,
    }
}

/// `buffer[from..]` with each secret replaced: one [`REDACTED`] for each of its pieces between
/// line breaks, which are kept (they are what the output's lines and JSON events hang on).
fn render(buffer: &[u8], from: usize, secrets: &[Secret]) -> Vec<u8> {
    let mut out = Vec::with_capacity(buffer.len() - from);
    let mut at = from;
    for secret in secrets {
        let start = secret.range.start.max(from);
        out.extend_from_slice(&buffer[at..start]);
        let mut piece_is_new = secret.marked || start > secret.range.start;
        let mut in_piece = false;
        let mut index = start;
        while index < secret.range.end {
            if let Break::Whole(length) = line_break(&buffer[..secret.range.end], index) {
                out.extend_from_slice(&buffer[index..index + length]);
                index += length;
                piece_is_new = true;
                in_piece = false;
                continue;
            }
            if !in_piece && piece_is_new {
                out.extend_from_slice(REDACTED.as_bytes());
            }
            in_piece = true;
            index += 1;
        }
        at = secret.range.end.max(at);
    }
    out.extend_from_slice(&buffer[at..]);
    out
}

/// Flags of [`Redactor::starts`]: a byte may start a secret value, a shape anywhere, or a shape
/// at the start of a word.
pub(super) const VALUE: u8 = 1;
pub(super) const ANYWHERE: u8 = 2;
pub(super) const AT_WORD: u8 = 4;

impl Redactor {
    /// Whether anything may start at `at` (a fast filter, called for every byte): most bytes
    /// start nothing, or start a shape only at the start of a word, which they are not at.
    // Inlined into the scan, or the call costs more than the filter it makes.
    #[inline(always)]
    fn may_start(&self, buffer: &[u8], at: usize) -> bool {
        let byte = buffer[at];
        let flags = self.starts[usize::from(byte)];
        // Common letters start labels and shapes (`s`, `p`, `b` at a word): the second byte
        // rules out nearly all of them before any matcher runs. One look-up of the pair, which
        // also rules out a first byte that starts nothing (it has no seconds), keeps this
        // branch, taken for every byte, predictable.
        let ruled_out = match buffer.get(at + 1) {
            Some(&next) => !self.seconds.allows(byte, next),
            None => flags == 0,
        };
        if ruled_out && self.filtering() {
            return false;
        }
        flags & (VALUE | ANYWHERE) != 0
            || (flags & AT_WORD != 0
                && (at == 0
                    || !shapes::is_key_byte(buffer[at - 1])
                    || shapes::word_start(buffer, at)))
    }

    /// Whether the fast filters of [`Redactor::may_start`] and [`Redactor::each_found`] rule
    /// places out: always, but in the tests that check that they only ever skip what no
    /// matcher would find.
    #[inline(always)]
    fn filtering(&self) -> bool {
        #[cfg(test)]
        return !self.unfiltered;
        #[cfg(not(test))]
        true
    }

    /// The same redactor without its fast filters: every place goes to the matchers.
    #[cfg(test)]
    pub(super) fn unfiltered(&self) -> Self {
        Self {
            unfiltered: true,
            ..self.clone()
        }
    }

    /// Hands `found` every secret that starts at `at` in `buffer`, and every place where one
    /// may still be beginning.
    fn each_found(&self, buffer: &[u8], at: usize, more: bool, mut found: impl FnMut(Found)) {
        // Those `may_start` lets through (`se` of `second`, `pr` of `prompt`) mostly go no
        // further than the third byte; it rules them out likewise when no line break may stand
        // before it. (Here, not in `may_start`: that one runs for every byte and stays small.)
        if let [first, second, third, ..] = buffer[at..] {
            let breaks = shapes::LINE_BREAK_FIRSTS;
            if !breaks.contains(&second)
                && !breaks.contains(&third)
                && !self.thirds.allows([first, second, third])
                && self.filtering()
            {
                return;
            }
        }
        if self.shape_starts.at(buffer, at) {
            found(shape_at(buffer, at, more));
        }
        let byte = buffer[at];
        if self.starts[usize::from(byte)] & VALUE != 0 {
            for value in self.values.iter().filter(|value| value[0] == byte) {
                found(value_at(buffer, at, value, more));
            }
        }
    }
}

/// For each byte, the bytes that may come right after it at the start of a secret, as a bit
/// set: the second byte of a shape, a label, `://` or a secret value that starts with it, or
/// the first byte of a line break (which may stand before any byte of a secret but its first).
/// Every matcher gives nothing where the second byte is none of these.
#[derive(Debug, Clone)]
pub(super) struct Seconds(Box<[[u64; 4]; 256]>);

impl Seconds {
    /// The bytes that may follow the first bytes of `values` and of the shapes.
    pub(super) fn new(values: &[Vec<u8>]) -> Self {
        let mut seconds = Self(Box::new([[0; 4]; 256]));
        let mut openings = shapes::ShapeStarts::openings();
        for value in values {
            match value[..] {
                [first, second, ..] => openings.push([first, second]),
                // Never so (values are at least `MIN_SECRET_LEN` long), but a value of one
                // byte would be whole whatever follows it.
                [first] => openings.extend((0..=u8::MAX).map(|second| [first, second])),
                [] => {}
            }
        }
        for [first, second] in openings {
            seconds.allow(first, second);
            for line_break in shapes::LINE_BREAK_FIRSTS {
                seconds.allow(first, line_break);
            }
        }
        seconds
    }

    fn allow(&mut self, first: u8, second: u8) {
        self.0[usize::from(first)][usize::from(second >> 6)] |= 1 << (second & 63);
    }

    fn allows(&self, first: u8, second: u8) -> bool {
        self.0[usize::from(first)][usize::from(second >> 6)] & (1 << (second & 63)) != 0
    }
}

/// The first three bytes of every shape, label, `://` and secret value, as [`Seconds`] has
/// their first two: where neither the second nor the third byte may start a line break, a
/// secret starts only with one of these. Kept as a set of hashes (a bit each): two openings
/// may share a bit, which only lets a few more places through to the matchers, and a look-up
/// costs a multiplication (a binary search over the openings cost as much as it saved).
#[derive(Debug, Clone)]
pub(super) struct Thirds([u64; Thirds::WORDS]);

impl Thirds {
    const BITS: u32 = 12;
    const WORDS: usize = (1 << Self::BITS) / 64;

    pub(super) fn new(values: &[Vec<u8>]) -> Self {
        let mut openings = shapes::ShapeStarts::openings3();
        let mut thirds = Self([0; Self::WORDS]);
        for value in values {
            match value[..] {
                [first, second, third, ..] => openings.push([first, second, third]),
                // Never so (values are at least `MIN_SECRET_LEN` long), but a shorter value
                // could be whole before its third byte: all are allowed.
                _ => thirds.0 = [u64::MAX; Self::WORDS],
            }
        }
        for opening in openings {
            let bit = Self::bit(opening);
            thirds.0[bit / 64] |= 1 << (bit % 64);
        }
        thirds
    }

    fn bit(opening: [u8; 3]) -> usize {
        let [a, b, c] = opening;
        let packed = u32::from_le_bytes([a, b, c, 0]);
        // Fibonacci hashing: the top bits of the product mix all three bytes.
        (packed.wrapping_mul(0x9E37_79B1) >> (32 - Self::BITS)) as usize
    }

    fn allows(&self, opening: [u8; 3]) -> bool {
        let bit = Self::bit(opening);
        self.0[bit / 64] & (1 << (bit % 64)) != 0
    }
}
