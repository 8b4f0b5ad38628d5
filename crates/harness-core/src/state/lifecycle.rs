//! The records of a feature's lifecycle in its run state: the phase it is in ([`PhaseState`],
//! small, on the run state itself, so a resumed feature resumes its phase) and the gate each
//! promise went through ([`GateRecord`]: its checks and the paths outside the phase's `allow:`,
//! on the attempt's own record).

use serde::{Deserialize, Serialize};

/// Where a feature with phases stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PhaseState {
    /// The phase's name, as in config.yaml's `phases:`.
    pub name: String,
    /// Its position, from 1.
    pub number: u32,
    /// How many phases there were when it started.
    pub count: u32,
    /// The feature's iteration count when the phase started: its own iterations come after.
    pub started_after_iteration: u32,
    /// The working tree when the phase started, as a git tree id: what its gate compares the
    /// tree with. `None` when the phase has no `allow:` list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_tree: Option<String>,
}

impl PhaseState {
    /// `research (2 of 4)`.
    pub fn label(&self) -> String {
        format!("{} ({} of {})", self.name, self.number, self.count)
    }

    /// Iterations begun in this phase, given the feature's count.
    pub fn iterations(&self, iteration_count: u32) -> u32 {
        iteration_count.saturating_sub(self.started_after_iteration)
    }
}

/// Why a feature failed at phase `phase`'s own `max_iterations` (`cap`).
pub fn phase_cap_reason(phase: &str, cap: u32) -> String {
    format!("phase {phase}'s max_iterations ({cap}) reached without passing its gate")
}

/// Whether a failure's `reason` is a phase's own cap ([`phase_cap_reason`]): config.yaml raises
/// it, not `--max-iterations`.
pub fn is_phase_cap_reason(reason: &str) -> bool {
    reason.starts_with("phase ") && reason.contains("'s max_iterations (")
}

/// How a command of the lifecycle (a check, a hook) ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CommandOutcome {
    /// It exited 0.
    Passed,
    /// It exited non-zero, or a signal killed it.
    Failed,
    /// Its time ran out; its process tree was stopped.
    TimedOut,
    /// Its program could not be started.
    NotStarted,
    /// Ctrl-C or SIGTERM stopped it (or came before it could start): it decided nothing.
    Interrupted,
}

impl CommandOutcome {
    /// Words for notes and messages.
    pub fn describe(self) -> &'static str {
        match self {
            CommandOutcome::Passed => "passed",
            CommandOutcome::Failed => "failed",
            CommandOutcome::TimedOut => "timed out",
            CommandOutcome::NotStarted => "could not start",
            CommandOutcome::Interrupted => "was interrupted",
        }
    }
}

/// One check's run after a promise.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckRecord {
    pub name: String,
    pub outcome: CommandOutcome,
    /// Its exit code, when it exited.
    #[serde(default)]
    pub exit_code: Option<i32>,
    /// The signal that killed it, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    pub duration_ms: u64,
    /// Its output, relative to the attempt's run directory (`checks/1-tests.log`).
    pub log: String,
}

/// The gate an attempt's promise went through: the checks, and the phase's allowed paths.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct GateRecord {
    /// Whether the promise counts.
    pub passed: bool,
    /// The checks run, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<CheckRecord>,
    /// Paths the phase changed outside its `allow:` list (at most [`MAX_PATHS_KEPT`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outside_allow: Vec<String>,
    /// How many paths were outside it in all.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub outside_allow_count: usize,
    /// Why the gate could not look at what the phase changed (git failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The most paths outside `allow:` a record keeps (the count says how many there were).
pub const MAX_PATHS_KEPT: usize = 50;

fn is_zero(count: &usize) -> bool {
    *count == 0
}

impl GateRecord {
    /// The checks that did not pass.
    pub fn failed_checks(&self) -> impl Iterator<Item = &CheckRecord> {
        self.checks
            .iter()
            .filter(|check| check.outcome != CommandOutcome::Passed)
    }

    /// Why the gate refused the promise, in one line each: failed checks, paths outside the
    /// allow list, an error looking at the tree.
    pub fn reasons(&self) -> Vec<String> {
        let mut reasons: Vec<String> = self
            .failed_checks()
            .map(|check| {
                let how = match (check.outcome, check.exit_code, check.signal) {
                    (CommandOutcome::Failed, Some(code), _) => format!("exit code {code}"),
                    (CommandOutcome::Failed, None, Some(signal)) => {
                        format!("killed by signal {signal}")
                    }
                    (outcome, ..) => outcome.describe().to_string(),
                };
                format!("check `{}` failed: {how}", check.name)
            })
            .collect();
        if self.outside_allow_count > 0 {
            let shown = self
                .outside_allow
                .iter()
                .take(5)
                .cloned()
                .collect::<Vec<_>>();
            let more = self.outside_allow_count - shown.len();
            reasons.push(format!(
                "{} path{} changed outside the phase's allow list: {}{}",
                self.outside_allow_count,
                if self.outside_allow_count == 1 {
                    ""
                } else {
                    "s"
                },
                shown.join(", "),
                if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                }
            ));
        }
        if let Some(error) = &self.error {
            reasons.push(format!("cannot see what the phase changed: {error}"));
        }
        reasons
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(name: &str, outcome: CommandOutcome, exit_code: Option<i32>) -> CheckRecord {
        CheckRecord {
            name: name.into(),
            outcome,
            exit_code,
            signal: None,
            duration_ms: 5,
            log: format!("checks/1-{name}.log"),
        }
    }

    #[test]
    fn the_reasons_name_each_failed_check_and_the_paths_outside() {
        let gate = GateRecord {
            passed: false,
            checks: vec![
                check("lint", CommandOutcome::Passed, Some(0)),
                check("tests", CommandOutcome::Failed, Some(101)),
                check("slow", CommandOutcome::TimedOut, None),
            ],
            outside_allow: (1..=7).map(|n| format!("src/{n}.rs")).collect(),
            outside_allow_count: 7,
            error: None,
        };
        assert_eq!(
            gate.reasons(),
            [
                "check `tests` failed: exit code 101",
                "check `slow` failed: timed out",
                "7 paths changed outside the phase's allow list: src/1.rs, src/2.rs, src/3.rs, src/4.rs, src/5.rs and 2 more",
            ]
        );
        assert!(GateRecord {
            passed: true,
            ..GateRecord::default()
        }
        .reasons()
        .is_empty());
    }

    #[test]
    fn a_phase_cap_reason_is_told_from_the_features_own() {
        assert!(is_phase_cap_reason(&phase_cap_reason("plan", 3)));
        assert!(!is_phase_cap_reason(
            "max_iterations (10) reached without completion"
        ));
        assert!(!is_phase_cap_reason(
            "max_iterations (3) reached; phase build (2 of 2) is next"
        ));
    }

    #[test]
    fn a_phase_counts_its_own_iterations() {
        let phase = PhaseState {
            name: "research".into(),
            number: 2,
            count: 4,
            started_after_iteration: 3,
            base_tree: None,
        };
        assert_eq!(phase.label(), "research (2 of 4)");
        assert_eq!(phase.iterations(5), 2);
        assert_eq!(phase.iterations(3), 0);
    }
}
