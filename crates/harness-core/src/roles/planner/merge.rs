//! Merging a checked plan into features.yaml without clobbering anything: what the planner may
//! replace (a feature it wrote itself, untouched since and not started), what it keeps and why,
//! and `plan.json`, the record of what it wrote that makes hand edits detectable.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::edit::{render_item, Edit, Layout};
use crate::base::atomic::write_json;
use crate::base::error::InputError;
use crate::spec::features::{list_ids, Feature, FeatureId, FeatureList};
use crate::state::run_state::{RunState, Status};

/// `plan.json`: each feature as the planner last wrote it, in its normalised text (the item
/// moved to column 0). A feature whose text in features.yaml differs was edited by hand.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PlanRecord {
    /// Feature id → the item text the planner wrote.
    pub features: BTreeMap<FeatureId, String>,
}

impl PlanRecord {
    /// Reads `path`; an absent record is empty (the planner wrote nothing yet).
    pub fn load(path: &Path) -> Result<Self, InputError> {
        let record = crate::spec::config::read_json(
            path,
            "plan record",
            "move it away: the planner then treats every feature as written by hand",
        )?;
        Ok(record.unwrap_or_default())
    }

    /// Writes the record atomically.
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        write_json(path, self)
    }
}

/// The text the record keeps for `feature`.
pub fn normalised(feature: &Feature) -> String {
    render_item(feature, 0, "\n")
}

/// How far a feature got, as far as the planner cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress {
    /// Never ran: no run state, or pending with no iteration.
    NotStarted,
    /// Accepted.
    Done,
    /// Re-broken into these features.
    Superseded(Vec<FeatureId>),
    /// Started and not done, in this status (a held lock counts as running).
    Started(Status),
}

impl Progress {
    /// From a feature's run state and whether its lock is held right now.
    pub fn of(state: Option<&RunState>, locked: bool) -> Self {
        match state {
            Some(state) if !state.superseded_by.is_empty() => {
                Progress::Superseded(state.superseded_by.clone())
            }
            Some(state) if state.status == Status::Done => Progress::Done,
            _ if locked => Progress::Started(Status::Running),
            None => Progress::NotStarted,
            Some(state) if state.status == Status::Pending && state.iteration_count == 0 => {
                Progress::NotStarted
            }
            Some(state) => Progress::Started(state.status),
        }
    }
}

/// What happens to one planned feature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Not in features.yaml: added.
    Add,
    /// Written by the planner, untouched and not started: replaced by the new version.
    Replace,
    /// Already in features.yaml exactly as planned.
    Unchanged,
    /// Left as it is in features.yaml.
    Keep(KeepReason),
}

/// Why a planned feature that differs from features.yaml was not replaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeepReason {
    /// It is done.
    Done,
    /// It was re-broken into other features.
    Superseded(Vec<FeatureId>),
    /// It has started (its status).
    Started(Status),
    /// The user wrote it (the planner never did).
    WrittenByHand,
    /// The planner wrote it and the user changed it since.
    EditedByHand,
}

impl fmt::Display for KeepReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeepReason::Done => f.write_str("done"),
            KeepReason::Superseded(by) => write!(f, "superseded by {}", list_ids(by)),
            KeepReason::Started(Status::Running | Status::Pending | Status::Provisional) => {
                f.write_str("in progress")
            }
            KeepReason::Started(status) => f.write_str(status.as_str()),
            KeepReason::WrittenByHand => f.write_str("written by hand"),
            KeepReason::EditedByHand => f.write_str("edited by hand"),
        }
    }
}

/// The decision for `planned`, given the file's version (its parsed feature and its item text),
/// the record, and its progress.
pub fn decide(
    planned: &Feature,
    current: Option<(&Feature, &str)>,
    recorded: Option<&str>,
    progress: &Progress,
) -> Decision {
    let Some((feature, item_text)) = current else {
        return Decision::Add;
    };
    if feature == planned {
        return Decision::Unchanged;
    }
    let reason = match progress {
        Progress::Done => KeepReason::Done,
        Progress::Superseded(by) => KeepReason::Superseded(by.clone()),
        Progress::Started(status) => KeepReason::Started(*status),
        Progress::NotStarted => match recorded {
            None => KeepReason::WrittenByHand,
            Some(recorded) if recorded != item_text => KeepReason::EditedByHand,
            Some(_) => return Decision::Replace,
        },
    };
    Decision::Keep(reason)
}

/// Where new features go: at the end of the list (a mission plan), or right after the feature
/// they re-break.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement<'a> {
    /// Appended.
    End,
    /// Right after this feature.
    After(&'a FeatureId),
}

/// The outcome of a merge, before anything is written.
#[derive(Debug, Clone, PartialEq)]
pub struct Merge {
    /// The new text of features.yaml.
    pub text: String,
    /// The feature list it holds.
    pub list: FeatureList,
    /// Each planned feature and what happens to it, in plan order.
    pub decisions: Vec<(FeatureId, Decision)>,
    /// The plan record after the merge.
    pub record: PlanRecord,
}

impl Merge {
    /// A dependency cycle of the merged list: kept features keep their own dependencies, which
    /// may close a cycle with the planned ones (the plan is then rejected).
    pub fn cycle(&self) -> Option<Vec<FeatureId>> {
        self.list.cycle()
    }

    /// Whether features.yaml changes.
    pub fn changes_file(&self) -> bool {
        self.decisions
            .iter()
            .any(|(_, d)| matches!(d, Decision::Add | Decision::Replace))
    }

    /// `4 features (2 new, 1 updated, 1 kept)`, with `unchanged` when there are any.
    pub fn counts(&self) -> String {
        let count = |wanted: fn(&Decision) -> bool| {
            self.decisions.iter().filter(|(_, d)| wanted(d)).count()
        };
        let unchanged = count(|d| matches!(d, Decision::Unchanged));
        let total = self.decisions.len();
        format!(
            "{total} feature{} ({} new, {} updated, {}{} kept)",
            if total == 1 { "" } else { "s" },
            count(|d| matches!(d, Decision::Add)),
            count(|d| matches!(d, Decision::Replace)),
            if unchanged > 0 {
                format!("{unchanged} unchanged, ")
            } else {
                String::new()
            },
            count(|d| matches!(d, Decision::Keep(_))),
        )
    }

    /// One line per planned feature, for the user: `added F-004: Title`, `kept F-003: done`…
    pub fn report_lines(&self) -> Vec<String> {
        self.decisions
            .iter()
            .map(|(id, decision)| {
                let title = self
                    .list
                    .get(id)
                    .map(|f| f.title.trim().to_string())
                    .unwrap_or_default();
                match decision {
                    Decision::Add => format!("added     {id}: {title}"),
                    Decision::Replace => format!("updated   {id}: {title}"),
                    Decision::Unchanged => format!("unchanged {id}: {title}"),
                    Decision::Keep(reason) => format!("kept      {id}: {reason}"),
                }
            })
            .collect()
    }
}

/// Merges `planned` into features.yaml (`text`, already parsed as `current`), never clobbering:
/// new features are placed per `placement`, replaceable ones replaced in place, the rest kept;
/// features not in the plan are kept. The result is re-parsed and must hold exactly the expected
/// list, or nothing is to be written.
pub fn merge(
    text: &str,
    current: &FeatureList,
    path: &Path,
    planned: &[Feature],
    record: &PlanRecord,
    progress: impl Fn(&FeatureId) -> Progress,
    placement: Placement,
) -> Result<Merge, InputError> {
    let layout = Layout::locate(text, path)?;
    if layout.item_count() != current.features.len() {
        return Err(cannot_edit(
            path,
            format!(
                "found {} list items for {} features",
                layout.item_count(),
                current.features.len()
            ),
        ));
    }
    let index_of = |id: &FeatureId| current.features.iter().position(|f| &f.id == id);
    let mut decisions = Vec::with_capacity(planned.len());
    let mut edits = Vec::new();
    let mut added = Vec::new();
    let mut expected = current.features.clone();
    let mut record = record.clone();
    for feature in planned {
        let index = index_of(&feature.id);
        let item_text = index.and_then(|i| layout.item_text(i));
        let decision = decide(
            feature,
            index
                .map(|i| &current.features[i])
                .zip(item_text.as_deref()),
            record.features.get(&feature.id).map(String::as_str),
            &progress(&feature.id),
        );
        match (&decision, index) {
            (Decision::Add, _) => added.push(feature.clone()),
            (Decision::Replace, Some(index)) => {
                edits.push(Edit::Replace(index, feature.clone()));
                expected[index] = feature.clone();
                record
                    .features
                    .insert(feature.id.clone(), normalised(feature));
            }
            _ => {}
        }
        decisions.push((feature.id.clone(), decision));
    }
    if !added.is_empty() {
        match placement {
            Placement::After(parent) => {
                let index = index_of(parent).ok_or_else(|| {
                    InputError::in_file(path, format!("{parent} is no longer in the file"))
                })?;
                edits.push(Edit::InsertAfter(index, added.clone()));
                expected.splice(index + 1..index + 1, added.iter().cloned());
            }
            Placement::End => {
                edits.push(Edit::Append(added.clone()));
                expected.extend(added.iter().cloned());
            }
        }
        for feature in &added {
            record
                .features
                .insert(feature.id.clone(), normalised(feature));
        }
    }
    let expected = FeatureList { features: expected };
    // Only features still in the file can be told apart from hand edits.
    record.features.retain(|id, _| expected.get(id).is_some());
    let new_text = if edits.is_empty() {
        text.to_string()
    } else {
        layout.apply(&edits)
    };
    let list = FeatureList::parse_allowing_cycles(&new_text, path).map_err(|error| {
        cannot_edit(
            path,
            format!("the edit would not read back: {}", error.message),
        )
    })?;
    if list != expected {
        return Err(cannot_edit(
            path,
            "the edit would not read back as planned".into(),
        ));
    }
    Ok(Merge {
        text: new_text,
        list,
        decisions,
        record,
    })
}

fn cannot_edit(path: &Path, why: String) -> InputError {
    InputError::in_file(path, format!("the planner cannot edit this file safely: {why}"))
        .with_hint("nothing was written; write the features in block style, as in the template of `./run.sh init`")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::testing::id;

    fn feature(id_text: &str, title: &str) -> Feature {
        Feature {
            id: id(id_text),
            title: title.into(),
            description: String::new(),
            acceptance: vec!["works".into()],
            depends_on: vec![],
        }
    }

    fn parse(text: &str) -> FeatureList {
        FeatureList::parse(text, Path::new("features.yaml")).unwrap()
    }

    fn run(
        text: &str,
        planned: &[Feature],
        record: &PlanRecord,
        progress: impl Fn(&FeatureId) -> Progress,
    ) -> Merge {
        merge(
            text,
            &parse(text),
            Path::new("features.yaml"),
            planned,
            record,
            progress,
            Placement::End,
        )
        .unwrap()
    }

    #[test]
    fn progress_follows_the_run_state_and_the_lock() {
        let now = crate::base::time::now();
        let mut state = RunState::new(id("F-1"), 10, "P", now);
        assert_eq!(Progress::of(None, false), Progress::NotStarted);
        assert_eq!(Progress::of(Some(&state), false), Progress::NotStarted);
        assert_eq!(
            Progress::of(Some(&state), true),
            Progress::Started(Status::Running)
        );
        state.iteration_count = 1;
        assert_eq!(
            Progress::of(Some(&state), false),
            Progress::Started(Status::Pending)
        );
        state.status = Status::Done;
        assert_eq!(Progress::of(Some(&state), true), Progress::Done);
        state.status = Status::Failed;
        state.superseded_by = vec![id("F-1.1")];
        assert_eq!(
            Progress::of(Some(&state), false),
            Progress::Superseded(vec![id("F-1.1")])
        );
    }

    #[test]
    fn the_planner_replaces_only_its_own_untouched_unstarted_text() {
        let planned = feature("F-1", "New title");
        let file = feature("F-1", "Old title");
        let text = normalised(&file);
        let not_started = Progress::NotStarted;
        assert_eq!(decide(&planned, None, None, &not_started), Decision::Add);
        assert_eq!(
            decide(&planned, Some((&planned, "x")), None, &Progress::Done),
            Decision::Unchanged
        );
        assert_eq!(
            decide(&planned, Some((&file, &text)), Some(&text), &not_started),
            Decision::Replace
        );
        assert_eq!(
            decide(&planned, Some((&file, &text)), None, &not_started),
            Decision::Keep(KeepReason::WrittenByHand)
        );
        assert_eq!(
            decide(
                &planned,
                Some((&file, "- id: F-1\n  title: Old title # mine\n")),
                Some(&text),
                &not_started
            ),
            Decision::Keep(KeepReason::EditedByHand)
        );
        assert_eq!(
            decide(&planned, Some((&file, &text)), Some(&text), &Progress::Done),
            Decision::Keep(KeepReason::Done)
        );
        assert_eq!(
            decide(
                &planned,
                Some((&file, &text)),
                Some(&text),
                &Progress::Started(Status::Running)
            ),
            Decision::Keep(KeepReason::Started(Status::Running))
        );
        assert_eq!(
            KeepReason::Started(Status::Provisional).to_string(),
            "in progress"
        );
        assert_eq!(KeepReason::Started(Status::Failed).to_string(), "failed");
    }

    #[test]
    fn merge_adds_replaces_and_keeps_and_records_what_it_wrote() {
        let first = run(
            "# mine\nfeatures: []\n",
            &[feature("F-1", "One"), feature("F-2", "Two")],
            &PlanRecord::default(),
            |_| Progress::NotStarted,
        );
        assert_eq!(first.counts(), "2 features (2 new, 0 updated, 0 kept)");
        assert!(first.text.starts_with("# mine\nfeatures:\n  - id: F-1\n"));
        assert_eq!(first.record.features.len(), 2);

        // The user edits F-2 by hand and adds F-9; F-1 is done.
        let edited = first.text.replace("title: Two", "title: Two, by me")
            + "  - id: F-9\n    title: Mine\n";
        let second = run(
            &edited,
            &[
                feature("F-1", "One again"),
                feature("F-2", "Two again"),
                feature("F-3", "Three"),
            ],
            &first.record,
            |id| {
                if id.as_str() == "F-1" {
                    Progress::Done
                } else {
                    Progress::NotStarted
                }
            },
        );
        assert_eq!(
            second.report_lines(),
            [
                "kept      F-1: done",
                "kept      F-2: edited by hand",
                "added     F-3: Three",
            ]
        );
        assert!(second.text.starts_with(&edited), "{}", second.text);
        assert_eq!(second.list.features.len(), 4);

        // Not started and untouched: replaced in place; the same plan again changes nothing.
        let third = run(
            &second.text,
            &[feature("F-3", "Three, better")],
            &second.record,
            |_| Progress::NotStarted,
        );
        assert_eq!(third.counts(), "1 feature (0 new, 1 updated, 0 kept)");
        assert!(third.text.contains("title: Three, better"));
        let again = run(
            &third.text,
            &[feature("F-3", "Three, better")],
            &third.record,
            |_| Progress::NotStarted,
        );
        assert!(!again.changes_file());
        assert_eq!(again.text, third.text);
        assert_eq!(
            again.counts(),
            "1 feature (0 new, 0 updated, 1 unchanged, 0 kept)"
        );
    }

    #[test]
    fn a_kept_feature_can_close_a_cycle_with_the_plan() {
        // F-1 is done and depends on F-2; the plan makes F-2 (replaceable) depend on F-1.
        let mut one = feature("F-1", "One");
        one.depends_on = vec![id("F-2")];
        let two = feature("F-2", "Two");
        let text = format!(
            "features:\n{}{}",
            render_item(&one, 2, "\n"),
            render_item(&two, 2, "\n")
        );
        let mut record = PlanRecord::default();
        record.features.insert(id("F-2"), normalised(&two));
        let mut new_one = one.clone();
        new_one.depends_on.clear();
        let mut new_two = two.clone();
        new_two.depends_on = vec![id("F-1")];
        let merged = run(&text, &[new_one, new_two], &record, |id| {
            if id.as_str() == "F-1" {
                Progress::Done
            } else {
                Progress::NotStarted
            }
        });
        assert_eq!(
            merged
                .cycle()
                .map(|c| crate::spec::features::format_cycle(&c)),
            Some("F-1 -> F-2 -> F-1".to_string())
        );
    }

    #[test]
    fn pieces_go_right_after_the_feature_they_re_break() {
        let text = "features:\n  - id: F-6\n    title: a\n  - id: F-7\n    title: big\n  - id: F-8\n    title: c\n";
        let merged = merge(
            text,
            &parse(text),
            Path::new("features.yaml"),
            &[feature("F-7.1", "small"), feature("F-7.2", "smaller")],
            &PlanRecord::default(),
            |_| Progress::NotStarted,
            Placement::After(&id("F-7")),
        )
        .unwrap();
        let ids: Vec<&str> = merged.list.features.iter().map(|f| f.id.as_str()).collect();
        assert_eq!(ids, ["F-6", "F-7", "F-7.1", "F-7.2", "F-8"]);
    }

    #[test]
    fn a_file_it_cannot_edit_is_refused() {
        let text = "features: [{id: F-1, title: a}]\n";
        let error = merge(
            text,
            &parse(text),
            Path::new("features.yaml"),
            &[feature("F-2", "b")],
            &PlanRecord::default(),
            |_| Progress::NotStarted,
            Placement::End,
        )
        .unwrap_err();
        assert!(error.message.contains("flow style"), "{error}");
    }

    #[test]
    fn record_round_trips_and_a_missing_one_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("plan.json");
        assert_eq!(PlanRecord::load(&path).unwrap(), PlanRecord::default());
        let mut record = PlanRecord::default();
        record
            .features
            .insert(id("F-1"), normalised(&feature("F-1", "One")));
        record.save(&path).unwrap();
        assert_eq!(PlanRecord::load(&path).unwrap(), record);
        std::fs::write(&path, "{").unwrap();
        assert!(PlanRecord::load(&path)
            .unwrap_err()
            .message
            .contains("unreadable plan record"));
    }
}
