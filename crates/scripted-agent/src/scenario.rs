//! The scenario file: its shape, and the choice of script and step for one invocation.

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

/// A parsed scenario: the scripts to choose from, in order, and what to do once one runs out.
#[derive(Debug)]
pub struct Scenario {
    /// The scripts; a top-level `steps:` becomes one script that matches everything.
    pub scripts: Vec<Script>,
    /// What to do when every step of the chosen script has been played.
    pub after_last: AfterLast,
}

/// The file as written, before `steps` and `scripts` are folded into one list.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    steps: Option<Vec<Step>>,
    scripts: Option<Vec<Script>>,
    #[serde(default)]
    after_last: AfterLast,
}

/// A list of steps, played to the invocations its `match` fits.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// Which invocations this script is for; empty matches all.
    #[serde(default, rename = "match")]
    pub matcher: Match,
    /// The steps, one per invocation.
    pub steps: Vec<Step>,
}

/// The `match:` of a script: each key given must equal the invocation's.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Match {
    /// `HARNESS_ROLE` must equal this.
    pub role: Option<String>,
    /// `HARNESS_FEATURE_ID` must equal this.
    pub feature: Option<String>,
    /// `HARNESS_PHASE` must equal this.
    pub phase: Option<String>,
}

/// What happens once the steps of a script are used up.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AfterLast {
    /// Replay the last step forever.
    #[default]
    Repeat,
    /// Print an error and exit 97.
    Fail,
}

/// The actions played by one invocation.
#[derive(Debug, Default, PartialEq)]
pub struct Step(pub Vec<Action>);

/// One thing the agent does; see the crate documentation for each.
#[derive(Debug, PartialEq)]
pub enum Action {
    /// Print a line to stdout.
    Print(String),
    /// Print a line to stderr.
    Stderr(String),
    /// Print `<promise>P</promise>` if true.
    Promise(bool),
    /// Print the prompt if true.
    EchoPrompt(bool),
    /// Exit 98 unless the prompt contains this.
    ExpectPrompt(String),
    /// Exit 98 if the prompt contains this.
    RejectPrompt(String),
    /// Replace a file.
    Write(FileText),
    /// Append to a file.
    Append(FileText),
    /// `git add -A` and commit with this message.
    Commit(String),
    /// Copy a file, relative to the scenario's directory, to stdout.
    Cat(String),
    /// Sleep this many seconds.
    Sleep(f64),
    /// Sleep forever if true.
    Hang(bool),
    /// Write many bytes to stdout.
    Flood(Flood),
    /// Start `sh -c` with this command and do not wait for it.
    Spawn(String),
    /// Exit with this code.
    Exit(i32),
    /// Abort (SIGABRT) if true.
    Crash(bool),
}

/// The argument of `write` and `append`.
#[derive(Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileText {
    /// The file, relative to the current directory.
    pub path: String,
    /// The text to write.
    #[serde(default)]
    pub content: String,
}

/// The argument of `flood`.
#[derive(Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Flood {
    /// How many bytes to write in all.
    pub bytes: u64,
    /// The line to repeat, without its newline.
    #[serde(default = "Flood::default_line")]
    pub line: String,
}

impl Flood {
    fn default_line() -> String {
        "x".repeat(100)
    }
}

const ACTION_NAMES: &str = "print, stderr, promise, echo_prompt, expect_prompt, reject_prompt, \
                            write, append, commit, cat, sleep, hang, flood, spawn, exit, crash";

impl Scenario {
    /// Parses a scenario from YAML text; errors carry serde_yaml's line and column when it has them.
    pub fn parse(text: &str) -> Result<Scenario, String> {
        let raw: RawScenario = serde_yaml::from_str(text).map_err(|e| e.to_string())?;
        let scripts = match (raw.steps, raw.scripts) {
            (Some(steps), None) => vec![Script {
                matcher: Match::default(),
                steps,
            }],
            (None, Some(scripts)) => scripts,
            (Some(_), Some(_)) => return Err("give either `steps` or `scripts`, not both".into()),
            (None, None) => return Err("no `steps` or `scripts`".into()),
        };
        Ok(Scenario {
            scripts,
            after_last: raw.after_last,
        })
    }

    /// The first script that fits this role, feature and phase, with its index in the file.
    pub fn script_for(&self, role: &str, feature: &str, phase: &str) -> Option<(usize, &Script)> {
        self.scripts
            .iter()
            .enumerate()
            .find(|(_, script)| script.matcher.fits(role, feature, phase))
    }
}

impl Match {
    /// Whether an invocation with this role, feature and phase is one this script is for.
    pub fn fits(&self, role: &str, feature: &str, phase: &str) -> bool {
        self.role.as_deref().is_none_or(|r| r == role)
            && self.feature.as_deref().is_none_or(|f| f == feature)
            && self.phase.as_deref().is_none_or(|p| p == phase)
    }
}

/// The index of the step to play once `played` of `len` steps have been, or `None` when they are
/// used up and `after_last` is `fail`.
pub fn step_index(played: u64, len: usize, after_last: AfterLast) -> Option<usize> {
    match usize::try_from(played) {
        Ok(i) if i < len => Some(i),
        _ if after_last == AfterLast::Repeat => len.checked_sub(1),
        _ => None,
    }
}

// Actions and steps are parsed by hand rather than through `Value` or untagged enums: streaming
// keeps serde_yaml's line numbers in errors, and an unknown action is named instead of reported as
// "did not match any variant".

impl Action {
    /// Reads the value of the action named `key`, the key itself having been read from `map`.
    fn from_entry<'de, A: MapAccess<'de>>(key: &str, map: &mut A) -> Result<Action, A::Error> {
        Ok(match key {
            "print" => Action::Print(map.next_value()?),
            "stderr" => Action::Stderr(map.next_value()?),
            "promise" => Action::Promise(map.next_value()?),
            "echo_prompt" => Action::EchoPrompt(map.next_value()?),
            "expect_prompt" => Action::ExpectPrompt(map.next_value()?),
            "reject_prompt" => Action::RejectPrompt(map.next_value()?),
            "write" => Action::Write(map.next_value()?),
            "append" => Action::Append(map.next_value()?),
            "commit" => Action::Commit(map.next_value()?),
            "cat" => Action::Cat(map.next_value()?),
            "sleep" => {
                let seconds: f64 = map.next_value()?;
                // Duration::from_secs_f64 panics on these; better to say so at parse time.
                if !(seconds.is_finite() && seconds >= 0.0) {
                    return Err(de::Error::custom(format_args!(
                        "sleep: {seconds} is not a number of seconds >= 0"
                    )));
                }
                Action::Sleep(seconds)
            }
            "hang" => Action::Hang(map.next_value()?),
            "flood" => Action::Flood(map.next_value()?),
            "spawn" => Action::Spawn(map.next_value()?),
            "exit" => Action::Exit(map.next_value()?),
            "crash" => Action::Crash(map.next_value()?),
            other => {
                return Err(de::Error::custom(format_args!(
                    "unknown action `{other}` (known: {ACTION_NAMES})"
                )))
            }
        })
    }
}

/// Fails if `map` has a key left, since an action is a mapping with exactly one key.
fn no_more_keys<'de, A: MapAccess<'de>>(map: &mut A, first: &str) -> Result<(), A::Error> {
    match map.next_key::<String>()? {
        None => Ok(()),
        Some(extra) => Err(de::Error::custom(format_args!(
            "`{first}` and `{extra}` in one mapping: an action has exactly one key; \
             list several actions as `- {first}: ...` and `- {extra}: ...`"
        ))),
    }
}

impl<'de> Deserialize<'de> for Action {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ActionVisitor;
        impl<'de> Visitor<'de> for ActionVisitor {
            type Value = Action;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an action: a mapping with one key, such as `print: TEXT`")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Action, A::Error> {
                let key: String = map
                    .next_key()?
                    .ok_or_else(|| de::Error::custom("empty action"))?;
                let action = Action::from_entry(&key, &mut map)?;
                no_more_keys(&mut map, &key)?;
                Ok(action)
            }
        }
        deserializer.deserialize_map(ActionVisitor)
    }
}

impl<'de> Deserialize<'de> for Step {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct StepVisitor;
        impl<'de> Visitor<'de> for StepVisitor {
            type Value = Step;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a step: a list of actions, `actions: [...]`, or a single action")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Step, A::Error> {
                let mut actions = Vec::new();
                while let Some(action) = seq.next_element()? {
                    actions.push(action);
                }
                Ok(Step(actions))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Step, A::Error> {
                let key: String = map
                    .next_key()?
                    .ok_or_else(|| de::Error::custom("empty step"))?;
                let actions = if key == "actions" {
                    map.next_value()?
                } else {
                    vec![Action::from_entry(&key, &mut map)?]
                };
                no_more_keys(&mut map, &key)?;
                Ok(Step(actions))
            }
        }
        deserializer.deserialize_any(StepVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps_of(yaml: &str) -> Vec<Step> {
        let mut scenario = Scenario::parse(yaml).unwrap();
        assert_eq!(scenario.scripts.len(), 1);
        scenario.scripts.remove(0).steps
    }

    #[test]
    fn step_forms_list_actions_mapping_and_single_action() {
        let steps = steps_of(
            "steps:\n\
             - [print: a, stderr: b]\n\
             - actions: [promise: true]\n\
             - exit: 3\n\
             - []\n",
        );
        assert_eq!(
            steps,
            vec![
                Step(vec![Action::Print("a".into()), Action::Stderr("b".into())]),
                Step(vec![Action::Promise(true)]),
                Step(vec![Action::Exit(3)]),
                Step(vec![]),
            ]
        );
    }

    #[test]
    fn every_action_parses() {
        let steps = steps_of(
            r#"
steps:
  - - print: p
    - stderr: e
    - promise: true
    - echo_prompt: true
    - expect_prompt: want
    - reject_prompt: unwanted
    - write: {path: a/b.txt, content: "hi\n"}
    - append: {path: log}
    - commit: msg
    - cat: out.json
    - sleep: 0.5
    - sleep: 2
    - hang: true
    - flood: {bytes: 1000}
    - flood: {bytes: 10, line: ab}
    - spawn: sleep 1
    - exit: 4
    - crash: true
"#,
        );
        let expected = vec![
            Action::Print("p".into()),
            Action::Stderr("e".into()),
            Action::Promise(true),
            Action::EchoPrompt(true),
            Action::ExpectPrompt("want".into()),
            Action::RejectPrompt("unwanted".into()),
            Action::Write(FileText {
                path: "a/b.txt".into(),
                content: "hi\n".into(),
            }),
            Action::Append(FileText {
                path: "log".into(),
                content: String::new(),
            }),
            Action::Commit("msg".into()),
            Action::Cat("out.json".into()),
            Action::Sleep(0.5),
            Action::Sleep(2.0),
            Action::Hang(true),
            Action::Flood(Flood {
                bytes: 1000,
                line: "x".repeat(100),
            }),
            Action::Flood(Flood {
                bytes: 10,
                line: "ab".into(),
            }),
            Action::Spawn("sleep 1".into()),
            Action::Exit(4),
            Action::Crash(true),
        ];
        assert_eq!(steps, vec![Step(expected)]);
    }

    #[test]
    fn scripts_and_after_last() {
        let scenario = Scenario::parse(
            "scripts:\n\
             - match: {role: validator}\n  steps: [[print: v]]\n\
             - match: {role: worker, feature: F-002}\n  steps: [[print: w2]]\n\
             - steps: [[print: any]]\n\
             after_last: fail\n",
        )
        .unwrap();
        assert_eq!(scenario.after_last, AfterLast::Fail);
        assert_eq!(scenario.script_for("validator", "F-009", "").unwrap().0, 0);
        assert_eq!(scenario.script_for("worker", "F-002", "").unwrap().0, 1);
        assert_eq!(scenario.script_for("worker", "F-001", "").unwrap().0, 2);
        assert_eq!(scenario.script_for("", "", "").unwrap().0, 2);
    }

    #[test]
    fn no_fallback_means_no_script() {
        let scenario =
            Scenario::parse("scripts:\n- match: {feature: F-1}\n  steps: [[print: x]]\n").unwrap();
        assert!(scenario.script_for("worker", "F-2", "").is_none());
        let phased = Scenario::parse(
            "scripts:\n- match: {phase: plan}\n  steps: [[print: p]]\n- steps: [[print: other]]\n",
        )
        .unwrap();
        assert_eq!(phased.script_for("worker", "F-1", "plan").unwrap().0, 0);
        assert_eq!(phased.script_for("worker", "F-1", "build").unwrap().0, 1);
        assert_eq!(phased.script_for("worker", "F-1", "").unwrap().0, 1);
        assert_eq!(scenario.after_last, AfterLast::Repeat);
    }

    #[test]
    fn unknown_action_is_named_with_its_line() {
        let err = Scenario::parse("steps:\n  - print: ok\n  - frobnicate: 1\n").unwrap_err();
        assert!(err.contains("unknown action `frobnicate`"), "{err}");
        assert!(err.contains("line 3"), "{err}");
    }

    #[test]
    fn malformed_scenarios_are_errors() {
        for (yaml, needle) in [
            ("steps:\n  - {print: a, exit: 1}\n", "exactly one key"),
            ("steps: [[sleep: -1]]\n", "sleep"),
            ("steps: [[exit: nope]]\n", "invalid type"),
            ("steps: [[print: a]]\nscripts: []\n", "not both"),
            ("after_last: repeat\n", "no `steps`"),
            ("steps: [[print: a]]\nafter_last: sometimes\n", "sometimes"),
            ("steps: [[print: a]]\nstep: []\n", "unknown field"),
            ("steps: [print: [\n", "line"),
        ] {
            let err = Scenario::parse(yaml).unwrap_err();
            assert!(err.contains(needle), "{yaml}: {err}");
        }
    }

    #[test]
    fn step_selection() {
        use AfterLast::*;
        assert_eq!(step_index(0, 3, Repeat), Some(0));
        assert_eq!(step_index(2, 3, Repeat), Some(2));
        assert_eq!(step_index(3, 3, Repeat), Some(2));
        assert_eq!(step_index(u64::MAX, 3, Repeat), Some(2));
        assert_eq!(step_index(2, 3, Fail), Some(2));
        assert_eq!(step_index(3, 3, Fail), None);
        assert_eq!(step_index(0, 0, Repeat), None);
    }
}
