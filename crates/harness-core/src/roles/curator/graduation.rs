//! Graduation: mission memory that earned a place in `identity/<role>.md` (L4), which every later
//! mission's prompts of that role carry. The files are append-only; a line is never graduated
//! twice (nor when the file already says the same, in the user's words or another mission's),
//! and each graduated line says why it graduated:
//! - a TRICK reported by enough distinct workers (a role on a feature; see
//!   [`Evidence::worker`](super::items::Evidence::worker));
//! - a failure mode (FAIL or AVOID) seen in enough missions, counted in the cross-mission ledger
//!   (`identity/ledger.json`), where each mission keeps the list of its failure modes under its
//!   mission id;
//! - a convention (LESSON, AVOID or FAIL) recorded again and again within the mission: every
//!   time after the first, an agent had forgotten it.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::base::error::InputError;
use crate::base::time::Timestamp;
use crate::spec::role::Role;
use crate::state::memory::{strip_comments, Tag};

use super::document::marker_ids;
use super::items::{Item, Kind};
use super::join::{Index, Vocabulary};
use super::similarity::words;
use super::{Cancelled, Params};

/// The most failure modes one mission keeps in the ledger (the most seen first).
pub const LEDGER_FAILURES_PER_MISSION: usize = 100;

/// The cross-mission ledger, `identity/ledger.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ledger {
    /// Each mission's failure modes, by mission id.
    #[serde(default)]
    pub missions: BTreeMap<String, MissionFailures>,
}

/// What one mission recorded in the ledger.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MissionFailures {
    /// The project directory, for people reading the ledger.
    #[serde(default)]
    pub project: String,
    /// Its failure modes.
    #[serde(default)]
    pub failures: Vec<Failure>,
}

/// A failure mode of one mission.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Failure {
    /// The item's id in that mission.
    pub id: String,
    /// The role that reported it most.
    pub role: Role,
    /// What it says.
    pub text: String,
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

    /// The ledger with `mission`'s entry made of its failure items (the others untouched).
    pub fn with_mission(&self, mission: &str, project: &str, items: &[&Item]) -> Ledger {
        let mut failures: Vec<&Item> = items
            .iter()
            .copied()
            .filter(|item| item.kind == Kind::Avoid)
            .collect();
        failures.sort_by(|a, b| {
            b.seen
                .cmp(&a.seen)
                .then(b.last_seen.cmp(&a.last_seen))
                .then(a.id.cmp(&b.id))
        });
        failures.truncate(LEDGER_FAILURES_PER_MISSION);
        let mut ledger = self.clone();
        if failures.is_empty() {
            ledger.missions.remove(mission);
        } else {
            ledger.missions.insert(
                mission.to_string(),
                MissionFailures {
                    project: project.to_string(),
                    failures: failures
                        .into_iter()
                        .map(|item| Failure {
                            id: item.id.clone(),
                            role: item.role,
                            text: item.text.clone(),
                            seen: item.seen,
                            first_seen: item.first_seen,
                            last_seen: item.last_seen,
                        })
                        .collect(),
                },
            );
        }
        ledger
    }
}

/// The ledger's failure modes indexed by their words: in which missions a failure like a given
/// one was seen, without comparing it with every failure of every mission.
#[derive(Debug, Clone)]
pub struct Recurrence {
    vocabulary: Vocabulary,
    failures: Index,
    /// The mission of each failure of the index, in its order.
    missions: Vec<String>,
}

impl Recurrence {
    /// The failures of `ledger`, alike when their similarity reaches `threshold`.
    pub fn new(ledger: &Ledger, threshold: f64) -> Self {
        let failures: Vec<(&str, Vec<String>)> = ledger
            .missions
            .iter()
            .flat_map(|(id, entry)| {
                entry
                    .failures
                    .iter()
                    .map(move |failure| (id.as_str(), words(&failure.text)))
            })
            .collect();
        let vocabulary = Vocabulary::new(failures.iter().map(|(_, words)| words.as_slice()));
        let mut index = Index::new(threshold);
        for (_, words) in &failures {
            index.insert(vocabulary.ids(words));
        }
        Self {
            vocabulary,
            failures: index,
            missions: failures.iter().map(|(id, _)| id.to_string()).collect(),
        }
    }

    /// The missions in which failure `item` of `mission` was seen: that one, and every other
    /// whose ledger entry has a failure saying the same thing. Sorted.
    pub fn missions_of(&self, mission: &str, item: &Item) -> Vec<String> {
        let mut found: BTreeSet<&str> = self
            .failures
            .similar(&self.vocabulary.ids(&item.words))
            .into_iter()
            .map(|failure| self.missions[failure].as_str())
            .collect();
        found.insert(mission);
        found.into_iter().map(str::to_string).collect()
    }
}

/// Why an item graduated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    /// A TRICK reported by enough distinct workers.
    Trick,
    /// A failure mode seen in enough missions.
    Failure,
    /// A convention forgotten again and again.
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

/// What an identity file already says: the item ids in its markers, and its lines by their words.
struct Known {
    ids: HashSet<String>,
    lines: Index,
}

impl Known {
    /// What `text` says, its lines (see [`line_words`]) numbered by `vocabulary`.
    fn of(text: Option<&str>, vocabulary: &Vocabulary, threshold: f64) -> Self {
        let text = text.unwrap_or("");
        let mut lines = Index::new(threshold);
        for words in line_words(text) {
            lines.insert(vocabulary.ids(&words));
        }
        Self {
            ids: text.lines().flat_map(marker_ids).collect(),
            lines,
        }
    }

    /// Whether it names `item` or has a line like it (`words`: the item's, numbered).
    fn says(&self, item: &Item, words: &[u32]) -> bool {
        item.entry_ids().any(|id| self.ids.contains(id)) || !self.lines.similar(words).is_empty()
    }
}

/// The words of each line of an identity file that says something: neither a heading nor a
/// comment, without the reason a graduated line gives.
fn line_words(text: &str) -> Vec<Vec<String>> {
    strip_comments(text)
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(|line| words(line.split(" (graduated ").next().unwrap_or(line)))
        .filter(|words| !words.is_empty())
        .collect()
}

/// The lines to graduate from `items` (those eligible), given the identity files, the ledger's
/// failures (with this mission's) and the parameters. Deterministic: by role, then item.
/// `cancel` is asked at every item.
pub fn graduate(
    items: &[&Item],
    identities: &Identities,
    recurrence: &Recurrence,
    mission: &str,
    params: &Params,
    cancel: &dyn Fn() -> bool,
) -> Result<Vec<Graduation>, Cancelled> {
    let texts: Vec<Vec<String>> = identities
        .iter()
        .flat_map(|(_, text)| line_words(text.as_deref().unwrap_or("")))
        .collect();
    let vocabulary = Vocabulary::new(
        texts
            .iter()
            .map(Vec::as_slice)
            .chain(items.iter().map(|item| item.words.as_slice())),
    );
    let mut known: BTreeMap<&str, Known> = identities
        .iter()
        .map(|(role, text)| {
            let known = Known::of(text.as_deref(), &vocabulary, params.similarity);
            (role.as_str(), known)
        })
        .collect();
    let mut ordered: Vec<&Item> = items.to_vec();
    ordered.sort_by(|a, b| (a.first_seen, &a.id).cmp(&(b.first_seen, &b.id)));
    let mut graduated = Vec::new();
    for item in ordered {
        if cancel() {
            return Err(Cancelled);
        }
        let Some((rule, reason)) = rule_met(item, recurrence, mission, params) else {
            continue;
        };
        let file = known
            .entry(item.role.as_str())
            .or_insert_with(|| Known::of(None, &vocabulary, params.similarity));
        let words = vocabulary.ids(&item.words);
        if file.says(item, &words) {
            continue;
        }
        let line = format!(
            "- {} (graduated {} from mission {mission}: {reason}) <!-- c:{} -->",
            item.text,
            item.last_seen.format("%Y-%m-%d"),
            item.id
        );
        file.ids.insert(item.id.clone());
        file.lines.insert(words);
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

/// The first graduation rule `item` meets, with the reason in words.
fn rule_met(
    item: &Item,
    recurrence: &Recurrence,
    mission: &str,
    params: &Params,
) -> Option<(Rule, String)> {
    if item.tag == Tag::Trick && item.workers.len() >= params.graduate_trick_workers {
        return Some((
            Rule::Trick,
            format!(
                "TRICK reported by {} distinct workers: {}",
                item.workers.len(),
                list(&item.workers, 5, " more")
            ),
        ));
    }
    if item.kind == Kind::Avoid {
        let missions = recurrence.missions_of(mission, item);
        if missions.len() >= params.graduate_failure_missions {
            return Some((
                Rule::Failure,
                format!(
                    "failure mode seen in {} missions: {}",
                    missions.len(),
                    list(&missions, 5, " more")
                ),
            ));
        }
    }
    if item.tag != Tag::Trick && item.seen >= params.graduate_convention_times {
        return Some((
            Rule::Convention,
            format!(
                "{} recorded {} times, forgotten in between (by {})",
                item.tag.as_str(),
                item.seen,
                list(&item.workers, 5, " more")
            ),
        ));
    }
    None
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

    #[test]
    fn a_trick_from_two_workers_graduates_once_and_says_why() {
        let items = items_of(
            "[2026-04-24T10:00:00Z] worker F-1 TRICK: cargo test -q keeps the output short\n\
             [2026-04-24T11:00:00Z] worker F-2 TRICK: the output stays short with cargo test -q\n\
             [2026-04-24T12:00:00Z] worker F-3 TRICK: alone trick said thrice\n\
             [2026-04-24T13:00:00Z] worker F-3 TRICK: alone trick said thrice\n\
             [2026-04-24T14:00:00Z] worker F-3 TRICK: alone trick said thrice\n",
        );
        let refs: Vec<&Item> = items.iter().collect();
        let params = Params::default();
        let identities: Identities = vec![(Role::Worker, None)];
        let none = Recurrence::new(&Ledger::default(), params.similarity);
        let done = graduate(&refs, &identities, &none, "m-1", &params, &|| false).unwrap();
        assert_eq!(done.len(), 1, "{done:?}");
        assert_eq!(done[0].rule, Rule::Trick);
        assert!(done[0]
            .line
            .contains("TRICK reported by 2 distinct workers: F-1, F-2"));
        assert!(done[0]
            .line
            .ends_with(&format!("<!-- c:{} -->", done[0].id)));
        // Already in the file (in the user's words): not again.
        let identities: Identities = vec![(
            Role::Worker,
            Some("# Identity: worker\n- Run cargo test -q to keep output short.\n".into()),
        )];
        assert!(
            graduate(&refs, &identities, &none, "m-1", &params, &|| false)
                .unwrap()
                .is_empty()
        );
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
        let recurrence = Recurrence::new(&ledger, params.similarity);
        let done = graduate(&refs, &vec![], &recurrence, "m-2", &params, &|| false).unwrap();
        assert_eq!(done.len(), 1);
        assert_eq!(done[0].rule, Rule::Failure);
        assert!(
            done[0].reason.contains("2 missions: m-1, m-2"),
            "{}",
            done[0].reason
        );
        let alone = Ledger::default().with_mission("m-2", "/b", &refs);
        let alone = Recurrence::new(&alone, params.similarity);
        assert!(graduate(&refs, &vec![], &alone, "m-2", &params, &|| false)
            .unwrap()
            .is_empty());
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
