//! Practices every agent that works in a loop meets, whatever the project and its tools: run only
//! the tests at hand while working, and format before committing. One mission's workers tell
//! one in their own words and tags ("rebar3 ct --suite reruns one suite", "a bare rebar3 ct runs
//! every suite, six minutes"; "CI runs gdformat --check", "rejected for formatting again"), too
//! far apart for their words to meet; what tells a practice here is the words any telling of it
//! needs, so that such entries are one item (see [`items`](super::items)).

use std::collections::BTreeSet;
use std::sync::OnceLock;

use super::modes::Words;
use super::similarity::{read_words, Context};

/// A practice: what tells it.
#[derive(Debug)]
pub struct Practice {
    /// Its name, as a phrase no text holds (`<the tests at hand>`).
    pub phrase: &'static str,
    /// Whether a text's words tell it.
    tells: fn(&Words<'_>) -> bool,
}

/// The phrase of the practice of formatting before committing.
pub const FORMATTED: &str = "<formatted before committing>";

/// The practices, in the order they are asked: a text tells the first whose words it has.
pub const PRACTICES: &[Practice] = &[
    Practice {
        phrase: FORMATTED,
        // A linter's `--fix` formats as it fixes: `npx eslint --fix src` before committing is
        // this practice too.
        tells: |w| {
            (w.any(formatting) || w.names_flag("--fix")) && (w.has(COMMITTED) || w.has(CHECKED))
        },
    },
    Practice {
        phrase: "<the tests at hand>",
        tells: |w| {
            let narrowed = (w.followed(RUN, ONE, 2) && w.followed(ONE, UNITS, 3))
                || (w.has(RUN) && w.followed(UNITS, &["only"], 1));
            let whole = w.followed(WHOLE, UNITS, 2) || w.has_phrase(UNFILTERED);
            let bare = w.followed(&["bare", "plain"], TESTS, 2);
            w.has(TESTS)
                && (narrowed
                    || bare
                    || (whole
                        && (w.has(SLOW) || w.has_phrase(SLOW_PHRASES) || w.has_phrase(AT_WORK))))
        },
    },
];

/// The words that tell the practices (but a formatter's name): two tellings of one practice
/// that share no other word name no tool in common.
pub fn words() -> impl Iterator<Item = &'static str> {
    let lists: [&[&str]; 8] = [COMMITTED, CHECKED, TESTS, UNITS, RUN, ONE, WHOLE, SLOW];
    let phrases: [&[&[&str]]; 3] = [UNFILTERED, SLOW_PHRASES, AT_WORK];
    let said = phrases
        .into_iter()
        .flatten()
        .flat_map(|phrase| phrase.iter());
    lists
        .into_iter()
        .flatten()
        .chain(said)
        .chain(["bare", "plain", "format", "formatting", "style"].iter())
        .copied()
}

/// The words of `words` (a text's, as the grouping reads them) that may name its tool: not a
/// practice's own (see [`words`]), nor a flag or a letter, nor who checks and how a check
/// ended. Two tellings of one practice that share none name no tool in common.
pub fn tools(words: &[String]) -> BTreeSet<String> {
    static OWN: OnceLock<Vec<String>> = OnceLock::new();
    let own = OWN.get_or_init(|| {
        let practice_words: Vec<&'static str> = self::words().collect();
        read_words(&practice_words.join(" "), &Context::default()).words
    });
    words
        .iter()
        .filter(|w| w.len() >= 2 && !w.starts_with('`'))
        .filter(|w| !own.contains(w) && !NO_TOOL.contains(&w.as_str()))
        .cloned()
        .collect()
}

/// Who checks a practice, and how a check ended: words of any telling, no tool's.
const NO_TOOL: &[&str] = &["ci", "fail", "failed", "fails", "reviewer", "validator"];

/// Whether `text` tells the practice of formatting before committing: what a formatter checks
/// is the formatter's rule, whoever enforces it (a validator, a hook, CI).
pub fn formats(text: &str) -> bool {
    told(text).is_some_and(|practice| practice.phrase == FORMATTED)
}

/// The practice `text` tells, if any.
pub fn told(text: &str) -> Option<&'static Practice> {
    told_in(&Words::of(text))
}

/// The practice `words` (a text's, read once for all it is asked) tell, if any.
pub(super) fn told_in(words: &Words<'_>) -> Option<&'static Practice> {
    PRACTICES.iter().find(|practice| (practice.tells)(words))
}

/// A word of formatting: a formatter's name ends in one (`gofmt`, `gdformat`, `perltidy`,
/// `clang-format` split at its hyphen), or the project's style tool (`styler`, `stylua`), or it
/// is the formatter of the JavaScript world, `prettier`.
fn formatting(word: &str) -> bool {
    [
        "fmt",
        "format",
        "formatted",
        "formatter",
        "formatting",
        "reformat",
        "reformatted",
        "tidy",
    ]
    .iter()
    .any(|end| word.ends_with(end))
        || ["prettier", "style", "styled", "styler", "stylua"].contains(&word)
}

/// What formatting comes before, or what refused the commit.
const COMMITTED: &[&str] = &[
    "commit",
    "commits",
    "committed",
    "committing",
    "push",
    "pushed",
    "pushing",
];
/// A check of the formatting, or its failure.
const CHECKED: &[&str] = &["check", "checked", "checks", "rejected", "rejects", "red"];
/// Tests, by whatever a runner calls them.
const TESTS: &[&str] = &["spec", "specs", "suite", "suites", "test", "tests"];
/// What a run of the tests is narrowed to.
const UNITS: &[&str] = &[
    "case",
    "class",
    "contract",
    "example",
    "file",
    "group",
    "module",
    "namespace",
    "spec",
    "suite",
    "test",
    "tests",
];
/// A run of tests.
const RUN: &[&str] = &[
    "ran",
    "reran",
    "rerun",
    "rerunning",
    "reruns",
    "run",
    "running",
    "runs",
];
/// Words that narrow a run to one of [`UNITS`].
const ONE: &[&str] = &["just", "one", "only", "single"];
/// Words that widen a run to all of [`UNITS`].
const WHOLE: &[&str] = &["all", "entire", "every", "full", "whole"];
/// A run of the tests given nothing to narrow it.
const UNFILTERED: &[&[&str]] = &[
    &["no", "path"],
    &["no", "filter"],
    &["without", "a", "filter"],
    &["without", "a", "path"],
];
/// What a whole run costs.
const SLOW: &[&str] = &["minutes", "slow", "takes", "timed", "timeout", "took"];
const SLOW_PHRASES: &[&[&str]] = &[&["time", "limit"]];
/// While a change is being worked on.
const AT_WORK: &[&[&str]] = &[
    &["at", "hand"],
    &["while", "iterating"],
    &["while", "working"],
];

#[cfg(test)]
mod tests {
    use super::*;

    fn phrase(text: &str) -> Option<&'static str> {
        told(text).map(|practice| practice.phrase)
    }

    #[test]
    fn running_the_tests_at_hand_is_one_practice_in_any_runner() {
        for text in [
            "rebar3 eunit --module=bucket_tests runs one EUnit module in two seconds",
            "a bare rebar3 ct runs every suite, the slow release suite too; give it --suite",
            "rebar3 ct --suite=http_SUITE --case=denied reruns just the failing case",
            "ran rebar3 do eunit, ct without a filter; the release suite passed the time limit",
            "bun test tests/unit/products.test.ts runs that file only and takes a second",
            "bare bun test also picked up the e2e tests, which need a running server",
            "bun test with no path runs the e2e folder too; pass tests/unit while working",
            "the whole forge test run timed out; reran only --match-path",
        ] {
            assert_eq!(phrase(text), Some("<the tests at hand>"), "{text}");
        }
        // Tests, but no run narrowed or widened; a whole suite that costs nothing.
        for text in [
            "every test gets its own temporary directory, so they run in parallel",
            "the whole suite passes on CI with the Postgres service",
            "one worker per test database keeps the fixtures apart",
            "to see my debug prints in one test: cargo test multiline -- --nocapture",
            "the console only says a case failed; the reason is in _build/test/logs/suite.log",
        ] {
            assert_eq!(phrase(text), None, "{text}");
        }
    }

    #[test]
    fn formatting_before_committing_is_one_practice_in_any_formatter() {
        for text in [
            "CI runs gdformat --check on scripts/; run gdformat before committing",
            "rejected for formatting; gdformat scripts test, then the check passed",
            "committing without dune fmt: @fmt fails, every single time",
            "CI failed on scalafmtCheckAll again; sbt scalafmtAll fixed it",
            "styler::style_pkg() before committing, as always",
            "pushing C changes without git clang-format first: the job finds something",
            "the tidy check rejected the controller; I had not run perltidy with the rc file",
            "a commit before npx eslint --fix src: the lint step fails on it every time",
        ] {
            assert_eq!(
                phrase(text),
                Some("<formatted before committing>"),
                "{text}"
            );
        }
        // Formatting, but neither a commit nor a check.
        for text in [
            "without a .ocamlformat file at the root dune fmt formats nothing",
            "prices are shown through the money format helper",
            "pytest --fixtures lists them; the check failed on a missing one",
        ] {
            assert_eq!(phrase(text), None, "{text}");
        }
    }
}
