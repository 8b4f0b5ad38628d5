//! The feature list, `.harness/features.yaml`: the spec of the work, hand-editable. A feature's
//! status is not here but in its run state.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::base::error::InputError;

/// A feature id: letters, digits, `-`, `_`, `.`, at most 64 characters, no `..`, starting with
/// neither `-` nor `.`. It names files under `.harness/` and is passed as an argument, so it can
/// never address a path outside `.harness/` nor read as an option. This is the one home of the
/// rule: run.sh asks `worker check` rather than testing ids itself.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct FeatureId(String);

impl FeatureId {
    /// Validates `text` as a feature id.
    pub fn parse(text: &str) -> Result<Self, InputError> {
        match name_problem(text, 64) {
            None => Ok(Self(text.to_string())),
            Some(problem) => Err(
                InputError::new(format!("invalid feature id {text:?}: it {problem}")).with_hint(
                    "feature ids look like F-001: ASCII letters, digits, '-', '_' and '.', starting with a letter, a digit or '_'",
                ),
            ),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for FeatureId {
    type Error = String;

    fn try_from(text: String) -> Result<Self, String> {
        Self::parse(&text).map_err(|error| error.message)
    }
}

impl From<FeatureId> for String {
    fn from(id: FeatureId) -> String {
        id.0
    }
}

impl fmt::Display for FeatureId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What is wrong with `text` as the name of a file under `.harness/` (a feature id, a run id),
/// or `None`: the rule of both ids.
pub(crate) fn name_problem(text: &str, max_len: usize) -> Option<String> {
    let problem = if text.is_empty() {
        "is empty".to_string()
    } else if text.len() > max_len {
        format!("is longer than {max_len} characters")
    } else if text.contains("..") {
        "contains '..'".to_string()
    } else if text.starts_with('.') {
        "starts with '.'".to_string()
    } else if text.starts_with('-') {
        "starts with '-'".to_string()
    } else if !text
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        "may hold only ASCII letters, digits, '-', '_' and '.'".to_string()
    } else {
        return None;
    };
    Some(problem)
}

/// One feature of the spec.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Feature {
    /// Unique id, e.g. `F-001`.
    pub id: FeatureId,
    pub title: String,
    /// What to build, in prose.
    #[serde(default)]
    pub description: String,
    /// The criteria a validator checks.
    #[serde(default)]
    pub acceptance: Vec<String>,
    /// Features that must be done first.
    #[serde(default)]
    pub depends_on: Vec<FeatureId>,
}

/// The whole of features.yaml.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeatureList {
    /// The features, in the order of the file.
    #[serde(default)]
    pub features: Vec<Feature>,
}

impl FeatureList {
    /// Reads and checks `path`.
    pub fn load(path: &Path) -> Result<Self, InputError> {
        let text = crate::spec::config::read_input(path)?;
        Self::parse(&text, path)
    }

    /// Parses and checks features.yaml text (`path` only names the file in errors): valid and
    /// unique ids, non-empty titles, dependencies that exist and close no cycle. Every command
    /// reads the file through this one check.
    pub fn parse(text: &str, path: &Path) -> Result<Self, InputError> {
        let list = Self::parse_allowing_cycles(text, path)?;
        match list.cycle() {
            None => Ok(list),
            // None of its features could ever become ready to run.
            Some(cycle) => Err(InputError::in_file(
                path,
                format!("dependency cycle {}", format_cycle(&cycle)),
            )
            .with_hint(
                "remove one of these dependencies (depends_on) so that the features can be ordered",
            )),
        }
    }

    /// [`FeatureList::parse`] without the cycle check: for the planner's merge, which rejects a
    /// plan that closes a cycle in its own words.
    pub fn parse_allowing_cycles(text: &str, path: &Path) -> Result<Self, InputError> {
        if text.trim().is_empty() {
            return Err(InputError::in_file(path, "the file is empty")
                .with_hint("it needs a `features:` list (see `./run.sh init`)"));
        }
        let list: FeatureList = crate::spec::config::parse_yaml(text, path)?;
        let mut seen = BTreeSet::new();
        for feature in &list.features {
            if !seen.insert(&feature.id) {
                return Err(InputError::in_file(
                    path,
                    format!("duplicate feature id {}", feature.id),
                )
                .at_line(line_of_id(text, &feature.id, 2)));
            }
            if feature.title.trim().is_empty() {
                return Err(InputError::in_file(
                    path,
                    format!("feature {} has an empty title", feature.id),
                )
                .at_line(line_of_id(text, &feature.id, 1)));
            }
        }
        for feature in &list.features {
            if let Some(missing) = feature.depends_on.iter().find(|d| !seen.contains(d)) {
                return Err(InputError::in_file(
                    path,
                    format!(
                        "feature {} depends on unknown feature {missing}",
                        feature.id
                    ),
                )
                .at_line(line_of_id(text, &feature.id, 1)));
            }
        }
        Ok(list)
    }

    /// Each feature's direct dependencies.
    pub fn dependency_graph(&self) -> BTreeMap<FeatureId, Vec<FeatureId>> {
        self.features
            .iter()
            .map(|f| (f.id.clone(), f.depends_on.clone()))
            .collect()
    }

    /// A dependency cycle, as the path that closes it (`[A, B, A]`), if there is one.
    pub fn cycle(&self) -> Option<Vec<FeatureId>> {
        find_cycle(&self.dependency_graph())
    }

    pub fn get(&self, id: &FeatureId) -> Option<&Feature> {
        self.features.iter().find(|f| &f.id == id)
    }

    /// The feature with `id`, or an error naming the file and the ids it does hold.
    pub fn require(&self, id: &FeatureId, path: &Path) -> Result<&Feature, InputError> {
        self.get(id).ok_or_else(|| {
            let known: Vec<&str> = self.features.iter().map(|f| f.id.as_str()).collect();
            let hint = if known.is_empty() {
                "the file lists no features yet: add one, or run `./run.sh plan`".to_string()
            } else {
                format!("known features: {}", known.join(", "))
            };
            InputError::in_file(path, format!("no feature with id {id}")).with_hint(hint)
        })
    }
}

/// A dependency cycle of `graph`, as the path that closes it (`[A, B, A]`), if there is one.
pub fn find_cycle(graph: &BTreeMap<FeatureId, Vec<FeatureId>>) -> Option<Vec<FeatureId>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Visiting,
        Done,
    }
    fn visit<'a>(
        node: &'a FeatureId,
        graph: &'a BTreeMap<FeatureId, Vec<FeatureId>>,
        marks: &mut BTreeMap<&'a FeatureId, Mark>,
        path: &mut Vec<&'a FeatureId>,
    ) -> Option<Vec<FeatureId>> {
        match marks.get(node) {
            Some(Mark::Done) => return None,
            Some(Mark::Visiting) => {
                let start = path.iter().position(|n| *n == node).unwrap_or(0);
                let mut cycle: Vec<FeatureId> =
                    path[start..].iter().map(|n| (*n).clone()).collect();
                cycle.push(node.clone());
                return Some(cycle);
            }
            None => {}
        }
        marks.insert(node, Mark::Visiting);
        path.push(node);
        for next in graph.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, marks, path) {
                return Some(cycle);
            }
        }
        path.pop();
        marks.insert(node, Mark::Done);
        None
    }
    let mut marks = BTreeMap::new();
    graph
        .keys()
        .find_map(|node| visit(node, graph, &mut marks, &mut Vec::new()))
}

/// `F-001, F-002`: ids in a message.
pub fn list_ids<'a>(ids: impl IntoIterator<Item = &'a FeatureId>) -> String {
    ids.into_iter()
        .map(FeatureId::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}

/// `F-001 -> F-002 -> F-001`.
pub fn format_cycle(cycle: &[FeatureId]) -> String {
    cycle
        .iter()
        .map(FeatureId::as_str)
        .collect::<Vec<_>>()
        .join(" -> ")
}

/// The 1-based line of the `nth` `id: <id>` in `text`, for errors serde cannot place.
fn line_of_id(text: &str, id: &FeatureId, nth: usize) -> Option<usize> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| {
            let line = line.trim_start().trim_start_matches("- ").trim();
            line.strip_prefix("id:")
                .map(|rest| rest.trim().trim_matches(|c| c == '"' || c == '\'') == id.as_str())
                .unwrap_or(false)
        })
        .nth(nth.saturating_sub(1))
        .map(|(index, _)| index + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<FeatureList, InputError> {
        FeatureList::parse(text, Path::new("features.yaml"))
    }

    #[test]
    fn feature_ids_cannot_name_paths_outside_the_state_dir() {
        for bad in [
            "", "../etc", "a/b", "..", ".x", "-rf", "--help", "F 1", "F-001\n", "Ｆ-001", "a\\b",
        ] {
            assert!(FeatureId::parse(bad).is_err(), "{bad:?} accepted");
        }
        for good in ["F-001", "F-007.1", "auth_login", "x"] {
            assert!(FeatureId::parse(good).is_ok(), "{good:?} refused");
        }
        assert!(FeatureId::parse(&"F".repeat(65)).is_err());
    }

    #[test]
    fn parses_the_documented_schema() {
        let list = parse(
            "features:\n  - id: F-001\n    title: Sign-up form\n    description: What to build.\n    acceptance:\n      - A new user can sign up.\n    depends_on: []\n  - id: F-002\n    title: Login\n    depends_on: [F-001]\n",
        )
        .unwrap();
        assert_eq!(list.features.len(), 2);
        let second = list.get(&FeatureId::parse("F-002").unwrap()).unwrap();
        assert_eq!(second.depends_on[0].as_str(), "F-001");
        assert!(second.acceptance.is_empty());
    }

    #[test]
    fn duplicate_ids_are_reported_at_the_second_one() {
        let error = parse("features:\n  - id: F-001\n    title: a\n  - id: F-001\n    title: b\n")
            .unwrap_err();
        assert_eq!(error.line, Some(4));
        assert!(error.message.contains("duplicate feature id F-001"));
    }

    #[test]
    fn unknown_dependency_is_an_error() {
        let error =
            parse("features:\n  - id: F-001\n    title: a\n    depends_on: [F-404]\n").unwrap_err();
        assert!(error.message.contains("unknown feature F-404"), "{error}");
        assert_eq!(error.line, Some(2));
    }

    #[test]
    fn bad_id_and_unknown_key_are_errors_with_a_line() {
        let error = parse("features:\n  - id: ../x\n    title: a\n").unwrap_err();
        assert!(error.message.contains("invalid feature id"), "{error}");
        assert_eq!(error.line, Some(2));
        let error = parse("features:\n  - id: F-1\n    titel: a\n").unwrap_err();
        assert!(error.message.contains("titel"), "{error}");
        assert_eq!(error.line, Some(3));
    }

    #[test]
    fn a_dependency_cycle_is_an_error_naming_it() {
        let text = "features:\n  - id: A\n    title: a\n    depends_on: [B]\n  - id: B\n    title: b\n    depends_on: [A]\n";
        let error = parse(text).unwrap_err();
        assert_eq!(error.message, "dependency cycle A -> B -> A");
        let list = FeatureList::parse_allowing_cycles(text, Path::new("features.yaml")).unwrap();
        assert_eq!(
            list.cycle().map(|c| format_cycle(&c)),
            Some("A -> B -> A".into())
        );
        let error = parse("features:\n  - id: A\n    title: a\n    depends_on: [A]\n").unwrap_err();
        assert_eq!(error.message, "dependency cycle A -> A");
    }

    #[test]
    fn empty_file_is_an_error() {
        assert!(parse("  \n").unwrap_err().message.contains("empty"));
    }

    #[test]
    fn unknown_feature_names_the_known_ones() {
        let list = parse("features:\n  - id: F-001\n    title: a\n").unwrap();
        let error = list
            .require(
                &FeatureId::parse("F-404").unwrap(),
                Path::new("features.yaml"),
            )
            .unwrap_err();
        assert!(
            error.to_string().contains("known features: F-001"),
            "{error}"
        );
    }
}
