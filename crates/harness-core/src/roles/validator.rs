//! The validator: an independent agent checks a feature the worker says is complete, against its
//! acceptance criteria, in the workspace. Its verdict is `<verdict>PASS</verdict>` or
//! `<verdict>FAIL</verdict>` with its reasons around it; no verdict, or both, is a fail.

use anyhow::Context;
use serde::Serialize;

use crate::agent::{AgentRun, End};
use crate::base::error::InputError;
use crate::base::exit_codes;
use crate::base::text::tail_chars;
use crate::base::time::{self, Timestamp};
use crate::roles::attempt::{
    Attempt, Change, FeatureRequest, OutputFigures, Place, RoleReport, Session, Transition,
};
use crate::roles::inputs::{InputMemo, Layers};
use crate::roles::lifecycle::events::AttemptFields;
use crate::roles::prompt::{feature_spec, Prompt, RuntimeContext};
use crate::roles::worker::{held_up, setback_details, wait_out, Hold};
use crate::spec::config::{AgentConfig, Config};
use crate::spec::features::{Feature, FeatureId};
use crate::spec::role::Role;
use crate::state::notes;
use crate::state::run_state::{Outcome, RunState, Status};
use crate::state::worktree;

/// The tag of a passing verdict.
pub const PASS_TAG: &str = "<verdict>PASS</verdict>";
/// The tag of a failing verdict.
pub const FAIL_TAG: &str = "<verdict>FAIL</verdict>";
/// How much of the validator's answer is kept as its reasons, in characters.
pub const REASONS_CHARS: usize = 2000;

/// What the validator decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The feature meets its acceptance criteria.
    Pass {
        /// What the validator said.
        reasons: String,
    },
    /// It does not, or the verdict was missing or contradictory (the reason says which).
    Fail {
        /// Why, for the worker's next attempt.
        reasons: String,
    },
}

impl Verdict {
    /// The reasons, whatever the verdict.
    pub fn reasons(&self) -> &str {
        match self {
            Verdict::Pass { reasons } | Verdict::Fail { reasons } => reasons,
        }
    }
}

/// What a validator's run comes to: a verdict, or none for a reason that is not the feature's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Judged {
    /// It gave its verdict (no verdict, or a run that went wrong, is a fail).
    Verdict(Verdict),
    /// Ctrl-C / SIGTERM stopped it.
    Interrupted,
    /// The service held it up (a rate or usage limit, a service error), the `in_a_row`th time in
    /// a row: waited out and validated again, never a rejection that would cost the worker an
    /// iteration; past its waits, the run stops.
    HeldUp { hold: Hold, in_a_row: u32 },
    /// A budget ran out during it (what its end says).
    OverBudget(String),
}

impl Judged {
    /// The outcome of the attempt it ends.
    fn outcome(&self) -> Outcome {
        match self {
            Judged::Verdict(Verdict::Pass { .. }) => Outcome::Verified,
            Judged::Verdict(Verdict::Fail { .. }) => Outcome::Rejected,
            Judged::Interrupted => Outcome::Interrupted,
            Judged::HeldUp { hold, .. } => hold.setback.kind.outcome(),
            Judged::OverBudget(_) => Outcome::OverBudget,
        }
    }
}

/// Judges the validator's `run` over the attempts in `state` (this one begun): a verdict unless
/// an interrupt, the service or a budget stopped it. Waits in a row start again at 1 after the
/// run they ran out in (a new run gets as many waits again).
pub fn judge(state: &RunState, run: &AgentRun, config: &Config, now: Timestamp) -> Judged {
    let agent = config.agent_for(Role::Validator);
    if let End::Interrupted(_) = run.end {
        return Judged::Interrupted;
    }
    if let Some(setback) = held_up(run.end, run.output.setback.as_ref()) {
        let before = state
            .attempts()
            .iter()
            .rev()
            .skip(1)
            .take_while(|a| a.role == Role::Validator && a.outcome.is_setback())
            .count() as u32;
        let max_waits = Hold::new(setback, 1, config, now).max_waits;
        let in_a_row = before % (max_waits + 1) + 1;
        let hold = Hold::new(setback, in_a_row, config, now);
        return Judged::HeldUp { hold, in_a_row };
    }
    if run.end.outcome(false) == Outcome::OverBudget {
        return Judged::OverBudget(run.end.describe(Outcome::OverBudget, agent));
    }
    let output = &run.output;
    Judged::Verdict(decide(
        run.end,
        output.marker_counts[0],
        output.marker_counts[1],
        output.answer(),
        agent,
    ))
}

/// The verdict of an answer in which the pass tag appeared `passes` times and the fail tag
/// `fails` times, of an agent that ended as `end`.
pub fn decide(end: End, passes: u64, fails: u64, answer: &str, agent: &AgentConfig) -> Verdict {
    let said = reasons_of(answer);
    let with = |why: String| {
        if said.is_empty() {
            why
        } else {
            format!("{why}\n\n{said}")
        }
    };
    if !end.is_clean() {
        let how = end.in_words(agent);
        return Verdict::Fail {
            reasons: with(format!("the validator did not finish: {how}")),
        };
    }
    match (passes > 0, fails > 0) {
        (true, false) => Verdict::Pass { reasons: said },
        (false, true) => Verdict::Fail { reasons: said },
        (false, false) => Verdict::Fail {
            reasons: with("the validator gave no verdict".into()),
        },
        (true, true) => Verdict::Fail {
            reasons: with("the validator gave both verdicts".into()),
        },
    }
}

/// The validator's words around its verdict: the tags removed, the end kept.
fn reasons_of(answer: &str) -> String {
    let mut text = answer.replace(PASS_TAG, "").replace(FAIL_TAG, "");
    // Taking a tag out of `<verdict><verdict>FAIL</verdict>PASS</verdict>` leaves a whole one.
    while text.contains(PASS_TAG) || text.contains(FAIL_TAG) {
        text = text.replace(PASS_TAG, "").replace(FAIL_TAG, "");
    }
    tail_chars(text.trim(), REASONS_CHARS).trim().to_string()
}

/// The instructions of the validator's prompt (the harness's own words: they name the tags
/// without ever writing one whole).
fn instructions(iteration: u32, max_iterations: u32) -> String {
    format!(
        "## Your task\n\n\
         The worker says this feature is complete (after iteration {iteration} of {max_iterations}). \
         Check that claim independently, in the working directory: run the program, the tests, \
         the commands; do not trust the worker's words or a reading of the code alone. Every \
         acceptance criterion must hold.\n\n\
         Answer with your verdict on a line of its own: the tag `<verdict>`, then the word PASS or \
         the word FAIL, then `</verdict>`, written together with no spaces. Give one verdict \
         only. With FAIL, say precisely what does not hold and how you checked, so that the next \
         attempt can fix it. Do not change the workspace.\n\n\
         To leave a lesson for later, print a line that starts with `TRICK:`, `LESSON:`, \
         `DECISION:`, `AVOID:` or `FAIL:` followed by one sentence."
    )
}

/// `auto_curate: true`: a curator pass after the verdict, waiting behind a pass already running.
/// Memory upkeep never fails the feature: a failed pass is a warning.
fn auto_curate(place: &Place, config: &Config) {
    let pass = crate::roles::curator::run(&crate::roles::curator::Request {
        workdir: place.workdir.clone(),
        state: place.state.clone(),
        home: place.home.clone(),
        params: config.curator.clone(),
        dry_run: false,
        agent: false,
        wait: true,
        run_id: None,
        echo: false,
        path_var: place.path_var.clone(),
    });
    match pass {
        Ok(outcome) => {
            for warning in &outcome.report.warnings {
                eprintln!("validator: curator: warning: {warning}");
            }
        }
        Err(error) => match error.downcast_ref::<crate::roles::curator::run::Interrupted>() {
            // Nothing to look into: the next `./run.sh curate` makes the pass.
            Some(interrupted) => eprintln!("validator: the curator pass after the verdict was {interrupted}"),
            None => eprintln!(
                "validator: warning: the curator pass after the verdict failed: {error:#}\nhint: `./run.sh curate` shows why"
            ),
        },
    }
}

/// The validator's prompt, in its layers: L0, its role, its identity, the feature's spec, the
/// worker's claim (the last section of the notes: what it printed last), the task, memory.
pub fn validator_prompt(
    runtime: &RuntimeContext,
    role_prompt: &str,
    layers: &Layers,
    feature: &Feature,
    iteration: u32,
    max_iterations: u32,
) -> Prompt {
    let claim = layers
        .notes
        .as_deref()
        .and_then(|notes| notes.rfind("## Attempt ").map(|at| notes[at..].to_string()));
    let mut prompt = Prompt::new(runtime, role_prompt)
        .identity(Role::Validator, layers.identity.as_deref())
        .untrusted(&feature_spec(feature));
    if let Some(claim) = &claim {
        prompt = prompt.untrusted(&format!("## The worker's claim\n\n{}", claim.trim()));
    }
    prompt
        .harness_words(&instructions(iteration, max_iterations))
        .memory(layers.summary.as_deref())
}

/// What a validator's result.json says besides the run, who ran and when.
#[derive(Debug, Serialize)]
struct ValidatorResult<'a> {
    feature_id: &'a str,
    iteration: u32,
    outcome: Outcome,
    exit_code: Option<i32>,
    verdict: &'a str,
    reasons: &'a str,
    #[serde(flatten)]
    figures: OutputFigures,
}

/// Before the validator runs: only a provisional feature (one the worker says is complete) is
/// validated; a done one is reported as such, any other is an input error.
fn before_validation(state: &RunState) -> Result<Option<Transition>, InputError> {
    let id = &state.feature_id;
    match state.status {
        Status::Provisional => Ok(None),
        Status::Done => Ok(Some(Transition::new(
            Change::Keep,
            exit_codes::DONE,
            format!("{id} is already done"),
        ))),
        other => Err(InputError::new(format!(
            "{id} is {}: only a provisional feature (one the worker says is complete) is validated",
            other.as_str()
        ))),
    }
}

/// What the validator's run does to the feature: pass → landed (done, or unmerged when git
/// refuses the merge); fail → back to the worker (exit 10), or failed at the guardrail (exit 2);
/// interrupted → still provisional, validated on resume; held up by the service → still
/// provisional, validated again after the wait (exit 10), or, out of waits, stopped (exit 2);
/// a budget run out → still provisional, stopped (exit 2) until it is raised.
pub fn transition(state: &RunState, judged: &Judged) -> Transition {
    let id = &state.feature_id;
    let max = state.max_iterations;
    let verdict = match judged {
        Judged::Verdict(verdict) => verdict,
        Judged::Interrupted => {
            return Transition::new(
                Change::Keep,
                exit_codes::INTERRUPTED,
                format!("{id} validation interrupted; run it again to resume"),
            )
        }
        Judged::HeldUp { hold, in_a_row } if *in_a_row <= hold.max_waits => {
            return Transition::new(
                Change::Keep,
                exit_codes::CONTINUE,
                format!("{id}: {}", hold.wait_words("the validator", *in_a_row)),
            )
        }
        Judged::HeldUp { hold, .. } => {
            return Transition::new(
                Change::Note(hold.stop_reason()),
                exit_codes::GUARDRAIL,
                format!(
                    "{id} stopped: {}; it stays provisional, for the validator\nhint: run it again to resume: `./run.sh {id}`",
                    hold.stop_words("the validator")
                ),
            )
        }
        Judged::OverBudget(ended) => {
            return Transition::new(
                Change::Note(format!("the validator {ended}")),
                exit_codes::GUARDRAIL,
                format!("{id}: the validator {ended}; it stays provisional: raise the budget in config.yaml to go on"),
            )
        }
    };
    let said = verdict_line(id, verdict);
    match verdict {
        Verdict::Pass { .. } => Transition::new(Change::Land, exit_codes::DONE, said),
        Verdict::Fail { .. } if state.iteration_count >= max => Transition::new(
            Change::Fail(format!(
                "max_iterations ({max}) reached; the validator rejected the last attempt"
            )),
            exit_codes::GUARDRAIL,
            format!("{said}; max_iterations ({max}) is reached"),
        ),
        Verdict::Fail { .. } => Transition::new(
            Change::To(Status::Running),
            exit_codes::CONTINUE,
            format!("{said}; back to the worker"),
        ),
    }
}

/// The verdict in one line (raw.md's outcome line): `F-001 verified: <the first line of its
/// reasons>`.
fn verdict_line(id: &FeatureId, verdict: &Verdict) -> String {
    let what = match verdict {
        Verdict::Pass { .. } => "verified",
        Verdict::Fail { .. } => "rejected",
    };
    let reasons = verdict.reasons();
    let first = reasons.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    format!("{id} {what}: {first}")
        .trim_end_matches([' ', ':'])
        .to_string()
}

/// Runs the validator on a provisional feature: build the prompt → run the agent → decide the
/// verdict → transition → write (a rejection's reasons go to the notes, for the worker's next
/// attempt).
pub fn run_validator(request: &FeatureRequest) -> anyhow::Result<RoleReport> {
    // A feature with a worktree is checked there, where its work is, whatever `-C` says.
    let mut request = request.clone();
    let place = &request.place;
    request.place.workdir = worktree::workdir_of(&place.state, &request.feature, &place.workdir)?;
    let request = &request;
    let place = &request.place;
    let mut session = Session::open(&mut InputMemo::default(), request, Role::Validator)?;
    let before = before_validation(&session.state)?;
    let budget = match session.gate(before, &place.state, &mut Default::default()) {
        Ok(budget) => budget,
        Err(stop) => return session.stop_and_tell(stop, place),
    };

    // Build the prompt.
    let attempt = session.attempt(request, None);
    let prompt = validator_prompt(
        &attempt.runtime,
        &session.role_prompt,
        &session.layers(place)?,
        &session.inputs.feature,
        attempt.iteration,
        attempt.max_iterations,
    )
    .render();

    // Run the agent.
    session.begin(&attempt, &prompt)?;
    eprintln!(
        "validator: {} (run {})",
        session.state.feature_id, attempt.run_id
    );
    let markers = [PASS_TAG.to_string(), FAIL_TAG.to_string()];
    let run = session.run(&attempt, &prompt, &markers, &budget)?;
    let ended_at = time::now();

    // Decide, then transition. An interrupt, the service or a budget decides nothing: the
    // feature stays provisional.
    let judged = judge(&session.state, &run, session.config(), ended_at);
    let transition = transition(&session.state, &judged);

    // Write.
    let outcome = judged.outcome();
    let verdict = match judged {
        Judged::Verdict(verdict) => verdict,
        undecided => {
            let report =
                stop_undecided(&mut session, place, (&attempt, &run), transition, outcome)?;
            let fields = AttemptFields::new(
                attempt.run_id.as_str(),
                (attempt.iteration, attempt.max_iterations),
                None,
            );
            return match &undecided {
                Judged::HeldUp { hold, in_a_row } if report.exit_code == exit_codes::CONTINUE => {
                    let waited = (fields, hold, *in_a_row);
                    wait_out(report, &mut session, place, waited, "validating again")
                }
                // Out of waits, the report stands, and the hooks hear of it.
                Judged::HeldUp { hold, in_a_row } => {
                    let details = setback_details(hold, *in_a_row, false);
                    let message = report.message.lines().next().unwrap_or_default();
                    let payload = session
                        .scene(place)
                        .waits_exhausted(fields, details, message);
                    session.conclude(place, &[payload], report)
                }
                _ => Ok(report),
            };
        }
    };
    let feature = session.state.feature_id.clone();
    let said = verdict_line(&feature, &verdict);
    attempt.append_raw(&run, None, Some(&feature), (ended_at, &said))?;
    if let Verdict::Fail { reasons } = &verdict {
        notes::append(&place.state, &feature, &rejection_note(reasons, ended_at))
            .context("cannot write the notes")?;
    }
    session.record_end(&attempt, &run, outcome, ended_at);
    let report = session.apply(transition, &place.state, ended_at)?;
    let last = session.state.attempts().last();
    attempt.write_result(
        &run,
        ended_at,
        &ValidatorResult {
            feature_id: feature.as_str(),
            iteration: attempt.iteration,
            outcome,
            exit_code: last.and_then(|a| a.exit_code),
            verdict: if outcome == Outcome::Verified {
                "pass"
            } else {
                "fail"
            },
            reasons: verdict.reasons(),
            figures: OutputFigures::of(&run),
        },
    )?;
    session.save()?;
    session.remove_notes_if_done(&place.state)?;
    let message = report.message.clone();
    let status = session.status_payload(place, Status::Provisional, &message);
    let report = session.conclude(place, status.as_slice(), report)?;
    if session.config().auto_curate {
        auto_curate(place, session.config());
    }
    Ok(report)
}

/// Records the end of a validator's run that gave no verdict (`outcome`) and applies
/// `transition`: the feature stays provisional.
fn stop_undecided(
    session: &mut Session,
    place: &Place,
    (attempt, run): (&Attempt, &AgentRun),
    transition: Transition,
    outcome: Outcome,
) -> anyhow::Result<RoleReport> {
    session.record_end(attempt, run, outcome, time::now());
    let report = session.apply(transition, &place.state, time::now())?;
    session.save()?;
    Ok(report)
}

/// The notes' section of a rejection: the validator's reasons, for the worker's next attempt.
fn rejection_note(reasons: &str, time: Timestamp) -> String {
    format!(
        "## Validator verdict — fail ({})\n\n{}\n\n",
        time::format(time),
        if reasons.is_empty() {
            "(no reasons given)"
        } else {
            reasons
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::config::AgentSpec;

    fn agent() -> AgentConfig {
        AgentConfig::try_from(AgentSpec {
            command: Some(vec!["strict".into()]),
            timeout_secs: Some(60),
            ..AgentSpec::default()
        })
        .unwrap()
    }

    fn provisional(iteration_count: u32) -> RunState {
        let mut state = RunState::new(
            FeatureId::parse("F-1").unwrap(),
            3,
            "P",
            crate::base::time::now(),
        );
        state.iteration_count = iteration_count;
        state.status = Status::Provisional;
        state
    }

    #[test]
    fn a_pass_lands_the_feature() {
        let pass = Verdict::Pass {
            reasons: "\nAll criteria hold.\nChecked with curl.".into(),
        };
        let done = transition(&provisional(1), &Judged::Verdict(pass.clone()));
        assert_eq!(done.change, Change::Land);
        assert_eq!(done.exit_code, exit_codes::DONE);
        assert_eq!(done.message, "F-1 verified: All criteria hold.");
    }

    #[test]
    fn a_fail_goes_back_to_the_worker_or_fails_at_the_guardrail() {
        let fail = Verdict::Fail {
            reasons: "hello.txt is empty".into(),
        };
        let back = transition(&provisional(1), &Judged::Verdict(fail.clone()));
        assert_eq!(back.change, Change::To(Status::Running));
        assert_eq!(back.exit_code, exit_codes::CONTINUE);
        assert_eq!(
            back.message,
            "F-1 rejected: hello.txt is empty; back to the worker"
        );
        let failed = transition(&provisional(3), &Judged::Verdict(fail.clone()));
        assert_eq!(
            failed.change,
            Change::Fail(
                "max_iterations (3) reached; the validator rejected the last attempt".into()
            )
        );
        assert_eq!(failed.exit_code, exit_codes::GUARDRAIL);
        assert_eq!(
            failed.message,
            "F-1 rejected: hello.txt is empty; max_iterations (3) is reached"
        );
        let silent = Verdict::Fail {
            reasons: String::new(),
        };
        assert_eq!(
            transition(&provisional(1), &Judged::Verdict(silent.clone())).message,
            "F-1 rejected; back to the worker"
        );
    }

    #[test]
    fn the_service_or_a_budget_leaves_the_feature_provisional_never_rejected() {
        let config = Config::parse(
            "agent:\n  command: [a]\nservice_errors: {wait_secs: 30, max_waits: 2}\n",
            std::path::Path::new("config.yaml"),
        )
        .unwrap();
        let outage = crate::agent::Setback {
            kind: crate::agent::SetbackKind::Outage,
            text: "API Error: 529 Overloaded".into(),
        };
        let held = |in_a_row| Judged::HeldUp {
            hold: Hold::new(&outage, in_a_row, &config, crate::base::time::now()),
            in_a_row,
        };
        let wait = transition(&provisional(1), &held(2));
        assert_eq!(
            (wait.change, wait.exit_code),
            (Change::Keep, exit_codes::CONTINUE)
        );
        assert!(wait
            .message
            .contains("(wait 2 of 2, not counted as an iteration)"));
        let stop = transition(&provisional(1), &held(3));
        assert!(matches!(stop.change, Change::Note(ref why) if why.contains("after 2 waits")));
        assert_eq!(stop.exit_code, exit_codes::GUARDRAIL);
        let over = transition(
            &provisional(3),
            &Judged::OverBudget("stopped: the time budget ran out".into()),
        );
        assert!(matches!(over.change, Change::Note(_)));
        assert_eq!(over.exit_code, exit_codes::GUARDRAIL);
        assert!(over
            .message
            .ends_with("raise the budget in config.yaml to go on"));
    }

    #[test]
    fn an_interrupt_leaves_the_feature_provisional() {
        let interrupted = transition(&provisional(1), &Judged::Interrupted);
        assert_eq!(interrupted.change, Change::Keep);
        assert_eq!(interrupted.exit_code, exit_codes::INTERRUPTED);
        assert!(interrupted.message.ends_with("run it again to resume"));
    }

    #[test]
    fn only_a_provisional_feature_is_validated() {
        assert_eq!(before_validation(&provisional(1)).unwrap(), None);
        let mut state = provisional(1);
        state.status = Status::Done;
        let done = before_validation(&state).unwrap().unwrap();
        assert_eq!(
            (done.change, done.exit_code),
            (Change::Keep, exit_codes::DONE)
        );
        state.status = Status::Pending;
        assert!(before_validation(&state)
            .unwrap_err()
            .message
            .contains("F-1 is pending: only a provisional feature"));
    }

    #[test]
    fn one_clear_verdict_decides() {
        let pass = decide(
            End::Exited(0),
            1,
            0,
            "All criteria hold.\n<verdict>PASS</verdict>",
            &agent(),
        );
        assert_eq!(
            pass,
            Verdict::Pass {
                reasons: "All criteria hold.".into()
            }
        );
        let fail = decide(
            End::Exited(0),
            0,
            1,
            "<verdict>FAIL</verdict>\nhello.txt is empty",
            &agent(),
        );
        assert_eq!(
            fail,
            Verdict::Fail {
                reasons: "hello.txt is empty".into()
            }
        );
        // The same verdict twice is still one verdict.
        assert!(matches!(
            decide(End::Exited(0), 2, 0, "", &agent()),
            Verdict::Pass { .. }
        ));
    }

    #[test]
    fn no_verdict_or_both_is_a_fail_with_that_reason() {
        let none = decide(End::Exited(0), 0, 0, "looks fine to me", &agent());
        assert_eq!(
            none,
            Verdict::Fail {
                reasons: "the validator gave no verdict\n\nlooks fine to me".into()
            }
        );
        let both = decide(End::Exited(0), 1, 1, "", &agent());
        assert_eq!(
            both,
            Verdict::Fail {
                reasons: "the validator gave both verdicts".into()
            }
        );
    }

    #[test]
    fn a_validator_that_did_not_finish_never_passes() {
        let crashed = decide(End::Exited(3), 1, 0, "<verdict>PASS</verdict>", &agent());
        assert!(
            matches!(&crashed, Verdict::Fail { reasons } if reasons.contains("agent exited with code 3"))
        );
        let timed_out = decide(End::TimedOut, 1, 0, "", &agent());
        assert!(
            matches!(&timed_out, Verdict::Fail { reasons } if reasons.contains("timed out after 60 s"))
        );
    }

    #[test]
    fn the_instructions_never_hold_a_whole_tag() {
        let text = instructions(3, 10);
        assert!(!text.contains(PASS_TAG) && !text.contains(FAIL_TAG));
        assert!(
            text.contains("`<verdict>`, then the word PASS or the word FAIL, then `</verdict>`")
        );
    }

    #[test]
    fn reasons_are_bounded() {
        let long = format!("{}<verdict>FAIL</verdict>", "x".repeat(10_000));
        let Verdict::Fail { reasons } = decide(End::Exited(0), 0, 1, &long, &agent()) else {
            panic!("fail expected")
        };
        assert_eq!(reasons.chars().count(), REASONS_CHARS);
    }
}
