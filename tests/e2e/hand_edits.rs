//! A hand edit of summary.md or MEMORY.md made while the curator runs is never lost, whichever
//! way the editor saves (in place, or a new file renamed over the old) and however the pass runs
//! (the curator, `./run.sh curate`, `--agent`, `auto_curate` after a verdict, or killed).
//!
//! The pass is paused at the worst moment with `HARNESS_TEST_CURATOR_PAUSE`: it has read every
//! file and decided what to write, and writes once the test has edited.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use harness_tests::{code, text, Project};

/// 20,000 entries of 40 things said again and again (so the pass has bullets to write).
fn big_log() -> String {
    let tags = ["LESSON", "AVOID", "TRICK", "DECISION"];
    (0..20_000)
        .map(|i| {
            let n = i % 40;
            format!(
                "[2026-04-{:02}T{:02}:{:02}:{:02}Z] worker F-{:03} {}: subject {n} {} needs care\n",
                1 + i / 1000,
                (i / 3600) % 24,
                (i / 60) % 60,
                i % 60,
                i % 7,
                tags[n % tags.len()],
                ["parser", "cache", "schema", "router"][n % 4].repeat(1 + n / 4),
            )
        })
        .collect()
}

const SUMMARY: &str = "# Summary\n\n## Lessons\n- mine, from before\n";
const MEMORY: &str = "# Memory\n\n## Context\n- my context line\n";

/// How an editor saves a file.
#[derive(Debug, Clone, Copy)]
enum Editor {
    /// Opens the file and appends to it (`echo … >> file`).
    InPlace,
    /// Writes a new file beside it and renames it over the old one (vim, VS Code…).
    Rename,
}

impl Editor {
    fn append(self, path: &Path, line: &str) {
        let mut text = std::fs::read_to_string(path).unwrap_or_default();
        text.push_str(line);
        match self {
            Editor::InPlace => {
                use std::io::Write;
                let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
                file.write_all(line.as_bytes()).unwrap();
            }
            Editor::Rename => {
                let temp = path.with_extension("md.edit");
                std::fs::write(&temp, text).unwrap();
                std::fs::rename(&temp, path).unwrap();
            }
        }
    }
}

/// The file the paused pass waits on, made; and the one it creates once paused.
fn pause_files(project: &Project) -> (PathBuf, PathBuf) {
    let pause = project.root().join("pause");
    std::fs::write(&pause, "").unwrap();
    (pause.clone(), project.root().join("pause.paused"))
}

/// Waits until the pass has paused (it created `paused`); fails if `child` ends first.
fn wait_until_paused(child: &mut Child, paused: &Path) {
    let deadline = Instant::now() + Duration::from_secs(300);
    while !paused.exists() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the run ended ({status}) before the curator paused");
        }
        assert!(Instant::now() < deadline, "the curator never paused");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Starts `command` with the pause set, and returns it once its pass has paused, with the file
/// that holds it paused.
fn start_paused(project: &Project, mut command: Command) -> (Child, PathBuf) {
    let (pause, paused) = pause_files(project);
    let mut child = command
        .env("HARNESS_TEST_CURATOR_PAUSE", &pause)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until_paused(&mut child, &paused);
    (child, pause)
}

/// Starts `command` with the pause set, edits both memory files with `editor` once the pass has
/// paused, lets it go on, and returns its stderr and exit code.
fn edit_during_pass(project: &Project, command: Command, editor: Editor) -> (String, i32) {
    let (child, pause) = start_paused(project, command);
    editor.append(
        &project.state_dir().join("summary.md"),
        "- my edit, mid-pass\n",
    );
    editor.append(
        &project.state_dir().join("MEMORY.md"),
        "- my memory edit, mid-pass\n",
    );
    std::fs::remove_file(&pause).unwrap();
    let out = child.wait_with_output().unwrap();
    (text(&out.stderr), code(&out))
}

fn assert_edits_kept(project: &Project, what: &str) {
    let summary = project.read_state("summary.md");
    let memory = project.read_state("MEMORY.md");
    for (file, text, lines) in [
        (
            "summary.md",
            &summary,
            ["- mine, from before", "- my edit, mid-pass"],
        ),
        (
            "MEMORY.md",
            &memory,
            ["- my context line", "- my memory edit, mid-pass"],
        ),
    ] {
        for line in lines {
            assert!(
                text.lines().any(|l| l == line),
                "{what}: {line:?} is not in {file}:\n{text}"
            );
        }
    }
    assert!(
        summary.contains("<!-- c:"),
        "{what}: the pass wrote its bullets:\n{summary}"
    );
    let leftovers = project.leftovers();
    assert!(leftovers.is_empty(), "{what}: left behind: {leftovers:?}");
}

fn project_with_big_log() -> Project {
    let project = Project::new("features: []\n", "steps: [[print: hi]]\n");
    project.write_state("raw.md", &big_log());
    project.write_state("summary.md", SUMMARY);
    project.write_state("MEMORY.md", MEMORY);
    project
}

#[test]
fn a_hand_edit_made_during_a_curator_pass_is_never_lost() {
    for editor in [Editor::InPlace, Editor::Rename] {
        for by_run_sh in [false, true] {
            let project = project_with_big_log();
            let command = match by_run_sh {
                true => project.command(&["curate"]),
                false => project.curator_command(&[]),
            };
            let what = format!(
                "{editor:?} edit, {}",
                if by_run_sh {
                    "./run.sh curate"
                } else {
                    "curator"
                }
            );
            let (stderr, status) = edit_during_pass(&project, command, editor);
            assert_eq!(status, 0, "{what}: {stderr}");
            assert_edits_kept(&project, &what);
            assert!(
                stderr.contains("was edited during the pass: the pass started again on your text"),
                "{what}: {stderr}"
            );
            // The next pass keeps them too, and changes nothing more.
            assert_eq!(code(&project.curator(&[])), 0);
            assert_edits_kept(&project, &what);
        }
    }
}

#[test]
fn a_hand_edit_made_during_the_agents_rewrite_is_never_lost() {
    let project = project_with_big_log();
    // The agent answers with no summary: its rewrite is rejected, and the pass writes its own.
    project.scenario("steps: [[print: 'no rewrite today']]\n");
    let command = project.curator_command(&["--agent", "--quiet"]);
    let (stderr, status) = edit_during_pass(&project, command, Editor::Rename);
    assert_eq!(status, 0, "{stderr}");
    assert_edits_kept(&project, "--agent");
}

#[test]
fn a_hand_edit_made_during_a_killed_pass_is_never_lost() {
    let project = project_with_big_log();
    let (mut child, _pause) = start_paused(&project, project.curator_command(&[]));
    Editor::InPlace.append(
        &project.state_dir().join("summary.md"),
        "- my edit, mid-pass\n",
    );
    Editor::Rename.append(
        &project.state_dir().join("MEMORY.md"),
        "- my memory edit, mid-pass\n",
    );
    child.kill().unwrap();
    child.wait().unwrap();
    let summary = project.read_state("summary.md");
    assert_eq!(summary, format!("{SUMMARY}- my edit, mid-pass\n"));
    // The next pass makes the pass and keeps the edits.
    let out = project.curator(&[]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_edits_kept(&project, "after a killed pass");
}

#[test]
fn a_hand_edit_made_during_an_automatic_pass_is_never_lost() {
    let project = Project::new(
        "features:\n  - id: F-001\n    title: Hello\n",
        "scripts:\n  - match: {role: validator}\n    steps: [[print: '<verdict>PASS</verdict>']]\n  - steps: [[print: 'TRICK: it works', promise: true]]\n",
    );
    project.config("", "validate: true\nauto_curate: true\n");
    project.write_state("raw.md", &big_log());
    project.write_state("summary.md", SUMMARY);
    project.write_state("MEMORY.md", MEMORY);
    for (n, editor) in [Editor::InPlace, Editor::Rename].into_iter().enumerate() {
        if n == 1 {
            // Again, on a second feature's verdict.
            project.write_state(
                "features.yaml",
                "features:\n  - id: F-001\n    title: Hello\n  - id: F-002\n    title: Again\n",
            );
        }
        let feature = ["F-001", "F-002"][n];
        let (stderr, status) = edit_during_pass(&project, project.command(&[feature]), editor);
        assert_eq!(status, 0, "{editor:?}: {stderr}");
        assert_edits_kept(&project, &format!("auto_curate, {editor:?} edit"));
        // Ready for the next edit.
        project.write_state(
            "summary.md",
            &project
                .read_state("summary.md")
                .replace("- my edit, mid-pass\n", ""),
        );
        project.write_state(
            "MEMORY.md",
            &project
                .read_state("MEMORY.md")
                .replace("- my memory edit, mid-pass\n", ""),
        );
    }
}

#[test]
fn an_edit_a_pass_killed_mid_write_had_swapped_out_is_put_back() {
    // A pass killed in the instant after it swapped its summary.md in, before it checked what
    // came out, leaves that (the user's edited file) in a swap file named after the hashes of
    // what it wrote and what it had read. The next run puts the edit back before anything else.
    use harness_core::base::hash::stable_hash;
    let project = Project::new("features: []\n", "steps: [[print: hi]]\n");
    let raw: String = big_log()
        .lines()
        .take(200)
        .map(|line| format!("{line}\n"))
        .collect();
    project.write_state("raw.md", &raw);
    project.write_state("summary.md", SUMMARY);
    assert_eq!(code(&project.curator(&[])), 0);
    let written = project.read_state("summary.md");
    // As the kill left it: what comes after summary.md (curator.json, raw.md) not written.
    std::fs::remove_file(project.state_dir().join("curator.json")).unwrap();
    project.write_state("raw.md", &raw);
    let edited = format!("{SUMMARY}- my edit, mid-pass\n");
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let swap = format!(
        ".summary.md.swap.{dead}.{:016x}.{:016x}",
        stable_hash(written.as_bytes()),
        stable_hash(SUMMARY.as_bytes())
    );
    project.write_state(&swap, &edited);
    let out = project.curator(&[]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let summary = project.read_state("summary.md");
    assert!(
        summary.lines().any(|l| l == "- my edit, mid-pass"),
        "{summary}"
    );
    assert!(summary.contains("<!-- c:"), "{summary}");
    assert!(!project.state_dir().join(&swap).exists());
}
