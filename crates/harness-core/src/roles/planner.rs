//! The planner: turns `mission.md` into features in features.yaml (`plan`), and re-breaks a
//! failed feature into smaller ones (`replan`). Its agent answers with a fenced yaml block; the
//! plan is checked ([`answer`]), merged without clobbering done features or hand edits
//! ([`merge`]), and written by editing the file's text in place ([`edit`]). A rejected plan
//! writes nothing to features.yaml.

pub mod answer;
pub mod edit;
pub mod merge;

use std::path::Path;

use anyhow::Context;
use serde::Serialize;

use crate::agent::{AgentRun, End};
use crate::base::atomic::write_atomic;
use crate::base::error::InputError;
use crate::base::exit_codes;
use crate::base::locks::{self, Lock};
use crate::base::time::{self, Timestamp};
use crate::roles::attempt::{Attempt, FeatureRequest, OutputFigures, Place, Session};
use crate::roles::inputs::{self, InputMemo};
use crate::roles::prompt::{feature_spec, Prompt};
use crate::spec::features::{list_ids, Feature, FeatureId, FeatureList};
use crate::spec::init;
use crate::spec::layout::{RunId, StateDir};
use crate::spec::role::Role;
use crate::state::budget::{self, Exceeded};
use crate::state::memory;
use crate::state::run_state::{self, Outcome, RunState, States, Status};

use answer::{Rejection, Scope};
use edit::Layout;
use merge::{Decision, Merge, Placement, PlanRecord, Progress};

/// A `planner plan` invocation.
#[derive(Debug, Clone)]
pub struct PlanRequest {
    pub place: Place,
    /// The run id given by run.sh; generated when absent.
    pub run_id: Option<RunId>,
}

/// What a planner invocation ended with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanReport {
    /// The exit code: 0 merged, 1 rejected, 130 interrupted.
    pub exit_code: u8,
    /// One line for the user (also the outcome line in raw.md).
    pub message: String,
    /// What happened to each planned feature, one line each (for stdout).
    pub details: Vec<String>,
}

/// Plans the mission: runs the planner's agent on mission.md and merges its plan into
/// features.yaml. Holds the plan lock throughout (exit 75 if another planner runs).
pub fn run_plan(request: &PlanRequest) -> anyhow::Result<PlanReport> {
    let place = &request.place;
    let state_dir = &place.state;
    let (config, program) = inputs::check_mission_inputs(
        &place.workdir,
        state_dir,
        Role::Planner,
        place.path_var.as_deref(),
    )?;
    let mission = read_mission(state_dir)?.ok_or_else(|| {
        InputError::in_file(&state_dir.mission(), "the mission is empty")
            .with_hint("say in mission.md what the project should become, then plan again")
    })?;
    let (features_text, features) = read_features(state_dir)?;
    // A file the planner could not edit fails now, before an agent is paid to plan.
    Layout::locate(&features_text, &state_dir.features())?;
    let role_prompt = inputs::read_role_prompt(&place.home, Role::Planner)?;
    let attempt = Attempt::on_mission(
        place,
        Role::Planner,
        (&config, program),
        request.run_id.clone(),
        &state_dir.plans_dir(),
        (0, config.max_iterations),
    );
    let _lock = plan_lock(state_dir, "planner plan", attempt.started_at)?;
    init::keep_gitignore_complete(state_dir, "planner");
    let budget = match budget::mission_left(&config.budgets, state_dir) {
        Ok(left) => left,
        Err(exceeded) => return Ok(over_budget("planning", &exceeded, state_dir)),
    };

    // Build the prompt.
    let states = run_state::load_states(state_dir, &features)?;
    let is_locked = |id: &FeatureId| run_state::is_being_run(state_dir, id);
    let layers = inputs::read_layers(&place.home, state_dir, None, Role::Planner)?;
    let prompt = Prompt::new(&attempt.runtime, &role_prompt)
        .identity(Role::Planner, layers.identity.as_deref())
        .untrusted(&format!("## Mission\n\n{}", mission.trim()))
        .untrusted(&current_features(&features, &states, is_locked))
        .harness_words(&answer_instructions(None))
        .memory(layers.summary.as_deref())
        .render();

    // Run the agent, decide, write.
    attempt.save_prompt(&prompt)?;
    eprintln!("planner: planning the mission (run {})", attempt.run_id);
    let run = attempt.run(&prompt, &[], &budget)?;
    let concluded = conclude(state_dir, &attempt, &run, Target::Mission)?;
    record(&attempt, &run, &concluded, None)?;
    Ok(concluded.report)
}

/// Re-breaks a failed (or blocked) feature into smaller ones, `<FEATURE>.1`, `<FEATURE>.2`…,
/// inserted right after it in features.yaml; the feature is then superseded by them. Its notes
/// stay. Holds the feature's locks and the plan lock.
pub fn run_replan(request: &FeatureRequest) -> anyhow::Result<PlanReport> {
    let place = &request.place;
    let state_dir = &place.state;
    let mut session = Session::open(&mut InputMemo::default(), request, Role::Planner)?;
    let feature = session.inputs.feature.clone();
    let id = &feature.id;
    check_replannable(session.loaded.as_ref(), id)?;
    let (features_text, features) = read_features(state_dir)?;
    Layout::locate(&features_text, &state_dir.features())?;
    let _lock = plan_lock(
        state_dir,
        &format!("planner replan {id}"),
        session.started_at,
    )?;
    init::keep_gitignore_complete(state_dir, "planner");

    let budget = match budget::mission_left(&session.config().budgets, state_dir) {
        Ok(left) => left,
        Err(exceeded) => {
            return Ok(over_budget(
                &format!("re-breaking {id}"),
                &exceeded,
                state_dir,
            ))
        }
    };

    // Build the prompt.
    let attempt = session.attempt(request, None);
    let layers = session.layers(place)?;
    let states = run_state::load_states(state_dir, &features)?;
    let is_locked = |other: &FeatureId| other != id && run_state::is_being_run(state_dir, other);
    let mut prompt = Prompt::new(&attempt.runtime, &session.role_prompt)
        .identity(Role::Planner, layers.identity.as_deref());
    if let Some(mission) = read_mission(state_dir)? {
        prompt = prompt.untrusted(&format!("## Mission\n\n{}", mission.trim()));
    }
    let prompt = prompt
        .untrusted(&current_features(&features, &states, is_locked))
        .untrusted(&failed_feature(&feature, &session.state))
        .notes(layers.notes.as_deref())
        .harness_words(&answer_instructions(Some(&feature)))
        .memory(layers.summary.as_deref())
        .render();

    // Run the agent, decide, write.
    session.begin(&attempt, &prompt)?;
    eprintln!("planner: re-breaking {id} (run {})", attempt.run_id);
    let run = session.run(&attempt, &prompt, &[], &budget)?;
    let concluded = conclude(state_dir, &attempt, &run, Target::Feature(id));
    let outcome = match &concluded {
        Ok(concluded) => concluded.outcome,
        // features.yaml changed under the run so that the plan cannot be merged.
        Err(_) => Outcome::Rejected,
    };
    session.record_end(&attempt, &run, outcome, time::now());
    if let Ok(Concluded {
        merge: Some(merge), ..
    }) = &concluded
    {
        session.state.superseded_by = merge.decisions.iter().map(|(id, _)| id.clone()).collect();
    }
    session.save()?;
    let concluded = concluded?;
    record(&attempt, &run, &concluded, Some(id))?;
    Ok(concluded.report)
}

/// A planner that does not run: the mission budget is used up (exit 2, naming it).
fn over_budget(task: &str, exceeded: &Exceeded, state_dir: &StateDir) -> PlanReport {
    PlanReport {
        exit_code: exit_codes::GUARDRAIL,
        message: format!(
            "{task} stopped before its agent ran: {exceeded}\nhint: raise it under `budgets:` in {}",
            state_dir.config().display()
        ),
        details: Vec::new(),
    }
}

/// mission.md, if it has content.
fn read_mission(state_dir: &StateDir) -> anyhow::Result<Option<String>> {
    memory::read_memory_layer(&state_dir.mission())
        .with_context(|| format!("cannot read {}", state_dir.mission().display()))
}

/// Only a failed or blocked feature that was not re-broken already is re-broken.
fn check_replannable(state: Option<&RunState>, id: &FeatureId) -> Result<(), InputError> {
    let hint = "only a failed or blocked feature is re-broken; see `./run.sh status`";
    let Some(state) = state else {
        return Err(InputError::new(format!("{id} has never run")).with_hint(hint));
    };
    if !state.superseded_by.is_empty() {
        return Err(InputError::new(format!(
            "{id} was already re-broken into {}",
            list_ids(&state.superseded_by)
        ))
        .with_hint("re-break one of those instead, if it failed"));
    }
    match state.status {
        Status::Failed | Status::Blocked => Ok(()),
        other => Err(InputError::new(format!("{id} is {}", other.as_str())).with_hint(hint)),
    }
}

/// features.yaml's text and its features; a missing file is an empty list (the plan creates it).
fn read_features(state_dir: &StateDir) -> Result<(String, FeatureList), InputError> {
    let path = state_dir.features();
    if !crate::base::fs::exists(&path) {
        return Ok((String::new(), FeatureList::default()));
    }
    let text = crate::spec::config::read_input(&path)?;
    let list = FeatureList::parse(&text, &path)?;
    Ok((text, list))
}

/// The plan lock: one planner edits features.yaml at a time (exit 75 otherwise).
fn plan_lock(state_dir: &StateDir, program: &str, now: Timestamp) -> anyhow::Result<Lock> {
    let holder = locks::describe_holder(std::process::id(), program, &time::format(now));
    Lock::try_acquire(&state_dir.plan_lock(), "the planner", &holder)
}

/// The `## Current features` section: each feature as features.yaml holds it, with its status
/// in a comment. Indented as a code block rather than fenced, so that a prompt echoed back can
/// never be taken for a plan.
pub fn current_features(
    features: &FeatureList,
    states: &States,
    is_locked: impl Fn(&FeatureId) -> bool,
) -> String {
    let mut text = String::from("## Current features (.harness/features.yaml)\n\n");
    if features.features.is_empty() {
        text.push_str("There are none yet: this is the first plan of the mission.\n");
        return text;
    }
    text.push_str(
        "Each with its status. Done, started and hand-edited features are kept as they are \
         whatever you answer; features you leave out are kept too.\n\n    features:\n",
    );
    for feature in &features.features {
        let progress = Progress::of(states.get(&feature.id), is_locked(&feature.id));
        let status = match &progress {
            Progress::NotStarted => "not started".to_string(),
            Progress::Done => "done".to_string(),
            Progress::Superseded(by) => format!("superseded by {}", list_ids(by)),
            Progress::Started(status) => status.as_str().to_string(),
        };
        let item = edit::render_item(feature, 2, "\n");
        let mut lines = item.lines();
        if let Some(first) = lines.next() {
            text.push_str(&format!("    {first}  # status: {status}\n"));
        }
        for line in lines {
            text.push_str(if line.is_empty() { "" } else { "    " });
            text.push_str(line);
            text.push('\n');
        }
    }
    text
}

/// The section on the feature being re-broken: its spec, how it ended, and why.
fn failed_feature(feature: &Feature, state: &RunState) -> String {
    format!(
        "## The feature to re-break\n\n{}\nStatus: {} after {} of {} iterations{}.",
        feature_spec(feature),
        state.status.as_str(),
        state.iteration_count,
        state.max_iterations,
        state
            .reason
            .as_deref()
            .map(|r| format!(" ({})", r.trim()))
            .unwrap_or_default()
    )
}

/// How to answer (the harness's own words): one fenced yaml block in the schema of
/// features.yaml; for a re-breakdown, the naming and dependency rules of the pieces.
fn answer_instructions(parent: Option<&Feature>) -> String {
    let task = match parent {
        None => "## Your answer\n\n\
                 Break the mission into features: each small enough for one agent to finish in \
                 a few hours, each with acceptance criteria that can be checked by running \
                 something. Keep the id of a current feature when you mean the same feature; give \
                 new features new ids that continue the numbering. List the features that need no \
                 change or leave them out, as you like."
            .to_string(),
        Some(parent) => {
            let id = &parent.id;
            let deps = if parent.depends_on.is_empty() {
                "on each other only".to_string()
            } else {
                format!(
                    "on each other or on {}'s own dependencies ({})",
                    id,
                    list_ids(&parent.depends_on)
                )
            };
            format!(
                "## Your answer\n\n\
                 Feature {id} could not be finished as it stands. Break it into smaller features \
                 that together deliver it, in the order they should be built, learning from the \
                 notes above what went wrong. Name them {id}.1, {id}.2, and so on; they may \
                 depend {deps}. List only these new features. Work already in the workspace \
                 stays: a piece may build on it."
            )
        }
    };
    format!(
        "{task}\n\n\
         Answer with ONE fenced code block: a line of three backticks followed by the word yaml, \
         then a `features:` list in the schema of features.yaml, then a line of three backticks. \
         Only the last such block of your answer is read. Each feature has an `id` (letters, \
         digits, '-', '_' and '.'), a non-empty `title`, a `description` in prose, `acceptance` \
         (at least one criterion) and `depends_on` (ids of features that must be done first; no \
         cycles). For example (without the indentation):\n\n\
         \x20   features:\n\
         \x20     - id: F-001\n\
         \x20       title: Sign-up form\n\
         \x20       description: A form that creates an account from an email and a password.\n\
         \x20       acceptance:\n\
         \x20         - A new user can sign up with an email and a password.\n\
         \x20       depends_on: []\n\n\
         To leave a lesson for later, print a line that starts with `TRICK:`, `LESSON:`, \
         `DECISION:`, `AVOID:` or `FAIL:` followed by one sentence."
    )
}

/// What the plan is for.
#[derive(Debug, Clone, Copy)]
enum Target<'a> {
    /// The whole mission (`plan`).
    Mission,
    /// The re-breakdown of this feature (`replan`).
    Feature(&'a FeatureId),
}

/// What the planner decided on its agent's answer.
enum Planned {
    /// Interrupted (how, in words): nothing is decided.
    Interrupted(String),
    /// The answer is not taken: the attempt's outcome, and why.
    Rejected(Outcome, Rejection),
    /// The plan, merged into features.yaml as it is now; plan.json as it was.
    Merged(Merge, PlanRecord),
}

/// How an invocation ended: the attempt's outcome, the merge if the plan was taken, the report.
struct Concluded {
    outcome: Outcome,
    merge: Option<Merge>,
    rejection: Option<String>,
    report: PlanReport,
}

/// Decides on the agent's answer, writes the plan it accepts (features.yaml and plan.json), and
/// says how the invocation ended.
fn conclude(
    state_dir: &StateDir,
    attempt: &Attempt,
    run: &AgentRun,
    target: Target,
) -> anyhow::Result<Concluded> {
    let planned = decide(state_dir, attempt, run, target)?;
    if let Planned::Merged(merged, record) = &planned {
        write_plan(state_dir, merged, record)?;
    }
    Ok(transition(
        planned,
        target,
        &attempt.run_dir.join("output.log"),
    ))
}

/// Reads the plan from the agent's answer and checks it against features.yaml as it is now (the
/// user may have edited it during the run), merged without clobbering done features or hand
/// edits.
fn decide(
    state_dir: &StateDir,
    attempt: &Attempt,
    run: &AgentRun,
    target: Target,
) -> anyhow::Result<Planned> {
    match run.end {
        end @ End::Interrupted(_) => {
            let how = end.describe(Outcome::Interrupted, attempt.agent());
            return Ok(Planned::Interrupted(how));
        }
        End::Exited(0) => {}
        end => {
            let how = end.in_words(attempt.agent());
            let why = format!("the planner's agent did not finish: {how}");
            return Ok(Planned::Rejected(end.outcome(false), Rejection(why)));
        }
    }
    let answer = attempt.answer(run)?;
    let features_path = state_dir.features();
    let (text, current) = read_features(state_dir)?;
    let record = PlanRecord::load(&state_dir.plan_record())?;
    let states = run_state::load_states(state_dir, &current)?;
    let (scope, placement) = match target {
        Target::Mission => (Scope::Mission, Placement::End),
        Target::Feature(id) => (
            Scope::Rebreak {
                parent: current.require(id, &features_path)?,
            },
            Placement::After(id),
        ),
    };
    let planned = match answer::read_plan(&answer, &current, scope) {
        Ok(planned) => planned,
        Err(rejection) => return Ok(Planned::Rejected(Outcome::Rejected, rejection)),
    };
    let progress =
        |id: &FeatureId| Progress::of(states.get(id), run_state::is_being_run(state_dir, id));
    let merged = merge::merge(
        &text,
        &current,
        &features_path,
        &planned,
        &record,
        progress,
        placement,
    )?;
    if let Some(cycle) = merged.cycle() {
        let why = format!(
            "dependency cycle {} (with the features that are kept)",
            crate::spec::features::format_cycle(&cycle)
        );
        return Ok(Planned::Rejected(Outcome::Rejected, Rejection(why)));
    }
    Ok(Planned::Merged(merged, record))
}

/// What the planner's decision comes to: the attempt's outcome, the exit code and the message
/// (0 merged, 1 rejected, 130 interrupted); a rejection points at the agent's `output_log`.
fn transition(planned: Planned, target: Target, output_log: &Path) -> Concluded {
    let (outcome, merge, rejection, report) = match planned {
        Planned::Interrupted(how) => {
            let task = match target {
                Target::Mission => "planning".to_string(),
                Target::Feature(id) => format!("re-breaking {id}"),
            };
            let report = PlanReport {
                exit_code: exit_codes::INTERRUPTED,
                message: format!("{task}: {how}; nothing was changed"),
                details: Vec::new(),
            };
            (Outcome::Interrupted, None, None, report)
        }
        Planned::Rejected(outcome, rejection) => {
            let report = PlanReport {
                exit_code: exit_codes::USAGE,
                message: rejection.to_string(),
                details: vec![format!(
                    "features.yaml was not changed; the agent's answer is in {}",
                    output_log.display()
                )],
            };
            (outcome, None, Some(rejection.0), report)
        }
        Planned::Merged(merged, _) => {
            let message = match target {
                Target::Mission => format!("planned {}", merged.counts()),
                Target::Feature(id) => format!(
                    "re-broke {id} into {}",
                    list_ids(merged.decisions.iter().map(|(id, _)| id))
                ),
            };
            let report = PlanReport {
                exit_code: exit_codes::DONE,
                message,
                details: merged.report_lines(),
            };
            (Outcome::Completed, Some(merged), None, report)
        }
    };
    Concluded {
        outcome,
        merge,
        rejection,
        report,
    }
}

/// Writes the accepted plan: features.yaml (edited in place) and plan.json, each only if it
/// changes.
fn write_plan(state_dir: &StateDir, merged: &Merge, record: &PlanRecord) -> anyhow::Result<()> {
    let features_path = state_dir.features();
    if merged.changes_file() {
        write_atomic(&features_path, merged.text.as_bytes())
            .with_context(|| format!("cannot write {}", features_path.display()))?;
    }
    let record_path = state_dir.plan_record();
    if merged.record != *record {
        merged
            .record
            .save(&record_path)
            .with_context(|| format!("cannot write {}", record_path.display()))?;
    }
    Ok(())
}

/// Records a planner invocation: raw.md's lines (its agent's memory entries and its outcome
/// line) and result.json.
fn record(
    attempt: &Attempt,
    run: &AgentRun,
    concluded: &Concluded,
    feature: Option<&FeatureId>,
) -> anyhow::Result<()> {
    let ended_at = time::now();
    attempt.append_raw(run, None, feature, (ended_at, &concluded.report.message))?;
    attempt.write_result(run, ended_at, &planner_result(run, concluded, feature))
}

/// What a planner's result.json says besides the run, who ran and when.
#[derive(Debug, Serialize)]
struct PlannerResult<'a> {
    feature_id: Option<&'a str>,
    outcome: Outcome,
    exit_code: Option<i32>,
    signal: Option<i32>,
    accepted: bool,
    rejection: Option<&'a str>,
    features: Vec<DecisionRecord<'a>>,
    #[serde(flatten)]
    figures: OutputFigures,
    log_error: Option<&'a str>,
}

/// What happened to one planned feature, in result.json.
#[derive(Debug, Serialize)]
struct DecisionRecord<'a> {
    id: &'a str,
    decision: &'static str,
    reason: Option<String>,
}

/// result.json of a planner invocation.
fn planner_result<'a>(
    run: &'a AgentRun,
    concluded: &'a Concluded,
    feature: Option<&'a FeatureId>,
) -> PlannerResult<'a> {
    let features = concluded
        .merge
        .iter()
        .flat_map(|merge| &merge.decisions)
        .map(|(id, decision)| {
            let (decision, reason) = match decision {
                Decision::Add => ("added", None),
                Decision::Replace => ("updated", None),
                Decision::Unchanged => ("unchanged", None),
                Decision::Keep(reason) => ("kept", Some(reason.to_string())),
            };
            DecisionRecord {
                id: id.as_str(),
                decision,
                reason,
            }
        })
        .collect();
    let (exit_code, signal) = run.exit_status();
    PlannerResult {
        feature_id: feature.map(FeatureId::as_str),
        outcome: concluded.outcome,
        exit_code,
        signal,
        accepted: concluded.merge.is_some(),
        rejection: concluded.rejection.as_deref(),
        features,
        figures: OutputFigures::of(run),
        log_error: run.log_error.as_deref(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::testing::id;

    #[test]
    fn the_current_features_show_their_status_and_hold_no_fence() {
        let features = FeatureList::parse(
            "features:\n  - id: F-1\n    title: One\n    acceptance: [a]\n  - id: F-2\n    title: Two\n    description: |\n      two\n      lines\n",
            Path::new("features.yaml"),
        )
        .unwrap();
        let mut states = States::new();
        let mut done = RunState::new(id("F-1"), 10, "P", time::now());
        done.status = Status::Done;
        states.insert(id("F-1"), done);
        let text = current_features(&features, &states, |_| false);
        assert!(
            text.contains("    features:\n      - id: F-1  # status: done\n        title: One\n"),
            "{text}"
        );
        assert!(
            text.contains("      - id: F-2  # status: not started\n"),
            "{text}"
        );
        assert!(
            text.contains("        description: |\n          two\n          lines\n"),
            "{text}"
        );
        assert!(!text.contains("```"));
        assert!(
            current_features(&FeatureList::default(), &states, |_| false).contains("first plan")
        );
    }

    #[test]
    fn instructions_explain_the_block_without_writing_one() {
        for parent in [
            None,
            Some(&Feature {
                id: id("F-7"),
                title: "Big".into(),
                description: String::new(),
                acceptance: vec![],
                depends_on: vec![id("F-2")],
            }),
        ] {
            let text = answer_instructions(parent);
            assert!(answer::yaml_blocks(&text).is_empty());
            assert!(text.contains("followed by the word yaml"));
            if parent.is_some() {
                assert!(text.contains("Name them F-7.1, F-7.2"), "{text}");
                assert!(text.contains("F-7's own dependencies (F-2)"), "{text}");
            }
        }
    }

    #[test]
    fn a_plan_is_merged_rejected_or_interrupted() {
        let log = Path::new("plans/r1/output.log");
        let rejected = transition(
            Planned::Rejected(Outcome::Rejected, Rejection("no yaml block".into())),
            Target::Mission,
            log,
        );
        assert_eq!(rejected.outcome, Outcome::Rejected);
        assert_eq!(rejected.report.exit_code, exit_codes::USAGE);
        assert_eq!(rejected.rejection.as_deref(), Some("no yaml block"));
        assert!(rejected.merge.is_none());
        assert_eq!(
            rejected.report.details,
            ["features.yaml was not changed; the agent's answer is in plans/r1/output.log"]
        );
        let f7 = id("F-7");
        let interrupted = transition(
            Planned::Interrupted("interrupted by SIGINT".into()),
            Target::Feature(&f7),
            log,
        );
        assert_eq!(interrupted.outcome, Outcome::Interrupted);
        assert_eq!(interrupted.report.exit_code, exit_codes::INTERRUPTED);
        assert_eq!(
            interrupted.report.message,
            "re-breaking F-7: interrupted by SIGINT; nothing was changed"
        );
    }

    #[test]
    fn only_failed_or_blocked_features_are_re_broken() {
        let now = time::now();
        let mut state = RunState::new(id("F-7"), 10, "P", now);
        assert!(check_replannable(None, &id("F-7"))
            .unwrap_err()
            .message
            .contains("never run"));
        assert!(check_replannable(Some(&state), &id("F-7"))
            .unwrap_err()
            .message
            .contains("F-7 is pending"));
        state.status = Status::Done;
        assert!(check_replannable(Some(&state), &id("F-7")).is_err());
        state.status = Status::Blocked;
        assert!(check_replannable(Some(&state), &id("F-7")).is_ok());
        state.status = Status::Failed;
        assert!(check_replannable(Some(&state), &id("F-7")).is_ok());
        state.superseded_by = vec![id("F-7.1")];
        assert!(check_replannable(Some(&state), &id("F-7"))
            .unwrap_err()
            .message
            .contains("already re-broken into F-7.1"));
    }
}
