//! `./run.sh all`: the mission's coordinator. It hands every ready feature to an executor
//! ([`crate::mission::executor`]), up to `--parallel N` at a time, and asks again whenever a run
//! ends — by the rules of `planner next` ([`schedule::next`]: dependency order, a failed
//! dependency blocks its dependents, a feature being run is left alone) and never handing a
//! feature over twice in one `all` — then reports the mission's outcome ([`schedule::outcome`]).
//! The same loop serves every executor; only what an interrupt does to the runs differs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::base::error::InputError;
use crate::base::exit_codes;
use crate::base::git::{self, Head};
use crate::base::locks::{self, Lock};
use crate::base::signals;
use crate::base::time;
use crate::mission::executor::local::Local;
use crate::mission::executor::slurm::Slurm;
use crate::mission::executor::{Executor, FeatureCommand, Job};
use crate::mission::schedule::{self, DependencyUpdate};
use crate::mission::status::BoardStatus;
use crate::roles::lifecycle::events::Scene;
use crate::roles::lifecycle::hooks::Emitter;
use crate::spec::config::{Config, Event, ExecutorKind};
use crate::spec::features::{FeatureId, FeatureList};
use crate::spec::layout::StateDir;
use crate::state::run_state::RunState;

/// What `./run.sh all` was asked.
#[derive(Debug, Clone)]
pub struct Request {
    /// The project (absolute).
    pub workdir: PathBuf,
    /// Its state directory.
    pub state: StateDir,
    /// run.sh (absolute), which runs each feature.
    pub run_sh: PathBuf,
    /// `--executor`, which overrides config.yaml's `executor.kind`.
    pub executor: Option<ExecutorKind>,
    /// `--parallel N` [default: 1 locally, every ready feature on a cluster].
    pub parallel: Option<usize>,
    /// `--max-iterations N`, passed on to every feature.
    pub max_iterations: Option<u32>,
    /// `--quiet`.
    pub quiet: bool,
}

/// Runs the mission; its exit code: the outcome's (0, 2, 3), or 130 when interrupted.
pub fn run(request: &Request) -> anyhow::Result<u8> {
    request.state.require_initialised()?;
    let config = Config::load(&request.state.config())?;
    let kind = request.executor.unwrap_or(config.executor.kind);
    let parallel = request.parallel.unwrap_or(match kind {
        ExecutorKind::Local => 1,
        ExecutorKind::Slurm => usize::MAX,
    });
    // Runs side by side, or on other machines while the project is worked on, each get their
    // own git worktree.
    let worktree = kind == ExecutorKind::Slurm || parallel > 1;
    if worktree {
        check_git(&request.workdir, kind, parallel)?;
    }
    let command = FeatureCommand {
        run_sh: request.run_sh.clone(),
        workdir: request.workdir.clone(),
        quiet: request.quiet || worktree,
        worktree,
        max_iterations: request.max_iterations,
    };
    let path_var = std::env::var_os("PATH");
    let hooks = Emitter {
        hooks: &config.hooks,
        workdir: &request.workdir,
        state: &request.state,
        path_var: path_var.as_deref(),
        kill_grace: config.agent.kill_grace(),
        who: "planner",
    };
    let hooks = Some(&hooks);
    match kind {
        ExecutorKind::Local => coordinate(
            &request.workdir,
            &request.state,
            &mut Local::new(command),
            (parallel, request.max_iterations),
            hooks,
        ),
        ExecutorKind::Slurm => {
            let holder = locks::describe_holder(
                std::process::id(),
                "./run.sh all --executor slurm",
                &time::format(time::now()),
            );
            let _lock = Lock::try_acquire(
                &request.state.coordinator_lock(),
                "the mission's coordinator",
                &holder,
            )?;
            let mut slurm = Slurm::new(request.state.clone(), command, &config.executor);
            coordinate(
                &request.workdir,
                &request.state,
                &mut slurm,
                (parallel, request.max_iterations),
                hooks,
            )
        }
    }
}

/// Worktrees need a repository with a commit: each feature's starts from HEAD.
fn check_git(workdir: &Path, kind: ExecutorKind, parallel: usize) -> Result<(), InputError> {
    let why = match kind {
        ExecutorKind::Local => format!(
            "--parallel {parallel} needs the project to be a git repository with a commit: each parallel feature works in its own git worktree, made from HEAD"
        ),
        ExecutorKind::Slurm => "the slurm executor needs the project to be a git repository with a commit: each feature's job works in its own git worktree, made from HEAD".to_string(),
    };
    let instead = match kind {
        ExecutorKind::Local => "run the features one at a time (no --parallel), or ",
        ExecutorKind::Slurm => "",
    };
    match git::head(workdir) {
        Head::NotARepo => Err(InputError::new(why)
            .with_hint(format!("{instead}`git init` the project and commit it"))),
        Head::Unborn => Err(
            InputError::new(format!("{why}, and it has none yet")).with_hint(format!(
                "{instead}commit the project first (`git add -A && git commit -m start`)"
            )),
        ),
        Head::At(_) => Ok(()),
    }
}

/// The runs in flight, the features handed over in this `all`, and those it found another
/// process running (said once each).
#[derive(Debug, Default)]
struct Flight {
    jobs: Vec<Job>,
    tried: Vec<FeatureId>,
    held: Vec<FeatureId>,
}

/// How many more runs may start with `in_flight` running under a cap of `parallel`.
pub fn room(parallel: usize, in_flight: usize) -> usize {
    parallel.saturating_sub(in_flight)
}

/// The mission loop over `executor`, with up to `parallel` runs at once, `max_iterations` the
/// guardrail `--max-iterations` gives every feature; see [`run`]. `hooks` hear of the features
/// blocked by a dependency and of the mission's end.
pub fn coordinate(
    workdir: &std::path::Path,
    state: &StateDir,
    executor: &mut dyn Executor,
    (parallel, max_iterations): (usize, Option<u32>),
    hooks: Option<&Emitter>,
) -> anyhow::Result<u8> {
    let mut flight = Flight::default();
    let result = drive(
        state,
        executor,
        (parallel, max_iterations),
        &mut flight,
        hooks,
    );
    let interrupted = match result {
        Ok(interrupted) => interrupted,
        Err(error) => {
            leave(executor, &mut flight);
            return Err(error);
        }
    };
    if interrupted {
        leave(executor, &mut flight);
        return Ok(exit_codes::INTERRUPTED);
    }
    let outcome = schedule::outcome(workdir, state)?;
    outcome.tell();
    if let Some(hooks) = hooks {
        let counts = status_counts(state)?;
        let scene = scene(hooks, None);
        hooks.emit(&[scene.mission_done(outcome.exit_code, counts, &outcome.line)]);
    }
    Ok(outcome.exit_code)
}

/// Where the coordinator's events happen: the project, now, on `feature` or the mission.
fn scene<'a>(hooks: &Emitter<'a>, feature: Option<&'a str>) -> Scene<'a> {
    Scene {
        feature_id: feature,
        workdir: hooks.workdir,
        state_dir: hooks.state.root(),
        time: time::now(),
    }
}

/// How many features stand in each status, as the board words them.
fn status_counts(state: &StateDir) -> anyhow::Result<BTreeMap<String, usize>> {
    let features = FeatureList::load(&state.features())?;
    let states = schedule::load_states(state, &features)?;
    let mut counts = BTreeMap::new();
    for feature in &features.features {
        let status = BoardStatus::of(states.get(&feature.id), false);
        *counts.entry(status.as_str().to_string()).or_insert(0) += 1;
    }
    Ok(counts)
}

/// The hooks hear of each feature `updates` blocked (a dependency failed or is blocked).
fn tell_blocked(
    state: &StateDir,
    updates: &[DependencyUpdate],
    hooks: &Emitter,
) -> anyhow::Result<()> {
    for update in updates {
        let DependencyUpdate::Block(id, reason) = update else {
            continue;
        };
        if let Some(blocked) = RunState::load(&state.run_state(id), id)? {
            let message = format!("{id} is blocked: {reason}");
            let payload =
                scene(hooks, Some(id.as_str())).feature(Event::FeatureBlocked, &blocked, &message);
            hooks.emit(&[payload]);
        }
    }
    Ok(())
}

/// Hands features over and waits for their runs until nothing is left to run; whether the
/// mission was interrupted (an interrupt, or a run that ended interrupted and stops it).
fn drive(
    state: &StateDir,
    executor: &mut dyn Executor,
    (parallel, max_iterations): (usize, Option<u32>),
    flight: &mut Flight,
    hooks: Option<&Emitter>,
) -> anyhow::Result<bool> {
    for job in executor.find()? {
        eprintln!(
            "== {}: re-attached to {}",
            job.feature,
            executor.describe(&job)
        );
        flight.tried.push(job.feature.clone());
        flight.jobs.push(job);
    }
    loop {
        if signals::received().is_some() {
            return Ok(true);
        }
        let room = room(parallel, flight.jobs.len());
        if room > 0 {
            let next = schedule::next(state, (&flight.tried, max_iterations), room, time::now())?;
            next.tell_changes();
            for (feature, holder) in next.held {
                if !flight.held.contains(&feature) {
                    eprintln!("== {feature} is already being run by {holder}: left to it");
                    flight.held.push(feature);
                }
            }
            if let Some(hooks) = hooks {
                tell_blocked(state, &next.updates, hooks)?;
            }
            for feature in next.ready {
                eprintln!("\n== {feature}");
                flight.tried.push(feature.clone());
                let job = executor.submit(&feature)?;
                flight.jobs.push(job);
            }
        }
        if flight.jobs.is_empty() {
            return Ok(false);
        }
        for ended in executor.wait(&flight.jobs, true)? {
            flight.jobs.retain(|job| *job != ended.job);
            eprintln!("== {} ended ({})", ended.job.feature, ended.how);
            if ended.stops_mission {
                return Ok(true);
            }
        }
    }
}

/// The coordinator stops with runs in flight: a cluster's jobs go on (a coordinator started
/// again re-attaches to them); local runs are stopped, each leaving its feature resumable, and
/// waited for.
fn leave(executor: &mut dyn Executor, flight: &mut Flight) {
    if flight.jobs.is_empty() {
        return;
    }
    if executor.jobs_outlive_coordinator() {
        let jobs: Vec<String> = flight
            .jobs
            .iter()
            .map(|job| format!("{} ({})", job.feature, executor.describe(job)))
            .collect();
        eprintln!(
            "run.sh: the coordinator stops; these jobs go on: {}. `./run.sh all` again re-attaches to them.",
            jobs.join(", ")
        );
        return;
    }
    for job in &flight.jobs {
        if let Err(error) = executor.cancel(job) {
            eprintln!("run.sh: warning: {error:#}");
        }
    }
    while !flight.jobs.is_empty() {
        match executor.wait(&flight.jobs, false) {
            Ok(ended) => {
                for ended in ended {
                    flight.jobs.retain(|job| *job != ended.job);
                    eprintln!("== {} ended ({})", ended.job.feature, ended.how);
                }
            }
            Err(error) => {
                eprintln!("run.sh: warning: {error:#}");
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::testing::id;
    use crate::mission::executor::Ended;
    use crate::state::run_state::{RunState, Status};

    /// A project with `features` (YAML list items) in a temporary directory.
    fn project(features: &str) -> (tempfile::TempDir, StateDir) {
        let dir = tempfile::tempdir().unwrap();
        let state = StateDir::in_workdir(dir.path());
        std::fs::create_dir_all(state.root()).unwrap();
        std::fs::write(state.config(), "agent:\n  command: [true]\n").unwrap();
        std::fs::write(state.features(), format!("features:\n{features}")).unwrap();
        (dir, state)
    }

    /// Four features: F-2 needs F-1, F-3 needs F-2, F-4 stands alone.
    const FOUR: &str = "  - {id: F-1, title: a}\n  - {id: F-2, title: b, depends_on: [F-1]}\n  - {id: F-3, title: c, depends_on: [F-2]}\n  - {id: F-4, title: d}\n";

    /// An executor whose runs end one at a time, oldest first, leaving the status `ends` gives
    /// their feature (done when not given).
    struct Fake {
        state: StateDir,
        ends: Vec<(FeatureId, Status, &'static str, bool)>,
        queued_at_start: Vec<Job>,
        outlive: bool,
        submitted: Vec<FeatureId>,
        cancelled: Vec<FeatureId>,
        most_in_flight: usize,
    }

    impl Fake {
        fn new(state: &StateDir, outlive: bool) -> Self {
            Self {
                state: state.clone(),
                ends: Vec::new(),
                queued_at_start: Vec::new(),
                outlive,
                submitted: Vec::new(),
                cancelled: Vec::new(),
                most_in_flight: 0,
            }
        }

        fn ending(&self, feature: &FeatureId) -> (Status, &'static str, bool) {
            self.ends
                .iter()
                .find(|(f, ..)| f == feature)
                .map_or((Status::Done, "exit 0", false), |(_, s, how, stops)| {
                    (*s, *how, *stops)
                })
        }
    }

    impl Executor for Fake {
        fn submit(&mut self, feature: &FeatureId) -> anyhow::Result<Job> {
            self.submitted.push(feature.clone());
            Ok(Job {
                feature: feature.clone(),
                id: format!("{}", self.submitted.len()),
            })
        }

        fn find(&mut self) -> anyhow::Result<Vec<Job>> {
            Ok(self.queued_at_start.clone())
        }

        fn wait(&mut self, jobs: &[Job], _: bool) -> anyhow::Result<Vec<Ended>> {
            self.most_in_flight = self.most_in_flight.max(jobs.len());
            let job = jobs[0].clone();
            let (status, how, stops_mission) = self.ending(&job.feature);
            let mut state = RunState::new(job.feature.clone(), 10, "P", time::now());
            state.status = status;
            state.iteration_count = 1;
            state.save(&self.state.run_state(&job.feature)).unwrap();
            Ok(vec![Ended {
                job,
                how: how.to_string(),
                stops_mission,
            }])
        }

        fn cancel(&mut self, job: &Job) -> anyhow::Result<()> {
            self.cancelled.push(job.feature.clone());
            Ok(())
        }

        fn jobs_outlive_coordinator(&self) -> bool {
            self.outlive
        }

        fn describe(&self, job: &Job) -> String {
            format!("job {}", job.id)
        }
    }

    #[test]
    fn every_feature_runs_once_in_dependency_order_within_the_cap() {
        let (dir, state) = project(FOUR);
        let mut fake = Fake::new(&state, false);
        assert_eq!(
            coordinate(dir.path(), &state, &mut fake, (2, None), None).unwrap(),
            exit_codes::DONE
        );
        assert_eq!(fake.submitted, [id("F-1"), id("F-4"), id("F-2"), id("F-3")]);
        assert_eq!(fake.most_in_flight, 2);
    }

    #[test]
    fn a_restarted_coordinator_re_attaches_to_queued_jobs_and_never_submits_them_again() {
        let (dir, state) = project(FOUR);
        let mut fake = Fake::new(&state, true);
        fake.queued_at_start = vec![Job {
            feature: id("F-1"),
            id: "41".into(),
        }];
        assert_eq!(
            coordinate(dir.path(), &state, &mut fake, (usize::MAX, None), None).unwrap(),
            exit_codes::DONE
        );
        // F-1 was found queued: only the others are submitted, F-2 once F-1 has ended.
        assert_eq!(fake.submitted, [id("F-4"), id("F-2"), id("F-3")]);
    }

    #[test]
    fn a_failed_feature_blocks_its_dependents_which_are_never_submitted() {
        let (dir, state) = project(FOUR);
        let mut fake = Fake::new(&state, true);
        fake.ends = vec![(id("F-1"), Status::Failed, "exit 3", false)];
        assert_eq!(
            coordinate(dir.path(), &state, &mut fake, (usize::MAX, None), None).unwrap(),
            exit_codes::FAILED
        );
        assert_eq!(fake.submitted, [id("F-1"), id("F-4")]);
        let blocked = RunState::load(&state.run_state(&id("F-3")), &id("F-3"))
            .unwrap()
            .unwrap();
        assert_eq!(blocked.status, Status::Blocked);
    }

    #[test]
    fn a_cancelled_cluster_job_leaves_its_feature_unfinished_and_the_mission_goes_on() {
        let (dir, state) = project(FOUR);
        let mut fake = Fake::new(&state, true);
        // scancel: the run stopped mid-iteration, its state still says running.
        fake.ends = vec![(id("F-1"), Status::Running, "Slurm job 1 CANCELLED", false)];
        assert_eq!(
            coordinate(dir.path(), &state, &mut fake, (usize::MAX, None), None).unwrap(),
            exit_codes::FAILED
        );
        // Not submitted again in the same `all`, its dependents wait, F-4 still ran.
        assert_eq!(fake.submitted, [id("F-1"), id("F-4")]);
        assert!(fake.cancelled.is_empty());
        // The next `all` resumes it, then its dependents.
        let mut again = Fake::new(&state, true);
        assert_eq!(
            coordinate(dir.path(), &state, &mut again, (usize::MAX, None), None).unwrap(),
            exit_codes::DONE
        );
        assert_eq!(again.submitted, [id("F-1"), id("F-2"), id("F-3")]);
    }

    #[test]
    fn an_interrupted_local_run_stops_the_mission_and_the_other_runs() {
        let (dir, state) = project(FOUR);
        let mut fake = Fake::new(&state, false);
        fake.ends = vec![(id("F-1"), Status::Running, "exit 130", true)];
        assert_eq!(
            coordinate(dir.path(), &state, &mut fake, (2, None), None).unwrap(),
            exit_codes::INTERRUPTED
        );
        assert_eq!(fake.submitted, [id("F-1"), id("F-4")]);
        assert_eq!(fake.cancelled, [id("F-4")]);
    }

    #[test]
    fn room_is_what_the_cap_leaves() {
        assert_eq!(room(3, 1), 2);
        assert_eq!(room(2, 5), 0);
        assert_eq!(room(usize::MAX, 7), usize::MAX - 7);
    }
}
