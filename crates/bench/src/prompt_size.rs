//! Benchmark 5: the size of each layer of the worker's prompt as a mission goes on. One feature
//! runs up to 1,000 iterations; every iteration the agent prints four memory entries (lessons that
//! recur in other words, and one-off remarks) and ~3,000 characters of progress, so raw.md and
//! the notes grow all the time. The curator runs after every 10 iterations, as a user would run
//! `curator` between runs. At iteration 1, 10, 100 and 1,000, `./run.sh explain F-001` tells the
//! estimated tokens of each layer of the prompt that iteration gets.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Context};

use crate::entries::EntryMaker;
use crate::project::{run_expecting, Harness, Project};
use crate::stats::{bytes, secs};

/// Iterations between two curator passes.
const CHUNK: u32 = 10;

/// The agent: it reads its prompt, prints the memory entries prepared for its iteration, then
/// ~3,000 characters of progress (what the notes keep of an attempt).
const MEMORY_AGENT: &str = r#"#!/bin/sh
cat >/dev/null
i=${HARNESS_ITERATION:-0}
cat "$(dirname "$0")/entries/$i.txt" 2>/dev/null
n=0
while [ "$n" -lt 30 ]; do
  echo "iteration $i, step $n: edited src/module_$n.rs, ran the tests (41 passed, 0 failed) and moved on"
  n=$((n + 1))
done
"#;

/// What was seen at one checkpoint.
struct Checkpoint {
    iteration: u32,
    /// Each layer's estimated tokens, by its (normalised) name.
    layers: BTreeMap<String, usize>,
    total: usize,
    raw_lines: usize,
    archived_lines: usize,
    notes_bytes: u64,
    state_bytes: u64,
    identity_lines: usize,
    /// The harness's wall time per iteration over the last chunk before the checkpoint.
    seconds_per_iteration: Option<f64>,
    /// The last curator pass's wall time.
    curator_seconds: Option<f64>,
}

/// Runs the benchmark up to the last checkpoint and returns its section of the report.
pub fn run(harness: &Harness, checkpoints: &[u32]) -> anyhow::Result<String> {
    let last = *checkpoints.last().context("no checkpoint")?;
    let project = Project::new(harness, true)?;
    project.write_state(
        "features.yaml",
        "features:\n  - id: F-001\n    title: A long feature\n    description: The agent works on it for a thousand iterations.\n    acceptance:\n      - It never ends.\n    depends_on: []\n",
    )?;
    let entries_dir = project.root().join("entries");
    std::fs::create_dir_all(&entries_dir)?;
    let mut maker = EntryMaker::new(5);
    for iteration in 1..=last {
        let lines: Vec<String> = (0..4).map(|_| maker.agent_line()).collect();
        std::fs::write(
            entries_dir.join(format!("{iteration}.txt")),
            lines.join("\n") + "\n",
        )?;
    }
    let agent = project.script("memory-agent.sh", MEMORY_AGENT)?;
    project.config(
        &agent,
        &format!("max_iterations: {last}\nvalidate: false\nstall_iterations: 0\n"),
    )?;
    let curate = harness.binary("curator").is_file();

    let started = Instant::now();
    let mut done = 0;
    let mut seen = Vec::new();
    let mut seconds_per_iteration = None;
    let mut curator_seconds = None;
    for &checkpoint in checkpoints {
        while done + 1 < checkpoint {
            let target = (done + CHUNK).min(checkpoint - 1);
            let mut command =
                project.run_sh(&["F-001", "--quiet", "--max-iterations", &target.to_string()]);
            let elapsed = run_expecting(&mut command, &[2])?;
            seconds_per_iteration = Some(elapsed.as_secs_f64() / f64::from(target - done));
            done = target;
            if curate {
                let elapsed = run_expecting(&mut project.curator(&["--quiet"]), &[0])?;
                curator_seconds = Some(elapsed.as_secs_f64());
            }
            prune_run_files(&project.state_dir().join("runs/F-001"))?;
            if done % 100 == 0 {
                eprintln!(
                    "prompt: {done} iterations in {} s",
                    secs(started.elapsed().as_secs_f64())
                );
            }
        }
        let (layers, total) = explain(&project)?;
        seen.push(Checkpoint {
            iteration: checkpoint,
            layers,
            total,
            raw_lines: count_lines(&project.state_dir().join("raw.md")),
            archived_lines: count_archived(&project.state_dir().join("archive")),
            notes_bytes: file_size(&project.state_dir().join("notes/F-001.md")),
            state_bytes: file_size(&project.state_dir().join("runs/F-001/state.json")),
            identity_lines: count_lines(&project.identity_dir().join("worker.md")),
            seconds_per_iteration,
            curator_seconds,
        });
    }
    Ok(report(&seen, curate, started.elapsed().as_secs_f64()))
}

/// `./run.sh explain F-001`: each layer's estimated tokens, and the total.
fn explain(project: &Project) -> anyhow::Result<(BTreeMap<String, usize>, usize)> {
    let out = project.run_sh(&["explain", "F-001"]).output()?;
    if !out.status.success() {
        bail!(
            "./run.sh explain failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let table = String::from_utf8_lossy(&out.stderr);
    let mut layers = BTreeMap::new();
    let mut total = None;
    let mut in_table = false;
    for line in table.lines() {
        if line.starts_with("layer ") {
            in_table = true;
            continue;
        }
        if !in_table || line.trim().is_empty() {
            continue;
        }
        let Some((name, tokens)) = line.trim_end().rsplit_once(' ') else {
            continue;
        };
        let Ok(tokens) = tokens.parse::<usize>() else {
            continue;
        };
        let name = name.trim();
        if name == "total" {
            total = Some(tokens);
        } else {
            *layers.entry(layer_name(name)).or_insert(0) += tokens;
        }
    }
    let total = total.context("explain printed no total")?;
    Ok((layers, total))
}

/// `Feature F-001: A long feature` → `Feature F-001 (spec)`; other names as they are.
fn layer_name(name: &str) -> String {
    match name.split_once(':') {
        Some((feature, _)) if feature.starts_with("Feature ") => format!("{feature} (spec)"),
        _ => name.to_string(),
    }
}

/// Keeps the disk small: the prompts and output logs of finished runs go (their directories,
/// result.json and the run state stay, so no run id is ever reused).
fn prune_run_files(runs: &Path) -> anyhow::Result<()> {
    let Ok(entries) = std::fs::read_dir(runs) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        if entry.file_type()?.is_dir() {
            for name in ["prompt.md", "output.log"] {
                let _ = std::fs::remove_file(entry.path().join(name));
            }
        }
    }
    Ok(())
}

fn file_size(path: &Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

fn count_lines(path: &Path) -> usize {
    std::fs::read(path)
        .map(|bytes| bytes.iter().filter(|&&b| b == b'\n').count())
        .unwrap_or(0)
}

fn count_archived(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("raw-"))
        .map(|e| count_lines(&e.path()))
        .sum()
}

fn report(seen: &[Checkpoint], curate: bool, seconds: f64) -> String {
    let mut names: Vec<&String> = seen.iter().flat_map(|c| c.layers.keys()).collect();
    names.sort();
    names.dedup();
    let mut text = format!(
        "One feature, {} iterations; each agent run prints 4 memory entries and ~3,000 characters of progress. {} Estimated tokens (characters / 4) of each layer of the prompt of iteration N, from `./run.sh explain F-001`; took {} s.\n\n",
        seen.last().map_or(0, |c| c.iteration),
        if curate {
            "The curator runs after every 10 iterations."
        } else {
            "No curator binary was built, so nothing was curated."
        },
        secs(seconds)
    );
    text.push_str("| layer |");
    for checkpoint in seen {
        text.push_str(&format!(" iteration {} |", checkpoint.iteration));
    }
    text.push_str("\n|---|");
    text.push_str(&"---:|".repeat(seen.len()));
    text.push('\n');
    for name in names {
        text.push_str(&format!("| {name} |"));
        for checkpoint in seen {
            match checkpoint.layers.get(name) {
                Some(tokens) => text.push_str(&format!(" {tokens} |")),
                None => text.push_str(" – |"),
            }
        }
        text.push('\n');
    }
    let row = |label: &str, cell: &dyn Fn(&Checkpoint) -> String| {
        let mut line = format!("| {label} |");
        for checkpoint in seen {
            line.push_str(&format!(" {} |", cell(checkpoint)));
        }
        line.push('\n');
        line
    };
    text.push_str(&row("**total**", &|c| format!("**{}**", c.total)));
    text.push_str(&row("raw.md lines", &|c| c.raw_lines.to_string()));
    text.push_str(&row("archived entries", &|c| c.archived_lines.to_string()));
    text.push_str(&row("identity/worker.md lines", &|c| {
        c.identity_lines.to_string()
    }));
    text.push_str(&row("notes file", &|c| bytes(c.notes_bytes)));
    text.push_str(&row("state.json", &|c| bytes(c.state_bytes)));
    text.push_str(&row("harness s per iteration (last 10)", &|c| {
        c.seconds_per_iteration
            .map_or("–".into(), |s| format!("{:.3}", s))
    }));
    text.push_str(&row("last curator pass (s)", &|c| {
        c.curator_seconds
            .map_or("–".into(), |s| format!("{:.3}", s))
    }));
    text
}
