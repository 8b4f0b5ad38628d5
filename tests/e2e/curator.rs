//! The `curator` binary on temporary projects: a pass and its idempotence, the report, the exit
//! codes, hand edits, `kill -9` and SIGTERM in the middle of a pass, workers appending while it
//! runs, the agent's rewrite, the memory reaching the prompts, and the quality of the curation on
//! a labelled log (tests/fixtures/curation/).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use harness_core::roles::curator::log;
use harness_core::spec::features::FeatureId;
use harness_core::spec::layout::StateDir;
use harness_core::spec::role::Role;
use harness_core::state::memory::{self, RawEntry, Tag};
use harness_tests::{code, repo_root, text, wait_at_most, Project};

/// A labelled fixture of tests/fixtures/curation/.
fn fixture(name: &str) -> String {
    std::fs::read_to_string(repo_root().join("tests/fixtures/curation").join(name)).unwrap()
}

/// A project with a `.harness/` holding only `raw` as raw.md (the curator needs no config).
fn project_with_log(raw: &str) -> Project {
    let project = Project::bare();
    project.write_state("raw.md", raw);
    project
}

/// Files by path, with their bytes.
type Files = BTreeMap<PathBuf, Vec<u8>>;
/// A project's state files and identity files.
type State = (Files, Files);

/// Every file under `dir` but lock files and atomic writes' temp files: path and bytes.
fn files_under(dir: &Path) -> Files {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .filter(|e| {
            let name = e.file_name().to_string_lossy();
            // A killed write's temp files are not the state; the next pass clears them.
            !name.ends_with(".lock") && !name.contains(".tmp.") && !name.contains(".swap.")
        })
        .map(|e| {
            (
                e.path().strip_prefix(dir).unwrap().to_path_buf(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

/// The state and identity files of a project, its own directory's name replaced by `<project>`
/// (the ledger names the project), so that two projects' files compare.
fn state_of(project: &Project) -> State {
    let name = project.workdir.display().to_string();
    let neutral = |files: Files| {
        files
            .into_iter()
            .map(|(path, bytes)| match String::from_utf8(bytes) {
                Ok(text) => (path, text.replace(&name, "<project>").into_bytes()),
                Err(error) => (path, error.into_bytes()),
            })
            .collect()
    };
    (
        neutral(files_under(&project.state_dir())),
        neutral(files_under(&project.identity_dir())),
    )
}

/// Fails naming the files that differ between two states.
fn assert_same_state(actual: &State, expected: &State, what: &str) {
    for (actual, expected) in [(&actual.0, &expected.0), (&actual.1, &expected.1)] {
        let differ: Vec<String> = actual
            .keys()
            .chain(expected.keys())
            .filter(|path| actual.get(*path) != expected.get(*path))
            .map(|path| path.display().to_string())
            .collect();
        assert!(differ.is_empty(), "{what}: {differ:?} differ");
    }
}

/// Every line of the log, archive chunks then raw.md, read as the curator reads it (a chunk
/// written by a pass killed before it truncated raw.md counts once).
fn log_lines(project: &Project) -> Vec<String> {
    let state = StateDir::new(project.state_dir());
    let raw = std::fs::read(state.raw()).unwrap_or_default();
    let mut chunks = Vec::new();
    if let Ok(entries) = std::fs::read_dir(state.archive_dir()) {
        for entry in entries.flatten() {
            if let Some(seq) = log::chunk_seq(&entry.file_name().to_string_lossy()) {
                chunks.push((seq, std::fs::read(entry.path()).unwrap()));
            }
        }
    }
    log::read(&raw, &chunks)
        .lines()
        .map(log::Line::text)
        .collect()
}

/// The archive chunks in order, then raw.md without the curator's note: the plain concatenation
/// a user would read.
fn concatenated(project: &Project) -> Vec<String> {
    let archive = project.state_dir().join("archive");
    let mut names: Vec<String> = std::fs::read_dir(&archive)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| log::chunk_seq(n).is_some())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    let mut lines: Vec<String> = names
        .iter()
        .flat_map(|n| {
            std::fs::read_to_string(archive.join(n))
                .unwrap()
                .lines()
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect();
    lines.extend(
        project
            .read_state("raw.md")
            .lines()
            .filter(|l| !l.starts_with("<!-- curator:") && !l.trim().is_empty())
            .map(str::to_string),
    );
    lines
}

fn non_blank_lines(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

#[test]
fn a_pass_curates_and_a_second_changes_no_byte() {
    let raw = fixture("mission-a.raw.md");
    let project = project_with_log(&raw);
    let before = state_of(&project);
    let out = project.curator(&["--dry-run"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("promote "),
        "{}",
        text(&out.stdout)
    );
    assert!(
        text(&out.stderr).contains("dry run, would write"),
        "{}",
        text(&out.stderr)
    );
    assert_same_state(&state_of(&project), &before, "--dry-run wrote something");

    let out = project.curator(&[]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    for action in ["promote ", "supersede ", "graduate ", "archive ", "kept "] {
        assert!(stdout.contains(action), "{action:?} missing from\n{stdout}");
    }
    let hand_line = raw.lines().position(|l| !l.starts_with('[')).unwrap() + 1;
    assert!(
        stdout.contains(&format!("raw.md:{hand_line}: not a raw entry")),
        "{stdout}"
    );
    let summary = project.read_state("summary.md");
    assert!(summary.starts_with("# Summary\n"), "{summary}");
    assert!(summary.lines().count() <= 40);
    assert_eq!(
        project.read_state("raw.md").lines().count(),
        11,
        "the note and 10 entries"
    );
    assert_eq!(log_lines(&project), non_blank_lines(&raw));
    assert_eq!(concatenated(&project), non_blank_lines(&raw));
    assert!(project.read_state("mission-id").starts_with("m-"));

    let first = state_of(&project);
    let out = project.curator(&[]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("nothing to change"),
        "{}",
        text(&out.stderr)
    );
    assert_same_state(
        &state_of(&project),
        &first,
        "a second pass changed something",
    );
}

#[test]
fn the_json_report_says_what_the_pass_would_do() {
    let raw = fixture("mission-a.raw.md");
    let project = project_with_log(&raw);
    let out = project.curator(&["--dry-run", "--json"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["dry_run"], true);
    assert_eq!(report["malformed"][0]["file"], "raw.md");
    let hand_line = raw.lines().position(|l| !l.starts_with('[')).unwrap() + 1;
    assert_eq!(report["malformed"][0]["line"], hand_line);
    let actions: Vec<&str> = report["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["action"].as_str().unwrap())
        .collect();
    for action in ["promote", "supersede", "graduate", "add"] {
        assert!(actions.contains(&action), "{action} in {actions:?}");
    }
    let psql = report["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["text"].as_str().unwrap().contains("psql -f"))
        .unwrap();
    assert_eq!(psql["seen"], 3);
    assert_eq!(
        psql["workers"],
        serde_json::json!(["F-001", "F-004", "F-006"])
    );
    assert_eq!(psql["evidence"].as_array().unwrap().len(), 3);
    assert_eq!(psql["place"], "summary.md Lessons");
    assert_eq!(report["archived_lines"], non_blank_lines(&raw).len() - 10);
}

#[test]
fn exit_codes_say_what_went_wrong_and_nothing_is_written() {
    // No state directory: 1, with a hint.
    let project = Project::bare();
    let out = project.curator(&[]);
    assert_eq!(code(&out), 1);
    assert!(
        text(&out.stderr).contains("the state directory does not exist"),
        "{}",
        text(&out.stderr)
    );
    assert!(text(&out.stderr).contains("hint: create it with `./run.sh init"));

    // summary.md that is not UTF-8: 1, naming the file and line, nothing written.
    let project = project_with_log(&fixture("mission-a.raw.md"));
    std::fs::write(
        project.state_dir().join("summary.md"),
        b"# Summary\n\n- caf\xe9\n",
    )
    .unwrap();
    let before = state_of(&project);
    let out = project.curator(&[]);
    assert_eq!(code(&out), 1);
    assert!(
        text(&out.stderr).contains("summary.md:3: not valid UTF-8"),
        "{}",
        text(&out.stderr)
    );
    assert_same_state(
        &state_of(&project),
        &before,
        "a failed pass wrote something",
    );

    // A bad parameter: 1.
    let out = project.curator(&["--similarity", "0"]);
    assert_eq!(code(&out), 1);
    assert!(
        text(&out.stderr).contains("similarity must be above 0"),
        "{}",
        text(&out.stderr)
    );

    // Another curator on the project: 75, or with --wait, the pass once it is done.
    let project = project_with_log(&fixture("mission-a.raw.md"));
    let state = StateDir::new(project.state_dir());
    let held =
        harness_core::base::locks::Lock::try_acquire(&state.summary_lock(), "x", "pid 1 (curator)")
            .unwrap();
    let out = project.curator(&[]);
    assert_eq!(code(&out), 75, "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("the curator is already being run by pid 1 (curator)"),
        "{}",
        text(&out.stderr)
    );
    assert!(!project.state_dir().join("summary.md").exists());
    let waiting = project
        .curator_command(&["--wait"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    // Workers can append while a curator waits: it never holds raw.md's lock while waiting.
    let appended = Instant::now();
    append(&state, 0, "appended while a curator waits");
    assert!(appended.elapsed() < Duration::from_millis(250));
    // A curator interrupted while it waits: 130, and nothing written.
    let mut interrupted = project
        .curator_command(&["--wait"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until_it_takes_signals(interrupted.id());
    // SAFETY: kill(2) on our own child's pid, not yet reaped.
    unsafe { libc::kill(interrupted.id() as i32, libc::SIGTERM) };
    let status = wait_at_most(&mut interrupted, Duration::from_secs(60));
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut interrupted.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert_eq!(
        stderr,
        "curator: interrupted by SIGTERM while waiting for the other curator; nothing was changed\n"
    );
    assert!(!project.state_dir().join("summary.md").exists());
    drop(held);
    let out = waiting.wait_with_output().unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert!(project.state_dir().join("summary.md").exists());
    assert!(log_lines(&project)
        .iter()
        .any(|l| l.contains("appended while a curator waits")));
}

/// Waits (bounded) until the role binary `pid` has set up its signal handling: from then on a
/// SIGTERM is its to handle (it is blocked in every thread and taken by one), not a kill.
fn wait_until_it_takes_signals(pid: u32) {
    let sigterm_bit = 1u64 << (libc::SIGTERM - 1);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let blocked = status
            .lines()
            .find_map(|line| line.strip_prefix("SigBlk:"))
            .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
            .unwrap_or(0);
        if blocked & sigterm_bit != 0 {
            return;
        }
        assert!(Instant::now() < deadline, "{pid} never blocked SIGTERM");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Appends one entry as worker `writer` would.
fn append(state: &StateDir, writer: usize, text: &str) {
    memory::append_raw(
        state,
        &[RawEntry {
            time: harness_core::base::time::now(),
            role: Role::Worker,
            feature: Some(FeatureId::parse(&format!("F-{writer}")).unwrap()),
            tag: Tag::Lesson,
            text: text.to_string(),
        }],
    )
    .unwrap();
}

#[test]
fn the_users_lines_are_kept_and_their_edits_respected() {
    let project = project_with_log(&fixture("mission-a.raw.md"));
    assert_eq!(code(&project.curator(&[])), 0);
    let summary = project.read_state("summary.md");
    let psql = summary
        .lines()
        .find(|l| l.contains("psql -f"))
        .unwrap()
        .to_string();
    let edited = psql.replace("applies migrations", "applies our migrations");
    let deleted = summary
        .lines()
        .find(|l| l.contains("Svelte"))
        .unwrap()
        .to_string();
    let mine = "- my own note:  *keep*  this\t as is ";
    let hand = summary
        .replace(&psql, &edited)
        .replace(&format!("{deleted}\n"), "")
        .replace("## Avoid\n", &format!("## Avoid\n{mine}\n"));
    project.write_state("summary.md", &hand);
    let out = project.curator(&[]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("dismiss"),
        "{}",
        text(&out.stdout)
    );
    for _ in 0..2 {
        let summary = project.read_state("summary.md");
        assert_eq!(
            summary.lines().filter(|l| *l == edited).count(),
            1,
            "{summary}"
        );
        assert_eq!(
            summary.lines().filter(|l| *l == mine).count(),
            1,
            "{summary}"
        );
        assert_eq!(
            summary.matches("psql -f").count(),
            1,
            "the edited bullet stands for its item"
        );
        assert!(
            !summary.contains("Svelte"),
            "a deleted bullet stays deleted"
        );
        assert!(!project.read_state("MEMORY.md").contains("Svelte"));
        assert_eq!(code(&project.curator(&[])), 0);
    }
}

/// `n` entries of workers on F-0 to F-8, one a second, `per_day` a day from April `first_day`,
/// tagged in turn with `tags`, entry `i` saying `text(i)`.
fn worker_log(
    n: usize,
    (first_day, per_day): (usize, usize),
    tags: &[&str],
    text: impl Fn(usize) -> String,
) -> String {
    (0..n)
        .map(|i| {
            format!(
                "[2026-04-{:02}T{:02}:{:02}:{:02}Z] worker F-{} {}: {}\n",
                first_day + i / per_day,
                (i / 3600) % 24,
                (i / 60) % 60,
                i % 60,
                i % 9,
                tags[i % tags.len()],
                text(i)
            )
        })
        .collect()
}

/// A log large enough that a pass takes a while: `n` entries of many different items.
fn large_log(n: usize) -> String {
    const WORDS: [&str; 24] = [
        "widget", "parser", "cache", "token", "schema", "router", "queue", "socket", "lexer",
        "index", "shard", "bucket", "daemon", "kernel", "plugin", "stream", "buffer", "cursor",
        "driver", "engine", "filter", "handle", "ledger", "matrix",
    ];
    let tags = ["TRICK", "LESSON", "DECISION", "AVOID", "FAIL", "-"];
    worker_log(n, (20, 20_000), &tags, |i| {
        format!(
            "{} {} {} {}",
            WORDS[i % 24],
            WORDS[(i / 24) % 24],
            WORDS[(i / 576) % 24],
            i % 97
        )
    })
}

#[test]
fn kill_9_during_a_pass_leaves_every_file_old_or_new() {
    let raw = large_log(3000);
    let lines = non_blank_lines(&raw);
    let template = |project: &Project| {
        project.write_state("raw.md", &raw);
        project.write_state("mission-id", "m-kill-test\n");
        project.write_state("summary.md", "# Summary\n\n## Lessons\n- mine, kept\n");
    };
    // The uninterrupted pass: what "new" is, and how long it takes.
    let reference = Project::bare();
    template(&reference);
    let before = state_of(&reference);
    let started = Instant::now();
    let out = reference.curator(&[]);
    let duration = started.elapsed();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let after = state_of(&reference);
    eprintln!(
        "kill -9: an uninterrupted pass over {} lines takes {duration:?}",
        lines.len()
    );

    enum At {
        Elapsed(f64),
        Appears(&'static str),
    }
    for at in [
        At::Elapsed(0.3),
        At::Elapsed(0.8),
        At::Appears("archive/raw-000001.md"),
        At::Appears("MEMORY.md"),
        At::Appears("curator.json"),
    ] {
        let project = Project::bare();
        template(&project);
        let mut child = project
            .curator_command(&[])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        match at {
            At::Elapsed(fraction) => std::thread::sleep(duration.mul_f64(fraction)),
            At::Appears(name) => {
                let path = project.state_dir().join(name);
                let deadline = Instant::now() + duration * 10;
                while !path.exists() && Instant::now() < deadline {
                    std::thread::yield_now();
                }
            }
        }
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
        let _ = child.wait();

        let (state, identity) = state_of(&project);
        let mut new_files = Vec::new();
        for (files, old, new) in [
            (&state, &before.0, &after.0),
            (&identity, &before.1, &after.1),
        ] {
            for (path, bytes) in files {
                assert!(
                    old.get(path) == Some(bytes) || new.get(path) == Some(bytes),
                    "{} is neither old nor new",
                    path.display()
                );
                if old.get(path) != Some(bytes) {
                    new_files.push(path.display().to_string());
                }
            }
        }
        eprintln!(
            "kill -9 at {}: new files {new_files:?}, the others old",
            match at {
                At::Elapsed(fraction) => format!("{:.0}% of a pass", fraction * 100.0),
                At::Appears(name) => format!("the appearance of {name}"),
            }
        );
        assert_eq!(log_lines(&project), lines, "an entry was lost or doubled");
        // The next pass finishes the job: the same files as the uninterrupted pass.
        let out = project.curator(&[]);
        assert_eq!(code(&out), 0, "{}", text(&out.stderr));
        assert_eq!(concatenated(&project), lines);
        assert_same_state(&state_of(&project), &after, "the pass after a kill");
        let leftovers = project.leftovers();
        assert!(leftovers.is_empty(), "left behind: {leftovers:?}");
    }
}

/// A pass killed after it wrote the identity files and before curator.json: the next pass
/// records what the first graduated (the line is there already), as an uninterrupted pass
/// does, so that a line the user deletes later stays deleted.
#[test]
fn what_a_killed_pass_graduated_is_recorded_by_the_next() {
    let project = project_with_log(&large_log(3000));
    project.write_state("mission-id", "m-kill-test\n");
    let graduated = |project: &Project| {
        let record: serde_json::Value =
            serde_json::from_str(&project.read_state("curator.json")).unwrap();
        record["graduated"].clone()
    };
    assert_eq!(code(&project.curator(&[])), 0);
    let expected = graduated(&project);
    assert!(
        !expected.as_array().unwrap().is_empty(),
        "nothing graduated"
    );
    std::fs::remove_file(project.state_dir().join("curator.json")).unwrap();
    assert_eq!(code(&project.curator(&[])), 0);
    assert_eq!(graduated(&project), expected);
}

/// A log of `n` entries that say about as many different things, over a vocabulary large
/// enough that few are alike: a pass over 200,000 of them takes seconds even in a release build.
fn diverse_log(n: usize) -> String {
    let tags = ["TRICK", "LESSON", "DECISION", "AVOID", "FAIL"];
    worker_log(n, (1, 10_000), &tags, |i| {
        format!(
            "w{} w{} w{} w{} w{}",
            i % 5003,
            (i / 7) % 4999,
            (i * 13) % 10_007,
            i % 211,
            (i / 1000) % 50
        )
    })
}

#[test]
fn sigterm_during_a_long_pass_stops_it_and_changes_nothing() {
    // Regression: the pass ignored SIGTERM and Ctrl-C until its end (33 minutes over a million
    // entries), then wrote its result. It must stop at once, write nothing and exit 130: the
    // curator itself, and `./run.sh curate` when run.sh alone gets the signal (it passes it on).
    let project = project_with_log(&diverse_log(200_000));
    project.write_state("summary.md", "# Summary\n\n## Lessons\n- mine, kept\n");
    let before = state_of(&project);
    let lock = StateDir::new(project.state_dir()).summary_lock();
    for (what, mut command) in [
        ("the curator", project.curator_command(&[])),
        ("./run.sh curate", project.command(&["curate"])),
    ] {
        // The curator names itself in summary.md's lock once it holds it, just before it reads
        // the log: the signal then comes while it reads or curates, seconds before the pass
        // could end.
        let _ = std::fs::remove_file(&lock);
        let mut child = command
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        while !std::fs::read_to_string(&lock)
            .is_ok_and(|text| text.starts_with("pid ") && text.contains("curator"))
        {
            assert!(
                child.try_wait().unwrap().is_none() && Instant::now() < deadline,
                "{what}: the curator never took its lock"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        // SAFETY: kill(2) on our own child's pid, not yet reaped.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let stopped = Instant::now();
        let status = wait_at_most(&mut child, Duration::from_secs(120));
        eprintln!(
            "SIGTERM during a pass ({what}): stopped {:?} after the signal",
            stopped.elapsed()
        );
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
        assert_eq!(status.code(), Some(130), "{what}: {stderr}");
        assert!(
            stderr.lines().any(|line| line
                == "curator: interrupted by SIGTERM during the pass; nothing was changed"),
            "{what}: {stderr}"
        );
        let _ = std::fs::remove_file(project.state_dir().join("report.html"));
        assert_same_state(&state_of(&project), &before, what);
    }
}

#[test]
fn eight_workers_appending_while_the_curator_runs_lose_no_line() {
    let project = project_with_log("");
    let state = StateDir::new(project.state_dir());
    let writers: Vec<_> = (0..8)
        .map(|writer| {
            let state = state.clone();
            std::thread::spawn(move || {
                for n in 0..60 {
                    append(&state, writer, &format!("writer {writer} line {n}"));
                    std::thread::sleep(Duration::from_millis(2));
                }
            })
        })
        .collect();
    let mut passes = 0;
    while writers.iter().any(|w| !w.is_finished()) {
        let out = project.curator(&[]);
        assert_eq!(code(&out), 0, "{}", text(&out.stderr));
        passes += 1;
    }
    for writer in writers {
        writer.join().unwrap();
    }
    assert_eq!(code(&project.curator(&[])), 0);
    let lines = concatenated(&project);
    assert_eq!(log_lines(&project), lines);
    for writer in 0..8 {
        for n in 0..60 {
            let needle = format!(" LESSON: writer {writer} line {n}");
            assert_eq!(
                lines.iter().filter(|l| l.ends_with(&needle)).count(),
                1,
                "{needle:?} after {passes} passes"
            );
        }
    }
    assert_eq!(lines.len(), 8 * 60);
    assert!(
        passes >= 2,
        "the curator ran {passes} times while the workers appended"
    );
}

/// A project initialised with `./run.sh init`, the scripted agent answering with `answer.md`,
/// and `raw` in raw.md.
fn agent_project(raw: &str, answer: &str) -> Project {
    let project = Project::new("features: []\n", "steps: [[cat: answer.md]]\n");
    std::fs::write(project.root().join("answer.md"), answer).unwrap();
    project.write_state("raw.md", raw);
    project
}

#[test]
fn the_agents_rewrite_is_kept_when_it_passes_the_checks() {
    let project = agent_project(&fixture("mission-a.raw.md"), "");
    assert_eq!(code(&project.curator(&[])), 0);
    let summary = project.read_state("summary.md");
    let psql = summary.lines().find(|l| l.contains("psql -f")).unwrap();
    let id = &psql[psql.find("<!-- c:").unwrap() + 7..][..10];
    let rewrite = summary.replace(
        psql,
        &format!("- `psql -f drizzle/*.sql` runs migrations by file name <!-- c:{id} -->"),
    );
    let answer =
        format!("Here it is.\nTRICK: short bullets read faster\n\n```markdown\n{rewrite}```\n");
    std::fs::write(project.root().join("answer.md"), &answer).unwrap();
    let out = project.curator(&["--agent", "--quiet"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("the agent's rewrite was kept: 1 of ")
            && text(&out.stderr).contains(" summary bullets reworded"),
        "{}",
        text(&out.stderr)
    );
    let summary = project.read_state("summary.md");
    assert!(
        summary.contains("- `psql -f drizzle/*.sql` runs migrations by file name (3× by F-001, F-004, F-006; 2026-04-20…23) <!-- c:"),
        "{summary}"
    );
    // The prompt showed the items and the draft; raw.md got the agent's entry and the outcome.
    let runs: Vec<_> = std::fs::read_dir(project.state_dir().join("curations"))
        .unwrap()
        .flatten()
        .collect();
    let prompt = std::fs::read_to_string(runs[0].path().join("prompt.md")).unwrap();
    assert!(
        prompt.contains("## Items")
            && prompt.contains("## The curator's draft of the new summary.md")
    );
    assert!(prompt.contains("# Role: curator"));
    let raw = project.read_state("raw.md");
    assert!(
        raw.contains("curator - TRICK: short bullets read faster"),
        "{raw}"
    );
    assert!(
        raw.contains("curator - -: agent rewrite of summary.md kept: 1 of "),
        "{raw}"
    );
    // A plain pass keeps the agent's wording.
    assert_eq!(code(&project.curator(&[])), 0);
    assert!(project
        .read_state("summary.md")
        .contains("runs migrations by file name"));
}

#[test]
fn the_agents_rewrite_is_rejected_with_the_reason_when_it_loses_something() {
    let project = agent_project(&fixture("mission-a.raw.md"), "");
    assert_eq!(code(&project.curator(&[])), 0);
    let summary = project.read_state("summary.md");
    let expected_summary = summary.clone();
    for (answer, reason) in [
        (
            summary
                .lines()
                .filter(|l| !l.contains("Svelte"))
                .collect::<Vec<_>>()
                .join("\n"),
            "is missing from the rewrite",
        ),
        (
            format!("{summary}- a brand new bullet\n"),
            "is neither a line of the user's",
        ),
        (
            summary.replace(
                "## Avoid\n",
                &format!("## Avoid\n{}\n", "- too long <!-- c:0000000000 -->"),
            ),
            "not an item of the draft",
        ),
    ] {
        std::fs::write(
            project.root().join("answer.md"),
            format!("```markdown\n{answer}\n```\n"),
        )
        .unwrap();
        project.scenario("steps: [[cat: answer.md]]\n");
        let out = project.curator(&["--agent", "--quiet"]);
        assert_eq!(code(&out), 0, "{}", text(&out.stderr));
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains("the agent's rewrite was rejected: ") && stderr.contains(reason),
            "{stderr}"
        );
        assert_eq!(project.read_state("summary.md"), expected_summary);
    }
    // An agent that fails is a rejection too; the deterministic pass still runs.
    project.scenario("steps: [[exit: 3]]\n");
    let out = project.curator(&["--agent", "--quiet"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("rejected: the curator's agent did not finish"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn curated_memory_and_identity_reach_the_next_prompt() {
    let project = Project::new(
        "features:\n  - id: F-001\n    title: Greeting\n    acceptance: [greet prints hello]\n",
        "steps: [[print: done, promise: true]]\n",
    );
    project.write_state("raw.md", &fixture("mission-a.raw.md"));
    assert_eq!(code(&project.curator(&[])), 0);
    let out = project.run(&["F-001", "--quiet"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let prompt = project.prompt("F-001", 1);
    let memory = prompt
        .split("## Memory (curated from prior iterations of this run)")
        .nth(1)
        .unwrap();
    assert!(
        memory.contains("- store sessions in Redis, not SQLite (F-005; 2026-04-22)"),
        "{prompt}"
    );
    assert!(!memory.contains("<!--"), "markers stay out of prompts");
    // The identity file says why a line graduated, for its reader; the prompt carries the
    // knowledge without a feature id, a mission id or a date of the mission it came from.
    let file = std::fs::read_to_string(project.identity_dir().join("worker.md")).unwrap();
    let graduated = file
        .lines()
        .find(|l| l.contains("TRICK reported by 3 distinct workers: F-001, F-004, F-006"))
        .unwrap_or_else(|| panic!("{file}"));
    let (wording, why) = graduated.split_once(" <!-- graduated ").unwrap();
    let mission = why.split_once(" from mission ").unwrap().1;
    let mission = mission.split_once(": ").unwrap().0;
    let identity = prompt
        .split("## Your identity (cross-mission memory for the worker role)")
        .nth(1)
        .unwrap();
    let identity = identity.split("\n## ").next().unwrap();
    assert!(identity.contains(wording), "{prompt}");
    for local in ["F-0", mission, "graduated", "<!--"] {
        assert!(!identity.contains(local), "{local} in {identity}");
    }
}

/// The labels of tests/fixtures/curation/labels.txt: label → fragments.
fn labels() -> BTreeMap<String, Vec<String>> {
    let mut labels: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in fixture("labels.txt").lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let (label, fragment) = line.split_once(": ").unwrap();
        labels
            .entry(label.to_string())
            .or_default()
            .push(fragment.to_string());
    }
    labels
}

/// Precision and recall of `predicted` lines against `expected` fragments.
fn score(predicted: &[String], expected: &[String]) -> (f64, f64, Vec<String>, Vec<String>) {
    let false_positives: Vec<String> = predicted
        .iter()
        .filter(|line| !expected.iter().any(|f| line.contains(f.as_str())))
        .cloned()
        .collect();
    let missed: Vec<String> = expected
        .iter()
        .filter(|f| !predicted.iter().any(|line| line.contains(f.as_str())))
        .cloned()
        .collect();
    let precision = if predicted.is_empty() {
        1.0
    } else {
        (predicted.len() - false_positives.len()) as f64 / predicted.len() as f64
    };
    let recall = (expected.len() - missed.len()) as f64 / expected.len() as f64;
    (precision, recall, false_positives, missed)
}

#[test]
fn curation_quality_on_the_labelled_log() {
    let labels = labels();
    let a = project_with_log(&fixture("mission-a.raw.md"));
    assert_eq!(code(&a.curator(&[])), 0);
    // Mission B: another project, sharing the identity directory (and the ledger).
    let b = project_with_log(&fixture("mission-b.raw.md"));
    let out = b
        .curator_command(&[])
        .env("HARNESS_IDENTITY_DIR", a.identity_dir())
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));

    let promoted: Vec<String> = a
        .read_state("summary.md")
        .lines()
        .filter(|l| l.starts_with("- ") && l.contains("<!-- c:"))
        .map(str::to_string)
        .collect();
    let memory = a.read_state("MEMORY.md");
    let history: Vec<String> = memory
        .split("## History\n")
        .nth(1)
        .unwrap_or("")
        .lines()
        .take_while(|l| !l.starts_with("## "))
        .filter(|l| l.starts_with("- "))
        .map(str::to_string)
        .collect();
    let graduated: Vec<String> = Role::ALL
        .iter()
        .flat_map(|role| {
            std::fs::read_to_string(a.identity_dir().join(format!("{role}.md")))
                .unwrap_or_default()
                .lines()
                .filter(|l| l.contains("<!-- graduated "))
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect();
    let mut minimums = Vec::new();
    for (name, predicted, label, floor) in [
        ("promotion", &promoted, "promote", 0.8),
        ("supersession", &history, "history", 0.8),
        ("graduation", &graduated, "graduate", 0.8),
    ] {
        let (precision, recall, false_positives, missed) = score(predicted, &labels[label]);
        eprintln!(
            "curation quality: {name:<12} precision {precision:.2} recall {recall:.2} ({} predicted, {} expected)",
            predicted.len(),
            labels[label].len()
        );
        for line in &false_positives {
            eprintln!("  not expected: {line}");
        }
        for fragment in &missed {
            eprintln!("  missed: {fragment}");
        }
        minimums.push((name, precision >= floor && recall >= floor));
    }
    assert!(
        minimums.iter().all(|(_, ok)| *ok),
        "below the minimums: {minimums:?}"
    );
    // One worker repeating itself does not graduate, and nothing graduates twice.
    assert!(!graduated.iter().any(|l| l.contains("--port 5174")));
    for fragment in &labels["graduate"] {
        assert!(
            graduated
                .iter()
                .filter(|l| l.contains(fragment.as_str()))
                .count()
                <= 1,
            "{fragment} twice"
        );
    }
    assert!(graduated
        .iter()
        .any(|l| l.contains("failure mode seen in 2 missions")));
}
