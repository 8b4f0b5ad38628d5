//! Runs the built `scripted-agent` binary against scenarios in temporary directories.

use std::fs;
use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_scripted-agent");

/// Variables that would leak in from a harness running these tests.
const ENV: &[&str] = &[
    "HARNESS_PROMPT_FILE",
    "HARNESS_ROLE",
    "HARNESS_FEATURE_ID",
    "HARNESS_ITERATION",
    "HARNESS_RUN_ID",
    "HARNESS_WORKDIR",
    "HARNESS_STATE_DIR",
    "HARNESS_COMPLETION_PROMISE",
    "SCRIPTED_AGENT_SCENARIO",
    "SCRIPTED_AGENT_STATE_DIR",
];

/// A temporary working directory holding `scenario.yaml`.
struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    fn new(scenario: &str) -> Sandbox {
        let sandbox = Sandbox {
            dir: tempfile::tempdir().unwrap(),
        };
        fs::write(sandbox.path("scenario.yaml"), scenario).unwrap();
        sandbox
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// The agent, in the sandbox, with a clean environment, no stdin and no arguments.
    fn bare_command(&self) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.current_dir(self.dir.path()).stdin(Stdio::null());
        for var in ENV {
            cmd.env_remove(var);
        }
        cmd
    }

    /// The agent on `scenario.yaml`.
    fn command(&self) -> Command {
        let mut cmd = self.bare_command();
        cmd.arg("--scenario").arg("scenario.yaml");
        cmd
    }

    fn run(&self, env: &[(&str, &str)]) -> Output {
        self.command().envs(env.iter().copied()).output().unwrap()
    }
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(output.status.success(), "git {args:?}: {output:?}");
    stdout(&output)
}

#[test]
fn steps_advance_across_invocations_then_repeat_the_last() {
    let s = Sandbox::new("steps:\n  - print: first {step}\n  - print: second {step}\n");
    let outs: Vec<String> = (0..4).map(|_| stdout(&s.run(&[]))).collect();
    assert_eq!(
        outs,
        ["first 1\n", "second 2\n", "second 2\n", "second 2\n"]
    );
    // The default state directory sits beside the scenario.
    let pos = fs::read_to_string(s.path("scenario.yaml.state/0-_-_.pos")).unwrap();
    assert_eq!(pos.trim(), "4");
}

#[test]
fn after_last_fail_exits_97() {
    let s = Sandbox::new("after_last: fail\nsteps:\n  - print: only\n");
    let first = s.run(&[]);
    assert!(first.status.success());
    assert_eq!(stdout(&first), "only\n");
    let second = s.run(&[]);
    assert_eq!(second.status.code(), Some(97));
    assert_eq!(stdout(&second), "");
    assert!(stderr(&second).contains("all 1 steps played"), "{second:?}");
}

#[test]
fn scripts_are_matched_by_role_and_feature_each_with_its_own_position() {
    let s = Sandbox::new(
        r#"
scripts:
  - match: {role: validator}
    steps: [[print: "validate {feature}"]]
  - match: {role: worker, feature: F-002}
    steps: [[print: "special 1"], [print: "special 2"]]
  - steps: [[print: "generic {role} {feature} step {step}"], [print: "generic again"]]
"#,
    );
    let run = |role: &str, feature: &str| {
        let out = s.run(&[("HARNESS_ROLE", role), ("HARNESS_FEATURE_ID", feature)]);
        assert!(out.status.success(), "{out:?}");
        stdout(&out)
    };
    assert_eq!(run("worker", "F-002"), "special 1\n");
    assert_eq!(run("worker", "F-001"), "generic worker F-001 step 1\n");
    assert_eq!(run("validator", "F-002"), "validate F-002\n");
    assert_eq!(run("worker", "F-002"), "special 2\n");
    assert_eq!(run("worker", "F-003"), "generic worker F-003 step 1\n");
    assert_eq!(run("worker", "F-001"), "generic again\n");
    assert!(s.path("scenario.yaml.state/1-worker-F-002.pos").exists());
    assert!(s.path("scenario.yaml.state/0-validator-F-002.pos").exists());
}

#[test]
fn no_matching_script_is_an_error() {
    let s = Sandbox::new("scripts:\n  - match: {role: validator}\n    steps: [[print: v]]\n");
    let out = s.run(&[("HARNESS_ROLE", "worker")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no script matches"), "{out:?}");
}

#[test]
fn prompt_comes_from_stdin_argument_or_prompt_file() {
    let s = Sandbox::new("steps:\n  - echo_prompt: true\n");

    let mut child = s
        .command()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"from stdin\n")
        .unwrap();
    assert_eq!(stdout(&child.wait_with_output().unwrap()), "from stdin\n");

    // A prompt may start with a dash, like a Markdown list.
    let prompt = "- from the argument";
    let out = s.command().arg(prompt).output().unwrap();
    assert_eq!(stdout(&out), "- from the argument\n");

    fs::write(s.path("prompt.md"), "from the file").unwrap();
    let out = s
        .command()
        .arg("ignored argument")
        .env("HARNESS_PROMPT_FILE", s.path("prompt.md"))
        .output()
        .unwrap();
    assert_eq!(stdout(&out), "from the file\n");
}

#[test]
fn stdin_is_not_read_when_the_prompt_comes_from_elsewhere() {
    let s = Sandbox::new("steps:\n  - echo_prompt: true\n");
    let mut child = s
        .command()
        .arg("argument")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Holding stdin open: an agent reading it would never finish.
    let _stdin = child.stdin.take();
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("the agent blocked on stdin");
        }
        thread::sleep(Duration::from_millis(10));
    };
    assert!(status.success());
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    assert_eq!(out, "argument\n");
}

#[test]
fn expect_and_reject_prompt() {
    let s = Sandbox::new(
        "steps:\n  - [expect_prompt: \"feature {feature}\", reject_prompt: forbidden, print: ok]\n",
    );
    let run = |prompt: &str| {
        s.command()
            .arg(prompt)
            .env("HARNESS_FEATURE_ID", "F-7")
            .output()
            .unwrap()
    };
    let good = run("work on feature F-7 please");
    assert!(good.status.success());
    assert_eq!(stdout(&good), "ok\n");

    let missing = run("work on feature F-8");
    assert_eq!(missing.status.code(), Some(98));
    assert_eq!(stdout(&missing), "");
    assert_eq!(
        stderr(&missing),
        "scripted-agent: prompt does not contain \"f·e·a·t·u·r·e· ·F·-·7\"\n"
    );

    let rejected = run("feature F-7 is forbidden");
    assert_eq!(rejected.status.code(), Some(98));
    assert!(
        stderr(&rejected).contains("\"f·o·r·b·i·d·d·e·n\""),
        "{rejected:?}"
    );
}

#[test]
fn placeholders_come_from_the_harness_environment() {
    let s = Sandbox::new(
        "steps:\n  - [print: \"{role}/{feature}/{iteration}/{run_id}/{step} {unknown}\", promise: true, stderr: \"to {promise}\"]\n",
    );
    let out = s.run(&[
        ("HARNESS_ROLE", "worker"),
        ("HARNESS_FEATURE_ID", "F-001"),
        ("HARNESS_ITERATION", "4"),
        ("HARNESS_RUN_ID", "run-9"),
        ("HARNESS_COMPLETION_PROMISE", "ALL_DONE"),
    ]);
    assert_eq!(
        stdout(&out),
        "worker/F-001/4/run-9/1 {unknown}\n<promise>ALL_DONE</promise>\n"
    );
    assert_eq!(stderr(&out), "to ALL_DONE\n");

    let s = Sandbox::new("steps:\n  - promise: true\n");
    assert_eq!(stdout(&s.run(&[])), "<promise>TASK_COMPLETE</promise>\n");
}

#[test]
fn write_append_and_commit() {
    let s = Sandbox::new(
        r#"
steps:
  - - write: {path: src/deep/notes.txt, content: "feature {feature}\n"}
    - append: {path: log/progress.md, content: "step {step}\n"}
    - commit: "{feature}: step {step}"
  - - write: {path: src/deep/notes.txt, content: "replaced\n"}
    - append: {path: log/progress.md, content: "step {step}\n"}
    - commit: "{feature}: step {step}"
  - - commit: nothing changed
"#,
    );
    let dir = s.dir.path();
    git(dir, &["init", "-q"]);
    // The state directory must not end up in the commits.
    fs::write(s.path(".gitignore"), "scenario.yaml*\n").unwrap();
    let env = [("HARNESS_FEATURE_ID", "F-3")];

    for _ in 0..2 {
        let out = s.run(&env);
        assert!(out.status.success(), "{out:?}");
    }
    assert_eq!(
        fs::read_to_string(s.path("src/deep/notes.txt")).unwrap(),
        "replaced\n"
    );
    assert_eq!(
        fs::read_to_string(s.path("log/progress.md")).unwrap(),
        "step 1\nstep 2\n"
    );
    assert_eq!(
        git(dir, &["log", "--format=%s|%an|%ae|%cn"]),
        "F-3: step 2|scripted-agent|scripted-agent@example.invalid|scripted-agent\n\
         F-3: step 1|scripted-agent|scripted-agent@example.invalid|scripted-agent\n"
    );
    assert_eq!(git(dir, &["status", "--porcelain"]), "");

    let nothing = s.run(&env);
    assert_eq!(nothing.status.code(), Some(96), "{nothing:?}");
    assert!(
        stderr(&nothing).starts_with("scripted-agent: git"),
        "{nothing:?}"
    );
}

#[test]
fn commit_outside_a_repository_exits_96() {
    let s = Sandbox::new("steps:\n  - commit: x\n");
    let out = s
        .command()
        .env("GIT_DIR", s.path("no-such-repo"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(96), "{out:?}");
}

#[test]
fn flood_writes_exactly_the_bytes_asked_for() {
    let s = Sandbox::new("steps:\n  - [flood: {bytes: 5000000}, print: end]\n");
    let out = s.run(&[]);
    assert!(out.status.success());
    assert_eq!(out.stdout.len(), 5_000_000 + "end\n".len());
    let line = format!("{}\n", "x".repeat(100));
    assert!(out.stdout.starts_with(line.as_bytes()));
    assert_eq!(
        &out.stdout[..4_999_999],
        line.repeat(50_000).as_bytes()[..4_999_999].as_ref()
    );

    let s = Sandbox::new("steps:\n  - flood: {bytes: 10, line: abc}\n");
    assert_eq!(stdout(&s.run(&[])), "abc\nabc\nab");
}

#[test]
fn flood_stops_quietly_when_the_reader_goes_away() {
    let s = Sandbox::new("steps:\n  - [flood: {bytes: 200000000}, print: after]\n");
    let mut child = s
        .command()
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(stderr(&out), "");
}

#[test]
fn exit_codes_and_crash() {
    let s = Sandbox::new(
        "steps:\n  - [print: before, exit: 7, print: after]\n  - stderr: second\n  - crash: true\n",
    );
    let out = s.run(&[]);
    assert_eq!(out.status.code(), Some(7));
    assert_eq!(stdout(&out), "before\n");
    // The position advanced even though the step ended early.
    let out = s.run(&[]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stderr(&out), "second\n");
    let out = s.run(&[]);
    assert_eq!(out.status.signal(), Some(6), "{out:?}");
}

#[test]
fn hang_waits_to_be_killed_and_the_next_run_goes_on() {
    let s = Sandbox::new("steps:\n  - [print: hanging, hang: true]\n  - print: next\n");
    let mut child = s.command().stdout(Stdio::piped()).spawn().unwrap();
    thread::sleep(Duration::from_millis(300));
    assert!(
        child.try_wait().unwrap().is_none(),
        "the agent did not hang"
    );
    child.kill().unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(stdout(&out), "hanging\n");
    assert_eq!(stdout(&s.run(&[])), "next\n");
}

#[test]
fn sleep_and_spawn_do_not_wait_for_the_background_command() {
    let s = Sandbox::new(
        "steps:\n  - [sleep: 0.01, spawn: \"sleep 1 && echo {feature} > late.txt\", print: spawned]\n",
    );
    let start = Instant::now();
    // Not `output()`: the background shell inherits stdout and would hold the pipe open.
    let status = s
        .command()
        .env("HARNESS_FEATURE_ID", "F-1")
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    assert!(start.elapsed() < Duration::from_millis(900));
    assert!(!s.path("late.txt").exists());
    let deadline = Instant::now() + Duration::from_secs(10);
    while !s.path("late.txt").exists() && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(20));
    }
    thread::sleep(Duration::from_millis(50));
    assert_eq!(fs::read_to_string(s.path("late.txt")).unwrap(), "F-1\n");
}

#[test]
fn cat_replays_a_recording_next_to_the_scenario() {
    let s = Sandbox::new("");
    fs::create_dir(s.path("rec")).unwrap();
    fs::create_dir(s.path("work")).unwrap();
    let recording = b"{\"type\":\"result\",\"text\":\"{feature}\"}\n\xff no newline";
    fs::write(s.path("rec/stream.jsonl"), recording).unwrap();
    fs::write(s.path("rec/agent.yaml"), "steps:\n  - cat: stream.jsonl\n").unwrap();
    let out = s
        .bare_command()
        .current_dir(s.path("work"))
        .arg("--scenario")
        .arg("../rec/agent.yaml")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(out.stdout, recording);
}

#[test]
fn scenario_and_state_dir_from_options_and_environment() {
    let s = Sandbox::new("steps:\n  - print: one\n  - print: two\n");
    let harness_state = s.path("harness-state");
    let run = |cmd: &mut Command| stdout(&cmd.output().unwrap());

    // `$HARNESS_STATE_DIR/scripted-agent` beats the directory beside the scenario.
    let mut cmd = s.command();
    cmd.env("HARNESS_STATE_DIR", &harness_state);
    assert_eq!(run(&mut cmd), "one\n");
    assert!(harness_state.join("scripted-agent/0-_-_.pos").exists());
    assert!(!s.path("scenario.yaml.state").exists());

    // SCRIPTED_AGENT_STATE_DIR beats it, and --state-dir beats both.
    let mut cmd = s.command();
    cmd.env("HARNESS_STATE_DIR", &harness_state)
        .env("SCRIPTED_AGENT_STATE_DIR", s.path("env-state"));
    assert_eq!(run(&mut cmd), "one\n");
    let mut cmd = s.command();
    cmd.env("SCRIPTED_AGENT_STATE_DIR", s.path("env-state"))
        .arg("--state-dir")
        .arg(s.path("option-state"));
    assert_eq!(run(&mut cmd), "one\n");
    assert!(s.path("option-state/0-_-_.pos").exists());

    // The scenario itself may come from the environment.
    let mut cmd = s.bare_command();
    cmd.env("SCRIPTED_AGENT_SCENARIO", s.path("scenario.yaml"))
        .env("SCRIPTED_AGENT_STATE_DIR", s.path("env-state"));
    assert_eq!(run(&mut cmd), "two\n");
}

#[test]
fn malformed_missing_and_unknown_are_exit_2() {
    let s = Sandbox::new("steps:\n  - print: ok\n  - [print: [unclosed\n");
    let out = s.run(&[]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.starts_with("scripted-agent: scenario.yaml: "), "{err}");
    assert!(err.contains("line "), "{err}");
    assert!(!s.path("scenario.yaml.state").exists());

    let s = Sandbox::new("steps:\n  - dance: true\n");
    let out = s.run(&[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("unknown action `dance`"), "{out:?}");

    let s = Sandbox::new("steps: []\n");
    let out = s.run(&[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no steps"), "{out:?}");

    fs::remove_file(s.path("scenario.yaml")).unwrap();
    let out = s.run(&[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).starts_with("scripted-agent: scenario.yaml: "),
        "{out:?}"
    );
}
