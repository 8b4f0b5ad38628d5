//! `./run.sh all --executor slurm` without a cluster: Slurm's commands missing, or stand-ins that
//! refuse a job or keep one running, so the errors and the coordinator's lock are tested in
//! `make test`. The missions themselves run on a real cluster in `make test-slurm`.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};

use harness_tests::{code, text, wait_until, write_executable, Project};

const ONE_FEATURE: &str = "features:\n  - id: F-001\n    title: Hello\n";
const SLURM_COMMANDS: [&str; 6] = ["sbatch", "squeue", "scancel", "sacct", "sinfo", "srun"];

/// A directory of links to every program of this PATH but Slurm's: a machine without Slurm.
fn path_without_slurm(project: &Project) -> PathBuf {
    let dir = project.root().join("no-slurm-bin");
    std::fs::create_dir_all(&dir).unwrap();
    let path = std::env::var_os("PATH").unwrap_or_default();
    for source in std::env::split_paths(&path) {
        for entry in std::fs::read_dir(&source).into_iter().flatten().flatten() {
            let name = entry.file_name();
            if SLURM_COMMANDS.iter().any(|c| name == *c) || dir.join(&name).exists() {
                continue;
            }
            let _ = std::os::unix::fs::symlink(entry.path(), dir.join(&name));
        }
    }
    dir
}

/// Writes a stand-in for a Slurm command into `dir`.
fn stand_in(dir: &Path, name: &str, script: &str) {
    write_executable(&dir.join(name), &format!("#!/bin/sh\n{script}\n"));
}

/// `./run.sh <args>` with `path` as PATH: its exit code and stderr.
fn run_with_path(project: &Project, args: &[&str], path: impl AsRef<OsStr>) -> (i32, String) {
    let out = project.command(args).env("PATH", path).output().unwrap();
    (code(&out), text(&out.stderr))
}

/// `dir` before this PATH.
fn path_with(dir: &Path) -> OsString {
    let mut dirs = vec![dir.to_path_buf()];
    dirs.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(dirs).unwrap()
}

fn slurm_project(executor_extra: &str) -> Project {
    let project = Project::new(ONE_FEATURE, "steps:\n  - [promise: true]\n");
    project.config("", &format!("executor:\n  kind: slurm\n{executor_extra}"));
    project
}

#[test]
fn without_slurms_commands_the_error_names_the_missing_one_and_nothing_is_submitted() {
    let project = slurm_project("");
    let bin = path_without_slurm(&project);
    let (code, stderr) = run_with_path(&project, &["all"], &bin);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("squeue is not installed here (not found in PATH)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("hint: ") && stderr.contains("--executor local"),
        "{stderr}"
    );
    assert!(!project.state_dir().join("runs").exists());

    // Only sbatch missing: named, with the command that was tried.
    stand_in(&bin, "squeue", "exit 0");
    let (code, stderr) = run_with_path(&project, &["all"], &bin);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("sbatch is not installed here"), "{stderr}");
    assert!(
        stderr.contains("the command was: sbatch --parsable --job-name=harness-F-001-"),
        "{stderr}"
    );
    assert!(!project.state_dir().join("runs/F-001/job.json").exists());
}

#[test]
fn a_job_the_cluster_refuses_is_an_error_with_slurms_message_and_the_command_tried() {
    let project = slurm_project("  sbatch_args: [--partition=nosuch]\n");
    let bin = project.root().join("fake-slurm");
    stand_in(&bin, "squeue", "exit 0");
    stand_in(
        &bin,
        "sbatch",
        "cat >/dev/null\necho 'sbatch: error: invalid partition specified: nosuch' >&2\necho 'sbatch: error: Batch job submission failed: Invalid partition name specified' >&2\nexit 1",
    );
    let (code, stderr) = run_with_path(&project, &["all"], path_with(&bin));
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("Slurm refused the job of F-001: sbatch: error: invalid partition specified: nosuch / sbatch: error: Batch job submission failed"),
        "{stderr}"
    );
    assert!(stderr.contains("executor.sbatch_args"), "{stderr}");
    assert!(
        stderr.contains("the command was: sbatch --parsable --job-name=harness-F-001-"),
        "{stderr}"
    );
    assert!(stderr.contains(" --partition=nosuch"), "{stderr}");
    assert!(!project.state_dir().join("runs/F-001/job.json").exists());
    assert!(!project.state_dir().join("runs/F-001/state.json").exists());
}

#[test]
fn an_unknown_executor_is_refused() {
    let project = Project::new(ONE_FEATURE, "steps:\n  - [promise: true]\n");
    let out = project.run(&["all", "--executor", "pbs"]);
    assert_eq!(code(&out), 1);
    assert!(
        text(&out.stderr).contains("unknown executor \"pbs\": use local or slurm"),
        "{}",
        text(&out.stderr)
    );
    let out = project.run(&["all", "--executor"]);
    assert_eq!(code(&out), 1);
    assert!(!project.state_dir().join("runs").exists());
}

/// A second coordinator could submit a feature whose job the first has queued: it is refused.
#[test]
fn a_second_coordinator_of_the_same_mission_exits_75_naming_the_first() {
    let project = slurm_project("  poll_secs: 1\n");
    let bin = project.root().join("fake-slurm");
    let name = project.root().join("job-name");
    // sbatch keeps the job's name; squeue shows that job running, forever.
    stand_in(
        &bin,
        "sbatch",
        &format!(
            "cat >/dev/null\nfor a; do case $a in --job-name=*) echo \"${{a#--job-name=}}\" > {name:?};; esac; done\necho 42"
        ),
    );
    stand_in(
        &bin,
        "squeue",
        &format!("[ -e {name:?} ] && echo \"42|$(cat {name:?})|RUNNING\"; exit 0"),
    );
    let first = project
        .command(&["all", "--quiet"])
        .env("PATH", path_with(&bin))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until("the job record", || {
        project.state_dir().join("runs/F-001/job.json").exists()
    });

    let (code, stderr) = run_with_path(&project, &["all"], path_with(&bin));
    let (first_code, said) = stop(first);
    assert_eq!(code, 75, "{stderr}");
    assert!(stderr.contains("the mission's coordinator"), "{stderr}");
    assert!(stderr.contains("./run.sh all --executor slurm"), "{stderr}");
    let record: serde_json::Value =
        serde_json::from_str(&project.read_state("runs/F-001/job.json")).unwrap();
    assert_eq!(record["id"], "42");
    assert_eq!(record["state"], "RUNNING");

    // Stopped, the coordinator leaves its job to the cluster, says so, and exits 130.
    assert_eq!(first_code, Some(130), "{said}");
    assert!(
        said.contains("these jobs go on: F-001 (Slurm job 42)"),
        "{said}"
    );
    // `status` shows the job as the cluster does.
    let board = text(
        &project
            .command(&["status"])
            .env("PATH", path_with(&bin))
            .output()
            .unwrap()
            .stdout,
    );
    assert!(board.contains("42 RUNNING"), "{board}");
}

/// SIGTERM, as `kill` would; its exit code and what it said on stderr.
fn stop(child: Child) -> (Option<i32>, String) {
    // SAFETY: kill(2) on our own child.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let out = child.wait_with_output().unwrap();
    (out.status.code(), text(&out.stderr))
}
