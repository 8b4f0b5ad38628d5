//! `.harness/curator.json`: what the curator remembers between passes that the memory files
//! cannot say themselves — where it put each item (so that a bullet the user deleted is told
//! from one it moved, and stays deleted), and the wordings and the calls its agent proposed and
//! it accepted.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::base::error::InputError;

use super::judgments::Judgments;

/// The contents of curator.json.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Record {
    /// Where each item that had a line after the last pass was: item id → file name.
    #[serde(default)]
    pub placed: BTreeMap<String, String>,
    /// Items whose line the user deleted: the curator writes them nowhere again (their entries
    /// stay in archive/). Remove an id here to bring its item back.
    #[serde(default)]
    pub dismissed: BTreeSet<String>,
    /// Items this mission graduated into an identity file: never graduated again, so that a
    /// line the user deleted there stays deleted.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub graduated: BTreeSet<String>,
    /// The length of archive/demoted.md after the last pass: what lies past it was demoted by a
    /// pass that was stopped before it wrote this record.
    #[serde(default)]
    pub demoted_bytes: u64,
    /// Summary wordings proposed by the curator's agent and accepted: item id → wording.
    #[serde(default)]
    pub wording: BTreeMap<String, Wording>,
    /// The agent's semantic calls that were checked and kept (items that say the same,
    /// decisions replaced, knowledge general or local), applied by every pass.
    #[serde(default, skip_serializing_if = "Judgments::is_empty")]
    pub judgments: Judgments,
}

/// A wording of an item's summary bullet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Wording {
    /// The bullet's text.
    pub text: String,
    /// The item's own text it rewords: once the item says something else, the wording lapses.
    pub of: String,
}

impl Record {
    /// Reads curator.json's text (`path` names it in errors).
    pub fn parse(text: &str, path: &Path) -> Result<Self, InputError> {
        serde_json::from_str(text).map_err(|error| {
            InputError::in_file(path, format!("not a curator record: {error}"))
                .at_line(Some(error.line()))
                .with_hint(
                    "fix it, or delete it: the curator then forgets which bullets you deleted",
                )
        })
    }

    /// The file's text.
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).expect("a record serialises");
        text.push('\n');
        text
    }

    /// Whether there is anything to remember.
    pub fn is_empty(&self) -> bool {
        self == &Record::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_record_is_an_input_error_with_its_line() {
        let error = Record::parse(
            "{\n  \"placed\": {},\n  \"oops\": 1\n}",
            Path::new("curator.json"),
        )
        .unwrap_err();
        assert_eq!(error.line, Some(3));
        assert!(error.to_string().starts_with("curator.json:3: "), "{error}");
        let record = Record {
            dismissed: ["0123456789".to_string()].into(),
            ..Record::default()
        };
        assert_eq!(
            Record::parse(&record.to_json(), Path::new("x")).unwrap(),
            record
        );
    }
}
