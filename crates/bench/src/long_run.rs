//! Benchmark 4, flat to the end: one feature runs N+1 iterations (10,001 by default) in one
//! `./run.sh F-001`, with an agent that notes when it starts (bash's `$EPOCHREALTIME`, no process)
//! and, at iteration 100 and at the last, the worker's memory (its parent's `VmHWM`, the peak so
//! far, and `VmRSS`). A bare loop then runs the same agent on the prompts of the first and the
//! last 101 iterations. The overhead of a window of 100 iterations is (the harness's time from the
//! first agent's start to the 101st's − the bare loop's, on the same prompts) / 100; it must not
//! grow from iterations 1–100 to the last 100.

use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context};

use crate::overhead::{config_extra, prompts_of, BARE_LOOP};
use crate::project::{run_expecting, time_quietly, Harness, Project};
use crate::stats::{count, median, ms, range, secs};

/// The agent: reads its prompt, notes when it started (and the worker's memory at the two
/// iterations named in the environment), prints one line. Builtins only, so it starts no process.
const TIMED_AGENT: &str = r#"#!/bin/bash
cat >/dev/null
printf '%s\n' "$EPOCHREALTIME" >>"$BENCH_TIMES"
if [ -n "${HARNESS_ITERATION:-}" ] && { [ "$HARNESS_ITERATION" = "$BENCH_EARLY" ] || [ "$HARNESS_ITERATION" = "$BENCH_LAST" ]; }; then
  while read -r key value _; do
    case $key in
      VmHWM:|VmRSS:) printf '%s %s %s\n' "$HARNESS_ITERATION" "$key" "$value" >>"$BENCH_MEMORY" ;;
    esac
  done </proc/$PPID/status
fi
echo "working on ${HARNESS_FEATURE_ID:-?}, iteration ${HARNESS_ITERATION:-?}"
"#;

/// What to run.
#[derive(Debug, Clone)]
pub struct Options {
    /// The iterations whose last window is measured (one more runs, to time the last).
    pub iterations: u32,
    /// Repetitions (the median is reported).
    pub runs: usize,
    /// Iterations in each window.
    pub window: u32,
}

/// One repetition's figures: seconds per window (harness, bare loop), early and late, and the
/// worker's memory in KiB (peak at the end of the early window, peak and resident at the end).
#[derive(Debug, Clone, Copy)]
struct Sample {
    harness: (f64, f64),
    bare: (f64, f64),
    /// The median iteration's overhead (harness − bare loop), early and late: the same
    /// comparison, less moved by a moment of load on a shared machine.
    median_overheads: (f64, f64),
    peak_early: u64,
    peak_late: u64,
    resident_early: u64,
    resident_late: u64,
    whole_run: f64,
}

impl Sample {
    /// Overhead per iteration, early and late window.
    fn overheads(&self, window: f64) -> (f64, f64) {
        (
            (self.harness.0 - self.bare.0) / window,
            (self.harness.1 - self.bare.1) / window,
        )
    }
}

/// Runs the benchmark and returns its part of the report.
pub fn run(harness: &Harness, options: &Options) -> anyhow::Result<String> {
    let mut samples = Vec::new();
    for run in 1..=options.runs {
        let sample = measure(harness, options)?;
        let (early, late) = sample.overheads(f64::from(options.window));
        eprintln!(
            "overhead: {} iterations, run {run}/{}: {} s; overhead {} ms early, {} ms late",
            count(options.iterations as usize + 1),
            options.runs,
            secs(sample.whole_run),
            ms(early),
            ms(late)
        );
        samples.push(sample);
    }
    if samples.is_empty() {
        // `--long-runs 0`: a table of medians of nothing would read as figures.
        return Ok("Not measured (`--long-runs 0`).\n".to_string());
    }
    Ok(report(options, &samples))
}

fn report(options: &Options, samples: &[Sample]) -> String {
    let window = f64::from(options.window);
    let (last_from, last_to) = (options.iterations - options.window + 1, options.iterations);
    let column = |f: &dyn Fn(&Sample) -> f64| -> (f64, f64, f64) {
        let values: Vec<f64> = samples.iter().map(f).collect();
        let (low, high) = range(&values);
        (median(&values), low, high)
    };
    let cell = |(mid, low, high): (f64, f64, f64), unit: &dyn Fn(f64) -> String| {
        format!("{} ({}–{})", unit(mid), unit(low), unit(high))
    };
    let per_iteration = |s: f64| ms(s / window);
    let kib = |k: f64| format!("{:.1} MiB", k / 1024.0);
    let early = column(&|s| s.overheads(window).0);
    let late = column(&|s| s.overheads(window).1);
    let ratio = column(&|s| {
        let (early, late) = s.overheads(window);
        late / early
    });
    let mut text = format!(
        "{} iterations of one `./run.sh F-001` (small state, git repository, state flushed every iteration; the agent notes when it starts, with no process of its own), then a bare loop of the same agent on the prompts of iterations 1–{} and {}–{}. Medians of {} runs, with their ranges; per iteration, in ms. The overhead is (the harness's time over the window − the bare loop's) / the window; that of the median iteration compares the medians of the window's iteration times instead, which a moment of load on a shared machine moves less.\n\n",
        count(options.iterations as usize + 1),
        options.window + 1,
        count(last_from as usize),
        count(last_to as usize + 1),
        options.runs
    );
    text.push_str(&format!(
        "| | iterations 1–{} | iterations {}–{} | late ÷ early |\n|---|---:|---:|---:|\n",
        options.window,
        count(last_from as usize),
        count(last_to as usize)
    ));
    text.push_str(&format!(
        "| harness per iteration | {} | {} | |\n",
        cell(column(&|s| s.harness.0), &per_iteration),
        cell(column(&|s| s.harness.1), &per_iteration)
    ));
    text.push_str(&format!(
        "| bare loop per iteration | {} | {} | |\n",
        cell(column(&|s| s.bare.0), &per_iteration),
        cell(column(&|s| s.bare.1), &per_iteration)
    ));
    text.push_str(&format!(
        "| **overhead per iteration** | **{}** | **{}** | **{:.2}×** ({:.2}–{:.2}) |\n",
        cell(early, &ms),
        cell(late, &ms),
        ratio.0,
        ratio.1,
        ratio.2
    ));
    let median_ratio = column(&|s| s.median_overheads.1 / s.median_overheads.0);
    text.push_str(&format!(
        "| overhead of the median iteration | {} | {} | {:.2}× ({:.2}–{:.2}) |\n",
        cell(column(&|s| s.median_overheads.0), &ms),
        cell(column(&|s| s.median_overheads.1), &ms),
        median_ratio.0,
        median_ratio.1,
        median_ratio.2
    ));
    text.push_str(&format!(
        "| worker's peak memory (VmHWM) | {} | {} | |\n",
        cell(column(&|s| s.peak_early as f64), &kib),
        cell(column(&|s| s.peak_late as f64), &kib)
    ));
    text.push_str(&format!(
        "| worker's resident memory (VmRSS) | {} | {} | |\n",
        cell(column(&|s| s.resident_early as f64), &kib),
        cell(column(&|s| s.resident_late as f64), &kib)
    ));
    text.push_str(&format!(
        "\nThe memory columns are read at iteration {} and at iteration {} (the peak is the highest so far). A whole run took {} s.\n",
        options.window,
        count(options.iterations as usize + 1),
        secs(column(&|s| s.whole_run).0)
    ));
    text
}

/// One long run of the harness, then the bare loop on its first and last prompts.
fn measure(harness: &Harness, options: &Options) -> anyhow::Result<Sample> {
    let project = Project::new(harness, true)?;
    project.write_state("features.yaml", crate::overhead::ONE_FEATURE)?;
    let agent = project.script("timed-agent.sh", TIMED_AGENT)?;
    let bare_loop = project.script("bare-loop.sh", BARE_LOOP)?;
    let total = options.iterations + 1;
    project.config(&agent, &config_extra(total))?;
    let times = project.root().join("times");
    let memory = project.root().join("memory");
    let mut command = project.run_sh(&["F-001", "--quiet", "--max-iterations", &total.to_string()]);
    command
        .env("BENCH_TIMES", &times)
        .env("BENCH_MEMORY", &memory)
        .env("BENCH_EARLY", options.window.to_string())
        .env("BENCH_LAST", total.to_string());
    let whole_run = run_expecting(&mut command, &[2])?.as_secs_f64();
    let started = read_times(&times)?;
    if started.len() != total as usize {
        bail!("{} agent runs, not {total}", started.len());
    }
    let w = options.window as usize;
    let n = options.iterations as usize;
    let harness_windows = (started[w] - started[0], started[n] - started[n - w]);
    let harness_medians = (
        median(&periods(&started[..=w])),
        median(&periods(&started[n - w..=n])),
    );

    let state = project.run_state("F-001")?;
    let attempts = state.attempts();
    let bare_window = |from: usize| -> anyhow::Result<(f64, f64)> {
        let prompts = prompts_of(&project, &attempts[from..from + w + 1])?;
        let bare_times = project.root().join(format!("bare-times-{from}"));
        let mut bare = Command::new(&bare_loop);
        bare.current_dir(&project.workdir)
            .env("BENCH_TIMES", &bare_times)
            .arg(&agent)
            .args(&prompts);
        let (_, status) = time_quietly(&mut bare)?;
        if !status.success() {
            bail!("the bare loop failed: {status}");
        }
        let bare_started = read_times(&bare_times)?;
        Ok((
            bare_started[w] - bare_started[0],
            median(&periods(&bare_started[..=w])),
        ))
    };
    let (early, late) = (bare_window(0)?, bare_window(n - w)?);
    let memory = std::fs::read_to_string(&memory)
        .with_context(|| format!("the agent noted no memory in {}", memory.display()))?;
    let kib = |iteration: u32, key: &str| -> anyhow::Result<u64> {
        let prefix = format!("{iteration} {key} ");
        memory
            .lines()
            .find_map(|line| line.strip_prefix(&prefix)?.parse().ok())
            .with_context(|| format!("no {key} of iteration {iteration} in {memory:?}"))
    };
    Ok(Sample {
        harness: harness_windows,
        bare: (early.0, late.0),
        median_overheads: (harness_medians.0 - early.1, harness_medians.1 - late.1),
        peak_early: kib(options.window, "VmHWM:")?,
        peak_late: kib(total, "VmHWM:")?,
        resident_early: kib(options.window, "VmRSS:")?,
        resident_late: kib(total, "VmRSS:")?,
        whole_run,
    })
}

/// The time from each start to the next.
fn periods(started: &[f64]) -> Vec<f64> {
    started.windows(2).map(|pair| pair[1] - pair[0]).collect()
}

/// The start times (seconds) the agent noted, in order.
fn read_times(path: &Path) -> anyhow::Result<Vec<f64>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("the agent noted no time in {}", path.display()))?;
    text.lines()
        .map(|line| {
            line.trim()
                .parse::<f64>()
                .with_context(|| format!("{}: not a time: {line:?}", path.display()))
        })
        .collect()
}
