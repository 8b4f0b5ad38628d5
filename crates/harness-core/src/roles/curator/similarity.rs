//! When two memory entries say the same thing: each text is reduced to its content words
//! (normalised), and two texts are compared by the Dice coefficient of those word sets.
//!
//! Normalising: lowercase; `n't` read as `not`; timestamps and numbers dropped (they differ
//! between runs of the same lesson); a path reduced to its last component (`drizzle/*.sql` and
//! `/tmp/x/drizzle/*.sql` are the same thing); punctuation splits words; common English words and
//! filler verbs (`the`, `use`, `always`…) dropped; a light stemmer folds plurals and `-ed`/`-ing`.

/// Words that carry no subject: dropped before comparing. Negations are kept: `do not X` and `X`
/// must not look alike. Sorted, for a binary search.
const STOPWORDS: &[&str] = &[
    "a", "about", "above", "after", "again", "all", "also", "always", "am", "an", "and", "any",
    "are", "as", "at", "be", "because", "been", "before", "being", "both", "but", "by", "can",
    "could", "did", "do", "does", "doing", "done", "during", "each", "eg", "else", "etc", "every",
    "for", "from", "get", "gets", "got", "had", "has", "have", "having", "he", "her", "here",
    "him", "his", "how", "i", "ie", "if", "in", "instead", "into", "is", "it", "its", "just",
    "let", "make", "makes", "me", "more", "most", "must", "my", "need", "needs", "of", "on",
    "once", "only", "or", "other", "our", "out", "over", "own", "same", "she", "should", "so",
    "some", "such", "sure", "than", "that", "the", "their", "them", "then", "there", "these",
    "they", "this", "those", "through", "to", "too", "up", "us", "use", "used", "uses", "using",
    "very", "via", "was", "we", "were", "what", "when", "where", "which", "while", "who", "why",
    "will", "with", "would", "you", "your",
];

/// The content words of `text`, normalised, sorted and without repeats.
pub fn words(text: &str) -> Vec<String> {
    let mut lowered = text.to_lowercase();
    // Most texts have no `n't`: no second copy for them.
    if lowered.contains("n't") {
        lowered = lowered.replace("n't", " not");
    }
    let mut words: Vec<String> = lowered
        .split_whitespace()
        .flat_map(token_words)
        .filter(|word| STOPWORDS.binary_search(word).is_err())
        .map(stem)
        .filter(|word| !word.is_empty())
        .collect();
    words.sort();
    words.dedup();
    words
}

/// The words of one whitespace-separated token: nothing for a timestamp, the last component of
/// a path, and the alphanumeric runs of the rest, numbers left out.
fn token_words(token: &str) -> impl Iterator<Item = &str> {
    let token = token.trim_matches(|c: char| !c.is_alphanumeric() && c != '/' && c != '*');
    let token = if looks_like_time(token) {
        ""
    } else if token.contains('/') || token.contains('\\') {
        token
            .trim_end_matches(['/', '\\'])
            .rsplit(['/', '\\'])
            .next()
            .unwrap_or("")
    } else {
        token
    };
    token
        .split(|c: char| !c.is_alphanumeric())
        .filter(|run| !run.is_empty() && !is_number_like(run))
}

/// `2026-04-24`, `2026-04-24T10:05:12Z`, `10:05:12`.
fn looks_like_time(token: &str) -> bool {
    let digits = token.chars().filter(char::is_ascii_digit).count();
    let date = token.len() >= 10
        && token.as_bytes()[..4].iter().all(u8::is_ascii_digit)
        && token.as_bytes()[4] == b'-';
    let clock = token.contains(':')
        && digits >= 4
        && token
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, ':' | '.' | 'z' | 'Z'));
    date || clock
}

/// Digits only, or a long hex run with a digit in it (a commit, a hash, an id).
fn is_number_like(run: &str) -> bool {
    run.chars().all(|c| c.is_ascii_digit())
        || (run.len() >= 7
            && run.chars().all(|c| c.is_ascii_hexdigit())
            && run.chars().any(|c| c.is_ascii_digit()))
}

/// A light English stemmer: enough that `applies`, `applied` and `applying` meet at `apply`, and
/// `databases` and `database` at `databas`.
fn stem(word: &str) -> String {
    let mut stem = word.to_string();
    let len = stem.chars().count();
    if !stem.is_ascii() || len <= 3 {
        return stem;
    }
    if len > 4 && (stem.ends_with("ies") || stem.ends_with("ied")) {
        stem.truncate(stem.len() - 3);
        stem.push('y');
    } else if len > 5 && stem.ends_with("ing") {
        stem.truncate(stem.len() - 3);
        undouble(&mut stem);
    } else if len > 4 && stem.ends_with("ed") {
        stem.truncate(stem.len() - 2);
        undouble(&mut stem);
    } else if len > 4
        && ["sses", "xes", "ches", "shes"]
            .iter()
            .any(|s| stem.ends_with(s))
    {
        stem.truncate(stem.len() - 2);
    } else if stem.ends_with('s') && !["ss", "us", "is"].iter().any(|s| stem.ends_with(s)) {
        stem.truncate(stem.len() - 1);
    }
    if stem.len() > 3 && stem.ends_with('e') {
        stem.truncate(stem.len() - 1);
    }
    stem
}

/// `runn` → `run`, `stopp` → `stop` (but `install` stays).
fn undouble(stem: &mut String) {
    let bytes = stem.as_bytes();
    let n = bytes.len();
    if n >= 2 && bytes[n - 1] == bytes[n - 2] && !b"aeioulsz".contains(&bytes[n - 1]) {
        stem.truncate(n - 1);
    }
}

/// The Dice coefficient of two sorted word lists: 2·|common| / (|a| + |b|), from 0 (nothing in
/// common, or either empty) to 1 (the same words). Generic so that words numbered by a
/// [`Vocabulary`](super::join::Vocabulary) (sorted by number) compare exactly as their text.
pub fn similarity<T: Ord>(a: &[T], b: &[T]) -> f64 {
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    // With none needed, the count is always there.
    let common = common_words(a, b, [0, 0], 0).unwrap_or(0);
    dice(common, a.len() + b.len())
}

/// How many words two sorted lists share from positions `from` on, or `None` as soon as it is
/// certain that they share fewer than `needed`.
pub(crate) fn common_words<T: Ord>(
    a: &[T],
    b: &[T],
    from: [usize; 2],
    needed: usize,
) -> Option<usize> {
    let [mut i, mut j] = from;
    let mut common = 0;
    while i < a.len() && j < b.len() {
        if common + (a.len() - i).min(b.len() - j) < needed {
            return None;
        }
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
        }
    }
    (common >= needed).then_some(common)
}

/// The Dice coefficient of sets of `total` words in all sharing `common`: the one formula, so
/// that the join's bounds round exactly as [`similarity`] does.
pub(crate) fn dice(common: usize, total: usize) -> f64 {
    2.0 * common as f64 / total as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sim(a: &str, b: &str) -> f64 {
        similarity(&words(a), &words(b))
    }

    #[test]
    fn normalises_case_punctuation_times_numbers_and_paths() {
        assert_eq!(
            words("Run `psql -f drizzle/*.sql` at 2026-04-24T10:05:12Z (3 times)!"),
            ["f", "psql", "run", "sql", "tim"]
        );
        assert_eq!(
            words("/tmp/.tmpA1b2/project/src/main.rs fails"),
            words("crates/x/src/main.rs failed")
        );
        assert_eq!(words("Don't commit"), ["commit", "not"]);
    }

    #[test]
    fn stopwords_are_sorted_and_distinct() {
        assert!(STOPWORDS.windows(2).all(|pair| pair[0] < pair[1]));
    }

    #[test]
    fn folds_inflections() {
        assert_eq!(words("applies migrations"), words("applied migration"));
        assert_eq!(words("running the tests"), words("runs test"));
        assert_eq!(words("databases"), words("database"));
        assert_eq!(words("caching"), words("cache"));
    }

    #[test]
    fn paraphrases_are_alike_and_different_subjects_are_not() {
        let paraphrase = sim(
            "psql -f drizzle/*.sql applies migrations in filename order",
            "migrations are applied in filename order when you run psql -f drizzle/*.sql",
        );
        assert!(paraphrase >= 0.8, "{paraphrase}");
        let unrelated = sim(
            "use SQLite for the test database",
            "use pytest for the test suite",
        );
        assert!(unrelated < 0.4, "{unrelated}");
        assert_eq!(sim("", "anything"), 0.0);
        assert_eq!(sim("the same words", "same the words"), 1.0);
    }
}
