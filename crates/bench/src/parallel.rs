//! Benchmark 7: N independent features at once, `./run.sh all --parallel N` in a git repository
//! (validate: false), each agent sleeping 2 s, writing one file and delivering the promise. With no
//! serialisation on locks, the wall time stays near one feature's whatever N is: each feature
//! gets its own worktree, runs, and is merged back.

use std::time::Duration;

use anyhow::bail;
use harness_core::state::run_state::Status;

use crate::project::{run_expecting, Harness, Project};
use crate::stats::{median_secs, range, secs};

/// How long each agent works.
const AGENT_SECONDS: u64 = 2;

const SLEEPING_AGENT: &str = r#"#!/bin/sh
cat >/dev/null
sleep 2
mkdir -p out
echo "done by the agent" >"out/${HARNESS_FEATURE_ID:-unknown}.txt"
echo "<promise>${HARNESS_COMPLETION_PROMISE:-TASK_COMPLETE}</promise>"
"#;

/// Runs `./run.sh all --parallel N` on N features, `runs` times for each N in `widths`.
pub fn run(harness: &Harness, widths: &[usize], runs: usize) -> anyhow::Result<String> {
    let mut rows = Vec::new();
    for &width in widths {
        let mut times = Vec::new();
        for run in 1..=runs {
            let elapsed = measure(harness, width)?;
            eprintln!(
                "parallel: {width} at once, run {run}/{runs}: {} s",
                secs(elapsed.as_secs_f64())
            );
            times.push(elapsed);
        }
        rows.push((width, times));
    }
    let one = rows.first().map_or(0.0, |(_, times)| median_secs(times));
    let mut text = format!(
        "`./run.sh all --parallel N` on N independent features in a git repository (validate: false); each agent sleeps {AGENT_SECONDS} s, writes one file and delivers the promise, so each feature takes one iteration, in its own worktree, merged back when done. Medians of {runs} runs.\n\n| features at once | wall time (s) | range (s) | × one feature's time | wall time beyond the agent's {AGENT_SECONDS} s (s) |\n|---:|---:|---:|---:|---:|\n"
    );
    for (width, times) in &rows {
        let median = median_secs(times);
        let (low, high) = range(&times.iter().map(Duration::as_secs_f64).collect::<Vec<_>>());
        text.push_str(&format!(
            "| {width} | {} | {}–{} | {:.2}× | {} |\n",
            secs(median),
            secs(low),
            secs(high),
            median / one,
            secs(median - AGENT_SECONDS as f64)
        ));
    }
    Ok(text)
}

fn measure(harness: &Harness, width: usize) -> anyhow::Result<Duration> {
    let project = Project::new(harness, true)?;
    let mut features = String::from("features:\n");
    for n in 1..=width {
        features.push_str(&format!(
            "  - id: F-{n:03}\n    title: Feature {n}\n    description: One file.\n    acceptance:\n      - out/F-{n:03}.txt exists.\n    depends_on: []\n"
        ));
    }
    project.write_state("features.yaml", &features)?;
    let agent = project.script("sleeping-agent.sh", SLEEPING_AGENT)?;
    project.config(&agent, "max_iterations: 3\nvalidate: false\n")?;
    let parallel = width.to_string();
    let mut command = project.run_sh(&["all", "--parallel", &parallel, "--quiet"]);
    let elapsed = run_expecting(&mut command, &[0])?;
    for n in 1..=width {
        let feature = format!("F-{n:03}");
        let state = project.run_state(&feature)?;
        if state.status != Status::Done {
            bail!("{feature} is {:?} after the run", state.status);
        }
        if !project
            .workdir
            .join("out")
            .join(format!("{feature}.txt"))
            .is_file()
        {
            bail!("{feature}'s file did not reach the main tree");
        }
    }
    Ok(elapsed)
}
