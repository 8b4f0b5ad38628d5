//! Items: the entries of the log that say the same thing, grouped. An item has a stable id (that
//! of its earliest entry), counters, and its evidence (every entry it stands for).
//!
//! Lessons and things to avoid (TRICK, LESSON, AVOID, FAIL) are grouped together, whatever their
//! tag: "use `vitest run`" and "plain `vitest` never exits" are one piece of knowledge. Two
//! entries are alike when the [weighted similarity](super::similarity) of their words reaches
//! the threshold, each word weighing by how rare it is among the entries (a tool, a flag, an
//! error text weigh more than `test` or `fix`); the grouping is transitive (two entries each like
//! a third are one item), so it does not depend on the order of the entries, but a group that
//! only a chain of alike entries links is parted where its parts are not alike on the whole
//! ([`cohesive`]: their mean similarity under [`COHESION`] of the threshold). Two entries that
//! alone name a flag or an identifier (`-race`, `have_css`) need less: [`NAME_SHARE`] of it;
//! two that alone name a value of the mission (a path, an address, an e-mail, or a part of one:
//! [`value_parts`]) less still: [`VALUE_SHARE`]; two that tell one
//! [practice](super::practices) (the tests at hand, formatting before committing) and name a
//! tool in common, [`PRACTICE_SHARE`]. Failures that
//! tell one [failure mode](super::modes) are one item. An item's section is that of its most
//! frequent tag. Decisions are grouped only when their words are the same: a decision worded
//! differently on the same subject is a newer decision, which [supersedes](super::supersede)
//! the older one.
//!
//! An item's text is its most frequent wording; a feature id, a path, a number… in it that its
//! entries do not all share is replaced by a placeholder (`<feature>`, `<path>`, `<n>`): entries
//! that differ only in such tokens are one item, but not in one of their wordings.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use crate::base::time::Timestamp;
use crate::spec::features::FeatureId;
use crate::spec::role::Role;
use crate::state::memory::Tag;

use super::join::{self, Vocabulary};
use super::log::Line;
use super::modes;
use super::practices;
use super::similarity::{
    analyse, generalise, identifiers_of, read_words, similarity, Context, Specific, MAX_WEIGHT,
};
use super::supersede;
use super::{Background, Cancelled};

/// The section an item belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// TRICK and LESSON: what works.
    Lesson,
    /// DECISION: what was decided.
    Decision,
    /// AVOID and FAIL: what does not work.
    Avoid,
}

impl Kind {
    /// The kind of an entry's tag; outcome lines (`-`) are not memory items.
    pub fn of(tag: Tag) -> Option<Kind> {
        match tag {
            Tag::Trick | Tag::Lesson => Some(Kind::Lesson),
            Tag::Decision => Some(Kind::Decision),
            Tag::Avoid | Tag::Fail => Some(Kind::Avoid),
            Tag::Outcome => None,
        }
    }

    /// The failure mode an entry of this kind tells in `words`: a failure's (AVOID, FAIL), or a
    /// lesson's that says what went wrong ([`modes::told_by_lesson`]); a decision tells none.
    pub fn mode_told(self, words: &modes::Words<'_>) -> Option<&'static modes::Mode> {
        match self {
            Kind::Avoid => modes::told_in(words),
            Kind::Lesson => modes::told_by_lesson(words),
            Kind::Decision => None,
        }
    }
}

/// One raw entry an item stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evidence {
    /// The entry's id (a hash of its raw line).
    pub id: String,
    /// When it was appended.
    pub time: Timestamp,
    /// Who wrote it.
    pub role: Role,
    /// Its feature.
    pub feature: Option<FeatureId>,
    /// Its tag.
    pub tag: Tag,
    /// Its text.
    pub text: String,
}

impl Evidence {
    /// Whether it tells what did not work (AVOID, FAIL).
    pub fn failed(&self) -> bool {
        Kind::of(self.tag) == Some(Kind::Avoid)
    }

    /// Who reported it: a role on a feature. The worker on F-001 and the worker on F-004 are two
    /// workers; the iterations on one feature are one worker (each reads its predecessor's
    /// notes, so a repeat there is not an independent report).
    pub fn worker(&self) -> String {
        worker(self.role, self.feature.as_ref())
    }
}

/// The worker `role` on `feature` (see [`Evidence::worker`]).
fn worker(role: Role, feature: Option<&FeatureId>) -> String {
    match (role, feature) {
        (Role::Worker, Some(feature)) => feature.to_string(),
        (role, Some(feature)) => format!("{role} {feature}"),
        (role, None) => role.to_string(),
    }
}

/// A group of entries that say the same thing.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    /// Stable id: the id of its earliest entry.
    pub id: String,
    /// Its section.
    pub kind: Kind,
    /// The most frequent tag of its entries.
    pub tag: Tag,
    /// What it says: the most frequent wording (for a decision, the latest), with what of one
    /// feature or run its entries do not all share in placeholders.
    pub text: String,
    /// The normalised words of that wording.
    pub words: Vec<String>,
    /// Every entry it stands for, oldest first.
    pub evidence: Vec<Evidence>,
    /// Times seen: distinct invocations that reported it (a role on a feature at one time).
    pub seen: usize,
    /// Distinct workers that reported it (see [`Evidence::worker`]), sorted.
    pub workers: Vec<String>,
    /// Distinct features it was reported on, sorted.
    pub features: Vec<String>,
    /// The role that reported it most (its identity file, should it graduate).
    pub role: Role,
    /// Its earliest entry's time.
    pub first_seen: Timestamp,
    /// Its latest entry's time.
    pub last_seen: Timestamp,
    /// For a decision, the id of the newer decision on the same subject that replaces it.
    pub superseded_by: Option<String>,
    /// The general wording the curator's agent gave it, if it did (see
    /// [`judgments::apply`](super::judgments::apply)): the ledger keeps it, and other missions'
    /// items are matched by it too.
    pub general: Option<String>,
}

impl Item {
    /// The ids of every entry of the item: a marker naming any of them names this item, even
    /// after the item absorbed the one the marker was written for.
    pub fn entry_ids(&self) -> impl Iterator<Item = &str> {
        self.evidence.iter().map(|e| e.id.as_str())
    }

    /// Whether a marker naming any id of `ids` names this item.
    pub fn named_by(&self, ids: &BTreeSet<String>) -> bool {
        self.entry_ids().any(|id| ids.contains(id))
    }
}

/// Entries of one kind with the same normalised words: one node of the grouping.
type NodeKey = (Kind, Vec<String>);
/// A node and its entries.
type Node = (NodeKey, Vec<Evidence>);

/// Groups the entries of `lines` (read in `context`) into items, sorted by id. `threshold`: the
/// weighted similarity at which two entries say the same thing; `supersede`: the similarity at
/// which a newer decision is on the same subject as an older one (see [`supersede`]). `cancel`
/// is asked all along; when it says so, the grouping stops with [`Cancelled`].
pub fn group(
    lines: &[&Line],
    threshold: f64,
    supersede: f64,
    context: &Context,
    cancel: &dyn Fn() -> bool,
) -> Result<Vec<Item>, Cancelled> {
    let mut nodes = Background::new(nodes(lines, context, cancel)?);
    // Each node's group, by one node of it. Decisions are alike only when their words are the
    // same (one node already); every other kind is one join, whatever the tag.
    let mut group_of: Vec<usize> = (0..nodes.len()).collect();
    let members: Vec<usize> = (0..nodes.len())
        .filter(|&node| nodes[node].0 .0 != Kind::Decision)
        .collect();
    let ids = weighted(members.iter().map(|&node| &nodes[node].0 .1), cancel)?;
    // Single linkage chains: the parts of a group only a chain of alike entries links are
    // parted where they are not alike on the whole.
    let joined = join::groups(&ids, MAX_WEIGHT, threshold, cancel)?;
    let joined = cohesive(&joined, &ids, threshold * COHESION);
    for (member, representative) in joined.into_iter().enumerate() {
        group_of[members[member]] = members[representative];
    }
    // Two entries that alone name a flag or an identifier are one item at a lower similarity.
    let mut sets = join::DisjointSets::new(nodes.len());
    for &member in &members {
        sets.join(member, group_of[member]);
    }
    let named: Vec<&Node> = members.iter().map(|&node| &nodes[node]).collect();
    for ((a, b), share) in sharing_a_name(&named, context) {
        if similarity(&ids[a], &ids[b]) >= threshold * share {
            sets.join(members[a], members[b]);
        }
    }
    // Failures of one mission that tell one failure mode are one item ("docker compose up
    // stayed attached", "the celery worker in the foreground never gave the shell back"), and
    // those of two modes are two, however alike their words.
    let told = told_by(&named);
    join_by_mode(&mut sets, &members, &told.failure);
    // A lesson about a failure mode ("the image could not install plugins inside the sandbox (no
    // network)") is one item with the mode's failures and lessons alike at a lower similarity:
    // the mode's words are few of each telling's.
    let mode_of: Vec<Option<&str>> = (told.failure.iter().zip(&told.lesson))
        .map(|(failure, lesson)| failure.or(*lesson))
        .collect();
    join_alike_by_key(
        &mut sets,
        (&members, &mode_of),
        (&ids, threshold * LESSON_OF_MODE_SHARE),
        |a, b| told.lesson[a].is_some() || told.lesson[b].is_some(),
    );
    // Entries that tell one practice ("rebar3 ct --suite reruns one suite", "a bare rebar3 ct
    // runs every suite") and name a tool in common are one item at a lower similarity: the
    // practice's words are the ones their tellings share least.
    let tools: Vec<BTreeSet<String>> = (named.iter().zip(&told.practice))
        .map(|(((_, words), _), practice)| match practice {
            Some(_) => practices::tools(words),
            None => BTreeSet::new(),
        })
        .collect();
    join_alike_by_key(
        &mut sets,
        (&members, &told.practice),
        (&ids, threshold * PRACTICE_SHARE),
        |a, b| !tools[a].is_disjoint(&tools[b]),
    );
    for &member in &members {
        group_of[member] = sets.root(member);
    }
    apart_by_mode(&mut group_of, &members, &told.failure, &ids);
    let mut groups: BTreeMap<usize, (bool, Vec<Evidence>)> = BTreeMap::new();
    for (index, ((kind, _), evidence)) in nodes.iter_mut().enumerate() {
        groups
            .entry(group_of[index])
            .or_insert_with(|| (*kind == Kind::Decision, Vec::new()))
            .1
            .append(evidence);
    }
    drop(nodes);
    let mut groups = Background::new(groups.into_values().collect::<Vec<_>>());
    let mut items = Background::new(Vec::with_capacity(groups.len()));
    for (decision, evidence) in groups.iter_mut() {
        if cancel() {
            return Err(Cancelled);
        }
        items.push(item(*decision, std::mem::take(evidence), context));
    }
    items.sort_by(|a, b| a.id.cmp(&b.id));
    supersede::mark(&mut items, supersede, context, cancel)?;
    Ok(items.into_inner())
}

/// The share of the similarity threshold that the mean similarity of two parts of a group must
/// reach for them to stay one item (see [`cohesive`]).
const COHESION: f64 = 0.5;
/// The most nodes of one group that [`cohesive`] reads whole (a larger group is one lesson said
/// many ways, and stays as it is).
const COHESIVE_MOST: usize = 64;

/// `representative` (each set's group, by one set of it) with each group of three sets or more
/// (up to [`COHESIVE_MOST`]) regrouped by average linkage: from single sets, the two parts of
/// the greatest mean similarity (`ids`: the sets' weighted words) become one while that mean
/// reaches `average`. Two entries each like a third are one item only when the three are alike
/// on the whole: "rebar3 ct --suite runs one suite", "a bare rebar3 ct runs every suite", but
/// not a third that shares only `rebar3` with one of them. Deterministic: ties go to the first
/// parts, in the sets' order.
fn cohesive(representative: &[usize], ids: &[Vec<u32>], average: f64) -> Vec<usize> {
    let mut groups: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (set, &group) in representative.iter().enumerate() {
        groups.entry(group).or_default().push(set);
    }
    let mut regrouped = representative.to_vec();
    for sets in groups
        .values()
        .filter(|s| (3..=COHESIVE_MOST).contains(&s.len()))
    {
        for part in average_linkage(sets, ids, average) {
            let first = *part.iter().min().expect("a part has a set");
            for set in part {
                regrouped[set] = first;
            }
        }
    }
    regrouped
}

/// The parts of `sets` by average linkage at `average` (see [`cohesive`]).
fn average_linkage(sets: &[usize], ids: &[Vec<u32>], average: f64) -> Vec<Vec<usize>> {
    // Each part's summed similarity to each other part: merging two adds their rows.
    let mut sums: Vec<Vec<f64>> = sets
        .iter()
        .map(|&a| sets.iter().map(|&b| similarity(&ids[a], &ids[b])).collect())
        .collect();
    let mut parts: Vec<Option<Vec<usize>>> = sets.iter().map(|&set| Some(vec![set])).collect();
    loop {
        let mut best: Option<(f64, usize, usize)> = None;
        for x in 0..parts.len() {
            let Some(one) = &parts[x] else { continue };
            for y in x + 1..parts.len() {
                let Some(two) = &parts[y] else { continue };
                let mean = sums[x][y] / (one.len() * two.len()) as f64;
                if best.is_none_or(|(most, ..)| mean > most) {
                    best = Some((mean, x, y));
                }
            }
        }
        let Some((_, x, y)) = best.filter(|(mean, ..)| *mean >= average) else {
            break;
        };
        let taken = parts[y].take().expect("a part not merged yet");
        parts[x]
            .as_mut()
            .expect("a part not merged yet")
            .extend(taken);
        let merged = std::mem::take(&mut sums[y]);
        for (z, added) in merged.into_iter().enumerate() {
            sums[x][z] += added;
            let sum = sums[x][z];
            if let Some(other) = sums[z].get_mut(x) {
                *other = sum;
            }
        }
    }
    parts.into_iter().flatten().collect()
}

/// What each node of a grouping tells, by number, by its phrase.
struct Told {
    /// The [failure mode](modes) a failure (AVOID, FAIL) tells.
    failure: Vec<Option<&'static str>>,
    /// The failure mode a lesson (TRICK, LESSON) tells ([`modes::told_by_lesson`]).
    lesson: Vec<Option<&'static str>>,
    /// The [practice](practices) it tells.
    practice: Vec<Option<&'static str>>,
}

/// What each of `nodes` tells: each text's words are read once for all.
fn told_by(nodes: &[&Node]) -> Told {
    let mut told = Told {
        failure: Vec::with_capacity(nodes.len()),
        lesson: Vec::with_capacity(nodes.len()),
        practice: Vec::with_capacity(nodes.len()),
    };
    for ((kind, _), evidence) in nodes {
        let words = evidence.first().map(|first| modes::Words::of(&first.text));
        let mode = words
            .as_ref()
            .and_then(|words| kind.mode_told(words))
            .map(|mode| mode.phrase);
        let (failure, lesson) = match kind {
            Kind::Avoid => (mode, None),
            _ => (None, mode),
        };
        told.failure.push(failure);
        told.lesson.push(lesson);
        let practice = words.as_ref().and_then(practices::told_in);
        told.practice.push(practice.map(|p| p.phrase));
    }
    told
}

/// Joins the nodes (`members`, by number) whose failures tell one mode (`mode_of`).
fn join_by_mode(sets: &mut join::DisjointSets, members: &[usize], mode_of: &[Option<&str>]) {
    let mut first_of: HashMap<&str, usize> = HashMap::new();
    for (number, mode) in mode_of.iter().enumerate() {
        if let Some(mode) = mode {
            let first = *first_of.entry(mode).or_insert(number);
            sets.join(members[first], members[number]);
        }
    }
}

/// The share of the similarity threshold at which two entries that tell one
/// [practice](practices) say the same thing.
const PRACTICE_SHARE: f64 = 0.5;
/// The share of the similarity threshold at which a lesson that tells a failure mode says the
/// same as another telling of the mode.
const LESSON_OF_MODE_SHARE: f64 = 0.5;
/// How many nodes of each key (a practice, a failure mode) a node of the key is compared with
/// (the first): a log of thousands of tellings costs no more than its nodes.
const COMPARED_PER_KEY: usize = 64;

/// Joins the nodes (`members`, by number) of one key (`key_of`: the practice or the failure
/// mode each tells) that are alike at `least` (`ids`: their weighted words) where `joinable`
/// allows the pair (by number), each compared with its key's first [`COMPARED_PER_KEY`] nodes.
/// A node only ever joins others: an item that graduated is never parted by a later entry of
/// its key.
fn join_alike_by_key(
    sets: &mut join::DisjointSets,
    (members, key_of): (&[usize], &[Option<&'static str>]),
    (ids, least): (&[Vec<u32>], f64),
    joinable: impl Fn(usize, usize) -> bool,
) {
    let mut compared: HashMap<&str, Vec<usize>> = HashMap::new();
    for (number, key) in key_of.iter().enumerate() {
        let Some(key) = key else {
            continue;
        };
        let earlier = compared.entry(key).or_default();
        for &other in earlier.iter() {
            if joinable(other, number) && similarity(&ids[other], &ids[number]) >= least {
                sets.join(members[other], members[number]);
            }
        }
        if earlier.len() < COMPARED_PER_KEY {
            earlier.push(number);
        }
    }
}

/// How many failures of each mode a node of a group split by mode is compared with.
const COMPARED_PER_MODE: usize = 8;

/// Splits each group (`group_of`, by member node) whose failures tell two failure modes or
/// more (`mode_of`, by member number): one lesson is not two modes, however alike their words
/// ("anvil in the foreground held the iteration until the timeout", "cast wallet import sat
/// waiting for a key until the timeout"). Each other node of such a group goes with the mode
/// of the failure it is most like (`ids`: their weighted words, by member number).
fn apart_by_mode(
    group_of: &mut [usize],
    members: &[usize],
    mode_of: &[Option<&str>],
    ids: &[Vec<u32>],
) {
    // Only the groups whose failures tell two modes are read whole (most tell one or none).
    let mut modes_in: HashMap<usize, BTreeSet<&str>> = HashMap::new();
    for (number, mode) in mode_of.iter().enumerate() {
        if let Some(mode) = mode {
            modes_in
                .entry(group_of[members[number]])
                .or_default()
                .insert(mode);
        }
    }
    modes_in.retain(|_, modes| modes.len() >= 2);
    if modes_in.is_empty() {
        return;
    }
    let mut by_group: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (number, &member) in members.iter().enumerate() {
        if modes_in.contains_key(&group_of[member]) {
            by_group.entry(group_of[member]).or_default().push(number);
        }
    }
    for (group, numbers) in &by_group {
        let told: Vec<(usize, &str)> = numbers
            .iter()
            .filter_map(|&n| mode_of[n].map(|mode| (n, mode)))
            .collect();
        // Each other node is compared with the first failures of each mode only: a group of
        // thousands is split in time linear in its size.
        let mut compared: Vec<(usize, &str)> = Vec::new();
        for mode in &modes_in[group] {
            let of_mode = told.iter().filter(|(_, m)| m == mode);
            compared.extend(of_mode.take(COMPARED_PER_MODE));
        }
        // Each mode's group is named by its first failure's node.
        let mut first_of: HashMap<&str, usize> = HashMap::new();
        for (number, mode) in &told {
            first_of.entry(mode).or_insert(*number);
        }
        for &number in numbers {
            let mode = match mode_of[number] {
                Some(mode) => mode,
                None => {
                    let likeness = |n: usize| similarity(&ids[number], &ids[n]);
                    let like = compared
                        .iter()
                        .max_by(|a, b| likeness(a.0).total_cmp(&likeness(b.0)));
                    like.expect("two failures of a mode").1
                }
            };
            group_of[members[number]] = members[first_of[mode]];
        }
    }
}

/// The share of the similarity threshold at which two entries that alone name a flag of three
/// letters or more (`-race`, `--all-files`) or an identifier (`have_css`, `@ServiceConnection`)
/// say the same thing: what only they name is what they are about ("go test -race found the
/// data race", "run the tests with -race"). Short flags (`-d`, `-p`) mean something else to
/// every tool.
const NAME_SHARE: f64 = 5.0 / 6.0;

/// The share of the similarity threshold at which two entries that alone name a value of the
/// mission (a path, an address, a port, an e-mail: a [`Specific`]) say the same thing: that
/// value is the fact they are about ("the seed task creates admin@clinic.test with a fixed API
/// key", "log in as admin@clinic.test with the seeded password"), in whatever words around it.
/// Lower than [`NAME_SHARE`]: a tool's flag is named for many reasons, a value of one mission
/// for one.
const VALUE_SHARE: f64 = 0.5;

/// Flags that many tools take alike (`--yes`, `--force`): two entries naming one name no tool in
/// common.
const GENERIC_FLAGS: &[&str] = &[
    "debug", "force", "help", "quiet", "silent", "verbose", "version", "yes",
];

/// The pairs of `nodes` (by number) that are the only two to name a flag of three letters or
/// more (the words of flags begin with a backquote: see `similarity::read`), an identifier, a
/// value of the mission or words of a message they quote (of the text of their first entry,
/// read in `context`: the entries of a node differ at most in what is not a word), with the
/// share of the threshold at which they are alike ([`NAME_SHARE`], or [`VALUE_SHARE`] when
/// they share a value or a message).
fn sharing_a_name(nodes: &[&Node], context: &Context) -> BTreeMap<(usize, usize), f64> {
    let mut holders: HashMap<(String, bool), Vec<usize>> = HashMap::new();
    for (number, ((_, words), evidence)) in nodes.iter().enumerate() {
        let Some(first) = evidence.first() else {
            continue;
        };
        let flags = words
            .iter()
            .filter(|w| {
                let name = w.trim_start_matches(['`', '-']);
                w.starts_with('`') && name.len() >= 3 && !GENERIC_FLAGS.contains(&name)
            })
            .cloned();
        let names = flags
            .chain(identifiers_of(&first.text))
            .map(|n| (n, false))
            .chain(quoted_runs(&first.text).into_iter().map(|n| (n, true)));
        let specifics = if may_name_a_value(&first.text) {
            analyse(&first.text, context).specifics
        } else {
            Vec::new()
        };
        let values = specifics
            .into_iter()
            .filter(|(kind, _)| {
                !matches!(
                    kind,
                    Specific::FeatureId | Specific::RunId | Specific::Project | Specific::Time
                )
            })
            .flat_map(|(kind, token)| value_parts(kind, &token))
            .map(|token| (token, true));
        let names: BTreeSet<(String, bool)> = names.chain(values).collect();
        for name in names {
            holders.entry(name).or_default().push(number);
        }
    }
    let mut pairs: BTreeMap<(usize, usize), f64> = BTreeMap::new();
    for ((_, value), held) in holders {
        if let [a, b] = held[..] {
            let share = if value { VALUE_SHARE } else { NAME_SHARE };
            let kept = pairs.entry((a, b)).or_insert(share);
            *kept = kept.min(share);
        }
    }
    pairs
}

/// The runs of three words in a row inside the double quotes of `text` (a message quoted: "the
/// object has been modified; please apply…"), lowercase, marked as quoted.
fn quoted_runs(text: &str) -> Vec<String> {
    let mut runs = Vec::new();
    for quoted in text.split('"').skip(1).step_by(2) {
        let words: Vec<String> = quoted
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect();
        runs.extend(words.windows(3).map(|run| format!("\"{}", run.join(" "))));
    }
    runs
}

/// The parts of a value that name it too: a host's port ("127.0.0.1:3307" and "-P 3307") and a
/// host of the network ("192.168.1.40:1883" and "-h 192.168.1.40"); a path set to a variable
/// (`VCPKG_DEFAULT_BINARY_CACHE=/srv/cache/tiles`), and the directories of three components or
/// more it is in (`tests/testthat/_snaps/plot/bars.svg` is in `tests/testthat/_snaps`): the
/// rarity of a part is what makes two entries its only holders.
fn value_parts(kind: Specific, token: &str) -> Vec<String> {
    let mut parts = vec![token.to_string()];
    match kind {
        Specific::HostPort => {
            let (host, rest) = token.rsplit_once(':').unwrap_or(("", token));
            let port: String = rest.chars().take_while(char::is_ascii_digit).collect();
            if port.len() >= 3 {
                parts.push(port);
            }
            // A host of the network, not the machine's own: the address of one service.
            if host.contains('.') && !["127.0.0.1", "0.0.0.0"].contains(&host) {
                parts.push(host.to_string());
            }
        }
        Specific::Path => {
            let path = token.split_once('=').map_or(token, |(_, path)| path);
            if path != token {
                parts.push(path.to_string());
            }
            let components: Vec<&str> = path.split('/').collect();
            let lead = usize::from(path.starts_with('/'));
            for end in lead + 3..components.len() {
                parts.push(components[..end].join("/"));
            }
        }
        _ => {}
    }
    parts
}

/// Whether `text` may name a value of the mission (a [`Specific`] but a feature or run id, the
/// project's name or a time): a digit, a `/`, an `@` or a `:`, or a dot inside a word. Most
/// entries name none, and reading what they name costs a pass over a large log a tenth more.
fn may_name_a_value(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.iter().enumerate().any(|(at, &byte)| {
        byte.is_ascii_digit()
            || matches!(byte, b'/' | b'@' | b':')
            || (byte == b'.' && bytes.get(at + 1).is_some_and(u8::is_ascii_alphanumeric))
    })
}

/// Word sets as numbers of their [`Vocabulary`], each word repeated by its weight, for the join.
fn weighted<'w>(
    sets: impl Iterator<Item = &'w Vec<String>> + Clone,
    cancel: &dyn Fn() -> bool,
) -> Result<Vec<Vec<u32>>, Cancelled> {
    let vocabulary = Vocabulary::new(sets.clone().map(Vec::as_slice));
    let mut numbered = Vec::new();
    for set in sets {
        if cancel() {
            return Err(Cancelled);
        }
        numbered.push(vocabulary.weighted_ids(set));
    }
    Ok(numbered)
}

/// The entries of `lines` by kind and words: the nodes of the grouping, in the order of their
/// keys, each with its entries.
fn nodes(
    lines: &[&Line],
    context: &Context,
    cancel: &dyn Fn() -> bool,
) -> Result<Vec<Node>, Cancelled> {
    let mut nodes: Background<HashMap<NodeKey, Vec<Evidence>>> = Background::new(HashMap::new());
    for line in lines {
        if cancel() {
            return Err(Cancelled);
        }
        let Ok(entry) = &line.entry else { continue };
        let Some(kind) = Kind::of(entry.tag) else {
            continue;
        };
        nodes
            .entry((kind, read_words(&entry.text, context).words))
            .or_default()
            .push(Evidence {
                id: line.id(),
                time: entry.time,
                role: entry.role,
                feature: entry.feature.clone(),
                tag: entry.tag,
                text: entry.text.clone(),
            });
    }
    let mut nodes: Vec<Node> = nodes.into_inner().into_iter().collect();
    nodes.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    Ok(nodes)
}

/// An item from its entries (`decision`: whether they are a decision's).
pub(super) fn item(decision: bool, mut evidence: Vec<Evidence>, context: &Context) -> Item {
    evidence.sort_by(|a, b| (a.time, &a.id).cmp(&(b.time, &b.id)));
    let first = &evidence[0];
    let last = &evidence[evidence.len() - 1];
    let wording = if decision {
        last.text.clone()
    } else {
        central_wording(&evidence, context)
    };
    let tag = most_frequent(evidence.iter().map(|e| e.tag), |tag| tag as usize);
    let kind = if decision {
        Kind::Decision
    } else {
        Kind::of(tag).unwrap_or(Kind::Lesson)
    };
    let role = most_frequent(evidence.iter().map(|e| e.role), |role| {
        Role::ALL.iter().position(|r| *r == role).unwrap_or(0)
    });
    let invocations: BTreeSet<(&str, Option<&str>, Timestamp)> = evidence
        .iter()
        .map(|e| {
            (
                e.role.as_str(),
                e.feature.as_ref().map(FeatureId::as_str),
                e.time,
            )
        })
        .collect();
    // A name is made for each distinct reporter, not for each of the (maybe many) entries.
    let reporters: HashSet<(Role, Option<&FeatureId>)> = evidence
        .iter()
        .map(|e| (e.role, e.feature.as_ref()))
        .collect();
    let workers: BTreeSet<String> = reporters
        .into_iter()
        .map(|(role, feature)| worker(role, feature))
        .collect();
    let features: BTreeSet<&str> = evidence
        .iter()
        .filter_map(|e| e.feature.as_ref().map(FeatureId::as_str))
        .collect();
    let read = read_words(&wording, context);
    let text = generalise(
        (&wording, &read.specifics),
        evidence.iter().map(|e| e.text.as_str()),
        context,
    );
    Item {
        id: first.id.clone(),
        kind,
        tag,
        words: read.words,
        text,
        seen: invocations.len(),
        workers: workers.into_iter().collect(),
        features: features.into_iter().map(str::to_string).collect(),
        role,
        first_seen: first.time,
        last_seen: last.time,
        superseded_by: None,
        general: None,
        evidence,
    }
}

/// How many of an item's most frequent wordings the central one is chosen from.
const CENTRAL_AMONG: usize = 16;

/// The wording that says best what all the entries say: among the [`CENTRAL_AMONG`] said most
/// often, the one most like them all (each counted as often as it was said, itself included);
/// among equals, the one said most often, then the earliest. Entries grouped through a third
/// one are shown in the wording of the many, not of the one.
fn central_wording(evidence: &[Evidence], context: &Context) -> String {
    let mut counts: BTreeMap<&str, (usize, Timestamp)> = BTreeMap::new();
    for e in evidence {
        let slot = counts.entry(&e.text).or_insert((0, e.time));
        slot.0 += 1;
    }
    let mut ranked: Vec<(&str, usize, Timestamp)> = counts
        .into_iter()
        .map(|(text, (n, t))| (text, n, t))
        .collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.2.cmp(&b.2)).then(a.0.cmp(b.0)));
    ranked.truncate(CENTRAL_AMONG);
    if ranked.len() == 1 {
        return ranked[0].0.to_string();
    }
    let words: Vec<Vec<String>> = ranked
        .iter()
        .map(|(text, ..)| read_words(text, context).words)
        .collect();
    let mut best = (f64::MIN, 0);
    for (index, own) in words.iter().enumerate() {
        let score: f64 = words
            .iter()
            .zip(&ranked)
            .map(|(other, (_, n, _))| *n as f64 * similarity(own, other))
            .sum();
        // Ranked said most often, then earliest: the first of equals is kept.
        if score > best.0 + 1e-9 {
            best = (score, index);
        }
    }
    ranked[best.1].0.to_string()
}

/// The value seen most often; among equals, the one with the lowest `rank`.
fn most_frequent<T: Copy + PartialEq>(
    values: impl Iterator<Item = T>,
    rank: impl Fn(T) -> usize,
) -> T {
    let mut counts: Vec<(T, usize)> = Vec::new();
    for value in values {
        match counts.iter_mut().find(|(v, _)| *v == value) {
            Some((_, n)) => *n += 1,
            None => counts.push((value, 1)),
        }
    }
    counts
        .into_iter()
        .max_by(|(a, a_n), (b, b_n)| a_n.cmp(b_n).then(rank(*b).cmp(&rank(*a))))
        .map(|(value, _)| value)
        .expect("an item has at least one entry")
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::super::log;
    use super::*;

    /// The grouping by comparing every node with every later node that shares a word with it,
    /// by the weighted Dice coefficient summed word by word, and every decision with every later
    /// one: the reference that [`group`] must match item for item.
    fn naive_group(lines: &[&Line], threshold: f64, supersede: f64) -> Vec<Item> {
        let context = Context::default();
        let nodes = nodes(lines, &context, &|| false).unwrap();
        let mut sets = join::DisjointSets::new(nodes.len());
        let pooled: Vec<usize> = (0..nodes.len())
            .filter(|&n| nodes[n].0 .0 != Kind::Decision)
            .collect();
        let vocabulary = Vocabulary::new(pooled.iter().map(|&n| nodes[n].0 .1.as_slice()));
        let weighed =
            |words: &[String]| -> u32 { words.iter().map(|w| vocabulary.weight(w)).sum() };
        let named: Vec<&Node> = pooled.iter().map(|&n| &nodes[n]).collect();
        let flagged = sharing_a_name(&named, &context);
        // The join alone (then parted where it only chains), and the pairs sharing a name.
        let mut joined = join::DisjointSets::new(pooled.len());
        for (position, &a) in pooled.iter().enumerate() {
            for (other, &b) in pooled.iter().enumerate().skip(position + 1) {
                let (x, y) = (&nodes[a].0 .1, &nodes[b].0 .1);
                let common: Vec<String> = x.iter().filter(|w| y.contains(w)).cloned().collect();
                if common.is_empty() {
                    continue;
                }
                let score = 2.0 * f64::from(weighed(&common)) / f64::from(weighed(x) + weighed(y));
                if score >= threshold {
                    joined.join(position, other);
                }
                let share = flagged.get(&(position, other));
                if share.is_some_and(|share| score >= threshold * share) {
                    sets.join(a, b);
                }
            }
        }
        let roots: Vec<usize> = (0..pooled.len()).map(|p| joined.root(p)).collect();
        let ids = weighted(pooled.iter().map(|&n| &nodes[n].0 .1), &|| false).unwrap();
        for (position, representative) in cohesive(&roots, &ids, threshold * COHESION)
            .into_iter()
            .enumerate()
        {
            sets.join(pooled[position], pooled[representative]);
        }
        let mut groups: BTreeMap<usize, (bool, Vec<Evidence>)> = BTreeMap::new();
        for (index, ((kind, _), evidence)) in nodes.into_iter().enumerate() {
            groups
                .entry(sets.root(index))
                .or_insert_with(|| (kind == Kind::Decision, Vec::new()))
                .1
                .extend(evidence);
        }
        let mut items: Vec<Item> = groups
            .into_values()
            .map(|(decision, evidence)| item(decision, evidence, &context))
            .collect();
        items.sort_by(|a, b| a.id.cmp(&b.id));
        let successors = supersede::naive(&items, supersede, &context);
        for (item, successor) in items
            .iter_mut()
            .filter(|i| i.kind == Kind::Decision)
            .zip(successors)
        {
            item.superseded_by = successor;
        }
        items
    }

    /// A raw.md line over a small vocabulary (so that entries overlap a lot, and some have no
    /// content word at all), at one of a few times (so that times tie).
    fn generated_line() -> impl Strategy<Value = String> {
        // No failure mode nor practice is told in these words: the join is compared here, what
        // the modes and the practices join (and split) is tested apart.
        const WORDS: [&str; 14] = [
            "cargo", "test", "cargo", "test", "build", "schema", "lexer", "token", "shard",
            "queue", "the", "of", "42", "caching",
        ];
        (
            0u32..40,
            0usize..3,
            prop::sample::select(vec!["TRICK", "LESSON", "DECISION", "AVOID", "FAIL", "-"]),
            prop::collection::vec(prop::sample::select(WORDS.to_vec()), 0..9),
        )
            .prop_map(|(minute, feature, tag, words)| {
                format!(
                    "[2026-04-24T10:{minute:02}:00Z] worker F-{feature} {tag}: {}",
                    words.join(" ")
                )
            })
    }

    /// Thresholds: any value, the usual ones, the bounds, and the invalid ones past them.
    fn threshold() -> impl Strategy<Value = f64> {
        prop_oneof![
            0.0..=1.0f64,
            prop::sample::select(vec![
                0.6,
                0.4,
                0.5,
                1.0 / 3.0,
                2.0 / 3.0,
                0.75,
                1.0,
                0.0,
                -0.5,
                1.5,
                f64::NAN
            ]),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        #[test]
        fn the_filtered_join_groups_as_comparing_every_pair(
            raw in prop::collection::vec(generated_line(), 0..80),
            threshold in threshold(),
            supersede in threshold(),
        ) {
            let lines = lines(&raw.join("\n"));
            let lines: Vec<&Line> = lines.iter().collect();
            let fast = group(&lines, threshold, supersede, &Context::default(), &|| false).unwrap();
            prop_assert_eq!(fast, naive_group(&lines, threshold, supersede));
        }
    }

    #[test]
    fn a_group_only_a_chain_links_is_parted_where_it_is_not_alike_on_the_whole() {
        // Three sets alike each other, and a fourth like the third alone: single linkage makes
        // them one group; its mean similarity to the three is a third of that.
        let ids: Vec<Vec<u32>> = vec![
            vec![1, 2, 3, 4],
            vec![1, 2, 3, 5],
            vec![1, 2, 3, 6],
            vec![6, 7, 8, 9, 10, 11],
        ];
        assert!(similarity(&ids[2], &ids[3]) >= 0.2 && similarity(&ids[0], &ids[3]) == 0.0);
        let one_group = [0, 0, 0, 0];
        assert_eq!(cohesive(&one_group, &ids, 0.1), [0, 0, 0, 3]);
        // At a lower mean, the fourth stays; two sets alike are never parted.
        assert_eq!(cohesive(&one_group, &ids, 0.05), [0, 0, 0, 0]);
        assert_eq!(cohesive(&[0, 0], &ids[2..], 0.9), [0, 0]);
    }

    #[test]
    fn two_entries_that_alone_name_a_flag_or_an_identifier_are_one_item() {
        let log = |flag: &str| {
            format!(
                "[2026-04-24T10:00:00Z] worker F-1 TRICK: go test {flag} found the data race in the dispatcher map at once\n\
                 [2026-04-24T11:00:00Z] worker F-2 TRICK: run the tests with {flag}: it caught two goroutines appending to one slice\n"
            )
        };
        let count = |text: &str, threshold: f64| {
            let lines = lines(text);
            let lines: Vec<&Line> = lines.iter().collect();
            group(&lines, threshold, 0.4, &Context::default(), &|| false)
                .unwrap()
                .len()
        };
        assert_eq!(count(&log("-race"), 0.35), 1);
        // Not for a word: it is not a tool's option.
        assert_eq!(count(&log("racecheck"), 0.35), 2);
        // Nor for a short flag, which means something else to every tool, nor for a flag that
        // many tools take alike.
        assert_eq!(count(&log("-r"), 0.35), 2);
        assert_eq!(count(&log("--yes"), 0.35), 2);
        assert_eq!(count(&log("--race-yes"), 0.35), 1);
        // An identifier only two entries name is what they are about too.
        let log = |name: &str| {
            format!(
                "[2026-04-24T10:00:00Z] worker F-1 LESSON: {name} waits until the text shows up; never sleep in a system spec\n\
                 [2026-04-24T11:00:00Z] worker F-2 FAIL: the flaky system spec read the count once after the click; {name} retries\n"
            )
        };
        assert_eq!(count(&log("have_css"), 0.4), 1);
        assert_eq!(count(&log("havecss"), 0.4), 2);
    }

    #[test]
    fn two_entries_that_alone_quote_a_message_are_one_item() {
        let count = |quote: &str| {
            let text = format!(
                "[2026-04-24T10:00:00Z] worker F-1 LESSON: {quote}the object has been modified; \
                 please apply your changes to the latest version{quote} is normal: return the \
                 error and controller-runtime requeues\n\
                 [2026-04-24T11:00:00Z] worker F-2 TRICK: adding the finalizer with a merge Patch \
                 instead of Update avoids {quote}the object has been modified{quote} when the \
                 status changes at the same time\n"
            );
            let lines = lines(&text);
            let lines: Vec<&Line> = lines.iter().collect();
            group(&lines, 0.3, 0.4, &Context::default(), &|| false)
                .unwrap()
                .len()
        };
        assert_eq!(count("\""), 1);
        // The same words unquoted are prose, no message.
        assert_eq!(count(""), 2);
        assert_eq!(
            quoted_runs("it said \"no such host\" and \"boom\""),
            ["\"no such host"]
        );
    }

    #[test]
    fn a_port_a_path_set_to_a_variable_or_a_directory_a_path_is_in_names_the_value_too() {
        let count = |first: &str, second: &str| {
            let text = format!(
                "[2026-04-24T10:00:00Z] worker F-1 LESSON: {first}\n\
                 [2026-04-24T11:00:00Z] worker F-2 TRICK: {second}\n"
            );
            let lines = lines(&text);
            let lines: Vec<&Line> = lines.iter().collect();
            group(&lines, 0.3, 0.4, &Context::default(), &|| false)
                .unwrap()
                .len()
        };
        let port = |port: &str| {
            count(
                "the dev MySQL of this machine listens on 127.0.0.1:3307 (not 3306); \
                 config/database.yml reads it from DB_PORT",
                &format!(
                    "mysql -h 127.0.0.1 -P {port} -u root shop_development to look at the rows; \
                     localhost alone goes to the socket of the other server"
                ),
            )
        };
        assert_eq!(port("3307"), 1);
        assert_eq!(port("3308"), 2);
        let cache = |path: &str| {
            count(
                &format!(
                    "export VCPKG_DEFAULT_BINARY_CACHE={path}; the first install takes 14 minutes"
                ),
                "adding libwebp to vcpkg.json rebuilt everything until VCPKG_DEFAULT_BINARY_CACHE \
                 pointed at /srv/cache/tiles again (a new shell had lost it)",
            )
        };
        assert_eq!(cache("/srv/cache/tiles"), 1);
        assert_eq!(cache("/srv/cache/maps"), 2);
        let snapshots = |dir: &str| {
            count(
                &format!("expect_doppelganger() writes its snapshots under {dir}/ to be committed"),
                "rejected: the new snapshots tests/testthat/_snaps/plot/bars.svg were not committed",
            )
        };
        assert_eq!(snapshots("tests/testthat/_snaps"), 1);
        assert_eq!(snapshots("tests/testthat/_data"), 2);
        let host = |host: &str| {
            count(
                "the test broker is mosquitto on 192.168.1.40:1883 with user sensor",
                &format!("mosquitto_sub -h {host} -t 'probe/#' -v shows the readings as they come"),
            )
        };
        assert_eq!(host("192.168.1.40"), 1);
        assert_eq!(host("192.168.1.41"), 2);
    }

    #[test]
    fn two_entries_that_alone_name_a_value_of_the_mission_are_one_item_at_less() {
        let log = |first: &str, second: &str| {
            format!(
                "[2026-04-24T10:00:00Z] worker F-1 TRICK: the seed task creates the user {first} with a fixed API key for manual curls\n\
                 [2026-04-24T11:00:00Z] worker F-2 LESSON: log in as {second} with the seeded password to get a token for the export\n"
            )
        };
        let count = |text: &str| {
            let lines = lines(text);
            let lines: Vec<&Line> = lines.iter().collect();
            group(&lines, 0.5, 0.4, &Context::default(), &|| false)
                .unwrap()
                .len()
        };
        assert_eq!(count(&log("admin@clinic.test", "admin@clinic.test")), 1);
        assert_eq!(count(&log("admin@clinic.test", "nurse@clinic.test")), 2);
    }

    #[test]
    fn failures_of_one_mode_are_one_item_in_any_words() {
        let items = grouped(
            "[2026-04-24T10:00:00Z] worker F-1 FAIL: docker compose up stayed attached to the logs and sat there until the timeout\n\
             [2026-04-25T10:00:00Z] worker F-7 FAIL: the celery worker started in the foreground never gave the shell back\n\
             [2026-04-26T10:00:00Z] worker F-8 FAIL: the migration failed on a missing column\n",
        );
        let mut sizes: Vec<usize> = items.iter().map(|item| item.evidence.len()).collect();
        sizes.sort_unstable();
        assert_eq!(sizes, [1, 2], "{items:#?}");
    }

    #[test]
    fn a_lesson_that_tells_a_failure_mode_goes_with_its_failures_in_other_words() {
        let texts = openings_at_default(
            "[2026-11-16T12:30:00Z] worker F-4 FAIL: an @Grab in a src/ class made the spec fetch from Maven Central; no network in the sandbox, the spec failed with \"Error grabbing Grapes\"\n\
             [2026-11-17T11:00:00Z] worker F-7 LESSON: the test Jenkins image could not fetch its plugins with jenkins-plugin-cli inside the sandbox (no network); the image is built outside\n\
             [2026-11-17T12:00:00Z] worker F-8 LESSON: the spec of the notify step needs the Slack plugin's class on the test classpath\n\
             [2026-11-18T10:00:00Z] worker F-9 FAIL: npx nx serve ledger-web ran in the foreground before the Cypress run and never returned; the iteration hung\n\
             [2026-11-18T10:00:00Z] worker F-9 TRICK: npx nx e2e ledger-web-e2e starts the dev server itself, waits for it and stops it after the run\n",
        );
        // A lesson in the mode's words that says nothing went wrong is its tool's.
        assert_eq!(
            texts,
            [
                vec!["an @Grab in ", "the test Jen"],
                vec!["npx nx e2e l"],
                vec!["npx nx serve"],
                vec!["the spec of "],
            ]
        );
    }

    #[test]
    fn tellings_of_one_practice_are_one_item_at_a_lower_similarity() {
        let texts = openings_at_default(
            "[2026-04-24T10:00:00Z] worker F-2 TRICK: rebar3 eunit --module=bucket_tests runs one EUnit module in two seconds\n\
             [2026-04-25T10:00:00Z] worker F-3 AVOID: a bare rebar3 ct runs every suite, the release suite too (six minutes)\n\
             [2026-04-26T10:00:00Z] worker F-5 TRICK: bun test tests/unit/cart.test.ts runs that file only\n\
             [2026-04-27T10:00:00Z] worker F-6 LESSON: rebar3 shell starts the release with the settings of config/sys.config\n\
             [2026-04-28T10:00:00Z] worker F-7 LESSON: the test runs need the ETS tables the application starts\n\
             [2026-04-28T11:00:00Z] worker F-8 FAIL: a test of the bucket runs out of tokens when the clock jumps\n\
             [2026-04-28T12:00:00Z] worker F-9 TRICK: the Common Test hooks print the test's name as it runs\n\
             [2026-04-28T13:00:00Z] worker F-9 LESSON: the e2e tests need the dev server running on its port\n",
        );
        // Another runner's telling, and what only shares the tool or the words, stay apart.
        assert_eq!(
            texts,
            [
                vec!["a test of th"],
                vec!["bun test tes"],
                vec!["rebar3 eunit", "a bare rebar"],
                vec!["rebar3 shell"],
                vec!["the Common T"],
                vec!["the e2e test"],
                vec!["the test run"],
            ]
        );
    }

    /// The items of `text` grouped at the curator's default threshold, each as the first
    /// twelve characters of its entries, sorted.
    fn openings_at_default(text: &str) -> Vec<Vec<String>> {
        let lines = lines(text);
        let lines: Vec<&Line> = lines.iter().collect();
        let items = group(&lines, 0.3, 0.4, &Context::default(), &|| false).unwrap();
        let mut texts: Vec<Vec<String>> = items
            .iter()
            .map(|item| {
                item.evidence
                    .iter()
                    .map(|e| e.text[..12].to_string())
                    .collect()
            })
            .collect();
        texts.sort();
        texts
    }

    #[test]
    fn failures_of_two_modes_are_two_items_however_alike() {
        let lines = lines(
            "[2026-04-24T10:00:00Z] worker F-1 FAIL: ran anvil in the foreground to try the transfer with cast, and the iteration waited on it until the timeout\n\
             [2026-04-24T11:00:00Z] worker F-2 FAIL: cast wallet import sat waiting for a key to be typed, and the iteration hung until the timeout\n\
             [2026-04-24T12:00:00Z] worker F-3 LESSON: start anvil in the background to try the transfer with cast, and kill it when done\n",
        );
        let lines: Vec<&Line> = lines.iter().collect();
        let items = group(&lines, 0.35, 0.4, &Context::default(), &|| false).unwrap();
        let texts: Vec<Vec<&str>> = items
            .iter()
            .map(|item| item.evidence.iter().map(|e| &e.text[..12]).collect())
            .collect();
        // The lesson goes with the failure it is most like.
        assert_eq!(
            texts,
            [vec!["ran anvil in", "start anvil "], vec!["cast wallet "]],
            "{items:#?}"
        );
    }

    #[test]
    fn a_cancelled_grouping_stops() {
        let lines = lines("[2026-04-24T10:00:00Z] worker F-1 LESSON: alpha beta gamma\n");
        let lines: Vec<&Line> = lines.iter().collect();
        assert_eq!(
            group(&lines, 0.6, 0.4, &Context::default(), &|| true),
            Err(Cancelled)
        );
    }

    fn lines(text: &str) -> Vec<Line> {
        log::read(text.as_bytes(), &[]).raw
    }

    fn grouped(text: &str) -> Vec<Item> {
        let lines = lines(text);
        group(
            &lines.iter().collect::<Vec<_>>(),
            0.6,
            0.4,
            &Context::default(),
            &|| false,
        )
        .unwrap()
    }

    #[test]
    fn paraphrases_from_two_workers_are_one_item_with_counters() {
        let items = grouped(
            "[2026-04-24T10:00:00Z] worker F-001 TRICK: psql -f drizzle/*.sql applies migrations in filename order\n\
             [2026-04-24T11:00:00Z] worker F-004 TRICK: migrations are applied in filename order by psql -f drizzle/*.sql\n\
             [2026-04-24T11:00:00Z] worker F-004 TRICK: migrations are applied in filename order by psql -f drizzle/*.sql\n\
             [2026-04-24T12:00:00Z] worker F-004 LESSON: cargo fmt before every commit\n\
             [2026-04-24T12:00:00Z] validator F-004 -: F-004 verified\n",
        );
        assert_eq!(items.len(), 2);
        let trick = items.iter().find(|i| i.tag == Tag::Trick).unwrap();
        assert_eq!(trick.evidence.len(), 3);
        assert_eq!(trick.seen, 2);
        assert_eq!(trick.workers, ["F-001", "F-004"]);
        assert_eq!(trick.id, trick.evidence[0].id);
        assert!(
            trick.text.starts_with("migrations are applied"),
            "most said"
        );
        assert_eq!(trick.first_seen.to_rfc3339(), "2026-04-24T10:00:00+00:00");
    }

    #[test]
    fn a_newer_decision_on_the_same_subject_supersedes() {
        let items = grouped(
            "[2026-04-24T10:00:00Z] worker F-001 DECISION: SQLite for the test database\n\
             [2026-04-24T11:00:00Z] worker F-002 DECISION: pytest for the test suite\n\
             [2026-04-25T10:00:00Z] worker F-003 DECISION: Postgres for the test database, not SQLite\n",
        );
        let by_text = |start: &str| items.iter().find(|i| i.text.starts_with(start)).unwrap();
        let newer = by_text("Postgres");
        assert_eq!(
            by_text("SQLite").superseded_by.as_deref(),
            Some(newer.id.as_str())
        );
        assert_eq!(by_text("pytest").superseded_by, None);
        assert_eq!(newer.superseded_by, None);
    }

    #[test]
    fn what_a_decision_is_about_and_what_a_change_names_decide_what_it_replaces() {
        let items = grouped(
            "[2026-04-24T10:00:00Z] worker F-001 DECISION: state stays local for the first features\n\
             [2026-04-24T10:00:00Z] worker F-001 DECISION: a failed send goes to the dead letters table\n\
             [2026-04-24T10:30:00Z] worker F-002 DECISION: e-mails are sent over SMTP to the local MailHog\n\
             [2026-04-25T10:00:00Z] worker F-003 DECISION: remote state: an S3 bucket with locking\n\
             [2026-04-25T11:00:00Z] worker F-004 DECISION: e-mail goes through the provider's HTTP API; no more SMTP\n",
        );
        let by_text = |start: &str| items.iter().find(|i| i.text.starts_with(start)).unwrap();
        assert_eq!(
            by_text("state stays").superseded_by.as_deref(),
            Some(by_text("remote state").id.as_str())
        );
        assert_eq!(
            by_text("e-mails are sent").superseded_by.as_deref(),
            Some(by_text("e-mail goes").id.as_str())
        );
        // "goes" is rare here too, but the change says what it replaces: SMTP.
        assert_eq!(by_text("a failed send").superseded_by, None);
        // A possessor is not the subject: the distance and the hikes are two.
        let items = grouped(
            "[2026-04-24T10:00:00Z] worker F-001 DECISION: a hike's distance is the sum of its legs\n\
             [2026-04-25T10:00:00Z] worker F-005 DECISION: each user's hikes are documents in the cloud store\n",
        );
        assert!(items.iter().all(|item| item.superseded_by.is_none()));
    }

    #[test]
    fn grouping_does_not_depend_on_the_order_of_lines() {
        let text = "[2026-04-24T10:00:00Z] worker F-1 LESSON: alpha beta gamma\n\
                    [2026-04-24T10:00:01Z] worker F-2 LESSON: beta gamma delta\n\
                    [2026-04-24T10:00:02Z] worker F-3 LESSON: gamma delta epsilon\n\
                    [2026-04-24T10:00:03Z] worker F-4 LESSON: zeta eta theta\n";
        let forward = grouped(text);
        let reversed: String = text.lines().rev().map(|l| format!("{l}\n")).collect();
        assert_eq!(grouped(&reversed), forward);
        // alpha~beta~gamma chain: 1 and 2 are alike, 2 and 3 are alike: one item.
        assert_eq!(forward.len(), 2);
    }
}
