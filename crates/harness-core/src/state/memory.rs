//! The memory layers as the roles see them: L1 `raw.md` (append-only one-liners, appended under
//! its lock), and the reading of L2 `summary.md` and L4 `identity/<role>.md` for prompts.

use std::fmt;
use std::io;
use std::path::Path;

use crate::base::fs;
use crate::base::text::cut;
use crate::base::time::{self, Timestamp};
use crate::spec::features::FeatureId;
use crate::spec::layout::StateDir;
use crate::spec::role::Role;

/// The longest entry text kept; a longer line is cut (and marked) so raw.md stays one-liners.
pub const MAX_ENTRY_CHARS: usize = 500;
/// The most entries harvested from one invocation; the rest are counted, not appended, so a
/// flooding agent cannot flood memory (see [`dropped_entries_warning`]).
pub const MAX_ENTRIES_PER_INVOCATION: usize = 50;

/// What a role says on stderr when its agent printed `dropped` entries past
/// [`MAX_ENTRIES_PER_INVOCATION`] (the attempt's record counts them too).
pub fn dropped_entries_warning(dropped: usize) -> String {
    format!(
        "the agent printed {dropped} memory entries past the {MAX_ENTRIES_PER_INVOCATION} one \
         invocation may leave: they are not in raw.md (output.log has them)"
    )
}

/// The kind of a raw.md entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Tag {
    /// A trick that worked.
    Trick,
    /// A lesson learnt.
    Lesson,
    /// A decision taken.
    Decision,
    /// Something not to do.
    Avoid,
    /// A failure mode.
    Fail,
    /// An outcome line written by a role itself (`-`).
    Outcome,
}

impl Tag {
    /// The tags an agent may use, in the order the prompt lists them.
    pub const AGENT_TAGS: [Tag; 5] = [
        Tag::Trick,
        Tag::Lesson,
        Tag::Decision,
        Tag::Avoid,
        Tag::Fail,
    ];

    /// As written in raw.md.
    pub fn as_str(self) -> &'static str {
        match self {
            Tag::Trick => "TRICK",
            Tag::Lesson => "LESSON",
            Tag::Decision => "DECISION",
            Tag::Avoid => "AVOID",
            Tag::Fail => "FAIL",
            Tag::Outcome => "-",
        }
    }

    /// The tag written `text` in raw.md (`TRICK`, …, `-`).
    pub fn parse(text: &str) -> Option<Tag> {
        Tag::AGENT_TAGS
            .into_iter()
            .chain([Tag::Outcome])
            .find(|tag| tag.as_str() == text)
    }
}

/// One raw.md line: `[2026-04-24T10:05:12Z] worker F-023 TRICK: text`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawEntry {
    /// When it was appended.
    pub time: Timestamp,
    pub role: Role,
    /// The feature it is about; `None` is written `-`.
    pub feature: Option<FeatureId>,
    pub tag: Tag,
    /// One line of text.
    pub text: String,
}

impl fmt::Display for RawEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let feature = self.feature.as_ref().map(FeatureId::as_str).unwrap_or("-");
        write!(
            f,
            "[{}] {} {} {}: {}",
            time::format(self.time),
            self.role,
            feature,
            self.tag.as_str(),
            self.text
        )
    }
}

/// Why a raw.md line is not an entry: a hand edit, or a line some other tool wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawLineError {
    /// What is wrong, in a few words.
    pub reason: String,
}

impl fmt::Display for RawLineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

impl std::error::Error for RawLineError {}

impl RawEntry {
    /// Reads one raw.md line (without its newline), the inverse of `Display`: only the exact
    /// form the harness writes is an entry, so that `parse(line)?.to_string() == line`.
    pub fn parse(line: &str) -> Result<RawEntry, RawLineError> {
        let error = |reason: &str| RawLineError {
            reason: reason.to_string(),
        };
        let rest = line
            .strip_prefix('[')
            .ok_or_else(|| error("does not start with `[<UTC time>]`"))?;
        let (stamp, rest) = rest
            .split_once("] ")
            .ok_or_else(|| error("no `] ` after the time"))?;
        let time = chrono::DateTime::parse_from_rfc3339(stamp)
            .ok()
            .map(|time| time.with_timezone(&chrono::Utc))
            .filter(|time| time::format(*time) == stamp)
            .ok_or_else(|| {
                error("the time is not UTC RFC 3339 to the second (2026-04-24T10:05:12Z)")
            })?;
        let mut fields = rest.splitn(3, ' ');
        let (Some(role), Some(feature), Some(rest)) = (fields.next(), fields.next(), fields.next())
        else {
            return Err(error(
                "expected `<role> <FEATURE> <TAG>: <text>` after the time",
            ));
        };
        let role = Role::ALL
            .into_iter()
            .find(|r| r.as_str() == role)
            .ok_or_else(|| error("unknown role"))?;
        let feature = match feature {
            "-" => None,
            id => Some(FeatureId::parse(id).map_err(|_| error("invalid feature id"))?),
        };
        let (tag, text) = rest
            .split_once(':')
            .ok_or_else(|| error("no `:` after the tag"))?;
        let tag = Tag::parse(tag).ok_or_else(|| error("unknown tag"))?;
        let text = text
            .strip_prefix(' ')
            .ok_or_else(|| error("no space after `<TAG>:`"))?;
        Ok(RawEntry {
            time,
            role,
            feature,
            tag,
            text: text.to_string(),
        })
    }
}

/// If `line` of agent output is a memory entry (`TRICK: …` and the like, leading blanks
/// allowed), its tag and cleaned text.
pub fn harvest_line(line: &str) -> Option<(Tag, String)> {
    let line = line.trim_start();
    Tag::AGENT_TAGS.into_iter().find_map(|tag| {
        let rest = line.strip_prefix(tag.as_str())?.strip_prefix(':')?;
        let text = one_line(rest);
        (!text.is_empty()).then_some((tag, text))
    })
}

/// Makes `text` a single clean line: control characters become spaces, runs of blanks fold,
/// and anything past [`MAX_ENTRY_CHARS`] is cut with `…`.
pub fn one_line(text: &str) -> String {
    let mut cleaned = String::with_capacity(text.len().min(MAX_ENTRY_CHARS * 4));
    for word in text
        .split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|w| !w.is_empty())
    {
        if !cleaned.is_empty() {
            cleaned.push(' ');
        }
        cleaned.push_str(word);
        if cleaned.chars().count() > MAX_ENTRY_CHARS {
            break;
        }
    }
    cut(&cleaned, MAX_ENTRY_CHARS)
}

/// Appends `entries` to raw.md under its lock, all in one write so that lines from processes
/// appending at once never interleave or tear.
pub fn append_raw(state: &StateDir, entries: &[RawEntry]) -> io::Result<()> {
    if entries.is_empty() {
        return Ok(());
    }
    let mut text = String::new();
    for entry in entries {
        text.push_str(&entry.to_string());
        text.push('\n');
    }
    crate::base::atomic::append_lines(&state.raw(), &state.raw_lock(), &text)
}

/// The text of a memory file for a prompt, or `None` when it is missing or holds only blanks.
/// Invalid UTF-8 (a mangled hand edit) is shown with replacement characters rather than refused.
pub fn read_layer(path: &Path) -> io::Result<Option<String>> {
    match fs::read(path) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes).replace('\0', "");
            let text = text.trim_start_matches('\u{feff}').trim().to_string();
            Ok((!text.is_empty()).then_some(text))
        }
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(error),
    }
}

/// A memory file (summary.md) for a prompt: HTML comments are dropped, and so are the headings
/// with nothing under them (the curator keeps its sections, empty or not); a file with nothing
/// but headings and comments (a fresh template) counts as empty.
pub fn read_memory_layer(path: &Path) -> io::Result<Option<String>> {
    Ok(read_layer(path)?.and_then(|text| prompt_text(&text)))
}

/// `text` (a memory file) as a prompt gets it, or `None` when nothing substantial is left (see
/// [`read_memory_layer`]).
fn prompt_text(text: &str) -> Option<String> {
    let text = without_empty_sections(&strip_comments(text));
    let substantial = text.lines().any(|line| {
        let line = line.trim();
        !line.is_empty() && !line.starts_with('#')
    });
    substantial.then(|| text.trim().to_string())
}

/// An identity file as a prompt of its role carries it: as [`read_memory_layer`] reads it, with
/// nothing of why a line graduated (the date, the mission, the features and runs it was seen on:
/// one mission's names, which a prompt of every later mission must not carry), bounded by
/// [`identity_for_prompt`].
pub fn read_identity_layer(path: &Path) -> io::Result<Option<String>> {
    Ok(read_layer(path)?.and_then(|text| identity_prompt_text(&text)))
}

/// What [`read_identity_layer`] makes of an identity file's `text`.
fn identity_prompt_text(text: &str) -> Option<String> {
    // Graduated lines are told apart before the comments that say so are stripped: each gets
    // a mark at its start, and loses what follows its text.
    // A mark in the file itself (a stray control character) is no mark.
    let text = text.replace(GRADUATED_MARK, "");
    let marked: String = text
        .lines()
        .map(|line| match graduated_text(line) {
            Some(shown) => format!("{GRADUATED_MARK}{shown}\n"),
            None => format!("{line}\n"),
        })
        .collect();
    let shown = prompt_text(&marked)?;
    Some(identity_for_prompt(&shown).replace(GRADUATED_MARK, ""))
}

/// What the curator writes in a graduated line's comment, before why it graduated (see
/// `roles::curator::graduation`): `- <text> <!-- graduated <date> from mission <id>: <why>;
/// c:<item> … -->`.
pub const GRADUATED_COMMENT: &str = "<!-- graduated ";

/// What the curator wrote after a graduated line's text before the evidence went into its
/// comment: ` (graduated <date> from mission <id>: <why>)`, in the prompt's sight.
const GRADUATED_BEFORE: &str = " (graduated ";

/// Marks a graduated line in the text [`identity_for_prompt`] bounds: a control character,
/// removed from the file's text before and from the prompt's after.
const GRADUATED_MARK: char = '\u{1}';

/// For a graduated line of an identity file, its text without why it graduated (the comment
/// after the text, or in lines of an older format, the reason and the comment after it);
/// `None` for any other line.
fn graduated_text(line: &str) -> Option<&str> {
    if !line.trim_start().starts_with("- ") {
        return None;
    }
    let at = line
        .find(GRADUATED_COMMENT)
        .or_else(|| line.find(GRADUATED_BEFORE))?;
    Some(line[..at].trim_end())
}

/// How much of an identity file a prompt carries, in characters (~1,500 tokens): the file is
/// append-only and cross-mission, so without a bound it would grow with every mission.
pub const IDENTITY_PROMPT_CHARS: usize = 6_000;

/// An identity file (comments stripped, graduated lines marked) as a prompt carries it: whole
/// when it fits in [`IDENTITY_PROMPT_CHARS`]; else the user's own lines (headings, hand-written
/// bullets) first, then the graduated lines from the newest back, as many as fit, in the file's
/// order and with a line saying how many older graduated lines were left out (they stay in the
/// file).
fn identity_for_prompt(identity: &str) -> std::borrow::Cow<'_, str> {
    if identity.chars().count() <= IDENTITY_PROMPT_CHARS {
        return std::borrow::Cow::Borrowed(identity);
    }
    let lines: Vec<&str> = identity.lines().collect();
    let graduated = |line: &str| line.starts_with(GRADUATED_MARK);
    // The user's lines in file order, then the graduated ones newest first.
    let priority = (0..lines.len())
        .filter(|&i| !graduated(lines[i]))
        .chain((0..lines.len()).rev().filter(|&i| graduated(lines[i])));
    let mut keep = vec![false; lines.len()];
    let mut room = IDENTITY_PROMPT_CHARS;
    for index in priority {
        let cost = lines[index].chars().count() + 1;
        if cost > room {
            break;
        }
        room -= cost;
        keep[index] = true;
    }
    let left_out = (0..lines.len())
        .filter(|&i| !keep[i] && !lines[i].trim().is_empty())
        .count();
    let mut text: String = (0..lines.len())
        .filter(|&i| keep[i])
        .map(|i| format!("{}\n", lines[i]))
        .collect();
    text.push_str(&format!(
        "\n({left_out} lines left out to keep this layer short, the oldest graduated ones first; \
         all are in the identity file)"
    ));
    std::borrow::Cow::Owned(text)
}

/// The level of a Markdown heading (`## Avoid`: 2), or `None` for any other line.
fn heading_level(line: &str) -> Option<usize> {
    let hashes = line.chars().take_while(|&c| c == '#').count();
    let rest = &line[hashes..];
    (hashes > 0 && (rest.is_empty() || rest.starts_with(' '))).then_some(hashes)
}

/// `text` without the headings under which nothing stands before the next heading of the same
/// or a higher level (lines in a code fence are text, never headings), and without the runs of
/// blank lines that leaves.
pub fn without_empty_sections(text: &str) -> String {
    let mut fenced = false;
    let lines: Vec<(&str, Option<usize>)> = text
        .lines()
        .map(|line| {
            if line.trim_start().starts_with("```") {
                fenced = !fenced;
                return (line, None);
            }
            (line, if fenced { None } else { heading_level(line) })
        })
        .collect();
    let mut kept: Vec<&str> = Vec::with_capacity(lines.len());
    for (index, &(line, level)) in lines.iter().enumerate() {
        if let Some(level) = level {
            let section = lines[index + 1..]
                .iter()
                .take_while(|(_, next)| next.is_none_or(|next| next > level));
            if !section
                .clone()
                .any(|(text, next)| next.is_none() && !text.trim().is_empty())
            {
                continue;
            }
        }
        if line.trim().is_empty() && kept.last().is_none_or(|last| last.trim().is_empty()) {
            continue;
        }
        kept.push(line);
    }
    kept.join("\n").trim_end().to_string()
}

/// `text` without its HTML comments (`<!-- … -->`, possibly over several lines): what a prompt
/// gets of a memory file. An unclosed `<!--` is no comment and is kept: a slip of the user's
/// hand must not hide the rest of the memory from every prompt.
pub fn strip_comments(text: &str) -> String {
    let mut kept = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("<!--") {
        kept.push_str(&rest[..start]);
        match rest[start..].find("-->") {
            Some(end) => rest = &rest[start + end + 3..],
            None => {
                rest = &rest[start..];
                break;
            }
        }
    }
    kept.push_str(rest);
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_heading_with_nothing_under_it_is_left_out_of_a_prompt() {
        let summary =
            "# Summary\n\n## Lessons\n- run tests first\n\n## Decisions (current)\n\n## Avoid\n";
        assert_eq!(
            without_empty_sections(summary),
            "# Summary\n\n## Lessons\n- run tests first"
        );
        // A section whose content is in a subsection stays; a fenced `#` line is content.
        let nested = "## Notes\n### Deep\ntext\n## Code\n```sh\n# a comment\n```\n## Empty\n";
        assert_eq!(
            without_empty_sections(nested),
            "## Notes\n### Deep\ntext\n## Code\n```sh\n# a comment\n```"
        );
        assert_eq!(without_empty_sections("#hashtag\n"), "#hashtag");
    }

    fn at(seconds: i64) -> Timestamp {
        chrono::DateTime::from_timestamp(1_777_025_112 + seconds, 0).unwrap()
    }

    #[test]
    fn entry_has_the_documented_format() {
        let entry = RawEntry {
            time: at(0),
            role: Role::Worker,
            feature: Some(FeatureId::parse("F-023").unwrap()),
            tag: Tag::Trick,
            text: "psql -f drizzle/*.sql applies migrations in filename order".into(),
        };
        assert_eq!(
            entry.to_string(),
            "[2026-04-24T10:05:12Z] worker F-023 TRICK: psql -f drizzle/*.sql applies migrations in filename order"
        );
        let outcome = RawEntry {
            tag: Tag::Outcome,
            role: Role::Validator,
            text: "F-023 verified".into(),
            ..entry
        };
        assert!(outcome
            .to_string()
            .ends_with("validator F-023 -: F-023 verified"));
    }

    #[test]
    fn parse_reads_back_what_display_writes() {
        let entry = RawEntry {
            time: at(0),
            role: Role::Validator,
            feature: None,
            tag: Tag::Outcome,
            text: "F-1 verified: curl  -s works: yes ".into(),
        };
        assert_eq!(RawEntry::parse(&entry.to_string()), Ok(entry.clone()));
        let empty = RawEntry {
            text: String::new(),
            tag: Tag::Fail,
            ..entry
        };
        assert_eq!(RawEntry::parse(&empty.to_string()), Ok(empty));
        let line =
            "[2026-04-24T10:05:12Z] worker F-023 TRICK: psql -f drizzle/*.sql applies migrations";
        assert_eq!(RawEntry::parse(line).unwrap().to_string(), line);
    }

    #[test]
    fn parse_refuses_what_the_harness_never_writes() {
        for (line, why) in [
            ("my own note", "does not start"),
            ("[2026-04-24 10:05:12] worker F-1 TRICK: x", "UTC RFC 3339"),
            (
                "[2026-04-24T10:05:12+00:00] worker F-1 TRICK: x",
                "UTC RFC 3339",
            ),
            ("[2026-04-24T10:05:12Z] robot F-1 TRICK: x", "unknown role"),
            (
                "[2026-04-24T10:05:12Z] worker ../x TRICK: x",
                "invalid feature",
            ),
            ("[2026-04-24T10:05:12Z] worker F-1 TIP: x", "unknown tag"),
            ("[2026-04-24T10:05:12Z] worker F-1 TRICK:x", "no space"),
            ("[2026-04-24T10:05:12Z] worker F-1", "expected"),
        ] {
            let error = RawEntry::parse(line).unwrap_err();
            assert!(error.reason.contains(why), "{line}: {error}");
        }
    }

    #[test]
    fn harvests_only_tagged_lines() {
        assert_eq!(
            harvest_line("  TRICK: use  cargo\ttest -q "),
            Some((Tag::Trick, "use cargo test -q".into()))
        );
        assert_eq!(harvest_line("AVOID: x").unwrap().0, Tag::Avoid);
        assert_eq!(harvest_line("FAIL: y").unwrap().0, Tag::Fail);
        assert_eq!(harvest_line("DECISION: z").unwrap().0, Tag::Decision);
        assert_eq!(harvest_line("LESSON: w").unwrap().0, Tag::Lesson);
        assert_eq!(harvest_line("TRICK:   "), None);
        assert_eq!(harvest_line("a TRICK: not at the start"), None);
        assert_eq!(harvest_line("trick: lowercase"), None);
        assert_eq!(harvest_line("TRICKY: no"), None);
    }

    #[test]
    fn long_or_dirty_text_becomes_one_bounded_line() {
        let text = one_line(&format!("a\u{1b}[31mb\r\n{}", "x ".repeat(1000)));
        assert!(!text.contains('\n') && !text.contains('\u{1b}'));
        assert_eq!(text.chars().count(), MAX_ENTRY_CHARS);
        assert!(text.ends_with('…'));
    }

    #[test]
    fn concurrent_appends_lose_and_interleave_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateDir::new(dir.path());
        let threads: Vec<_> = (0..8)
            .map(|writer| {
                let state = state.clone();
                std::thread::spawn(move || {
                    for n in 0..100 {
                        let entry = RawEntry {
                            time: at(n),
                            role: Role::Worker,
                            feature: Some(FeatureId::parse(&format!("F-{writer}")).unwrap()),
                            tag: Tag::Trick,
                            text: format!("writer {writer} entry {n} {}", "x".repeat(300)),
                        };
                        append_raw(&state, &[entry.clone(), entry]).unwrap();
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        let text = std::fs::read_to_string(state.raw()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 8 * 100 * 2);
        for line in &lines {
            assert!(
                line.starts_with("[2026-") && line.ends_with(&"x".repeat(300)),
                "{line}"
            );
        }
        for writer in 0..8 {
            for n in 0..100 {
                let needle = format!("writer {writer} entry {n} ");
                assert_eq!(lines.iter().filter(|l| l.contains(&needle)).count(), 2);
            }
        }
    }

    #[test]
    fn append_never_glues_onto_a_hand_edited_last_line() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateDir::new(dir.path());
        std::fs::write(state.raw(), "my own note without newline").unwrap();
        let entry = RawEntry {
            time: at(0),
            role: Role::Worker,
            feature: None,
            tag: Tag::Lesson,
            text: "x".into(),
        };
        append_raw(&state, std::slice::from_ref(&entry)).unwrap();
        append_raw(&state, &[entry]).unwrap();
        let text = std::fs::read_to_string(state.raw()).unwrap();
        let lines: Vec<_> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0], "my own note without newline");
        assert!(lines[1].ends_with("worker - LESSON: x"));
    }

    #[test]
    fn a_template_with_only_headings_and_comments_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("worker.md");
        std::fs::write(&path, "# Identity: worker\n\n<!-- explain\n more -->\n").unwrap();
        assert_eq!(read_memory_layer(&path).unwrap(), None);
        std::fs::write(&path, "# Identity\n<!-- c -->\n- run the tests first\n").unwrap();
        assert_eq!(
            read_memory_layer(&path).unwrap().unwrap(),
            "# Identity\n\n- run the tests first"
        );
    }

    /// Regression: an unclosed `<!--` in summary.md hid all the memory after it from prompts.
    #[test]
    fn an_unclosed_comment_hides_nothing() {
        assert_eq!(
            strip_comments("a <!-- b --> c\n<!-- never closed\n- a lesson\n"),
            "a  c\n<!-- never closed\n- a lesson\n"
        );
        assert_eq!(strip_comments("<!-- x -->y<!--"), "y<!--");
    }

    #[test]
    fn read_layer_skips_missing_and_blank_files() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read_layer(&dir.path().join("none.md")).unwrap(), None);
        std::fs::write(dir.path().join("blank.md"), " \n\n").unwrap();
        assert_eq!(read_layer(&dir.path().join("blank.md")).unwrap(), None);
        std::fs::write(dir.path().join("s.md"), b"## Lessons\n- a\xff\n").unwrap();
        assert_eq!(
            read_layer(&dir.path().join("s.md")).unwrap().unwrap(),
            "## Lessons\n- a\u{fffd}"
        );
    }

    #[test]
    fn identity_is_bounded_keeping_the_users_lines_and_the_newest_graduations() {
        let small = "# Identity: worker\n\n- run the tests before committing";
        assert_eq!(identity_prompt_text(small).unwrap(), small);

        let mut file = String::from("# Identity: worker\n\n- my own rule, by hand\n");
        for n in 0..200 {
            // The format of today (why in the comment) and the one before (why after the text).
            file.push_str(&if n % 2 == 0 {
                format!(
                    "- lesson number {n:03} about the build <!-- graduated 2026-11-21 from \
                     mission m-42: LESSON recorded 3 times (by F-001); c:0123456789ab -->\n"
                )
            } else {
                format!(
                    "- lesson number {n:03} about the build (graduated 2026-11-21 from mission \
                     m-42: LESSON recorded 3 times, forgotten in between (by F-001)) <!-- c:0123456789ab -->\n"
                )
            });
        }
        file.push_str("- another rule of mine, at the end\n");
        let shown = identity_prompt_text(&file).unwrap();
        assert!(shown.chars().count() <= IDENTITY_PROMPT_CHARS + 200);
        assert!(shown.starts_with("# Identity: worker\n\n- my own rule, by hand\n"));
        assert!(shown.contains("- another rule of mine, at the end"));
        assert!(shown.contains("lesson number 199"));
        assert!(!shown.contains("lesson number 000"));
        // Why a line graduated names one mission: no prompt gets it.
        for evidence in [
            "(graduated",
            "<!--",
            "F-001",
            "m-42",
            "2026-11-21",
            "c:",
            GRADUATED_MARK.to_string().as_str(),
        ] {
            assert!(!shown.contains(evidence), "{evidence} in {shown}");
        }
        // The newest graduations, a contiguous run, in the file's order.
        let kept: Vec<usize> = shown
            .lines()
            .filter_map(|line| line.strip_prefix("- lesson number "))
            .map(|rest| rest[..3].parse().unwrap())
            .collect();
        assert!(kept.windows(2).all(|pair| pair[1] == pair[0] + 1));
        assert_eq!(kept.last(), Some(&199));
        let left_out = 200 - kept.len();
        assert!(shown.ends_with(&format!(
            "({left_out} lines left out to keep this layer short, the oldest graduated ones first; \
             all are in the identity file)"
        )));
    }
}
