//! Symbolic links planted in `.harness/` (by an agent working in the project, say) are refused
//! with a one-line error naming them, exit 1 and nothing changed; the harness never reads or
//! writes through one, so nothing outside `.harness/` is read into a prompt or written to.

use std::path::{Path, PathBuf};

use harness_tests::{code, text, Project};

const FEATURES: &str = "features:\n  - id: F-001\n    title: Hello\n";
const SCENARIO: &str = "steps:\n  - print: 'LESSON: read the logs first'\n  - [print: 'TRICK: it works', promise: true]\n";

/// A project with every file a link could be planted on: F-001 one iteration in (its run
/// state, notes, a run directory), and a curator pass made (summary.md, MEMORY.md, archive/,
/// curator.json, mission-id).
fn project_with_state() -> Project {
    let project = Project::new(FEATURES, SCENARIO);
    let out = project.worker(&["--feature", "F-001"]);
    assert_eq!(code(&out), 10, "{}", text(&out.stderr));
    let entry =
        |n: usize, text: &str| format!("[2026-04-2{n}T10:00:00Z] worker F-00{n} LESSON: {text}\n");
    let mut raw = project.read_state("raw.md");
    for n in 1..=3 {
        raw.push_str(&entry(n, "run the migrations before the tests"));
        raw.push_str(&entry(n, &format!("a thing said once, number {n}")));
    }
    raw.push_str(&"[2026-04-24T10:00:00Z] worker F-009 TRICK: filler\n".repeat(12));
    project.write_state("raw.md", &raw);
    let out = project.curator(&[]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    for name in [
        "runs/F-001/state.json",
        "notes/F-001.md",
        "summary.md",
        "MEMORY.md",
        "archive/raw-000001.md",
        "curator.json",
        "mission-id",
        "locks/F-001.lock",
    ] {
        assert!(project.state_dir().join(name).is_file(), "{name} is made");
    }
    project
}

/// Copies the directory `from` to `to` (which must not exist), links as links.
fn copy_tree(from: &Path, to: &Path) {
    let status = std::process::Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .unwrap();
    assert!(status.success());
}

/// Every file under `dir` and its bytes (links not followed), and every directory.
fn tree(dir: &Path) -> Vec<(PathBuf, Option<Vec<u8>>)> {
    let mut entries: Vec<_> = walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .map(|e| {
            let bytes = e
                .file_type()
                .is_file()
                .then(|| std::fs::read(e.path()).unwrap());
            (e.path().to_path_buf(), bytes)
        })
        .collect();
    entries.sort();
    entries
}

#[test]
fn a_link_planted_in_the_state_directory_is_refused_and_never_followed() {
    let project = project_with_state();
    let outside = project.root().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let run: &[&str] = &["F-001"];
    let curate: &[&str] = &["curate"];
    let cases: &[(&str, &[&[&str]])] = &[
        ("config.yaml", &[run, curate]),
        ("features.yaml", &[run]),
        ("raw.md", &[run, curate]),
        ("summary.md", &[run, curate]),
        ("MEMORY.md", &[run, curate]),
        ("notes", &[run]),
        ("notes/F-001.md", &[run]),
        ("runs", &[run]),
        ("runs/F-001", &[run]),
        ("runs/F-001/state.json", &[run]),
        ("archive", &[curate]),
        ("archive/raw-000001.md", &[curate]),
        ("locks", &[run, curate]),
        ("locks/F-001.lock", &[run]),
        ("curator.json", &[curate]),
        ("mission-id", &[curate]),
    ];
    // Each case starts from the same state (a run that followed a link may have changed it).
    let pristine = project.root().join("pristine");
    copy_tree(&project.state_dir(), &pristine);
    let mut failures = Vec::new();
    for (name, commands) in cases {
        let _ = std::fs::remove_dir_all(&outside);
        let _ = std::fs::remove_dir_all(project.state_dir());
        copy_tree(&pristine, &project.state_dir());
        std::fs::create_dir_all(&outside).unwrap();
        // The file moves out of .harness/, and a link to it takes its place.
        let path = project.state_dir().join(name);
        let target = outside.join(name.replace('/', "_"));
        std::fs::rename(&path, &target).unwrap();
        std::os::unix::fs::symlink(&target, &path).unwrap();
        for args in commands.iter() {
            let before = (project.snapshot(), tree(&outside));
            let out = project.run(args);
            let stderr = text(&out.stderr);
            let what = format!("{name} linked out, ./run.sh {}", args.join(" "));
            let named = format!("{}: a symbolic link", path.display());
            let error_lines: Vec<&str> = stderr.lines().filter(|l| l.contains("error")).collect();
            if before != (project.snapshot(), tree(&outside)) {
                failures.push(format!("{what}: something changed\n{stderr}"));
            } else if code(&out) != 1 {
                failures.push(format!("{what}: exit {} (not 1)\n{stderr}", code(&out)));
            } else if error_lines.len() != 1 || !error_lines[0].contains(&named) {
                failures.push(format!("{what}: no one error line naming it\n{stderr}"));
            }
        }
    }
    let _ = std::fs::remove_dir_all(project.state_dir());
    copy_tree(&pristine, &project.state_dir());
    assert!(
        failures.is_empty(),
        "{} failures:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    // With every link gone, the feature goes on.
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
}

#[test]
fn notes_linked_to_a_system_file_never_reach_the_prompt() {
    let project = project_with_state();
    let secret = project.root().join("passwd");
    std::fs::write(&secret, "root:x:0:0:the secret line:/root:/bin/sh\n").unwrap();
    let notes = project.state_dir().join("notes/F-001.md");
    std::fs::remove_file(&notes).unwrap();
    std::os::unix::fs::symlink(&secret, &notes).unwrap();
    // Past run.sh's check (a link planted while the worker runs): the worker itself refuses.
    let out = project.worker(&["--feature", "F-001"]);
    let stderr = text(&out.stderr);
    assert_eq!(code(&out), 1, "{stderr}");
    assert!(stderr.contains("a symbolic link"), "{stderr}");
    let prompts: Vec<String> = walkdir::WalkDir::new(project.state_dir().join("runs"))
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_name() == "prompt.md")
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect();
    assert_eq!(prompts.len(), 1, "no new attempt began");
    assert!(prompts.iter().all(|p| !p.contains("the secret line")));
}
