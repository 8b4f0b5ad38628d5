//! The planner agent's answer: the last fenced ```` ```yaml ```` block holding `features:`, and the
//! checks a plan must pass before anything is written. Every check gives a one-line reason.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::Deserialize;

use crate::spec::features::{find_cycle, format_cycle, list_ids, Feature, FeatureId, FeatureList};

/// Why a plan was not taken; nothing was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection(pub String);

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "plan rejected: {}", self.0)
    }
}

impl std::error::Error for Rejection {}

fn reject<T>(reason: impl Into<String>) -> Result<T, Rejection> {
    Err(Rejection(reason.into()))
}

/// A feature as the agent wrote it, before its ids are checked.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProposedFeature {
    id: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    acceptance: Vec<String>,
    #[serde(default)]
    depends_on: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProposedPlan {
    features: Vec<ProposedFeature>,
}

/// What a plan may contain.
#[derive(Debug, Clone, Copy)]
pub enum Scope<'a> {
    /// `plan`: any features for the mission.
    Mission,
    /// `replan`: the pieces of `parent`, ids `<parent>.<n>`, depending only on each other or on
    /// the parent's own dependencies.
    Rebreak {
        /// The feature being re-broken.
        parent: &'a Feature,
    },
}

/// The plan in `answer`: the last fenced block whose info string is `yaml` or `yml` and that
/// parses with a top-level `features:`, checked against `existing` (features.yaml now).
pub fn read_plan(
    answer: &str,
    existing: &FeatureList,
    scope: Scope,
) -> Result<Vec<Feature>, Rejection> {
    let blocks = yaml_blocks(answer);
    if blocks.is_empty() {
        return reject("the answer has no ```yaml block");
    }
    let chosen = blocks.iter().rev().find(|block| {
        matches!(
            serde_yaml::from_str::<serde_yaml::Value>(block),
            Ok(serde_yaml::Value::Mapping(map)) if map.contains_key("features")
        )
    });
    let Some(block) = chosen else {
        let last = blocks.last().expect("not empty");
        return match serde_yaml::from_str::<serde_yaml::Value>(last) {
            Err(error) => reject(format!("the last yaml block is not valid YAML: {error}")),
            Ok(_) => reject("no yaml block of the answer holds a top-level `features:` list"),
        };
    };
    let plan: ProposedPlan = serde_yaml::from_str(block).or_else(|error| {
        reject(format!(
            "the yaml block does not follow the schema of features.yaml: {error}"
        ))
    })?;
    check(plan.features, existing, scope)
}

/// The contents of the fenced code blocks of `text` whose info string is `yaml` or `yml`, in
/// order (CommonMark fences of backticks; an unclosed block runs to the end).
pub fn yaml_blocks(text: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut open: Option<(usize, usize, bool, String)> = None;
    for line in text.lines() {
        let indent = line.len() - line.trim_start_matches(' ').len();
        let rest = &line[indent..];
        let ticks = rest.len() - rest.trim_start_matches('`').len();
        match &mut open {
            None => {
                if indent <= 3 && ticks >= 3 {
                    let info = rest[ticks..].trim();
                    if info.contains('`') {
                        continue;
                    }
                    let language = info.split_whitespace().next().unwrap_or("");
                    let is_yaml = matches!(language.to_ascii_lowercase().as_str(), "yaml" | "yml");
                    open = Some((indent, ticks, is_yaml, String::new()));
                }
            }
            Some((fence_indent, fence_ticks, is_yaml, body)) => {
                if indent <= 3 && ticks >= *fence_ticks && rest[ticks..].trim().is_empty() {
                    if *is_yaml {
                        blocks.push(std::mem::take(body));
                    }
                    open = None;
                } else {
                    // Content is moved left by the fence's own indentation, as CommonMark does.
                    let cut = indent.min(*fence_indent);
                    body.push_str(&line[cut..]);
                    body.push('\n');
                }
            }
        }
    }
    if let Some((_, _, true, body)) = open {
        blocks.push(body);
    }
    blocks
}

/// The checks of a plan: valid, unique ids; a title and at least one acceptance criterion each;
/// known dependencies; no dependency cycle; and the rules of `scope`.
fn check(
    proposed: Vec<ProposedFeature>,
    existing: &FeatureList,
    scope: Scope,
) -> Result<Vec<Feature>, Rejection> {
    if proposed.is_empty() {
        return reject("the plan holds no features");
    }
    let mut features = Vec::with_capacity(proposed.len());
    let mut seen = BTreeSet::new();
    for (index, feature) in proposed.into_iter().enumerate() {
        let id = FeatureId::parse(feature.id.trim())
            .or_else(|error| reject(format!("feature {}: {}", index + 1, error.message)))?;
        if !seen.insert(id.clone()) {
            return reject(format!("duplicate feature id {id}"));
        }
        if feature.title.trim().is_empty() {
            return reject(format!("feature {id} has no title"));
        }
        if feature.acceptance.iter().all(|c| c.trim().is_empty()) {
            return reject(format!("feature {id} has no acceptance criterion"));
        }
        if let Some(n) = feature.acceptance.iter().position(|c| c.trim().is_empty()) {
            return reject(format!("acceptance criterion {} of {id} is empty", n + 1));
        }
        let depends_on = feature
            .depends_on
            .iter()
            .map(|dep| FeatureId::parse(dep.trim()))
            .collect::<Result<Vec<_>, _>>()
            .or_else(|error| reject(format!("feature {id} depends on {}", error.message)))?;
        features.push(Feature {
            id,
            title: feature.title.trim().to_string(),
            description: feature.description.trim_end().to_string(),
            acceptance: feature
                .acceptance
                .iter()
                .map(|c| c.trim().to_string())
                .collect(),
            depends_on,
        });
    }
    for feature in &features {
        if let Some(unknown) = feature
            .depends_on
            .iter()
            .find(|dep| !seen.contains(*dep) && existing.get(dep).is_none())
        {
            return reject(format!(
                "feature {} depends on unknown feature {unknown}",
                feature.id
            ));
        }
    }
    if let Scope::Rebreak { parent } = scope {
        check_rebreak(&features, parent)?;
    }
    if let Some(cycle) = find_cycle(&overlay(existing, &features)) {
        return reject(format!("dependency cycle {}", format_cycle(&cycle)));
    }
    Ok(features)
}

/// The rules of a re-breakdown of `parent`.
fn check_rebreak(features: &[Feature], parent: &Feature) -> Result<(), Rejection> {
    let prefix = format!("{}.", parent.id);
    for feature in features {
        let number = feature.id.as_str().strip_prefix(&prefix);
        let numbered = number.is_some_and(|n| {
            !n.is_empty() && !n.starts_with('0') && n.chars().all(|c| c.is_ascii_digit())
        });
        if !numbered {
            return reject(format!(
                "feature {} is not named {prefix}<n> (the pieces of {} are {prefix}1, {prefix}2, …)",
                feature.id, parent.id
            ));
        }
        let allowed = |dep: &FeatureId| {
            features.iter().any(|f| &f.id == dep) || parent.depends_on.contains(dep)
        };
        if let Some(dep) = feature.depends_on.iter().find(|dep| !allowed(dep)) {
            return reject(format!(
                "feature {} depends on {dep}: the pieces of {} may depend only on each other or on {}",
                feature.id,
                parent.id,
                if parent.depends_on.is_empty() {
                    "nothing else".to_string()
                } else {
                    format!(
                        "its own dependencies ({})",
                        list_ids(&parent.depends_on)
                    )
                }
            ));
        }
    }
    Ok(())
}

/// The dependency graph of `existing` with `features` laid over it (a planned feature's edges
/// replace those of the feature of the same id).
pub fn overlay(
    existing: &FeatureList,
    features: &[Feature],
) -> BTreeMap<FeatureId, Vec<FeatureId>> {
    let mut graph = existing.dependency_graph();
    for feature in features {
        graph.insert(feature.id.clone(), feature.depends_on.clone());
    }
    graph
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn existing(text: &str) -> FeatureList {
        FeatureList::parse(text, Path::new("features.yaml")).unwrap()
    }

    fn none() -> FeatureList {
        FeatureList::default()
    }

    fn answer(yaml: &str) -> String {
        format!("Here is the plan.\n\n```yaml\n{yaml}```\n\nTRICK: small features\n")
    }

    fn reason(result: Result<Vec<Feature>, Rejection>) -> String {
        result.unwrap_err().to_string()
    }

    const TWO: &str = "features:\n  - id: F-001\n    title: One\n    acceptance: [works]\n  - id: F-002\n    title: Two\n    description: |\n      Two lines\n      of text.\n    acceptance: [works too]\n    depends_on: [F-001]\n";

    #[test]
    fn reads_the_last_yaml_block_with_features() {
        let text = format!(
            "First draft:\n```yaml\nfeatures:\n  - id: X-1\n    title: draft\n    acceptance: [a]\n```\nFinal:\n{}\n```yaml\nnot: a plan\n```\n```text\nfeatures: []\n```\n",
            answer(TWO)
        );
        let plan = read_plan(&text, &none(), Scope::Mission).unwrap();
        let ids: Vec<&str> = plan.iter().map(|f| f.id.as_str()).collect();
        assert_eq!(ids, ["F-001", "F-002"]);
        assert_eq!(plan[1].description, "Two lines\nof text.");
        assert_eq!(plan[1].depends_on[0].as_str(), "F-001");
    }

    #[test]
    fn fences_follow_commonmark() {
        let blocks = yaml_blocks("  ```YML title\n  a: 1\n   b: 2\n  ````\n````yaml\nx: 1\n```\ny: 2\n````\n```yaml\nunclosed: true\n");
        assert_eq!(
            blocks,
            ["a: 1\n b: 2\n", "x: 1\n```\ny: 2\n", "unclosed: true\n"]
        );
        assert!(yaml_blocks("    ```yaml\n    features: []\n    ```\n").is_empty());
    }

    #[test]
    fn invalid_plans_are_rejected_with_the_reason() {
        let cases = [
            ("no block at all", "plan rejected: the answer has no ```yaml block"),
            (
                "```yaml\nfeatures: [\n```\n",
                "plan rejected: the last yaml block is not valid YAML",
            ),
            ("```yaml\nsteps: []\n```\n", "holds a top-level `features:` list"),
            (
                &answer("features:\n  - id: F-1\n    title: a\n    acceptance: [x]\n    priority: 1\n"),
                "does not follow the schema of features.yaml: features[0]: unknown field `priority`",
            ),
            (&answer("features: []\n"), "the plan holds no features"),
            (
                &answer("features:\n  - id: ../x\n    title: a\n    acceptance: [x]\n"),
                "feature 1: invalid feature id \"../x\"",
            ),
            (
                &answer("features:\n  - id: F-1\n    title: a\n    acceptance: [x]\n  - id: F-1\n    title: b\n    acceptance: [y]\n"),
                "plan rejected: duplicate feature id F-1",
            ),
            (
                &answer("features:\n  - id: F-1\n    title: ' '\n    acceptance: [x]\n"),
                "feature F-1 has no title",
            ),
            (
                &answer("features:\n  - id: F-1\n    title: a\n"),
                "feature F-1 has no acceptance criterion",
            ),
            (
                &answer("features:\n  - id: F-1\n    title: a\n    acceptance: [x, '']\n"),
                "acceptance criterion 2 of F-1 is empty",
            ),
            (
                &answer("features:\n  - id: F-1\n    title: a\n    acceptance: [x]\n    depends_on: [F-9]\n"),
                "feature F-1 depends on unknown feature F-9",
            ),
            (
                &answer("features:\n  - id: F-1\n    title: a\n    acceptance: [x]\n    depends_on: [F-2]\n  - id: F-2\n    title: b\n    acceptance: [x]\n    depends_on: [F-1]\n"),
                "plan rejected: dependency cycle F-1 -> F-2 -> F-1",
            ),
            (
                &answer("features:\n  - id: F-1\n    title: a\n    acceptance: [x]\n    depends_on: [F-1]\n"),
                "dependency cycle F-1 -> F-1",
            ),
        ];
        for (text, expected) in cases {
            let got = reason(read_plan(text, &none(), Scope::Mission));
            assert!(
                got.contains(expected),
                "{text:?}\n got: {got}\nwant: {expected}"
            );
        }
    }

    #[test]
    fn dependencies_may_name_existing_features_and_cycles_count_them() {
        let file = existing("features:\n  - id: F-001\n    title: a\n    depends_on: [F-002]\n  - id: F-002\n    title: b\n");
        let plan = answer("features:\n  - id: F-003\n    title: c\n    acceptance: [x]\n    depends_on: [F-001]\n");
        assert!(read_plan(&plan, &file, Scope::Mission).is_ok());
        // The plan makes F-002 depend on F-001, which depends on F-002 in the file.
        let plan = answer("features:\n  - id: F-002\n    title: b\n    acceptance: [x]\n    depends_on: [F-001]\n");
        assert!(reason(read_plan(&plan, &file, Scope::Mission))
            .contains("dependency cycle F-001 -> F-002 -> F-001"));
    }

    #[test]
    fn a_rebreak_names_its_pieces_after_the_parent() {
        let file = existing("features:\n  - id: F-002\n    title: base\n  - id: F-005\n    title: other\n  - id: F-007\n    title: big\n    depends_on: [F-002]\n");
        let parent = file
            .get(&FeatureId::parse("F-007").unwrap())
            .unwrap()
            .clone();
        let scope = Scope::Rebreak { parent: &parent };
        let good = answer("features:\n  - id: F-007.1\n    title: a\n    acceptance: [x]\n    depends_on: [F-002]\n  - id: F-007.2\n    title: b\n    acceptance: [y]\n    depends_on: [F-007.1]\n");
        assert_eq!(read_plan(&good, &file, scope).unwrap().len(), 2);
        for (bad, expected) in [
            ("F-008", "feature F-008 is not named F-007.<n>"),
            ("F-007.01", "is not named F-007.<n>"),
            ("F-007.x", "is not named F-007.<n>"),
            ("F-007", "is not named F-007.<n>"),
        ] {
            let plan = answer(&format!(
                "features:\n  - id: {bad}\n    title: a\n    acceptance: [x]\n"
            ));
            let got = reason(read_plan(&plan, &file, scope));
            assert!(got.contains(expected), "{bad}: {got}");
        }
        let plan = answer("features:\n  - id: F-007.1\n    title: a\n    acceptance: [x]\n    depends_on: [F-005]\n");
        assert!(reason(read_plan(&plan, &file, scope)).contains(
            "F-007.1 depends on F-005: the pieces of F-007 may depend only on each other or on its own dependencies (F-002)"
        ));
    }
}
