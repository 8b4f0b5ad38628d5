//! What a pass found and did, for people (one line per change on stdout, a summary on stderr)
//! and for scripts (`curator --json`).

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::base::time::Timestamp;

use super::document::Size;
use super::graduation::{Graduation, Recurrence};
use super::items::{Item, Kind};
use super::log::Line;
use super::{cut, Cancelled, Params, Place, MEMORY_HISTORY};

/// One item, for the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ItemReport {
    pub id: String,
    /// Its tag (the most frequent of its entries).
    pub tag: &'static str,
    pub text: String,
    /// Times seen (distinct invocations).
    pub seen: usize,
    /// Distinct workers (a role on a feature) that reported it.
    pub workers: Vec<String>,
    /// Distinct features.
    pub features: Vec<String>,
    /// Distinct missions it was seen in (lessons and failure modes are tracked across missions
    /// in the ledger; decisions count this one only).
    pub missions: usize,
    pub first_seen: Timestamp,
    pub last_seen: Timestamp,
    /// The ids of the raw entries it stands for, oldest first.
    pub evidence: Vec<String>,
    /// Where it is after the pass.
    pub place: String,
    /// The decision that supersedes it.
    pub superseded_by: Option<String>,
}

/// Something the pass did (or, dry, would do).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    /// `promote`, `demote`, `add`, `move`, `supersede`, `archive`, `dismiss` or `graduate`.
    pub action: &'static str,
    pub id: String,
    pub text: String,
    /// Where it was (`None`: nowhere yet).
    pub from: Option<String>,
    /// Where it goes.
    pub to: String,
    /// Why, when the action has a reason (graduation, supersession).
    pub why: Option<String>,
}

/// A line of the log that is not an entry, kept verbatim.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Malformed {
    /// `raw.md` or `archive/raw-000001.md`.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// What is wrong with it.
    pub reason: String,
    /// The line.
    pub text: String,
}

/// What a pass found and did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// The mission id.
    pub mission: String,
    /// Lines in the log (archive/ and raw.md).
    pub entries: usize,
    /// Lines of the log that are not entries (kept verbatim, never promoted).
    pub malformed: Vec<Malformed>,
    /// Every item, with where it ended.
    pub items: Vec<ItemReport>,
    /// What changed, item by item.
    pub changes: Vec<Change>,
    /// Lines that leave raw.md for archive/.
    pub archived_lines: usize,
    /// The archive chunk they go to.
    pub chunk: Option<String>,
    /// summary.md's size after the pass.
    pub summary: Size,
    /// MEMORY.md's size after the pass.
    pub memory: Size,
    /// Things the user should know (a bound the user's own lines exceed, a repaired log…).
    pub warnings: Vec<String>,
    /// The files that change, in the order they are written.
    pub files: Vec<String>,
    /// What became of the agent's rewrite, with `--agent`.
    pub agent: Option<AgentVerdict>,
    /// Whether this was a dry run (nothing written).
    pub dry_run: bool,
}

impl Report {
    /// One line per thing done (or, dry, to do), for stdout: changes, archived lines, lines of
    /// the log that are not entries.
    pub fn lines(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .changes
            .iter()
            .map(|change| {
                let mut line = format!("{:<9} {}  ", change.action, change.id);
                if let Some(from) = &change.from {
                    line.push_str(&format!("{from} → "));
                }
                line.push_str(&format!("{}: {}", change.to, cut(&change.text, 100)));
                if let Some(why) = &change.why {
                    line.push_str(&format!(" ({why})"));
                }
                line
            })
            .collect();
        if let Some(chunk) = &self.chunk {
            lines.push(format!(
                "archive   {} lines of raw.md → {chunk}, verbatim",
                self.archived_lines
            ));
        }
        // Lines of raw.md only: those already archived were reported when they were in raw.md.
        lines.extend(
            self.malformed
                .iter()
                .filter(|m| m.file == "raw.md")
                .map(|m| {
                    format!(
                        "kept      {}:{}: not a raw entry ({}), kept verbatim: {}",
                        m.file,
                        m.line,
                        m.reason,
                        cut(&m.text, 80)
                    )
                }),
        );
        lines
    }

    /// The one-line account of the pass, for stderr.
    pub fn summary_line(&self, params: &Params) -> String {
        let files = if self.files.is_empty() {
            "nothing to change".to_string()
        } else if self.dry_run {
            format!(
                "dry run, would write {}; nothing written",
                self.files.join(", ")
            )
        } else {
            format!("wrote {}", self.files.join(", "))
        };
        format!(
            "{} log lines, {} items; summary.md {}/{} lines, ~{}/{} tokens; MEMORY.md {}/{} lines; {files}",
            self.entries,
            self.items.len(),
            self.summary.lines,
            params.summary_max_lines,
            self.summary.tokens,
            params.summary_max_tokens,
            self.memory.lines,
            params.memory_max_lines,
        )
    }
}

/// The deterministic checks' answer to the agent's rewrite of summary.md.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AgentVerdict {
    /// Whether the rewrite was kept.
    pub accepted: bool,
    /// Why it was rejected, or what it changed.
    pub reason: String,
    /// The agent's run directory.
    pub run_dir: Option<String>,
}

/// What changed for each item, in order of items. `cancel` is asked at every item.
pub(super) fn changes(
    items: &[Item],
    place: &BTreeMap<&str, Place>,
    old_place: &dyn Fn(&Item) -> Option<Place>,
    newly_dismissed: &BTreeSet<String>,
    graduations: &[Graduation],
    cancel: &dyn Fn() -> bool,
) -> Result<Vec<Change>, Cancelled> {
    let mut changes = Vec::new();
    for item in items {
        if cancel() {
            return Err(Cancelled);
        }
        let new = place
            .get(item.id.as_str())
            .copied()
            .unwrap_or(Place::Archive);
        let old = old_place(item);
        let from = old.map(Place::describe);
        let action = match (old, new) {
            (_, Place::Dismissed) if item.named_by(newly_dismissed) => Some("dismiss"),
            (_, Place::Dismissed) | (_, Place::Yours(_)) => None,
            (old, new) if old == Some(new) => None,
            (_, Place::Summary(_)) => Some("promote"),
            (_, Place::Memory(MEMORY_HISTORY)) => Some("supersede"),
            (Some(Place::Summary(_)), Place::Memory(_)) => Some("demote"),
            (None, Place::Memory(_)) => Some("add"),
            (Some(_), Place::Memory(_)) => Some("move"),
            (Some(_), Place::Archive) => Some("demote"),
            (None, Place::Archive) => Some("archive"),
        };
        if let Some(action) = action {
            changes.push(Change {
                action,
                id: item.id.clone(),
                text: item.text.clone(),
                from,
                to: new.describe(),
                why: (action == "supersede")
                    .then(|| {
                        item.superseded_by
                            .as_ref()
                            .map(|id| format!("superseded by {id}"))
                    })
                    .flatten(),
            });
        }
    }
    // By action, in the order of the layers (what reaches summary.md first), then where to.
    const ORDER: [&str; 7] = [
        "promote",
        "supersede",
        "demote",
        "move",
        "add",
        "archive",
        "dismiss",
    ];
    fn key(change: &Change) -> (Option<usize>, &str, &str) {
        let action = ORDER.iter().position(|a| *a == change.action);
        (action, &change.to, &change.id)
    }
    changes.sort_by(|a, b| key(a).cmp(&key(b)));
    let by_id: BTreeMap<&str, &Item> = items.iter().map(|i| (i.id.as_str(), i)).collect();
    for graduation in graduations {
        let text = by_id
            .get(graduation.id.as_str())
            .map(|i| i.text.clone())
            .unwrap_or_default();
        changes.push(Change {
            action: "graduate",
            id: graduation.id.clone(),
            text,
            from: None,
            to: format!("identity/{}.md", graduation.role),
            why: Some(graduation.reason.clone()),
        });
    }
    Ok(changes)
}

/// The lines of the log that are not entries.
pub(super) fn malformed(lines: &[&Line]) -> Vec<Malformed> {
    lines
        .iter()
        .filter_map(|line| {
            line.entry.as_ref().err().map(|error| Malformed {
                file: line.file.clone(),
                line: line.number,
                reason: error.reason.clone(),
                text: line.text(),
            })
        })
        .collect()
}

/// Every item with its counters and where it is after the pass. `cancel` is asked at every
/// item.
pub(super) fn items(
    items: &[Item],
    place: &BTreeMap<&str, Place>,
    recurrence: &Recurrence,
    cancel: &dyn Fn() -> bool,
) -> Result<Vec<ItemReport>, Cancelled> {
    let mut reports = Vec::with_capacity(items.len());
    for item in items {
        if cancel() {
            return Err(Cancelled);
        }
        reports.push(ItemReport {
            id: item.id.clone(),
            tag: item.tag.as_str(),
            text: item.text.clone(),
            seen: item.seen,
            workers: item.workers.clone(),
            features: item.features.clone(),
            missions: if item.kind == Kind::Decision {
                1
            } else {
                recurrence.missions_of(item).len()
            },
            first_seen: item.first_seen,
            last_seen: item.last_seen,
            evidence: item.evidence.iter().map(|e| e.id.clone()).collect(),
            place: place[item.id.as_str()].describe(),
            superseded_by: item.superseded_by.clone(),
        });
    }
    Ok(reports)
}
