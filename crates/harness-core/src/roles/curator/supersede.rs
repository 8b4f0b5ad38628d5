//! Which decision replaces which. A newer decision on the same subject supersedes an older one,
//! even in other words; the older then goes to MEMORY.md's History. Two decisions are on the same
//! subject when:
//! - their words are alike: similarity at the `supersede` threshold (as the join finds them),
//!   unless each states its subject and what is done to it and the two differ in both ("the model
//!   to keep is chosen by macro F1", "the test set is scored once per chosen model");
//! - they are about the same thing: in "X is/are/stays/lives …" decisions (an aside in parentheses
//!   read past; a copula after "so", "because" or a condition, "once the one before it is
//!   finished", is not the decision's; nor is a relative clause in X that an article opens: "the
//!   oldest Rakudo the module supports" is about Rakudo, not the module) and "X: …" ones with a
//!   short X, the words of the X (what is decided about) share one, amounts, prices and fees being
//!   one thing (`prices are numeric(12,2)`, `amounts are integer cents`; "state stays local",
//!   "remote state: an S3 bucket"; a possessor is not the subject: "a hike's distance" is about the
//!   distance, not the hikes; a word shared is the head of one of the two X, not only a modifier:
//!   "tide curves" and "tide alerts" are two things), or one is the acronym of the other's words
//!   (`MSRV`, "the minimum supported Rust version"; a variable's name, `$PORT`, is none), or they
//!   give one name two versions, which differ in a part both give ("GHC 9.6.6", "the compiler is
//!   GHC 9.8.4", "bumped GHC to 9.10.1", "the oldest GHC we build with is 9.10": a subject said to
//!   be a version; not "Postgres 16" and "Postgres 16.2"; a number a unit follows is a quantity:
//!   "resized by Hugo to 300, 600 and 900 px", "2 s, 4 s"); but not when each says a different
//!   thing is done to it ("tiles are decoded with libpng", "tiles are re-encoded as WebP": what a
//!   decision says is done to its subject, the participle after the copula, is part of that
//!   subject, negated or not: "accounts are never deleted", "archived accounts are hidden by a
//!   query filter"; where or how it is kept is one thing, whatever its word: "readings are stored
//!   as specific gravity", "readings are kept in degrees Plato", "drafts live in IndexedDB", and
//!   another than "a highlight is anchored by its text");
//! - they give one setting different values, whatever their words ("citations are numeric, biblatex
//!   style=numeric-comp", "the committee asks for author-year citations: biblatex
//!   style=authoryear"; "processing.guarantee stays at_least_once", "every instance runs with
//!   processing.guarantee=exactly_once_v2");
//! - they say one thing is done at another period: the word before the period of one is among
//!   the words before the other's ("the sensors are read every 60 seconds", "the board takes a
//!   reading every five minutes"; not "the dashboard refreshes its charts every 5 s", "the
//!   dashboard's session cookie expires every 12 hours");
//! - they name two alternatives of one kind, and neither names the other's ("tracks are keyed by
//!   a serial integer id", "tracks are identified by UUIDs"; see [`kinds`]), unless each states
//!   its subject and the two share no word of it;
//! - one states no subject and names every word of the subject of two words or more that the other
//!   states ("parcels get bigint primary keys", "every table's primary key is a UUIDv7"), in prose:
//!   a word inside code (`{:shift_changed, shift_id}`) names what the code carries; and one that
//!   states no subject is alike in words only if it is outside its code too;
//! - the newer says that it changes something ("now", "instead", "no more", "moved to", "moves
//!   from", "replaces", "is removed", "goes up to", "raised to"…, or that a single name or a file
//!   is gone: "Netlify is dropped", not "the extra calls are dropped") and names what is rare in
//!   the older (a word of at most [`RARE`] items, such as the tool it replaces), or is like it (a
//!   weighted similarity of [`MARKED_SIMILARITY`] or more), or gives a name of it another number
//!   (the same thing at another version: "the deployment target is iOS 16.0", "the app now needs
//!   iOS 17"; a release of three parts needs no name: "the schemas are those of 1.27.0", "the
//!   oldest cluster is now 1.29: kind runs v1.29.4"), or turns it around (it uses what the older
//!   excluded, "no autocast" then "runs under torch.autocast", or excludes what the older did,
//!   "throwing an Error" then "nothing throws any more"): "time handling moves to jiff: chrono
//!   cannot…" replaces "timestamps are parsed with chrono", or names what the older says and calls
//!   it old ("the old header is no longer read"); or, whatever the subject, it says that a file, a
//!   path or a name of code the older names is gone ("we run on PostgreSQL now; var/cobbler.db is
//!   gone"), or a single name the older says ("esbuild is dropped": words called gone may name
//!   another thing of their kind). When it says what it replaces ("no more SMTP", "instead of
//!   stored keys"), it replaces only a decision that names it (how many there were, "instead of one
//!   fixed amount", names nothing). A change said after "so" or "because" in the same clause is
//!   what comes of the decision, not one it announces. It replaces a decision that states its
//!   subject only if it names that subject (a word of it, or one that begins or is begun by one:
//!   "time" for "timestamps") or another version of it.
//!
//! Two decisions that open with different names of code ("the /cmd_vel subscription uses … depth
//! 10", "the /scan subscription uses … depth 5") are on two subjects, however alike their words or
//! what they give.
//!
//! A decision that adds to others ("also", "too", "as well", "a second …", "like the rest", "like
//! every other …", "X joins Y", in its first clause), or says what is done in one case ("until the
//! user signs in, …"), replaces none; one that says in a later clause that what an older one on
//! another subject decided goes on ("…; mist still serves it through wisp") leaves it current, and
//! so does one that names there the older's subject ("tag ids are INTEGER …; pin ids stay UUID
//! strings"), unless it announces a change. A decision that replaces one on its subject or in its
//! words replaces no other by the change it announces: the change is that one. The successor of a
//! decision is the newer one on its subject (by its words or what it is about first, then by a
//! change it announces), the most similar, then the latest. Decisions are compared with the
//! [`WINDOW`] decisions before them that share what they are about or, for a change announced, any
//! of them: a log of many thousands of decisions costs no more than its decisions.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::base::time::Timestamp;

use super::hygiene;
use super::items::{Item, Kind};
use super::join::{self, Vocabulary};
use super::kinds;
use super::similarity::{is_unit, possessor, similarity, Context};
use super::Cancelled;

/// The weighted similarity at which a decision announcing a change replaces an older one,
/// without a rare word in common.
pub const MARKED_SIMILARITY: f64 = 0.2;
/// A word held by this many items of the mission or fewer is rare: a decision announcing a
/// change that names a rare word of an older one (the tool it replaces) replaces it.
pub const RARE: usize = 2;
/// The shortest word that names another it begins (`tim`, of `timestamp`).
const PREFIX: usize = 3;
/// How many earlier decisions a decision is compared with for each of the rules that are not
/// the similarity of words.
pub const WINDOW: usize = 256;

/// Words that say a decision replaces an earlier one.
const CHANGES: &[&str] = &[
    "any more",
    "anymore",
    "are deleted",
    "are gone",
    "are removed",
    "bumped to",
    "from now on",
    "go up to",
    "goes up to",
    "instead",
    "instead of",
    "is deleted",
    "is gone",
    "is removed",
    "lowered to",
    "move from",
    "move to",
    "moved from",
    "moved to",
    "moves from",
    "moves to",
    "no longer",
    "no more",
    "now",
    "raised to",
    "replace",
    "replaced",
    "replaces",
    "switch to",
    "switched",
    "went up to",
];
/// What ends the phrase that a decision calls old or gone.
const PHRASE_ENDS: [char; 5] = [';', ':', ',', '(', '—'];
/// How a clause says that what it names is no more (`var/cobbler.db is gone`).
const GONE: &[&str] = &[
    " are deleted",
    " are dropped",
    " are gone",
    " are removed",
    " is deleted",
    " is dropped",
    " is gone",
    " is removed",
];
/// Words that open what comes of a decision or why it is taken (with the spaces around them).
const CONSEQUENCES: &[&str] = &[" because ", " so "];
/// Words that say, in a decision's first clause, that it adds to earlier ones ("the Input Map
/// also binds a gamepad", "the export is a second Seaside application"; and "exports live
/// under /api/v1 like the rest", see
/// [`hygiene::as_the_rest`]; and, when it announces no change, "acronyms go through the same
/// glossaries setup"); said later, they tell of what else follows from it ("…, and CI says 5.2
/// as well").
const ADDITIONS: &[&str] = &[
    "a second",
    "additionally",
    "also",
    "as well",
    "in addition",
    "too",
];
/// Words that say, in a decision's first clause, that what it decides joins what was decided
/// before ("credit card joins iDEAL and Bancontact at checkout"); said later, they tell of
/// something else ("…; ggplot2 joins Imports").
const JOINING: &[&str] = &["alongside", "join", "joins"];
/// Words that open a condition: a decision that starts with one ("until the user signs in, …",
/// "before a schema upgrade the database is copied …") says what is done in that case, and adds
/// to the decisions on the others.
const CONDITIONS: &[&str] = &[
    "after", "before", "if", "once", "unless", "until", "when", "whenever", "while",
];
/// Copulas: what comes before the first of them in a decision's first clause is its subject.
const COPULAS: &[&str] = &[
    "are", "is", "live", "lives", "remain", "remains", "stay", "stays", "was", "were",
];
/// The most content words of a heading that names a decision's subject ("remote state now:").
const HEADING_WORDS: usize = 3;
/// What the rules need to know of a decision.
#[derive(Debug, Clone, Default)]
struct Decision {
    /// The words of its subject (see the module documentation), and the last of them before
    /// any preposition: its head (`tide curves` → `curv`; `the predictions of a station` →
    /// `prediction`; of a name, its last part: `sketch_merge_agg` → `agg`).
    about: BTreeSet<String>,
    /// All its words; and those it says outside code, sorted (see [`prose`]), with whether
    /// it has any code at all (when not, its prose is its words).
    words: BTreeSet<String>,
    prose: Vec<String>,
    has_code: bool,
    /// The words it negates: each that follows a negation (`no autocast`, `nothing throws`).
    negated: BTreeSet<String>,
    head: Option<String>,
    /// Its acronyms (`msrv`), and the initials of its runs of three to six content words.
    acronyms: BTreeSet<String>,
    initials: BTreeSet<String>,
    /// It announces a change; it adds to others.
    changes: bool,
    adds: bool,
    /// What is done to its subject, when it says so ("tiles are *decoded* with libpng"):
    /// the participle after the copula, stemmed.
    action: Option<String>,
    /// Its words, numbered with weights, and the rare ones (see [`RARE`]), without the words
    /// that announce a change.
    weighted: Vec<u32>,
    rare: BTreeSet<String>,
    /// Its words but those that announce a change.
    topical: BTreeSet<String>,
    /// The names it gives a number right after (`iOS 16.0` → `ios`, `16.0`), lowercase, with the
    /// number.
    versions: Vec<(String, String)>,
    /// The major and minor parts of its releases: the versions of three parts or more
    /// (`1.29.4` → 1, 29), named or not.
    releases: BTreeSet<(String, String)>,
    /// What it says it replaces: the words after "instead of" or "no more" in their clause
    /// (`no more SMTP`); empty when it does not say.
    named: BTreeSet<String>,
    /// What it calls old: the words after "the old", "the previous" or "the former" in their
    /// phrase (`the old Input class` → input, class).
    former: BTreeSet<String>,
    /// The files, paths and names of code it names, and those it says are gone ("var/app.db is
    /// gone").
    code: BTreeSet<String>,
    gone: BTreeSet<String>,
    /// The words of a single name it says is gone, not code ("esbuild is dropped").
    gone_names: BTreeSet<String>,
    /// What a later clause of it says goes on as it was ("…; mist still serves it through
    /// wisp"): the words of such clauses.
    kept: BTreeSet<String>,
    /// The settings it gives a value (`style=numeric-comp`, `framework = arduino`), by name.
    settings: BTreeMap<String, String>,
    /// The names of code it opens with (see [`opening_code`]).
    opening: BTreeSet<String>,
    /// How often it says a thing is done, if it does (see [`period`]).
    period: Option<Period>,
    /// The alternatives it names, by kind (see [`kinds`]).
    alternatives: BTreeMap<&'static str, BTreeSet<&'static str>>,
}

/// How often a decision says a thing is done ("the sensor is read every 10 seconds").
#[derive(Debug, Clone)]
struct Period {
    /// The period, in seconds.
    seconds: f64,
    /// The words of its clause before the period: what is done, and to what; and the last of
    /// them.
    before: Vec<String>,
    last: String,
}

impl Decision {
    /// What the rules need to know of `item`, but its words (see [`Decision::weigh`]).
    fn of(item: &Item, context: &Context) -> Self {
        let text = &item.text;
        let has_in = |lowered: &str, phrases: &[&str]| {
            phrases.iter().any(|p| {
                lowered.match_indices(p).any(|(at, _)| {
                    lowered.as_bytes()[at - 1] == b' ' && lowered.as_bytes()[at + p.len()] == b' '
                })
            })
        };
        let decided = spaced(&decided(text));
        let first = spaced(first_clause(text));
        let said_gone = said_gone(text);
        let gone = gone(&said_gone);
        let gone_names = gone_names(&said_gone, context);
        // A name or a file said to be gone is a change announced ("Netlify is dropped"); what
        // else is ("the extra calls are dropped") need not be.
        let changes = has_in(&decided, CHANGES) || !gone.is_empty() || !gone_names.is_empty();
        let (about, head) = subject(text, context);
        let prose = prose(text, context);
        Self {
            about,
            words: item.words.iter().cloned().collect(),
            has_code: prose.is_some(),
            prose: prose.unwrap_or_else(|| item.words.clone()),
            negated: negated(text, context),
            head,
            action: action(text, context),
            acronyms: acronyms(text),
            initials: BTreeSet::new(),
            changes,
            adds: has_in(&first, ADDITIONS)
                || (has_in(&first, &["the same"]) && !changes)
                || hygiene::as_the_rest(&first)
                || has_in(&first, JOINING)
                || conditional(text),
            weighted: Vec::new(),
            rare: BTreeSet::new(),
            topical: BTreeSet::new(),
            named: named(text, context),
            former: former(text, context),
            code: code_tokens(text),
            gone,
            gone_names,
            versions: versions(text),
            releases: releases(text),
            kept: kept(text, context),
            settings: settings(text),
            opening: opening_code(text),
            period: period(text, context),
            alternatives: kinds::named(text),
        }
    }

    /// Its words weighed by `vocabulary`, and the rare ones: what a decision announcing a
    /// change is compared by.
    fn weigh(&mut self, item: &Item, vocabulary: &Vocabulary) {
        let topical = topical(&item.words);
        self.rare = topical
            .iter()
            .filter(|w| vocabulary.holding(w) <= RARE)
            .cloned()
            .collect();
        self.weighted = vocabulary.weighted_ids(&topical);
        self.topical = topical.into_iter().collect();
    }

    /// Whether each says what it is about and what is done to it, and the two differ in both:
    /// "the test set is scored once per chosen model" and "the model to keep is chosen by macro
    /// F1" share their words, not their subject.
    fn other_subject(&self, other: &Decision) -> bool {
        self.subjects_apart(other)
            && matches!((&self.action, &other.action), (Some(one), Some(two)) if one != two)
    }

    /// Whether each states what it is about and the two share no word of it.
    fn subjects_apart(&self, other: &Decision) -> bool {
        !self.about.is_empty() && !other.about.is_empty() && self.about.is_disjoint(&other.about)
    }

    /// Whether the two give one name another number ("the deployment target is iOS 16.0",
    /// "the app now needs iOS 17"): the same thing at another version.
    fn other_version(&self, other: &Decision) -> bool {
        let named = self.versions.iter().any(|(name, number)| {
            other.versions.iter().any(|(theirs, _)| theirs == name)
                && !other.versions.iter().any(|(theirs, other_number)| {
                    theirs == name && same_version(number, other_number)
                })
        });
        // Unnamed, a release of three parts is a version of what has releases of its major
        // ("Kubernetes 1.27.0", "checked for 1.29.0").
        let release = self.releases.iter().any(|(major, _)| {
            other.releases.iter().any(|(theirs, _)| theirs == major)
                && self.releases.is_disjoint(&other.releases)
        });
        named || release
    }

    /// Whether the two open with different names of code, and so are about two things,
    /// however alike their words or what they give ("the /cmd_vel subscription uses … depth
    /// 10", "the /scan subscription uses … depth 5").
    fn opens_with_other_code(&self, other: &Decision) -> bool {
        !self.opening.is_empty()
            && !other.opening.is_empty()
            && self.opening.is_disjoint(&other.opening)
    }

    /// Whether the two give one setting different values (`biblatex style=numeric-comp`, "the
    /// committee asks for author-year citations: biblatex style=authoryear"): whatever their
    /// words, that setting is what both decide.
    fn other_setting(&self, other: &Decision) -> bool {
        self.settings.iter().any(|(name, value)| {
            other
                .settings
                .get(name)
                .is_some_and(|theirs| theirs != value)
        })
    }

    /// Whether the two say one thing is done at another period: the word before the period of
    /// one is among the words before the other's ("the sensors are read every 60 seconds",
    /// "the board now takes a reading every five minutes"; not "the dashboard refreshes every
    /// 5 s" and "the dashboard's session cookie expires every 12 hours").
    fn other_period(&self, other: &Decision) -> bool {
        let (Some(one), Some(two)) = (&self.period, &other.period) else {
            return false;
        };
        let last_in = |a: &Period, b: &Period| b.before.contains(&a.last);
        (one.seconds - two.seconds).abs() > 0.01 * one.seconds.max(two.seconds)
            && (last_in(one, two) || last_in(two, one))
    }

    /// Whether `newer` names what this decision is about, when it says so: a word of its
    /// subject or one that begins the other ("time handling moves to jiff" names the subject of
    /// "timestamps are parsed with chrono"). A change announced on something else ("beacons now
    /// advertise every 2.5 s") does not replace a decision on another subject ("the sensor is
    /// read every 60 s").
    fn named_by(&self, newer: &Decision) -> bool {
        let begins = |long: &str, short: &str| short.len() >= PREFIX && long.starts_with(short);
        self.about.is_empty()
            || self.other_version(newer)
            || self.about.iter().any(|word| {
                newer
                    .topical
                    .iter()
                    .any(|theirs| begins(word, theirs) || begins(theirs, word))
            })
    }

    /// Whether `newer`, alike in words, is alike in what it says: one that states no subject
    /// must be alike outside its code too ("a schedule broadcast carries only
    /// `{:shift_changed, shift_id}`" is not about "every change to a shift").
    fn alike_in_prose(&self, newer: &Decision, supersede: f64) -> bool {
        !newer.about.is_empty()
            || !(self.has_code || newer.has_code)
            || similarity(&self.prose, &newer.prose) >= supersede
    }

    /// Whether it says that what `older` decided goes on as it was: a later clause that says so
    /// names a word of it ("…; mist still serves it through wisp").
    fn keeps(&self, older: &Decision) -> bool {
        self.kept.intersection(&older.words).next().is_some()
    }

    /// Whether a later clause of it names the subject of `older` as going on, with the words of
    /// its own subject: "tag ids are INTEGER …; pin ids stay UUID strings" keeps "pin ids are …".
    fn keeps_subject(&self, older: &Decision) -> bool {
        older.about.iter().any(|w| self.kept.contains(w))
            && older
                .about
                .iter()
                .all(|w| self.kept.contains(w) || self.about.contains(w))
    }

    /// Whether `word` is the head of its subject (any word of it, when it has none).
    fn is_head(&self, word: &str) -> bool {
        self.head.as_deref().is_none_or(|head| head == word)
    }

    /// Whether the two are about the same thing (but their words). Two that say different
    /// things are done to it are not ("tiles are decoded with libpng", "tiles are re-encoded
    /// as WebP").
    fn same_subject(&self, other: &Decision) -> bool {
        if self.other_setting(other) {
            return true;
        }
        if let (Some(one), Some(two)) = (&self.action, &other.action) {
            if one != two {
                return false;
            }
        }
        // One that states no subject is about the subject of two words or more that the other
        // states when it names all of them ("parcels get bigint primary keys", "every table's
        // primary key is…"); a subject of one word is too often named in passing.
        // Named in prose: a word inside code (`{:shift_changed, id}`) names what the code
        // carries, not what is decided about ("every change to a shift is broadcast…").
        let named = |stated: &Decision, unstated: &Decision| {
            stated.about.len() >= 2
                && unstated.about.is_empty()
                && stated
                    .about
                    .iter()
                    .all(|word| unstated.prose.binary_search(word).is_ok())
        };
        self.about
            .intersection(&other.about)
            .any(|word| self.is_head(word) || other.is_head(word))
            || named(self, other)
            || named(other, self)
            || self.acronyms.intersection(&other.initials).next().is_some()
            || other.acronyms.intersection(&self.initials).next().is_some()
            || self.other_version(other)
            || self.other_period(other)
            || self.other_alternative(other)
    }

    /// Whether the two name two alternatives of one kind, and neither the other's ("tracks are
    /// keyed by a serial integer id", "tracks are identified by UUIDs"), unless each states
    /// its subject and the two share no word of it.
    fn other_alternative(&self, other: &Decision) -> bool {
        !self.subjects_apart(other)
            && kinds::other_alternative(&self.alternatives, &other.alternatives)
    }
}

/// How strongly `newer` replaces `older`, given the similarity of their words (`alike`:
/// whether it reaches the threshold), or `None` if it does not.
fn replaces(older: &Decision, newer: &Decision, score: f64, alike: bool) -> Option<f64> {
    if newer.adds {
        return None;
    }
    let other_code = older.opens_with_other_code(newer);
    // Said in a later clause to go on as it was, on a subject like the newer's, what the older
    // decided is not replaced ("tag ids are INTEGER …; pin ids stay UUID strings").
    if !newer.changes && newer.keeps_subject(older) {
        return None;
    }
    if older.same_subject(newer) && !other_code {
        return Some(2.0 + score);
    }
    // Said to go on as it was, on another subject, what the older decided is not replaced,
    // however alike their words ("…; mist still serves it through wisp").
    if !newer.changes && newer.keeps(older) {
        return None;
    }
    if alike && !older.other_subject(newer) && !other_code {
        return Some(2.0 + score);
    }
    // A change that names what it replaces replaces only what names it.
    let related = || {
        (older.rare.intersection(&newer.rare).next().is_some()
            || similarity(&older.weighted, &newer.weighted) >= MARKED_SIMILARITY
            || older.other_version(newer))
            && (newer.named.is_empty() || older.topical.intersection(&newer.named).next().is_some())
            || older.topical.intersection(&newer.former).next().is_some()
    };
    // A change that turns the older around: it uses what the older excluded ("no autocast",
    // then "the forward pass runs under torch.autocast"), or excludes what the older did.
    let turned = || {
        let affirms =
            |d: &Decision, word: &String| d.topical.contains(word) && !d.negated.contains(word);
        older.negated.iter().any(|w| affirms(newer, w))
            || newer.negated.iter().any(|w| affirms(older, w))
    };
    // A file, a path or a name of code it says is gone is named, whatever the subject ("we run
    // on PostgreSQL now; var/cobbler.db is gone"), and so is a single name the older says
    // ("esbuild is dropped"); words called gone ("the one-second interval") may name another
    // thing of their kind.
    let gone =
        || !newer.gone.is_disjoint(&older.code) || !newer.gone_names.is_disjoint(&older.topical);
    (newer.changes && ((older.named_by(newer) && (related() || turned())) || gone()))
        .then_some(1.0 + score)
}

/// Marks each decision of `items` that a later decision on the same subject replaces (see the
/// module documentation; `supersede`: the similarity of words at which they are).
pub fn mark(
    items: &mut [Item],
    supersede: f64,
    context: &Context,
    cancel: &dyn Fn() -> bool,
) -> Result<(), Cancelled> {
    let decisions: Vec<usize> = (0..items.len())
        .filter(|&i| items[i].kind == Kind::Decision)
        .collect();
    let read = read_decisions(items, &decisions, context, cancel)?;
    let mut successors = Successors::new(items, &decisions);
    let score =
        |a: usize, b: usize| similarity(&items[decisions[a]].words, &items[decisions[b]].words);
    // Every pair is scored only once the order of the two is known (most pairs of a large log
    // are met by the join and fall short).
    let offer = |a: usize, b: usize, successors: &mut Successors| {
        successors.offer(a, b, |older, newer| {
            let score = score(a, b);
            let alike = score >= supersede && read[older].alike_in_prose(&read[newer], supersede);
            replaces(&read[older], &read[newer], score, alike)
        });
    };
    if supersede > 0.0 {
        let ids = numbered(&decisions, items, cancel)?;
        join::candidate_pairs(&ids, supersede, cancel, |a, b, pair| {
            successors.offer(a, b, |older, newer| {
                let score = pair.reaches()?;
                let alike = read[older].alike_in_prose(&read[newer], supersede);
                replaces(&read[older], &read[newer], score, alike)
            });
        })?;
    } else {
        // At a threshold of 0 or below, decisions that share no word are alike too: every
        // pair is, and no filter applies.
        for a in 0..decisions.len() {
            if cancel() {
                return Err(Cancelled);
            }
            for b in a + 1..decisions.len() {
                offer(a, b, &mut successors);
            }
        }
    }
    for (a, b) in other_candidates(&read, &successors.last_seen, cancel)? {
        offer(a, b, &mut successors);
    }
    let chosen: Vec<Option<String>> = successors.chosen();
    for (decision, successor) in decisions.into_iter().zip(chosen) {
        items[decision].superseded_by = successor;
    }
    Ok(())
}

/// What the rules need to know of each of `decisions` (indices in `items`). The initials of
/// their words are worked out only if some decision has an acronym, and their words weighed
/// only if some decision announces a change: in a log of many decisions, neither is needed.
fn read_decisions(
    items: &[Item],
    decisions: &[usize],
    context: &Context,
    cancel: &dyn Fn() -> bool,
) -> Result<Vec<Decision>, Cancelled> {
    let mut read = Vec::with_capacity(decisions.len());
    for &i in decisions {
        if cancel() {
            return Err(Cancelled);
        }
        read.push(Decision::of(&items[i], context));
    }
    if read.iter().any(|d| !d.acronyms.is_empty()) {
        for (decision, &i) in read.iter_mut().zip(decisions) {
            decision.initials = initials(&items[i].text);
        }
    }
    if read.iter().any(|d| d.changes) {
        // Rarity among everything the mission said: a tool named by two decisions is rare,
        // `run` is not.
        let vocabulary = Vocabulary::new(items.iter().map(|item| item.words.as_slice()));
        for (decision, &i) in read.iter_mut().zip(decisions) {
            if cancel() {
                return Err(Cancelled);
            }
            decision.weigh(&items[i], &vocabulary);
        }
    }
    Ok(read)
}

/// The decisions' words as numbers, for the join.
fn numbered(
    decisions: &[usize],
    items: &[Item],
    cancel: &dyn Fn() -> bool,
) -> Result<Vec<Vec<u32>>, Cancelled> {
    let vocabulary = Vocabulary::new(decisions.iter().map(|&i| items[i].words.as_slice()));
    let mut ids = Vec::with_capacity(decisions.len());
    for &i in decisions {
        if cancel() {
            return Err(Cancelled);
        }
        ids.push(vocabulary.ids(&items[i].words));
    }
    Ok(ids)
}

/// The pairs of decisions (by number) that the rules but the similarity of words may find:
/// those that share a word of what they are about, an acronym, a name given a version, a
/// setting, a period's words or a kind of alternatives (by its name, which is no word), and
/// each decision announcing a change with the ones before it; each pair within [`WINDOW`]
/// decisions of each other.
fn other_candidates(
    read: &[Decision],
    last_seen: &[Timestamp],
    cancel: &dyn Fn() -> bool,
) -> Result<BTreeSet<(usize, usize)>, Cancelled> {
    let mut order: Vec<usize> = (0..read.len()).collect();
    order.sort_by_key(|&d| (last_seen[d], d));
    let mut by_key: HashMap<&str, Vec<usize>> = HashMap::new();
    let mut by_word: HashMap<&str, Vec<usize>> = HashMap::new();
    let mut by_subject_word: HashMap<&str, Vec<usize>> = HashMap::new();
    let mut pairs = BTreeSet::new();
    // Only the initials that are some decision's acronym can match one.
    let acronyms: BTreeSet<&str> = read
        .iter()
        .flat_map(|d| d.acronyms.iter().map(String::as_str))
        .collect();
    for (position, &newer) in order.iter().enumerate() {
        if cancel() {
            return Err(Cancelled);
        }
        let decision = &read[newer];
        if decision.changes {
            let start = position.saturating_sub(WINDOW);
            pairs.extend(order[start..position].iter().map(|&older| (older, newer)));
        }
        let initials = decision
            .initials
            .iter()
            .filter(|i| acronyms.contains(i.as_str()));
        // A name given a version is what a decision giving it another is about.
        let named = decision.versions.iter().map(|(name, _)| name);
        let keys = decision
            .about
            .iter()
            .chain(&decision.acronyms)
            .chain(initials)
            .chain(named)
            .chain(decision.settings.keys())
            .chain(decision.period.iter().flat_map(|p| &p.before))
            .map(String::as_str)
            .chain(decision.alternatives.keys().copied());
        for key in keys {
            let earlier = by_key.entry(key).or_default();
            let start = earlier.len().saturating_sub(WINDOW);
            pairs.extend(earlier[start..].iter().map(|&older| (older, newer)));
            earlier.push(newer);
        }
        // A decision that states no subject, by each of its words, meets those before it that
        // state one by a word of it (one is enough: the rule wants them all), and the other
        // way round (see `Decision::same_subject`).
        if decision.about.is_empty() {
            for word in &decision.words {
                let earlier = by_subject_word
                    .get(word.as_str())
                    .map_or(&[][..], Vec::as_slice);
                let start = earlier.len().saturating_sub(WINDOW);
                pairs.extend(earlier[start..].iter().map(|&older| (older, newer)));
                by_word.entry(word.as_str()).or_default().push(newer);
            }
        } else if let Some(word) = decision
            .about
            .iter()
            .next()
            .filter(|_| decision.about.len() >= 2)
        {
            let earlier = by_word.get(word.as_str()).map_or(&[][..], Vec::as_slice);
            let start = earlier.len().saturating_sub(WINDOW);
            pairs.extend(earlier[start..].iter().map(|&older| (older, newer)));
            by_subject_word
                .entry(word.as_str())
                .or_default()
                .push(newer);
        }
    }
    pairs.retain(|(a, b)| a != b);
    Ok(pairs)
}

/// `text` lowercased, its words between single spaces, with a space before and after.
fn spaced(text: &str) -> String {
    let words: Vec<&str> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    format!(" {} ", words.join(" ").to_lowercase())
}

/// What `text` decides: each of its clauses (split at `;`) without what follows "so" or
/// "because" in it. That is why, or what comes of it ("…, so a URL no longer tells how many
/// members there are"): a change said there is not the decision's; one said in a clause after
/// it is ("…, so gamepads work; no more calls to the old Input class").
fn decided(text: &str) -> String {
    let clauses = text.split(';').map(before_consequence);
    clauses.collect::<Vec<_>>().join(";")
}

/// `clause` up to "so" or "because": what it decides, without why or what comes of it.
fn before_consequence(clause: &str) -> &str {
    let lowered = clause.to_lowercase();
    let end = CONSEQUENCES
        .iter()
        .filter_map(|word| lowered.find(word))
        .min()
        .unwrap_or(clause.len());
    // Lowercasing keeps the byte length of ASCII text; elsewhere the whole clause is kept.
    clause
        .get(..end)
        .filter(|_| lowered.len() == clause.len())
        .unwrap_or(clause)
}

/// `words` without those that announce a change or negate (`now`, `no`, `more`…): what is
/// shared besides them says what the change is about.
/// `words` (a subject, lowercase) without the relative clause that an article opens after a
/// noun: "the oldest rakudo the module supports" is about the oldest Rakudo, not the module.
fn without_relative<'w>(words: &'w [&'w str]) -> &'w [&'w str] {
    const ARTICLES: &[&str] = &["a", "an", "the"];
    const CONJUNCTIONS: &[&str] = &["and", "or", "nor", "but"];
    let opens = |at: usize| {
        ARTICLES.contains(&words[at])
            && !ARTICLES.contains(&words[at - 1])
            && !PREPOSITIONS.contains(&words[at - 1])
            && !CONJUNCTIONS.contains(&words[at - 1])
    };
    let end = (1..words.len())
        .find(|&at| opens(at))
        .unwrap_or(words.len());
    &words[..end]
}

fn topical(words: &[String]) -> Vec<String> {
    const ANNOUNCING: &[&str] = &[
        "anymor", "gon", "instead", "longer", "mor", "mov", "never", "no", "not", "now", "replac",
        "switch",
    ];
    words
        .iter()
        .filter(|w| !ANNOUNCING.contains(&w.as_str()))
        .cloned()
        .collect()
}

/// What a decision is about: the content words before the first copula of its first clause
/// (`the dev and test DB is now …` → dev, test, db), if it has one, and the head of these: the
/// last before any preposition (`db`). Two subjects that share only a modifier are two
/// subjects: "tide curves are drawn with Swift Charts", "tide alerts are local notifications".
fn subject(text: &str, context: &Context) -> (BTreeSet<String>, Option<String>) {
    let text = &without_asides(text);
    let clause = first_clause(text);
    let lowered = clause.to_lowercase();
    // A possessor is not what is decided about: "a hike's distance" is about the distance.
    let words: Vec<&str> = lowered
        .split_whitespace()
        .filter(|w| possessor(w).is_none())
        .collect();
    let read = |words: &[&str]| -> Vec<String> {
        super::similarity::read_words(&words.join(" "), context)
            .words
            .into_iter()
            .filter(|w| !w.starts_with('`') && !CHANGES.contains(&w.as_str()))
            .collect()
    };
    let head = |words: &[&str]| -> Option<String> {
        let end = words
            .iter()
            .position(|w| PREPOSITIONS.contains(w))
            .unwrap_or(words.len());
        // The last word in the text's order: that of a name's last part (`hll_add_agg` → agg).
        words[..end]
            .iter()
            .flat_map(|word| word.split(|c: char| !c.is_alphanumeric()))
            .rev()
            .find_map(|run| read(&[run]).pop())
    };
    // "remote state now: an S3 bucket": a short heading before a colon names the subject; a
    // colon inside a token (`{:shift_changed, id}`, `ConnectionStrings:Main`) is no heading's.
    let after = &text[clause.len()..];
    let heading =
        after.starts_with(':') && after[1..].chars().next().is_none_or(char::is_whitespace);
    match main_copula(&words) {
        Some(copula) => {
            let subject = without_relative(&words[..copula]);
            let about = read(subject);
            let head = head(subject);
            (about.into_iter().collect(), head)
        }
        None if heading => {
            let about: BTreeSet<String> = read(&words).into_iter().collect();
            if about.len() <= HEADING_WORDS {
                (about, head(&words))
            } else {
                (BTreeSet::new(), None)
            }
        }
        None => (BTreeSet::new(), None),
    }
}

/// Where the copula of a first clause's `words` is, if it has one before any condition: one
/// after "once", "when"… is that condition's ("the level select screen shows a level as open
/// once the one before it is finished" states no subject).
fn main_copula(words: &[&str]) -> Option<usize> {
    words
        .iter()
        .take_while(|w| !CONDITIONS.contains(w))
        .position(|w| COPULAS.contains(w))
}

/// A decision's first clause, where its subject and what is done to it are said: up to the first
/// `;`, `:`, `—`, `,`, `(` or `=`, or "so" or "because" ("the window renders at 640x360 so the
/// UI text stays sharp" says nothing of the text).
fn first_clause(text: &str) -> &str {
    before_consequence(
        text.split([';', ':', '—', ',', '(', '='])
            .next()
            .unwrap_or(""),
    )
}

/// `text` without what it says in parentheses: an aside does not end the clause it is in ("the
/// player's progress (levels done, lanterns found) is saved in…"). An aside never closed runs
/// to the end.
fn without_asides(text: &str) -> String {
    let mut kept = String::with_capacity(text.len());
    let mut depth = 0usize;
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' if depth > 0 => depth -= 1,
            _ if depth == 0 => kept.push(c),
            _ => {}
        }
    }
    kept
}

/// Prepositions: what follows the first of them in a subject does not hold its head.
const PREPOSITIONS: &[&str] = &[
    "among", "at", "between", "by", "for", "from", "in", "of", "on", "per", "to", "with",
];

/// Common irregular past participles. Sorted.
/// What [`action`] says is done to a subject kept somewhere or somehow: one thing, whatever the
/// word ("stored", "kept", "lives in").
const KEPT: &str = "<kept>";
const PARTICIPLES: &[&str] = &[
    "bound", "brought", "built", "chosen", "done", "drawn", "driven", "given", "held", "hidden",
    "kept", "known", "left", "made", "put", "read", "run", "seen", "sent", "set", "shown", "split",
    "spun", "taken", "thrown", "written",
];

/// The participle after the copula of a decision's first clause, stemmed (`tiles are
/// re-encoded as WebP` → `encod`), if there is one: what the decision says is done to its
/// subject. A regular past participle (`-ed`) or a common irregular one.
fn action(text: &str, context: &Context) -> Option<String> {
    let lowered = first_clause(&without_asides(text)).to_lowercase();
    let words: Vec<&str> = lowered.split_whitespace().collect();
    let copula = main_copula(&words)?;
    // Where or how a thing is kept says what it is, as the copula does: "readings are stored
    // as specific gravity", "readings are kept in degrees Plato", "drafts live in IndexedDB"
    // are one thing done to it, and another than "a draft is autosaved every minute".
    const KEEPING: &[&str] = &["held", "kept", "persisted", "recorded", "saved", "stored"];
    let kept = || Some(KEPT.to_string());
    if matches!(words[copula], "live" | "lives") {
        return kept();
    }
    let next = words[copula + 1..]
        .iter()
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
        // A negated participle is still what is done to the subject: "accounts are never
        // deleted" and "archived accounts are hidden by a filter" are two things.
        .find(|w| {
            !matches!(
                *w,
                "now" | "still" | "always" | "only" | "all" | "then" | "never" | "not"
            )
        })?;
    let participle =
        (next.len() > 4 && next.ends_with("ed")) || PARTICIPLES.binary_search(&next).is_ok();
    if KEEPING.contains(&next) {
        return kept();
    }
    if !participle {
        return None;
    }
    super::similarity::read_words(next, context).words.pop()
}

/// The words a decision negates: the first word after each negation (`no autocast`,
/// `nothing throws`, `never mocked`), but the words that announce a change (`no more`).
fn negated(text: &str, context: &Context) -> BTreeSet<String> {
    const NEGATIONS: &[&str] = &["never", "no", "not", "nothing", "without"];
    let lowered = text.to_lowercase();
    let words: Vec<&str> = lowered
        .split(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.')))
        .map(|w| w.trim_matches(['.', '-']))
        .filter(|w| !w.is_empty())
        .collect();
    let mut negated = BTreeSet::new();
    for pair in words.windows(2) {
        if NEGATIONS.contains(&pair[0]) && !matches!(pair[1], "more" | "longer") {
            negated.extend(super::similarity::read_words(pair[1], context).words);
        }
    }
    negated
}

/// The words of `text` outside its code, sorted as [`Item::words`]: tokens holding `_`, a brace
/// or a backquote are left out. `None` when it has no such token.
fn prose(text: &str, context: &Context) -> Option<Vec<String>> {
    let code = |token: &&str| token.contains(['_', '{', '}', '`']);
    if !text.split_whitespace().any(|token| code(&token)) {
        return None;
    }
    let kept: Vec<&str> = text.split_whitespace().filter(|t| !code(t)).collect();
    Some(super::similarity::read_words(&kept.join(" "), context).words)
}

/// The words a decision says it replaces: those after "instead of" or "no more", to the end of
/// their clause.
fn named(text: &str, context: &Context) -> BTreeSet<String> {
    let lowered = text.to_lowercase();
    let mut named = BTreeSet::new();
    for phrase in ["instead of ", "no more "] {
        for (at, _) in lowered.match_indices(phrase) {
            // At a word's start only, as the change words are found: "piano more" says no
            // "no more".
            if lowered[..at].ends_with(char::is_alphanumeric) {
                continue;
            }
            let after = &lowered[at + phrase.len()..];
            let clause = after
                .split([';', ':', '—', ',', '(', '.'])
                .next()
                .unwrap_or("");
            // How many of it there were says nothing of what it was ("instead of one fixed
            // amount" does not name "one broker").
            let words = super::similarity::read_words(clause, context).words;
            named.extend(words.into_iter().filter(|w| !COUNTS.contains(&w.as_str())));
        }
    }
    named
}

/// Words that count (stemmed as read): what a decision says it replaces is not named by them.
const COUNTS: &[&str] = &["one", "singl", "thre", "two"];

/// What a decision calls old (see [`Decision::former`]): the words after "the old", "the
/// previous" or "the former", to a copula, a preposition or the end of their clause.
fn former(text: &str, context: &Context) -> BTreeSet<String> {
    let lowered = text.to_lowercase();
    let words: Vec<&str> = lowered
        .split(|c: char| c.is_whitespace() || PHRASE_ENDS.contains(&c))
        .collect();
    let mut former = BTreeSet::new();
    for (at, pair) in words.windows(2).enumerate() {
        if pair[0] != "the" || !matches!(pair[1], "old" | "previous" | "former") {
            continue;
        }
        let phrase = words[at + 2..]
            .iter()
            .take_while(|w| !w.is_empty() && !COPULAS.contains(w) && !PREPOSITIONS.contains(w))
            .copied()
            .collect::<Vec<_>>()
            .join(" ");
        former.extend(super::similarity::read_words(&phrase, context).words);
    }
    former
}

/// Words that say what a clause names goes on as it was.
const CONTINUING: &[&str] = &[
    "keeps",
    "remain",
    "remains",
    "stay",
    "stays",
    "still",
    "unchanged",
];

/// The words of the clauses of `text` after its first that say what they name goes on as it
/// was (see [`CONTINUING`]), but those of its first: a decision that says so leaves the
/// decisions on what goes on current, not those on what it decides ("tiles are WebP; tiles are
/// still cut at 256 px" replaces "tiles are PNG").
fn kept(text: &str, context: &Context) -> BTreeSet<String> {
    let words = |clause: &str| super::similarity::read_words(clause, context).words;
    let mut clauses = text.split(PHRASE_ENDS);
    let first = clauses.next().unwrap_or("");
    let continuing: Vec<&str> = clauses
        .filter(|clause| {
            clause
                .split(|c: char| !c.is_alphanumeric())
                .any(|w| CONTINUING.contains(&w.to_lowercase().as_str()))
        })
        .collect();
    // Most decisions say nothing goes on: their first clause is then not read at all.
    if continuing.is_empty() {
        return BTreeSet::new();
    }
    let decided: BTreeSet<String> = words(first).into_iter().collect();
    continuing
        .into_iter()
        .flat_map(words)
        .filter(|word| !decided.contains(word))
        .collect()
}

/// The files, paths and names of code that a decision names (`var/cobbler.db`,
/// `Mojo::SQLite`), lowercase: tokens with a `/`, a `.`, a `_` or a `:` inside.
fn code_tokens(text: &str) -> BTreeSet<String> {
    text.split_whitespace()
        .map(|token| token.trim_matches(|c: char| !c.is_alphanumeric()))
        .filter(|token| token.contains(['/', '.', '_', ':']))
        .map(str::to_lowercase)
        .collect()
}

/// What a decision says is gone (see [`Decision::gone`]): the [code tokens](code_tokens) of
/// what its clauses that end "is gone", "are removed"… say is gone (`said_gone`: see
/// [`said_gone`]; "var/cobbler.db is gone").
fn gone(said_gone: &[String]) -> BTreeSet<String> {
    said_gone
        .iter()
        .flat_map(|gone| code_tokens(gone))
        .collect()
}

/// The words of a single name a decision says is gone (`said_gone`: see [`said_gone`];
/// "esbuild is dropped", "Hunchentoot is removed"), read in `context` (see
/// [`Decision::gone_names`]).
fn gone_names(said_gone: &[String], context: &Context) -> BTreeSet<String> {
    said_gone
        .iter()
        .map(|gone| gone.trim())
        .filter(|gone| gone.split_whitespace().count() == 1)
        .flat_map(|name| super::similarity::read_words(name, context).words)
        .collect()
}

/// What the clauses of `text` that end "is gone", "are removed"… say is gone, lowercase.
fn said_gone(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(PHRASE_ENDS)
        .filter_map(|clause| {
            GONE.iter()
                .find_map(|ending| clause.trim_end().strip_suffix(ending))
                .map(str::to_string)
        })
        .collect()
}

/// The names of a text that a number follows (`iOS 16.0`, `Postgres 16`, `port 5432`), that it
/// takes to one (`Clojure to 1.12.0`) or of a subject said to be one (`the oldest iOS is 17`),
/// with the number: (`ios`, `16.0`).
fn versions(text: &str) -> Vec<(String, String)> {
    let words = dotted_words(text);
    let name = |word: &str| {
        word.chars().all(char::is_alphabetic)
            && super::similarity::is_content_word(word)
            && !is_unit(word)
    };
    let version = |at: usize| version_at(&words, at);
    let next = (1..words.len())
        .filter(|&at| name(&words[at - 1]) && version(at))
        .map(|at| (words[at - 1].clone(), words[at].clone()));
    // A name taken to a version ("bumped Clojure to 1.12.0", "upgraded Node to 22").
    let taken = (2..words.len())
        .filter(|&at| name(&words[at - 2]) && words[at - 1] == "to" && version(at))
        .map(|at| (words[at - 2].clone(), words[at].clone()));
    // A subject said to be a version ("the oldest Neovim we run on is 0.10 now"): each of its
    // names is at that version.
    let clause = dotted_words(first_clause(text));
    let stated = main_copula(&clause.iter().map(String::as_str).collect::<Vec<_>>())
        .and_then(|copula| {
            let at = (copula + 1..clause.len()).find(|&at| clause[at] != "now")?;
            let complement = &clause[at];
            version_at(&clause, at).then(|| {
                clause[..copula]
                    .iter()
                    .filter(|w| name(w))
                    .map(|w| (w.to_string(), complement.to_string()))
                    .collect::<Vec<_>>()
            })
        })
        .unwrap_or_default();
    next.chain(taken).chain(stated).collect()
}

/// Whether `words[at]` is a version number, not a quantity: a number a unit follows, alone
/// ("24 hours") or in a list ("300, 600 and 900 px"), says how much.
fn version_at(words: &[String], at: usize) -> bool {
    let number = |w: &String| is_version(w);
    let unit = words[at..]
        .iter()
        .find(|w| !number(w) && !matches!(w.as_str(), "and" | "or"));
    words.get(at).is_some_and(number) && !unit.is_some_and(|w| is_unit(w))
}

/// The words of `text`, lowercase, with the dots inside them (`ios`, `16.0`, `v1.29.4`): where
/// versions are read.
fn dotted_words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric() && c != '.')
        .map(|w| w.trim_matches('.').to_lowercase())
        .filter(|w| !w.is_empty())
        .collect()
}

/// Whether two version numbers are one version: the same in every part both give (`16` and
/// `16.0`, `1.27` and `1.27.0`; not `9.6.6` and `9.8.4`, nor `1.10` and `1.11`).
fn same_version(one: &str, two: &str) -> bool {
    one.split('.').zip(two.split('.')).all(|(a, b)| a == b)
}

/// The major and minor parts of each version of three parts or more in `text` (`v1.29.4` →
/// 1, 29): a release, whatever it names.
fn releases(text: &str) -> BTreeSet<(String, String)> {
    dotted_words(text)
        .iter()
        .map(|w| w.trim_start_matches('v'))
        .filter(|w| w.matches('.').count() >= 2 && is_version(w))
        .filter_map(|w| {
            let mut parts = w.split('.');
            Some((parts.next()?.to_string(), parts.next()?.to_string()))
        })
        .collect()
}

/// Whether `word` is a version number: digits and dots, or a dotted one that letters end
/// (`2022.3.21f1`, `3.12.0rc1`); "2d" or "500ms" are not.
fn is_version(word: &str) -> bool {
    let digits = |part: &str| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
    let parts: Vec<&str> = word.split('.').collect();
    let (last, whole) = parts.split_last().expect("split gives one part at least");
    whole.iter().all(|part| digits(part))
        && (digits(last)
            || (!whole.is_empty()
                && last.starts_with(|c: char| c.is_ascii_digit())
                && last.bytes().all(|b| b.is_ascii_alphanumeric())))
}

/// The names of code among the first words of `text` (a path, a name with `_`, `.` or `:`):
/// `/cmd_vel` of "the /cmd_vel subscription uses…"; a call's name without its arguments.
fn opening_code(text: &str) -> BTreeSet<String> {
    first_clause(text)
        .split_whitespace()
        .take(OPENING_WORDS)
        .map(|token| token.split('(').next().unwrap_or(token))
        .map(|token| token.trim_matches(|c: char| !c.is_alphanumeric() && c != '/'))
        .filter(|token| token.contains(['/', '.', '_', ':']))
        .filter(|token| token.contains(char::is_alphabetic))
        .map(str::to_lowercase)
        .collect()
}

/// How many words a decision opens with, where the code it names is what it is about.
const OPENING_WORDS: usize = 4;

/// The settings `text` gives a value, by name (lowercase): `name=value` or `name = value`
/// (`--level=3`, `requires-python = ">=3.13"`), where the name is a word of letters, digits,
/// `_`, `-` and `.` that begins with a letter, and `=` is no comparison (`>=`, `==`, `!=`); and
/// a name of code that opens it, with a copula and a value of code after it, gives that value
/// (`processing.guarantee stays at_least_once`, `pool.max_size is 20`; not `config.toml is
/// read at start`).
fn settings(text: &str) -> BTreeMap<String, String> {
    let name_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
    let code = |word: &str| word.contains(|c: char| c.is_ascii_digit() || "_.-/:".contains(c));
    let mut found = BTreeMap::new();
    let mut words = text.split_whitespace();
    if let (Some(name), Some(copula), Some(value)) = (words.next(), words.next(), words.next()) {
        let value = value.trim_end_matches([',', ';', ':']);
        let named = name.contains(['.', '_']) && name.chars().all(name_char);
        if named
            && name.starts_with(|c: char| c.is_ascii_alphabetic())
            && COPULAS.contains(&copula)
            && code(value)
        {
            found.insert(name.to_lowercase(), value.to_string());
        }
    }
    for (at, _) in text.match_indices('=') {
        let before = &text[..at];
        let after = &text[at + 1..];
        if before.ends_with(['<', '>', '!', '=']) || after.starts_with('=') {
            continue;
        }
        // Spaced on both sides or on neither: `?limit= and ?offset=` gives `limit` no value.
        let (before, after) = match (before.strip_suffix(' '), after.strip_prefix(' ')) {
            (Some(before), Some(after)) => (before, after),
            (None, None) => (before, after),
            _ => continue,
        };
        let start = before.trim_end_matches(name_char).len();
        let name = before[start..].trim_start_matches('-');
        let value: String = after
            .chars()
            .take_while(|c| !c.is_whitespace() && !matches!(c, ',' | ';' | ')'))
            .collect();
        if name.starts_with(|c: char| c.is_ascii_alphabetic()) && !value.is_empty() {
            found.insert(name.to_lowercase(), value);
        }
    }
    found
}

/// How often `text` says a thing is done: "every 10 seconds", "every 2.5 s", "every minute",
/// "once a second", "once per hour", "every five minutes"; with the words of its clause before
/// that.
fn period(text: &str, context: &Context) -> Option<Period> {
    const NUMBERS: &[(&str, f64)] = &[
        ("two", 2.0),
        ("three", 3.0),
        ("four", 4.0),
        ("five", 5.0),
        ("six", 6.0),
        ("ten", 10.0),
        ("fifteen", 15.0),
        ("twenty", 20.0),
        ("thirty", 30.0),
        ("sixty", 60.0),
    ];
    const UNITS: &[(&str, f64)] = &[
        ("ms", 0.001),
        ("s", 1.0),
        ("sec", 1.0),
        ("second", 1.0),
        ("min", 60.0),
        ("minute", 60.0),
        ("h", 3600.0),
        ("hour", 3600.0),
        ("day", 86400.0),
        ("week", 604800.0),
    ];
    let unit = |word: &str| {
        let word = super::similarity::trimmed(word);
        let word = word
            .strip_suffix('s')
            .filter(|w| w.len() > 1)
            .unwrap_or(word);
        UNITS
            .iter()
            .find(|(name, _)| *name == word)
            .map(|&(_, seconds)| seconds)
    };
    let number = |word: &str| {
        word.parse::<f64>().ok().filter(|n| *n > 0.0).or_else(|| {
            NUMBERS
                .iter()
                .find(|(name, _)| *name == word)
                .map(|&(_, n)| n)
        })
    };
    for clause in text.split([';', ':', '—']) {
        let lowered = clause.to_lowercase();
        let words: Vec<&str> = lowered.split_whitespace().collect();
        for at in 0..words.len() {
            let next = |k: usize| words.get(at + k).copied().unwrap_or("");
            let seconds = match words[at] {
                "every" | "each" => {
                    unit(next(1)).or_else(|| Some(number(next(1))? * unit(next(2))?))
                }
                "once" if matches!(next(1), "a" | "an" | "per" | "every") => unit(next(2)),
                _ => None,
            };
            if let Some(seconds) = seconds {
                let read =
                    |words: &[&str]| super::similarity::read_words(&words.join(" "), context).words;
                let last = words[..at].iter().rev().find_map(|w| read(&[w]).pop())?;
                let before = read(&words[..at]);
                return Some(Period {
                    seconds,
                    before,
                    last,
                });
            }
        }
    }
    None
}

/// Whether `text` starts with a condition (see [`CONDITIONS`]), with a comma after it or not
/// ("when every finding is a warning the exit status is 0").
fn conditional(text: &str) -> bool {
    let first = text.split_whitespace().next().unwrap_or("").to_lowercase();
    CONDITIONS.contains(&first.as_str())
}

/// The acronyms of a text: words of three to six capitals (`MSRV`), lowercase; not a variable's
/// name (`$PORT`, `DATABASE_URL`, "the PORT environment variable").
fn acronyms(text: &str) -> BTreeSet<String> {
    let words: Vec<&str> = text
        .split(|c: char| !c.is_alphanumeric() && c != '$' && c != '_')
        .filter(|w| !w.is_empty())
        .collect();
    let variable = |next: Option<&&str>| {
        next.is_some_and(|w| {
            matches!(
                w.to_lowercase().as_str(),
                "variable" | "environment" | "env" | "var"
            )
        })
    };
    words
        .iter()
        .enumerate()
        .filter(|(at, w)| {
            (3..=6).contains(&w.len())
                && w.bytes().all(|b| b.is_ascii_uppercase())
                && !variable(words.get(at + 1))
        })
        .map(|(_, w)| w.to_lowercase())
        .collect()
}

/// The initials of each run of three to six content words of a text, lowercase
/// (`minimum supported Rust version` → `msr`, `msrv`, `srv`…).
fn initials(text: &str) -> BTreeSet<String> {
    let letters: Vec<char> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| (w, w.to_lowercase()))
        .filter(|(_, lower)| super::similarity::is_content_word(lower))
        .filter_map(|(w, _)| w.chars().next())
        .filter(char::is_ascii_alphabetic)
        .map(|c| c.to_ascii_lowercase())
        .collect();
    let mut found = BTreeSet::new();
    for length in 3..=6 {
        for run in letters.windows(length) {
            found.insert(run.iter().collect());
        }
    }
    found
}

/// The successor of each decision so far (by number among the decisions): the strongest
/// replacement, then the latest, then the one with the smallest id, with its score.
struct Successors<'a> {
    items: &'a [Item],
    decisions: &'a [usize],
    /// By decision: a large group of decisions makes many pairs, each of which reads these.
    last_seen: Vec<Timestamp>,
    best: Vec<Option<(f64, usize)>>,
}

impl<'a> Successors<'a> {
    /// No successor yet for any of `decisions` (indices in `items`).
    fn new(items: &'a [Item], decisions: &'a [usize]) -> Self {
        Self {
            items,
            decisions,
            last_seen: decisions.iter().map(|&i| items[i].last_seen).collect(),
            best: vec![None; decisions.len()],
        }
    }

    /// Takes decisions `a` and `b` into account: the later may succeed the earlier if `score`
    /// (asked, with the older and the newer, only if one is later) says how strongly.
    fn offer(&mut self, a: usize, b: usize, score: impl FnOnce(usize, usize) -> Option<f64>) {
        let (older, newer) = match self.last_seen[a].cmp(&self.last_seen[b]) {
            std::cmp::Ordering::Less => (a, b),
            std::cmp::Ordering::Greater => (b, a),
            std::cmp::Ordering::Equal => return,
        };
        let Some(score) = score(older, newer) else {
            return;
        };
        let better = self.best[older].is_none_or(|(best, current)| {
            score
                .total_cmp(&best)
                .then(self.last_seen[newer].cmp(&self.last_seen[current]))
                .then_with(|| self.id(current).cmp(self.id(newer)))
                .is_gt()
        });
        if better {
            self.best[older] = Some((score, newer));
        }
    }

    /// The id of decision `decision`.
    fn id(&self, decision: usize) -> &'a str {
        &self.items[self.decisions[decision]].id
    }

    /// Each decision's successor, by id. A decision that replaces others only by the change
    /// it announces (not on their subject nor in their words) replaces one: the one it is most
    /// like ("switched PNG decoding to libspng: libpng's errors did not fit the expected-based
    /// API" replaces the libpng decision, not the one on expected-based errors).
    fn chosen(&self) -> Vec<Option<String>> {
        // A decision that replaces one on its subject or in its words announces that change:
        // it replaces no other by the change alone ("the integration tests run against SQL
        // Server now" replaces the SQLite decision, not the one on invoice numbers).
        let on_subject: BTreeSet<usize> = self
            .best
            .iter()
            .flatten()
            .filter(|(score, _)| *score >= 2.0)
            .map(|(_, newer)| *newer)
            .collect();
        let mut announced: HashMap<usize, (f64, usize)> = HashMap::new();
        for (older, best) in self.best.iter().enumerate() {
            if let Some((score, newer)) = *best {
                if score < 2.0 && !on_subject.contains(&newer) {
                    let kept = announced.entry(newer).or_insert((score, older));
                    if score > kept.0 {
                        *kept = (score, older);
                    }
                }
            }
        }
        self.best
            .iter()
            .enumerate()
            .map(|(older, best)| {
                let (score, newer) = (*best)?;
                let replaced =
                    score >= 2.0 || announced.get(&newer).map(|(_, o)| *o) == Some(older);
                replaced.then(|| self.id(newer).to_string())
            })
            .collect()
    }
}

/// Every decision's successor by comparing each with every later one: the reference the
/// windowed search must match (in tests, on logs smaller than the window).
#[cfg(test)]
pub(super) fn naive(items: &[Item], supersede: f64, context: &Context) -> Vec<Option<String>> {
    let decisions: Vec<usize> = (0..items.len())
        .filter(|&i| items[i].kind == Kind::Decision)
        .collect();
    let read = read_decisions(items, &decisions, context, &|| false).unwrap();
    let mut successors = Successors::new(items, &decisions);
    for a in 0..decisions.len() {
        for b in a + 1..decisions.len() {
            let score = similarity(&items[decisions[a]].words, &items[decisions[b]].words);
            successors.offer(a, b, |older, newer| {
                let alike =
                    score >= supersede && read[older].alike_in_prose(&read[newer], supersede);
                replaces(&read[older], &read[newer], score, alike)
            });
        }
    }
    successors.chosen()
}

#[cfg(test)]
mod tests {
    use super::super::{items, log};
    use super::*;

    #[test]
    fn what_a_change_replaces_is_named_after_whole_words_only() {
        let context = Context::default();
        assert!(named("the mailer is Postmark, no more SMTP", &context).contains("smtp"));
        assert!(named("a piano more often than not plays", &context).is_empty());
        // How many there were names nothing: "one broker" is not what this replaces.
        let counted = named("a limit per currency instead of one fixed amount", &context);
        assert!(
            counted.contains("fix") && !counted.contains("one"),
            "{counted:?}"
        );
    }

    fn grouped(text: &str) -> Vec<Item> {
        let lines = log::read(text.as_bytes(), &[]).raw;
        items::group(
            &lines.iter().collect::<Vec<_>>(),
            0.3,
            0.4,
            &Context::default(),
            &|| false,
        )
        .unwrap()
    }

    /// Each decision's text and its successor's.
    fn successors(items: &[Item]) -> Vec<(&str, Option<&str>)> {
        let text = |id: &str| items.iter().find(|i| i.id == id).unwrap().text.as_str();
        items
            .iter()
            .map(|i| (i.text.as_str(), i.superseded_by.as_deref().map(text)))
            .collect()
    }

    /// Asserts that no decision of `items` is replaced.
    fn assert_none_replaced(items: &[Item]) {
        assert!(
            items.iter().all(|item| item.superseded_by.is_none()),
            "{:?}",
            successors(items)
        );
    }

    #[test]
    fn a_change_announced_replaces_one_decision() {
        let items = grouped(
            "[2026-04-24T10:00:00Z] worker F-001 DECISION: PNG files are read with libpng into RGBA8 images\n\
             [2026-04-24T11:00:00Z] worker F-002 DECISION: nothing throws across the API: functions return std::expected\n\
             [2026-04-24T12:00:00Z] worker F-003 DECISION: the CLI parses its options with CLI11\n\
             [2026-04-25T10:00:00Z] worker F-004 DECISION: switched PNG reading to libspng; libpng's setjmp errors did not fit the expected-based API\n",
        );
        let found = successors(&items);
        let successor = |start: &str| found.iter().find(|(t, _)| t.starts_with(start)).unwrap().1;
        assert!(
            successor("PNG files").is_some_and(|s| s.starts_with("switched")),
            "{found:?}"
        );
        assert_eq!(successor("nothing throws"), None, "{found:?}");
    }

    #[test]
    fn a_name_said_to_be_gone_announces_a_change() {
        let text = |newer: &str| {
            format!(
                "[2026-04-24T10:00:00Z] worker F-001 DECISION: the site is deployed as static files from dist/ to Netlify\n\
                 [2026-04-24T11:00:00Z] worker F-002 DECISION: every RemoteEvent is created by the server from the list in src/shared/Remotes.luau\n\
                 [2026-04-25T10:00:00Z] worker F-003 DECISION: {newer}\n"
            )
        };
        let items = grouped(&text(
            "the site is published on GitHub Pages by a workflow on main; Netlify is dropped",
        ));
        let found = successors(&items);
        let successor = |start: &str| found.iter().find(|(t, _)| t.starts_with(start)).unwrap().1;
        assert!(
            successor("the site is deployed")
                .is_some_and(|s| s.starts_with("the site is published")),
            "{found:?}"
        );
        assert_eq!(successor("every RemoteEvent"), None, "{found:?}");
        // What else is dropped is no change to what was decided.
        let items = grouped(&text(
            "on top of the Remotes list, each server handler is rate-limited: at most 10 calls a \
             second per player, the extra calls are dropped",
        ));
        assert_none_replaced(&items);
    }

    #[test]
    fn another_alternative_of_one_kind_replaces_a_decision_in_other_words() {
        let text = |older: &str, newer: &str| {
            format!(
                "[2026-04-24T10:00:00Z] worker F-001 DECISION: {older}\n\
                 [2026-04-24T11:00:00Z] worker F-002 DECISION: the error handler logs every request body\n\
                 [2026-04-25T10:00:00Z] worker F-003 DECISION: {newer}\n"
            )
        };
        let items = grouped(&text(
            "tracks are keyed by a serial integer id, returned as \"id\" in the JSON",
            "every track gets a UUID made in Postgres; the URLs carry it",
        ));
        let found = successors(&items);
        let successor = |start: &str| found.iter().find(|(t, _)| t.starts_with(start)).unwrap().1;
        assert!(
            successor("tracks").is_some_and(|s| s.starts_with("every track")),
            "{found:?}"
        );
        assert_eq!(successor("the error handler"), None, "{found:?}");
        // Each states its subject, and the two share no word of it: two things, each with its
        // own keys.
        let items = grouped(&text(
            "the audit rows are keyed by a bigserial",
            "uploaded files are keyed by a UUID",
        ));
        assert_none_replaced(&items);
    }

    #[test]
    fn a_subject_of_two_words_is_named_by_a_decision_that_states_none() {
        let text = |newer: &str| {
            format!(
                "[2026-04-24T10:00:00Z] worker F-001 DECISION: parcels and scans get bigint identity primary keys\n\
                 [2026-04-24T11:00:00Z] worker F-002 DECISION: the error handler logs every request body\n\
                 [2026-04-25T10:00:00Z] worker F-003 DECISION: {newer}\n"
            )
        };
        let items = grouped(&text(
            "every table's primary key is a UUIDv7 made by the application",
        ));
        let found = successors(&items);
        let successor = |start: &str| found.iter().find(|(t, _)| t.starts_with(start)).unwrap().1;
        assert!(
            successor("parcels").is_some_and(|s| s.starts_with("every table")),
            "{found:?}"
        );
        // A subject of one word is too often named in passing.
        let items = grouped(&text("the body is JSON, never form data"));
        assert_none_replaced(&items);
    }

    #[test]
    fn a_change_that_turns_a_decision_around_replaces_it() {
        let items = grouped(
            "[2026-04-24T09:00:00Z] worker F-001 LESSON: torch.autocast needs a GPU that supports bfloat16\n\
             [2026-04-24T09:10:00Z] worker F-001 LESSON: the profiler shows where autocast casts back to float\n\
             [2026-04-24T09:15:00Z] worker F-001 LESSON: the eval loop runs autocast too, or the metrics drift\n\
             [2026-04-24T09:16:00Z] worker F-001 LESSON: the nightly job runs the whole suite with autocast on\n\
             [2026-04-24T09:20:00Z] worker F-002 LESSON: a destructor that may throw ends the program\n\
             [2026-04-24T09:30:00Z] worker F-002 LESSON: gtest EXPECT_THROW checks what a call may throw\n\
             [2026-04-24T09:31:00Z] worker F-002 LESSON: std::thread throws when it cannot start\n\
             [2026-04-24T09:32:00Z] worker F-002 LESSON: std::vector::at throws on a bad index\n\
             [2026-04-24T10:00:00Z] worker F-001 DECISION: training runs in plain fp32 for a start, no autocast, until the loss curves are trusted\n\
             [2026-04-24T11:00:00Z] worker F-002 DECISION: errors are reported by throwing an Error derived from std::runtime_error\n\
             [2026-04-25T10:00:00Z] worker F-003 DECISION: mixed precision now: the forward pass runs under torch.autocast with bfloat16 on the GPUs\n\
             [2026-04-25T11:00:00Z] worker F-004 DECISION: nothing throws across the public API any more: functions return std::expected<T, ErrorCode>\n",
        );
        let found = successors(&items);
        let successor = |start: &str| found.iter().find(|(t, _)| t.starts_with(start)).unwrap().1;
        assert!(
            successor("training runs").is_some_and(|s| s.starts_with("mixed precision")),
            "{found:?}"
        );
        assert!(
            successor("errors are").is_some_and(|s| s.starts_with("nothing throws")),
            "{found:?}"
        );
    }

    #[test]
    fn alike_words_on_two_stated_subjects_replace_nothing() {
        let text = |newer: &str| {
            format!(
                "[2026-04-24T10:00:00Z] worker F-001 DECISION: the model to keep is chosen by macro F1 on the validation set\n\
                 [2026-04-25T10:00:00Z] worker F-002 DECISION: {newer}\n"
            )
        };
        let items = grouped(&text(
            "the test set is scored once per chosen model with macro F1 and never used to pick one",
        ));
        assert_none_replaced(&items);
        // The same subject, or one not stated: alike words still replace.
        let items = grouped(&text(
            "the model to keep is chosen by macro F1 on the held-out validation set",
        ));
        assert_eq!(
            items
                .iter()
                .filter(|item| item.superseded_by.is_some())
                .count(),
            1,
            "{:?}",
            successors(&items)
        );
    }

    #[test]
    fn what_is_done_to_a_subject_is_part_of_it() {
        let items = grouped(
            "[2026-04-24T10:00:00Z] worker F-001 DECISION: tiles are decoded with libpng into RGBA8 images\n\
             [2026-04-24T11:00:00Z] worker F-002 DECISION: tiles are re-encoded as lossless WebP by default\n\
             [2026-04-25T10:00:00Z] worker F-003 DECISION: tiles are processed in parallel on one fixed pool of workers\n",
        );
        assert_none_replaced(&items);
        // The same thing done otherwise, or a subject said without a participle: one subject.
        let items = grouped(
            "[2026-04-24T10:00:00Z] worker F-001 DECISION: tiles are decoded with libpng into RGBA8 images\n\
             [2026-04-25T10:00:00Z] worker F-003 DECISION: tiles are decoded by stb_image, faster on small files\n\
             [2026-04-24T10:00:00Z] worker F-001 DECISION: the database is SQLite in a file\n\
             [2026-04-24T11:00:00Z] worker F-002 DECISION: the database is Postgres 15 in a container\n\
             [2026-04-25T11:00:00Z] worker F-003 DECISION: the database is Postgres 16 on the managed service\n",
        );
        let found = successors(&items);
        let successor = |start: &str| found.iter().find(|(t, _)| t.starts_with(start)).unwrap().1;
        assert_eq!(
            successor("tiles are decoded with"),
            Some("tiles are decoded by stb_image, faster on small files")
        );
        assert!(successor("the database is SQLite").is_some(), "{found:?}");
        assert!(
            successor("the database is Postgres 15").is_some(),
            "{found:?}"
        );
        assert_eq!(
            action("prices are rounded to cents", &Context::default()).as_deref(),
            Some("round")
        );
        assert_eq!(
            action("prices are stored as cents", &Context::default()).as_deref(),
            Some(KEPT)
        );
        assert_eq!(
            action("drafts live in IndexedDB", &Context::default()).as_deref(),
            Some(KEPT)
        );
        assert_eq!(
            action("the database is Postgres", &Context::default()),
            None
        );
        assert!(PARTICIPLES.windows(2).all(|pair| pair[0] < pair[1]));
    }
    #[test]
    fn a_negated_participle_is_what_is_done_to_the_subject() {
        let items = grouped(
            "[2026-08-03T09:30:00Z] worker F-002 DECISION: accounts are never deleted: DELETE sets IsArchived, because journal lines keep pointing at them\n\
             [2026-08-06T11:00:00Z] worker F-012 DECISION: archived accounts are hidden by a global query filter; only the audit export reads them\n",
        );
        assert_eq!(successor_of(&items, "accounts are never"), None);
        assert_eq!(
            action("accounts are never deleted", &Context::default()).as_deref(),
            Some("delet")
        );
    }

    #[test]
    fn words_inside_code_do_not_name_a_subject() {
        let items = grouped(
            "[2026-11-03T10:40:00Z] worker F-006 DECISION: every change to a shift is broadcast on Phoenix.PubSub under the topic \"schedule:<cafe_id>\"\n\
             [2026-11-03T13:00:00Z] worker F-007 DECISION: a schedule broadcast carries only {:shift_changed, shift_id}; each LiveView reloads that shift through the context\n",
        );
        assert_eq!(successor_of(&items, "every change to a shift"), None);
        // Said in prose, the same subject is named.
        let items = grouped(
            "[2026-11-03T10:40:00Z] worker F-006 DECISION: every change to a shift is broadcast on Phoenix.PubSub under the topic \"schedule:<cafe_id>\"\n\
             [2026-11-03T13:00:00Z] worker F-007 DECISION: we broadcast each change to a shift through a schedule channel of the cafe\n",
        );
        assert!(successor_of(&items, "every change to a shift").is_some());
    }

    /// Each decision of `items` starting with `start`, and its successor's text.
    fn successor_of<'a>(items: &'a [Item], start: &str) -> Option<&'a str> {
        let found = successors(items);
        found
            .iter()
            .find(|(t, _)| t.starts_with(start))
            .unwrap_or_else(|| panic!("{start}: {found:?}"))
            .1
    }

    #[test]
    fn a_shared_modifier_is_not_a_shared_subject() {
        let items = grouped(
            "[2026-04-24T10:00:00Z] worker F-001 DECISION: order totals are integers in cents, tax included\n\
             [2026-04-24T11:00:00Z] worker F-002 DECISION: the cache is Redis on the compose network\n\
             [2026-04-25T10:00:00Z] worker F-003 DECISION: order emails are plain text with one line per item\n\
             [2026-04-25T11:00:00Z] worker F-004 DECISION: the session cache is Memcached, Redis is only for the queues\n",
        );
        assert_eq!(successor_of(&items, "order totals"), None);
        // The same head, with a modifier or without: one subject.
        assert_eq!(
            successor_of(&items, "the cache is Redis"),
            Some("the session cache is Memcached, Redis is only for the queues")
        );
        assert_eq!(
            subject(
                "the predictions of a station are cached",
                &Context::default()
            )
            .1
            .as_deref(),
            Some("prediction")
        );
        // What a thing is between is no head of it: "distances between stops" is about distances.
        let items = older_then(
            "stop and route ids are UUID strings generated by the service",
            "distances between stops are great-circle distances in whole metres",
        );
        assert_eq!(successor_of(&items, "stop and route ids"), None);
    }

    #[test]
    fn a_colon_inside_a_token_is_no_heading() {
        let items = grouped(
            "[2026-04-24T10:00:00Z] worker F-001 DECISION: the export format is CSV with a header row\n\
             [2026-04-25T10:00:00Z] worker F-002 DECISION: clients request format:json in the query string of the API\n",
        );
        assert_eq!(successor_of(&items, "the export format"), None);
        assert!(subject("clients request format:json", &Context::default())
            .0
            .is_empty());
        assert!(
            !subject("remote state now: an S3 bucket", &Context::default())
                .0
                .is_empty()
        );
    }

    #[test]
    fn a_change_on_a_subject_replaces_no_other_by_the_change() {
        let items = grouped(
            "[2026-04-24T10:00:00Z] worker F-001 DECISION: the integration tests run on SQLite in memory, so they need no container\n\
             [2026-04-24T11:00:00Z] worker F-002 DECISION: receipt numbers come from one Postgres sequence per year\n\
             [2026-04-25T10:00:00Z] worker F-003 DECISION: the integration tests run on the Postgres container now, one database per test class; SQLite differed on sequences\n",
        );
        assert!(successor_of(&items, "the integration tests run on SQLite").is_some());
        assert_eq!(successor_of(&items, "receipt numbers"), None);
    }

    #[test]
    fn a_change_announced_on_another_subject_replaces_nothing() {
        let items = grouped(
            "[2026-04-24T10:00:00Z] worker F-001 DECISION: uploads are scanned for viruses every 60 s by the background worker, before anyone can download them\n\
             [2026-04-25T10:00:00Z] worker F-002 DECISION: thumbnails are now rendered at three sizes in the background worker\n",
        );
        assert_eq!(successor_of(&items, "uploads are scanned"), None);
        // A word that begins a word of the subject names it.
        let items = grouped(
            "[2026-04-24T10:00:00Z] worker F-001 DECISION: timestamps are parsed with chrono into fixed offsets\n\
             [2026-04-25T10:00:00Z] worker F-002 DECISION: time handling moves to jiff: chrono cannot resolve zone names\n",
        );
        assert!(successor_of(&items, "timestamps").is_some());
    }

    #[test]
    fn a_change_said_of_what_comes_of_a_decision_is_not_announced() {
        let older = "a member without a plot may join up to three waiting lists";
        let items = older_then(
            older,
            "every table gets ULID keys, so a URL no longer tells how many members there are",
        );
        assert_eq!(successor_of(&items, "a member without"), None);
        let items = older_then(
            older,
            "members no longer get numbers in a URL: every table gets ULID keys",
        );
        assert!(successor_of(&items, "a member without").is_some());
    }

    #[test]
    fn a_change_said_in_a_clause_after_what_comes_of_it_is_announced() {
        let log = |newer: &str| {
            format!(
                "[2026-04-24T09:00:00Z] worker F-001 LESSON: the client's status screen redraws on every update\n\
                 [2026-04-24T09:30:00Z] worker F-002 TRICK: stub the status endpoint in the client tests\n\
                 [2026-04-24T09:45:00Z] worker F-003 LESSON: the status updates carry the order's version\n\
                 [2026-04-24T10:00:00Z] worker F-001 DECISION: the mobile client polls the status endpoint every 30 s\n\
                 [2026-04-25T10:00:00Z] worker F-004 DECISION: {newer}\n"
            )
        };
        let items = grouped(&log(
            "a websocket pushes each change to the phone, so the battery lasts; the old polling is gone",
        ));
        assert!(
            successor_of(&items, "the mobile client").is_some(),
            "{:?}",
            successors(&items)
        );
        // Said as what comes of it, the change is not the decision's.
        let items = grouped(&log(
            "a websocket pushes each change to the phone, so the old polling is gone",
        ));
        assert_eq!(successor_of(&items, "the mobile client"), None);
    }

    #[test]
    fn a_change_replaces_what_it_calls_old() {
        let log = |newer: &str| {
            format!(
                "[2026-04-24T09:00:00Z] worker F-001 LESSON: every request to the API needs a header or it gets a 401\n\
                 [2026-04-24T09:30:00Z] worker F-002 TRICK: curl -H sets a header on the request\n\
                 [2026-04-24T09:45:00Z] worker F-003 AVOID: logging a request's header leaks the credentials\n\
                 [2026-04-24T10:00:00Z] worker F-001 DECISION: clients authenticate with an X-Api-Key header checked against the keys table\n\
                 [2026-04-24T11:00:00Z] worker F-002 DECISION: error responses are JSON with a code and a message\n\
                 [2026-04-25T10:00:00Z] worker F-004 DECISION: {newer}\n"
            )
        };
        let items = grouped(&log(
            "requests carry a bearer JWT signed with the server's secret; the old header is no longer read",
        ));
        assert!(
            successor_of(&items, "clients authenticate").is_some(),
            "{:?}",
            successors(&items)
        );
        assert_eq!(successor_of(&items, "error responses"), None);
    }

    #[test]
    fn a_change_replaces_what_it_says_is_gone_by_its_file() {
        let log = |newer: &str| {
            format!(
                "[2026-04-24T09:00:00Z] worker F-001 LESSON: the tests start from an empty var/tickets.db\n\
                 [2026-04-24T09:30:00Z] worker F-002 TRICK: sqlite3 var/tickets.db opens the tables\n\
                 [2026-04-24T09:40:00Z] worker F-003 TRICK: dbicdump reads the schema from var/tickets.db\n\
                 [2026-04-24T10:00:00Z] worker F-001 DECISION: the database is SQLite in var/tickets.db, reached through Mojo::SQLite\n\
                 [2026-04-24T11:00:00Z] worker F-002 DECISION: the device name is stored in NVS beside the polling interval\n\
                 [2026-04-25T10:00:00Z] worker F-004 DECISION: {newer}\n"
            )
        };
        // No word of the older's subject, the database, is named: the file it calls gone is.
        let items = grouped(&log(
            "we run on PostgreSQL now, a pool of ten connections per worker and migrations in SQL files; var/tickets.db is gone",
        ));
        assert!(
            successor_of(&items, "the database is SQLite").is_some(),
            "{:?}",
            successors(&items)
        );
        // Words called gone name no decision that merely shares one of them.
        let items = grouped(&log(
            "beacons now advertise every 2.5 s; the one-second interval is gone",
        ));
        assert_eq!(successor_of(&items, "the device name"), None);
    }

    #[test]
    fn a_change_replaces_what_it_says_is_gone_by_its_name() {
        let log = |newer: &str| {
            format!(
                "[2026-04-24T10:00:00Z] worker F-001 DECISION: TypeScript is bundled with esbuild into dist/Code.js and clasp pushes dist/ only\n\
                 [2026-04-24T11:00:00Z] worker F-002 DECISION: the script runs on the V8 runtime, time zone Europe/Berlin\n\
                 [2026-04-25T10:00:00Z] worker F-004 DECISION: {newer}\n"
            )
        };
        // Another subject (the build), and a name the older says, said gone.
        let items = grouped(&log(
            "the build is now plain tsc (module none) and clasp pushes build/; esbuild is dropped",
        ));
        assert!(
            successor_of(&items, "TypeScript is bundled").is_some(),
            "{:?}",
            successors(&items)
        );
        assert_eq!(successor_of(&items, "the script runs"), None);
        // A move from one thing to another is a change announced.
        let items = grouped(&log(
            "the runtime moves from V8 to Rhino for the old triggers; Europe/Berlin stays",
        ));
        assert!(
            successor_of(&items, "the script runs").is_some(),
            "{:?}",
            successors(&items)
        );
    }

    #[test]
    fn a_copula_after_so_or_a_condition_states_no_subject() {
        for (older, newer) in [
            (
                "all text is drawn with the bundled pixel font, outlined in black",
                "the window renders at 640x360 with canvas items so the UI text stays sharp",
            ),
            (
                "each level is its own scene, loaded by a manager autoload",
                "the select screen shows a level as open once the one before it is finished",
            ),
        ] {
            assert_stays_current(older, newer);
        }
    }

    #[test]
    fn an_addition_said_after_the_first_clause_adds_to_the_decision_only() {
        assert_replaced(
            "the toolchain is Go 1.22 from the official tarball",
            "moved the toolchain to Go 1.23; the Dockerfile and CI use it as well",
        );
        assert_stays_current(
            "the Input Map binds the keyboard: arrows move, space jumps",
            "the Input Map also binds a gamepad: the stick moves",
        );
    }

    #[test]
    fn a_change_that_removes_what_a_decision_names_replaces_it() {
        assert_replaced(
            "feature flags are read with a YAML loader from config/flags.yaml at startup",
            "toggles are fetched from the admin API on each request; config/flags.yaml is removed",
        );
    }

    #[test]
    fn a_pronoun_is_no_rare_word_two_decisions_share() {
        let items = grouped(
            "[2026-04-24T09:00:00Z] worker F-001 LESSON: highlights on a page are drawn as marks\n\
             [2026-04-24T09:30:00Z] worker F-002 TRICK: the panel lists the highlights of a page\n\
             [2026-04-24T09:45:00Z] worker F-003 AVOID: highlights across two elements break\n\
             [2026-04-24T10:00:00Z] worker F-001 DECISION: highlights must come back by themselves when a page opens again, so the script is declared in the manifest\n\
             [2026-04-25T10:00:00Z] worker F-004 DECISION: the highlights themselves now live in local storage, one key per site\n",
        );
        assert_eq!(
            successor_of(&items, "highlights must come back"),
            None,
            "{:?}",
            successors(&items)
        );
    }

    #[test]
    fn a_subject_is_read_past_an_aside_and_where_it_lives() {
        assert_replaced(
            "the user's drafts (text, attachments, recipients) are saved in local storage under one key",
            "drafts live in IndexedDB, one record per draft with a schema version",
        );
    }

    #[test]
    fn where_a_thing_is_kept_is_no_other_thing_done_to_it() {
        assert_replaced(
            "sensor temperatures are stored as tenths of a degree Celsius in an integer",
            "from this release on the temperatures are kept in kelvin, as floats",
        );
        // But it is another thing than what else is done to it.
        let older = "a highlight is anchored by its exact text with some context around it";
        let items = older_then(
            older,
            "the highlights live in local storage, one key per page",
        );
        assert_eq!(
            successor_of(&items, older),
            None,
            "{:?}",
            successors(&items)
        );
    }

    #[test]
    fn amounts_prices_and_fees_are_one_subject() {
        for (older, newer) in [
            (
                "prices are numeric(12,2)",
                "amounts are integer cents everywhere",
            ),
            (
                "order amounts are Double values in euros",
                "shipping fees are BigDecimal with two places",
            ),
        ] {
            assert_replaced(older, newer);
        }
    }

    #[test]
    fn a_change_to_another_release_replaces_the_older() {
        let log = |newer: &str| {
            format!(
                "[2026-04-24T09:00:00Z] worker F-001 LESSON: the schemas kubeconform checks come from a cache, so the cluster version matters\n\
                 [2026-04-24T09:30:00Z] worker F-002 TRICK: kind creates a cluster at the version of its node image\n\
                 [2026-04-24T09:45:00Z] worker F-003 LESSON: the oldest cluster a chart supports is checked in CI\n\
                 [2026-04-24T10:00:00Z] worker F-001 DECISION: the charts target clusters from 1.27 on; the schemas are those of 1.27.0\n\
                 [2026-04-24T11:00:00Z] worker F-002 DECISION: every chart ships a NetworkPolicy that denies all ingress by default\n\
                 [2026-04-25T10:00:00Z] worker F-004 DECISION: {newer}\n"
            )
        };
        let items = grouped(&log(
            "the oldest supported cluster is now 1.29: kind runs node v1.29.4",
        ));
        assert!(
            successor_of(&items, "the charts target").is_some(),
            "{:?}",
            successors(&items)
        );
        assert_eq!(successor_of(&items, "every chart ships"), None);
        assert_eq!(
            releases("node v1.29.4, then 1.29 and 3.5"),
            BTreeSet::from([("1".to_string(), "29".to_string())])
        );
    }

    #[test]
    fn a_name_at_another_version_is_the_same_subject() {
        for (older, newer) in [
            (
                "GHC 9.6.6 installed with ghcup; the project file pins it",
                "the compiler is GHC 9.8.4, base's upper bound raised",
            ),
            (
                "Elixir = 1.15 in the mix file, the release the servers run",
                "we require Elixir 1.17 now, for the new type warnings",
            ),
            // A name taken to a version: a package's coordinates name it last.
            (
                "the HTTP client is com.squareup.okhttp3/okhttp 4.12.0 in every module",
                "upgraded OkHttp to 5.0.0 for its coroutine calls; the interceptors followed",
            ),
            // A subject said to be a version: each of its names is at that version.
            (
                "the bindings support Python 3.9 and every later release",
                "the oldest Python we build wheels for is 3.11",
            ),
        ] {
            assert_replaced(older, newer);
        }
        // The same version, given to more parts, is no other.
        let items = older_then(
            "the service runs on Postgres 16 in production",
            "CI starts Postgres 16.2 in a container for the tests",
        );
        assert_eq!(successor_of(&items, "the service runs"), None);
        // A number a unit follows is a quantity, alone or in a list; a unit is no name.
        for (older, newer) in [
            (
                "covers are resized by Hugo to 300, 600 and 900 px wide WebP in one partial",
                "we build with Hugo 0.134.3 extended from now on, on Netlify and on every machine",
            ),
            (
                "a failed MQTT connection is retried with 2 s, 4 s, 8 s pauses",
                "the measuring period is read from NVS key period_s (1800 s by default)",
            ),
        ] {
            assert_stays_current(older, newer);
        }
    }

    #[test]
    fn decisions_opening_with_different_names_of_code_are_on_two_subjects() {
        assert_stays_current(
            "the /odom publisher keeps the reliable QoS profile with queue depth 10",
            "the /imu publisher of the base keeps the best effort QoS profile, queue depth 5",
        );
        // The same name, its call's arguments aside, is one subject.
        assert_replaced(
            "cmake_minimum_required(VERSION 3.20) at the top of every CMakeLists.txt",
            "cmake_minimum_required goes up to 3.24 in every CMakeLists.txt",
        );
        assert_eq!(
            opening_code("the `/odom` publisher of nav_core, at 50 Hz"),
            BTreeSet::from(["/odom".to_string()])
        );
    }

    #[test]
    fn a_later_clause_keeping_the_older_subject_leaves_it_current() {
        assert_stays_current(
            "song ids are UUID strings in a TEXT primary key",
            "album ids are INTEGER PRIMARY KEY AUTOINCREMENT; song ids stay UUID strings",
        );
        // A change announced is one, whatever it says goes on.
        assert_replaced(
            "song ids are UUID strings in a TEXT primary key",
            "song ids are integers now; the album ids stay UUID strings",
        );
    }

    #[test]
    fn a_second_one_adds_to_the_first() {
        assert_stays_current(
            "the web UI is a Seaside application registered at /app, on port 8080",
            "the admin pages are a second Seaside application at /admin, on the same port",
        );
    }

    #[test]
    fn a_relative_clause_is_not_the_subject() {
        assert_stays_current(
            "the lowest Python the package supports is 3.10; CI runs 3.10 to 3.13",
            "the package is published under the MIT licence, the licence file at the root",
        );
        let words = ["the", "port", "the", "server", "listens", "on"];
        assert_eq!(without_relative(&words), ["the", "port"]);
        let words = [
            "the", "name", "of", "the", "tests", "and", "the", "fixtures",
        ];
        assert_eq!(without_relative(&words), words);
    }

    #[test]
    fn a_setting_given_another_value_is_the_same_subject() {
        assert_replaced(
            "pages are rendered with the alabaster look (html_theme = alabaster in conf.py)",
            "the documentation site takes the furo theme: html_theme=furo, dark mode included",
        );
        // Two settings, or one given the same value, are not one changed.
        assert_stays_current(
            "the firmware is built with framework = arduino for the esp32 board",
            "the serial monitor runs at monitor_speed = 115200 for the esp32 board",
        );
        let read = settings(
            "gnatprove --level=3; requires-python = \">=3.13\", when a >= b or x == y, ?limit= and",
        );
        let pairs: Vec<(&str, &str)> = read.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(pairs, [("level", "3"), ("requires-python", "\">=3.13\"")]);
        // Said with a copula by a decision that opens with it, and given in code.
        assert_replaced(
            "processing.guarantee stays at_least_once, the default, while there is one broker",
            "every instance runs with processing.guarantee=exactly_once_v2 from the first deploy",
        );
        assert!(settings("config.toml is read at start; pool.max_size is 20").is_empty());
        let read = settings("pool.max_size is 20, the most the server allows");
        assert_eq!(read.get("pool.max_size").map(String::as_str), Some("20"));
    }

    #[test]
    fn one_thing_done_at_another_period_is_the_same_subject() {
        assert_replaced(
            "the sensor task reads temperature, pressure and humidity once a second",
            "to save the battery the sensor is read every 10 seconds and the core sleeps",
        );
        assert_replaced(
            "the sensors are read every 60 seconds with a timer callback that sets a flag",
            "the board takes a reading every five minutes and sleeps in between",
        );
        // Another thing done.
        assert_stays_current(
            "the dashboard refreshes its charts every 5 s from the status endpoint",
            "the dashboard's session cookie expires every 12 hours unless the user is active",
        );
        let context = Context::new("probe", ["F-001"]);
        let seconds = |text: &str| period(text, &context).map(|p| p.seconds);
        assert_eq!(
            seconds("beacons advertise every 2.5 s, so a cell lasts a year"),
            Some(2.5)
        );
        assert_eq!(seconds("the job runs once per hour"), Some(3600.0));
        assert_eq!(
            seconds("read every minute"),
            seconds("read every sixty seconds")
        );
        assert_eq!(seconds("each run keeps every 3rd frame"), None);
    }

    #[test]
    fn a_number_raised_is_a_change() {
        assert_replaced(
            "cmake_minimum_required(VERSION 3.20); the build is always out of source, in build/",
            "cmake_minimum_required goes up to 3.24, which the pFUnit 4.10 package asks for",
        );
    }

    #[test]
    fn a_variables_name_is_no_acronym() {
        assert!(acronyms("the service listens on $PORT or DATABASE_URL").is_empty());
        assert!(acronyms("it reads the PORT environment variable, or the HOST env var").is_empty());
        assert!(acronyms("the MSRV is 1.74").contains("msrv"));
        // "pool; one row per tally": its initials spell the variable's name.
        let items = older_then(
            "the service listens on port 8080, or on $PORT when it is set",
            "counts are stored through hand-written SQL on a DB.open pool; one row per tally",
        );
        assert_eq!(successor_of(&items, "the service listens"), None);
    }

    #[test]
    fn what_joins_the_decided_replaces_nothing() {
        let older = "checkout offers card payments and PayPal through the payment provider";
        assert_stays_current(
            older,
            "bank transfer joins card payments and PayPal at checkout",
        );
        // Said after the decision's first clause, it tells of something else.
        assert_replaced(
            older,
            "checkout offers bank transfer only now; the provider's SDK joins the dependencies",
        );
    }

    #[test]
    fn what_goes_through_the_same_setup_adds_to_it_unless_it_announces_a_change() {
        assert_stays_current(
            "symbols and terms are defined once in glossary.tex with the glossaries package and \
             printed as a list of symbols",
            "acronyms go through the same glossaries setup, as a second list of symbols",
        );
        assert_replaced(
            "the tests run on SQLite in a temporary file",
            "the tests now run on the same Postgres 16 as dev",
        );
    }

    #[test]
    fn what_is_done_in_one_case_replaces_nothing() {
        assert_stays_current(
            "knotcheck exits 0 when it finds nothing, 1 when there are findings and 2 on a usage \
             or read error",
            "when every finding is a warning the exit status is 0; --strict counts warnings like \
             errors and exits 1",
        );
        assert_stays_current(
            "the cart lives in the orders database, one row per item",
            "until the user signs in, the cart lives in local storage",
        );
        assert_stays_current(
            "the database is one SQLite file, ledger.db, created on first start",
            "before a schema upgrade the database is copied to ledger.db.bak next to it; the \
             upgrade itself runs in one transaction",
        );
    }

    #[test]
    fn what_a_later_clause_says_goes_on_is_not_replaced() {
        assert_stays_current(
            "the HTTP layer is wisp on the mist server, listening on port 8040",
            "the service reads its port from the PORT environment variable, 8040 when unset; \
             mist still serves it through wisp",
        );
        // On its subject, it replaces the older, whatever goes on as it was.
        assert_replaced(
            "tiles are PNG files, cut at 256 px",
            "tiles are WebP files; they are still cut at 256 px",
        );
    }

    /// Asserts that `newer`, a day after `older`, leaves it current.
    fn assert_stays_current(older: &str, newer: &str) {
        let items = older_then(older, newer);
        assert_eq!(
            successor_of(&items, older),
            None,
            "{:?}",
            successors(&items)
        );
    }

    #[test]
    fn what_is_done_like_the_rest_replaces_nothing() {
        let older = "every endpoint lives under /api/v1 (/api/v1/shelves, /api/v1/items)";
        let newer = |how: &str| {
            format!("exports live under /api/v1 {how}: GET /api/v1/shelves/:code/report.csv")
        };
        for how in [
            "like the rest",
            "as the others do",
            "like every other endpoint",
        ] {
            assert_stays_current(older, &newer(how));
        }
        assert_replaced(older, &newer("now"));
    }

    /// The items of a log of two decisions, `older` then `newer` a day later.
    fn older_then(older: &str, newer: &str) -> Vec<Item> {
        grouped(&format!(
            "[2026-04-24T10:00:00Z] worker F-001 DECISION: {older}\n\
             [2026-04-25T10:00:00Z] worker F-002 DECISION: {newer}\n"
        ))
    }

    /// Asserts that `newer`, a day after `older`, replaces it.
    fn assert_replaced(older: &str, newer: &str) {
        let items = older_then(older, newer);
        assert!(
            successor_of(&items, older).is_some(),
            "{:?}",
            successors(&items)
        );
    }

    #[test]
    fn a_change_announced_to_another_version_replaces_the_older() {
        let items = grouped(
            "[2026-04-24T10:00:00Z] worker F-001 DECISION: the deployment target is Android 12, phones only, both orientations\n\
             [2026-04-24T11:00:00Z] worker F-002 DECISION: the release build is shrunk with R8 in full mode\n\
             [2026-04-25T10:00:00Z] worker F-003 DECISION: the app now needs Android 14 or later (the photo picker requires it)\n",
        );
        assert!(
            successor_of(&items, "the deployment target").is_some_and(|s| s.starts_with("the app")),
            "{:?}",
            successors(&items)
        );
        assert_eq!(successor_of(&items, "the release build"), None);
        assert_eq!(
            versions("iOS 16.0, then Postgres 16 on port 5432"),
            [
                ("ios".to_string(), "16.0".to_string()),
                ("postgres".to_string(), "16".to_string()),
                ("port".to_string(), "5432".to_string())
            ]
        );
        // A version may end in letters (Unity's `f1`, a release candidate's `rc1`); a size or
        // a duration is no version.
        assert_eq!(
            versions("Unity 2022.3.21f1, Python 3.13.0rc1, URP 2D, timeout 500ms"),
            [
                ("unity".to_string(), "2022.3.21f1".to_string()),
                ("python".to_string(), "3.13.0rc1".to_string())
            ]
        );
    }

    #[test]
    fn a_decision_for_a_case_adds_to_the_others() {
        let older = "users sign in through the identity provider with a magic email link; the app keeps no passwords";
        let items = older_then(
            older,
            "until users sign in, the app keeps their drafts on an anonymous provider account; the email link then claims it",
        );
        assert_eq!(successor_of(&items, "users sign in"), None);
        // Without the condition, the same words replace it.
        let items = older_then(
            older,
            "the app keeps the drafts of users on an anonymous provider account; users sign in with the email link to claim it",
        );
        assert!(
            successor_of(&items, "users sign in").is_some(),
            "{:?}",
            successors(&items)
        );
    }

    #[test]
    fn instead_at_the_end_announces_a_change() {
        assert_replaced(
            "the worker's retry limits come from the jobs table, read once at boot",
            "in production, the limits are taken from environment variables through the release's env file instead",
        );
    }

    #[test]
    fn the_head_of_a_name_is_its_last_part() {
        // `sketch_merge_agg` is about an aggregate, not the sketch another decision is about.
        let items = older_then(
            "the text form of a sketch is the hex of its bytes, so COPY round-trips it",
            "sketch_merge_agg is PARALLEL SAFE, with sketch_union as its combine function",
        );
        assert_eq!(
            successor_of(&items, "the text form"),
            None,
            "{:?}",
            successors(&items)
        );
    }
}
