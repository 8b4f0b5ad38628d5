//! Benchmark 4, counted: what an iteration asks of the kernel, from `strace -f` over whole runs
//! of `./run.sh F-001` (small state, git repository). Two runs, of a few and of a hundred more
//! iterations, each on a fresh project; their difference divided by the extra iterations is the
//! cost of one iteration, the run's start and end left out. The agent's own processes (its shell
//! and its `cat`, the same as in the bare loop) are counted apart from the harness's.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context};

use crate::overhead::{config_extra, ONE_FEATURE, QUIET_AGENT};
use crate::project::{Harness, Project};

/// The system calls traced.
const TRACED: &str = "trace=%process,fsync,fdatasync,sync_file_range,syncfs,open,openat,creat,mkdir,mkdirat,rename,renameat,renameat2";

/// What a run of processes asked of the kernel: per program, how many of each kind.
#[derive(Debug, Default, Clone)]
struct Counts(BTreeMap<(String, &'static str), u64>);

impl Counts {
    fn add(&mut self, program: &str, kind: &'static str) {
        *self.0.entry((program.to_string(), kind)).or_default() += 1;
    }
}

/// Whether `strace` can be run here.
fn strace_present() -> bool {
    Command::new("strace")
        .arg("-V")
        .output()
        .is_ok_and(|out| out.status.success())
}

/// Runs the benchmark and returns its part of the report.
pub fn run(harness: &Harness, few: u32, more: u32) -> anyhow::Result<String> {
    if !strace_present() {
        return Ok(
            "Not measured: `strace` is not installed (`apt-get install strace`).\n".to_string(),
        );
    }
    let base = traced_run(harness, few)?;
    let longer = traced_run(harness, few + more)?;
    let per_iteration = |key: &(String, &'static str)| {
        let extra = longer.0.get(key).copied().unwrap_or(0) as f64
            - base.0.get(key).copied().unwrap_or(0) as f64;
        extra / f64::from(more)
    };
    let mut text = format!(
        "Per iteration, from `strace -f` over two runs of `./run.sh F-001` ({few} and {} iterations, small state, git repository; the difference divided by {more}). The agent is the same as in the table above: its shell and its `cat` are the processes the bare loop starts too.\n\n| program | processes started (execve) | flushes (fsync, fdatasync) | files opened with O_CREAT | of which new temporary files (O_EXCL) | directories created | renames |\n|---|---:|---:|---:|---:|---:|---:|\n",
        few + more
    );
    let programs: Vec<&String> = {
        let mut names: Vec<&String> = longer.0.keys().map(|(program, _)| program).collect();
        names.dedup();
        names
    };
    let kinds = ["execve", "flush", "creat", "excl", "mkdir", "rename"];
    let mut totals = [0.0; 6];
    for program in programs {
        let row: Vec<f64> = kinds
            .iter()
            .map(|kind| per_iteration(&(program.clone(), *kind)))
            .collect();
        if row.iter().all(|v| v.abs() < 0.005) {
            continue;
        }
        if !is_agent(program) {
            for (total, value) in totals.iter_mut().zip(&row) {
                *total += value;
            }
        }
        let cells: Vec<String> = row.iter().map(|v| format!("{v:.2}")).collect();
        text.push_str(&format!("| `{program}` | {} |\n", cells.join(" | ")));
    }
    let cells: Vec<String> = totals.iter().map(|v| format!("**{v:.2}**")).collect();
    text.push_str(&format!(
        "| **the harness (all but the agent)** | {} |\n",
        cells.join(" | ")
    ));
    Ok(text)
}

/// The agent's script, as the bare loop runs it too.
const AGENT: &str = "agent.sh";

/// How a program is named in the table: the agent's processes apart.
fn label(program: &str, in_agent: bool) -> String {
    if in_agent {
        format!("{program} (the agent)")
    } else {
        program.to_string()
    }
}

/// Whether a row is the agent's.
fn is_agent(label: &str) -> bool {
    label.ends_with(" (the agent)")
}

/// Counts what a run of `iterations` asks of the kernel, on a fresh project.
fn traced_run(harness: &Harness, iterations: u32) -> anyhow::Result<Counts> {
    let project = Project::new(harness, true)?;
    project.write_state("features.yaml", ONE_FEATURE)?;
    let agent = project.script(AGENT, QUIET_AGENT)?;
    project.config(&agent, &config_extra(iterations))?;
    let trace = project.root().join("strace.out");
    let run_sh = project.run_sh(&[
        "F-001",
        "--quiet",
        "--max-iterations",
        &iterations.to_string(),
    ]);
    let mut command = Command::new("strace");
    command
        .args(["-f", "-qq", "-e", TRACED, "-o"])
        .arg(&trace)
        .arg(run_sh.get_program())
        .args(run_sh.get_args())
        .envs(
            run_sh
                .get_envs()
                .filter_map(|(key, value)| Some((key, value?))),
        );
    for (key, value) in run_sh.get_envs() {
        if value.is_none() {
            command.env_remove(key);
        }
    }
    let out = command
        .stdin(std::process::Stdio::null())
        .output()
        .context("cannot run strace")?;
    if out.status.code() != Some(2) {
        bail!(
            "the traced run ended with {} (expected 2):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    count_calls(&trace)
}

/// Reads an `strace -f -o` file: which program each process runs, and what it asked for.
fn count_calls(trace: &Path) -> anyhow::Result<Counts> {
    let text = std::fs::read_to_string(trace)
        .with_context(|| format!("cannot read {}", trace.display()))?;
    // Each process's program, and whether it is the agent's (or one of its children).
    let mut program: HashMap<u32, (String, bool)> = HashMap::new();
    let mut pending: HashMap<u32, String> = HashMap::new();
    let mut counts = Counts::default();
    for line in text.lines() {
        let Some((pid, call)) = line.split_once(' ') else {
            continue;
        };
        let Ok(pid) = pid.parse::<u32>() else {
            continue;
        };
        let call = call.trim_start();
        // A call split by another process's: its start is kept until it is resumed.
        if let Some(start) = call.strip_suffix("<unfinished ...>") {
            pending.insert(pid, start.to_string());
            continue;
        }
        let whole = match call.strip_prefix("<... ") {
            Some(rest) => {
                let rest = rest.split_once("resumed>").map_or("", |(_, rest)| rest);
                format!("{}{rest}", pending.remove(&pid).unwrap_or_default())
            }
            None => call.to_string(),
        };
        let name = whole.split('(').next().unwrap_or_default();
        // strace pads the result: `fsync(5)      = 0`.
        let result = whole.rsplit_once(" = ").map(|(_, r)| r.trim());
        let ok = result.is_some_and(|r| !r.starts_with('-'));
        let (current, in_agent) = program
            .get(&pid)
            .cloned()
            .unwrap_or_else(|| ("run.sh".into(), false));
        let current_label = label(&current, in_agent);
        let current = current_label.as_str();
        match name {
            "execve" if ok => {
                let path = whole.split('"').nth(1).unwrap_or_default();
                let base = path.rsplit('/').next().unwrap_or(path).to_string();
                let in_agent = in_agent || base == AGENT;
                counts.add(&label(&base, in_agent), "execve");
                program.insert(pid, (base, in_agent));
            }
            "clone" | "clone3" | "fork" | "vfork" if ok => {
                if let Some(child) = result.and_then(|r| r.parse::<u32>().ok()) {
                    let parent = program.get(&pid).cloned();
                    program.insert(child, parent.unwrap_or_else(|| ("run.sh".into(), false)));
                }
            }
            "fsync" | "fdatasync" | "sync_file_range" | "syncfs" if ok => {
                counts.add(current, "flush")
            }
            "open" | "openat" | "creat" if ok && (name == "creat" || whole.contains("O_CREAT")) => {
                counts.add(current, "creat");
                if whole.contains("O_EXCL") {
                    counts.add(current, "excl");
                }
            }
            "mkdir" | "mkdirat" if ok => counts.add(current, "mkdir"),
            "rename" | "renameat" | "renameat2" if ok => counts.add(current, "rename"),
            _ => {}
        }
    }
    Ok(counts)
}
