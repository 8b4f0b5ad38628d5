//! Globs over relative paths, as a phase's `allow:` list gives them: `**` (a whole component)
//! matches any number of directories, none included; `*` matches any characters but `/`; `?`
//! one character but `/`; a pattern ending in `/` matches everything below it. Every other
//! character stands for itself. Small enough to write here rather than take a crate for.

/// Whether `path` (relative, `/`-separated) matches `pattern`.
pub fn matches(pattern: &str, path: &str) -> bool {
    let pattern = match pattern.strip_suffix('/') {
        Some(directory) => format!("{directory}/**"),
        None => pattern.to_string(),
    };
    let pattern: Vec<&str> = pattern.split('/').filter(|c| !c.is_empty()).collect();
    let path: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
    components_match(&pattern, &path)
}

/// Whether `path` matches any of `patterns`.
pub fn matches_any(patterns: &[String], path: &str) -> bool {
    patterns.iter().any(|pattern| matches(pattern, path))
}

fn components_match(pattern: &[&str], path: &[&str]) -> bool {
    match pattern.split_first() {
        None => path.is_empty(),
        Some((&"**", rest)) => (0..=path.len()).any(|skip| components_match(rest, &path[skip..])),
        Some((first, rest)) => match path.split_first() {
            Some((component, path_rest)) => {
                component_matches(first.as_bytes(), component.as_bytes())
                    && components_match(rest, path_rest)
            }
            None => false,
        },
    }
}

/// One component against one pattern component: `*` any run of bytes, `?` one character.
fn component_matches(pattern: &[u8], text: &[u8]) -> bool {
    match pattern.split_first() {
        None => text.is_empty(),
        Some((b'*', rest)) => (0..=text.len()).any(|skip| component_matches(rest, &text[skip..])),
        Some((b'?', rest)) => {
            // One whole UTF-8 character: its first byte and its continuation bytes.
            let width = text
                .iter()
                .skip(1)
                .take_while(|&&b| b & 0xC0 == 0x80)
                .count()
                + 1;
            !text.is_empty() && component_matches(rest, &text[width.min(text.len())..])
        }
        Some((byte, rest)) => text.first() == Some(byte) && component_matches(rest, &text[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn double_stars_cross_directories_and_single_ones_do_not() {
        assert!(matches("docs/plans/**", "docs/plans/a.md"));
        assert!(matches("docs/plans/**", "docs/plans/deep/er/b.md"));
        assert!(!matches("docs/plans/**", "docs/other.md"));
        assert!(!matches("docs/plans/**", "src/docs/plans/a.md"));
        assert!(matches("docs/plans/", "docs/plans/a/b"));
        assert!(matches("**/*.md", "README.md"));
        assert!(matches("**/*.md", "a/b/c.md"));
        assert!(!matches("**/*.md", "a/b/c.rs"));
        assert!(matches("*.md", "NOTES.md"));
        assert!(!matches("*.md", "docs/NOTES.md"));
        assert!(matches("src/**/test_*.rs", "src/test_a.rs"));
        assert!(matches("src/**/test_*.rs", "src/x/y/test_b.rs"));
        assert!(!matches("src/**/test_*.rs", "src/x/y/b_test.rs"));
    }

    #[test]
    fn question_marks_take_one_character_and_the_rest_is_literal() {
        assert!(matches("v?.txt", "v1.txt"));
        assert!(matches("v?.txt", "vé.txt"));
        assert!(!matches("v?.txt", "v12.txt"));
        assert!(!matches("v?.txt", "v/.txt"));
        assert!(matches("PROGRESS.md", "PROGRESS.md"));
        assert!(!matches("PROGRESS.md", "progress.md"));
        assert!(matches("**", "anything/at/all"));
        assert!(matches_any(&["a".into(), "b/**".into()], "b/c"));
        assert!(!matches_any(&[], "b/c"));
    }
}
