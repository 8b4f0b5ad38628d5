//! The status board (`./run.sh status`): one row per feature of features.yaml, in its order, and
//! the mission's totals. [`board`] is a pure function of the feature list, the run states, which
//! features are being run right now, and the clock, so its text is snapshot-tested.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::base::error::InputError;
pub use crate::base::time::human_duration;
use crate::base::time::Timestamp;
use crate::mission::executor::{self, JobRecord};
use crate::mission::leftovers::{self, Kept};
use crate::mission::schedule::{self, States};
use crate::spec::config::Config;
use crate::spec::features::{FeatureId, FeatureList};
use crate::spec::layout::{IdentityDir, StateDir};
use crate::spec::role::Role;
use crate::state::budget::Spent;
use crate::state::mission_runs::{self, MissionRun};
use crate::state::run_state::{Attempt, Outcome, RunState, Status};

/// The widest a title is shown in the text board.
pub const TITLE_WIDTH: usize = 40;

/// Where a feature stands, as the board shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BoardStatus {
    /// Never run (or waiting to be resumed with no iteration yet).
    Pending,
    /// A process holds the feature's lock now.
    Running,
    /// The state says running but nobody holds the lock: the run was killed; it resumes.
    Interrupted,
    /// Waiting for the validator.
    Provisional,
    /// Accepted.
    Done,
    /// Accepted, its branch not merged back yet (the reason says why and what to do).
    Unmerged,
    /// Failed for good or at a guardrail.
    Failed,
    /// Cannot run.
    Blocked,
    /// Re-broken by the planner into other features.
    Superseded,
}

impl BoardStatus {
    /// The word shown.
    pub fn as_str(self) -> &'static str {
        match self {
            BoardStatus::Pending => "pending",
            BoardStatus::Running => "running",
            BoardStatus::Interrupted => "interrupted",
            BoardStatus::Provisional => "provisional",
            BoardStatus::Done => "done",
            BoardStatus::Unmerged => "unmerged",
            BoardStatus::Failed => "failed",
            BoardStatus::Blocked => "blocked",
            BoardStatus::Superseded => "superseded",
        }
    }

    /// From the run state and whether the feature's lock is held.
    pub fn of(state: Option<&RunState>, locked: bool) -> Self {
        let Some(state) = state else {
            return if locked {
                BoardStatus::Running
            } else {
                BoardStatus::Pending
            };
        };
        if !state.superseded_by.is_empty() {
            return BoardStatus::Superseded;
        }
        match state.status {
            Status::Done => BoardStatus::Done,
            Status::Failed => BoardStatus::Failed,
            Status::Blocked => BoardStatus::Blocked,
            _ if locked => BoardStatus::Running,
            Status::Running => BoardStatus::Interrupted,
            Status::Provisional => BoardStatus::Provisional,
            Status::Pending => BoardStatus::Pending,
            Status::Unmerged => BoardStatus::Unmerged,
        }
    }
}

/// The last attempt on a feature.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LastAttempt {
    pub role: Role,
    /// How it ended (`started` while it runs).
    pub outcome: Outcome,
    pub started_at: Timestamp,
}

/// One feature on the board.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FeatureRow {
    pub id: String,
    pub title: String,
    pub status: BoardStatus,
    /// Why it failed or is blocked, or why its last run stopped, when known.
    pub reason: Option<String>,
    /// The features it was re-broken into.
    pub superseded_by: Vec<String>,
    /// Worker iterations so far.
    pub iteration: u32,
    /// Its guardrail.
    pub max_iterations: u32,
    pub last: Option<LastAttempt>,
    /// Seconds spent in its attempts (an attempt still running counts up to now).
    pub time_spent_secs: u64,
    /// Tokens its attempts reported, if any did.
    pub tokens: Option<u64>,
    /// Cost in USD its attempts reported, if any did.
    pub cost_usd: Option<f64>,
    /// The cluster job last submitted for it (`all --executor slurm`): its id and state.
    pub job: Option<JobRecord>,
    /// The phase it is in, when config.yaml has `phases:`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<BoardPhase>,
}

/// A feature's phase on the board.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BoardPhase {
    pub name: String,
    /// Its position, from 1.
    pub number: u32,
    /// How many phases there are.
    pub count: u32,
}

impl BoardPhase {
    /// `build 3/4`.
    pub fn short(&self) -> String {
        format!("{} {}/{}", self.name, self.number, self.count)
    }
}

/// The mission's totals.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Totals {
    /// Features in features.yaml.
    pub features: usize,
    /// Of which done.
    pub done: usize,
    /// How many features stand in each status.
    pub by_status: BTreeMap<BoardStatus, usize>,
    /// Worker iterations over all features.
    pub iterations: u64,
    /// Seconds over all attempts and mission runs.
    pub time_spent_secs: u64,
    /// Tokens over the attempts and mission runs that reported them; `None` when none did.
    pub tokens: Option<u64>,
    /// Cost in USD over the attempts and mission runs whose cost is known; `None` when none is.
    pub cost_usd: Option<f64>,
    /// The runs on the whole mission (`plan`, the curator's agent) counted in the time, tokens
    /// and cost besides the features' attempts.
    pub mission_runs: usize,
}

/// The whole board.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Board {
    /// One row per feature, in the order of features.yaml.
    pub features: Vec<FeatureRow>,
    pub totals: Totals,
    /// The identity directory the roles use (`status` shows it; the report does not).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub identity: Option<IdentityDir>,
    /// The git worktrees and `harness/` branches kept, each with why and what to do.
    pub kept: Vec<Kept>,
}

/// The board of `features`: `states` as loaded, `is_running` whether a process holds the
/// feature's lock, `default_max_iterations` for features that never ran, `now` for attempts
/// still running.
pub fn board(
    features: &FeatureList,
    states: &States,
    is_running: impl Fn(&FeatureId) -> bool,
    default_max_iterations: u32,
    now: Timestamp,
) -> Board {
    let rows: Vec<FeatureRow> = features
        .features
        .iter()
        .map(|feature| {
            let state = states.get(&feature.id);
            let locked = is_running(&feature.id);
            let status = BoardStatus::of(state, locked);
            let attempts: &[Attempt] = state.map_or(&[], |s| s.attempts());
            FeatureRow {
                id: feature.id.to_string(),
                title: feature.title.trim().to_string(),
                status,
                // A pending feature's reason is why its last run stopped (a budget, a setback).
                reason: state
                    .filter(|s| {
                        matches!(
                            s.status,
                            Status::Failed | Status::Blocked | Status::Unmerged | Status::Pending
                        )
                    })
                    .and_then(|s| s.reason.clone()),
                superseded_by: state.map_or_else(Vec::new, |s| {
                    s.superseded_by.iter().map(|id| id.to_string()).collect()
                }),
                iteration: state.map_or(0, |s| s.iteration_count),
                max_iterations: state.map_or(default_max_iterations, |s| s.max_iterations),
                last: attempts.last().map(|a| LastAttempt {
                    role: a.role,
                    outcome: a.outcome,
                    started_at: a.started_at,
                }),
                time_spent_secs: attempts.iter().map(|a| seconds_spent(a, locked, now)).sum(),
                tokens: Spent::of(attempts).tokens,
                cost_usd: Spent::of(attempts).cost_usd,
                job: None,
                phase: state
                    .and_then(|s| s.phase.as_ref())
                    .map(|phase| BoardPhase {
                        name: phase.name.clone(),
                        number: phase.number,
                        count: phase.count,
                    }),
            }
        })
        .collect();
    let mut by_status = BTreeMap::new();
    for row in &rows {
        *by_status.entry(row.status).or_insert(0) += 1;
    }
    let spent = rows.iter().fold(Spent::default(), |spent, row| {
        spent.plus(Spent {
            tokens: row.tokens,
            cost_usd: row.cost_usd,
            wall_secs: row.time_spent_secs,
        })
    });
    let totals = Totals {
        features: rows.len(),
        done: by_status.get(&BoardStatus::Done).copied().unwrap_or(0),
        by_status,
        iterations: rows.iter().map(|r| u64::from(r.iteration)).sum(),
        time_spent_secs: spent.wall_secs,
        tokens: spent.tokens,
        cost_usd: spent.cost_usd,
        mission_runs: 0,
    };
    Board {
        features: rows,
        totals,
        identity: None,
        kept: Vec::new(),
    }
}

/// The board of the project at `workdir` (state in `state_dir`), now, with the identity
/// directory in use, the cluster jobs of its features as the cluster sees them now, and the
/// worktrees and branches kept.
pub fn load(
    workdir: &std::path::Path,
    state_dir: &StateDir,
    identity: &IdentityDir,
    now: Timestamp,
) -> Result<Board, InputError> {
    state_dir.require_initialised()?;
    let config = Config::load(&state_dir.config())?;
    let features = FeatureList::load(&state_dir.features())?;
    let states = schedule::load_states(state_dir, &features)?;
    let jobs = executor::current_jobs(state_dir, &features)?;
    let board = board(
        &features,
        &states,
        |id| schedule::is_being_run(state_dir, id),
        config.max_iterations,
        now,
    )
    .with_jobs(&jobs)
    .with_mission_runs(&mission_runs::load(state_dir));
    let kept = leftovers::kept(workdir, state_dir, &features, &states, |id| {
        schedule::is_being_run(state_dir, id)
    });
    Ok(Board {
        identity: Some(identity.clone()),
        kept,
        ..board
    })
}

/// How long an attempt took; one still running counts up to `now`, one left `started` by a
/// killed process counts nothing (its end is unknown).
fn seconds_spent(attempt: &Attempt, running: bool, now: Timestamp) -> u64 {
    let end = match attempt.ended_at {
        Some(end) => end,
        None if running => now,
        None => return 0,
    };
    u64::try_from((end - attempt.started_at).num_seconds()).unwrap_or(0)
}

impl Board {
    /// The board with each feature's cluster job from `jobs`.
    pub fn with_jobs(mut self, jobs: &BTreeMap<FeatureId, JobRecord>) -> Self {
        for row in &mut self.features {
            row.job = jobs
                .iter()
                .find(|(id, _)| id.as_str() == row.id)
                .map(|(_, job)| job.clone());
        }
        self
    }

    /// The board with what the runs on the whole mission spent in its totals.
    pub fn with_mission_runs(mut self, runs: &[MissionRun]) -> Self {
        let totals = &mut self.totals;
        let spent = runs
            .iter()
            .fold(Spent::default(), |spent, run| spent.plus(run.spent()))
            .plus(Spent {
                tokens: totals.tokens,
                cost_usd: totals.cost_usd,
                wall_secs: totals.time_spent_secs,
            });
        totals.tokens = spent.tokens;
        totals.cost_usd = spent.cost_usd;
        totals.time_spent_secs = spent.wall_secs;
        totals.mission_runs += runs.len();
        self
    }

    /// The board as text: a table (with a JOB column when a feature has a cluster job), the
    /// reasons of failed, blocked and superseded features, and the totals.
    pub fn render_text(&self) -> String {
        let with_jobs = self.features.iter().any(|row| row.job.is_some());
        let with_phases = self.features.iter().any(|row| row.phase.is_some());
        let mut header = vec!["ID", "TITLE", "STATUS", "ITER", "LAST", "TIME"];
        if with_phases {
            header.insert(3, "PHASE");
        }
        if with_jobs {
            header.insert(3, "JOB");
        }
        let rows: Vec<Vec<String>> = self
            .features
            .iter()
            .map(|row| {
                let mut cells = vec![
                    row.id.clone(),
                    shorten(&row.title, TITLE_WIDTH),
                    row.status.as_str().to_string(),
                    format!("{}/{}", row.iteration, row.max_iterations),
                    row.last.as_ref().map_or("-".to_string(), |last| {
                        format!("{} {}", last.role, outcome_name(last.outcome))
                    }),
                    human_duration(row.time_spent_secs),
                ];
                if with_phases {
                    cells.insert(3, row.phase.as_ref().map_or("-".into(), BoardPhase::short));
                }
                if with_jobs {
                    let job = row.job.as_ref();
                    cells.insert(
                        3,
                        job.map_or("-".into(), |j| format!("{} {}", j.id, j.state)),
                    );
                }
                cells
            })
            .collect();
        let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
        for row in &rows {
            for (width, cell) in widths.iter_mut().zip(row) {
                *width = (*width).max(cell.chars().count());
            }
        }
        let line = |cells: &[String]| {
            let mut text = String::new();
            for (index, (cell, width)) in cells.iter().zip(&widths).enumerate() {
                if index + 1 == cells.len() {
                    text.push_str(cell);
                } else {
                    text.push_str(cell);
                    text.push_str(&" ".repeat(width - cell.chars().count() + 2));
                }
            }
            text.trim_end().to_string() + "\n"
        };
        let header: Vec<String> = header.into_iter().map(str::to_string).collect();
        let mut text = line(&header);
        for row in &rows {
            text.push_str(&line(row));
        }
        if self.features.is_empty() {
            text = "no features yet: write .harness/features.yaml, or run `./run.sh plan`\n".into();
        }
        let notes: Vec<String> = self
            .features
            .iter()
            .filter_map(|row| match (&row.reason, row.superseded_by.is_empty()) {
                (_, false) => Some(format!(
                    "{}: superseded by {}",
                    row.id,
                    row.superseded_by.join(", ")
                )),
                (Some(reason), true) => {
                    Some(format!("{}: {}: {reason}", row.id, row.status.as_str()))
                }
                (None, true) => None,
            })
            .collect();
        let notes = notes
            .into_iter()
            .chain(self.kept.iter().map(Kept::line))
            .collect::<Vec<_>>();
        if !notes.is_empty() {
            text.push('\n');
            for note in notes {
                text.push_str(&note);
                text.push('\n');
            }
        }
        text + &self.render_totals()
    }

    /// The totals' lines of the text board, and the identity directory in use.
    fn render_totals(&self) -> String {
        let totals = &self.totals;
        let others: Vec<String> = totals
            .by_status
            .iter()
            .filter(|(status, _)| **status != BoardStatus::Done)
            .map(|(status, count)| format!("{count} {}", status.as_str()))
            .collect();
        // Superseded features are done through their pieces, which are rows of their own.
        let superseded = totals
            .by_status
            .get(&BoardStatus::Superseded)
            .copied()
            .unwrap_or(0);
        let mut text = format!(
            "\nfeatures:   {}/{} done{}\n",
            totals.done,
            totals.features - superseded,
            if others.is_empty() {
                String::new()
            } else {
                format!(" ({})", others.join(", "))
            }
        );
        text.push_str(&format!("iterations: {}\n", totals.iterations));
        if totals.mission_runs > 0 {
            text.push_str(&format!(
                "on the mission: {} run{} of plan or the curator's agent, counted below\n",
                totals.mission_runs,
                if totals.mission_runs == 1 { "" } else { "s" }
            ));
        }
        text.push_str(&format!(
            "time:       {}\n",
            human_duration(totals.time_spent_secs)
        ));
        text.push_str(&format!(
            "tokens:     {}\n",
            totals
                .tokens
                .map_or("unknown".to_string(), |t| t.to_string())
        ));
        text.push_str(&format!(
            "cost:       {}\n",
            totals
                .cost_usd
                .map_or("unknown".to_string(), |c| format!("${c:.2}"))
        ));
        if let Some(identity) = &self.identity {
            text.push_str(&format!("identity:   {identity}\n"));
        }
        text
    }
}

/// The outcome's name as in state.json (`no_promise`).
fn outcome_name(outcome: Outcome) -> String {
    serde_json::to_value(outcome)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// `text` on one line, cut to `width` characters, with `…` when cut.
fn shorten(text: &str, width: usize) -> String {
    crate::base::text::cut(
        &text.split_whitespace().collect::<Vec<_>>().join(" "),
        width,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::testing::{at, id};
    use std::path::Path;

    fn attempt(state: &mut RunState, role: Role, start: i64, end: Option<i64>, outcome: Outcome) {
        state.begin_attempt(&format!("run-{start}"), role, at(start));
        let attempt = state.attempts_mut().last_mut().unwrap();
        attempt.ended_at = end.map(at);
        attempt.outcome = outcome;
    }

    fn example() -> (FeatureList, States) {
        let features = FeatureList::parse(
            "features:\n  - id: F-001\n    title: Sign-up form\n  - id: F-002\n    title: Login with a password, a remember-me box and rate limiting\n  - id: F-003\n    title: Logout\n  - id: F-004\n    title: Reset\n  - id: F-005\n    title: Profile\n  - id: F-005.1\n    title: Avatar\n  - id: F-006\n    title: Admin\n",
            Path::new("features.yaml"),
        )
        .unwrap();
        let mut states = States::new();
        let mut done = RunState::new(id("F-001"), 10, "P", at(0));
        done.iteration_count = 2;
        attempt(&mut done, Role::Worker, 0, Some(300), Outcome::NoPromise);
        attempt(&mut done, Role::Worker, 300, Some(700), Outcome::Completed);
        attempt(
            &mut done,
            Role::Validator,
            700,
            Some(760),
            Outcome::Verified,
        );
        done.attempts_mut()[0].tokens = Some(1000);
        done.attempts_mut()[0].cost_usd = Some(0.25);
        done.attempts_mut()[1].tokens = Some(2345);
        done.status = Status::Done;
        states.insert(id("F-001"), done);

        let mut running = RunState::new(id("F-002"), 10, "P", at(0));
        running.iteration_count = 1;
        running.status = Status::Running;
        attempt(&mut running, Role::Worker, 800, None, Outcome::Started);
        states.insert(id("F-002"), running);

        let mut killed = RunState::new(id("F-003"), 5, "P", at(0));
        killed.iteration_count = 3;
        killed.status = Status::Running;
        attempt(&mut killed, Role::Worker, 100, None, Outcome::Started);
        states.insert(id("F-003"), killed);

        let mut failed = RunState::new(id("F-004"), 3, "P", at(0));
        failed.iteration_count = 3;
        failed.fail(
            "max_iterations (3) reached without completion".into(),
            at(50),
        );
        attempt(&mut failed, Role::Worker, 0, Some(4000), Outcome::NoPromise);
        states.insert(id("F-004"), failed);

        let mut superseded = RunState::new(id("F-005"), 10, "P", at(0));
        superseded.iteration_count = 10;
        superseded.fail("max_iterations (10) reached".into(), at(0));
        attempt(
            &mut superseded,
            Role::Planner,
            5000,
            Some(5030),
            Outcome::Completed,
        );
        superseded.superseded_by = vec![id("F-005.1")];
        states.insert(id("F-005"), superseded);

        let mut blocked = RunState::new(id("F-006"), 10, "P", at(0));
        blocked.status = Status::Blocked;
        blocked.reason = Some("dependency F-004 failed".into());
        states.insert(id("F-006"), blocked);
        (features, states)
    }

    #[test]
    fn the_text_board_snapshot() {
        let (features, states) = example();
        let board = board(&features, &states, |id| id.as_str() == "F-002", 10, at(845));
        assert_eq!(
            board.render_text(),
            "\
ID       TITLE                                     STATUS       ITER   LAST                TIME
F-001    Sign-up form                              done         2/10   validator verified  12m 40s
F-002    Login with a password, a remember-me bo…  running      1/10   worker started      45s
F-003    Logout                                    interrupted  3/5    worker started      -
F-004    Reset                                     failed       3/3    worker no_promise   1h 06m
F-005    Profile                                   superseded   10/10  planner completed   30s
F-005.1  Avatar                                    pending      0/10   -                   -
F-006    Admin                                     blocked      0/10   -                   -

F-004: failed: max_iterations (3) reached without completion
F-005: superseded by F-005.1
F-006: blocked: dependency F-004 failed

features:   1/6 done (1 pending, 1 running, 1 interrupted, 1 failed, 1 blocked, 1 superseded)
iterations: 19
time:       1h 20m
tokens:     3345
cost:       $0.25
"
        );
    }

    #[test]
    fn the_json_board_has_stable_names_and_unknown_is_null() {
        let (features, mut states) = example();
        for state in states.values_mut() {
            for attempt in state.attempts_mut() {
                attempt.tokens = None;
                attempt.cost_usd = None;
            }
        }
        let board = board(&features, &states, |_| false, 10, at(845));
        let json = serde_json::to_value(&board).unwrap();
        let first = &json["features"][0];
        assert_eq!(first["id"], "F-001");
        assert_eq!(first["status"], "done");
        assert_eq!(first["iteration"], 2);
        assert_eq!(first["max_iterations"], 10);
        assert_eq!(first["last"]["role"], "validator");
        assert_eq!(first["last"]["outcome"], "verified");
        assert_eq!(first["time_spent_secs"], 760);
        assert_eq!(json["features"][1]["status"], "interrupted");
        assert_eq!(json["features"][4]["superseded_by"][0], "F-005.1");
        assert_eq!(json["features"][5]["last"], serde_json::Value::Null);
        assert_eq!(json["totals"]["features"], 7);
        assert_eq!(json["totals"]["done"], 1);
        assert_eq!(json["totals"]["by_status"]["failed"], 1);
        assert_eq!(json["totals"]["tokens"], serde_json::Value::Null);
        assert_eq!(json["totals"]["cost_usd"], serde_json::Value::Null);
        assert!(board
            .render_text()
            .contains("tokens:     unknown\ncost:       unknown\n"));
    }

    #[test]
    fn the_board_of_a_project_names_the_identity_directory_in_use() {
        let (features, states) = example();
        let board = Board {
            identity: Some(IdentityDir {
                dir: "/home/u/.local/share/harness/identity".into(),
                source: crate::spec::layout::IdentitySource::DataDir,
            }),
            ..board(&features, &states, |_| false, 10, at(845))
        };
        assert!(board.render_text().ends_with(
            "cost:       $0.25\nidentity:   /home/u/.local/share/harness/identity (the user's data directory)\n"
        ));
        let json = serde_json::to_value(&board).unwrap();
        assert_eq!(
            json["identity"],
            serde_json::json!({"dir": "/home/u/.local/share/harness/identity", "source": "data_dir"})
        );
    }

    #[test]
    fn a_feature_run_as_a_cluster_job_shows_its_job_id_and_state() {
        let (features, states) = example();
        let job = JobRecord {
            executor: crate::spec::config::ExecutorKind::Slurm,
            id: "4242".into(),
            name: "harness-F-002-a1b2c3".into(),
            state: "RUNNING".into(),
            seen_at: at(840),
            output: "/p/.harness/runs/F-002/jobs/slurm-4242.out".into(),
        };
        let jobs = BTreeMap::from([(id("F-002"), job)]);
        let board =
            board(&features, &states, |id| id.as_str() == "F-002", 10, at(845)).with_jobs(&jobs);
        let text = board.render_text();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("ID       TITLE"), "{text}");
        assert!(
            lines[0].contains("STATUS       JOB           ITER"),
            "{text}"
        );
        assert!(
            lines[2].contains("running      4242 RUNNING  1/10"),
            "{text}"
        );
        assert!(
            lines[1].contains("done         -             2/10"),
            "{text}"
        );
        let json = serde_json::to_value(&board).unwrap();
        assert_eq!(json["features"][1]["job"]["id"], "4242");
        assert_eq!(json["features"][1]["job"]["state"], "RUNNING");
        assert_eq!(json["features"][1]["job"]["executor"], "slurm");
        assert_eq!(json["features"][0]["job"], serde_json::Value::Null);
    }

    #[test]
    fn a_feature_with_phases_shows_the_one_it_is_in() {
        let (features, mut states) = example();
        states.get_mut(&id("F-002")).unwrap().phase = Some(crate::state::lifecycle::PhaseState {
            name: "research".into(),
            number: 2,
            count: 4,
            started_after_iteration: 0,
            base_tree: None,
        });
        let board = board(&features, &states, |id| id.as_str() == "F-002", 10, at(845));
        let text = board.render_text();
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].contains("STATUS       PHASE         ITER"),
            "{text}"
        );
        assert!(
            lines[2].contains("running      research 2/4  1/10"),
            "{text}"
        );
        assert!(
            lines[1].contains("done         -             2/10"),
            "{text}"
        );
        let json = serde_json::to_value(&board).unwrap();
        assert_eq!(json["features"][1]["phase"]["name"], "research");
        assert_eq!(json["features"][1]["phase"]["number"], 2);
        assert_eq!(json["features"][1]["phase"]["count"], 4);
        assert!(json["features"][0].get("phase").is_none());
        // Without phases the board is as it was: no column.
        states.get_mut(&id("F-002")).unwrap().phase = None;
        let text = board_text(&features, &states);
        assert!(!text.contains("PHASE"), "{text}");
    }

    fn board_text(features: &FeatureList, states: &States) -> String {
        board(features, states, |_| false, 10, at(845)).render_text()
    }

    #[test]
    fn durations_read_like_a_person_would_say_them() {
        assert_eq!(human_duration(0), "-");
        assert_eq!(human_duration(45), "45s");
        assert_eq!(human_duration(725), "12m 05s");
        assert_eq!(human_duration(3 * 3600 + 7 * 60 + 9), "3h 07m");
        assert_eq!(human_duration(2 * 86_400 + 4 * 3600), "2d 04h");
    }

    #[test]
    fn an_empty_list_says_how_to_start() {
        let board = board(
            &FeatureList::default(),
            &States::new(),
            |_| false,
            10,
            at(0),
        );
        assert!(board.render_text().starts_with("no features yet"));
    }
}
