//! Memory hygiene (DESIGN.md, "Memory hygiene"): identity files are injected into every future
//! prompt of their role, in every project, so only general knowledge graduates, in a wording
//! that names nothing of one mission:
//! - never a feature id, a run or mission id, or the project's name, nor feature ids in words
//!   ("named with the feature id like the others": each mission names its features);
//! - no path, value, address… ([`Specific`]) of one mission: one that another mission's wording
//!   of the same knowledge names too is not of one mission (`psql -f drizzle/*.sql` in two
//!   projects); values that the missions' wordings of a failure name differently are
//!   incidental, and replaced by a placeholder (`port <n> is already in use`), but a lesson's
//!   values are what it says, each project's setting (`the broker listens on localhost:29092`);
//! - an option's value (`--account=plantsci`) only when another mission's wording names it too
//!   (a setting of the project, like its paths and ports), but a quantity with its unit
//!   (`--memory-limit=1G`, `--timeout=120s`): what the tool needs;
//! - an identifier, a constant's name or a file name (`assert_cmd`, `REGISTRY_TOKEN`,
//!   `tailwind.config.js`; not a constant given a value, `GIT_PAGER=cat`, a tool's setting, nor
//!   a product's name, `LuaJIT`) only when the entries of two features or two missions name it,
//!   in code or in words (`csrf_token`, "the CSRF token": a tool's, not one feature's code),
//!   and one that the mission's decisions name (`booking_status`: a name the project chose)
//!   only when another mission's entries name it too; so a `name:qualifier` (`spotless:apply`,
//!   a tool's goal), but one the project runs as a script (`npm run db:seed`) only when another
//!   mission's wording names it too;
//! - another mission's wording of the same knowledge only when it names the same code (a
//!   command, a flag, a variable: [`code_atoms`]) or the same words in a row (an error's text)
//!   as one of this mission's: words of one subject alone (`integration`, `test`, `run`) are
//!   not one piece of knowledge;
//! - knowledge about the project's features (every entry names a feature id) and rules that
//!   this project's validator checks ("the validator rejects unprefixed models", or a
//!   convention among whose entries is a validator's) never; but what a formatter checks is the
//!   formatter's rule, whoever enforces it ("committing without dune fmt: the validator
//!   rejects it").

use std::collections::{BTreeSet, HashMap};

use crate::state::memory::Tag;

use super::items::Item;
use super::modes;
use super::practices;
use super::similarity::{
    self, analyse, is_content_word, replace_specifics, similarity, Analysis, Context, Specific,
};

/// A wording of a piece of knowledge and where it was said.
#[derive(Debug, Clone, Copy)]
pub struct Said<'a> {
    /// The text.
    pub text: &'a str,
    /// The mission that said it.
    pub mission: &'a str,
    /// What is specific in that mission.
    pub context: &'a Context,
    /// The feature it was reported on, if known (this mission's entries).
    pub feature: Option<&'a str>,
    /// Its tag, if known.
    pub tag: Option<Tag>,
}

/// What a wording must be said again by to graduate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needed {
    /// Wordings of this many distinct features of its mission, a TRICK among them if `trick`.
    Features { count: usize, trick: bool },
    /// Wordings of this many missions.
    Missions(usize),
}

impl Needed {
    /// Whether `said` counts for this rule for a wording of mission `mission`: for features,
    /// only that mission's wordings count.
    fn counts(self, said: &Said, mission: &str) -> bool {
        match self {
            Needed::Features { .. } => said.mission == mission,
            Needed::Missions(_) => true,
        }
    }

    /// How many sources the wordings `alike` (that count) are, and whether they are enough.
    fn met(self, alike: &[&Said]) -> (usize, bool) {
        match self {
            Needed::Features { count, trick } => {
                let features: BTreeSet<Option<&str>> = alike.iter().map(|s| s.feature).collect();
                let trick = !trick || alike.iter().any(|s| s.tag == Some(Tag::Trick));
                (features.len(), features.len() >= count && trick)
            }
            Needed::Missions(count) => {
                let missions: BTreeSet<&str> = alike.iter().map(|s| s.mission).collect();
                (missions.len(), missions.len() >= count)
            }
        }
    }
}

/// How many wordings of an item are weighed at most (the most frequent).
pub const MOST_WORDINGS: usize = 8;

/// The distinct wordings of `item`, most frequent first (then earliest), at most
/// [`MOST_WORDINGS`], each with the feature and the tag of its first entry.
pub fn wordings(item: &Item) -> Vec<(&str, Option<&str>, Tag)> {
    type Count<'i> = (usize, usize, Option<&'i str>, Tag);
    let mut counts: HashMap<&str, Count> = HashMap::new();
    for (order, e) in item.evidence.iter().enumerate() {
        let feature = e.feature.as_ref().map(|f| f.as_str());
        counts
            .entry(&e.text)
            .or_insert((0, order, feature, e.tag))
            .0 += 1;
    }
    let mut ranked: Vec<(&str, Count)> = counts.into_iter().collect();
    ranked
        .sort_by(|(a, (an, ao, ..)), (b, (bn, bo, ..))| bn.cmp(an).then(ao.cmp(bo)).then(a.cmp(b)));
    ranked
        .into_iter()
        .take(MOST_WORDINGS)
        .map(|(text, (_, _, feature, tag))| (text, feature, tag))
        .collect()
}

/// Whether `text` says that this project's validator (its reviewer) checks something, that the
/// project asks for it, that it is so in this project, or that it is the team's rule: a rule of
/// the project ("the validator rejects unprefixed models", "a /// comment on every public
/// function, as the project requires", "in this service an error is always a JSON body", "our
/// convention", "the project's rule"), not general knowledge.
pub fn projects_rule(text: &str) -> bool {
    const CHECKS: &[&str] = &[
        "check", "checks", "demands", "expects", "flags", "greps", "insists", "looks", "reads",
        "rejected", "rejects", "requires", "wants",
    ];
    const ASKS: &[&str] = &[
        "asks",
        "considers",
        "counts",
        "demands",
        "expects",
        "insists",
        "requires",
        "treats",
        "wants",
    ];
    // What one project is called ("this service", "this repository's", "this toolbox"): a thing
    // said of it is said of it alone.
    const OWN: &[&str] = &[
        "api",
        "app",
        "application",
        "codebase",
        "crate",
        "extension",
        "game",
        "gem",
        "library",
        "mod",
        "package",
        "plugin",
        "project",
        "repo",
        "repository",
        "service",
        "site",
        "toolbox",
    ];
    const RULES: &[&str] = &["convention", "conventions", "rule", "rules", "style"];
    // What a formatter checks is the formatter's rule, whoever enforces it ("committing
    // without dune fmt: the validator rejects it").
    if practices::formats(text) {
        return false;
    }
    let words = lowered_words(text);
    let of_this = words
        .windows(2)
        .any(|pair| pair[0] == "this" && OWN.contains(&pair[1].as_str()));
    // The team's rule, our convention, the house style, the project's rule.
    let ours = words.iter().enumerate().any(|(at, word)| {
        matches!(word.as_str(), "team" | "house" | "our" | "project")
            && words[at + 1..]
                .iter()
                .find(|next| *next != "s")
                .is_some_and(|next| RULES.contains(&next.as_str()))
    });
    of_this
        || ours
        || words.iter().enumerate().any(|(at, word)| {
            let verbs = match word.as_str() {
                "project" => ASKS,
                _ if word.starts_with("validator") || word.starts_with("reviewer") => CHECKS,
                _ => return false,
            };
            words[at + 1..]
                .iter()
                .take(3)
                .any(|next| verbs.contains(&next.as_str()))
        })
}

/// Whether `text` says it was done as everything else of its kind is done here ("like every
/// response", "as each feature's tests", "like the other prefabs", "as the rest of the API
/// does"): a convention of the project, when most of an item's wordings say so.
pub fn as_the_rest(text: &str) -> bool {
    let words = lowered_words(text);
    let like = |word: &String| matches!(word.as_str(), "like" | "as");
    words.windows(2).any(|w| {
        like(&w[0]) && matches!(w[1].as_str(), "every" | "each" | "all" | "other" | "others")
    }) || words
        .windows(3)
        .any(|w| like(&w[0]) && w[1] == "the" && (w[2].starts_with("other") || w[2] == "rest"))
}

/// Whether the lesson `text` reports that its worker applied a lesson ("ran the formatter before
/// the commit this time", "the hook passed the first time for once"): what went right once
/// because an earlier lesson was followed, not new knowledge.
pub fn reports_applied(text: &str) -> bool {
    const MARKS: &[&[&str]] = &[
        &["this", "time"],
        &["first", "time"],
        &["first", "try"],
        &["for", "once"],
    ];
    let words = lowered_words(text);
    words.windows(2).any(|pair| {
        MARKS
            .iter()
            .any(|mark| pair[0] == mark[0] && pair[1] == mark[1])
    })
}

/// The words of `text`, lowercase: its runs of letters and digits.
fn lowered_words(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// Whether `item` (its `wordings`, read in `context`) is knowledge of this project alone: a
/// wording says it is the project's rule, most say it is done as everything else here is, or
/// every entry names a feature id.
pub fn of_the_project(
    wordings: &[(&str, Option<&str>, Tag)],
    item: &Item,
    context: &Context,
) -> bool {
    let done_as_the_rest = wordings
        .iter()
        .filter(|(text, ..)| as_the_rest(text))
        .count();
    wordings.iter().any(|(text, ..)| projects_rule(text))
        || done_as_the_rest * 2 >= wordings.len()
        || about_features(item, context)
}

/// Whether every entry of `item` names a feature id: knowledge about the project's features.
pub fn about_features(item: &Item, context: &Context) -> bool {
    wordings(item).iter().all(|(text, ..)| {
        analyse(text, context)
            .specifics
            .iter()
            .any(|(kind, _)| *kind == Specific::FeatureId)
    })
}

/// The similarity of words (Dice) at which a wording confirms another: said again, not merely
/// on the same subject.
pub const CONFIRM: f64 = 0.3;

/// The wording in which an item may graduate, if one is general (see the module
/// documentation): among its own wordings (`own`, this mission's) and those of the same
/// knowledge in other missions (`others`), a general one that is said again as `needed` asks
/// (by wordings at a similarity of [`CONFIRM`] or more, or, for missions, by another mission's
/// wording that says the same words in a row: see [`phrases`]): one of this mission's if one
/// is, the one said again by the most sources, then most like them all, then the first. Values
/// of one mission are replaced by placeholders only where the missions disagree on them.
///
/// `agent`: a general wording the curator's agent gave (checked to be hygienic): the evidence
/// must still be there (the sources `needed` asks for), and the agent's wording is the one that
/// graduates. Every wording of the item counts as said again: the agent read them as one
/// piece of knowledge (and may have split off what is not), where the rules must see it in
/// their words ("Deno.openKv(\":memory:\") in each test" and "an in-memory store per test fixed
/// the order-dependent failures").
pub fn general_wording(
    own: &[Said],
    others: &[Said],
    needed: Needed,
    agent: Option<&str>,
) -> Option<String> {
    let all: Vec<(Said, Analysis)> = own
        .iter()
        .chain(others)
        .map(|said| (*said, analyse(said.text, said.context)))
        .collect();
    let confirmed = |token: &str, by: &Said| {
        // A name said in words names it too: `csrf_token`, "the CSRF token was missing".
        let in_words = token.replace('_', " ");
        let names = |text: &str| {
            let text = text.to_lowercase();
            text.contains(token) || (in_words.contains(' ') && text.contains(&in_words))
        };
        let features: BTreeSet<Option<&str>> = all
            .iter()
            .filter(|(s, _)| s.mission == by.mission && names(s.text))
            .map(|(s, _)| s.feature)
            .collect();
        (features.len() >= 2 && !by.context.chose(token)) || elsewhere(&all, by.mission, token)
    };
    let mission = own.first().map_or("", |s| s.mission);
    let own_code = code_named(own);
    let said_phrases: Vec<BTreeSet<String>> = all.iter().map(|(s, _)| phrases(s.text)).collect();
    // `all` begins with `own`.
    let own_phrases: BTreeSet<&String> = said_phrases[..own.len()].iter().flatten().collect();
    let mut best: Option<((bool, usize, f64), String)> = None;
    for ((said, analysis), said_phrases_of) in all.iter().zip(&said_phrases) {
        let text = match agent {
            Some(agent) => agent.to_string(),
            // Another mission's wording speaks for this mission's knowledge only when they name
            // the same thing (a command, a flag, a variable) or say the same words in a row (an
            // error's text), not merely words of the same subject.
            None if said.mission != mission
                && code_atoms(said.text).is_disjoint(&own_code)
                && !said_phrases_of
                    .iter()
                    .any(|phrase| own_phrases.contains(phrase)) =>
            {
                continue
            }
            None if analysis.identifiers.iter().any(|i| !confirmed(i, said)) => continue,
            None => match without_one_mission(said, analysis, &all, &|name| {
                !script(said.text, name) && confirmed(name, said)
            }) {
                Some(text) => text,
                None => continue,
            },
        };
        // Across missions, the same words in a row (a failure's effect: "the iteration hung
        // until the timeout", "no space left on device") say it again too, whatever tool each
        // mission's wording names around them.
        let alike: Vec<(&Said, f64)> = all
            .iter()
            .zip(&said_phrases)
            .filter(|((other, _), _)| needed.counts(other, said.mission))
            .map(|((other, a), theirs)| {
                let score = similarity(&analysis.words, &a.words);
                let phrase = matches!(needed, Needed::Missions(_))
                    && other.mission != said.mission
                    && !theirs.is_disjoint(said_phrases_of);
                (other, score, phrase)
            })
            .filter(|(_, score, phrase)| agent.is_some() || *score >= CONFIRM || *phrase)
            .map(|(other, score, _)| (other, score))
            .collect();
        let saids: Vec<&Said> = alike.iter().map(|(s, _)| *s).collect();
        let (sources, enough) = needed.met(&saids);
        if !enough {
            continue;
        }
        // This mission's own wordings first: it is its item that graduates.
        let key = (
            said.mission == mission,
            sources,
            alike.iter().map(|(_, score)| score).sum::<f64>(),
        );
        if best.as_ref().is_none_or(|(b, _)| {
            (key.0, key.1)
                .cmp(&(b.0, b.1))
                .then(key.2.total_cmp(&b.2))
                .is_gt()
        }) {
            best = Some((key, text));
        }
    }
    best.map(|(_, text)| text)
}

/// `said` without what is of its mission alone, or `None` if that cannot be: no feature, run or
/// mission id, nor the project's name; a specific token that another mission's wording names
/// too stays; a value that the missions name differently becomes a placeholder in a failure
/// (only across missions: within one, a value its features disagree on is still the
/// mission's; and a lesson's values are what it says).
fn without_one_mission(
    said: &Said,
    analysis: &Analysis,
    all: &[(Said, Analysis)],
    goal: &dyn Fn(&str) -> bool,
) -> Option<String> {
    // Feature ids are each mission's own names, and so is a convention about them ("named
    // with the feature id like the others").
    if names_feature_ids(said.text) {
        return None;
    }
    let missions: BTreeSet<&str> = all.iter().map(|(s, _)| s.mission).collect();
    let mut placeholders = false;
    for (kind, token) in &analysis.specifics {
        match kind {
            Specific::FeatureId | Specific::RunId | Specific::Project => return None,
            _ if elsewhere(all, said.mission, token) => {}
            Specific::Name if goal(token) => {}
            Specific::Number | Specific::HostPort | Specific::Time
                if missions.len() >= 2 && matches!(said.tag, Some(Tag::Fail | Tag::Avoid)) =>
            {
                placeholders = true
            }
            // An option's argument (`-p build/dev`) is where this project keeps it; the
            // option is what is known.
            Specific::Path if after_flag(said.text, token) => placeholders = true,
            _ => return None,
        }
    }
    // An option's value is a setting of the project (`--account=plantsci`), unless another
    // mission's wording names it too.
    if option_values(said.text)
        .iter()
        .any(|value| !elsewhere(all, said.mission, value))
    {
        return None;
    }
    // A placeholder of a feature or run id, from an item's text (or another mission's).
    let ids = [Specific::FeatureId, Specific::RunId].map(Specific::placeholder);
    if ids
        .iter()
        .any(|placeholder| said.text.contains(placeholder))
    {
        return None;
    }
    if !placeholders {
        return Some(said.text.to_string());
    }
    Some(replace_specifics(said.text, said.context, |kind, token| {
        let placeholder = match kind {
            Specific::Number | Specific::HostPort | Specific::Time => true,
            Specific::Path => after_flag(said.text, token),
            _ => false,
        };
        !placeholder || elsewhere(all, said.mission, token)
    }))
}

/// Whether `text` speaks of feature ids in words: "the feature id", "feature ids", "a
/// feature's id".
fn names_feature_ids(text: &str) -> bool {
    let words = lowered_words(text);
    let id = |word: &str| matches!(word, "id" | "ids");
    words
        .windows(2)
        .any(|pair| pair[0] == "feature" && id(&pair[1]))
        || words
            .windows(3)
            .any(|run| run[0] == "feature" && run[1] == "s" && id(&run[2]))
}

/// Whether `token` (lowercase, as read) follows a flag in `text` (`-p build/dev`).
fn after_flag(text: &str, token: &str) -> bool {
    let tokens: Vec<&str> = text.split_whitespace().collect();
    tokens.windows(2).any(|pair| {
        pair[0].starts_with('-')
            && pair[0]
                .trim_start_matches('-')
                .starts_with(char::is_alphabetic)
            && similarity::trimmed(pair[1]).to_lowercase() == token
    })
}

/// The [code atoms](code_atoms) that any of `wordings` names: what a mission's wordings of a
/// piece of knowledge name in code, to which another mission's wording speaks.
pub fn code_named(wordings: &[Said]) -> BTreeSet<String> {
    wordings
        .iter()
        .flat_map(|said| code_atoms(said.text))
        .collect()
}

/// The atoms of the code that `text` names, lowercase: each flag (`--offline`, `-a`) whole,
/// and the letters and digits of every token of code, split at its punctuation (`TZ=UTC`,
/// `spotless:apply`, `.gitignore`, `json_serializable`, `DateTime`, `UTC`): a token that holds
/// `_ . : / = $ @ #`, a lowercase letter followed by a capital, or capitals alone. Prose,
/// hyphenated compounds too (`end-to-end`, `ISO-8601`), names none.
pub fn code_atoms(text: &str) -> BTreeSet<String> {
    let mut atoms = BTreeSet::new();
    for token in text.split_whitespace() {
        let token = token.trim_matches(|c: char| !(c.is_alphanumeric() || "-_.$@#".contains(c)));
        let token = token.trim_end_matches(['.', '-']);
        let flag = token.starts_with('-')
            && token
                .trim_start_matches('-')
                .starts_with(|c: char| c.is_alphabetic());
        let inner = token.trim_start_matches(['-', '.']);
        let punctuated = inner.contains(['_', '.', ':', '/', '=', '$', '@', '#'])
            || token.starts_with('.')
            || token.starts_with('$');
        let camel = inner
            .as_bytes()
            .windows(2)
            .any(|pair| pair[0].is_ascii_lowercase() && pair[1].is_ascii_uppercase());
        let capitals = inner.len() >= 2 && inner.bytes().all(|b| b.is_ascii_uppercase());
        if flag {
            atoms.insert(token.split('=').next().unwrap_or(token).to_lowercase());
        }
        if flag || punctuated || camel || capitals {
            atoms.extend(
                inner
                    .split(|c: char| !c.is_alphanumeric())
                    .filter(|run| !run.is_empty())
                    .map(str::to_lowercase),
            );
        }
    }
    atoms
}

/// The runs of three words of `text` in a row (lowercase, without the punctuation around
/// them) of which two or more are content words: `does not exist`, not `in the project`; and
/// the [failure mode](super::modes) it tells, if any, as a phrase no text holds.
pub fn phrases(text: &str) -> BTreeSet<String> {
    let words: Vec<String> = text
        .split_whitespace()
        .map(|t| {
            t.trim_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase()
        })
        .filter(|t| !t.is_empty())
        .collect();
    let mut found: BTreeSet<String> = words
        .windows(3)
        .filter(|run| run.iter().filter(|w| is_content_word(w)).count() >= 2)
        .map(|run| run.join(" "))
        .collect();
    found.extend(modes::told(text).map(|mode| mode.phrase.to_string()));
    found
}

/// The values given to options in `text` (`--account=plantsci` → `plantsci`), lowercase: those
/// with a letter, not a placeholder (`-Dtest=<class>`) nor a variable.
pub fn option_values(text: &str) -> Vec<String> {
    text.split_whitespace()
        .map(|token| {
            token.trim_matches(|c: char| matches!(c, '`' | '\'' | '"' | ',' | ';' | ')' | '('))
        })
        .filter(|token| {
            token.starts_with('-')
                && token
                    .trim_start_matches('-')
                    .starts_with(char::is_alphabetic)
        })
        .filter_map(|token| token.split_once('=').map(|(_, value)| value))
        .map(|value| value.trim_end_matches(['.', ':']))
        .filter(|value| {
            !value.starts_with(['<', '$', '{'])
                && value.chars().any(|c| c.is_ascii_alphabetic())
                && !quantity(value)
        })
        .map(str::to_lowercase)
        .collect()
}

/// Whether `value` is a quantity with its unit (`1G`, `120s`, `512Mi`, `2.5m`): a size or a
/// time, what the tool needs, not a name the project chose.
fn quantity(value: &str) -> bool {
    let unit = value.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
    unit.len() < value.len()
        && value.starts_with(|c: char| c.is_ascii_digit())
        && (1..=3).contains(&unit.len())
        && unit.bytes().all(|b| b.is_ascii_alphabetic())
}

/// Whether `name` (lowercase) is run as a script of the project in `text` (`npm run db:seed`):
/// the word before it is `run`. A `name:qualifier` that is not (`./mvnw spotless:apply`,
/// `bin/rails db:migrate`) is a tool's goal, general when two features or two missions name it,
/// as an identifier is.
fn script(text: &str, name: &str) -> bool {
    let words: Vec<String> = text
        .split_whitespace()
        .map(|word| {
            word.trim_matches(|c: char| !(c.is_alphanumeric() || "-_:./".contains(c)))
                .trim_end_matches([':', '.'])
                .to_lowercase()
        })
        .collect();
    words
        .windows(2)
        .any(|pair| pair[1] == name && pair[0] == "run")
}

/// Whether a wording of another mission than `mission` names `token` (lowercase).
fn elsewhere(all: &[(Said, Analysis)], mission: &str, token: &str) -> bool {
    all.iter()
        .any(|(s, _)| s.mission != mission && s.text.to_lowercase().contains(token))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said<'a>(
        text: &'a str,
        mission: &'a str,
        context: &'a Context,
        feature: &'a str,
    ) -> Said<'a> {
        Said {
            text,
            mission,
            context,
            feature: Some(feature),
            tag: Some(Tag::Trick),
        }
    }

    /// `said`, told as a failure.
    fn failed(said: Said) -> Said {
        Said {
            tag: Some(Tag::Fail),
            ..said
        }
    }

    const TWO: Needed = Needed::Features {
        count: 2,
        trick: true,
    };

    #[test]
    fn a_validators_rule_is_the_projects() {
        assert!(projects_rule(
            "a mart without the fct_ prefix; the validator rejects unprefixed models"
        ));
        assert!(projects_rule(
            "every handler logs request_id, as the validator expects"
        ));
        assert!(projects_rule(
            "the check script flags it and the Validator checks the layout"
        ));
        assert!(!projects_rule(
            "the validator could not find the file: git commit -a skipped it"
        ));
        assert!(!projects_rule(
            "cargo fmt before committing: CI rejects unformatted code"
        ));
        assert!(projects_rule(
            "every public function gets a /// comment, as the project requires"
        ));
        assert!(!projects_rule(
            "the project reads its settings from the environment"
        ));
        // What the project counts or treats as something is its rule too.
        assert!(projects_rule(
            "every exported function has an example; this project counts one without as unfinished"
        ));
        assert!(projects_rule(
            "the project treats every warning as an error"
        ));
        assert!(projects_rule(
            "every route gets a name and templates link by it; the validator looks for it"
        ));
        // What a formatter checks is the formatter's rule, whoever enforces it.
        assert!(!projects_rule(
            "committing without dune fmt: @fmt fails and the validator rejects it, every time"
        ));
        assert!(!projects_rule(
            "lintr is part of the validator's checks; styler::style_pkg() before committing"
        ));
        // What is so in this project (this service, this site…) is so in it alone.
        assert!(projects_rule(
            "in this service an error is always a JSON body with its status code"
        ));
        assert!(projects_rule(
            "bundle config set --local path vendor/bundle keeps this app's gems apart"
        ));
        assert!(projects_rule(
            "in this toolbox every function takes rows or columns but returns a column"
        ));
        assert!(projects_rule(
            "moved it into the recipe provider, as every data file of this mod is generated"
        ));
        assert!(!projects_rule(
            "this time the service answered before the timeout"
        ));
        // The team's rule, our convention, the house style.
        assert!(projects_rule(
            "the man pages repeat the Example: line of --help, the team's rule for every command"
        ));
        assert!(projects_rule(
            "four-space indentation and one goal per line: our convention, checked in review"
        ));
        assert!(!projects_rule(
            "the team reads the help before the man page"
        ));
        assert!(projects_rule(
            "every changed .luau file starts with --!strict; it is the project's rule"
        ));
        assert!(!projects_rule(
            "uv run keeps the project's venv in use and its rules apart"
        ));
        // Done as the rest of its kind is here: the project's convention (see `as_the_rest`).
        assert!(as_the_rest(
            "createdAt is an ISO string in UTC like every response"
        ));
        assert!(as_the_rest(
            "renamed to LevelButton in Assets/Prefabs/UI/ like the other prefabs"
        ));
        assert!(as_the_rest(
            "the responses carry ISO strings in UTC as the rest of the API does"
        ));
        assert!(!as_the_rest(
            "as long as the server runs, every request is logged"
        ));
        // The reviewer is the validator in other words.
        assert!(projects_rule(
            "each role's README lists its variables; the reviewer checks it against the defaults"
        ));
    }

    #[test]
    fn another_missions_wording_speaks_for_this_one_only_if_it_names_the_same() {
        let app = Context::new("/p/trailmate", ["F-001"]);
        let api = Context::new("/p/parcelhub", ["F-001"]);
        let two = Needed::Missions(2);
        // This mission's wording names its code (one feature's identifier): not general; the
        // other mission's wording shares words of the subject, but no code and no phrase.
        let own = [said(
            "flutter test integration_test/ runs the end-to-end tests on the device",
            "app",
            &app,
            "F-001",
        )];
        let others = [said(
            "test classes ending in IT run under failsafe in the integration-test phase",
            "api",
            &api,
            "F-001",
        )];
        assert_eq!(general_wording(&own, &others, two, None), None);
        // The same flag in both: the other's wording says what this mission learnt.
        let own = [said(
            "cargo build could not fetch crate_index (no network); cargo build --offline worked",
            "app",
            &app,
            "F-001",
        )];
        let others = [said(
            "npm install hung: there is no network here; npm ci --offline worked",
            "api",
            &api,
            "F-001",
        )];
        assert_eq!(
            general_wording(&own, &others, two, None).as_deref(),
            Some(others[0].text)
        );
        // The same error text in both.
        let own = [said(
            "tests errored with relation \"booking_slot\" does not exist: forgot to migrate",
            "app",
            &app,
            "F-001",
        )];
        let others = [said(
            "ERROR: relation \"notifications\" does not exist; the migration was never run",
            "api",
            &api,
            "F-001",
        )];
        assert_eq!(
            general_wording(&own, &others, two, None).as_deref(),
            Some(others[0].text)
        );
        let atoms = code_atoms("TZ=UTC npx vitest, then git commit -a; .gitignore and DateTime.");
        for atom in ["tz", "utc", "-a", "a", "gitignore", "datetime"] {
            assert!(atoms.contains(atom), "{atom}: {atoms:?}");
        }
        assert!(code_atoms("end-to-end tests and ISO-8601 text").is_empty());
    }

    #[test]
    fn a_tools_goal_named_by_two_features_is_general_and_a_script_is_not() {
        let api = Context::new("/p/parcelhub", ["F-001", "F-003"]);
        let goal = [
            "run ./mvnw spotless:apply before committing or the build fails",
            "the build failed on formatting again; ./mvnw spotless:apply before committing",
        ];
        let by = |texts: [&'static str; 2], second: &'static str| -> Option<String> {
            let saids = [
                said(texts[0], "api", &api, "F-001"),
                said(texts[1], "api", &api, second),
            ];
            general_wording(&saids, &[], TWO, None)
        };
        assert!(by(goal, "F-003").is_some());
        // Named by one feature only, it may be the project's own.
        assert_eq!(by(goal, "F-001"), None);
        // A script the project runs is the project's, however many features name it.
        let script = [
            "npm run db:seed loads the demo products the tests expect",
            "the tests expect the demo products: npm run db:seed first",
        ];
        assert_eq!(by(script, "F-003"), None);
    }

    #[test]
    fn a_name_a_decision_gave_is_the_projects_however_many_features_name_it() {
        let decided = ["booking status is a Postgres enum type, booking_status"];
        let texts = [
            "autogenerate misses a new value of booking_status; add it with op.execute by hand",
            "autogenerate missed the new value of booking_status; added it with op.execute by hand",
        ];
        let by = |context: &Context| -> Option<String> {
            let saids = [
                said(texts[0], "api", context, "F-003"),
                said(texts[1], "api", context, "F-006"),
            ];
            general_wording(&saids, &[], TWO, None)
        };
        let api = Context::new("/p/ferrydesk", ["F-003", "F-006"]);
        assert!(by(&api).is_some());
        assert_eq!(by(&api.with_names_chosen_in(decided)), None);
    }

    #[test]
    fn an_options_value_is_the_projects_setting() {
        let hpc = Context::new("/p/leafnet", ["F-004", "F-006"]);
        let lab = Context::new("/p/cropnet", ["F-001"]);
        let own = [
            said(
                "jobs need --partition=gpu-a100 --account=plantsci; without the account sbatch refuses",
                "hpc",
                &hpc,
                "F-004",
            ),
            said(
                "sbatch refuses a job without --partition=gpu-a100 --account=plantsci",
                "hpc",
                &hpc,
                "F-006",
            ),
        ];
        assert_eq!(general_wording(&own, &[], TWO, None), None);
        // Named by another mission too, the value is not this project's alone.
        let others = [said(
            "sbatch needs --partition=gpu-a100 --account=plantsci on this cluster too",
            "lab",
            &lab,
            "F-001",
        )];
        assert!(general_wording(&own, &others, Needed::Missions(2), None).is_some());
        // A count, a placeholder or a flag alone are no setting.
        assert_eq!(
            option_values("go test -count=1 ./..., -Dtest=<class>, --no-pager and --pool=forks"),
            ["forks"]
        );
        // Nor a size or a time the tool needs, with its unit.
        assert_eq!(
            option_values("--memory-limit=1G --timeout=120s --limit=2.5m --mode=v1beta"),
            ["v1beta"]
        );
    }

    #[test]
    fn the_agents_general_wording_takes_every_wording_of_the_item_as_said_again() {
        let api = Context::new("/p/kettle", ["F-002", "F-005"]);
        let own = [
            said(
                "Deno.openKv(\":memory:\") in each test gives it an empty store of its own",
                "api",
                &api,
                "F-002",
            ),
            said(
                "two files saw each other's batches in the shared local database; now isolated",
                "api",
                &api,
                "F-005",
            ),
        ];
        // In their own words the two are too far apart to say it again.
        assert_eq!(general_wording(&own, &[], TWO, None), None);
        let agent = "each test opens its own in-memory store instead of the shared one";
        assert_eq!(
            general_wording(&own, &[], TWO, Some(agent)).as_deref(),
            Some(agent)
        );
        // The sources the rule asks for are still needed.
        assert_eq!(general_wording(&own[..1], &[], TWO, Some(agent)), None);
    }

    #[test]
    fn a_path_given_to_an_option_is_a_placeholder() {
        let web = Context::new("/p/shopfront", ["F-001", "F-002"]);
        // A path given to an option is where this project keeps it: the option is general.
        let tidy = |text| said(text, "web", &web, "F-001");
        let own = [
            tidy("clang-tidy needs compile_commands.json: point it there with -p out/build/dev"),
            said(
                "clang-tidy found no flags until it was given compile_commands.json",
                "web",
                &web,
                "F-002",
            ),
        ];
        assert_eq!(
            general_wording(&own, &[], TWO, None).as_deref(),
            Some("clang-tidy needs compile_commands.json: point it there with -p <path>")
        );
        // A path that is what the knowledge is about is the project's.
        let own = [
            tidy("the shared zod schemas in src/shared/ serve the API and the front end"),
            said(
                "change the zod schemas in src/shared/ only: the API and the front end use them",
                "web",
                &web,
                "F-002",
            ),
        ];
        assert_eq!(general_wording(&own, &[], TWO, None), None);
    }

    #[test]
    fn a_general_wording_is_chosen_and_values_of_one_mission_are_not() {
        let web = Context::new("/p/shopfront", ["F-001", "F-002"]);
        // Within one mission: the wording without the path is taken.
        let own = [
            said(
                "npx vitest run src/cart/total.test.ts runs that file once",
                "web",
                &web,
                "F-001",
            ),
            said(
                "npx vitest run <file> runs once and exits",
                "web",
                &web,
                "F-002",
            ),
        ];
        assert_eq!(
            general_wording(&own, &[], TWO, None).as_deref(),
            Some("npx vitest run <file> runs once and exits")
        );
        // A value of the mission in every wording: nothing general.
        let own = [
            said(
                "curl -s localhost:3001/api/products | jq",
                "web",
                &web,
                "F-001",
            ),
            said(
                "check localhost:3001/api/orders with curl and jq",
                "web",
                &web,
                "F-002",
            ),
        ];
        assert_eq!(general_wording(&own, &[], TWO, None), None);
        // A feature's placeholder, from an item's text: the convention is the project's.
        let own = [
            said(
                "the specs carry feature: \"<feature>\"",
                "web",
                &web,
                "F-001",
            ),
            said(
                "the specs carry feature: \"<feature>\" too",
                "web",
                &web,
                "F-002",
            ),
        ];
        assert_eq!(general_wording(&own, &[], TWO, None), None);
        // Nor one about feature ids in words.
        let own = |text: &'static str| {
            [
                said(text, "web", &web, "F-001"),
                said(text, "web", &web, "F-002"),
            ]
        };
        let ids = own("each migration file is named with the feature id like the others");
        assert_eq!(general_wording(&ids, &[], TWO, None), None);
        let ids = own("each migration file is named with its feature's id like the others");
        assert_eq!(general_wording(&ids, &[], TWO, None), None);
        let plain = own("each migration file is named with its date like the others");
        assert!(general_wording(&plain, &[], TWO, None).is_some());
        // The project's name never graduates; an identifier only when two features name it.
        let by = |second: &'static str| {
            [
                said(
                    "assert_cmd::Command::cargo_bin(\"shopfront\") runs the binary",
                    "web",
                    &web,
                    "F-001",
                ),
                said(
                    "assert_cmd::Command::cargo_bin runs the built binary",
                    "web",
                    &web,
                    second,
                ),
            ]
        };
        assert_eq!(general_wording(&by("F-001"), &[], TWO, None), None);
        let own = by("F-002");
        assert_eq!(
            general_wording(&own, &[], TWO, None).as_deref(),
            Some("assert_cmd::Command::cargo_bin runs the built binary")
        );
    }

    /// Across missions, values the wordings disagree on: incidental in a failure, a setting in a
    /// lesson.
    #[test]
    fn values_the_missions_disagree_on_are_a_failures_placeholders() {
        let web = Context::new("/p/shopfront", ["F-001", "F-002"]);
        let data = Context::new("/p/tripflow", ["F-001"]);
        // Ports a failure's wordings disagree on become placeholders: which port was taken is
        // incidental.
        let own = [failed(said(
            "npm run dev: port 5173 is already in use",
            "web",
            &web,
            "F-001",
        ))];
        let others = [failed(said(
            "dagster dev: port 3000 is already in use",
            "data",
            &data,
            "F-001",
        ))];
        let wording = general_wording(&own, &others, Needed::Missions(2), None).unwrap();
        assert!(wording.contains("port <n> is already in use"), "{wording}");
        // What a lesson says of its values is each project's setting, not knowledge.
        let own = [said(
            "the broker listens on localhost:29092 for the clients on the host",
            "web",
            &web,
            "F-001",
        )];
        let others = [said(
            "the broker listens on localhost:9092 for the clients on the host",
            "data",
            &data,
            "F-001",
        )];
        assert_eq!(
            general_wording(&own, &others, Needed::Missions(2), None),
            None
        );
        let (own, others) = (own.map(failed), others.map(failed));
        assert!(general_wording(&own, &others, Needed::Missions(2), None).is_some());
    }

    #[test]
    fn a_name_another_feature_says_in_words_is_named_by_it() {
        let web = Context::new("/p/clinic", ["F-001"]);
        let by = |first: &'static str| {
            [
                said(first, "web", &web, "F-003"),
                said(
                    "put hx-headers with {{ csrf_token }} on the body tag and every htmx POST passes",
                    "web",
                    &web,
                    "F-006",
                ),
            ]
        };
        // (The first names a file of one feature: not general itself.)
        let own = by("htmx POST to bookings/new.html refused: the CSRF token was missing");
        let wording = general_wording(&own, &[], TWO, None);
        assert!(wording.is_some_and(|w| w.contains("csrf_token")));
        let own = by("htmx POST to bookings/new.html refused: a token was missing");
        assert_eq!(general_wording(&own, &[], TWO, None), None);
    }
}
