//! The small, safe Markdown of summary.md, MEMORY.md and mission.md on the page.

use std::fmt::Write as _;

use super::format::escape;
use crate::state::memory;

/// A small, safe markdown: `#` headings (shifted down by `heading_offset` levels), `-`/`*`/`+`
/// and numbered lists, fenced code blocks, `---` rules and paragraphs, with inline `code` and
/// **bold**. HTML comments are dropped; everything else is escaped, never passed through.
pub fn markdown(text: &str, heading_offset: usize) -> String {
    let text = memory::strip_comments(text);
    let mut html = String::new();
    let mut paragraph: Vec<&str> = Vec::new();
    // The open list: ordered or not, and its items (each a line, maybe with continuations).
    let mut list: Option<(bool, Vec<(bool, String)>)> = None;
    let mut code: Option<Vec<&str>> = None;

    fn flush_paragraph(html: &mut String, paragraph: &mut Vec<&str>) {
        if !paragraph.is_empty() {
            let _ = writeln!(html, "<p>{}</p>", inline(&paragraph.join(" ")));
            paragraph.clear();
        }
    }
    fn flush_list(html: &mut String, list: &mut Option<(bool, Vec<(bool, String)>)>) {
        if let Some((ordered, items)) = list.take() {
            let tag = if ordered { "ol" } else { "ul" };
            let _ = writeln!(html, "<{tag}>");
            for (nested, item) in items {
                let class = if nested { " class=\"sub\"" } else { "" };
                let _ = writeln!(html, "<li{class}>{}</li>", inline(&item));
            }
            let _ = writeln!(html, "</{tag}>");
        }
    }

    for line in text.lines() {
        if let Some(lines) = &mut code {
            if line.trim_start().starts_with("```") {
                let _ = writeln!(
                    html,
                    "<pre><code>{}</code></pre>",
                    escape(&lines.join("\n"))
                );
                code = None;
            } else {
                lines.push(line);
            }
            continue;
        }
        let trimmed = line.trim();
        let indent = line.len() - line.trim_start().len();
        if trimmed.starts_with("```") {
            flush_paragraph(&mut html, &mut paragraph);
            flush_list(&mut html, &mut list);
            code = Some(Vec::new());
        } else if trimmed.is_empty() {
            flush_paragraph(&mut html, &mut paragraph);
            flush_list(&mut html, &mut list);
        } else if let Some((level, title)) = heading(trimmed) {
            flush_paragraph(&mut html, &mut paragraph);
            flush_list(&mut html, &mut list);
            let level = (level + heading_offset).min(6);
            let _ = writeln!(html, "<h{level}>{}</h{level}>", inline(title));
        } else if trimmed.len() >= 3
            && ['-', '*', '_']
                .iter()
                .any(|rule| trimmed.chars().all(|c| c == *rule))
        {
            flush_paragraph(&mut html, &mut paragraph);
            flush_list(&mut html, &mut list);
            html.push_str("<hr>\n");
        } else if let Some((ordered, item)) = list_item(trimmed) {
            flush_paragraph(&mut html, &mut paragraph);
            if list.as_ref().is_some_and(|(o, _)| *o != ordered) {
                flush_list(&mut html, &mut list);
            }
            let (_, items) = list.get_or_insert_with(|| (ordered, Vec::new()));
            items.push((indent >= 2 && !items.is_empty(), item.to_string()));
        } else if let (Some((_, items)), true) = (&mut list, indent >= 2) {
            // An indented line under an item continues it.
            if let Some((_, item)) = items.last_mut() {
                item.push(' ');
                item.push_str(trimmed);
            }
        } else {
            flush_list(&mut html, &mut list);
            paragraph.push(trimmed);
        }
    }
    if let Some(lines) = code {
        let _ = writeln!(
            html,
            "<pre><code>{}</code></pre>",
            escape(&lines.join("\n"))
        );
    }
    flush_paragraph(&mut html, &mut paragraph);
    flush_list(&mut html, &mut list);
    html
}

/// `## Title` → (2, "Title").
fn heading(line: &str) -> Option<(usize, &str)> {
    let level = line.chars().take_while(|c| *c == '#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    let rest = &line[level..];
    if rest.is_empty() {
        return Some((level, ""));
    }
    rest.strip_prefix(' ')
        .map(|title| (level, title.trim().trim_end_matches('#').trim_end()))
}

/// `- item`, `* item`, `+ item` → (false, "item"); `1. item`, `1) item` → (true, "item").
fn list_item(line: &str) -> Option<(bool, &str)> {
    for bullet in ["- ", "* ", "+ "] {
        if let Some(item) = line.strip_prefix(bullet) {
            return Some((false, item.trim()));
        }
    }
    let digits = line.chars().take_while(char::is_ascii_digit).count();
    if (1..=9).contains(&digits) {
        let rest = &line[digits..];
        if let Some(item) = rest.strip_prefix(". ").or_else(|| rest.strip_prefix(") ")) {
            return Some((true, item.trim()));
        }
    }
    None
}

/// Inline markdown: `code` spans, then **bold** outside them; everything escaped.
fn inline(text: &str) -> String {
    let mut html = String::new();
    let mut rest = text;
    while let Some(start) = rest.find('`') {
        let Some(length) = rest[start + 1..].find('`') else {
            break;
        };
        html.push_str(&bold(&rest[..start]));
        let _ = write!(
            html,
            "<code>{}</code>",
            escape(&rest[start + 1..start + 1 + length])
        );
        rest = &rest[start + 1 + length + 1..];
    }
    html.push_str(&bold(rest));
    html
}

/// `**bold**` pairs as `<strong>`; an unpaired `**` stays as it is.
fn bold(text: &str) -> String {
    let parts: Vec<&str> = text.split("**").collect();
    let delimiters = parts.len() - 1;
    let paired = delimiters - delimiters % 2;
    let mut html = String::new();
    for (index, part) in parts.iter().enumerate() {
        if index > 0 {
            html.push_str(match index {
                i if i > paired => "**",
                i if i % 2 == 1 => "<strong>",
                _ => "</strong>",
            });
        }
        html.push_str(&escape(part));
    }
    html
}

/// The text without a first `# Title` line (the report gives each file its own heading).
pub(super) fn without_title(text: &str) -> &str {
    let trimmed = text.trim_start();
    match trimmed.split_once('\n') {
        Some((first, rest)) if first.starts_with("# ") => rest,
        None if trimmed.starts_with("# ") => "",
        _ => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_renders_the_subset_and_escapes_the_rest() {
        let html = markdown(
            "# Title\n\nSome **bold** and `a <b>` code.\nSame paragraph.\n\n- one\n- two `x`\n  continued\n  - nested\n1. first\n2) second\n\n```\n<raw> & \"code\"\n```\n---\n<div onclick=x>html</div>\n<!-- hidden -->\nan ** unpaired",
            1,
        );
        assert_eq!(
            html,
            "<h2>Title</h2>\n\
             <p>Some <strong>bold</strong> and <code>a &lt;b&gt;</code> code. Same paragraph.</p>\n\
             <ul>\n<li>one</li>\n<li>two <code>x</code> continued</li>\n<li class=\"sub\">nested</li>\n</ul>\n\
             <ol>\n<li>first</li>\n<li>second</li>\n</ol>\n\
             <pre><code>&lt;raw&gt; &amp; &quot;code&quot;</code></pre>\n\
             <hr>\n\
             <p>&lt;div onclick=x&gt;html&lt;/div&gt;</p>\n\
             <p>an ** unpaired</p>\n"
        );
        assert_eq!(markdown("###### deep", 3), "<h6>deep</h6>\n");
        assert_eq!(markdown("#nospace", 0), "<p>#nospace</p>\n");
        assert_eq!(
            markdown("```\nunclosed <x>", 0),
            "<pre><code>unclosed &lt;x&gt;</code></pre>\n"
        );
    }
}
