//! A full disk, or a file-size limit: the write that does not fit fails with a one-line error
//! naming the file and exit 74, the failed write taken back (every file old or new), no temp file
//! left under `.harness/`; with room again, the run goes on. The limit is set as a user sets it,
//! with bash's `ulimit -f` and nothing else, so a binary that lets SIGXFSZ kill it (exit 153,
//! its cleanup never run) fails these tests. A real full disk is a small tmpfs, mounted in a
//! private mount namespace that dies with the test's shell.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use harness_core::state::memory::RawEntry;
use harness_tests::{bin_dir, code, text, Project};

const ONE_FEATURE: &str = "features:\n  - id: F-001\n    title: Hello\n";
const DONE_AT_ONCE: &str = "scripts:\n  - match: {role: validator}\n    steps: [[print: '<verdict>PASS</verdict>']]\n  - steps: [[print: 'TRICK: it works', promise: true]]\n";
const DISK_FULL: i32 = 74;

/// `command` run by bash after `ulimit -f <kib>`, with the same environment.
fn with_file_limit(command: &Command, kib: u64) -> Command {
    let mut limited = Command::new("bash");
    limited
        .arg("-c")
        .arg(r#"ulimit -f "$1" && shift && exec "$@""#)
        .arg("bash")
        .arg(kib.to_string())
        .arg(command.get_program())
        .args(command.get_args())
        .stdin(Stdio::null());
    for (key, value) in command.get_envs() {
        match value {
            Some(value) => limited.env(key, value),
            None => limited.env_remove(key),
        };
    }
    if let Some(dir) = command.get_current_dir() {
        limited.current_dir(dir);
    }
    limited
}

/// A role binary's command, as [`Project::role`] runs it.
fn role_command(project: &Project, name: &str, args: &[&str]) -> Command {
    let mut command = project.curator_command(&[]);
    let mut role = Command::new(bin_dir().join(name));
    role.args(args).arg("-C").arg(&project.workdir);
    for (key, value) in command.get_envs() {
        match value {
            Some(value) => role.env(key, value),
            None => role.env_remove(key),
        };
    }
    command = role;
    command
}

/// Exit 74, one error line naming `file` and the reason, and nothing half-written.
fn assert_full(project: &Project, out: &Output, file: &str, what: &str) {
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(DISK_FULL), "{what}: {stderr}");
    let errors: Vec<&str> = stderr.lines().filter(|l| l.contains("error")).collect();
    assert!(
        errors.len() == 1 && errors[0].contains(file) && errors[0].contains("File too large"),
        "{what}: not one error line naming {file}:\n{stderr}"
    );
    assert_eq!(
        project.leftovers(),
        Vec::<PathBuf>::new(),
        "{what}: temp files left"
    );
    if project.state_dir().join("runs/F-001/state.json").exists() {
        let _ = project.state("F-001");
    }
    let raw = project.read_state("raw.md");
    for line in raw.lines() {
        assert_eq!(RawEntry::parse(line).unwrap().to_string(), line, "{what}");
    }
}

/// raw.md filled with whole entries to 10 bytes under `kib` KiB: no entry fits any more.
fn fill_raw(project: &Project, kib: usize) -> String {
    let line = |text: &str| format!("[2026-04-24T10:05:12Z] worker F-009 TRICK: {text}\n");
    let filler = line("an entry of some length to fill the log");
    let room = kib * 1024 - 10;
    let mut raw = filler.repeat(room / filler.len() - 1);
    let last = line("");
    raw.push_str(&line(&"x".repeat(room - raw.len() - last.len())));
    assert_eq!(raw.len(), room);
    project.write_state("raw.md", &raw);
    raw
}

#[test]
fn a_file_size_limit_fails_the_worker_cleanly_by_run_sh_or_by_hand() {
    for by_hand in [false, true] {
        let project = Project::new(ONE_FEATURE, DONE_AT_ONCE);
        let raw = fill_raw(&project, 100);
        let command = match by_hand {
            true => role_command(&project, "worker", &["--feature", "F-001"]),
            false => project.command(&["F-001"]),
        };
        let what = if by_hand { "worker" } else { "./run.sh F-001" };
        let out = with_file_limit(&command, 100).output().unwrap();
        assert_full(&project, &out, "raw.md", what);
        assert_eq!(project.read_state("raw.md"), raw, "{what}: raw.md changed");
        // With room again, the feature resumes: nothing was lost.
        let out = project.run(&["F-001"]);
        assert_eq!(code(&out), 0, "{what}: {}", text(&out.stderr));
        assert!(project.read_state("raw.md").starts_with(&raw));
    }
}

#[test]
fn a_file_size_limit_fails_the_validator_cleanly() {
    let project = Project::new(ONE_FEATURE, DONE_AT_ONCE);
    project.config("", "validate: true\n");
    let out = project.worker(&["--feature", "F-001"]);
    assert_eq!(code(&out), 11, "{}", text(&out.stderr));
    let raw = fill_raw(&project, 100);
    let validator = role_command(&project, "validator", &["--feature", "F-001"]);
    let out = with_file_limit(&validator, 100).output().unwrap();
    assert_full(&project, &out, "raw.md", "validator");
    assert_eq!(project.read_state("raw.md"), raw);
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(project.state("F-001")["status"], "done");
}

#[test]
fn a_file_size_limit_fails_the_curator_cleanly_and_leaves_no_temp_in_the_archive() {
    let project = Project::new("features: []\n", "steps: [[print: hi]]\n");
    project.write_state("mission-id", "m-disk-full\n");
    let raw = fill_raw(&project, 300);
    let before = project.snapshot();
    for (what, command) in [
        ("curator", project.curator_command(&[])),
        ("./run.sh curate", project.command(&["curate"])),
    ] {
        let out = with_file_limit(&command, 100).output().unwrap();
        assert_full(&project, &out, "archive/raw-000001.md", what);
        assert_eq!(project.snapshot(), before, "{what}: the state changed");
    }
    let out = project.curator(&[]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert!(project.read_state("raw.md").len() < raw.len() / 10);
    assert!(project.read_state("archive/raw-000001.md").len() > raw.len() / 2);
}

#[test]
fn a_disk_too_full_for_the_prompt_refuses_before_anything_starts() {
    let project = Project::new(ONE_FEATURE, DONE_AT_ONCE);
    let before = project.snapshot();
    let out = with_file_limit(&project.command(&["F-001"]), 1)
        .output()
        .unwrap();
    assert_full(&project, &out, "prompt.md", "a 1 KiB limit");
    assert_eq!(project.snapshot(), before);
    assert!(
        std::fs::read_dir(project.state_dir().join("runs/F-001"))
            .map(|entries| entries.count() == 0)
            .unwrap_or(true),
        "a run directory was left behind"
    );
}

#[test]
fn an_agents_flood_past_the_limit_cuts_its_log_and_the_run_goes_on() {
    let project = Project::new(ONE_FEATURE, DONE_AT_ONCE);
    project.shell_agent(
        "head -c 300000 /dev/zero | tr '\\0' x\nprintf '\\nTRICK: after\\n<promise>TASK_COMPLETE</promise>\\n'",
    );
    let out = with_file_limit(&project.command(&["F-001", "--quiet"]), 100)
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(code(&out), 0, "{stderr}");
    assert!(
        stderr.contains("output.log is incomplete: File too large"),
        "{stderr}"
    );
    let dir = &project.run_dirs("F-001")[0];
    assert_eq!(
        std::fs::metadata(dir.join("output.log")).unwrap().len(),
        100 * 1024
    );
    assert!(project.read_state("raw.md").contains("TRICK: after"));
    assert_eq!(project.leftovers(), Vec::<PathBuf>::new());
}

/// Runs `script` in a private mount namespace (`unshare -m`), where whatever it mounts goes when
/// it ends; `None` when this machine cannot (no unshare, no privilege).
fn in_mount_namespace(script: &str, args: &[&Path]) -> Option<Output> {
    let probe = Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c"])
        .arg("mount -t tmpfs -o size=64k tmpfs \"$1\"")
        .arg("sh")
        .arg(std::env::temp_dir())
        .stderr(Stdio::null())
        .status();
    if !probe.is_ok_and(|status| status.success()) {
        return None;
    }
    let mut command = Command::new("unshare");
    command
        .args([
            "-m",
            "--propagation",
            "private",
            "bash",
            "-c",
            script,
            "bash",
        ])
        .args(args)
        .stdin(Stdio::null());
    Some(command.output().unwrap())
}

#[test]
fn a_really_full_disk_fails_cleanly() {
    // The project is copied onto a 1 MiB tmpfs filled to the last byte, runs there (a feature,
    // and a curator pass), and what it left is copied back out for the checks.
    let project = Project::new(ONE_FEATURE, DONE_AT_ONCE);
    project.write_state("mission-id", "m-full\n");
    fill_raw(&project, 100);
    let before = project.snapshot();
    let mount = project.root().join("mount");
    let result = project.root().join("result");
    std::fs::create_dir_all(&mount).unwrap();
    std::fs::create_dir_all(&result).unwrap();
    let run_sh = harness_tests::repo_root().join("run.sh");
    let script = r#"
        set -u
        mount -t tmpfs -o size=1m tmpfs "$1" || exit 90
        cp -a "$2" "$1/project"
        head -c 2m /dev/zero > "$1/filler" 2>/dev/null
        for args in "F-001" "curate"; do
            HARNESS_BIN_DIR="$4" "$3" -C "$1/project" $args >"$5/$args.out" 2>"$5/$args.err"
            echo $? > "$5/$args.code"
        done
        cp -a "$1/project/.harness" "$5/state"
    "#;
    let Some(out) = in_mount_namespace(
        script,
        &[&mount, &project.workdir, &run_sh, &bin_dir(), &result],
    ) else {
        // A test never skips silently under CI (cargo hides a passing test's stderr).
        assert!(
            std::env::var_os("CI").is_none(),
            "a_really_full_disk_fails_cleanly: cannot mount a tmpfs (unshare -m) and CI is set"
        );
        eprintln!("a_really_full_disk_fails_cleanly: cannot mount a tmpfs here; the `ulimit -f` tests cover a full disk");
        return;
    };
    assert!(out.status.success(), "{}", text(&out.stderr));
    // The first write of each: the lock's holder line.
    for (args, file) in [
        ("F-001", "locks/F-001.lock"),
        ("curate", "locks/summary.md.lock"),
    ] {
        let read =
            |ext: &str| std::fs::read_to_string(result.join(format!("{args}.{ext}"))).unwrap();
        let stderr = read("err");
        assert_eq!(
            read("code").trim(),
            DISK_FULL.to_string(),
            "{args}: {stderr}"
        );
        let errors: Vec<&str> = stderr.lines().filter(|l| l.contains("error")).collect();
        assert!(
            errors.len() == 1 && errors[0].contains(file) && errors[0].contains("No space left"),
            "{args}: not one error line naming {file}:\n{stderr}"
        );
    }
    // What the full disk left is what there was, and no temp file.
    let left = walkdir::WalkDir::new(result.join("state"))
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_type().is_file() && !e.path().components().any(|c| c.as_os_str() == "locks")
        })
        .map(|e| {
            let relative = e.path().strip_prefix(result.join("state")).unwrap();
            (
                project.state_dir().join(relative),
                std::fs::read(e.path()).unwrap(),
            )
        });
    let mut left: Vec<_> = left.collect();
    left.sort();
    assert_eq!(left, before);
    // Nothing stays mounted.
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
    assert!(!mounts.contains(&mount.display().to_string()), "{mounts}");
}
