//! Text-preserving edits of features.yaml. The file is the user's: the planner replaces, inserts
//! or appends whole list items of `features:` and leaves every other byte (comments, blank lines,
//! quoting, the order) as it was. Items are located by their line ranges; a layout that cannot be
//! edited that way (a flow-style list) is refused rather than rewritten.

use std::path::Path;

use crate::base::error::InputError;
use crate::spec::features::Feature;

/// Where the items of `features:` are in the text of features.yaml.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// The text's lines, each with its line ending.
    lines: Vec<String>,
    /// How the list is written.
    list: List,
    /// The line ending new text gets (`\r\n` if the file uses it).
    newline: &'static str,
    /// Whether the items are separated by a blank line (new items then are too).
    blank_between_items: bool,
}

/// How the `features:` list is written.
#[derive(Debug, Clone, PartialEq, Eq)]
enum List {
    /// No `features:` key at all (a file of comments): the list is added at the end.
    Missing,
    /// `features: []` (the template) or `features:` with nothing under it, at line `line`.
    Empty { line: usize },
    /// A block list whose dashes are at column `dash_column`.
    Block {
        dash_column: usize,
        items: Vec<ItemSpan>,
    },
}

/// The lines of one list item: from its dash line to its last line of content. Comment and blank
/// lines after that belong to the gap before the next item (often a heading for it), so they stay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ItemSpan {
    first: usize,
    last: usize,
}

/// A change to the list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Edit {
    /// Replace item `index` (in file order) with this feature.
    Replace(usize, Feature),
    /// Insert these features right after item `index`.
    InsertAfter(usize, Vec<Feature>),
    /// Add these features at the end of the list.
    Append(Vec<Feature>),
}

/// The column of the keys inside an item, relative to its dash (`- id:`).
const KEY_OFFSET: usize = 2;

impl Layout {
    /// Locates the items of `features:` in `text` (already parsed successfully as features.yaml;
    /// `path` names it in errors).
    pub fn locate(text: &str, path: &Path) -> Result<Self, InputError> {
        let lines: Vec<String> = text.split_inclusive('\n').map(str::to_string).collect();
        let newline = if text.contains("\r\n") { "\r\n" } else { "\n" };
        let key_line = lines.iter().position(|line| {
            let line = content(line);
            line.starts_with("features:") || line.starts_with("features :")
        });
        let Some(key_line) = key_line else {
            return Ok(Self {
                lines,
                list: List::Missing,
                newline,
                blank_between_items: false,
            });
        };
        let after_key = strip_comment(content(&lines[key_line]))
            .split_once(':')
            .map_or("", |(_, value)| value)
            .trim()
            .to_string();
        let refuse = |what: &str| {
            InputError::in_file(path, format!("the planner cannot edit {what} safely"))
                .at_line(Some(key_line + 1))
                .with_hint(
                    "write the list in block style, one `- id: …` item per feature, as in the \
                     template of `./run.sh init`",
                )
        };
        match after_key.as_str() {
            "" => {}
            "[]" => {
                return Ok(Self {
                    lines,
                    list: List::Empty { line: key_line },
                    newline,
                    blank_between_items: false,
                })
            }
            _ => return Err(refuse("a feature list in flow style (`features: [...]`)")),
        }
        let mut dash_column = None;
        let mut items: Vec<ItemSpan> = Vec::new();
        for (index, line) in lines.iter().enumerate().skip(key_line + 1) {
            let text = content(line);
            if is_blank_or_comment(text) {
                continue;
            }
            let indent = indentation(text);
            let rest = &text[indent..];
            let is_dash = rest == "-" || rest.starts_with("- ");
            match dash_column {
                None if is_dash => dash_column = Some(indent),
                None => break,
                Some(column) if indent < column || (indent == column && !is_dash) => break,
                Some(_) => {}
            }
            if indent == dash_column.unwrap_or(indent) && is_dash {
                items.push(ItemSpan {
                    first: index,
                    last: index,
                });
            } else if let Some(item) = items.last_mut() {
                item.last = index;
            }
        }
        let list = match dash_column {
            None => List::Empty { line: key_line },
            Some(dash_column) => List::Block { dash_column, items },
        };
        let blank_between_items = match &list {
            List::Block { items, .. } if items.len() >= 2 => lines
                [items[0].last + 1..items[1].first]
                .iter()
                .any(|line| content(line).trim().is_empty()),
            _ => false,
        };
        Ok(Self {
            lines,
            list,
            newline,
            blank_between_items,
        })
    }

    /// How many items the list has.
    pub fn item_count(&self) -> usize {
        match &self.list {
            List::Block { items, .. } => items.len(),
            _ => 0,
        }
    }

    /// Item `index` as the planner would have written it: its lines, moved left to column 0,
    /// without line-ending differences. Compared with the plan record to detect hand edits.
    pub fn item_text(&self, index: usize) -> Option<String> {
        let List::Block { dash_column, items } = &self.list else {
            return None;
        };
        let span = items.get(index)?;
        let mut text = String::new();
        for line in &self.lines[span.first..=span.last] {
            let line = content(line);
            let cut = line.len() - line.trim_start_matches(' ').len();
            text.push_str(&line[cut.min(*dash_column)..]);
            text.push('\n');
        }
        Some(text)
    }

    /// The text with `edits` applied; every line no edit touches is kept byte for byte.
    pub fn apply(&self, edits: &[Edit]) -> String {
        let (dash_column, items): (usize, &[ItemSpan]) = match &self.list {
            List::Block { dash_column, items } => (*dash_column, items),
            _ => (KEY_OFFSET, &[]),
        };
        let render = |features: &[Feature]| -> String {
            let mut text = String::new();
            for feature in features {
                if self.blank_between_items {
                    text.push_str(self.newline);
                }
                text.push_str(&render_item(feature, dash_column, self.newline));
            }
            text
        };
        let mut replaced: Vec<Option<String>> = vec![None; items.len()];
        let mut inserted_after: Vec<String> = vec![String::new(); items.len()];
        let mut appended = String::new();
        for edit in edits {
            match edit {
                Edit::Replace(index, feature) => {
                    replaced[*index] = Some(render_item(feature, dash_column, self.newline));
                }
                Edit::InsertAfter(index, features) => {
                    inserted_after[*index].push_str(&render(features))
                }
                Edit::Append(features) => appended.push_str(&render(features)),
            }
        }
        let mut out = Output::new(self.newline);
        let mut next_line = 0;
        for (index, span) in items.iter().enumerate() {
            out.lines(&self.lines[next_line..span.first]);
            match &replaced[index] {
                Some(text) => out.text(text),
                None => out.lines(&self.lines[span.first..=span.last]),
            }
            out.text(&inserted_after[index]);
            if index + 1 == items.len() {
                out.text(&appended);
            }
            next_line = span.last + 1;
        }
        match &self.list {
            List::Block { .. } => {}
            List::Empty { line } => {
                // `features: []` becomes `features:` and the block list; a comment after the
                // brackets stays on the key's line.
                out.lines(&self.lines[..*line]);
                let key = content(&self.lines[*line]);
                let comment = key.find(" #").map_or("", |at| &key[at..]);
                out.text(&format!("features:{comment}{}", self.newline));
                out.text(&appended);
                next_line = line + 1;
            }
            List::Missing => {
                out.lines(&self.lines);
                out.text(&format!("features:{}", self.newline));
                out.text(&appended);
                next_line = self.lines.len();
            }
        }
        out.lines(&self.lines[next_line..]);
        out.text
    }
}

/// The edited text as it is built: a line without its ending (the file's last) gets one only
/// when something comes after it.
struct Output {
    text: String,
    newline: &'static str,
}

impl Output {
    fn new(newline: &'static str) -> Self {
        Self {
            text: String::new(),
            newline,
        }
    }

    fn text(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        if !self.text.is_empty() && !self.text.ends_with('\n') {
            self.text.push_str(self.newline);
        }
        self.text.push_str(text);
    }

    fn lines(&mut self, lines: &[String]) {
        for line in lines {
            self.text(line);
        }
    }
}

/// One feature as a list item in the planner's style, dash at `dash_column`:
///
/// ```yaml
///   - id: F-001
///     title: Sign-up form
///     description: What to build, in prose.
///     acceptance:
///       - A new user can sign up.
///     depends_on: []
/// ```
pub fn render_item(feature: &Feature, dash_column: usize, newline: &str) -> String {
    let key = " ".repeat(dash_column + KEY_OFFSET);
    let mut lines = vec![format!(
        "{}- id: {}",
        " ".repeat(dash_column),
        scalar(feature.id.as_str(), dash_column + KEY_OFFSET)
    )];
    lines.push(format!(
        "{key}title: {}",
        scalar(&feature.title, dash_column + KEY_OFFSET)
    ));
    if !feature.description.is_empty() {
        lines.push(format!(
            "{key}description: {}",
            scalar(&feature.description, dash_column + KEY_OFFSET)
        ));
    }
    if feature.acceptance.is_empty() {
        lines.push(format!("{key}acceptance: []"));
    } else {
        lines.push(format!("{key}acceptance:"));
        let item = dash_column + 2 * KEY_OFFSET;
        for criterion in &feature.acceptance {
            lines.push(format!(
                "{}- {}",
                " ".repeat(item),
                scalar(criterion, item + KEY_OFFSET)
            ));
        }
    }
    let ids: Vec<String> = feature
        .depends_on
        .iter()
        .map(|id| flow_scalar(id.as_str()))
        .collect();
    lines.push(format!("{key}depends_on: [{}]", ids.join(", ")));
    let mut text = lines.join("\n");
    text.push('\n');
    if newline != "\n" {
        text = text.replace('\n', newline);
    }
    text
}

/// A string as a YAML scalar: plain when it reads back as the same string, a literal block (`|`)
/// for readable multi-line text, else double-quoted (JSON's escapes are YAML's too). `indent` is
/// the column of the key, for the lines of a block.
fn scalar(text: &str, indent: usize) -> String {
    if is_plain_safe(text, false) {
        return text.to_string();
    }
    if let Some(block) = literal_block(text, indent) {
        return block;
    }
    double_quoted(text)
}

/// An id in a flow list (`depends_on: [F-001, "123"]`).
fn flow_scalar(text: &str) -> String {
    if is_plain_safe(text, true) {
        text.to_string()
    } else {
        double_quoted(text)
    }
}

/// JSON's string escapes are YAML's too; YAML also wants line and paragraph separators, the BOM
/// and the C1 controls escaped (a reader would fold or refuse them).
fn double_quoted(text: &str) -> String {
    let json = serde_json::to_string(text).expect("a string always serialises");
    let mut quoted = String::with_capacity(json.len());
    for c in json.chars() {
        if needs_escape(c) {
            quoted.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            quoted.push(c);
        }
    }
    quoted
}

fn needs_escape(c: char) -> bool {
    c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{feff}' | '\u{85}')
}

fn is_plain_safe(text: &str, in_flow: bool) -> bool {
    // YAML 1.1 readers (not ours, but the user's other tools) take these for booleans.
    const BOOLEAN_LIKE: [&str; 8] = ["yes", "no", "on", "off", "y", "n", "true", "false"];
    const INDICATORS: [char; 19] = [
        '-', '?', ':', '#', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`', '[', ']', '{', '}',
        ',',
    ];
    let awkward = text.is_empty()
        || text.trim() != text
        || text.chars().any(needs_escape)
        || (in_flow && text.contains(['[', ']', '{', '}', ',']))
        || text.starts_with(INDICATORS)
        || BOOLEAN_LIKE.contains(&text.to_ascii_lowercase().as_str());
    // What is left is plain if a reader gives the same string back (not a number, null, a map).
    !awkward
        && matches!(
            serde_yaml::from_str::<serde_yaml::Value>(text),
            Ok(serde_yaml::Value::String(read)) if read == text
        )
}

/// `|`, `|-` or `|+` and the lines under it, when the text has several lines that a literal block
/// can hold exactly (no tabs or control characters, no trailing blanks, no leading space).
fn literal_block(text: &str, indent: usize) -> Option<String> {
    let body = text.trim_end_matches('\n');
    let trailing = text.len() - body.len();
    let fits = body.contains('\n')
        && !body.starts_with(' ')
        && !body.chars().any(|c| c != '\n' && needs_escape(c))
        && body.lines().all(|line| line.trim_end() == line);
    if !fits {
        return None;
    }
    let chomping = match trailing {
        0 => "-",
        1 => "",
        _ => "+",
    };
    let pad = " ".repeat(indent + KEY_OFFSET);
    let mut block = format!("|{chomping}");
    for line in text.trim_end_matches('\n').split('\n') {
        block.push('\n');
        if !line.is_empty() {
            block.push_str(&pad);
            block.push_str(line);
        }
    }
    block.push_str(&"\n".repeat(trailing.saturating_sub(1)));
    Some(block)
}

/// The line without its line ending.
fn content(line: &str) -> &str {
    line.trim_end_matches(['\n', '\r'])
}

fn indentation(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

fn is_blank_or_comment(line: &str) -> bool {
    let line = line.trim_start();
    line.is_empty() || line.starts_with('#')
}

/// The text before a ` #` comment (good enough for the `features:` key line).
fn strip_comment(line: &str) -> &str {
    match line.find(" #") {
        Some(at) => &line[..at],
        None => line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::features::{FeatureId, FeatureList};

    fn feature(id: &str, title: &str) -> Feature {
        Feature {
            id: FeatureId::parse(id).unwrap(),
            title: title.into(),
            description: format!("Build {title}."),
            acceptance: vec![format!("{title} works")],
            depends_on: vec![],
        }
    }

    fn locate(text: &str) -> Layout {
        Layout::locate(text, Path::new("features.yaml")).unwrap()
    }

    fn reparse(text: &str) -> FeatureList {
        FeatureList::parse(text, Path::new("features.yaml"))
            .unwrap_or_else(|e| panic!("{e}\n{text}"))
    }

    const FILE: &str = "\
# My features. Keep this comment.
features:
  # --- accounts ---
  - id: F-001
    title: Sign-up   # the first one
    acceptance: [can sign up]

  # --- sessions ---
  - id: F-002
    title: Login
    description: |
      Log in with a password.
      # not a comment: part of the text
    depends_on: [F-001]
# trailing comment
";

    #[test]
    fn items_span_their_content_and_leave_comments_between_them() {
        let layout = locate(FILE);
        assert_eq!(layout.item_count(), 2);
        assert_eq!(
            layout.item_text(0).unwrap(),
            "- id: F-001\n  title: Sign-up   # the first one\n  acceptance: [can sign up]\n"
        );
        // A literal block line that looks like a comment ends the span early; the merge then
        // sees the item as edited by hand, which keeps it (the safe side).
        assert!(layout
            .item_text(1)
            .unwrap()
            .starts_with("- id: F-002\n  title: Login\n"));
    }

    #[test]
    fn replace_insert_and_append_keep_every_other_byte() {
        let layout = locate(FILE);
        let text = layout.apply(&[
            Edit::Replace(0, feature("F-001", "Sign-up form")),
            Edit::InsertAfter(0, vec![feature("F-001.1", "Captcha")]),
            Edit::Append(vec![feature("F-003", "Logout")]),
        ]);
        assert_eq!(
            text,
            "\
# My features. Keep this comment.
features:
  # --- accounts ---
  - id: F-001
    title: Sign-up form
    description: Build Sign-up form.
    acceptance:
      - Sign-up form works
    depends_on: []

  - id: F-001.1
    title: Captcha
    description: Build Captcha.
    acceptance:
      - Captcha works
    depends_on: []

  # --- sessions ---
  - id: F-002
    title: Login
    description: |
      Log in with a password.
      # not a comment: part of the text
    depends_on: [F-001]

  - id: F-003
    title: Logout
    description: Build Logout.
    acceptance:
      - Logout works
    depends_on: []
# trailing comment
"
        );
        let list = reparse(&text);
        let ids: Vec<&str> = list.features.iter().map(|f| f.id.as_str()).collect();
        assert_eq!(ids, ["F-001", "F-001.1", "F-002", "F-003"]);
    }

    #[test]
    fn the_template_empty_list_becomes_a_block_list() {
        let template = crate::spec::init::FEATURES_TEMPLATE;
        let text = locate(template).apply(&[Edit::Append(vec![
            feature("F-001", "One"),
            feature("F-002", "Two"),
        ])]);
        assert!(text.starts_with(template.strip_suffix("features: []\n").unwrap()));
        assert!(text.contains("features:\n  - id: F-001\n"), "{text}");
        assert_eq!(reparse(&text).features.len(), 2);
        // `features:` with nothing under it, and no key at all.
        for text in ["features:\n# nothing yet\n", "# only comments\n"] {
            let edited = locate(text).apply(&[Edit::Append(vec![feature("F-001", "One")])]);
            assert_eq!(reparse(&edited).features.len(), 1, "{edited}");
            assert!(edited.contains("# "), "{edited}");
        }
    }

    #[test]
    fn flow_style_is_refused_not_rewritten() {
        let error = Layout::locate(
            "# c\nfeatures: [{id: F-001, title: x}]\n",
            Path::new("features.yaml"),
        )
        .unwrap_err();
        assert_eq!(error.line, Some(2));
        assert!(error.message.contains("flow style"), "{error}");
    }

    #[test]
    fn dashes_at_the_key_column_and_crlf_are_kept() {
        let text = "features:\r\n- id: F-001\r\n  title: One\r\n";
        let layout = locate(text);
        assert_eq!(layout.item_text(0).unwrap(), "- id: F-001\n  title: One\n");
        let edited = layout.apply(&[Edit::Append(vec![feature("F-002", "Two")])]);
        assert!(edited.starts_with(text));
        assert!(
            edited.contains("\r\n- id: F-002\r\n  title: Two\r\n"),
            "{edited:?}"
        );
        assert_eq!(reparse(&edited).features.len(), 2);
    }

    #[test]
    fn a_file_without_a_final_newline_gets_one_before_new_items() {
        let text = "features:\n  - id: F-001\n    title: One";
        let edited = locate(text).apply(&[Edit::Append(vec![feature("F-002", "Two")])]);
        assert!(edited.starts_with("features:\n  - id: F-001\n    title: One\n  - id: F-002\n"));
        assert_eq!(reparse(&edited).features.len(), 2);
    }

    #[test]
    fn awkward_strings_read_back_exactly() {
        let awkward = [
            "plain words",
            "yes",
            "123",
            "1.5",
            "null",
            "~",
            "- starts like an item",
            "key: value",
            "has # hash",
            "ends with colon:",
            " leading space",
            "trailing space ",
            "quote \" and backslash \\",
            "tab\there",
            "two\nlines",
            "two\nlines\n",
            "two\nlines\n\n",
            "  indented\nsecond",
            "trailing \nblank",
            "[brackets], {braces}",
            "inner [brackets], {braces}",
            "a, b",
            "C1 \u{85} and \u{9f} and BOM \u{feff}",
            "unicode é ✓ \u{2028} sep",
            "bell \u{7}",
            "'single'",
            "@at",
            "",
        ];
        for text in awkward {
            let mut feature = feature("F-001", "t");
            feature.title = format!("title {text}");
            feature.description = text.to_string();
            feature.acceptance = vec![text.to_string(), "ok".into()];
            let rendered = format!("features:\n{}", render_item(&feature, 2, "\n"));
            let list = reparse(&rendered);
            assert_eq!(list.features[0], feature, "{text:?}:\n{rendered}");
        }
    }

    #[test]
    fn multi_line_descriptions_are_literal_blocks() {
        let mut one = feature("F-001", "One");
        one.description = "First line.\n\nSecond paragraph.\n".into();
        one.depends_on = vec![FeatureId::parse("123").unwrap()];
        assert_eq!(
            render_item(&one, 0, "\n"),
            "- id: F-001\n  title: One\n  description: |\n    First line.\n\n    Second paragraph.\n  acceptance:\n    - One works\n  depends_on: [\"123\"]\n"
        );
    }
}
