//! The Slurm executor: each feature is one batch job running `run.sh <FEATURE> --worktree`,
//! submitted with `sbatch` under the name `harness-<FEATURE>-<mission>`, found again by that name
//! with `squeue` (so a coordinator started again re-attaches to its jobs instead of submitting
//! them twice) and watched with `squeue` at growing intervals. The cluster's shared filesystem
//! holds the project and `.harness/` at the same path on every node, so the job takes the same
//! locks and writes the same state as a local run. The jobs outlive the coordinator.

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::Context;

use super::{Ended, Executor, FeatureCommand, Job, JobRecord};
use crate::base::error::InputError;
use crate::base::signals;
use crate::base::time;
use crate::spec::config::{ExecutorConfig, ExecutorKind};
use crate::spec::features::FeatureId;
use crate::spec::layout::StateDir;

/// The first pause between two looks at the queue, and the pause again after any change.
const FIRST_PAUSE: Duration = Duration::from_secs(1);

/// The state of a job Slurm no longer knows (it left the queue and the cluster keeps no
/// accounting of it): it ended, how is unknown.
pub const UNKNOWN_END: &str = "ENDED";

/// One Slurm job per feature.
#[derive(Debug)]
pub struct Slurm {
    state: StateDir,
    command: FeatureCommand,
    sbatch_args: Vec<String>,
    poll_max: Duration,
    mission: String,
    /// The state each job was last seen in, to record and tell only changes.
    seen: BTreeMap<String, String>,
}

impl Slurm {
    /// An executor that submits `command` for each feature of the project at `state`.
    pub fn new(state: StateDir, command: FeatureCommand, config: &ExecutorConfig) -> Self {
        Self {
            mission: mission_tag(state.root()),
            state,
            command,
            sbatch_args: config.sbatch_args.clone(),
            poll_max: Duration::from_secs(config.poll_secs).max(FIRST_PAUSE),
            seen: BTreeMap::new(),
        }
    }

    /// The name of `feature`'s job in this mission.
    pub fn job_name(&self, feature: &FeatureId) -> String {
        job_name(feature, &self.mission)
    }

    /// The arguments of `sbatch` for `feature`'s job (the script goes on its stdin).
    fn sbatch_args(&self, feature: &FeatureId) -> Vec<String> {
        let output = self.state.job_output_dir(feature).join("slurm-%j.out");
        let mut args = vec![
            "--parsable".to_string(),
            format!("--job-name={}", self.job_name(feature)),
            format!("--output={}", output.display()),
            format!("--chdir={}", self.command.workdir.display()),
        ];
        args.extend(self.sbatch_args.iter().cloned());
        args
    }

    /// Records `job`'s state in its feature's job.json when it changed, and says so.
    fn note(&mut self, job: &Job, state: &str) -> anyhow::Result<()> {
        if self.seen.get(&job.id).map(String::as_str) == Some(state) {
            return Ok(());
        }
        if self.seen.contains_key(&job.id) && !is_over(state) {
            eprintln!("== {}: {} {state}", job.feature, self.describe(job));
        }
        self.seen.insert(job.id.clone(), state.to_string());
        let record = JobRecord {
            executor: ExecutorKind::Slurm,
            id: job.id.clone(),
            name: self.job_name(&job.feature),
            state: state.to_string(),
            seen_at: time::now(),
            output: output_of(&self.state, &job.feature, &job.id),
        };
        let path = self.state.job_record(&job.feature);
        record
            .save(&path)
            .with_context(|| format!("cannot write {}", path.display()))
    }

    /// The states of `jobs` now: from `squeue`, or `sacct` for those that left the queue, or
    /// [`UNKNOWN_END`].
    fn look(&self, jobs: &[Job]) -> Result<BTreeMap<String, String>, Failure> {
        let ids: Vec<String> = jobs.iter().map(|job| job.id.clone()).collect();
        lookup(&ids)
    }
}

impl Executor for Slurm {
    fn submit(&mut self, feature: &FeatureId) -> anyhow::Result<Job> {
        let dir = self.state.job_output_dir(feature);
        crate::base::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        let args = self.sbatch_args(feature);
        let script = batch_script(&self.command.argv(feature));
        let stdout = run("sbatch", &args, Some(&script)).map_err(|failure| {
            failure.into_error(
                "sbatch",
                &args,
                &format!("Slurm refused the job of {feature}"),
                "check executor.sbatch_args in .harness/config.yaml (partition, time limit, account)",
            )
        })?;
        let id = parse_job_id(&stdout).ok_or_else(|| {
            InputError::new(format!(
                "sbatch accepted the job of {feature} but printed no job id: {:?}",
                stdout.trim()
            ))
            .with_hint(format!("the command was: {}", shown("sbatch", &args)))
        })?;
        let job = Job {
            feature: feature.clone(),
            id,
        };
        eprintln!("== {feature}: submitted as {}", self.describe(&job));
        self.note(&job, "PENDING")?;
        Ok(job)
    }

    fn find(&mut self) -> anyhow::Result<Vec<Job>> {
        let stdout = run("squeue", &squeue_args(), None).map_err(|failure| {
            failure.into_error(
                "squeue",
                &squeue_args(),
                "cannot ask Slurm which jobs of the mission are queued or running (nothing was submitted)",
                "run where Slurm's commands work (a login node of the cluster)",
            )
        })?;
        let mut found = Vec::new();
        for line in parse_squeue(&stdout) {
            if is_over(&line.state) {
                continue;
            }
            if let Some(feature) = feature_of(&line.name, &self.mission) {
                let job = Job {
                    feature,
                    id: line.id,
                };
                self.note(&job, &line.state)?;
                found.push(job);
            }
        }
        Ok(found)
    }

    fn wait(&mut self, jobs: &[Job], interruptible: bool) -> anyhow::Result<Vec<Ended>> {
        let mut pause = FIRST_PAUSE;
        loop {
            match self.look(jobs) {
                Ok(states) => {
                    let changed = jobs
                        .iter()
                        .any(|job| self.seen.get(&job.id) != states.get(&job.id));
                    let mut ended = Vec::new();
                    for job in jobs {
                        let state = states.get(&job.id).map_or(UNKNOWN_END, String::as_str);
                        self.note(job, state)?;
                        if is_over(state) {
                            ended.push(Ended {
                                job: job.clone(),
                                how: format!("{} {state}", self.describe(job)),
                                stops_mission: false,
                            });
                        }
                    }
                    if !ended.is_empty() || jobs.is_empty() {
                        return Ok(ended);
                    }
                    if changed {
                        pause = FIRST_PAUSE;
                    }
                }
                Err(failure) => eprintln!(
                    "planner: warning: cannot see the jobs' states ({}); looking again in {}s",
                    failure.describe("squeue"),
                    pause.as_secs()
                ),
            }
            if !interruptible {
                std::thread::sleep(pause);
            } else if signals::sleep(pause).is_some() {
                return Ok(Vec::new());
            }
            pause = (pause * 2).min(self.poll_max);
        }
    }

    fn cancel(&mut self, job: &Job) -> anyhow::Result<()> {
        let args = vec![job.id.clone()];
        run("scancel", &args, None).map_err(|failure| {
            failure.into_error(
                "scancel",
                &args,
                &format!("cannot cancel the job of {}", job.feature),
                "cancel it by hand with scancel",
            )
        })?;
        Ok(())
    }

    fn jobs_outlive_coordinator(&self) -> bool {
        true
    }

    fn describe(&self, job: &Job) -> String {
        format!("Slurm job {}", job.id)
    }
}

/// Brings the Slurm records of `jobs` that were still queued or running up to date (one `squeue`,
/// and `sacct` for jobs that left the queue); leaves them as they are when Slurm cannot be asked.
pub fn refresh(jobs: &mut BTreeMap<FeatureId, JobRecord>) {
    let ids: Vec<String> = jobs
        .values()
        .filter(|r| r.executor == ExecutorKind::Slurm && !is_over(&r.state))
        .map(|r| r.id.clone())
        .collect();
    if ids.is_empty() {
        return;
    }
    let Ok(states) = lookup(&ids) else {
        return;
    };
    let now = time::now();
    for record in jobs.values_mut() {
        if let Some(state) = states.get(&record.id) {
            record.state = state.clone();
            record.seen_at = now;
        }
    }
}

/// The states of the jobs `ids`: from `squeue`, or `sacct` for those that left the queue, or
/// [`UNKNOWN_END`]. Fails only when `squeue` does.
fn lookup(ids: &[String]) -> Result<BTreeMap<String, String>, Failure> {
    let queued = parse_squeue(&run("squeue", &squeue_args(), None)?);
    let gone: Vec<String> = ids
        .iter()
        .filter(|id| !queued.iter().any(|line| line.id == **id))
        .cloned()
        .collect();
    // Accounting is optional on a cluster: without it, how a job that left the queue ended is
    // unknown.
    let accounted = if gone.is_empty() {
        Vec::new()
    } else {
        run("sacct", &sacct_args(&gone), None).map_or_else(|_| Vec::new(), |o| parse_sacct(&o))
    };
    Ok(states_of(ids, &queued, &accounted))
}

/// The state of each job of `ids`: as `squeue` shows it (`queued`), else as `sacct` does
/// (`accounted`), else [`UNKNOWN_END`].
pub fn states_of(
    ids: &[String],
    queued: &[QueueLine],
    accounted: &[(String, String)],
) -> BTreeMap<String, String> {
    ids.iter()
        .map(|id| {
            let state = queued
                .iter()
                .find(|line| line.id == *id)
                .map(|line| line.state.clone())
                .or_else(|| {
                    accounted
                        .iter()
                        .find(|(job, _)| job == id)
                        .map(|(_, state)| state.clone())
                })
                .unwrap_or_else(|| UNKNOWN_END.to_string());
            (id.clone(), state)
        })
        .collect()
}

/// `<runs>/<FEATURE>/jobs/slurm-<id>.out`: where the job's stdout and stderr go.
fn output_of(state: &StateDir, feature: &FeatureId, id: &str) -> std::path::PathBuf {
    state
        .job_output_dir(feature)
        .join(format!("slurm-{id}.out"))
}

/// A short tag of the project (of its state directory's path), which makes the names of its jobs
/// its own among the user's other jobs. Stable across runs and harness versions, so a
/// coordinator started again finds the jobs of the one before.
pub fn mission_tag(state_root: &Path) -> String {
    crate::roles::curator::short_hash(state_root.as_os_str().as_bytes())
}

/// `harness-<FEATURE>-<mission>`.
pub fn job_name(feature: &FeatureId, mission: &str) -> String {
    format!("harness-{feature}-{mission}")
}

/// The feature whose job in `mission` is named `name`, if it is one.
pub fn feature_of(name: &str, mission: &str) -> Option<FeatureId> {
    let id = name
        .strip_prefix("harness-")?
        .strip_suffix(mission)?
        .strip_suffix('-')?;
    FeatureId::parse(id).ok()
}

/// One job as `squeue` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueLine {
    /// The job id.
    pub id: String,
    /// The job name.
    pub name: String,
    /// Its state (`PENDING`, `RUNNING`, `COMPLETED`…).
    pub state: String,
}

/// `squeue` for every job of the user that Slurm still knows, ended ones too: `id|name|state`.
fn squeue_args() -> Vec<String> {
    ["--me", "--noheader", "--states=all", "--format=%i|%j|%T"]
        .map(str::to_string)
        .to_vec()
}

/// `sacct` for the jobs `ids`, one line each: `id|state`.
fn sacct_args(ids: &[String]) -> Vec<String> {
    vec![
        "--noheader".into(),
        "--parsable2".into(),
        "--allocations".into(),
        "--format=JobID,State".into(),
        format!("--jobs={}", ids.join(",")),
    ]
}

/// The lines of `squeue --format=%i|%j|%T`. A name may hold `|`: the id is what comes before the
/// first, the state what comes after the last.
pub fn parse_squeue(text: &str) -> Vec<QueueLine> {
    text.lines()
        .filter_map(|line| {
            let (id, rest) = line.trim().split_once('|')?;
            let (name, state) = rest.rsplit_once('|')?;
            Some(QueueLine {
                id: id.trim().to_string(),
                name: name.to_string(),
                state: state.trim().to_string(),
            })
        })
        .filter(|line| !line.id.is_empty() && !line.state.is_empty())
        .collect()
}

/// The `(id, state)` lines of `sacct --parsable2 --format=JobID,State`; `CANCELLED by 1000` is
/// `CANCELLED`.
pub fn parse_sacct(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|line| {
            let (id, state) = line.trim().split_once('|')?;
            let state = state.split_whitespace().next()?;
            Some((id.to_string(), state.to_string()))
        })
        .collect()
}

/// Whether a job in `state` has ended (for good: a requeued job is still on its way). States
/// Slurm may add later count as not ended, so the coordinator waits rather than submits twice.
pub fn is_over(state: &str) -> bool {
    matches!(
        state,
        "BOOT_FAIL"
            | "CANCELLED"
            | "COMPLETED"
            | "DEADLINE"
            | "FAILED"
            | "NODE_FAIL"
            | "OUT_OF_MEMORY"
            | "PREEMPTED"
            | "REVOKED"
            | "SPECIAL_EXIT"
            | "TIMEOUT"
            | UNKNOWN_END
    )
}

/// The job id in `sbatch --parsable`'s answer (`42`, or `42;cluster`).
pub fn parse_job_id(stdout: &str) -> Option<String> {
    let line = stdout.lines().map(str::trim).rfind(|l| !l.is_empty())?;
    let id = line.split(';').next()?.trim();
    (!id.is_empty() && id.chars().all(|c| c.is_ascii_digit())).then(|| id.to_string())
}

/// The batch script of a job that runs `argv`: run.sh takes the job's place (`exec`), so the
/// signals Slurm sends at a time limit or a `scancel` reach it.
pub fn batch_script(argv: &[String]) -> String {
    let line: Vec<String> = argv.iter().map(|arg| shell_quote(arg)).collect();
    format!(
        "#!/bin/sh\n# One feature of a harness mission (./run.sh all --executor slurm).\nexec {}\n",
        line.join(" ")
    )
}

/// `text` as one word of sh.
fn shell_quote(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,%@+".contains(c));
    if plain {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// The command line as a user would type it again.
fn shown(program: &str, args: &[String]) -> String {
    std::iter::once(program.to_string())
        .chain(args.iter().map(|arg| shell_quote(arg)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Why a Slurm command gave no answer.
#[derive(Debug)]
enum Failure {
    /// The program is not installed (not in PATH).
    Missing,
    /// It ran and failed; what it said (or its exit status, when it said nothing).
    Refused(String),
    /// It could not be run.
    Io(std::io::Error),
}

impl Failure {
    /// In a few words, for a warning.
    fn describe(&self, program: &str) -> String {
        match self {
            Failure::Missing => format!("{program} not found"),
            Failure::Refused(message) => message.clone(),
            Failure::Io(error) => format!("cannot run {program}: {error}"),
        }
    }

    /// The error that ends the coordinator: `what` went wrong, with Slurm's message and the
    /// command tried.
    fn into_error(self, program: &str, args: &[String], what: &str, fix: &str) -> InputError {
        let command = shown(program, args);
        match self {
            // Not `what`: nothing was refused, the command is not there.
            Failure::Missing => InputError::new(format!(
                "{program} is not installed here (not found in PATH): the slurm executor runs Slurm's commands sbatch, squeue and scancel"
            ))
            .with_hint(format!(
                "run where they work (a login node of the cluster), or use --executor local; the command was: {command}"
            )),
            other => InputError::new(format!("{what}: {}", other.describe(program)))
                .with_hint(format!("{fix}; the command was: {command}")),
        }
    }
}

/// Runs a Slurm command, `stdin` on its standard input; its stdout.
fn run(program: &str, args: &[String], stdin: Option<&str>) -> Result<String, Failure> {
    let mut command = Command::new(program);
    command
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().map_err(|error| match error.kind() {
        std::io::ErrorKind::NotFound => Failure::Missing,
        _ => Failure::Io(error),
    })?;
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        // A command that stops reading (it refused its arguments) says why on stderr, below.
        let _ = pipe.write_all(text.as_bytes());
    }
    let output = child.wait_with_output().map_err(Failure::Io)?;
    if output.status.success() {
        return Ok(String::from_utf8_lossy(&output.stdout).into_owned());
    }
    let said = String::from_utf8_lossy(&output.stderr);
    let said: Vec<&str> = said
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    Err(Failure::Refused(if said.is_empty() {
        format!("{program} failed ({})", output.status)
    } else {
        said.join(" / ")
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::testing::id;

    #[test]
    fn a_job_name_holds_the_feature_and_the_mission_and_gives_them_back() {
        let name = job_name(&id("F-001.2"), "a1b2c3");
        assert_eq!(name, "harness-F-001.2-a1b2c3");
        assert_eq!(feature_of(&name, "a1b2c3"), Some(id("F-001.2")));
        // Another mission's job, someone else's job, a name cut short: not ours.
        assert_eq!(feature_of(&name, "ffffff"), None);
        assert_eq!(feature_of("analysis-a1b2c3", "a1b2c3"), None);
        assert_eq!(feature_of("harness--a1b2c3", "a1b2c3"), None);
        assert_eq!(feature_of("harness-a1b2c3", "a1b2c3"), None);
    }

    #[test]
    fn the_mission_tag_is_stable_and_differs_between_projects() {
        let one = mission_tag(Path::new("/shared/app/.harness"));
        assert_eq!(one, mission_tag(Path::new("/shared/app/.harness")));
        assert_ne!(one, mission_tag(Path::new("/shared/other/.harness")));
        assert!(
            one.len() == 6 && one.chars().all(|c| c.is_ascii_hexdigit()),
            "{one}"
        );
    }

    #[test]
    fn squeue_lines_give_id_name_and_state_even_with_a_bar_in_a_name() {
        let text = "  41|harness-F-001-a1b2c3|RUNNING\n42|a|b|PENDING\n\nnonsense\n43||COMPLETED\n";
        assert_eq!(
            parse_squeue(text),
            [
                QueueLine {
                    id: "41".into(),
                    name: "harness-F-001-a1b2c3".into(),
                    state: "RUNNING".into()
                },
                QueueLine {
                    id: "42".into(),
                    name: "a|b".into(),
                    state: "PENDING".into()
                },
                QueueLine {
                    id: "43".into(),
                    name: String::new(),
                    state: "COMPLETED".into()
                },
            ]
        );
    }

    #[test]
    fn sacct_states_lose_who_cancelled() {
        assert_eq!(
            parse_sacct("41|COMPLETED\n42|CANCELLED by 1000\n"),
            [
                ("41".to_string(), "COMPLETED".to_string()),
                ("42".to_string(), "CANCELLED".to_string())
            ]
        );
    }

    #[test]
    fn a_job_is_in_the_queues_state_else_the_accountings_else_ended() {
        let ids = ["41", "42", "43"].map(str::to_string);
        let queued = parse_squeue("41|harness-F-1-a1b2c3|RUNNING\n99|other|PENDING\n");
        let accounted = parse_sacct("42|TIMEOUT\n");
        let states = states_of(&ids, &queued, &accounted);
        assert_eq!(states["41"], "RUNNING");
        assert_eq!(states["42"], "TIMEOUT");
        assert_eq!(states["43"], UNKNOWN_END);
        assert!(
            is_over(&states["43"]),
            "a job nobody knows any more has ended"
        );
        assert_eq!(states.len(), 3);
    }

    #[test]
    fn only_final_states_are_over_and_an_unknown_one_is_waited_for() {
        for state in [
            "COMPLETED",
            "CANCELLED",
            "TIMEOUT",
            "FAILED",
            "NODE_FAIL",
            "ENDED",
        ] {
            assert!(is_over(state), "{state}");
        }
        for state in [
            "PENDING",
            "RUNNING",
            "COMPLETING",
            "REQUEUED",
            "SUSPENDED",
            "NEW_STATE",
        ] {
            assert!(!is_over(state), "{state}");
        }
    }

    #[test]
    fn the_job_id_is_read_from_sbatch_parsable() {
        assert_eq!(parse_job_id("42\n"), Some("42".into()));
        assert_eq!(parse_job_id("42;cluster\n"), Some("42".into()));
        assert_eq!(
            parse_job_id("sbatch: warning: something\n43\n"),
            Some("43".into())
        );
        assert_eq!(parse_job_id("Submitted batch job 42\n"), None);
        assert_eq!(parse_job_id(""), None);
    }

    #[test]
    fn the_batch_script_execs_run_sh_with_every_argument_quoted() {
        let argv = [
            "/opt/my harness/run.sh",
            "-C",
            "/shared/it's",
            "--",
            "F-001",
        ]
        .map(str::to_string);
        assert_eq!(
            batch_script(&argv).lines().last().unwrap(),
            r"exec '/opt/my harness/run.sh' -C '/shared/it'\''s' -- F-001"
        );
        assert_eq!(shell_quote(""), "''");
    }

    #[test]
    fn sbatch_gets_the_name_the_output_the_directory_then_the_users_arguments() {
        let state = StateDir::new("/shared/app/.harness");
        let command = FeatureCommand {
            run_sh: "/opt/harness/run.sh".into(),
            workdir: "/shared/app".into(),
            quiet: true,
            worktree: true,
            max_iterations: None,
        };
        let config = ExecutorConfig {
            kind: ExecutorKind::Slurm,
            sbatch_args: vec!["--partition=short".into()],
            poll_secs: 30,
        };
        let slurm = Slurm::new(state.clone(), command, &config);
        let tag = mission_tag(state.root());
        assert_eq!(
            slurm.sbatch_args(&id("F-001")),
            [
                "--parsable".to_string(),
                format!("--job-name=harness-F-001-{tag}"),
                "--output=/shared/app/.harness/runs/F-001/jobs/slurm-%j.out".to_string(),
                "--chdir=/shared/app".to_string(),
                "--partition=short".to_string(),
            ]
        );
    }

    #[test]
    fn a_missing_or_refusing_command_is_an_error_with_the_command_tried() {
        let args = vec!["--partition=nosuch".to_string()];
        let error = Failure::Missing.into_error(
            "sbatch",
            &args,
            "Slurm refused the job of F-001",
            "fix it",
        );
        let text = error.to_string();
        assert!(text.starts_with("sbatch is not installed here"), "{text}");
        assert!(
            text.contains("the command was: sbatch --partition=nosuch"),
            "{text}"
        );
        let error = Failure::Refused("sbatch: error: invalid partition specified: nosuch".into())
            .into_error("sbatch", &args, "Slurm refused the job of F-001", "fix it");
        let text = error.to_string();
        assert!(
            text.starts_with("Slurm refused the job of F-001: sbatch: error: invalid partition"),
            "{text}"
        );
        assert!(
            text.contains("fix it; the command was: sbatch --partition=nosuch"),
            "{text}"
        );
        let missing = run("harness-no-such-command", &[], None).unwrap_err();
        assert!(matches!(missing, Failure::Missing), "{missing:?}");
    }
}
