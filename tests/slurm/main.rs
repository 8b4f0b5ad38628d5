//! `make test-slurm`: `./run.sh all --executor slurm` on a real single-node Slurm cluster started
//! on this machine by `tests/slurm/cluster.sh` (Debian's slurm-wlm and munge, installed when
//! missing; the daemons stopped by their pids at the end). Not part of `make test`: each test is
//! `#[ignore]`d there and run by `make test-slurm` (and `.ci/run`) with `--ignored`.
//!
//! Where the cluster cannot be started (not root and no Slurm), a test says so loudly and passes,
//! except under `CI=true`, where it fails.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use harness_tests::{code, repo_root, text, write_executable, Project};

/// cluster.sh's exit code for "cannot run here".
const CANNOT: i32 = 77;

/// A running single-node cluster; stopped when dropped.
struct Cluster {
    dir: tempfile::TempDir,
    conf: PathBuf,
}

impl Cluster {
    /// Starts a cluster, or `None` (said loudly) where it cannot run; under `CI=true` that fails.
    fn start() -> Option<Cluster> {
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new(repo_root().join("tests/slurm/cluster.sh"))
            .arg("start")
            .arg(dir.path())
            .stdin(Stdio::null())
            .output()
            .expect("cluster.sh runs");
        if code(&out) == CANNOT {
            let why = text(&out.stderr);
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "the Slurm test cannot run under CI=true: {why}"
            );
            eprintln!("\n!!!!!!!! SKIPPED: no Slurm cluster can be started here !!!!!!!!\n{why}");
            return None;
        }
        assert_eq!(code(&out), 0, "cluster.sh start: {}", text(&out.stderr));
        let conf = text(&out.stdout)
            .lines()
            .find_map(|line| line.strip_prefix("SLURM_CONF=").map(PathBuf::from))
            .expect("cluster.sh prints SLURM_CONF");
        Some(Cluster { dir, conf })
    }

    /// A Slurm command (or run.sh) pointed at this cluster.
    fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut command = Command::new(program);
        command.env("SLURM_CONF", &self.conf).stdin(Stdio::null());
        command
    }

    /// `run.sh -C <project> <args>` pointed at this cluster.
    fn run_sh(&self, project: &Project, args: &[&str]) -> Command {
        let mut command = project.command(args);
        command.env("SLURM_CONF", &self.conf);
        command
    }

    /// Every job Slurm recorded as finished: `(id, name, state)` (`sacct -c`: the cluster keeps
    /// its job completions in a file, there being no accounting database).
    fn finished_jobs(&self) -> Vec<(String, String, String)> {
        let out = self
            .command("sacct")
            .args([
                "-c",
                "--noheader",
                "--parsable2",
                "--format=JobID,JobName,State",
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "sacct -c: {}", text(&out.stderr));
        text(&out.stdout)
            .lines()
            .filter_map(|line| {
                let mut parts = line.split('|');
                Some((
                    parts.next()?.to_string(),
                    parts.next()?.to_string(),
                    parts.next()?.split_whitespace().next()?.to_string(),
                ))
            })
            .collect()
    }

    /// The state Slurm gives job `id` now (`squeue`), if it still knows it.
    fn job_state(&self, id: &str) -> Option<String> {
        let out = self
            .command("squeue")
            .args(["--noheader", "--states=all", "--format=%i|%T"])
            .output()
            .unwrap();
        text(&out.stdout)
            .lines()
            .find_map(|line| line.strip_prefix(&format!("{id}|")).map(str::to_string))
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let out = Command::new(repo_root().join("tests/slurm/cluster.sh"))
            .arg("stop")
            .arg(self.dir.path())
            .output()
            .expect("cluster.sh runs");
        if !out.status.success() && !std::thread::panicking() {
            panic!("cluster.sh stop: {}", text(&out.stderr));
        }
    }
}

/// A project whose agent is a shell script: a feature with a `<FEATURE>.hold` file in the
/// control directory waits (bounded) for `<FEATURE>.release`; each writes `<FEATURE>.txt` and
/// delivers the promise; the validator passes. `executor_extra` goes under `executor:`.
fn project(features: &str, executor_extra: &str) -> Project {
    let project = Project::new(features, "steps:\n  - [promise: true]\n");
    let control = control(&project);
    std::fs::create_dir_all(&control).unwrap();
    let script = format!(
        r#"#!/bin/sh
cat >/dev/null
if [ "$HARNESS_ROLE" = validator ]; then echo 'checked'; echo '<verdict>PASS</verdict>'; exit 0; fi
C={control}
echo "$HARNESS_FEATURE_ID $HARNESS_ITERATION" >> "$C/started"
touch "$C/$HARNESS_FEATURE_ID.started"
if [ -e "$C/$HARNESS_FEATURE_ID.hold" ]; then
  i=0
  while [ ! -e "$C/$HARNESS_FEATURE_ID.release" ] && [ $i -lt 3000 ]; do sleep 0.1; i=$((i+1)); done
fi
echo "$HARNESS_FEATURE_ID" > "$HARNESS_FEATURE_ID.txt"
echo '<promise>TASK_COMPLETE</promise>'
"#,
        control = control.display()
    );
    let agent = project.root().join("agent.sh");
    write_executable(&agent, &script);
    project.write_state(
        "config.yaml",
        &format!(
            "agent:\n  command: [{:?}]\nvalidate: true\nexecutor:\n  poll_secs: 2\n{executor_extra}",
            agent.display().to_string()
        ),
    );
    project
}

fn control(project: &Project) -> PathBuf {
    project.root().join("control")
}

fn touch(path: PathBuf) {
    std::fs::write(path, "").unwrap();
}

/// Waits (at most `seconds`) until `done` holds.
fn wait_until(seconds: u64, what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Starts `command` in its own process group, its stderr into `log`.
fn spawn(mut command: Command, log: &Path) -> Child {
    command
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .process_group(0)
        .spawn()
        .unwrap()
}

/// Runs `command` to its end, killing it after `seconds`.
fn run_bounded(mut command: Command, seconds: u64) -> Output {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let (mut stdout, mut stderr) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let out = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        stdout.read_to_end(&mut bytes).unwrap();
        bytes
    });
    let err = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        stderr.read_to_end(&mut bytes).unwrap();
        bytes
    });
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            kill_group(&child);
            panic!("still running after {seconds} s");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

fn kill_group(child: &Child) {
    // SAFETY: kill(2) on the process group of our own child.
    unsafe {
        libc::kill(-(child.id() as i32), libc::SIGKILL);
    }
}

/// The job recorded for `feature` (job.json).
fn job(project: &Project, feature: &str) -> serde_json::Value {
    serde_json::from_str(&project.read_state(&format!("runs/{feature}/job.json")))
        .unwrap_or_else(|e| panic!("job.json of {feature}: {e}"))
}

fn job_id(project: &Project, feature: &str) -> String {
    job(project, feature)["id"].as_str().unwrap().to_string()
}

/// The jobs Slurm ran for this project's features: feature -> ids, from their names.
fn jobs_by_feature(cluster: &Cluster, project: &Project) -> Vec<(String, String, String)> {
    let name = job(project, "F-001")["name"].as_str().unwrap().to_string();
    let tag = name.rsplit('-').next().unwrap().to_string();
    let mut jobs: Vec<(String, String, String)> = cluster
        .finished_jobs()
        .into_iter()
        .filter_map(|(id, name, state)| {
            let feature = name
                .strip_prefix("harness-")?
                .strip_suffix(&format!("-{tag}"))?;
            Some((feature.to_string(), id, state))
        })
        .collect();
    jobs.sort_by_key(|(feature, id, _)| (feature.clone(), id.parse::<u64>().unwrap_or(0)));
    jobs
}

const DIAMOND: &str = "features:\n  - {id: F-001, title: one}\n  - {id: F-002, title: two, depends_on: [F-001]}\n  - {id: F-003, title: three, depends_on: [F-001]}\n  - {id: F-004, title: four, depends_on: [F-002, F-003]}\n";

#[test]
#[ignore = "needs a Slurm cluster: make test-slurm"]
fn a_mission_runs_one_slurm_job_per_feature_in_dependency_order_and_merges_them_all() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let project = project(DIAMOND, "  kind: slurm\n");
    let out = run_bounded(cluster.run_sh(&project, &["all"]), 300);
    let stderr = text(&out.stderr);
    assert_eq!(code(&out), 0, "{stderr}");
    assert!(text(&out.stdout).contains("4/4 features done"), "{stderr}");
    let jobs = jobs_by_feature(&cluster, &project);
    let features: Vec<&str> = jobs.iter().map(|(f, ..)| f.as_str()).collect();
    assert_eq!(
        features,
        ["F-001", "F-002", "F-003", "F-004"],
        "one job each: {jobs:?}"
    );
    for (feature, id, state) in &jobs {
        assert_eq!(state, "COMPLETED", "{feature}");
        assert_eq!(project.state(feature)["status"], "done", "{feature}");
        assert_eq!(&job_id(&project, feature), id, "{feature}");
        assert_eq!(job(&project, feature)["state"], "COMPLETED");
        let output = project
            .state_dir()
            .join(format!("runs/{feature}/jobs/slurm-{id}.out"));
        assert!(
            output.is_file(),
            "the job's output is under its feature's runs: {output:?}"
        );
        assert!(stderr.contains(&format!("== {feature}: submitted as Slurm job {id}")));
        // Merged back into the project's branch.
        let merged = std::fs::read_to_string(project.workdir.join(format!("{feature}.txt")));
        assert_eq!(merged.unwrap().trim(), feature);
    }
    // Dependents were submitted only after their dependencies.
    let id = |f: &str| {
        jobs.iter()
            .find(|j| j.0 == f)
            .unwrap()
            .1
            .parse::<u64>()
            .unwrap()
    };
    assert!(id("F-001") < id("F-002") && id("F-001") < id("F-003"));
    assert!(id("F-002") < id("F-004") && id("F-003") < id("F-004"));

    let out = project.run(&["status", "--json"]);
    let board: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let row = &board["features"][3];
    assert_eq!(row["job"]["id"].as_str().unwrap(), id("F-004").to_string());
    assert_eq!(row["job"]["state"], "COMPLETED");
    let board = text(&project.run(&["status"]).stdout);
    assert!(
        board.contains(&format!("{} COMPLETED", id("F-004"))),
        "{board}"
    );
}

#[test]
#[ignore = "needs a Slurm cluster: make test-slurm"]
fn a_killed_coordinator_re_attaches_to_its_jobs_and_submits_none_twice() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    // The kind comes from the command line this time.
    let features = "features:\n  - {id: F-001, title: one}\n  - {id: F-002, title: two, depends_on: [F-001]}\n  - {id: F-003, title: three}\n";
    let project = project(features, "");
    let control = control(&project);
    touch(control.join("F-001.hold"));
    touch(control.join("F-003.hold"));

    let log = project.root().join("first.log");
    let first = spawn(
        cluster.run_sh(&project, &["all", "--executor", "slurm"]),
        &log,
    );
    wait_until(120, "F-001 and F-003 to start in their jobs", || {
        control.join("F-001.started").exists() && control.join("F-003.started").exists()
    });
    let (one, three) = (job_id(&project, "F-001"), job_id(&project, "F-003"));
    kill_group(&first);
    let _ = { first }.wait();
    // The jobs go on without their coordinator.
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(cluster.job_state(&one).as_deref(), Some("RUNNING"));
    assert_eq!(cluster.job_state(&three).as_deref(), Some("RUNNING"));

    let log = project.root().join("second.log");
    let second = spawn(
        cluster.run_sh(&project, &["all", "--executor", "slurm"]),
        &log,
    );
    wait_until(60, "the second coordinator to re-attach", || {
        std::fs::read_to_string(&log).is_ok_and(|t| t.matches("re-attached").count() == 2)
    });
    touch(control.join("F-001.release"));
    touch(control.join("F-003.release"));
    let out = second.wait_with_output().unwrap();
    let said = std::fs::read_to_string(&log).unwrap();
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(
        said.contains(&format!("== F-001: re-attached to Slurm job {one}")),
        "{said}"
    );
    assert!(
        said.contains(&format!("== F-003: re-attached to Slurm job {three}")),
        "{said}"
    );
    assert!(!said.contains("F-001: submitted"), "{said}");

    let jobs = jobs_by_feature(&cluster, &project);
    let features: Vec<&str> = jobs.iter().map(|(f, ..)| f.as_str()).collect();
    assert_eq!(
        features,
        ["F-001", "F-002", "F-003"],
        "no second job: {jobs:?}"
    );
    for feature in ["F-001", "F-002", "F-003"] {
        assert_eq!(project.state(feature)["status"], "done", "{feature}");
    }
    // Each feature's agent ran once: nothing was run twice.
    let started = std::fs::read_to_string(control.join("started")).unwrap();
    assert_eq!(started.lines().count(), 3, "{started}");
}

#[test]
#[ignore = "needs a Slurm cluster: make test-slurm"]
fn a_cancelled_job_leaves_its_feature_interrupted_and_the_next_all_resumes_it() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let features = "features:\n  - {id: F-001, title: one}\n  - {id: F-002, title: two, depends_on: [F-001]}\n";
    let project = project(features, "  kind: slurm\n");
    let control = control(&project);
    touch(control.join("F-001.hold"));

    let log = project.root().join("first.log");
    let first = spawn(cluster.run_sh(&project, &["all"]), &log);
    wait_until(120, "F-001 to start in its job", || {
        control.join("F-001.started").exists()
    });
    let id = job_id(&project, "F-001");
    let out = cluster.command("scancel").arg(&id).output().unwrap();
    assert!(out.status.success(), "scancel: {}", text(&out.stderr));
    let out = first.wait_with_output().unwrap();
    let said = std::fs::read_to_string(&log).unwrap();
    // The mission goes on without F-001 (F-002 waits for it) and ends unfinished.
    assert_eq!(out.status.code(), Some(3), "{said}");
    assert!(
        said.contains(&format!("== F-001 ended (Slurm job {id} CANCELLED)")),
        "{said}"
    );
    assert!(!project.state_dir().join("runs/F-002/state.json").exists());
    // Interrupted, as Ctrl-C leaves it: no crash, no iteration used up.
    assert_eq!(
        project.state("F-001")["attempts"][0]["outcome"],
        "interrupted"
    );
    let board = text(&project.run(&["status"]).stdout);
    let line = board.lines().find(|l| l.starts_with("F-001")).unwrap();
    assert!(line.contains(&format!("{id} CANCELLED")), "{board}");
    assert!(line.contains("worker interrupted"), "{board}");

    touch(control.join("F-001.release"));
    let out = run_bounded(cluster.run_sh(&project, &["all"]), 300);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(project.state("F-001")["status"], "done");
    assert_eq!(project.state("F-002")["status"], "done");
    // The resumed run was a second job of F-001, after the cancelled one.
    let jobs = jobs_by_feature(&cluster, &project);
    let states: Vec<(&str, &str)> = jobs
        .iter()
        .map(|(f, _, s)| (f.as_str(), s.as_str()))
        .collect();
    assert_eq!(
        states,
        [
            ("F-001", "CANCELLED"),
            ("F-001", "COMPLETED"),
            ("F-002", "COMPLETED")
        ],
        "{jobs:?}"
    );
}

#[test]
#[ignore = "needs a Slurm cluster: make test-slurm"]
fn a_job_killed_at_its_time_limit_is_resumed_by_the_next_all() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let features = "features:\n  - {id: F-001, title: one}\n";
    // Slurm's shortest time limit is a minute; it enforces it within about half a minute more.
    let project = project(features, "  kind: slurm\n  sbatch_args: [--time=1]\n");
    let control = control(&project);
    touch(control.join("F-001.hold"));
    let out = run_bounded(cluster.run_sh(&project, &["all"]), 300);
    let said = text(&out.stderr);
    assert_eq!(code(&out), 3, "{said}");
    let id = job_id(&project, "F-001");
    assert!(
        said.contains(&format!("== F-001 ended (Slurm job {id} TIMEOUT)")),
        "{said}"
    );
    assert_eq!(job(&project, "F-001")["state"], "TIMEOUT");
    assert_eq!(
        project.state("F-001")["attempts"][0]["outcome"],
        "interrupted"
    );

    touch(control.join("F-001.release"));
    let out = run_bounded(cluster.run_sh(&project, &["all"]), 300);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let state = project.state("F-001");
    assert_eq!(state["status"], "done");
    // The iteration in flight was lost, nothing else: it ran again, once.
    let started = std::fs::read_to_string(control.join("started")).unwrap();
    let runs: Vec<&str> = started.lines().collect();
    assert!(
        runs.len() == 2 && runs.iter().all(|r| r.starts_with("F-001 ")),
        "{started}"
    );
}
