//! Append-only files, whose records are appended whole and never rewritten: the attempts log (a
//! JSON record a line) and the notes (sections, each ended by a marker line). A record counts
//! once its terminator is written, so a kill in the middle of an append leaves at most a torn
//! tail: readers drop what follows the last terminator ([`complete_len`], [`read_lines`]), and
//! the next append cuts it off before it writes. Flushing is the caller's choice ([`Appended::
//! sync`], [`sync`]): see the durability policy in DESIGN.md.

use std::fs::File;
use std::io::{self, BufRead, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::base::fs::{self, Dir, Mode};

/// A record just appended, and the file it went to.
#[derive(Debug)]
pub struct Appended {
    file: File,
    /// The file was empty (or missing) before: its name may not have reached the disk yet.
    was_empty: bool,
}

impl Appended {
    /// Whether the file was empty (or missing) before this append.
    pub fn was_empty(&self) -> bool {
        self.was_empty
    }

    /// Flushes what was appended to the disk (and the file's name, if it is new).
    pub fn sync(&self, path: &Path) -> io::Result<()> {
        self.file.sync_data()?;
        if self.was_empty {
            Dir::parent_of(path)?.0.sync()?;
        }
        Ok(())
    }
}

/// Appends `record`, which ends with `terminator`, to `path` in one write, creating the file if
/// need be. What follows the last terminator first goes to `keep_tail`: `Some(bytes)`, or `None`
/// when the file holds no terminator at all (the whole file, perhaps empty, is then the tail).
/// A tail it keeps (a hand edit, a file an older version wrote whole) is ended with a terminator
/// before the record; one it refuses (torn by a kill) is cut off. A write that fails (a full
/// disk) takes back what it wrote.
pub fn append(
    path: &Path,
    record: &[u8],
    terminator: &[u8],
    keep_tail: impl Fn(Option<&[u8]>) -> bool,
) -> io::Result<Appended> {
    debug_assert!(record.ends_with(terminator));
    let mut file = fs::open(path, Mode::ReadAppend)?;
    let len = file.metadata()?.len();
    let complete = complete_len(&file, len, terminator)?;
    let kept = match complete {
        Some(end) if end == len => true,
        Some(end) => {
            let mut tail = vec![0; (len - end) as usize];
            file.read_exact_at(&mut tail, end)?;
            keep_tail(Some(&tail))
        }
        None => keep_tail(None),
    };
    let (keep, prefix) = match (kept, complete) {
        (true, Some(end)) if end == len => (len, &[][..]),
        (true, _) => (len, terminator),
        (false, end) => (end.unwrap_or(0), &[][..]),
    };
    if keep < len {
        file.set_len(keep)?;
    }
    if let Err(error) = file.write_all(&[prefix, record].concat()) {
        let _ = file.set_len(keep);
        return Err(error);
    }
    Ok(Appended {
        file,
        was_empty: len == 0,
    })
}

/// Flushes the file `path` to the disk (its data; its name is already there).
pub fn sync(path: &Path) -> io::Result<()> {
    fs::open(path, Mode::Read)?.sync_data()
}

/// How much of `file` (`len` bytes long) is whole records: the end of its last `terminator`;
/// `None` when it holds none.
pub fn complete_len(file: &File, len: u64, terminator: &[u8]) -> io::Result<Option<u64>> {
    const CHUNK: u64 = 64 * 1024;
    let width = terminator.len() as u64;
    if len < width {
        return Ok(None);
    }
    // Most often the file ends with a terminator: one small read.
    let mut last = vec![0; terminator.len()];
    file.read_exact_at(&mut last, len - width)?;
    if last == terminator {
        return Ok(Some(len));
    }
    // Backwards, chunk by chunk, each overlapping the next by a terminator's width.
    let mut end = len;
    loop {
        let start = end.saturating_sub(CHUNK);
        let mut chunk = vec![0; (end - start) as usize];
        file.read_exact_at(&mut chunk, start)?;
        if let Some(at) = rfind(&chunk, terminator) {
            return Ok(Some(start + (at + terminator.len()) as u64));
        }
        if start == 0 {
            return Ok(None);
        }
        end = start + width - 1;
    }
}

/// Where `needle` last occurs in `haystack`.
pub fn rfind(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || haystack.len() < needle.len() {
        return None;
    }
    (0..=haystack.len() - needle.len())
        .rev()
        .find(|&at| haystack[at..].starts_with(needle))
}

/// Calls `each` with every whole line of `path` (without its newline) and its number, in order,
/// reading in bounded memory; a torn last line (no newline) is dropped. `Ok(false)` when the
/// file does not exist; a read that fails is `io_error`'s error.
pub fn read_lines<E>(
    path: &Path,
    io_error: impl Fn(io::Error) -> E,
    mut each: impl FnMut(usize, &[u8]) -> Result<(), E>,
) -> Result<bool, E> {
    let file = match fs::open(path, Mode::Read) {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(error) => return Err(io_error(error)),
    };
    let mut reader = io::BufReader::with_capacity(64 * 1024, file);
    let mut line = Vec::new();
    for number in 1.. {
        line.clear();
        reader.read_until(b'\n', &mut line).map_err(&io_error)?;
        match line.last() {
            Some(b'\n') => each(number, &line[..line.len() - 1])?,
            // The end, or a torn last line.
            _ => break,
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(path: &Path) -> Vec<String> {
        let mut seen = Vec::new();
        read_lines(
            path,
            |e| e,
            |_, line| {
                seen.push(String::from_utf8(line.to_vec()).unwrap());
                Ok::<(), io::Error>(())
            },
        )
        .unwrap();
        seen
    }

    #[test]
    fn a_torn_last_line_is_dropped_on_reading_and_cut_before_the_next_append() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.jsonl");
        assert!(!read_lines(&path, |e| e, |_, _| Ok(())).unwrap());
        let torn = |_: Option<&[u8]>| false;
        append(&path, b"one\n", b"\n", torn).unwrap();
        append(&path, b"two\n", b"\n", torn).unwrap();
        // A kill in the middle of the third append.
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"{\"thr")
            .unwrap();
        assert_eq!(lines(&path), ["one", "two"]);
        append(&path, b"four\n", b"\n", torn).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"one\ntwo\nfour\n");
        // Only a torn line: cut to nothing.
        std::fs::write(&path, b"torn").unwrap();
        assert_eq!(lines(&path), Vec::<String>::new());
        append(&path, b"five\n", b"\n", torn).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"five\n");
    }

    #[test]
    fn the_last_terminator_is_found_across_chunks_and_a_tail_is_kept_or_cut_as_told() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notes.md");
        let end = b"<!-- end -->\n";
        // Torn: it starts like a record. Anything else, or a file without a terminator, is kept.
        let keep = |tail: Option<&[u8]>| tail.is_none_or(|tail| !tail.starts_with(b"##"));
        // A long torn tail, longer than a chunk, after the last whole record.
        let mut bytes = b"## first\n<!-- end -->\n## ".to_vec();
        bytes.extend(std::iter::repeat_n(b'x', 200_000));
        std::fs::write(&path, &bytes).unwrap();
        let file = File::open(&path).unwrap();
        let len = file.metadata().unwrap().len();
        assert_eq!(complete_len(&file, len, end).unwrap(), Some(22));
        append(&path, b"## second\n<!-- end -->\n", end, keep).unwrap();
        assert_eq!(
            std::fs::read(&path).unwrap(),
            b"## first\n<!-- end -->\n## second\n<!-- end -->\n"
        );
        // A hand edit after the last record: kept, and ended.
        let mut edited = std::fs::read(&path).unwrap();
        edited.extend_from_slice(b"my own line");
        std::fs::write(&path, &edited).unwrap();
        append(&path, b"## third\n<!-- end -->\n", end, keep).unwrap();
        assert!(std::fs::read(&path)
            .unwrap()
            .ends_with(b"my own line<!-- end -->\n## third\n<!-- end -->\n"));
        // A file without any terminator (an older version wrote it whole): kept, and ended.
        std::fs::write(&path, b"## older notes\n").unwrap();
        append(&path, b"## new\n<!-- end -->\n", end, keep).unwrap();
        assert_eq!(
            std::fs::read(&path).unwrap(),
            b"## older notes\n<!-- end -->\n## new\n<!-- end -->\n"
        );
    }
}
