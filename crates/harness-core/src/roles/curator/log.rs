//! The log of a mission: every line ever appended to raw.md, now either in an archive chunk
//! (`archive/raw-000001.md`, `archive/raw-000002.md`, … verbatim, oldest first) or still in
//! raw.md. Reading it recovers from a pass that was killed between writing a chunk and
//! truncating raw.md; truncating it plans the next chunk and the new raw.md.
//!
//! raw.md's first line, once anything was archived, is the curator's note naming the last chunk
//! its older lines went to. A chunk numbered past that note was written by a pass that never got
//! to truncate raw.md: its lines are still at the top of raw.md and are counted once.

use std::collections::BTreeMap;

use crate::state::memory::{RawEntry, RawLineError};

use super::{short_id, Background, Cancelled};

/// The file name of archive chunk `seq`.
pub fn chunk_name(seq: u32) -> String {
    format!("raw-{seq:06}.md")
}

/// The number of an archive chunk from its file name, if it is one.
pub fn chunk_seq(name: &str) -> Option<u32> {
    let digits = name.strip_prefix("raw-")?.strip_suffix(".md")?;
    (digits.len() == 6 && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
}

/// raw.md's first line after a pass archived through chunk `seq`.
pub fn header(seq: u32) -> String {
    format!(
        "<!-- curator: older entries are in archive/, verbatim (through {}) -->",
        chunk_name(seq)
    )
}

/// The chunk number in raw.md's first line, if it is the curator's note.
fn header_seq(line: &[u8]) -> Option<u32> {
    let line = std::str::from_utf8(line).ok()?;
    let name = line
        .strip_prefix("<!-- curator: ")?
        .split("(through ")
        .nth(1)?
        .strip_suffix(") -->")?;
    chunk_seq(name)
}

/// One line of the log, as written, and where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// The line's bytes, without its newline.
    pub bytes: Vec<u8>,
    /// `raw.md` or `archive/raw-000001.md`.
    pub file: String,
    /// 1-based line number in that file.
    pub number: usize,
    /// The entry, or why the line is not one (it is kept all the same).
    pub entry: Result<RawEntry, RawLineError>,
}

impl Line {
    fn new(bytes: &[u8], file: &str, number: usize) -> Self {
        let entry = std::str::from_utf8(bytes)
            .map_err(|_| RawLineError {
                reason: "not valid UTF-8".into(),
            })
            .and_then(RawEntry::parse);
        Self {
            bytes: bytes.to_vec(),
            file: file.to_string(),
            number,
            entry,
        }
    }

    /// The entry's id: a hash of the line, so the same line always has the same id.
    pub fn id(&self) -> String {
        short_id(&self.bytes)
    }

    /// The line as text (invalid UTF-8 replaced), for reports.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }
}

/// The whole log, read from the archive chunks and raw.md.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Log {
    /// The lines of the archive chunks, oldest chunk first.
    pub archived: Vec<Line>,
    /// raw.md's lines that are not archived yet.
    pub raw: Vec<Line>,
    /// The highest chunk number in use (in archive/ or named by raw.md's note).
    pub last_chunk: u32,
    /// What the reading had to repair, for the report.
    pub warnings: Vec<String>,
}

impl Log {
    /// Every line, archived ones first.
    pub fn lines(&self) -> impl Iterator<Item = &Line> {
        self.archived.iter().chain(&self.raw)
    }
}

/// The non-blank lines of a file, with their 1-based numbers.
fn split_lines(bytes: &[u8]) -> Vec<(usize, &[u8])> {
    bytes
        .split(|&b| b == b'\n')
        .enumerate()
        .filter(|(_, line)| !line.iter().all(u8::is_ascii_whitespace))
        .map(|(index, line)| (index + 1, line))
        .collect()
}

/// Reads the log from raw.md's bytes and the archive chunks (`(number, bytes)`, any order).
pub fn read(raw: &[u8], chunks: &[(u32, Vec<u8>)]) -> Log {
    match read_unless(raw, chunks, &|| false) {
        Ok(log) => log,
        Err(Cancelled) => unreachable!("a read that is never cancelled"),
    }
}

/// [`read`], asking `cancel` at every line: a million lines take a while.
pub fn read_unless(
    raw: &[u8],
    chunks: &[(u32, Vec<u8>)],
    cancel: &dyn Fn() -> bool,
) -> Result<Log, Cancelled> {
    let parse = |file: &str, lines: Vec<(usize, &[u8])>| -> Result<Vec<Line>, Cancelled> {
        let mut parsed = Background::new(Vec::with_capacity(lines.len()));
        for (number, line) in lines {
            if cancel() {
                return Err(Cancelled);
            }
            parsed.push(Line::new(line, file, number));
        }
        Ok(parsed.into_inner())
    };
    let mut chunks: Vec<&(u32, Vec<u8>)> = chunks.iter().collect();
    chunks.sort_by_key(|(seq, _)| *seq);
    let mut log = Background::new(Log::default());
    for (seq, bytes) in &chunks {
        let file = format!("archive/{}", chunk_name(*seq));
        log.archived.extend(parse(&file, split_lines(bytes))?);
    }
    let mut raw_lines = split_lines(raw);
    let noted = match raw_lines.first() {
        Some((_, first)) => header_seq(first),
        None => None,
    };
    if noted.is_some() {
        raw_lines.remove(0);
    }
    let noted = noted.unwrap_or(0);
    let last_in_archive = chunks.last().map_or(0, |(seq, _)| *seq);
    log.last_chunk = noted.max(last_in_archive);
    if noted > last_in_archive {
        log.warnings.push(format!(
            "raw.md says its older entries are in archive/{}, but archive/ ends at {}",
            chunk_name(noted),
            if last_in_archive == 0 {
                "no chunk at all".to_string()
            } else {
                chunk_name(last_in_archive)
            }
        ));
    }
    for (seq, bytes) in chunks.iter().filter(|(seq, _)| *seq > noted) {
        let archived: Vec<&[u8]> = split_lines(bytes).into_iter().map(|(_, l)| l).collect();
        let at_top = raw_lines.len() >= archived.len()
            && raw_lines.iter().zip(&archived).all(|((_, r), a)| r == a);
        if at_top {
            // The pass that wrote this chunk was stopped before it truncated raw.md.
            raw_lines.drain(..archived.len());
        } else {
            let mut left: BTreeMap<&[u8], usize> = BTreeMap::new();
            for line in &archived {
                *left.entry(line).or_default() += 1;
            }
            let before = raw_lines.len();
            raw_lines.retain(|(_, line)| match left.get_mut(line) {
                Some(count) if *count > 0 => {
                    *count -= 1;
                    false
                }
                _ => true,
            });
            log.warnings.push(format!(
                "raw.md does not name archive/{} as archived (its first line was edited?); \
                 {} of its lines that are also in that chunk were counted once",
                chunk_name(*seq),
                before - raw_lines.len()
            ));
        }
    }
    log.raw = parse("raw.md", raw_lines)?;
    Ok(log.into_inner())
}

/// What truncating raw.md writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Truncation {
    /// A new archive chunk, `(number, bytes)`, when lines leave raw.md.
    pub chunk: Option<(u32, Vec<u8>)>,
    /// raw.md's new content in place of the bytes that were read, when it changes.
    pub raw: Option<Vec<u8>>,
    /// How many lines go to the new chunk.
    pub archived_lines: usize,
}

/// Keeps raw.md's last `keep` lines and plans a chunk for the rest. `raw` is raw.md as read.
pub fn truncate(log: &Log, raw: &[u8], keep: usize) -> Truncation {
    let split = log.raw.len().saturating_sub(keep);
    let (leaving, kept) = log.raw.split_at(split);
    let chunk = (!leaving.is_empty()).then(|| {
        let mut bytes = Vec::new();
        for line in leaving {
            bytes.extend_from_slice(&line.bytes);
            bytes.push(b'\n');
        }
        (log.last_chunk + 1, bytes)
    });
    let through = chunk.as_ref().map_or(log.last_chunk, |(seq, _)| *seq);
    let mut new_raw = Vec::new();
    if through > 0 {
        new_raw.extend_from_slice(header(through).as_bytes());
        new_raw.push(b'\n');
    }
    for line in kept {
        new_raw.extend_from_slice(&line.bytes);
        new_raw.push(b'\n');
    }
    Truncation {
        archived_lines: leaving.len(),
        raw: (new_raw != raw).then_some(new_raw),
        chunk,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(n: usize) -> String {
        format!(
            "[2026-04-24T10:00:{:02}Z] worker F-1 TRICK: tip {n}",
            n % 60
        )
    }

    fn raw_of(lines: &[String]) -> Vec<u8> {
        lines
            .iter()
            .flat_map(|l| format!("{l}\n").into_bytes())
            .collect()
    }

    fn texts(lines: &[Line]) -> Vec<String> {
        lines.iter().map(Line::text).collect()
    }

    #[test]
    fn truncation_archives_all_but_the_last_lines_and_notes_it() {
        let lines: Vec<String> = (0..15).map(entry).collect();
        let raw = raw_of(&lines);
        let log = read(&raw, &[]);
        let cut = truncate(&log, &raw, 10);
        let (seq, chunk) = cut.chunk.clone().unwrap();
        assert_eq!(seq, 1);
        assert_eq!(chunk, raw_of(&lines[..5]));
        let new_raw = String::from_utf8(cut.raw.clone().unwrap()).unwrap();
        assert!(new_raw.starts_with(&format!("{}\n", header(1))));
        assert_eq!(new_raw.lines().count(), 11);
        // Read back: the same lines, once each.
        let after = read(new_raw.as_bytes(), &[(1, chunk)]);
        assert_eq!(after.lines().map(Line::text).collect::<Vec<_>>(), lines);
        assert!(after.warnings.is_empty());
        assert_eq!(truncate(&after, new_raw.as_bytes(), 10).raw, None);
    }

    #[test]
    fn a_chunk_written_by_a_killed_pass_is_counted_once() {
        let lines: Vec<String> = (0..15).map(entry).collect();
        let raw = raw_of(&lines);
        let (_, chunk) = truncate(&read(&raw, &[]), &raw, 10).chunk.unwrap();
        // Killed after the chunk, before raw.md was truncated.
        let log = read(&raw, &[(1, chunk.clone())]);
        assert_eq!(texts(&log.archived), lines[..5]);
        assert_eq!(texts(&log.raw), lines[5..]);
        assert!(log.warnings.is_empty());
        let cut = truncate(&log, &raw, 10);
        assert_eq!(cut.chunk, None);
        assert!(String::from_utf8(cut.raw.unwrap())
            .unwrap()
            .starts_with(&header(1)));
    }

    #[test]
    fn identical_lines_across_the_cut_are_both_kept() {
        let mut lines: Vec<String> = (0..11).map(entry).collect();
        lines[1] = lines[0].clone();
        let raw = raw_of(&lines);
        let cut = truncate(&read(&raw, &[]), &raw, 10);
        let chunk = cut.chunk.unwrap();
        let after = read(&cut.raw.unwrap(), &[chunk]);
        assert_eq!(after.lines().map(Line::text).collect::<Vec<_>>(), lines);
    }

    #[test]
    fn malformed_lines_are_kept_verbatim_and_blank_ones_skipped() {
        let raw = b"my own note\n\n  \n\xff bytes\n[2026-04-24T10:00:00Z] worker F-1 LESSON: x\n";
        let log = read(raw, &[]);
        assert_eq!(log.raw.len(), 3);
        assert_eq!(log.raw[0].number, 1);
        assert!(log.raw[0].entry.is_err());
        assert_eq!(log.raw[1].bytes, b"\xff bytes");
        assert_eq!(log.raw[1].number, 4);
        assert!(log.raw[2].entry.is_ok());
    }

    #[test]
    fn a_lost_note_still_counts_archived_lines_once() {
        let lines: Vec<String> = (0..12).map(entry).collect();
        // The note was deleted by hand, and the lines that were archived pasted back in between.
        let raw = raw_of(&lines[1..]);
        let log = read(&raw, &[(1, raw_of(&lines[..3]))]);
        assert_eq!(log.lines().count(), 12);
        assert_eq!(log.warnings.len(), 1);
        assert!(log.warnings[0].contains("counted once"));
    }

    #[test]
    fn chunk_names_round_trip() {
        assert_eq!(chunk_seq(&chunk_name(42)), Some(42));
        assert_eq!(chunk_seq("raw-1.md"), None);
        assert_eq!(chunk_seq("demoted.md"), None);
        assert_eq!(header_seq(header(7).as_bytes()), Some(7));
    }
}
