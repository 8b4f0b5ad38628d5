//! The Markdown of summary.md, MEMORY.md and mission.md on the page: CommonMark with tables and
//! strikethrough, rendered by pulldown-cmark, with what a file or an agent could use to reach
//! the page filtered out of its events first — raw HTML is shown as text (escaped, never passed
//! through) and a link or image whose address has a scheme other than http, https or mailto
//! (`javascript:`, `data:`…) keeps its text and loses its address.

use pulldown_cmark::{Event, HeadingLevel, Options, Parser, Tag, TagEnd};

use crate::state::memory;

/// `text` as HTML, its headings shifted down by `heading_offset` levels (at most `<h6>`). HTML
/// comments (the curator's markers) are dropped; control characters other than newlines and
/// tabs become U+FFFD, as in [`super::escape`].
pub fn markdown(text: &str, heading_offset: usize) -> String {
    let text: String = memory::strip_comments(text)
        .chars()
        .map(|c| match c {
            '\n' | '\t' => c,
            c if c.is_control() => '\u{fffd}',
            c => c,
        })
        .collect();
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH;
    let mut unsafe_links = Vec::new();
    let events = Parser::new_ext(&text, options)
        .filter_map(|event| safe_event(event, heading_offset, &mut unsafe_links));
    let mut html = String::with_capacity(text.len() * 3 / 2);
    pulldown_cmark::html::push_html(&mut html, events);
    html
}

/// The event as the page may show it, or `None` to drop it. `unsafe_links` says, for each link
/// open now, whether its start was dropped (so that its end is dropped too).
fn safe_event<'a>(
    event: Event<'a>,
    heading_offset: usize,
    unsafe_links: &mut Vec<bool>,
) -> Option<Event<'a>> {
    Some(match event {
        // Raw HTML becomes text, which the writer escapes; an HTML block reads as a paragraph.
        Event::Html(html) | Event::InlineHtml(html) => Event::Text(html),
        Event::Start(Tag::HtmlBlock) => Event::Start(Tag::Paragraph),
        Event::End(TagEnd::HtmlBlock) => Event::End(TagEnd::Paragraph),
        Event::Start(Tag::Heading { level, .. }) => Event::Start(Tag::Heading {
            level: shifted(level, heading_offset),
            id: None,
            classes: Vec::new(),
            attrs: Vec::new(),
        }),
        Event::End(TagEnd::Heading(level)) => {
            Event::End(TagEnd::Heading(shifted(level, heading_offset)))
        }
        // An image would be an external asset (the page loads none): it becomes a link to it,
        // its alt text the link's text.
        Event::Start(
            Tag::Link {
                link_type,
                dest_url,
                title,
                id,
            }
            | Tag::Image {
                link_type,
                dest_url,
                title,
                id,
            },
        ) => {
            let safe = is_safe_address(&dest_url);
            unsafe_links.push(!safe);
            if !safe {
                return None;
            }
            Event::Start(Tag::Link {
                link_type,
                dest_url,
                title,
                id,
            })
        }
        Event::End(TagEnd::Link | TagEnd::Image) => {
            if unsafe_links.pop().unwrap_or(true) {
                return None;
            }
            Event::End(TagEnd::Link)
        }
        event => event,
    })
}

/// `level` moved down by `offset`, at most `<h6>`.
fn shifted(level: HeadingLevel, offset: usize) -> HeadingLevel {
    HeadingLevel::try_from((level as usize + offset).min(6)).unwrap_or(HeadingLevel::H6)
}

/// Whether a link may point at `address`: a relative one, or one of http, https or mailto. The
/// scheme is read as a browser does, with blanks and control characters inside it ignored (so
/// that `java\tscript:` is `javascript:`).
fn is_safe_address(address: &str) -> bool {
    let cleaned: String = address
        .chars()
        .filter(|c| !c.is_ascii_whitespace() && !c.is_control())
        .collect();
    let scheme_end = cleaned.find(':');
    let path_start = cleaned.find(['/', '?', '#']);
    match scheme_end {
        Some(end) if path_start.is_none_or(|start| end < start) => {
            matches!(
                cleaned[..end].to_ascii_lowercase().as_str(),
                "http" | "https" | "mailto"
            )
        }
        _ => true,
    }
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
    use proptest::prelude::*;

    /// The tags the renderer itself writes; any other `<` in its output would be markup that came
    /// from the input.
    const OWN_TAGS: [&str; 25] = [
        "a",
        "blockquote",
        "br",
        "code",
        "del",
        "em",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "hr",
        "li",
        "ol",
        "p",
        "pre",
        "strong",
        "table",
        "tbody",
        "td",
        "th",
        "thead",
        "tr",
        "ul",
    ];

    /// A piece of Markdown: a character that means something to Markdown or HTML, a word, or a
    /// link, image or autolink to an address safe or not.
    fn piece() -> impl Strategy<Value = String> {
        let address = prop_oneof![
            Just("javascript:alert(1)"),
            Just("JaVaScRiPt:alert(1)"),
            Just("java&#9;script:x"),
            Just("<java\tscript:x>"),
            Just("data:text/html,x"),
            Just("vbscript:x"),
            Just("https://example.com/?q=\"x\""),
            Just("runs/F-001/"),
            Just("mailto:me@example.com"),
            Just("#top"),
        ];
        let word = prop_oneof![
            Just("<"),
            Just(">"),
            Just("/"),
            Just("script"),
            Just("img src=x onerror=y"),
            Just("!--"),
            Just("&"),
            Just("#"),
            Just(";"),
            Just("\""),
            Just("'"),
            Just("`"),
            Just("*"),
            Just("_"),
            Just("["),
            Just("]"),
            Just("("),
            Just(")"),
            Just("!"),
            Just(":"),
            Just("javascript:"),
            Just("data"),
            Just(" "),
            Just("\n"),
            Just("- "),
            Just("| a |"),
            Just("|---|"),
            Just("```"),
            Just("    "),
            Just("tr"),
            Just("x"),
        ];
        prop_oneof![
            3 => word.prop_map(str::to_string),
            1 => (address.clone(), 0..3usize).prop_map(|(address, kind)| match kind {
                0 => format!("[x]({address})"),
                1 => format!("![x]({address})"),
                _ => format!("<{}>", address.trim_matches(['<', '>'])),
            }),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

        /// Whatever a file or an agent writes, the page gets only the renderer's own tags, and
        /// no link or image address with a scheme that could run code or load something.
        #[test]
        fn no_markup_or_unsafe_address_gets_through(
            text in proptest::collection::vec(piece(), 0..40)
        ) {
            let html = markdown(&text.concat(), 1);
            for (index, _) in html.match_indices('<') {
                let rest = html[index + 1..].trim_start_matches('/');
                let name: String = rest.chars().take_while(char::is_ascii_alphanumeric).collect();
                prop_assert!(OWN_TAGS.contains(&name.as_str()), "<{name} in {html:?}");
            }
            for (index, _) in html.match_indices("href=\"") {
                let address = &html[index + 6..];
                let address = &address[..address.find('"').unwrap_or(address.len())];
                let scheme: String = address
                    .chars()
                    .filter(|c| !c.is_whitespace() && !c.is_control())
                    .take_while(|c| *c != ':')
                    .collect::<String>()
                    .to_ascii_lowercase();
                prop_assert!(
                    !["javascript", "vbscript", "data"].contains(&scheme.as_str()),
                    "{address} in {html:?}"
                );
            }
        }
    }

    #[test]
    fn headings_lists_code_and_rules_render_and_raw_html_is_escaped() {
        let html = markdown(
            "# Title\n\nSome **bold** and `a <b>` code.\nSame paragraph.\n\n- one\n- two `x`\n  continued\n\n1. first\n2) second\n\n```\n<raw> & \"code\"\n```\n---\n<div onclick=x>html</div>\n<!-- hidden -->\nan ** unpaired",
            1,
        );
        assert_eq!(
            html,
            "<h2>Title</h2>\n\
             <p>Some <strong>bold</strong> and <code>a &lt;b&gt;</code> code.\nSame paragraph.</p>\n\
             <ul>\n<li>one</li>\n<li>two <code>x</code>\ncontinued</li>\n</ul>\n\
             <ol>\n<li>first</li>\n</ol>\n<ol start=\"2\">\n<li>second</li>\n</ol>\n\
             <pre><code>&lt;raw&gt; &amp; \"code\"\n</code></pre>\n\
             <hr />\n\
             <p>&lt;div onclick=x&gt;html&lt;/div&gt;\n</p>\n\
             <p>an ** unpaired</p>\n"
        );
        assert_eq!(markdown("###### deep", 3), "<h6>deep</h6>\n");
        assert_eq!(markdown("#nospace", 0), "<p>#nospace</p>\n");
        assert_eq!(
            markdown("```\nunclosed <x>", 0),
            "<pre><code>unclosed &lt;x&gt;</code></pre>\n"
        );
    }

    #[test]
    fn a_table_renders_as_a_table() {
        assert_eq!(
            markdown("| tool | use |\n|---|:-:|\n| `rg` | search <b>fast</b> |\n", 0),
            "<table><thead><tr><th>tool</th><th style=\"text-align: center\">use</th></tr></thead><tbody>\n\
             <tr><td><code>rg</code></td><td style=\"text-align: center\">search &lt;b&gt;fast&lt;/b&gt;</td></tr>\n\
             </tbody></table>\n"
        );
    }

    #[test]
    fn a_nested_list_is_nested() {
        assert_eq!(
            markdown("- build\n  - cargo build\n  - make\n- test\n", 0),
            "<ul>\n<li>build\n<ul>\n<li>cargo build</li>\n<li>make</li>\n</ul>\n</li>\n<li>test</li>\n</ul>\n"
        );
    }

    #[test]
    fn a_code_block_keeps_its_lines_and_escapes_them() {
        assert_eq!(
            markdown("```sh\necho '<b>' && ls\n  indented\n```\n", 0),
            "<pre><code class=\"language-sh\">echo '&lt;b&gt;' &amp;&amp; ls\n  indented\n</code></pre>\n"
        );
    }

    #[test]
    fn a_link_keeps_its_address_unless_it_could_run_code() {
        assert_eq!(
            markdown("see [the docs](https://example.com/a?b=1&c=\"2\") and <https://x.org>", 0),
            "<p>see <a href=\"https://example.com/a?b=1&amp;c=%222%22\">the docs</a> and <a href=\"https://x.org\">https://x.org</a></p>\n"
        );
        assert_eq!(
            markdown("[relative](runs/F-001/) [mail](mailto:me@example.com)", 0),
            "<p><a href=\"runs/F-001/\">relative</a> <a href=\"mailto:me@example.com\">mail</a></p>\n"
        );
        for bad in [
            "[click](javascript:alert(1))",
            "[click](JavaScript:alert(1))",
            "[click](java&#9;script:alert(1))",
            "[click](<java\tscript:alert(1)>)",
            "[click](data:text/html,<script>alert(1)</script>)",
            "[click](vbscript:msgbox)",
        ] {
            assert_eq!(markdown(bad, 0), "<p>click</p>\n", "{bad}");
        }
        // An image loads nothing: it becomes a link to its source, or its alt text alone.
        assert_eq!(
            markdown("![a chart](https://x.org/c.png) ![bad](javascript:x)", 0),
            "<p><a href=\"https://x.org/c.png\">a chart</a> bad</p>\n"
        );
    }

    #[test]
    fn raw_html_never_gets_through() {
        for (input, expected) in [
            (
                "<script>alert(1)</script>",
                "<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>\n",
            ),
            (
                "text <img src=x onerror=alert(1)> more",
                "<p>text &lt;img src=x onerror=alert(1)&gt; more</p>\n",
            ),
            (
                "<details open>\n\n**inside**\n\n</details>",
                "<p>&lt;details open&gt;\n</p>\n<p><strong>inside</strong></p>\n<p>&lt;/details&gt;</p>\n",
            ),
            ("a\u{1b}[31mred", "<p>a\u{fffd}[31mred</p>\n"),
        ] {
            assert_eq!(markdown(input, 0), expected, "{input}");
        }
    }
}
