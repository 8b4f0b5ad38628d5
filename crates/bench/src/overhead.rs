//! Benchmark 4: the harness's overhead per iteration. A feature runs N iterations through
//! `./run.sh F-001` with an agent that reads its prompt and prints one line (it never delivers
//! the promise, so the run goes on to max_iterations); then a plain bash loop runs the same agent
//! on the same N prompts. The difference is what the harness costs per iteration: run.sh's loop,
//! the worker process, reading the state, writing the prompt, the notes, raw.md, result.json and
//! the run state (atomically, fsynced), and asking git what the attempt changed.
//!
//! At a small state (one feature, nothing before) and a large one (1,000 features, 100,000
//! archived memory entries and 10,000 more in raw.md, 50 earlier attempts with ~3,000 characters
//! of notes each): the overhead must not grow with the mission's history.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use harness_core::state::run_state::{Attempt, RunState};

use crate::entries::{raw_text, EntryMaker};
use crate::project::{children_cpu, copy_tree, run_expecting, time_quietly, Harness, Project};
use crate::stats::{bytes, count, median, median_secs, ms, range, secs};

/// The agent of the measured runs: it reads its prompt and prints one line.
pub const QUIET_AGENT: &str = r#"#!/bin/sh
# Reads its prompt and prints one line: the cheapest agent there is.
cat >/dev/null
echo "working on ${HARNESS_FEATURE_ID:-?}, iteration ${HARNESS_ITERATION:-?}"
"#;

/// The agent that makes the large state's history: ~3,300 characters of output an attempt,
/// so each of its notes sections is full (the notes keep the last 3,000).
const VERBOSE_AGENT: &str = r#"#!/bin/sh
cat >/dev/null
i=0
while [ "$i" -lt 40 ]; do
  echo "iteration ${HARNESS_ITERATION:-?}, step $i: edited src/module_$i.rs and ran the tests: 41 passed"
  i=$((i + 1))
done
"#;

/// The bare loop: the least any harness can cost.
pub const BARE_LOOP: &str = r#"#!/usr/bin/env bash
# The least any harness can cost: the same agent, once per prompt, in a plain loop.
set -uo pipefail
agent=$1
shift
for prompt in "$@"; do
  "$agent" <"$prompt" >/dev/null 2>&1
done
"#;

/// What to run.
#[derive(Debug, Clone)]
pub struct Options {
    /// Iterations of each measured run.
    pub iterations: u32,
    /// Repetitions of each measurement (the median is reported).
    pub runs: usize,
    /// Earlier attempts in the large state's history.
    pub history_attempts: u32,
    /// Features in the large state's features.yaml.
    pub features: usize,
    /// Archived memory entries in the large state.
    pub archived: usize,
    /// Entries in the large state's raw.md (not curated yet).
    pub raw: usize,
    /// A directory on a tmpfs, for the same small state with no disk under it (none: not
    /// measured).
    pub tmpfs: Option<PathBuf>,
}

/// One state measured.
struct Case {
    name: &'static str,
    /// The prepared project whose `.harness/` each run copies.
    template: Project,
    git: bool,
    /// Iterations already in the state.
    before: u32,
    /// Extra config.yaml lines.
    config: &'static str,
    /// Where its projects go, when not in the usual scratch directory (a tmpfs).
    scratch: Option<PathBuf>,
}

/// A mission budget: the worker then adds up what every feature's run state spent, before
/// each iteration.
const BUDGETS: &str = "budgets:\n  mission: {max_tokens: 1000000000, max_wall_secs: 100000000}\n";

/// One repetition's figures.
#[derive(Debug, Clone, Copy)]
struct Sample {
    harness: Duration,
    bare: Duration,
    /// The durable floor's overhead: the same loop run from this process with and without
    /// writing each prompt and the run state atomically, the state flushed (see [`floor_loop`]).
    floor: Duration,
    /// CPU time of the harness run and of the bare loop, all their processes included.
    harness_cpu: Duration,
    bare_cpu: Duration,
    /// The size of the last prompt.
    prompt_bytes: u64,
}

/// Runs the benchmark and returns its section of the report.
pub fn run(harness: &Harness, options: &Options) -> anyhow::Result<String> {
    eprintln!("overhead: preparing the small and the large state");
    let large = large_state(harness, options)?;
    let with_budgets = with_other_run_states(harness, &large, options)?;
    let mut cases = vec![
        Case {
            name: "small state, git repository",
            template: small_state(harness, true, options)?,
            git: true,
            before: 0,
            config: "",
            scratch: None,
        },
        Case {
            name: "large state, git repository",
            template: large,
            git: true,
            before: options.history_attempts,
            config: "",
            scratch: None,
        },
        Case {
            name: "large state + a mission budget, every feature with a run state",
            template: with_budgets,
            git: true,
            before: options.history_attempts,
            config: BUDGETS,
            scratch: None,
        },
        Case {
            name: "small state, no git",
            template: small_state(harness, false, options)?,
            git: false,
            before: 0,
            config: "",
            scratch: None,
        },
    ];
    if let Some(tmpfs) = &options.tmpfs {
        cases.push(Case {
            name: "small state, git repository, on a tmpfs",
            template: small_state(harness, true, options)?,
            git: true,
            before: 0,
            config: "",
            scratch: Some(tmpfs.clone()),
        });
    }
    // Round robin over the cases, so that a change in the machine's load touches them all alike.
    let mut rows: Vec<(&Case, Vec<Sample>)> = cases.iter().map(|c| (c, Vec::new())).collect();
    for run in 1..=options.runs {
        for (case, samples) in &mut rows {
            let sample = measure(harness, case, options.iterations)?;
            eprintln!(
                "overhead: {} run {run}/{}: harness {} s, bare loop {} s",
                case.name,
                options.runs,
                secs(sample.harness.as_secs_f64()),
                secs(sample.bare.as_secs_f64())
            );
            samples.push(sample);
        }
    }
    let components = components(harness, &cases[0].template, &cases[1].template, options)?;

    let n = f64::from(options.iterations);
    let mut text = format!(
        "{} iterations of `./run.sh F-001` (validate: false; the agent reads its prompt and prints one line, never the promise) against a bash loop running the same agent on the same {} prompts. Medians of {} runs, the states taken in turn; the overhead is the median over runs of (harness − bare loop) / iterations, with its range; the CPU overhead is the same for the CPU time (user + system) of all their processes, which the machine's load disturbs less.\n\n",
        options.iterations, options.iterations, options.runs
    );
    text.push_str("The durable floor is that bare loop plus what any harness keeping its state durable must do each iteration (issue 20): write the prompt atomically and the run state atomically and flushed, with the harness's own atomic writes. Its overhead is measured from the benchmark's process, the same loop with and without those writes; the harness over the floor is its overhead less the floor's.\n\n");
    text.push_str("| state | harness total (s) | bare loop total (s) | harness per iteration (ms) | bare loop per iteration (ms) | overhead per iteration (ms) | overhead range (ms) | durable floor's overhead (ms) | harness over the floor (ms) | ratio | CPU overhead per iteration (ms) | prompt |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (case, samples) in &rows {
        text.push_str(&table_row(case.name, samples, n));
    }
    text.push_str(&format!(
        "\nThe large state: {} features in features.yaml, {} archived memory entries (archive/) and {} more in raw.md, a 40-line summary.md, a 200-line MEMORY.md, an identity file, and {} earlier attempts whose notes sections hold ~3,000 characters each (a ~{} KiB notes file, of which the prompt carries the newest sections; the bare loop's agent reads the same prompts).\n\n",
        count(options.features),
        count(options.archived),
        count(options.raw),
        options.history_attempts,
        options.history_attempts as usize * 3_100 / 1024
    ));
    text.push_str(&format!(
        "With a mission budget (`budgets: mission: …`), the worker adds up what every feature spent before each iteration; in that case the {} other features each have a run state of 3 attempts.\n\n",
        count(options.features.saturating_sub(1))
    ));
    text.push_str("What one iteration is made of (each the median of repeated runs; the costs the harness cannot avoid while each iteration is a fresh process that writes its state atomically):\n\n| component | median (ms) |\n|---|---:|\n");
    for (name, value) in components {
        text.push_str(&format!("| {name} | {} |\n", ms(value)));
    }
    Ok(text)
}

/// The table's row of one state: medians of its runs, the overhead and its range, the floor's
/// overhead and the harness's over the floor.
fn table_row(name: &str, samples: &[Sample], n: f64) -> String {
    let harness_times: Vec<Duration> = samples.iter().map(|s| s.harness).collect();
    let bare_times: Vec<Duration> = samples.iter().map(|s| s.bare).collect();
    let per_iteration =
        |of: fn(&Sample) -> f64| -> Vec<f64> { samples.iter().map(|s| of(s) / n).collect() };
    let overheads = per_iteration(|s| s.harness.as_secs_f64() - s.bare.as_secs_f64());
    let floors = per_iteration(|s| s.floor.as_secs_f64());
    let over_floor =
        per_iteration(|s| s.harness.as_secs_f64() - s.bare.as_secs_f64() - s.floor.as_secs_f64());
    let ratios: Vec<f64> = samples
        .iter()
        .map(|s| s.harness.as_secs_f64() / s.bare.as_secs_f64())
        .collect();
    let cpu = per_iteration(|s| s.harness_cpu.as_secs_f64() - s.bare_cpu.as_secs_f64());
    let (low, high) = range(&overheads);
    format!(
        "| {} | {} | {} | {} | {} | **{}** | {}–{} | {} | {} | {:.1}× | {} | {} |\n",
        name,
        secs(median_secs(&harness_times)),
        secs(median_secs(&bare_times)),
        ms(median_secs(&harness_times) / n),
        ms(median_secs(&bare_times) / n),
        ms(median(&overheads)),
        ms(low),
        ms(high),
        ms(median(&floors)),
        ms(median(&over_floor)),
        median(&ratios),
        ms(median(&cpu)),
        bytes(samples.last().map_or(0, |s| s.prompt_bytes))
    )
}

/// One run of the harness and one of the bare loop on a fresh copy of the case's state.
fn measure(harness: &Harness, case: &Case, iterations: u32) -> anyhow::Result<Sample> {
    let harness = &Harness {
        scratch: case
            .scratch
            .clone()
            .unwrap_or_else(|| harness.scratch.clone()),
        ..harness.clone()
    };
    let project = Project::new(harness, case.git)?;
    std::fs::remove_dir_all(project.state_dir())?;
    copy_tree(&case.template.state_dir(), &project.state_dir())?;
    copy_tree(&case.template.identity_dir(), &project.identity_dir())?;
    let agent = project.script("agent.sh", QUIET_AGENT)?;
    let bare_loop = project.script("bare-loop.sh", BARE_LOOP)?;
    project.config(
        &agent,
        &format!("{}{}", config_extra(case.before + iterations), case.config),
    )?;

    let total = (case.before + iterations).to_string();
    let mut command = project.run_sh(&["F-001", "--quiet", "--max-iterations", &total]);
    // Exit 2: stopped by max_iterations, as it must (the agent never delivers the promise).
    let cpu_before = children_cpu();
    let harness_time = run_expecting(&mut command, &[2])?;
    let cpu_between = children_cpu();
    let state = project.run_state("F-001")?;
    let done = state.iteration_count;
    if done != case.before + iterations {
        bail!(
            "{}: the feature ran {done} iterations, not {}",
            case.name,
            case.before + iterations
        );
    }
    let prompts = prompts_of_last(&project, &state, iterations as usize)?;
    let prompt_bytes = prompts
        .last()
        .and_then(|p| std::fs::metadata(p).ok())
        .map_or(0, |m| m.len());

    let mut bare = Command::new(&bare_loop);
    bare.current_dir(&project.workdir)
        .arg(&agent)
        .args(&prompts);
    let (bare_time, status) = time_quietly(&mut bare)?;
    let cpu_after = children_cpu();
    if !status.success() {
        bail!("the bare loop failed: {status}");
    }
    let state_bytes = std::fs::read(project.state_dir().join("runs/F-001/state.json"))?;
    let floor_dir = project.workdir.join(".floor");
    let plain = floor_loop(&floor_dir, &agent, &prompts, None)?;
    let durable = floor_loop(&floor_dir, &agent, &prompts, Some(&state_bytes))?;
    let floor = durable.saturating_sub(plain);
    Ok(Sample {
        harness: harness_time,
        bare: bare_time,
        floor,
        harness_cpu: cpu_between - cpu_before,
        bare_cpu: cpu_after - cpu_between,
        prompt_bytes,
    })
}

/// The agent run on each of `prompts` from this process; with `state`, the durable floor as
/// issue 20 defines it: what any harness that keeps its state durable must do each iteration
/// besides — write the prompt atomically (not flushed) and the run state (`state`'s bytes)
/// atomically and flushed, with the harness's own atomic writes, in `dir`.
fn floor_loop(
    dir: &Path,
    agent: &Path,
    prompts: &[PathBuf],
    state: Option<&[u8]>,
) -> anyhow::Result<Duration> {
    use harness_core::base::atomic::{replace, write_atomic, Flush};
    use std::process::Stdio;
    std::fs::create_dir_all(dir)?;
    let (prompt_file, state_file) = (dir.join("prompt.md"), dir.join("state.json"));
    let started = Instant::now();
    for prompt in prompts {
        let input = match state {
            Some(_) => {
                replace(&prompt_file, &std::fs::read(prompt)?, Flush::No)?;
                &prompt_file
            }
            None => prompt,
        };
        let status = Command::new(agent)
            .stdin(std::fs::File::open(input)?)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()?;
        if !status.success() {
            bail!("the floor loop's agent failed: {status}");
        }
        if let Some(state) = state {
            write_atomic(&state_file, state)?;
        }
    }
    Ok(started.elapsed())
}

/// The prompt.md of the last `count` attempts.
fn prompts_of_last(
    project: &Project,
    state: &RunState,
    count: usize,
) -> anyhow::Result<Vec<PathBuf>> {
    let attempts = state.attempts();
    prompts_of(project, &attempts[attempts.len().saturating_sub(count)..])
}

/// The prompt.md of each of `attempts` (of F-001), which must all be there.
pub fn prompts_of(project: &Project, attempts: &[Attempt]) -> anyhow::Result<Vec<PathBuf>> {
    let prompts: Vec<PathBuf> = attempts
        .iter()
        .map(|attempt| {
            project
                .state_dir()
                .join("runs/F-001")
                .join(&attempt.run_id)
                .join("prompt.md")
        })
        .collect();
    if let Some(missing) = prompts.iter().find(|p| !p.is_file()) {
        bail!("no prompt at {}", missing.display());
    }
    Ok(prompts)
}

pub fn config_extra(max_iterations: u32) -> String {
    // stall_iterations: 0, or the agent that changes nothing would be stopped as stalled.
    format!(
        "max_iterations: {max_iterations}\ncompletion_promise: TASK_COMPLETE\nvalidate: false\nstall_iterations: 0\n"
    )
}

pub const ONE_FEATURE: &str = "features:\n  - id: F-001\n    title: The benchmark feature\n    description: Nothing to build; the agent only prints.\n    acceptance:\n      - Nothing.\n    depends_on: []\n";

/// A project with one feature and no history.
fn small_state(harness: &Harness, git: bool, options: &Options) -> anyhow::Result<Project> {
    let project = Project::new(harness, git)?;
    project.write_state("features.yaml", ONE_FEATURE)?;
    let agent = project.script("agent.sh", QUIET_AGENT)?;
    project.config(&agent, &config_extra(options.iterations))?;
    Ok(project)
}

/// A project with a long history: many features, a big memory log, earlier attempts.
fn large_state(harness: &Harness, options: &Options) -> anyhow::Result<Project> {
    let project = Project::new(harness, true)?;
    project.write_state("features.yaml", &many_features(options.features))?;
    let mut maker = EntryMaker::new(4);
    let started = Instant::now();
    let archive = raw_text(&mut maker, options.archived);
    project.write_state("archive/raw-000001.md", &archive)?;
    let raw = format!(
        "{}\n{}",
        harness_core::roles::curator::log::header(1),
        raw_text(&mut maker, options.raw)
    );
    project.write_state("raw.md", &raw)?;
    project.write_state("summary.md", &summary())?;
    project.write_state("MEMORY.md", &long_memory())?;
    std::fs::write(project.identity_dir().join("worker.md"), identity())?;
    let verbose = project.script("verbose-agent.sh", VERBOSE_AGENT)?;
    project.config(&verbose, &config_extra(options.history_attempts))?;
    let history = options.history_attempts.to_string();
    let mut command = project.run_sh(&["F-001", "--quiet", "--max-iterations", &history]);
    run_expecting(&mut command, &[2]).context("cannot make the large state's history")?;
    eprintln!(
        "overhead: large state ready in {} s",
        secs(started.elapsed().as_secs_f64())
    );
    Ok(project)
}

/// A copy of the large state in which every other feature has a run state (done, 3 attempts).
fn with_other_run_states(
    harness: &Harness,
    large: &Project,
    options: &Options,
) -> anyhow::Result<Project> {
    let project = Project::new(harness, true)?;
    std::fs::remove_dir_all(project.state_dir())?;
    copy_tree(&large.state_dir(), &project.state_dir())?;
    copy_tree(&large.identity_dir(), &project.identity_dir())?;
    let large_state = large.run_state("F-001")?;
    // A state.json with its attempts inside, as an older version wrote it: the harness reads it.
    let mut state = serde_json::to_value(&large_state)?;
    state["attempts"] = serde_json::to_value(&large_state.attempts()[..3])?;
    state["status"] = "done".into();
    state["iteration_count"] = 3.into();
    for n in 2..=options.features {
        let id = format!("F-{n:03}");
        state["feature_id"] = id.clone().into();
        project.write_state(
            &format!("runs/{id}/state.json"),
            &serde_json::to_string_pretty(&state)?,
        )?;
    }
    Ok(project)
}

/// features.yaml with `count` independent features of a realistic size.
pub fn many_features(count: usize) -> String {
    let mut text = String::from("features:\n");
    for n in 1..=count {
        text.push_str(&format!(
            "  - id: F-{n:03}\n    title: Feature number {n} of the benchmark mission\n    description: >-\n      Build part {n} of the product, with enough prose to look like a real spec written\n      by a planner: what to build, where it lives, and how it is tested.\n    acceptance:\n      - Part {n} works end to end from the command line.\n      - Its tests pass and cover the error paths.\n    depends_on: []\n"
        ));
    }
    text
}

/// A full summary.md: about 36 bullets, within its bound of 40 lines and ~800 tokens.
fn summary() -> String {
    let mut text = String::from("# Summary\n\n## Lessons\n");
    for n in 1..=16 {
        text.push_str(&format!(
            "- Run the tests of module {n} with --nocapture before touching its parser (seen 3×)\n"
        ));
    }
    text.push_str("\n## Decisions (current)\n");
    for n in 1..=8 {
        text.push_str(&format!(
            "- Store table {n} in SQLite through the repository layer, not ad hoc SQL\n"
        ));
    }
    text.push_str("\n## Avoid\n");
    for n in 1..=8 {
        text.push_str(&format!(
            "- Editing the generated file gen_{n}.rs by hand: it is overwritten by the build\n"
        ));
    }
    text
}

/// A MEMORY.md at its bound of about 200 lines.
fn long_memory() -> String {
    let mut text = String::from("# Memory\n\n## Decisions\n");
    for n in 1..=190 {
        text.push_str(&format!(
            "- Decision {n}: the handler of route {n} validates its input before the query\n"
        ));
    }
    text
}

/// An identity file of the worker role.
fn identity() -> String {
    let mut text = String::from("# Worker identity\n\n");
    for n in 1..=20 {
        text.push_str(&format!(
            "- Convention {n}: commit after every green test run, with a message saying why\n"
        ));
    }
    text
}

/// The costs one iteration is made of, measured one by one.
fn components(
    harness: &Harness,
    small: &Project,
    large: &Project,
    options: &Options,
) -> anyhow::Result<Vec<(String, f64)>> {
    const REPEATS: usize = 40;
    let time_command = |make: &dyn Fn() -> Command| -> anyhow::Result<f64> {
        let mut times = Vec::new();
        for _ in 0..REPEATS {
            let (elapsed, status) = time_quietly(&mut make())?;
            if !status.success() {
                bail!("{:?} failed: {status}", make().get_program());
            }
            times.push(elapsed);
        }
        Ok(median_secs(&times))
    };
    let worker = harness.binary("worker");
    let mut rows = Vec::new();
    rows.push((
        "fork+exec of `/bin/true` (the floor of any process)".to_string(),
        time_command(&|| Command::new("/bin/true"))?,
    ));
    rows.push((
        "`worker --version` (the worker's start-up)".to_string(),
        time_command(&|| {
            let mut c = Command::new(&worker);
            c.arg("--version");
            c
        })?,
    ));
    let many = format!("{} features", count(options.features));
    for (name, project) in [("1 feature", small), (many.as_str(), large)] {
        rows.push((
            format!("`worker check` with {name} (reads and checks config.yaml and features.yaml)"),
            time_command(&|| {
                let mut c = Command::new(&worker);
                c.args(["check", "--feature", "F-001", "-C"])
                    .arg(&project.workdir);
                c
            })?,
        ));
    }
    rows.push((
        "one `git status --porcelain=v2 --branch --untracked-files=all`".to_string(),
        time_command(&|| {
            let mut c = Command::new("git");
            c.arg("-C").arg(&small.workdir).args([
                "status",
                "--porcelain=v2",
                "--branch",
                "--untracked-files=all",
            ]);
            c
        })?,
    ));
    rows.push((
        "one atomic write of 2 KiB (temp file, fsync, rename, fsync of the directory)".to_string(),
        atomic_write_time(small.root(), REPEATS)?,
    ));
    Ok(rows)
}

/// The median time of `harness_core::base::atomic::write_atomic` on a 2 KiB file in `dir`.
fn atomic_write_time(dir: &Path, repeats: usize) -> anyhow::Result<f64> {
    let path = dir.join("atomic-write-test.json");
    let bytes = vec![b'x'; 2048];
    let mut times = Vec::new();
    for _ in 0..repeats {
        let started = Instant::now();
        harness_core::base::atomic::write_atomic(&path, &bytes)?;
        times.push(started.elapsed());
    }
    Ok(median_secs(&times))
}
