//! Cutting text to a size, on character boundaries: the head with a `…` where something was cut
//! (raw.md entries, the curator's bullets, the status board), or the tail (the notes, an agent's
//! answer, a validator's reasons); and numbers with thousands separators.

/// `text` cut to `most` characters, with `…` when cut.
pub fn cut(text: &str, most: usize) -> String {
    if text.chars().count() <= most {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(most.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// The last `count` characters of `text`.
pub fn tail_chars(text: &str, count: usize) -> &str {
    if count == 0 {
        return "";
    }
    match text.char_indices().rev().nth(count - 1) {
        Some((index, _)) => &text[index..],
        None => text,
    }
}

/// `1,234,567`: a count as people read it (the report, the benchmarks).
pub fn thousands(number: u64) -> String {
    let digits = number.to_string();
    let mut grouped = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    grouped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_are_separated() {
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(999), "999");
    }

    #[test]
    fn the_head_is_marked_where_it_was_cut() {
        assert_eq!(cut("héllo", 5), "héllo");
        assert_eq!(cut("héllo", 3), "hé…");
    }

    #[test]
    fn the_tail_is_whole_characters() {
        assert_eq!(tail_chars("héllo", 3), "llo");
        assert_eq!(tail_chars("hi", 3), "hi");
        assert_eq!(tail_chars("hi", 0), "");
    }
}
