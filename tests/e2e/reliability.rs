//! Reliability under faults and load. Crash injection: a scripted mission (a worker, a validator
//! that rejects once, memory entries, notes, the curator running beside it and after each
//! verdict) is killed with SIGKILL at pseudo-random moments — run.sh's whole process group, run.sh
//! alone, a feature's run.sh, the worker, the validator, the agent, the curator — at least 100
//! times, seeded and reproducible, and resumed with `./run.sh all` after each; every kill is
//! followed by a check of the invariants on disk, and each mission must end as an undisturbed run
//! does. The same in a git repository with `--parallel 2` (worktrees, merges back), at least 50
//! kills, each mission ending merged, with no worktree or branch left. Concurrency: 16 features run at once in one project, each appending 150 memory entries,
//! while the curator runs pass after pass: every entry ends up in raw.md or archive/ exactly once.
//!
//! The assertions are about what is on disk, never about timings: the random delays only choose
//! the moments of the kills.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use harness_core::base::locks::Lock;
use harness_core::roles::curator::log;
use harness_core::spec::config::Config;
use harness_core::spec::features::{FeatureId, FeatureList};
use harness_core::spec::layout::StateDir;
use harness_core::state::memory::Tag;
use harness_core::state::notes;
use harness_core::state::run_state::RunState;
use harness_tests::{code, proc_entries, text, Project};

/// The kills a crash-injection run makes at least (`HARNESS_CRASH_KILLS` raises or lowers it).
const KILLS: u32 = 100;
/// A crash-injection run that has not made its kills by then fails (with its seed).
const TIME_LIMIT: Duration = Duration::from_secs(420);

/// xorshift64*: a few lines, so that a run is replayed exactly from its seed.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Self(seed.max(1))
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `low..high`.
    fn between(&mut self, low: u64, high: u64) -> u64 {
        low + self.next() % (high - low)
    }
}

/// What a kill aims at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Target {
    /// `kill -9 -<pgid>` of `./run.sh all`: it, the feature's run.sh, the role binary and (by
    /// its parent-death signal) the agent.
    Group,
    /// The `./run.sh all` process alone: its feature's run.sh goes on as an orphan.
    RunSh,
    /// A feature's run.sh (`run.sh … F-001`) alone: its worker or validator goes on.
    FeatureRunSh,
    Worker,
    Validator,
    Agent,
    Curator,
}

impl Target {
    /// The targets, each with its weight.
    const WEIGHTED: [(Target, u64); 7] = [
        (Target::Group, 26),
        (Target::RunSh, 10),
        (Target::FeatureRunSh, 8),
        (Target::Worker, 20),
        (Target::Validator, 16),
        (Target::Agent, 8),
        (Target::Curator, 12),
    ];

    fn pick(rng: &mut Rng) -> Target {
        let total: u64 = Self::WEIGHTED.iter().map(|(_, w)| w).sum();
        let mut roll = rng.between(0, total);
        for (target, weight) in Self::WEIGHTED {
            if roll < weight {
                return target;
            }
            roll -= weight;
        }
        Target::Group
    }
}

/// The processes working on `project`, by what they are (zombies and other projects left out).
fn processes_of(project: &Project) -> Vec<(i32, Target)> {
    let workdir = project.workdir.display().to_string();
    let scenario = project.root().join("scenario.yaml").display().to_string();
    let mut found = Vec::new();
    for (pid, dir) in proc_entries() {
        let Ok(cmdline) = std::fs::read(dir.join("cmdline")) else {
            continue;
        };
        let args: Vec<String> = cmdline
            .split(|&b| b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        if !args.iter().any(|a| a == &workdir || a.contains(&scenario)) {
            continue;
        }
        let program = Path::new(&args[0])
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let target = match program.as_str() {
            "worker" => Target::Worker,
            "validator" => Target::Validator,
            "curator" => Target::Curator,
            "scripted-agent" => Target::Agent,
            _ if args.iter().any(|a| a.ends_with("/run.sh")) => {
                if args.iter().any(|a| a == "all") {
                    Target::RunSh
                } else {
                    Target::FeatureRunSh
                }
            }
            // planner next/outcome: short-lived; killed with the group.
            _ => continue,
        };
        found.push((pid, target));
    }
    found
}

fn sigkill(pid: i32) {
    // SAFETY: kill(2) on a process of the test's own project.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
    }
}

/// Waits (bounded) until nothing works on `project` any more.
fn wait_quiet(project: &Project, why: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let left = processes_of(project);
        if left.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{why}: still running after a minute: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

// ---- the invariants on disk ----

/// Whether `path` is the temporary file of an atomic write (`.<name>.tmp.<pid>.<n>`): a write
/// killed before its rename leaves one, which nothing ever reads.
fn is_temp(path: &Path) -> bool {
    path.file_name()
        .map(|name| name.to_string_lossy())
        .is_some_and(|name| name.starts_with('.') && name.contains(".tmp."))
}

/// Sets the flag when dropped, even by a failing assertion, so that helper threads stop.
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Kills whatever still works on the project when dropped (a failing assertion must not leave
/// orphans running in a deleted directory).
struct KillOnDrop<'a>(&'a Project);

impl Drop for KillOnDrop<'_> {
    fn drop(&mut self) {
        for _ in 0..50 {
            let left = processes_of(self.0);
            if left.is_empty() {
                return;
            }
            for (pid, _) in left {
                sigkill(pid);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// What the last check saw, for the next one to compare with.
#[derive(Debug, Default, Clone)]
struct Seen {
    /// Each feature's iteration_count.
    iterations: BTreeMap<String, u64>,
    /// Each feature's attempts, as JSON.
    attempts: BTreeMap<String, Vec<serde_json::Value>>,
    /// The whole log, archive then raw.md, as the curator counts it.
    log: Vec<String>,
}

/// The log as a reader holding raw.md's lock sees it: the archive chunks, then raw.md (a chunk
/// of a pass killed before it truncated raw.md counted once), and what the reading repaired.
fn read_log(project: &Project) -> log::Log {
    let state = StateDir::new(project.state_dir());
    let _lock = Lock::acquire(&state.raw_lock()).unwrap();
    let mut chunks = Vec::new();
    if let Ok(entries) = std::fs::read_dir(state.archive_dir()) {
        for entry in entries.flatten() {
            if let Some(seq) = log::chunk_seq(&entry.file_name().to_string_lossy()) {
                chunks.push((seq, std::fs::read(entry.path()).unwrap()));
            }
        }
    }
    let raw = std::fs::read(state.raw()).unwrap_or_default();
    log::read(&raw, &chunks)
}

/// The run ids in an entry's text (`… run <run id> …`).
fn run_id_in(text: &str) -> Option<&str> {
    text.split_once(" run ")
        .map(|(_, rest)| rest.split_whitespace().next().unwrap_or(""))
}

/// Checks every invariant a kill must leave whole, against what the last check saw; returns
/// what this one saw. Read in the order the harness writes, so that a live run cannot make a
/// false alarm: the log first, then the run directories, then the run states.
fn check_invariants(project: &Project, last: &Seen, context: &str) -> Seen {
    let state = StateDir::new(project.state_dir());
    // The inputs: the harness never writes them, and they always parse.
    Config::load(&state.config()).unwrap_or_else(|e| panic!("{context}: config.yaml: {e}"));
    let features =
        FeatureList::load(&state.features()).unwrap_or_else(|e| panic!("{context}: {e}"));

    // raw.md and archive/: whole lines only, each an entry written by the harness; nothing lost
    // or reordered since the last check; no agent entry twice.
    let log = read_log(project);
    assert!(log.warnings.is_empty(), "{context}: {:?}", log.warnings);
    let mut lines = Vec::new();
    let mut agent_entries = BTreeSet::new();
    let mut entry_runs = Vec::new();
    for line in log.lines() {
        let entry = line.entry.as_ref().unwrap_or_else(|e| {
            panic!(
                "{context}: {}:{}: {e}: {:?}",
                line.file,
                line.number,
                line.text()
            )
        });
        let text = line.text();
        assert_eq!(entry.to_string(), text, "{context}: not read back exactly");
        if entry.tag != Tag::Outcome {
            assert!(
                agent_entries.insert(text.clone()),
                "{context}: an entry is in the log twice: {text}"
            );
            let feature = entry.feature.as_ref().unwrap().to_string();
            let run = run_id_in(&entry.text).unwrap_or_else(|| panic!("{context}: {text}"));
            entry_runs.push((feature, run.to_string()));
        }
        lines.push(text);
    }
    assert!(
        lines.starts_with(&last.log),
        "{context}: the log lost or reordered lines: it had {} and now has {}",
        last.log.len(),
        lines.len()
    );
    for chunk in std::fs::read_dir(state.archive_dir())
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| !is_temp(&e.path()))
    {
        let bytes = std::fs::read(chunk.path()).unwrap();
        let text = String::from_utf8(bytes)
            .unwrap_or_else(|_| panic!("{context}: {} is not UTF-8", chunk.path().display()));
        assert!(
            text.is_empty() || text.ends_with('\n'),
            "{context}: {} ends in a torn line",
            chunk.path().display()
        );
    }

    // Every run that started its agent (it has an output.log) is an attempt in the state.
    let mut started_runs = Vec::new();
    for feature in &features.features {
        let dir = state.feature_runs(&feature.id);
        for run in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            if run.path().join("output.log").exists() {
                started_runs.push((
                    feature.id.to_string(),
                    run.file_name().to_string_lossy().into_owned(),
                ));
            }
        }
    }

    // The run states: each parses; iteration_count never goes back; attempts only grow, their
    // ids unique, and an attempt that ended never changes again.
    let mut seen = Seen {
        log: lines,
        ..Seen::default()
    };
    for feature in &features.features {
        let id = feature.id.to_string();
        let path = state.run_state(&feature.id);
        let Some(run_state) =
            RunState::load(&path, &feature.id).unwrap_or_else(|e| panic!("{context}: {e}"))
        else {
            assert!(
                !last.iterations.contains_key(&id),
                "{context}: the state of {id} is gone"
            );
            continue;
        };
        let count = u64::from(run_state.iteration_count);
        let before = last.iterations.get(&id).copied().unwrap_or(0);
        assert!(
            count >= before,
            "{context}: {id}'s iteration_count went back from {before} to {count}"
        );
        // Every attempt, from state.json and attempts.jsonl, as the harness reads them.
        let attempts: Vec<serde_json::Value> = run_state
            .attempts()
            .iter()
            .map(|a| serde_json::to_value(a).unwrap())
            .collect();
        let ids: Vec<&str> = attempts
            .iter()
            .map(|a| a["run_id"].as_str().unwrap())
            .collect();
        let unique: BTreeSet<&str> = ids.iter().copied().collect();
        assert_eq!(
            unique.len(),
            ids.len(),
            "{context}: {id} has a run id twice: {ids:?}"
        );
        let old = last.attempts.get(&id).cloned().unwrap_or_default();
        assert!(
            attempts.len() >= old.len(),
            "{context}: {id} lost attempts: {} then {}",
            old.len(),
            attempts.len()
        );
        for (old, new) in old.iter().zip(&attempts) {
            assert_eq!(
                old["run_id"], new["run_id"],
                "{context}: {id}'s attempts changed order"
            );
            if old["outcome"] != "started" {
                assert_eq!(old, new, "{context}: an ended attempt of {id} changed");
            }
        }
        for (feature, run) in entry_runs.iter().chain(&started_runs) {
            if feature == &id {
                assert!(
                    unique.contains(run.as_str()),
                    "{context}: run {run} of {id} left entries or output but no attempt"
                );
            }
        }
        seen.iterations.insert(id.clone(), count);
        seen.attempts.insert(id, attempts);
    }
    for (feature, run) in &started_runs {
        assert!(
            seen.attempts.contains_key(feature),
            "{context}: run {run} of {feature} has no state at all"
        );
    }

    // The notes: valid UTF-8, appended whole (a kill mid-append leaves at most a torn last
    // section, which reading drops); as read, whole sections, each worker attempt once.
    for note in std::fs::read_dir(state.notes_dir())
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| !is_temp(&e.path()))
    {
        let name = note.path().display().to_string();
        // A feature that is done deletes its notes, maybe while another feature still runs:
        // gone since the listing, they have nothing left to check.
        let bytes = match std::fs::read(note.path()) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            read => read.unwrap_or_else(|e| panic!("{context}: cannot read {name}: {e}")),
        };
        let raw =
            String::from_utf8(bytes).unwrap_or_else(|_| panic!("{context}: {name} is not UTF-8"));
        let torn = raw.rsplit(notes::END).next().unwrap_or_default();
        let heading = |h: &str| torn.starts_with(h) || h.starts_with(torn);
        assert!(
            heading("## Attempt ") || heading("## Validator verdict"),
            "{context}: {name} ends in something that is no section: {torn:?}"
        );
        let stem = note
            .path()
            .file_stem()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let feature = FeatureId::parse(&stem).unwrap();
        let text = notes::read(&state, &feature).unwrap().unwrap_or_default();
        let mut numbers = BTreeSet::new();
        for line in text.lines().filter(|l| l.starts_with("## ")) {
            if let Some(rest) = line.strip_prefix("## Attempt ") {
                let (number, role) = rest
                    .split_once(" — ")
                    .unwrap_or_else(|| panic!("{context}: {name}: {line}"));
                assert!(role.starts_with("worker ("), "{context}: {name}: {line}");
                assert!(
                    numbers.insert(number.to_string()),
                    "{context}: {name}: attempt {number} twice"
                );
            } else {
                assert!(
                    line.starts_with("## Validator verdict — fail ("),
                    "{context}: {name}: a section that is not one: {line}"
                );
            }
        }
    }
    // The memory files the curator writes: UTF-8 (each is replaced whole).
    for path in [state.summary(), state.memory(), state.curator_record()] {
        if let Ok(bytes) = std::fs::read(&path) {
            assert!(
                String::from_utf8(bytes).is_ok(),
                "{context}: {} is not UTF-8",
                path.display()
            );
        }
    }
    seen
}

// ---- the crash-injection mission ----

const CRASH_FEATURES: [&str; 3] = ["F-001", "F-002", "F-003"];

/// Three features (F-002 after F-001); each worker takes three iterations that leave entries,
/// then a fourth that writes the feature's file and delivers the promise; the validator rejects
/// the first claim and passes the next. Every agent entry names its run, so a duplicate shows.
fn crash_scenario() -> String {
    let mut scenario = String::from(
        "scripts:\n  - match: {role: validator}\n    steps:\n      - [print: 'TRICK: {feature} validator run {run_id} looked', sleep: 0.03, print: 'not yet <verdict>FAIL</verdict>']\n      - [print: 'LESSON: {feature} validator run {run_id} passed it', sleep: 0.03, print: 'all good <verdict>PASS</verdict>']\n",
    );
    for feature in CRASH_FEATURES {
        scenario.push_str(&format!(
            "  - match: {{role: worker, feature: {feature}}}\n    steps:\n"
        ));
        for _ in 0..3 {
            scenario.push_str("      - [print: 'working on {feature}', print: 'TRICK: {feature} worker run {run_id} a', sleep: 0.04, print: 'LESSON: {feature} worker run {run_id} b']\n");
        }
        scenario.push_str(&format!(
            "      - [write: {{path: {feature}/done.txt, content: \"{feature} is done\\n\"}}, print: 'DECISION: {{feature}} worker run {{run_id}} final', sleep: 0.02, promise: true]\n"
        ));
    }
    scenario
}

/// How the crash mission runs.
#[derive(Debug, Clone, Copy)]
enum Mode {
    /// In a directory without git (no worktrees, no stall detection), one feature at a time.
    Plain,
    /// In a git repository, two features at once, each in its worktree, merged back when done.
    Parallel,
}

impl Mode {
    /// `./run.sh` arguments of the mission.
    fn args(self) -> &'static [&'static str] {
        match self {
            Mode::Plain => &["all", "--quiet"],
            Mode::Parallel => &["all", "--quiet", "--parallel", "2"],
        }
    }

    /// The kills a run makes at least, unless `HARNESS_CRASH_KILLS` says otherwise.
    fn kills(self) -> u32 {
        match self {
            Mode::Plain => KILLS,
            Mode::Parallel => KILLS / 2,
        }
    }
}

const CRASH_FEATURES_YAML: &str = "features:\n  - id: F-001\n    title: One\n  - id: F-002\n    title: Two\n    depends_on: [F-001]\n  - id: F-003\n    title: Three\n";

/// A project for the crash mission (stall detection off).
fn crash_project(mode: Mode) -> Project {
    let project = match mode {
        Mode::Plain => {
            let project = Project::bare();
            let out = project.run(&["init"]);
            assert_eq!(code(&out), 0, "{}", text(&out.stderr));
            project.write_state("features.yaml", CRASH_FEATURES_YAML);
            project
        }
        Mode::Parallel => Project::new(CRASH_FEATURES_YAML, ""),
    };
    project.scenario(&crash_scenario());
    project.config(
        "timeout_secs: 60\nkill_grace_secs: 1\nresult_grace_secs: 5\n",
        "validate: true\nmax_iterations: 500\nstall_iterations: 0\nauto_curate: true\n",
    );
    project
}

/// The project's own files (not `.harness/`, nor `.git/`): path and bytes.
fn project_files(project: &Project) -> BTreeMap<PathBuf, Vec<u8>> {
    walkdir::WalkDir::new(&project.workdir)
        .into_iter()
        .filter_entry(|e| e.file_name() != ".harness" && e.file_name() != ".git")
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            (
                e.path()
                    .strip_prefix(&project.workdir)
                    .unwrap()
                    .to_path_buf(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

fn statuses(project: &Project) -> BTreeMap<String, String> {
    CRASH_FEATURES
        .iter()
        .map(|f| {
            (
                f.to_string(),
                project.state(f)["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Each feature's status and reason, to say where a mission that never ends is stuck.
fn reasons(project: &Project) -> Vec<(String, String)> {
    CRASH_FEATURES
        .iter()
        .map(|f| {
            let state: serde_json::Value = serde_json::from_slice(
                &std::fs::read(project.state_dir().join(format!("runs/{f}/state.json")))
                    .unwrap_or_default(),
            )
            .unwrap_or_default();
            (
                f.to_string(),
                format!("{} {}", state["status"], state["reason"]),
            )
        })
        .collect()
}

/// How a mission ended: what must be the same with and without kills.
#[derive(Debug, PartialEq)]
struct Ending {
    statuses: BTreeMap<String, String>,
    files: BTreeMap<PathBuf, Vec<u8>>,
    notes: Vec<String>,
}

fn ending(project: &Project) -> Ending {
    let notes = std::fs::read_dir(project.state_dir().join("notes"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| !is_temp(&e.path()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    Ending {
        statuses: statuses(project),
        files: project_files(project),
        notes,
    }
}

/// `./run.sh all`, as the user would restart it, quiet; its stderr appended to a log file.
fn start_mission(project: &Project, mode: Mode, launches: &mut u32) -> Child {
    *launches += 1;
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(project.root().join("run-sh.log"))
        .unwrap();
    std::os::unix::process::CommandExt::process_group(
        project
            .command(mode.args())
            .stdout(Stdio::null())
            .stderr(log),
        0,
    )
    .spawn()
    .unwrap()
}

fn tail_of(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Runs the curator pass after pass until `stop`, as a user between iterations would; returns the
/// passes that failed (not those killed, nor those that found another curator running).
fn curator_loop(project: &Project, stop: &AtomicBool, rng_seed: u64) -> Vec<String> {
    let mut rng = Rng::new(rng_seed);
    let mut failures = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let out = project
            .curator_command(&["--quiet"])
            .stdout(Stdio::null())
            .output()
            .unwrap();
        match out.status.code() {
            Some(0) | Some(75) | None => {}
            Some(other) => failures.push(format!("exit {other}: {}", text(&out.stderr))),
        }
        std::thread::sleep(Duration::from_millis(rng.between(30, 150)));
    }
    failures
}

fn seed() -> u64 {
    match std::env::var("HARNESS_CRASH_SEED") {
        Ok(seed) => seed.parse().expect("HARNESS_CRASH_SEED is a number"),
        Err(_) => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64,
    }
}

#[test]
fn a_mission_killed_at_random_moments_loses_nothing_and_ends_as_an_undisturbed_one() {
    crash_inject(Mode::Plain);
}

/// Kills in `git worktree add`, in a merge back, between a merge and the branch's removal.
#[test]
fn a_parallel_mission_in_git_killed_at_random_moments_ends_merged_with_nothing_left() {
    crash_inject(Mode::Parallel);
}

/// The crash-injection run of `mode` (see the module's doc).
fn crash_inject(mode: Mode) {
    let seed = seed();
    let kills_wanted = std::env::var("HARNESS_CRASH_KILLS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(mode.kills());
    eprintln!("crash injection ({mode:?}): seed {seed} (replay with HARNESS_CRASH_SEED={seed})");
    let mut rng = Rng::new(seed);
    let started = Instant::now();

    // The undisturbed run: what every killed mission must end as.
    let reference = crash_project(mode);
    let out = reference.run(mode.args());
    assert_eq!(
        code(&out),
        0,
        "the undisturbed mission: {}",
        text(&out.stderr)
    );
    let expected = ending(&reference);
    assert!(
        expected.statuses.values().all(|s| s == "done"),
        "{expected:?}"
    );
    let undisturbed = started.elapsed();

    let mut kills: BTreeMap<Target, u32> = BTreeMap::new();
    let total = |kills: &BTreeMap<Target, u32>| kills.values().sum::<u32>();
    let mut missions = 0;
    let mut launches = 0;
    while total(&kills) < kills_wanted {
        missions += 1;
        let project = crash_project(mode);
        let stop = AtomicBool::new(false);
        let curator_failures = Mutex::new(Vec::new());
        let curator_seed = rng.next();
        let _cleanup = KillOnDrop(&project);
        std::thread::scope(|scope| {
            let stop_curator = StopOnDrop(&stop);
            let curator = scope.spawn(|| curator_loop(&project, &stop, curator_seed));
            let mut seen = Seen::default();
            let mut driver: Option<Child> = None;
            let mission_started = Instant::now();
            loop {
                let context = format!(
                    "seed {seed}, mission {missions}, after kill {} ({:?} in)",
                    total(&kills),
                    mission_started.elapsed()
                );
                if let Some(child) = driver.as_mut() {
                    if let Some(status) = child.try_wait().unwrap() {
                        driver = None;
                        if status.code() == Some(0) {
                            break;
                        }
                    }
                }
                assert!(
                    started.elapsed() < TIME_LIMIT && mission_started.elapsed() < TIME_LIMIT / 2,
                    "{context}: out of time; the features: {:?}; run.sh's log ends with:\n{}",
                    reasons(&project),
                    tail_of(&project.root().join("run-sh.log"), 40)
                );
                if driver.is_none() {
                    driver = Some(start_mission(&project, mode, &mut launches));
                }
                if total(&kills) >= kills_wanted {
                    // Enough kills: let the mission finish by itself.
                    std::thread::sleep(Duration::from_millis(20));
                    continue;
                }
                std::thread::sleep(Duration::from_millis(rng.between(5, 220)));
                let mut target = Target::pick(&mut rng);
                // In the last third, a kind never killed yet is picked first: a short-lived
                // agent may be missed by every random pick on a loaded machine.
                if total(&kills) * 3 >= kills_wanted * 2 {
                    if let Some((missing, _)) = Target::WEIGHTED
                        .iter()
                        .find(|(t, _)| kills.get(t).copied().unwrap_or(0) == 0)
                    {
                        target = *missing;
                    }
                }
                // The live `./run.sh all`, if it has not ended meanwhile.
                let mut live_driver = || {
                    let child = driver.as_mut()?;
                    matches!(child.try_wait(), Ok(None)).then(|| child.id() as i32)
                };
                // Wait a little for a process of that kind; else the whole group goes. A run.sh
                // that ended meanwhile is seen to at the top of the loop: no kill this time.
                let deadline = Instant::now() + Duration::from_millis(400);
                let victim = loop {
                    let Some(group) = live_driver() else {
                        break None;
                    };
                    if matches!(target, Target::Group | Target::RunSh) {
                        break Some(group);
                    }
                    let candidates: Vec<i32> = processes_of(&project)
                        .into_iter()
                        .filter(|(_, t)| *t == target)
                        .map(|(pid, _)| pid)
                        .collect();
                    if !candidates.is_empty() {
                        break Some(candidates[rng.between(0, candidates.len() as u64) as usize]);
                    }
                    if Instant::now() > deadline {
                        target = Target::Group;
                        break Some(group);
                    }
                    std::thread::sleep(Duration::from_millis(3));
                };
                let Some(pid) = victim else { continue };
                match target {
                    Target::Group => {
                        // SAFETY: kill(2) on the process group of our own run.sh.
                        unsafe {
                            libc::kill(-pid, libc::SIGKILL);
                        }
                    }
                    _ => sigkill(pid),
                }
                *kills.entry(target).or_default() += 1;
                if matches!(target, Target::Group | Target::RunSh) {
                    if let Some(mut child) = driver.take() {
                        child.wait().unwrap();
                    }
                }
                seen = check_invariants(&project, &seen, &format!("{context}, {target:?} killed"));
            }
            drop(stop_curator);
            *curator_failures.lock().unwrap() = curator.join().unwrap();
            // Orphans of a run.sh killed alone finish what they were doing.
            wait_quiet(&project, &format!("seed {seed}, mission {missions}"));
            check_invariants(
                &project,
                &seen,
                &format!("seed {seed}, mission {missions}, at its end"),
            );
        });
        let failures = curator_failures.into_inner().unwrap();
        assert!(
            failures.is_empty(),
            "seed {seed}: curator passes failed: {failures:#?}"
        );

        // A last pass settles what a killed pass left; then archive/ and raw.md, read plainly,
        // are the log, each line once.
        let out = project.curator(&["--quiet"]);
        assert_eq!(code(&out), 0, "seed {seed}: {}", text(&out.stderr));
        let log = read_log(&project);
        let counted: Vec<String> = log.lines().map(log::Line::text).collect();
        assert_eq!(
            plain_log(&project),
            counted,
            "seed {seed}: the files hold a line twice"
        );
        check_invariants(
            &project,
            &Seen::default(),
            &format!("seed {seed}, mission {missions}, settled"),
        );
        for feature in CRASH_FEATURES {
            for attempt in project.state(feature)["attempts"].as_array().unwrap() {
                assert_ne!(
                    attempt["outcome"], "started",
                    "seed {seed}: {feature}: {attempt}"
                );
            }
        }
        assert_eq!(
            ending(&project),
            expected,
            "seed {seed}, mission {missions}: not the undisturbed ending"
        );
        // The end of a run sweeps what killed writes left: nothing stays behind.
        let leftovers: Vec<PathBuf> = walkdir::WalkDir::new(project.state_dir())
            .into_iter()
            .filter_map(Result::ok)
            .filter(|e| is_temp(e.path()))
            .map(|e| e.into_path())
            .collect();
        assert!(
            leftovers.is_empty(),
            "seed {seed}, mission {missions}: temporary files of killed writes left: {leftovers:?}"
        );
        let out = project.run(&["status", "--json"]);
        assert_eq!(code(&out), 0, "{}", text(&out.stderr));
        if let Mode::Parallel = mode {
            assert_merged_and_tidy(&project, &format!("seed {seed}, mission {missions}"));
        }
    }
    for (target, _) in Target::WEIGHTED {
        assert!(
            kills.get(&target).copied().unwrap_or(0) > 0,
            "seed {seed}: no {target:?} was killed: {kills:?}"
        );
    }
    eprintln!(
        "crash injection: {} kills {kills:?} over {missions} missions ({launches} launches of run.sh all) in {:?}; an undisturbed mission takes {undisturbed:?}",
        total(&kills),
        started.elapsed()
    );
}

/// A parallel mission's end: every worktree and branch of a feature gone, the project's tree
/// clean (its work committed on the main branch).
fn assert_merged_and_tidy(project: &Project, context: &str) {
    let worktrees = project.git(&["worktree", "list", "--porcelain"]);
    assert_eq!(
        worktrees.matches("worktree ").count(),
        1,
        "{context}: worktrees left:\n{worktrees}"
    );
    let branches = project.git(&["branch", "--list", "harness/*"]);
    // What each branch left holds that the base branch does not (why it was kept), how it came
    // and went (its reflog), and what its feature's state says of it.
    let ahead: String = branches
        .split_whitespace()
        .filter(|name| name.starts_with("harness/"))
        .map(|name| {
            let range = format!("HEAD..{name}");
            let log = project.git(&["log", "--format=%h %s (%an)", &range]);
            let reflog = project.git(&["reflog", "show", "--date=iso", name]);
            let feature = name.trim_start_matches("harness/");
            let state = project.read_state(&format!("runs/{feature}/state.json"));
            format!(
                "{name}, not in HEAD:\n{log}\nits reflog:\n{reflog}\n{feature}'s state:\n{state}\n"
            )
        })
        .collect();
    assert!(
        branches.trim().is_empty(),
        "{context}: branches left: {branches}\n{ahead}\nrun.sh's log ends with:\n{}",
        tail_of(&project.root().join("run-sh.log"), 60)
    );
    let status = project.git(&[
        "status",
        "--porcelain",
        "--untracked-files=all",
        "--",
        ".",
        ":(exclude).harness",
    ]);
    assert!(
        status.trim().is_empty(),
        "{context}: not committed:\n{status}"
    );
}

/// archive/'s chunks in order, then raw.md without the curator's note: the plain concatenation.
fn plain_log(project: &Project) -> Vec<String> {
    let archive = project.state_dir().join("archive");
    let mut names: Vec<String> = std::fs::read_dir(&archive)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| log::chunk_seq(n).is_some())
        .collect();
    names.sort();
    let mut lines: Vec<String> = Vec::new();
    for name in names {
        let text = std::fs::read_to_string(archive.join(name)).unwrap();
        lines.extend(
            text.lines()
                .filter(|l| !l.trim().is_empty())
                .map(str::to_string),
        );
    }
    lines.extend(
        project
            .read_state("raw.md")
            .lines()
            .filter(|l| !l.starts_with("<!-- curator:") && !l.trim().is_empty())
            .map(str::to_string),
    );
    lines
}

// ---- concurrency ----

const ENTRIES_PER_STEP: usize = 50;
const STEPS: usize = 3;

#[test]
fn sixteen_features_at_once_with_the_curator_running_lose_no_entry() {
    let features: Vec<String> = (1..=16).map(|n| format!("F-{:03}", 100 + n)).collect();
    let project = Project::bare();
    let out = project.run(&["init"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let mut list = String::from("features:\n");
    for feature in &features {
        list.push_str(&format!("  - id: {feature}\n    title: Part {feature}\n"));
    }
    project.write_state("features.yaml", &list);
    // Each step prints its 50 entries, every one naming its feature, step and number; the last
    // step delivers the promise. Each agent writes only its own file.
    let mut scenario = String::from("steps:\n");
    for step in 1..=STEPS {
        scenario.push_str("  - [");
        for n in 1..=ENTRIES_PER_STEP {
            let tag = ["TRICK", "LESSON", "DECISION", "AVOID", "FAIL"][n % 5];
            scenario.push_str(&format!(
                "print: '{tag}: {{feature}} step {step} entry {n} of the concurrency test', "
            ));
        }
        if step == STEPS {
            scenario.push_str("write: {path: '{feature}.txt', content: done}, promise: true]\n");
        } else {
            scenario.push_str("sleep: 0.01]\n");
        }
    }
    project.scenario(&scenario);
    project.config(
        "timeout_secs: 120\nkill_grace_secs: 1\n",
        "validate: false\nstall_iterations: 0\n",
    );

    let stop = AtomicBool::new(false);
    let started = Instant::now();
    let _cleanup = KillOnDrop(&project);
    let (outputs, passes) = std::thread::scope(|scope| {
        let stop_curator = StopOnDrop(&stop);
        let curator = scope.spawn(|| {
            let mut passes = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let begun = Instant::now();
                let out = project.curator(&["--quiet"]);
                assert_eq!(
                    code(&out),
                    0,
                    "a curator pass failed: {}",
                    text(&out.stderr)
                );
                passes.push(begun.elapsed());
            }
            passes
        });
        let runs: Vec<Child> = features
            .iter()
            .map(|feature| {
                project
                    .command(&[feature.as_str(), "--quiet"])
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let outputs: Vec<_> = runs
            .into_iter()
            .map(|run| run.wait_with_output().unwrap())
            .collect();
        drop(stop_curator);
        (outputs, curator.join().unwrap())
    });
    let runs_took = started.elapsed();
    for (feature, out) in features.iter().zip(&outputs) {
        assert_eq!(code(out), 0, "{feature}: {}", text(&out.stderr));
        assert_eq!(project.state(feature)["status"], "done");
    }
    assert!(
        passes.len() >= 2,
        "the curator ran {} times while the features ran",
        passes.len()
    );

    // A last pass; then every line is an entry, each one exactly once, and the plain files agree
    // with the log as the curator counts it.
    let out = project.curator(&["--quiet"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let log = read_log(&project);
    assert!(log.warnings.is_empty(), "{:?}", log.warnings);
    let lines: Vec<String> = log.lines().map(log::Line::text).collect();
    assert_eq!(plain_log(&project), lines, "the files hold a line twice");
    let mut count: BTreeMap<String, usize> = BTreeMap::new();
    for line in log.lines() {
        let entry = line
            .entry
            .as_ref()
            .unwrap_or_else(|e| panic!("{}:{}: {e}: {}", line.file, line.number, line.text()));
        assert_eq!(entry.to_string(), line.text());
        *count
            .entry(format!("{}: {}", entry.tag.as_str(), entry.text))
            .or_default() += 1;
    }
    let mut missing = Vec::new();
    for feature in &features {
        for step in 1..=STEPS {
            for n in 1..=ENTRIES_PER_STEP {
                let tag = ["TRICK", "LESSON", "DECISION", "AVOID", "FAIL"][n % 5];
                let key = format!("{tag}: {feature} step {step} entry {n} of the concurrency test");
                match count.get(&key) {
                    Some(1) => {}
                    Some(times) => panic!("{key} is in the log {times} times"),
                    None => missing.push(key),
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "{} entries lost, e.g. {:?}",
        missing.len(),
        &missing[..missing.len().min(5)]
    );
    let outcome_lines = lines.len() - features.len() * STEPS * ENTRIES_PER_STEP;
    assert_eq!(
        outcome_lines,
        features.len() * STEPS,
        "one outcome line per iteration, nothing else"
    );
    let longest = passes.iter().max().unwrap();
    eprintln!(
        "concurrency: 16 features × {STEPS} iterations × {ENTRIES_PER_STEP} entries in {runs_took:?}, beside {} curator passes (the longest {longest:?}); {} lines, {} archive chunks",
        passes.len(),
        lines.len(),
        std::fs::read_dir(project.state_dir().join("archive")).map(|d| d.count()).unwrap_or(0)
    );
}

/// The other half of "no run waits on a lock longer than a pass of the curator", without a
/// timing: a curator in the long part of its pass holds only summary.md's lock (raw.md's just
/// while it reads and truncates), and runs never need that one. So features run to the end while
/// a pass is stuck there for good, and a second curator is told so at once (exit 75).
#[test]
fn runs_never_wait_for_a_curator_pass_in_progress() {
    let project = Project::bare();
    let out = project.run(&["init"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    project.write_state(
        "features.yaml",
        "features:\n  - id: F-201\n    title: A\n  - id: F-202\n    title: B\n  - id: F-203\n    title: C\n",
    );
    project.scenario(
        "steps:\n  - [print: 'TRICK: {feature} step {step} while the curator works']\n  - [print: 'LESSON: {feature} step {step} still going', promise: true]\n",
    );
    project.config("", "validate: false\nstall_iterations: 0\n");
    let state = StateDir::new(project.state_dir());
    let pass =
        Lock::try_acquire(&state.summary_lock(), "the curator", "a stuck curator pass").unwrap();
    let runs: Vec<Child> = ["F-201", "F-202", "F-203"]
        .iter()
        .map(|feature| {
            project
                .command(&[feature, "--quiet"])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    // Not a timing: a generous bound, so that a run stuck behind the lock fails instead of
    // hanging the suite.
    let _cleanup = KillOnDrop(&project);
    let deadline = Instant::now() + Duration::from_secs(120);
    for mut run in runs {
        while run.try_wait().unwrap().is_none() {
            assert!(
                Instant::now() < deadline,
                "a run is waiting for the curator's lock"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        let out = run.wait_with_output().unwrap();
        assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    }
    let out = project.curator(&["--quiet"]);
    assert_eq!(code(&out), 75, "{}", text(&out.stderr));
    drop(pass);
    let raw = project.read_state("raw.md");
    assert_eq!(raw.matches("while the curator works").count(), 3, "{raw}");
    assert_eq!(raw.lines().count(), 3 * 4, "{raw}");
}
