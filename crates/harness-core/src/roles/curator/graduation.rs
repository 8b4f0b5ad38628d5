//! Graduation: mission memory that earned a place in `identity/<role>.md` (L4), which every later
//! mission's prompts of that role carry. The files are append-only; a line is never graduated
//! twice (nor when the file already says the same, in the user's words or another mission's),
//! and each graduated line says why it graduated, in a comment no prompt gets. Knowledge
//! graduates when it is confirmed:
//! - reported on `graduate_trick_workers` distinct features, a TRICK among its entries, or first
//!   met as a failure that names nothing of one mission and then written down as a LESSON by
//!   another feature's worker, or whatever its tags when the curator's agent called it general
//!   (a feature's worker and validator count once: they looked at the same thing; a worker's
//!   attempts on its own feature count once: each reads its predecessor's notes);
//! - recorded on `graduate_convention_times` distinct features: a convention that agent after
//!   agent had forgotten (unless a validator checked for it: then it is the project's rule);
//! - seen in `graduate_failure_missions` missions, counted in the cross-mission ledger
//!   (`identity/ledger.json`), where each mission keeps its failure modes and lessons under its
//!   mission id (a mission whose entries are another's, under a new id, is not another); a
//!   failure mode is seen again where another mission's says the same words in a row (its
//!   effect, "the iteration hung until the timeout", in whatever tool's words around it) or
//!   tells the same [failure mode](super::modes) (a command held at a question, a server left
//!   in the foreground, a test that needed the network or read the real clock…), but not when
//!   the two tell different modes; a failure mode that each of them told in its own tools (no
//!   code in common) graduates in the mode's own general words, not in one mission's; a failure
//!   that tells a mode an identity line graduated from a failure tells is that line's
//!   knowledge, whatever its tool; a lesson of formatting before committing is seen again only
//!   where another mission's names the same tool (`prettier` is not `clang-format`); a lesson
//!   one feature alone told in this mission graduates only in a mode's words (one feature here
//!   and one there may each tell their project's own);
//!
//! and only when it is general and has a wording that names nothing of one mission
//! ([hygiene](super::hygiene)).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::base::error::InputError;
use crate::base::time::Timestamp;
use crate::spec::role::Role;
use crate::state::memory::{self, strip_comments, Tag};

use super::document::marker_ids;
use super::hygiene::{self, Needed, Said};
use super::items::{Evidence, Item, Kind};
use super::join::{Index, Vocabulary};
use super::judgments::Judgments;
use super::modes;
use super::practices;
use super::similarity::{analyse, identifiers_of, similarity, Context, Specific};
use super::{Cancelled, Params};

/// The most failure modes, and the most lessons, one mission keeps in the ledger (the most seen
/// first).
pub const LEDGER_FAILURES_PER_MISSION: usize = 100;
/// The most wordings of an item the ledger keeps besides its text.
pub const LEDGER_WORDINGS: usize = 3;

/// The most ids of other missions' items a graduated line names besides its own.
pub const MARKED_ALSO: usize = 8;

/// The weighted similarity at which a line of an identity file says what an item says: said
/// again, not merely on the same subject (`cargo fmt` and `ruff format` before committing are
/// two lines).
pub const KNOWN_SIMILARITY: f64 = 0.6;

/// The cross-mission ledger, `identity/ledger.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ledger {
    /// Each mission's items, by mission id.
    #[serde(default)]
    pub missions: BTreeMap<String, MissionItems>,
}

/// What one mission recorded in the ledger.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MissionItems {
    /// The project directory (its name is specific to the mission).
    #[serde(default)]
    pub project: String,
    /// Its failure modes (AVOID, FAIL).
    #[serde(default)]
    pub failures: Vec<LedgerItem>,
    /// Its lessons (TRICK, LESSON).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lessons: Vec<LedgerItem>,
}

/// An item of one mission, as the ledger keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LedgerItem {
    /// The item's id in that mission (the id of its first entry).
    pub id: String,
    /// The role that reported it most.
    pub role: Role,
    /// What it says.
    pub text: String,
    /// Other wordings of it, the most frequent first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub wordings: Vec<String>,
    /// Times seen in that mission.
    pub seen: usize,
    /// First seen.
    pub first_seen: Timestamp,
    /// Last seen.
    pub last_seen: Timestamp,
}

impl Ledger {
    /// Reads ledger.json's text (`path` names it in errors).
    pub fn parse(text: &str, path: &Path) -> Result<Self, InputError> {
        serde_json::from_str(text).map_err(|error| {
            InputError::in_file(path, format!("not a curator ledger: {error}"))
                .at_line(Some(error.line()))
                .with_hint(
                    "fix it, or delete it: failure modes are then counted from this mission on",
                )
        })
    }

    /// The file's text.
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).expect("a ledger serialises");
        text.push('\n');
        text
    }

    /// The ledger with `mission`'s entry made of its items (the others untouched).
    pub fn with_mission(&self, mission: &str, project: &str, items: &[&Item]) -> Ledger {
        let kept = |kind: Kind| {
            let mut of_kind: Vec<&Item> = items
                .iter()
                .copied()
                .filter(|i| i.kind == kind && !repeated_alone(i))
                .collect();
            of_kind.sort_by(|a, b| {
                b.seen
                    .cmp(&a.seen)
                    .then(b.last_seen.cmp(&a.last_seen))
                    .then(a.id.cmp(&b.id))
            });
            of_kind.truncate(LEDGER_FAILURES_PER_MISSION);
            of_kind.into_iter().map(ledger_item).collect::<Vec<_>>()
        };
        let (failures, lessons) = (kept(Kind::Avoid), kept(Kind::Lesson));
        let mut ledger = self.clone();
        if failures.is_empty() && lessons.is_empty() {
            ledger.missions.remove(mission);
        } else {
            ledger.missions.insert(
                mission.to_string(),
                MissionItems {
                    project: project.to_string(),
                    failures,
                    lessons,
                },
            );
        }
        ledger
    }
}

/// `item` as the ledger keeps it: the general wording the agent gave it first among its
/// wordings, so that another mission's item in the agent's words meets it.
fn ledger_item(item: &Item) -> LedgerItem {
    LedgerItem {
        id: item.id.clone(),
        role: item.role,
        text: item.text.clone(),
        wordings: told(item, usize::MAX)
            .filter(|text| *text != item.text)
            .take(LEDGER_WORDINGS)
            .map(str::to_string)
            .collect(),
        seen: item.seen,
        first_seen: item.first_seen,
        last_seen: item.last_seen,
    }
}

/// How `item` is told: the general wording the agent gave it, when it gave one, then the first
/// `most` of its own wordings (the most frequent first).
fn told(item: &Item, most: usize) -> impl Iterator<Item = &str> {
    let wordings = hygiene::wordings(item).into_iter().map(|(text, ..)| text);
    item.general
        .as_deref()
        .into_iter()
        .chain(wordings.take(most))
}

/// The phrase of the failure mode `text` tells, if any.
fn told_phrase(text: &str) -> Option<&'static str> {
    modes::told(text).map(|mode| mode.phrase)
}

/// The phrase of the failure mode among a text's [phrases](hygiene::phrases), which hold it:
/// read from them, not again from the text.
fn mode_among(phrases: &BTreeSet<String>) -> Option<&'static str> {
    modes::MODES
        .iter()
        .map(|mode| mode.phrase)
        .find(|phrase| phrases.contains(*phrase))
}

/// One item of another mission in the ledger, as the matching needs it.
#[derive(Debug, Clone)]
struct Recorded {
    mission: String,
    id: String,
    texts: Vec<String>,
    /// Its mission's context (its project's name).
    context: usize,
    /// Whether it is a failure mode (else a lesson).
    failure: bool,
    /// The [modes](modes::MODES) its wordings tell, by their phrases: a failure's, or a
    /// lesson's that say in a mode's words what went wrong ([`modes::told_by_lesson`]).
    modes: BTreeSet<&'static str>,
}

/// The ledger's items indexed by the words of each of their wordings: in which missions an
/// item like a given one was seen (a wording of one like a wording of the other), without
/// comparing it with every item of every mission.
#[derive(Debug, Clone)]
pub struct Recurrence {
    vocabulary: Vocabulary,
    index: Index,
    /// The item of each wording in the index, in its order.
    of_wording: Vec<usize>,
    recorded: Vec<Recorded>,
    /// The failure modes among `recorded` by the phrases of their wordings (see
    /// [`hygiene::phrases`]).
    phrases: HashMap<String, Vec<usize>>,
    contexts: Vec<Context>,
    /// This mission, and what is specific in it.
    mission: String,
    context: Context,
    /// Whether the ledger holds another mission's items (else nothing is looked up).
    others: bool,
}

/// How many wordings of an item of this mission are looked up in the ledger (the most frequent).
const LOOKED_UP: usize = 4;

impl Recurrence {
    /// The items of `ledger`, alike when the weighted similarity of a wording of each reaches
    /// `threshold`, for the items of `mission` (read in `context`).
    pub fn new(ledger: &Ledger, threshold: f64, mission: &str, context: &Context) -> Self {
        let mut recorded = Vec::new();
        let mut contexts = Vec::new();
        for (id, entry) in &ledger.missions {
            contexts.push(Context::new(&entry.project, []));
            let failures = entry.failures.iter().map(|item| (item, true));
            let lessons = entry.lessons.iter().map(|item| (item, false));
            for (item, failure) in failures.chain(lessons) {
                let texts: Vec<String> = std::iter::once(&item.text)
                    .chain(&item.wordings)
                    .cloned()
                    .collect();
                recorded.push(Recorded {
                    failure,
                    mission: id.clone(),
                    id: item.id.clone(),
                    modes: BTreeSet::new(),
                    texts,
                    context: contexts.len() - 1,
                });
            }
        }
        let mut of_wording = Vec::new();
        let mut words = Vec::new();
        for (number, r) in recorded.iter().enumerate() {
            for text in &r.texts {
                of_wording.push(number);
                words.push(analyse(text, &contexts[r.context]).words);
            }
        }
        let mut phrases: HashMap<String, Vec<usize>> = HashMap::new();
        for (number, r) in recorded.iter_mut().enumerate() {
            if !r.failure {
                // A lesson that says in a mode's words what went wrong tells the mode too.
                let told = r
                    .texts
                    .iter()
                    .filter_map(|text| Kind::Lesson.mode_told(&modes::Words::of(text)));
                r.modes.extend(told.map(|mode| mode.phrase));
                continue;
            }
            for text in &r.texts {
                let said = hygiene::phrases(text);
                r.modes.extend(mode_among(&said));
                for phrase in said {
                    phrases.entry(phrase).or_default().push(number);
                }
            }
        }
        let vocabulary = Vocabulary::new(words.iter().map(Vec::as_slice));
        let mut index = Index::weighted(threshold);
        for set in &words {
            index.insert(vocabulary.weighted_ids(set));
        }
        Self {
            vocabulary,
            index,
            of_wording,
            others: recorded.iter().any(|r| r.mission != mission),
            recorded,
            phrases,
            contexts,
            mission: mission.to_string(),
            context: context.clone(),
        }
    }

    /// The ledger's items of other missions like `item` (of this mission), but those with the
    /// same first entry (the same mission under another id); for a failure mode, also the
    /// failure modes that say the same words in a row.
    fn matches(&self, item: &Item) -> Vec<&Recorded> {
        if !self.others {
            return Vec::new();
        }
        let own: HashSet<&str> = item.entry_ids().collect();
        let mut found: BTreeSet<usize> = BTreeSet::new();
        let texts: Vec<&str> = told(item, LOOKED_UP).collect();
        for &text in &texts {
            let words = analyse(text, &self.context).words;
            found.extend(
                self.index
                    .similar(&self.vocabulary.weighted_ids(&words))
                    .into_iter()
                    .map(|wording| self.of_wording[wording]),
            );
            // A failure mode is most often told by its effect, in the same words whatever
            // command had it ("the iteration hung until the timeout", "no space left on
            // device", "address already in use"), among words of each mission's own tools that
            // keep the whole wordings apart: a failure mode of another mission that says the
            // same words in a row is this one recurring.
            // But two failures that tell different modes (a server left in the foreground, an
            // editor waiting for a message) are two, whatever effect they share.
            if item.kind == Kind::Avoid {
                let said = hygiene::phrases(text);
                let mode = mode_among(&said);
                let agrees =
                    |r: &Recorded| mode.map_or(r.modes.is_empty(), |m| r.modes.contains(m));
                for phrase in said {
                    let hits = self.phrases.get(&phrase).into_iter().flatten();
                    found.extend(hits.filter(|number| agrees(&self.recorded[**number])));
                }
            }
        }
        // Formatting before committing is one lesson per formatter, as within a mission (see
        // `items`): another mission's telling names a tool this one names.
        let formatting = texts.iter().any(|text| practices::formats(text));
        let tools = match formatting {
            true => practices::tools(&item.words),
            false => BTreeSet::new(),
        };
        let same_tool = |r: &Recorded| {
            r.texts.iter().any(|text| {
                let words = analyse(text, &self.contexts[r.context]).words;
                !tools.is_disjoint(&practices::tools(&words))
            })
        };
        found
            .into_iter()
            .map(|number| &self.recorded[number])
            .filter(|r| r.mission != self.mission && !own.contains(r.id.as_str()))
            .filter(|r| !formatting || same_tool(r))
            .collect()
    }

    /// The missions in which `item` of this mission was seen: this one, and every other whose
    /// ledger entry has an item saying the same thing. Sorted.
    pub fn missions_of(&self, item: &Item) -> Vec<String> {
        self.missions_in(&self.matches(item))
    }

    /// This mission and those of `matched` (an item's [`matches`](Self::matches)). Sorted.
    fn missions_in(&self, matched: &[&Recorded]) -> Vec<String> {
        let mut found: BTreeSet<&str> = matched.iter().map(|r| r.mission.as_str()).collect();
        found.insert(&self.mission);
        found.into_iter().map(str::to_string).collect()
    }

    /// The wordings of `matched` (an item's [`matches`](Self::matches)), with their missions.
    fn wordings_of<'a>(&'a self, matched: &[&'a Recorded]) -> Vec<Said<'a>> {
        matched
            .iter()
            .flat_map(|r| {
                r.texts.iter().map(move |text| Said {
                    text,
                    mission: &r.mission,
                    context: &self.contexts[r.context],
                    feature: None,
                    tag: None,
                })
            })
            .collect()
    }
}

/// Why an item graduated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    /// A TRICK reported on enough distinct features.
    Trick,
    /// Seen in enough missions.
    Failure,
    /// A convention forgotten on feature after feature.
    Convention,
}

/// One line graduated into an identity file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Graduation {
    /// The item.
    pub id: String,
    /// Whose identity file.
    pub role: Role,
    /// The rule it met.
    pub rule: Rule,
    /// Why, in words (also in the line).
    pub reason: String,
    /// The line appended.
    pub line: String,
}

/// The identity files as they are: each role's text, `None` when it has no file.
pub type Identities = Vec<(Role, Option<String>)>;

/// What an identity file already says: the item ids in its markers (with the number of their
/// line and its words, numbered), and its lines by their words.
struct Known {
    ids: HashMap<String, (usize, Vec<u32>)>,
    lines: Index,
    /// How many item ids each line names, by its number (so also how many lines there are).
    marked: Vec<usize>,
    /// Whether each line says a failure mode's lesson (see [`modes`]), by its number.
    modal: Vec<bool>,
    /// The failure mode each line tells, if any, by its number.
    told: Vec<Option<&'static str>>,
    /// The failure modes told by lines that graduated from a failure: any failure of one of
    /// them is what such a line says, in whatever tool's words.
    failures: BTreeSet<&'static str>,
    /// The identifiers each line names, by its number.
    named: Vec<BTreeSet<String>>,
}

impl Known {
    /// What `text` says, its lines (see [`said_words`]) numbered by `vocabulary`.
    fn of(text: Option<&str>, vocabulary: &Vocabulary, threshold: f64) -> Self {
        let text = text.unwrap_or("");
        let mut known = Self {
            ids: HashMap::new(),
            lines: Index::weighted(threshold),
            marked: Vec::new(),
            modal: Vec::new(),
            told: Vec::new(),
            failures: BTreeSet::new(),
            named: Vec::new(),
        };
        for whole in text.lines() {
            known.add_line(whole, vocabulary);
        }
        known
    }

    /// Takes a line of an identity file (`whole`, its comment too) into account, if it says
    /// something: one reading for the lines a file holds and those a pass graduates, so that
    /// the next pass knows a line as the pass that wrote it did.
    fn add_line(&mut self, whole: &str, vocabulary: &Vocabulary) {
        let shown = strip_comments(whole);
        let shown = shown.trim();
        if shown.is_empty() || shown.starts_with('#') {
            return;
        }
        let ids = marker_ids(whole);
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        let text = shown.trim_start_matches(['-', '*', ' ']);
        let words = vocabulary.weighted_ids(&said_words(shown));
        self.add(&ids, words, (text, whole));
    }

    /// Whether it names `item`; or an item of another mission that says the same (`matched`) in
    /// a line that the wording (`numbered[1]`, telling the failure mode `mode`) says again, or
    /// that tells the same failure mode in its own tools' words, or in a failure mode's lesson
    /// (which names none of the tools an item's wording names), or in whatever words when that
    /// item tells `mode`; or has a line like `numbered` (the item's words and the wording's,
    /// numbered). A line alike in words that names other code than the wording (`named`: its
    /// identifiers) is another tool's.
    fn says(
        &self,
        item: &Item,
        matched: &[&Recorded],
        (numbered, mode, named): (&[Vec<u32>; 2], Option<&str>, &BTreeSet<String>),
    ) -> bool {
        // A lesson learned from a failure of the mode is that line's knowledge too, whichever
        // of its tags is the most frequent (an item in the failures' section holds one).
        let failure = item.evidence.iter().any(Evidence::failed);
        item.entry_ids().any(|id| self.ids.contains_key(id))
            || (failure && mode.is_some_and(|mode| self.failures.contains(mode)))
            || matched.iter().any(|r| {
                self.ids.get(&r.id).is_some_and(|(number, line)| {
                    self.modal[*number]
                        || (mode.is_some() && self.told[*number] == mode)
                        || mode.is_some_and(|mode| r.modes.contains(mode))
                        || (similarity(line, &numbered[1]) >= 0.45
                            && !self.names_other_code(*number, named))
                })
            })
            || numbered.iter().any(|w| {
                self.lines
                    .similar(w)
                    .into_iter()
                    .any(|line| !self.names_other_code(line, named))
            })
    }

    /// Takes a line into account: the ids it names, its words, numbered, whether it (`text`)
    /// says a failure mode's lesson, and the mode it tells.
    fn add(&mut self, ids: &[&str], numbered: Vec<u32>, (text, whole): (&str, &str)) {
        let line = self.marked.len();
        let told = told_phrase(text);
        self.marked.push(ids.len());
        self.modal.push(modes::lesson_of(text).is_some());
        self.told.push(told);
        if from_a_failure(whole) {
            self.failures.extend(told);
        }
        for id in ids {
            self.ids.insert(id.to_string(), (line, numbered.clone()));
        }
        self.named.push(identifiers_of(text).into_iter().collect());
        self.lines.insert(numbered);
    }

    /// Whether line `number` and a wording that names the identifiers `named` each name code
    /// the other does not (`ktlintFormat`, `codenarcMain`): alike in their other words, they
    /// are two tools' lessons.
    fn names_other_code(&self, number: usize, named: &BTreeSet<String>) -> bool {
        let theirs = &self.named[number];
        !theirs.is_empty() && !named.is_empty() && theirs.is_disjoint(named)
    }

    /// Whether one line names items of two missions or more among `matched` (items of other
    /// missions like an item, with their mission): that line graduated knowledge already found
    /// alike across missions, and an item like it in each of them is that knowledge once more,
    /// in whatever words (its wording need not be like the line's). For a failure mode
    /// (`failure`), one item of such a line is enough: failure modes are matched by their
    /// effect alone, and one alike the items of two missions may be alike only one of them in
    /// its whole words.
    fn unites(&self, matched: &[&Recorded], failure: bool) -> bool {
        let mut missions: HashMap<usize, BTreeSet<&str>> = HashMap::new();
        for r in matched {
            if let Some((line, _)) = self.ids.get(&r.id) {
                missions.entry(*line).or_default().insert(&r.mission);
            }
        }
        missions
            .iter()
            .any(|(line, of_line)| of_line.len() >= 2 || (failure && self.marked[*line] >= 2))
    }
}

/// The words of what a line of an identity file says (without the reason a graduated line
/// gives, in its comment or, in lines of an older format, after its text).
fn said_words(line: &str) -> Vec<String> {
    let line = strip_comments(line);
    let line = line.split(" (graduated ").next().unwrap_or(&line);
    analyse(line, &Context::default()).words
}

/// The words of each line of an identity file that says something: neither a heading nor a
/// comment, without the reason a graduated line gives.
fn line_words(text: &str) -> Vec<Vec<String>> {
    strip_comments(text)
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(said_words)
        .filter(|words| !words.is_empty())
        .collect()
}

/// The words whose rarity weighs what identity lines and `items` say: those of every eligible
/// item, graduated before or not, and of the lines no item of them graduated. A pass that
/// graduates a line and the next, which reads it in the file, then weigh alike.
fn vocabulary(items: &[&Item], identities: &Identities) -> Vocabulary {
    let marked: BTreeSet<String> = identities
        .iter()
        .flat_map(|(_, text)| text.as_deref().unwrap_or("").lines())
        .flat_map(marker_ids)
        .collect();
    // Every entry of the mission is asked only when the files mark any item.
    let ours: BTreeSet<String> = if marked.is_empty() {
        BTreeSet::new()
    } else {
        items
            .iter()
            .flat_map(|item| item.entry_ids())
            .filter(|id| marked.contains(*id))
            .map(str::to_string)
            .collect()
    };
    let texts: Vec<Vec<String>> = identities
        .iter()
        .flat_map(|(_, text)| {
            let others: Vec<&str> = text
                .as_deref()
                .unwrap_or("")
                .lines()
                .filter(|line| marker_ids(line).iter().all(|id| !ours.contains(id)))
                .collect();
            line_words(&others.join("\n"))
        })
        .collect();
    Vocabulary::new(
        texts
            .iter()
            .map(Vec::as_slice)
            .chain(items.iter().map(|item| item.words.as_slice())),
    )
}

/// The lines to graduate from `items` (those eligible, of this mission, read in `context`),
/// none of those this mission graduated `before` (so that a line the user deleted from an
/// identity file stays deleted); given the identity files, the ledger's items (with this
/// mission's) and the parameters. Deterministic: by role, then item. `cancel` is asked at every
/// item.
pub fn graduate(
    (items, before): (&[&Item], &BTreeSet<String>),
    identities: &Identities,
    recurrence: &Recurrence,
    (context, judged): (&Context, &Judgments),
    params: &Params,
    cancel: &dyn Fn() -> bool,
) -> Result<Vec<Graduation>, Cancelled> {
    let vocabulary = vocabulary(items, identities);
    let mut known: BTreeMap<&str, Known> = identities
        .iter()
        .map(|(role, text)| {
            let known = Known::of(text.as_deref(), &vocabulary, KNOWN_SIMILARITY);
            (role.as_str(), known)
        })
        .collect();
    let mut ordered: Vec<&Item> = items
        .iter()
        .filter(|item| !item.named_by(before))
        .copied()
        .collect();
    ordered.sort_by(|a, b| (a.first_seen, &a.id).cmp(&(b.first_seen, &b.id)));
    let mut graduated = Vec::new();
    for item in ordered {
        if cancel() {
            return Err(Cancelled);
        }
        let matched = recurrence.matches(item);
        let Some((rule, reason, wording)) =
            earned(item, (recurrence, &matched), (context, judged), params)
        else {
            continue;
        };
        let file = known
            .entry(item.role.as_str())
            .or_insert_with(|| Known::of(None, &vocabulary, KNOWN_SIMILARITY));
        let numbered = [
            vocabulary.weighted_ids(&item.words),
            vocabulary.weighted_ids(&analyse(&wording, context).words),
        ];
        let mode = told_phrase(&wording);
        let named: BTreeSet<String> = identifiers_of(&wording).into_iter().collect();
        if file.says(item, &matched, (&numbered, mode, &named))
            || file.unites(&matched, item.kind == Kind::Avoid)
        {
            continue;
        }
        let mut same: Vec<&str> = matched.iter().map(|r| r.id.as_str()).collect();
        // The line names the items of other missions that say the same too: a later mission
        // that matches any of them knows it graduated.
        same.sort_unstable();
        same.dedup();
        same.retain(|id| *id != item.id);
        same.truncate(MARKED_ALSO);
        let markers: String = std::iter::once(item.id.as_str())
            .chain(same.iter().copied())
            .map(|id| format!("c:{id}"))
            .collect::<Vec<_>>()
            .join(" ");
        // Why it graduated names one mission's features and runs: a human reads it in the
        // file, a prompt never gets it (`memory::read_identity_layer` strips the comment).
        let line = format!(
            "- {wording} {}{} from mission {}: {reason}; {markers} -->",
            memory::GRADUATED_COMMENT,
            item.last_seen.format("%Y-%m-%d"),
            recurrence.mission,
        );
        file.add_line(&line, &vocabulary);
        graduated.push(Graduation {
            id: item.id.clone(),
            role: item.role,
            rule,
            reason,
            line,
        });
    }
    graduated.sort_by_key(|g| Role::ALL.iter().position(|r| *r == g.role));
    Ok(graduated)
}

/// How the reason of a line graduated from a failure begins: a failure mode seen in missions,
/// or a failure, then its lesson, reported by distinct workers.
const FAILURE_MODE: &str = "failure mode";
const FAILURE_THEN_LESSON: &str = "failure, then its lesson,";

/// Whether the identity line `whole` graduated from a failure (its reason says so).
fn from_a_failure(whole: &str) -> bool {
    [FAILURE_MODE, FAILURE_THEN_LESSON]
        .iter()
        .any(|reason| whole.contains(&format!(": {reason} ")))
}

/// The graduation `item` earned, if any: the first rule it meets in a wording that is general
/// and said again as the rule asks, the reason in words, and the wording. `matched` are the
/// ledger's items like it.
fn earned(
    item: &Item,
    (recurrence, matched): (&Recurrence, &[&Recorded]),
    (context, judged): (&Context, &Judgments),
    params: &Params,
) -> Option<(Rule, String, String)> {
    let sources = independent(item);
    let trick = item.evidence.iter().any(|e| e.tag == Tag::Trick);
    // The agent's general wording, when it gave one.
    let general = item.general.as_deref();
    // A lesson another feature's worker drew from a failure is confirmed as a TRICK is; and
    // whatever their tags, distinct workers confirm what the agent read as general knowledge
    // (a TRICK's tag is how the rules tell a technique from a remark; the agent read it).
    let by_workers = sources.len() >= params.graduate_trick_workers
        && (trick || general.is_some() || learned_after_failure(item, context));
    let missions = sighted_in(item, recurrence, matched);
    let possible = by_workers
        || missions.len() >= params.graduate_failure_missions
        || sources.len() >= params.graduate_convention_times;
    if !possible || judged.is_local(item) {
        return None;
    }
    // Lessons that only report an earlier lesson applied are no knowledge of their own.
    if item
        .evidence
        .iter()
        .all(|e| matches!(e.tag, Tag::Trick | Tag::Lesson) && hygiene::reports_applied(&e.text))
    {
        return None;
    }
    let wordings = hygiene::wordings(item);
    // The agent's call, when it made one, in place of the rules of thumb.
    if general.is_none() && hygiene::of_the_project(&wordings, item, context) {
        return None;
    }
    let (own, with_agents) = own_wordings(wordings, general, &recurrence.mission, context);
    let others = recurrence.wordings_of(matched);
    let wording = |needed| {
        let own = match needed {
            Needed::Missions(_) => &with_agents,
            Needed::Features { .. } => &own,
        };
        hygiene::general_wording(own, &others, needed, general)
    };
    if by_workers {
        let needed = Needed::Features {
            count: params.graduate_trick_workers,
            trick: trick && general.is_none(),
        };
        if let Some(wording) = wording(needed) {
            let what = match (trick, general) {
                (true, _) => "TRICK",
                (false, Some(_)) => "general knowledge",
                (false, None) => FAILURE_THEN_LESSON,
            };
            let reason = format!(
                "{what} reported by {} distinct workers: {}",
                sources.len(),
                list(&sources, 5, " more")
            );
            return Some((Rule::Trick, reason, wording));
        }
    }
    if missions.len() >= params.graduate_failure_missions {
        let needed = Needed::Missions(params.graduate_failure_missions);
        // A failure mode every agent meets, told by each mission in its own tools (they name no
        // code in common), graduates in the mode's general words: a mission's wording that names
        // nothing of it still tells its own tool's case ("the throwaway key belongs in the
        // repository"). Told with the same tool ("npm ci --offline" in both), that mission's
        // wording says it best. The agent's general wording, when it gave one, comes first.
        let lesson = || mode_lesson(item, recurrence, matched, params.graduate_failure_missions);
        let same_tool = || {
            let own_code = hygiene::code_named(&own);
            others
                .iter()
                .any(|said| !hygiene::code_atoms(said.text).is_disjoint(&own_code))
        };
        let chosen = match general {
            Some(_) => wording(needed),
            // A lesson one feature alone told here, as one feature alone did in another
            // mission, may be each project's own ("the export writes one .md per note"); told
            // again here by another feature, or telling a failure mode, it is known.
            None if item.kind != Kind::Avoid && sources.len() < 2 => lesson(),
            None if !same_tool() => lesson().or_else(|| wording(needed)),
            None => wording(needed).or_else(lesson),
        };
        if let Some(wording) = chosen {
            let what = if item.kind == Kind::Avoid {
                FAILURE_MODE
            } else {
                "lesson"
            };
            let reason = format!(
                "{what} seen in {} missions: {}",
                missions.len(),
                list(&missions, 5, " more")
            );
            return Some((Rule::Failure, reason, wording));
        }
    }
    // A convention a validator checks for is this project's acceptance rule, not a tool's; but
    // what a formatter checks is the formatter's rule, whoever enforces it.
    let checked = || {
        item.evidence.iter().any(|e| e.role == Role::Validator)
            && !own.iter().any(|said| practices::formats(said.text))
    };
    if sources.len() >= params.graduate_convention_times && !checked() {
        let needed = Needed::Features {
            count: params.graduate_convention_times,
            trick: false,
        };
        if let Some(wording) = wording(needed) {
            let reason = format!(
                "{} recorded on {} features, forgotten in between (by {})",
                item.tag.as_str(),
                sources.len(),
                list(&sources, 5, " more")
            );
            return Some((Rule::Convention, reason, wording));
        }
    }
    None
}

/// The lesson of the [failure mode](modes) that `item` tells (a failure, or a lesson that says
/// in the mode's words what went wrong), when the ledger's items like it (`matched`) tell it
/// too in enough missions with this one (`missions`).
fn mode_lesson(
    item: &Item,
    recurrence: &Recurrence,
    matched: &[&Recorded],
    missions: usize,
) -> Option<String> {
    // A lesson that says in a mode's words what went wrong ("started in the foreground it never
    // returns") tells the mode too.
    let tells: BTreeSet<&str> = hygiene::wordings(item)
        .iter()
        .filter_map(|(text, ..)| item.kind.mode_told(&modes::Words::of(text)))
        .map(|mode| mode.phrase)
        .collect();
    let mode = modes::MODES.iter().find(|mode| {
        let with: BTreeSet<&str> = matched
            .iter()
            .filter(|r| r.modes.contains(mode.phrase))
            .map(|r| r.mission.as_str())
            .chain([recurrence.mission.as_str()])
            .collect();
        tells.contains(mode.phrase) && with.len() >= missions
    })?;
    Some(mode.lesson.to_string())
}

/// This mission's wordings of an item (`wordings`, read in `context`), and the same with the
/// agent's `general` wording among them: across missions, it says the item again too, since
/// another mission's item may be in the ledger in the agent's words alone (features are
/// counted from entries only).
fn own_wordings<'a>(
    wordings: Vec<(&'a str, Option<&'a str>, Tag)>,
    general: Option<&'a str>,
    mission: &'a str,
    context: &'a Context,
) -> (Vec<Said<'a>>, Vec<Said<'a>>) {
    let said = |text, feature, tag| Said {
        text,
        mission,
        context,
        feature,
        tag,
    };
    let own: Vec<Said> = wordings
        .into_iter()
        .map(|(text, feature, tag)| said(text, feature, Some(tag)))
        .collect();
    let agents = general.map(|text| said(text, None, None));
    let with_agents = own.iter().copied().chain(agents).collect();
    (own, with_agents)
}

/// Whether `item` was first met as a failure (AVOID, FAIL) that names nothing of one mission,
/// then written down as a LESSON by the worker of another feature: two workers met it, one the
/// hard way, which confirms it as a TRICK reported twice does. Knowledge first recorded as a
/// lesson and failed later is a convention forgotten (it needs more features); a failure that
/// names a value of one mission (a row of its data, its port, a date) happened to that
/// mission's data, where a path, a task name or the project's name it names is as often a
/// tool's ("Integration 'kilnwatch' not found": the tool's words about the project's code).
fn learned_after_failure(item: &Item, context: &Context) -> bool {
    let Some(failed) = item.evidence.first().filter(|e| e.failed()).filter(|e| {
        !analyse(&e.text, context)
            .specifics
            .iter()
            .any(|(kind, _)| !matches!(kind, Specific::Path | Specific::Name | Specific::Project))
    }) else {
        return false;
    };
    item.evidence
        .iter()
        .any(|e| e.tag == Tag::Lesson && e.time > failed.time && e.feature != failed.feature)
}

/// The missions that saw `item`, given the ledger's items like it (`matched`): this one too,
/// unless its item is one feature's failure repeating itself.
fn sighted_in(item: &Item, recurrence: &Recurrence, matched: &[&Recorded]) -> Vec<String> {
    let mut missions = recurrence.missions_in(matched);
    if repeated_alone(item) {
        missions.retain(|m| *m != recurrence.mission);
    }
    missions
}

/// Whether `item` is one feature's failure repeating itself: failed more than once, on that
/// feature alone (its own flaky test on each attempt).
fn repeated_alone(item: &Item) -> bool {
    let failures = item.evidence.iter().filter(|e| e.failed()).count();
    failures >= 2 && independent(item).len() == 1
}

/// The distinct features `item` was reported on (an entry without a feature counts by its
/// role), sorted.
fn independent(item: &Item) -> Vec<String> {
    let sources: BTreeSet<String> = item
        .evidence
        .iter()
        .map(|e| match &e.feature {
            Some(feature) => feature.to_string(),
            None => e.role.to_string(),
        })
        .collect();
    sources.into_iter().collect()
}

/// `a, b, c +2<more>`: the first `most` values, and how many are left out.
pub(super) fn list(values: &[String], most: usize, more: &str) -> String {
    let mut text = values
        .iter()
        .take(most)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if values.len() > most {
        text.push_str(&format!(" +{}{more}", values.len() - most));
    }
    text
}

/// An identity file with `lines` appended (a new file gets its title first).
pub fn appended(role: Role, text: Option<&str>, lines: &[String]) -> String {
    let mut text = match text {
        Some(text) => text.to_string(),
        None => format!("# Identity: {role}\n\n"),
    };
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    for line in lines {
        text.push_str(line);
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::super::{items, log};
    use super::*;

    fn items_of(text: &str) -> Vec<Item> {
        let lines = log::read(text.as_bytes(), &[]).raw;
        items::group(
            &lines.iter().collect::<Vec<_>>(),
            0.6,
            0.4,
            &Default::default(),
            &|| false,
        )
        .unwrap()
    }

    /// What `items` of a first mission graduate into `identities`, with the default rules.
    fn graduated_alone(items: &[Item], identities: &Identities) -> Vec<Graduation> {
        graduated_alone_in(items, identities, &Context::default())
    }

    /// [`graduated_alone`], the mission read in `context`.
    fn graduated_alone_in(
        items: &[Item],
        identities: &Identities,
        context: &Context,
    ) -> Vec<Graduation> {
        let refs: Vec<&Item> = items.iter().collect();
        let params = Params::default();
        let none = Recurrence::new(&Ledger::default(), params.similarity, "m-1", context);
        let judged = Judgments::default();
        graduate(
            (&refs, &BTreeSet::new()),
            identities,
            &none,
            (context, &judged),
            &params,
            &|| false,
        )
        .unwrap()
    }

    #[test]
    fn a_trick_from_two_workers_graduates_once_and_says_why() {
        let items = items_of(
            "[2026-04-24T10:00:00Z] worker F-1 TRICK: cargo test -q keeps the output short\n\
             [2026-04-24T11:00:00Z] worker F-2 TRICK: the output stays short with cargo test -q\n\
             [2026-04-24T12:00:00Z] worker F-3 TRICK: alone trick said thrice\n\
             [2026-04-24T13:00:00Z] worker F-3 TRICK: alone trick said thrice\n\
             [2026-04-24T14:00:00Z] worker F-3 TRICK: alone trick said thrice\n",
        );
        let done = graduated_alone(&items, &vec![(Role::Worker, None)]);
        assert_eq!(done.len(), 1, "{done:?}");
        assert_eq!(done[0].rule, Rule::Trick);
        assert!(done[0]
            .line
            .contains("TRICK reported by 2 distinct workers: F-1, F-2"));
        assert!(done[0].line.ends_with(&format!("; c:{} -->", done[0].id)));
        // Why it graduated is for the reader of the file, not for prompts.
        assert!(done[0].line.starts_with("- ") && done[0].line.contains(" <!-- graduated "));
        // Already in the file (in the user's words): not again.
        let identities: Identities = vec![(
            Role::Worker,
            Some("# Identity: worker\n- Run cargo test -q to keep output short.\n".into()),
        )];
        assert!(graduated_alone(&items, &identities).is_empty());
    }

    #[test]
    fn what_most_wordings_say_is_done_as_everything_else_here_is_the_projects() {
        let graduated = |second: &str| {
            let items = items_of(&format!(
                "[2026-04-24T10:00:00Z] worker F-1 TRICK: the batch returns createdAt as an ISO string in UTC\n\
                 [2026-04-24T11:00:00Z] worker F-2 TRICK: {second}\n"
            ));
            graduated_alone(&items, &vec![(Role::Worker, None)]).len()
        };
        assert_eq!(
            graduated("createdAt goes out as an ISO string in UTC, like every response"),
            0
        );
        assert_eq!(
            graduated("createdAt goes out as an ISO string in UTC, never epoch ms"),
            1
        );
    }

    #[test]
    fn a_lesson_another_worker_drew_from_a_failure_graduates() {
        let log = |first: &str, second: &str, row: &str| {
            items_of(&format!(
                "[2026-04-24T10:00:00Z] worker F-1 {first}: DataLoader num_workers above zero in pytest hangs at teardown{row}\n\
                 [2026-04-24T11:00:00Z] worker F-2 {second}: in pytest a DataLoader hangs at teardown unless num_workers is zero\n"
            ))
        };
        let identities: Identities = vec![(Role::Worker, None)];
        let done = graduated_alone(&log("FAIL", "LESSON", ""), &identities);
        assert_eq!(done.len(), 1, "{done:?}");
        assert_eq!(done[0].rule, Rule::Trick);
        assert!(done[0]
            .reason
            .contains("failure, then its lesson, reported by 2 distinct workers: F-1, F-2"));
        // A failure with a value of one mission (a row of its data) happened to its data; a
        // path it names is as often a tool's file.
        let row = log("FAIL", "LESSON", " at row 10241");
        assert_eq!(graduated_alone(&row, &identities), []);
        let path = log("FAIL", "LESSON", " in tests/data/fixtures.py");
        assert_eq!(graduated_alone(&path, &identities).len(), 1);
        // So is the project's name in an error (its module not found): the tool's words.
        let named = log("FAIL", "LESSON", ": \"Integration 'kilnwatch' not found\"");
        let context = Context::new("/work/kilnwatch", ["F-1", "F-2"]);
        assert_eq!(graduated_alone_in(&named, &identities, &context).len(), 1);
        // A lesson failed later, then said again, is a convention forgotten once: not enough.
        let forgotten = items_of(
            "[2026-04-24T10:00:00Z] worker F-1 LESSON: DataLoader num_workers above zero in pytest hangs at teardown\n\
             [2026-04-24T11:00:00Z] worker F-2 FAIL: in pytest a DataLoader hangs at teardown unless num_workers is zero\n\
             [2026-04-24T12:00:00Z] worker F-1 LESSON: num_workers zero for a DataLoader in pytest, or teardown hangs\n",
        );
        assert_eq!(forgotten.len(), 1, "{forgotten:?}");
        assert_eq!(graduated_alone(&forgotten, &identities), []);
    }

    #[test]
    fn lessons_that_report_a_lesson_applied_are_no_knowledge_of_their_own() {
        let log = |mark: &str| {
            items_of(&format!(
                "[2026-04-24T10:00:00Z] worker F-1 LESSON: ran cargo fmt before the commit{mark}\n\
                 [2026-04-24T11:00:00Z] worker F-2 LESSON: ran cargo fmt before committing{mark}\n\
                 [2026-04-24T12:00:00Z] worker F-3 LESSON: cargo fmt ran before the commit{mark}\n"
            ))
        };
        let identities: Identities = vec![(Role::Worker, None)];
        assert_eq!(graduated_alone(&log(""), &identities).len(), 1);
        for mark in [" this time", "; CI passed the first time for once"] {
            assert_eq!(graduated_alone(&log(mark), &identities), [], "{mark}");
        }
        assert!(!hygiene::reports_applied("the first install takes a while"));
    }

    #[test]
    fn a_convention_a_validator_checks_is_the_projects() {
        let log = |validator: &str| {
            items_of(&format!(
                "[2026-04-24T10:00:00Z] worker F-1 LESSON: every resource carries the Owner tag through default_tags\n\
                 [2026-04-24T11:00:00Z] worker F-2 FAIL: forgot the Owner tag through default_tags again\n\
                 [2026-04-24T12:00:00Z] worker F-3 LESSON: the Owner tag through default_tags on every resource\n\
                 [2026-04-24T12:05:00Z] {validator} F-3 LESSON: every resource had the Owner tag through default_tags\n"
            ))
        };
        let identities: Identities = vec![(Role::Worker, None), (Role::Validator, None)];
        let forgotten = graduated_alone(&log("worker"), &identities);
        assert_eq!(forgotten.len(), 1, "{forgotten:?}");
        assert_eq!(forgotten[0].rule, Rule::Convention);
        // The same convention, checked by the validator: the project's rule.
        assert_eq!(graduated_alone(&log("validator"), &identities), []);
        // But what a formatter checks is the formatter's rule, whoever enforces it.
        let formatter = items_of(
            "[2026-04-24T10:00:00Z] worker F-1 LESSON: run perltidy -b on the touched files before committing\n\
             [2026-04-24T11:00:00Z] worker F-2 FAIL: the tidy check rejected the controller: I had not run perltidy -b before committing\n\
             [2026-04-24T12:00:00Z] worker F-3 LESSON: perltidy -b on the touched files before committing, as always\n\
             [2026-04-24T12:05:00Z] validator F-3 LESSON: perltidy -b on the touched files before committing shows nothing to change\n",
        );
        let graduated = graduated_alone(&formatter, &identities);
        assert_eq!(graduated.len(), 1, "{graduated:?}");
        assert_eq!(graduated[0].rule, Rule::Convention);
    }

    #[test]
    fn a_failure_in_two_missions_graduates_through_the_ledger() {
        let first = items_of(
            "[2026-04-24T10:00:00Z] worker F-1 FAIL: the dev server port 3000 was taken\n",
        );
        let second = items_of(
            "[2026-05-02T10:00:00Z] worker F-9 FAIL: dev server port 8080 was already taken\n",
        );
        let params = Params::default();
        let ledger = Ledger::default().with_mission("m-1", "/a", &first.iter().collect::<Vec<_>>());
        let refs: Vec<&Item> = second.iter().collect();
        let ledger = ledger.with_mission("m-2", "/b", &refs);
        assert_eq!(ledger.missions.len(), 2);
        let context = Context::default();
        let recurrence = Recurrence::new(&ledger, params.similarity, "m-2", &context);
        let done = graduate(
            (&refs, &BTreeSet::new()),
            &vec![],
            &recurrence,
            (&context, &Judgments::default()),
            &params,
            &|| false,
        )
        .unwrap();
        assert_eq!(done.len(), 1);
        assert_eq!(done[0].rule, Rule::Failure);
        assert!(
            done[0].reason.contains("2 missions: m-1, m-2"),
            "{}",
            done[0].reason
        );
        let alone = Ledger::default().with_mission("m-2", "/b", &refs);
        let alone = Recurrence::new(&alone, params.similarity, "m-2", &context);
        assert!(graduate(
            (&refs, &BTreeSet::new()),
            &vec![],
            &alone,
            (&context, &Judgments::default()),
            &params,
            &|| false
        )
        .unwrap()
        .is_empty());
    }

    /// What `items` of mission `mission` graduate, given the ledger `before` (the other
    /// missions) and the identity file of workers `worker`; with the ledger it leaves.
    fn graduated_in(
        mission: &str,
        items: &[Item],
        before: &Ledger,
        worker: Option<&str>,
    ) -> (Vec<Graduation>, Ledger) {
        let params = Params::default();
        let refs: Vec<&Item> = items.iter().collect();
        let ledger = before.with_mission(mission, &format!("/p/{mission}"), &refs);
        let context = Context::default();
        let recurrence = Recurrence::new(&ledger, params.similarity, mission, &context);
        let identities: Identities = vec![(Role::Worker, worker.map(str::to_string))];
        let done = graduate(
            (&refs, &BTreeSet::new()),
            &identities,
            &recurrence,
            (&context, &Judgments::default()),
            &params,
            &|| false,
        )
        .unwrap();
        (done, ledger)
    }

    #[test]
    fn a_lesson_one_feature_alone_told_in_each_mission_does_not_graduate() {
        let lesson = |feature: &str, day: u32| {
            format!(
                "[2026-05-{day:02}T10:00:00Z] worker {feature} LESSON: the export writes one .md \
                 file per note with the tags as a YAML front matter block\n"
            )
        };
        let (_, ledger) = graduated_in(
            "m-1",
            &items_of(&lesson("F-1", 1)),
            &Ledger::default(),
            None,
        );
        let (done, _) = graduated_in("m-2", &items_of(&lesson("F-9", 9)), &ledger, None);
        assert_eq!(done, []);
        // Told again here by another feature, it is known.
        let twice = items_of(&format!("{}{}", lesson("F-8", 8), lesson("F-9", 9)));
        let (done, _) = graduated_in("m-2", &twice, &ledger, None);
        assert_eq!(done.len(), 1, "{done:?}");
        assert!(done[0].reason.contains("2 missions"), "{}", done[0].reason);
    }

    #[test]
    fn the_agents_general_wordings_meet_across_missions() {
        let items = |text: &str, general: Option<&str>| {
            let mut items = items_of(text);
            items[0].general = general.map(str::to_string);
            items
        };
        let first = "[2026-04-24T10:00:00Z] worker F-3 FAIL: the report test broke on the CI \
                     machine: the service sorted names with the default Collator\n";
        let second = "[2026-05-02T10:00:00Z] worker F-7 FAIL: the weekly list came out in \
                      another order in the pipeline; the sort gets its locale passed in\n";
        let general = "sorting text depends on the machine's locale; tests pass the locale in";
        let missions = |general: Option<&str>| {
            let params = Params::default();
            let (_, ledger) = graduated_in("m-1", &items(first, general), &Ledger::default(), None);
            let second = items(second, general);
            let refs: Vec<&Item> = second.iter().collect();
            let ledger = ledger.with_mission("m-2", "/p/m-2", &refs);
            let context = Context::default();
            let recurrence = Recurrence::new(&ledger, params.similarity, "m-2", &context);
            (recurrence.missions_of(&second[0]), ledger)
        };
        // In their own words, the two failures are not alike.
        assert_eq!(missions(None).0, ["m-2"]);
        // The agent called each general in like words: the ledger keeps the first's, and the
        // second meets it there; it graduates in the agent's words.
        let (seen, ledger) = missions(Some(general));
        assert_eq!(seen, ["m-1", "m-2"]);
        let kept = &ledger.missions["m-1"].failures[0].wordings;
        assert_eq!(kept.first().map(String::as_str), Some(general));
        let (done, _) = graduated_in("m-2", &items(second, Some(general)), &ledger, None);
        assert_eq!(done.len(), 1, "{done:?}");
        assert!(
            done[0].line.starts_with(&format!("- {general} <!--")),
            "{}",
            done[0].line
        );
    }

    #[test]
    fn knowledge_graduated_across_missions_is_not_graduated_again_in_other_words() {
        let first = items_of(
            "[2026-04-24T10:00:00Z] worker F-1 FAIL: git add -A committed the coverage folder; \
             check git status before committing and keep generated files in .gitignore\n",
        );
        let second = items_of(
            "[2026-05-02T10:00:00Z] worker F-1 FAIL: the build folder showed up in git status \
             as new files; both went into .gitignore\n",
        );
        let third = items_of(
            "[2026-06-02T10:00:00Z] worker F-4 FAIL: the run outputs went into the first commit \
             with their logs; removed them, listed in .gitignore, look at git status first\n",
        );
        // The third mission's item is like the items of both missions the line names: that
        // knowledge, seen once more, though its words are not the line's.
        third_is_the_lines_knowledge(&first, &second, &third);
    }

    /// The items of two missions graduate one line; the third mission's `third` is then that
    /// line's knowledge (nothing graduates with the line there), and would graduate without it.
    fn third_is_the_lines_knowledge(first: &[Item], second: &[Item], third: &[Item]) {
        let (done, ledger) = graduated_in("m-1", first, &Ledger::default(), None);
        assert_eq!(done, []);
        let (done, ledger) = graduated_in("m-2", second, &ledger, None);
        assert_eq!(done.len(), 1, "{done:?}");
        let file = appended(Role::Worker, None, &[done[0].line.clone()]);
        let (again, _) = graduated_in("m-3", third, &ledger, Some(&file));
        assert_eq!(again, [], "{}", done[0].line);
        let (alone, _) = graduated_in("m-3", third, &ledger, None);
        assert_eq!(alone.len(), 1, "{alone:?}");
    }

    #[test]
    fn a_failure_told_by_its_effect_in_other_tools_words_recurs() {
        let first = items_of(
            "[2026-04-24T10:00:00Z] worker F-3 FAIL: knife bootstrap stopped at a yes or no \
             question about the vault and the iteration hung until the timeout; pass --yes\n",
        );
        let second = items_of(
            "[2026-05-02T10:00:00Z] worker F-7 FAIL: gradle publish wanted the signing password \
             typed in and the iteration hung until the timeout\n",
        );
        let (done, ledger) = graduated_in("m-1", &first, &Ledger::default(), None);
        assert_eq!(done, []);
        // Few words in common but the effect, in the same words in a row.
        let words = |items: &[Item]| items[0].words.clone();
        assert!(similarity(&words(&first), &words(&second)) < 0.3);
        let (done, _) = graduated_in("m-2", &second, &ledger, None);
        assert_eq!(done.len(), 1, "{done:?}");
        assert_eq!(done[0].rule, Rule::Failure);
        // A lesson is not matched by a phrase alone.
        let lesson = items_of(
            "[2026-05-02T10:00:00Z] worker F-7 LESSON: gradle publish wanted the signing \
             password typed in and the iteration hung until the timeout\n",
        );
        let (done, _) = graduated_in("m-2", &lesson, &ledger, None);
        assert_eq!(done, []);
    }

    #[test]
    fn formatting_before_committing_recurs_only_with_its_formatter() {
        let first = items_of(
            "[2026-04-24T10:00:00Z] worker F-3 LESSON: forgot clang-format -i again and the \
             validator's format check failed; run it before each commit\n",
        );
        // Told by two features of the second mission (one alone may tell its project's own).
        let second = |text: &str| {
            items_of(&format!(
                "[2026-05-02T10:00:00Z] worker F-7 LESSON: {text}\n\
                 [2026-05-03T10:00:00Z] worker F-8 LESSON: {text}\n"
            ))
        };
        let (done, ledger) = graduated_in("m-1", &first, &Ledger::default(), None);
        assert_eq!(done, []);
        // Another formatter's convention shares the validator, the check and its failure.
        let other = second(
            "prettier again: the validator's format check failed on the partial; run it before \
             each commit",
        );
        let (done, _) = graduated_in("m-2", &other, &ledger, None);
        assert_eq!(done, []);
        // The same formatter's recurs.
        let same = second(
            "the validator's format check failed on the new file: clang-format -i before each \
             commit, every time",
        );
        let (done, _) = graduated_in("m-2", &same, &ledger, None);
        assert_eq!(done.len(), 1, "{done:?}");
    }

    #[test]
    fn a_command_held_at_a_question_recurs_in_any_tools_words() {
        let first = items_of(
            "[2026-04-24T10:00:00Z] worker F-3 FAIL: deno run seed.ts without --allow-env \
             stopped at \"Allow? [y/n/A]\" and waited for an answer that never came\n",
        );
        let second =
            |text: &str| items_of(&format!("[2026-05-02T10:00:00Z] worker F-7 FAIL: {text}\n"));
        let (_, ledger) = graduated_in("m-1", &first, &Ledger::default(), None);
        // No three words in a row in common: the failure mode alone.
        let held = second(
            "ansible-vault encrypt asked for a new vault password; the iteration was killed at \
             the timeout",
        );
        assert!(hygiene::phrases(&first[0].text)
            .intersection(&hygiene::phrases(&held[0].text))
            .all(|phrase| phrase.starts_with('<')));
        let (done, _) = graduated_in("m-2", &held, &ledger, None);
        assert_eq!(done.len(), 1, "{done:?}");
        assert_eq!(done[0].rule, Rule::Failure);
        // An editor waits for a person too.
        let editor =
            second("git merge opened the editor for its message and the iteration timed out");
        let (done, _) = graduated_in("m-2", &editor, &ledger, None);
        assert_eq!(done.len(), 1, "{done:?}");
        // Held by something else, it is another failure.
        let other = second("rails server in the foreground kept the iteration waiting");
        let (done, _) = graduated_in("m-2", &other, &ledger, None);
        assert_eq!(done, []);
    }

    /// Two missions' failures of the server left in the foreground, in words that share nothing
    /// and that name each a path of its mission (neither wording is general).
    fn servers_in_the_foreground() -> (Vec<Item>, Vec<Item>) {
        let first = items_of(
            "[2026-04-24T10:00:00Z] worker F-4 FAIL: ran anvil in the foreground to try the \
             transfer, and the iteration waited on it until the timeout; see scripts/try.sh\n",
        );
        let second = items_of(
            "[2026-05-02T10:00:00Z] worker F-3 FAIL: cabal run api-server to look at /v1/gyms \
             never came back; a server holds a job for ever\n",
        );
        (first, second)
    }

    /// A lesson that says in a mode's words what went wrong, in two missions, graduates in the
    /// mode's words, as failures of the mode do: its own wording names its mission's code.
    #[test]
    fn a_lesson_of_a_failure_mode_in_two_missions_graduates_in_the_modes_words() {
        let first = items_of(
            "[2026-04-24T10:00:00Z] worker F-5 LESSON: ran npm start in the background (&) for \
             the curl checks and killed it afterwards; in the foreground it never returns\n",
        );
        let second = items_of(
            "[2026-05-02T10:00:00Z] worker F-10 LESSON: served build/html5 in the background for \
             the browser check and stopped it after; started in the foreground it never returns\n",
        );
        let (_, ledger) = graduated_in("m-1", &first, &Ledger::default(), None);
        let (done, _) = graduated_in("m-2", &second, &ledger, None);
        let server = modes::MODES
            .iter()
            .find(|mode| mode.phrase == "<server in the foreground>")
            .unwrap();
        assert_eq!(done.len(), 1, "{done:?}");
        assert!(
            done[0].line.starts_with(&format!("- {} ", server.lesson)),
            "{done:?}"
        );
    }

    #[test]
    fn a_lesson_like_a_failure_graduated_in_its_modes_words_is_known() {
        // Neither wording is general: the line is in the mode's words.
        let (first, second) = servers_in_the_foreground();
        let (_, ledger) = graduated_in("m-1", &first, &Ledger::default(), None);
        let (done, ledger) = graduated_in("m-2", &second, &ledger, None);
        assert_eq!(done.len(), 1, "{done:?}");
        assert!(
            modes::lesson_of(&done[0].line[2..done[0].line.find(" <!--").unwrap()]).is_some(),
            "{}",
            done[0].line
        );
        // A lesson of a third mission (two features told it), like the first's failure in its
        // words: that knowledge.
        let third = items_of(
            "[2026-06-02T10:00:00Z] worker F-2 LESSON: ran anvil in the background to try the \
             transfer, so the iteration never waited on it until the timeout\n\
             [2026-06-03T10:00:00Z] worker F-4 LESSON: ran anvil in the background to try the \
             transfer, so the iteration never waited on it until the timeout\n",
        );
        let file = appended(Role::Worker, None, &[done[0].line.clone()]);
        let (again, _) = graduated_in("m-3", &third, &ledger, Some(&file));
        assert_eq!(again, []);
        let (alone, _) = graduated_in("m-3", &third, &ledger, None);
        assert_eq!(alone.len(), 1, "{alone:?}");
    }

    #[test]
    fn a_mode_graduated_from_a_failure_is_known_to_a_lesson_learned_from_one() {
        // One failure and two lessons: the item is a lesson, learned from a failure of the
        // mode an identity line graduated from a failure already tells.
        let items = items_of(
            "[2026-05-02T10:00:00Z] worker F-7 FAIL: npm install could not download the Cypress \
             binary in the sandbox, which has no network\n\
             [2026-05-03T10:00:00Z] worker F-10 LESSON: npm install could not download the \
             Cypress binary in the sandbox without network; the cached binary is enough\n\
             [2026-05-03T12:00:00Z] worker F-11 LESSON: npm install could not download the \
             Cypress binary in the sandbox, no network; use the cached binary\n",
        );
        assert_eq!(items.len(), 1, "{items:?}");
        assert_eq!(items[0].kind, Kind::Lesson);
        let (alone, _) = graduated_in("m-2", &items, &Ledger::default(), None);
        assert_eq!(alone.len(), 1, "{alone:?}");
        let line = format!(
            "- rosdep update failed inside the sandbox, which has no network; the cache baked \
             into the image is enough {}2026-04-24 from mission m-1: {FAILURE_THEN_LESSON} \
             reported by 2 distinct workers: F-2, F-9; c:abc -->",
            memory::GRADUATED_COMMENT
        );
        let file = appended(Role::Worker, None, &[line]);
        let (again, _) = graduated_in("m-2", &items, &Ledger::default(), Some(&file));
        assert_eq!(again, []);
    }

    #[test]
    fn one_features_failure_repeating_itself_is_no_missions_sighting() {
        let own = items_of(
            "[2026-04-24T10:00:00Z] worker F-4 FAIL: my report test failed near midnight: it \
             read the real clock with Date.now()\n\
             [2026-04-24T11:00:00Z] worker F-4 FAIL: my report test failed again near midnight: \
             the real clock, Date.now(), moved between two readings\n",
        );
        assert_eq!(own.len(), 1, "{own:?}");
        let two = items_of(
            "[2026-04-24T10:00:00Z] worker F-4 FAIL: my report test failed near midnight: it \
             read the real clock with Date.now()\n\
             [2026-04-24T11:00:00Z] worker F-6 FAIL: the export test failed near midnight too: \
             the real clock, Date.now(), moved between two readings\n",
        );
        let other = items_of(
            "[2026-05-02T10:00:00Z] worker F-3 FAIL: test_hourly_buckets failed at midnight: it \
             read today's date from the real clock\n",
        );
        let (_, ledger) = graduated_in("m-1", &two, &Ledger::default(), None);
        let (done, _) = graduated_in("m-2", &other, &ledger, None);
        assert_eq!(done.len(), 1, "{done:?}");
        let (_, ledger) = graduated_in("m-1", &own, &Ledger::default(), None);
        let (done, _) = graduated_in("m-2", &other, &ledger, None);
        assert_eq!(done, []);
    }

    #[test]
    fn a_line_that_names_other_code_is_other_knowledge() {
        let convention = |task: &str, day: u32| {
            items_of(&format!(
                "[2026-04-{day}T10:00:00Z] worker F-1 LESSON: ran gradle {task} before the commit\n\
                 [2026-04-{day}T11:00:00Z] worker F-2 LESSON: ran gradle {task} before committing\n\
                 [2026-04-{day}T12:00:00Z] worker F-3 LESSON: gradle {task} ran before the commit\n"
            ))
        };
        let (done, ledger) = graduated_in(
            "m-1",
            &convention("ktlintFormat", 24),
            &Ledger::default(),
            None,
        );
        assert_eq!(done.len(), 1, "{done:?}");
        let file = appended(Role::Worker, None, &[done[0].line.clone()]);
        // The same lesson of another mission is known; another linter's is not.
        let (again, _) = graduated_in("m-2", &convention("ktlintFormat", 28), &ledger, Some(&file));
        assert_eq!(again, []);
        let (other, _) = graduated_in("m-2", &convention("codenarcMain", 28), &ledger, Some(&file));
        assert_eq!(other.len(), 1, "{other:?}");
    }

    #[test]
    fn a_line_graduated_from_an_item_of_a_mode_knows_the_mode() {
        let (first, second) = servers_in_the_foreground();
        let (_, ledger) = graduated_in("m-1", &first, &Ledger::default(), None);
        // The first mission's item graduated in words that tell no mode.
        let line = format!(
            "- try a transfer against anvil started with &, and kill it when done {}2026-04-24 \
             from mission m-1: TRICK reported by 2 distinct workers: F-4, F-6; c:{} -->",
            memory::GRADUATED_COMMENT,
            first[0].id
        );
        let file = appended(Role::Worker, None, &[line]);
        let (again, _) = graduated_in("m-2", &second, &ledger, Some(&file));
        assert_eq!(again, []);
        let (alone, _) = graduated_in("m-2", &second, &ledger, None);
        assert_eq!(alone.len(), 1, "{alone:?}");
    }

    #[test]
    fn failures_of_two_modes_are_two_whatever_effect_they_share() {
        let first = items_of(
            "[2026-04-24T10:00:00Z] worker F-3 FAIL: bin/rails server to try the page by hand \
             and the iteration hung until the timeout\n",
        );
        let second = items_of(
            "[2026-05-02T10:00:00Z] worker F-7 FAIL: git merge opened the editor for the merge \
             message and the iteration hung until the timeout\n",
        );
        let (_, ledger) = graduated_in("m-1", &first, &Ledger::default(), None);
        assert!(hygiene::phrases(&first[0].text)
            .intersection(&hygiene::phrases(&second[0].text))
            .any(|phrase| phrase == "the iteration hung"));
        let (done, _) = graduated_in("m-2", &second, &ledger, None);
        assert_eq!(done, []);
    }

    #[test]
    fn a_failure_mode_in_each_missions_tools_graduates_in_the_modes_words() {
        let first = items_of(
            "[2026-04-24T10:00:00Z] worker F-3 FAIL: the invoice spec built the due date from \
             Date.today() and failed after midnight UTC\n",
        );
        let second = items_of(
            "[2026-05-02T10:00:00Z] worker F-7 FAIL: the rate spec read getCurrentTime and failed \
             when a run crossed a minute boundary\n",
        );
        let (_, ledger) = graduated_in("m-1", &first, &Ledger::default(), None);
        let (done, ledger) = graduated_in("m-2", &second, &ledger, None);
        assert_eq!(done.len(), 1, "{done:?}");
        let lesson = modes::MODES
            .iter()
            .find(|m| m.phrase == "<real clock>")
            .unwrap()
            .lesson;
        assert!(
            done[0].line.starts_with(&format!("- {lesson} <!--")),
            "{}",
            done[0].line
        );
        // The agent's general wording, when it gave one, is the item's own.
        let (_, first_only) = graduated_in("m-1", &first, &Ledger::default(), None);
        let mut told = second.clone();
        let general = "specs that read the clock fail at some hours; give them a fixed time";
        told[0].general = Some(general.to_string());
        let (by_agent, _) = graduated_in("m-2", &told, &first_only, None);
        let line = &by_agent[0].line;
        assert!(line.starts_with(&format!("- {general} <!--")), "{line}");
        // A third mission's failure of the mode is the line's knowledge, in any words.
        let third = items_of(
            "[2026-06-02T10:00:00Z] worker F-1 FAIL: the report's default name came from \
             Dates.today() and the golden test failed the next day\n",
        );
        let file = appended(Role::Worker, None, &[done[0].line.clone()]);
        let (again, _) = graduated_in("m-3", &third, &ledger, Some(&file));
        assert_eq!(again, []);
    }

    #[test]
    fn a_failure_mode_graduates_in_its_words_and_once() {
        let fail = |when: &str, text: &str| {
            items_of(&format!(
                "[2026-{when}T10:00:00Z] worker F-3 FAIL: {text}\n"
            ))
        };
        let lesson = modes::MODES
            .iter()
            .find(|m| m.phrase == "<no network>")
            .unwrap()
            .lesson;
        let (_, ledger) = graduated_in(
            "m-1",
            &fail(
                "04-24",
                "qlot install could not reach the dist server and failed",
            ),
            &Ledger::default(),
            None,
        );
        // The second mission's wording names nothing of it, but tells its own tool's case.
        let second = fail(
            "05-02",
            "the package install needed the network and failed offline",
        );
        let (done, _) = graduated_in("m-2", &second, &ledger, None);
        assert_eq!(done.len(), 1, "{done:?}");
        assert!(
            done[0].line.starts_with(&format!("- {lesson} <!--")),
            "{}",
            done[0].line
        );
        // A line one mission graduated from a failure and its lesson knows the mode: two other
        // missions' failures of it, which the line does not name, are its knowledge.
        let within = items_of(
            "[2026-04-24T10:00:00Z] worker F-3 FAIL: gleam add could not reach the package \
             server, no network in the sandbox; vendor the packages first\n\
             [2026-04-24T12:00:00Z] worker F-7 LESSON: gleam add fails with no network in the \
             sandbox: vendor the packages first\n",
        );
        let (done, _) = graduated_in("m-1", &within, &Ledger::default(), None);
        assert_eq!(done.len(), 1, "{done:?}");
        let file = appended(Role::Worker, None, &[done[0].line.clone()]);
        let (_, others) = graduated_in(
            "m-3",
            &fail(
                "06-02",
                "ocicl install could not reach the registry and failed",
            ),
            &Ledger::default(),
            None,
        );
        let fourth = fail(
            "07-02",
            "pack_install needed the network, which the sandbox lacks",
        );
        let (again, _) = graduated_in("m-4", &fourth, &others, Some(&file));
        assert_eq!(again, []);
        let (alone, _) = graduated_in("m-4", &fourth, &others, None);
        assert_eq!(alone.len(), 1, "{alone:?}");
    }

    #[test]
    fn a_command_that_needed_the_network_recurs_in_any_tools_words() {
        let first = items_of(
            "[2026-04-24T10:00:00Z] worker F-3 FAIL: go mod download failed: lookup \
             proxy.golang.org: no such host; there is no network, go build -mod=vendor works\n",
        );
        let second = items_of(
            "[2026-05-02T10:00:00Z] worker F-7 FAIL: poetry install got nowhere in the sandbox, \
             which is offline; pip install --no-index from the wheel cache worked\n",
        );
        let (_, ledger) = graduated_in("m-1", &first, &Ledger::default(), None);
        let (done, _) = graduated_in("m-2", &second, &ledger, None);
        assert_eq!(done.len(), 1, "{done:?}");
        assert_eq!(done[0].rule, Rule::Failure);
    }

    #[test]
    fn a_failure_like_one_item_of_a_line_uniting_missions_is_that_line() {
        let first = items_of(
            "[2026-04-24T10:00:00Z] worker F-1 FAIL: the dev server of my previous iteration \
             kept the port: address already in use; stop what you start\n",
        );
        let second = items_of(
            "[2026-05-02T10:00:00Z] worker F-2 FAIL: the mock server an earlier iteration \
             started was still running: address already in use; kill it by its pid\n",
        );
        // Like the second mission's item only (an earlier iteration, still running).
        let third = items_of(
            "[2026-06-02T10:00:00Z] worker F-4 FAIL: openocd from an earlier iteration was still \
             running and held the probe over usb; flashing failed at once\n",
        );
        third_is_the_lines_knowledge(&first, &second, &third);
    }

    #[test]
    fn appending_never_glues_or_rewrites() {
        assert_eq!(
            appended(Role::Worker, Some("# mine\n- keep"), &["- new".into()]),
            "# mine\n- keep\n- new\n"
        );
        assert_eq!(
            appended(Role::Planner, None, &["- a".into()]),
            "# Identity: planner\n\n- a\n"
        );
    }
}
