//! The lifecycle's events and their payloads: the one place each event's JSON (what a hook reads
//! on stdin) is built. Every payload has `event`, `time`, `feature_id` (null for the mission),
//! `workdir`, `state_dir` and `message` (one line for a person); the others are the event's
//! own, as the README lists them. Its top-level scalars also reach the hook's environment as
//! `HARNESS_<FIELD>` ([`Payload::environment`]).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::base::time::{self, Timestamp};
use crate::spec::config::Event;
use crate::state::lifecycle::{CheckRecord, GateRecord, PhaseState};
use crate::state::run_state::{Outcome, RunState, Status};

/// Where an event happens: the project, its state and, unless it is the mission's, the feature.
#[derive(Debug, Clone, Copy)]
pub struct Scene<'a> {
    pub feature_id: Option<&'a str>,
    pub workdir: &'a Path,
    pub state_dir: &'a Path,
    pub time: Timestamp,
}

/// One event, as hooks get it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Payload {
    pub event: Event,
    pub time: String,
    pub feature_id: Option<String>,
    pub workdir: String,
    pub state_dir: String,
    /// One line for a person (a notification's text).
    pub message: String,
    #[serde(flatten)]
    pub attempt: Option<AttemptFields>,
    #[serde(flatten)]
    pub details: Details,
}

/// The attempt an event belongs to.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AttemptFields {
    pub run_id: String,
    pub iteration: u32,
    pub max_iterations: u32,
    /// The phase's name, its number and how many there are; absent without phases.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase_number: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase_count: Option<u32>,
}

impl AttemptFields {
    /// Attempt `run_id`, iteration `iteration` of `max_iterations`, in `phase` if any.
    pub fn new(
        run_id: &str,
        (iteration, max_iterations): (u32, u32),
        phase: Option<&PhaseState>,
    ) -> Self {
        AttemptFields {
            run_id: run_id.to_string(),
            iteration,
            max_iterations,
            phase: phase.map(|p| p.name.clone()),
            phase_number: phase.map(|p| p.number),
            phase_count: phase.map(|p| p.count),
        }
    }
}

/// What each event says besides the common fields.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Details {
    /// Nothing more (`iteration_start`).
    None {},
    /// `agent_stop`: what the harness decided, on what.
    AgentStop {
        decision: String,
        outcome: Outcome,
        promise_found: bool,
        turns: Option<u64>,
        tokens: Option<u64>,
        cost_usd: Option<f64>,
        duration_secs: f64,
    },
    /// `checks_failed`, `phase_passed`, `phase_failed`: the gate.
    Gate {
        passed: bool,
        checks: Vec<CheckRecord>,
        reasons: Vec<String>,
        outside_allow: Vec<String>,
        /// The phase that follows, for `phase_passed`.
        #[serde(skip_serializing_if = "Option::is_none")]
        next_phase: Option<String>,
    },
    /// `feature_done`, `feature_failed`, `feature_blocked`.
    Feature {
        status: Status,
        reason: Option<String>,
        iteration: u32,
        max_iterations: u32,
    },
    /// `budget_reached`.
    Budget { budget: String },
    /// `rate_limit_wait`: the service held the agent up (`outcome`: `rate_limited` or
    /// `service_error`) and the harness waits `wait_secs`, wait `wait_number` of `max_waits`;
    /// `waits_exhausted`: it did so past `max_waits` (`wait_number`), and the run stopped.
    RateLimit {
        outcome: Outcome,
        wait_secs: u64,
        wait_number: u32,
        max_waits: u32,
        /// When the agent said its limit resets, if it did.
        resets_at: Option<String>,
    },
    /// `mission_done`.
    Mission {
        exit_code: u8,
        features: BTreeMap<String, usize>,
    },
}

impl Scene<'_> {
    fn payload(
        &self,
        event: Event,
        message: &str,
        attempt: Option<AttemptFields>,
        details: Details,
    ) -> Payload {
        Payload {
            event,
            time: time::format(self.time),
            feature_id: self.feature_id.map(str::to_string),
            workdir: self.workdir.display().to_string(),
            state_dir: self.state_dir.display().to_string(),
            message: message.to_string(),
            attempt,
            details,
        }
    }

    /// `iteration_start`: a worker iteration is about to run its agent.
    pub fn iteration_start(&self, attempt: AttemptFields) -> Payload {
        let phase = attempt
            .phase
            .as_ref()
            .map_or(String::new(), |p| format!(" in phase {p}"));
        let message = format!(
            "{} iteration {}/{} starts{phase}",
            self.feature_id.unwrap_or("-"),
            attempt.iteration,
            attempt.max_iterations
        );
        self.payload(
            Event::IterationStart,
            &message,
            Some(attempt),
            Details::None {},
        )
    }

    /// `agent_stop`: the worker's agent stopped and the harness decided (`details` is
    /// [`Details::AgentStop`]); `message` is the transition's.
    pub fn agent_stop(&self, attempt: AttemptFields, details: Details, message: &str) -> Payload {
        self.payload(Event::AgentStop, message, Some(attempt), details)
    }

    /// The gate's event: `checks_failed` (a failed check voided the promise), `phase_passed`
    /// (then `next` starts) or `phase_failed`.
    pub fn gate(
        &self,
        event: Event,
        attempt: AttemptFields,
        gate: &GateRecord,
        next: Option<&PhaseState>,
    ) -> Payload {
        let id = self.feature_id.unwrap_or("-");
        let phase = attempt.phase.clone().unwrap_or_default();
        let reasons = gate.reasons();
        let message = match (event, next) {
            (Event::PhasePassed, Some(next)) => {
                format!("{id} passed phase {phase}; phase {} is next", next.label())
            }
            (Event::PhasePassed, None) => format!("{id} passed phase {phase}, its last"),
            (Event::PhaseFailed, _) => {
                format!("{id} phase {phase} refused: {}", reasons.join("; "))
            }
            _ => format!("{id}: the promise does not count: {}", reasons.join("; ")),
        };
        let details = Details::Gate {
            passed: gate.passed,
            checks: gate.checks.clone(),
            reasons,
            outside_allow: gate.outside_allow.clone(),
            next_phase: next.map(|p| p.name.clone()),
        };
        self.payload(event, &message, Some(attempt), details)
    }

    /// `feature_done`, `feature_failed` or `feature_blocked`, as `state` now stands.
    pub fn feature(&self, event: Event, state: &RunState, message: &str) -> Payload {
        let details = Details::Feature {
            status: state.status,
            reason: state.reason.clone(),
            iteration: state.iteration_count,
            max_iterations: state.max_iterations,
        };
        self.payload(event, message, None, details)
    }

    /// `budget_reached`: `budget` says which ran out.
    pub fn budget_reached(&self, budget: &str, message: &str) -> Payload {
        let details = Details::Budget {
            budget: budget.to_string(),
        };
        self.payload(Event::BudgetReached, message, None, details)
    }

    /// `rate_limit_wait`: the harness waits out a setback (`details` is [`Details::RateLimit`]).
    pub fn rate_limit_wait(
        &self,
        attempt: AttemptFields,
        details: Details,
        message: &str,
    ) -> Payload {
        self.payload(Event::RateLimitWait, message, Some(attempt), details)
    }

    /// `waits_exhausted`: a setback with no wait left stopped the run (`details` is
    /// [`Details::RateLimit`], its `wait_secs` 0).
    pub fn waits_exhausted(
        &self,
        attempt: AttemptFields,
        details: Details,
        message: &str,
    ) -> Payload {
        self.payload(Event::WaitsExhausted, message, Some(attempt), details)
    }

    /// `mission_done`: `./run.sh all` ended with `exit_code`; `features` counts them by status.
    pub fn mission_done(
        &self,
        exit_code: u8,
        features: BTreeMap<String, usize>,
        message: &str,
    ) -> Payload {
        let details = Details::Mission {
            exit_code,
            features,
        };
        self.payload(Event::MissionDone, message, None, details)
    }
}

/// The event a change of the feature's status from `before` to `after` makes: becoming done,
/// failed or blocked.
pub fn status_event(before: Status, after: Status) -> Option<Event> {
    if before == after {
        return None;
    }
    match after {
        Status::Done => Some(Event::FeatureDone),
        Status::Failed => Some(Event::FeatureFailed),
        Status::Blocked => Some(Event::FeatureBlocked),
        _ => None,
    }
}

impl Payload {
    /// The payload as one line of JSON (what a hook reads on stdin).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| "{}".into())
    }

    /// `HARNESS_<FIELD>` for every top-level scalar (`HARNESS_EVENT=agent_stop`, …); the
    /// feature, run and phase always, empty when the event has none, so that no value of an
    /// enclosing run leaks in.
    pub fn environment(&self) -> Vec<(String, String)> {
        let mut env: BTreeMap<String, String> = ["feature_id", "run_id", "phase"]
            .into_iter()
            .map(|key| (env_name(key), String::new()))
            .collect();
        if let Ok(serde_json::Value::Object(fields)) = serde_json::to_value(self) {
            for (key, value) in fields {
                let text = match value {
                    serde_json::Value::String(text) => text,
                    serde_json::Value::Number(number) => number.to_string(),
                    serde_json::Value::Bool(flag) => flag.to_string(),
                    _ => continue,
                };
                env.insert(env_name(&key), text);
            }
        }
        env.into_iter().collect()
    }
}

fn env_name(key: &str) -> String {
    format!("HARNESS_{}", key.to_ascii_uppercase())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::testing::at;

    fn scene() -> Scene<'static> {
        Scene {
            feature_id: Some("F-001"),
            workdir: Path::new("/p"),
            state_dir: Path::new("/p/.harness"),
            time: at(0),
        }
    }

    #[test]
    fn an_agent_stop_payload_has_the_common_fields_and_its_own() {
        let phase = PhaseState {
            name: "build".into(),
            number: 3,
            count: 4,
            started_after_iteration: 2,
            base_tree: None,
        };
        let details = Details::AgentStop {
            decision: "restart".into(),
            outcome: Outcome::NoPromise,
            promise_found: false,
            turns: Some(3),
            tokens: None,
            cost_usd: Some(0.5),
            duration_secs: 1.5,
        };
        let payload = scene().agent_stop(
            AttemptFields::new("r1", (4, 10), Some(&phase)),
            details,
            "F-001 iteration 4/10: ended without the promise; 6 left",
        );
        let json: serde_json::Value = serde_json::from_str(&payload.to_json()).unwrap();
        assert_eq!(json["event"], "agent_stop");
        assert_eq!(json["feature_id"], "F-001");
        assert_eq!(json["time"], time::format(at(0)));
        assert_eq!(json["iteration"], 4);
        assert_eq!(json["phase"], "build");
        assert_eq!(json["phase_number"], 3);
        assert_eq!(json["decision"], "restart");
        assert_eq!(json["outcome"], "no_promise");
        assert_eq!(json["tokens"], serde_json::Value::Null);
        assert_eq!(json["cost_usd"], 0.5);
        let env = payload.environment();
        let get = |key: &str| env.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str());
        assert_eq!(get("HARNESS_EVENT"), Some("agent_stop"));
        assert_eq!(get("HARNESS_FEATURE_ID"), Some("F-001"));
        assert_eq!(get("HARNESS_PHASE"), Some("build"));
        assert_eq!(get("HARNESS_ITERATION"), Some("4"));
        assert_eq!(get("HARNESS_PROMISE_FOUND"), Some("false"));
        assert_eq!(get("HARNESS_TOKENS"), None);
        assert!(get("HARNESS_MESSAGE").unwrap().contains("6 left"));
    }

    #[test]
    fn the_mission_has_no_feature_and_its_environment_says_so() {
        let scene = Scene {
            feature_id: None,
            ..scene()
        };
        let mut counts = BTreeMap::new();
        counts.insert("done".to_string(), 3);
        let payload = scene.mission_done(0, counts, "mission: 3/3 features done");
        let json: serde_json::Value = serde_json::from_str(&payload.to_json()).unwrap();
        assert_eq!(json["feature_id"], serde_json::Value::Null);
        assert_eq!(json["features"]["done"], 3);
        assert_eq!(json["exit_code"], 0);
        let env = payload.environment();
        assert!(env.contains(&("HARNESS_FEATURE_ID".into(), String::new())));
        assert!(env.contains(&("HARNESS_EXIT_CODE".into(), "0".into())));
    }

    #[test]
    fn only_becoming_done_failed_or_blocked_is_an_event() {
        assert_eq!(
            status_event(Status::Running, Status::Done),
            Some(Event::FeatureDone)
        );
        assert_eq!(
            status_event(Status::Provisional, Status::Failed),
            Some(Event::FeatureFailed)
        );
        assert_eq!(
            status_event(Status::Pending, Status::Blocked),
            Some(Event::FeatureBlocked)
        );
        assert_eq!(status_event(Status::Failed, Status::Failed), None);
        assert_eq!(status_event(Status::Running, Status::Provisional), None);
    }
}
