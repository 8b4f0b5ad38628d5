//! summary.md and MEMORY.md as the curator reads and writes them: a preamble (title and note),
//! then `## ` sections, each holding the user's lines and the curator's bullets.
//!
//! A curator bullet ends in a marker, `<!-- c:<item id>:<check> -->`, where the check is a hash of
//! the file, the section heading and the bullet's text. A line whose marker checks out is the
//! curator's, rewritten freely on every pass. Every other line is the user's and is kept byte for
//! byte: a bullet written by hand, and a curator bullet edited or moved by hand (its check no
//! longer matches), which then stands for its item (the curator writes that item nowhere else).
//! Prompts never see the markers: `memory::read_memory_layer` strips HTML comments.

use std::collections::BTreeSet;

use super::short_hash;

/// One of the two curated files of the mission.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Layer {
    /// L2, `summary.md`.
    Summary,
    /// L3, `MEMORY.md`.
    Memory,
}

/// summary.md's sections, in order.
pub const SUMMARY_SECTIONS: [&str; 3] = ["Lessons", "Decisions (current)", "Avoid"];
/// MEMORY.md's sections, in order.
pub const MEMORY_SECTIONS: [&str; 4] = ["Decisions", "Context", "History", "Lessons"];

impl Layer {
    /// The file name in `.harness/`.
    pub fn file_name(self) -> &'static str {
        match self {
            Layer::Summary => "summary.md",
            Layer::Memory => "MEMORY.md",
        }
    }

    /// The sections the curator writes, in order.
    pub fn sections(self) -> &'static [&'static str] {
        match self {
            Layer::Summary => &SUMMARY_SECTIONS,
            Layer::Memory => &MEMORY_SECTIONS,
        }
    }

    /// The title and note of a new file.
    fn preamble(self) -> &'static str {
        match self {
            Layer::Summary => {
                "# Summary\n\
                 <!-- Curated memory (L2), injected at the bottom of every prompt; see MEMORY.md for more. \
                 Lines ending in a c: comment are the curator's; edit one and it becomes yours. Lines without \
                 one are yours and are kept as they are. -->"
            }
            Layer::Memory => {
                "# Memory\n\
                 <!-- Long-form curated memory (L3). Decisions: current decisions that do not fit summary.md. \
                 Context: things said once so far. History: superseded decisions. Lessons: recurring lessons \
                 and things to avoid that do not fit summary.md. Lines ending in a c: comment are the \
                 curator's; edit one and it becomes yours. Lines without one are yours and are kept. -->"
            }
        }
    }
}

/// A curator bullet found in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bullet {
    /// The item it shows.
    pub id: String,
    /// The whole line.
    pub line: String,
}

/// One `## ` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// The heading line as written.
    pub heading: String,
    /// Which of the layer's sections it is (`None`: a section of the user's own).
    pub known: Option<usize>,
    /// The user's lines, verbatim, without the blank lines around them.
    pub user: Vec<String>,
    /// The curator's bullets found in it.
    pub curator: Vec<Bullet>,
}

/// A summary.md or MEMORY.md, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    /// Which file.
    pub layer: Layer,
    /// The lines before the first section (title, note, and whatever the user wrote there).
    pub preamble: Vec<String>,
    /// The sections, in file order, the layer's own always present.
    pub sections: Vec<Section>,
}

impl Document {
    /// Reads a file's text; `None` (no file) gives the new file's layout.
    pub fn parse(layer: Layer, text: Option<&str>) -> Self {
        let text = text.unwrap_or_else(|| layer.preamble());
        let mut preamble = Vec::new();
        let mut sections: Vec<Section> = Vec::new();
        // Split on '\n' only: a `\r` of a file saved with CRLF stays part of the user's line.
        for line in text.strip_suffix('\n').unwrap_or(text).split('\n') {
            if line.starts_with("## ") {
                let title = line.trim_end().trim_start_matches("## ").trim();
                let known = layer
                    .sections()
                    .iter()
                    .position(|s| *s == title)
                    .filter(|k| !sections.iter().any(|s| s.known == Some(*k)));
                sections.push(Section {
                    heading: line.to_string(),
                    known,
                    user: Vec::new(),
                    curator: Vec::new(),
                });
                continue;
            }
            match sections.last_mut() {
                None => preamble.push(line.to_string()),
                Some(section) => match parse_bullet(layer, &section.heading, line) {
                    Some(bullet) if section.known.is_some() => section.curator.push(bullet),
                    _ => section.user.push(line.to_string()),
                },
            }
        }
        trim_blank(&mut preamble);
        for section in &mut sections {
            trim_blank(&mut section.user);
        }
        insert_missing_sections(layer, &mut sections);
        Self {
            layer,
            preamble,
            sections,
        }
    }

    /// The item ids named in the user's lines (edited curator bullets): those items are the
    /// user's to show.
    pub fn claimed_ids(&self) -> BTreeSet<String> {
        self.user_lines().flat_map(marker_ids).collect()
    }

    /// Every line of the user's, in file order.
    pub fn user_lines(&self) -> impl Iterator<Item = &str> {
        self.preamble
            .iter()
            .chain(self.sections.iter().flat_map(|s| {
                std::iter::once(&s.heading)
                    .filter(move |_| s.known.is_none())
                    .chain(&s.user)
            }))
            .map(String::as_str)
    }

    /// The heading of known section `known`.
    pub fn heading(&self, known: usize) -> &str {
        self.sections
            .iter()
            .find(|s| s.known == Some(known))
            .map(|s| s.heading.as_str())
            .expect("parse inserts every known section")
    }

    /// The file's text with `bullets[k]` as the curator's lines of known section `k`.
    pub fn render(&self, bullets: &[Vec<String>]) -> String {
        let mut lines: Vec<&str> = self.preamble.iter().map(String::as_str).collect();
        for section in &self.sections {
            if !lines.is_empty() {
                lines.push("");
            }
            lines.push(&section.heading);
            lines.extend(section.user.iter().map(String::as_str));
            if let Some(known) = section.known {
                lines.extend(bullets.get(known).into_iter().flatten().map(String::as_str));
            }
        }
        let mut text = lines.join("\n");
        text.push('\n');
        text
    }

    /// The text with no curator bullets at all: what the user's lines alone take.
    pub fn render_user_only(&self) -> String {
        self.render(&[])
    }
}

/// Drops blank lines at both ends.
fn trim_blank(lines: &mut Vec<String>) {
    while lines.last().is_some_and(|l| l.trim().is_empty()) {
        lines.pop();
    }
    let leading = lines.iter().take_while(|l| l.trim().is_empty()).count();
    lines.drain(..leading);
}

/// Adds the layer's sections the file lacks, each after the nearest earlier one it has.
fn insert_missing_sections(layer: Layer, sections: &mut Vec<Section>) {
    for (known, title) in layer.sections().iter().enumerate() {
        if sections.iter().any(|s| s.known == Some(known)) {
            continue;
        }
        let after_earlier = sections
            .iter()
            .rposition(|s| s.known.is_some_and(|k| k < known))
            .map(|i| i + 1);
        let before_later = sections
            .iter()
            .position(|s| s.known.is_some_and(|k| k > known));
        let at = after_earlier.or(before_later).unwrap_or(0);
        sections.insert(
            at,
            Section {
                heading: format!("## {title}"),
                known: Some(known),
                user: Vec::new(),
                curator: Vec::new(),
            },
        );
    }
}

/// The check of a curator bullet: binds its text to its file and section.
fn check(layer: Layer, heading: &str, body: &str) -> String {
    short_hash(format!("{}\n{}\n{}", layer.file_name(), heading.trim_end(), body).as_bytes())
}

/// A curator bullet for item `id` in the section under `heading`: `body` and its marker.
pub fn bullet_line(layer: Layer, heading: &str, id: &str, body: &str) -> String {
    format!("{body} <!-- c:{id}:{} -->", check(layer, heading, body))
}

/// The curator bullet `line` is, if its marker checks out under `heading`.
fn parse_bullet(layer: Layer, heading: &str, line: &str) -> Option<Bullet> {
    let at = line.rfind(" <!-- c:")?;
    let (body, marker) = line.split_at(at);
    let inner = marker.strip_prefix(" <!-- c:")?.strip_suffix(" -->")?;
    let (id, hash) = inner.split_once(':')?;
    (is_id(id) && hash == check(layer, heading, body)).then(|| Bullet {
        id: id.to_string(),
        line: line.to_string(),
    })
}

fn is_id(text: &str) -> bool {
    text.len() == super::ID_LEN
        && text
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}

/// The item ids named by `c:<id>` in the HTML comments of `line`.
pub fn marker_ids(line: &str) -> Vec<String> {
    let mut ids = Vec::new();
    let mut rest = line;
    while let Some(start) = rest.find("<!--") {
        let comment = &rest[start + 4..];
        let end = comment.find("-->").unwrap_or(comment.len());
        for (at, _) in comment[..end].match_indices("c:") {
            let candidate = comment[at + 2..].get(..super::ID_LEN).unwrap_or("");
            if is_id(candidate) {
                ids.push(candidate.to_string());
            }
        }
        rest = &comment[end..];
    }
    ids
}

/// The size of a text: its lines as stored, and its estimated tokens as prompts get it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Size {
    /// Lines of the file.
    pub lines: usize,
    /// Estimated tokens of what a prompt gets of it (HTML comments stripped).
    pub tokens: usize,
}

/// Measures `text`: lines as in the file; tokens estimated as one per four characters
/// (rounded up) of the text without its HTML comments, which is what a prompt receives.
pub fn size(text: &str) -> Size {
    let injected = crate::state::memory::strip_comments(text);
    Size {
        lines: text.lines().count(),
        tokens: injected.trim().chars().count().div_ceil(4),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "0123456789";

    #[test]
    fn a_new_file_has_the_layout_and_no_user_lines() {
        let doc = Document::parse(Layer::Summary, None);
        let text = doc.render(&[]);
        assert!(text.starts_with("# Summary\n<!-- Curated memory"));
        assert!(text.ends_with("## Lessons\n\n## Decisions (current)\n\n## Avoid\n"));
        assert_eq!(Document::parse(Layer::Summary, Some(&text)), doc);
        // A prompt takes a file of headings and comments for no memory at all.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("summary.md");
        std::fs::write(&path, &text).unwrap();
        assert_eq!(
            crate::state::memory::read_memory_layer(&path).unwrap(),
            None
        );
    }

    #[test]
    fn curator_bullets_are_told_from_the_users_by_their_check() {
        let bullet = bullet_line(Layer::Summary, "## Lessons", ID, "- run the tests first");
        let edited = bullet.replace("first", "always");
        let moved = bullet.clone();
        let text = format!(
            "# Summary\nmy preamble\n\n## Lessons\n- mine\n{bullet}\n{edited}\n\n## Avoid\n{moved}\n\n## My notes\n- x\n"
        );
        let doc = Document::parse(Layer::Summary, Some(&text));
        let lessons = &doc.sections[0];
        assert_eq!(lessons.curator.len(), 1);
        assert_eq!(lessons.user, vec!["- mine".to_string(), edited.clone()]);
        // The bullet moved to Avoid no longer checks out: the user's.
        let avoid = doc.sections.iter().find(|s| s.known == Some(2)).unwrap();
        assert_eq!(avoid.user, vec![moved]);
        assert_eq!(doc.claimed_ids().into_iter().collect::<Vec<_>>(), [ID]);
        // Decisions was missing: inserted between Lessons and Avoid; My notes stays last.
        let headings: Vec<&str> = doc.sections.iter().map(|s| s.heading.as_str()).collect();
        assert_eq!(
            headings,
            [
                "## Lessons",
                "## Decisions (current)",
                "## Avoid",
                "## My notes"
            ]
        );
        let again = doc.render(&[vec![bullet.clone()]]);
        for line in text.lines().filter(|l| !l.is_empty()) {
            assert!(again.lines().any(|l| l == line), "{line:?} lost");
        }
    }

    #[test]
    fn crlf_lines_of_the_user_keep_their_carriage_return() {
        let text = "# Summary\r\n\r\n## Lessons\r\n- mine\r\n";
        let doc = Document::parse(Layer::Summary, Some(text));
        assert_eq!(doc.sections[0].user, ["- mine\r"]);
        assert!(doc.render(&[]).contains("\n- mine\r\n"));
    }

    #[test]
    fn marker_ids_are_found_in_comments_only() {
        assert_eq!(
            marker_ids(&format!("- x c:{ID} <!-- c:{ID}:abcdef -->")),
            [ID]
        );
        assert!(marker_ids("- c:0123456789").is_empty());
        assert!(marker_ids("<!-- c:01234 -->").is_empty());
    }

    #[test]
    fn size_counts_file_lines_and_prompt_tokens() {
        let text = format!("# S\n{}\n- abcd <!-- c:{ID}:abcdef -->\n", "<!-- note -->");
        let size = size(&text);
        assert_eq!(size.lines, 3);
        // "# S\n\n- abcd" = 11 characters.
        assert_eq!(size.tokens, 3);
    }
}
