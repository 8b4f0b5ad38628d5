//! `harness-bench`: the benchmarks of BENCHMARKS.md (`make bench`). It drives the release
//! binaries and run.sh on temporary projects, as a user would, and prints a Markdown report on
//! stdout (progress on stderr): the harness's overhead per iteration against a bare loop, the
//! prompt's layers over a long mission, the curator's time and memory over growing logs, and
//! features run in parallel.

mod curator_scaling;
mod entries;
mod long_run;
mod machine;
mod overhead;
mod parallel;
mod project;
mod prompt_size;
mod stats;
mod syscalls;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;

use project::Harness;

/// Runs the harness's benchmarks and prints the figures as Markdown (progress on stderr).
#[derive(Debug, Parser)]
#[command(name = "harness-bench", version)]
struct Cli {
    /// Which benchmarks, comma-separated: overhead, prompt, curator, parallel.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "overhead,prompt,curator,parallel"
    )]
    only: Vec<Benchmark>,

    /// Small sizes everywhere: a smoke test of the benchmarks themselves (figures not meaningful).
    #[arg(long)]
    quick: bool,

    /// Repetitions of each overhead measurement (the median is reported).
    #[arg(long, default_value_t = 5)]
    runs: usize,

    /// Iterations of each overhead run.
    #[arg(long, default_value_t = 200)]
    iterations: u32,

    /// Iterations of the long overhead run (its last 100 against its first 100).
    #[arg(long, default_value_t = 10_000)]
    long_iterations: u32,

    /// Repetitions of the long overhead run.
    #[arg(long, default_value_t = 3)]
    long_runs: usize,

    /// A directory on a tmpfs, where the small state is measured again with no disk under it.
    #[arg(long, default_value = "/dev/shm")]
    tmpfs: PathBuf,

    /// The largest log the curator benchmark curates (entries); the sizes are the powers of ten
    /// from 1,000 up to it.
    #[arg(long, default_value_t = 1_000_000)]
    curator_max: usize,

    /// A curator pass that takes longer is stopped and reported as such (seconds).
    #[arg(long, default_value_t = 180)]
    curator_timeout: u64,

    /// The harness install (run.sh, roles/) [default: the repository this was built from].
    #[arg(long, env = "HARNESS_HOME")]
    harness_home: Option<PathBuf>,

    /// Where the release binaries are [default: beside this program].
    #[arg(long)]
    bin_dir: Option<PathBuf>,

    /// Where temporary projects go [default: the system's temporary directory].
    #[arg(long)]
    scratch: Option<PathBuf>,

    /// Instead of benchmarking, write the curator benchmark's synthetic raw.md of `--entries`
    /// entries to this file (to profile the curator by hand).
    #[arg(long, value_name = "FILE")]
    write_raw: Option<PathBuf>,

    /// The entries of `--write-raw`.
    #[arg(long, default_value_t = 10_000)]
    entries: usize,
}

/// One benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Benchmark {
    /// 4: harness overhead per iteration.
    Overhead,
    /// 5: prompt size over time.
    Prompt,
    /// 6: curator scaling.
    Curator,
    /// 7: parallel throughput.
    Parallel,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("harness-bench: error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// Benchmark 4: the overhead per iteration at several states, over 10,000 iterations, and
/// counted in system calls.
fn overhead_section(cli: &Cli, harness: &Harness) -> anyhow::Result<String> {
    let options = if cli.quick {
        overhead::Options {
            iterations: 20,
            runs: 2,
            history_attempts: 5,
            features: 100,
            archived: 1_000,
            raw: 100,
            tmpfs: tmpfs(&cli.tmpfs),
        }
    } else {
        overhead::Options {
            iterations: cli.iterations,
            runs: cli.runs,
            history_attempts: 50,
            features: 1_000,
            archived: 100_000,
            raw: 10_000,
            tmpfs: tmpfs(&cli.tmpfs),
        }
    };
    let long = if cli.quick {
        long_run::Options {
            iterations: 300,
            runs: 1,
            window: 100,
        }
    } else {
        long_run::Options {
            iterations: cli.long_iterations,
            runs: cli.long_runs,
            window: 100,
        }
    };
    let (few, more) = if cli.quick { (5, 20) } else { (10, 100) };
    Ok(format!(
            "{}\n### Flat to the end: iterations 1–100 against the last 100\n\n{}\n### What an iteration asks of the kernel\n\n{}",
            overhead::run(harness, &options)?,
            long_run::run(harness, &long)?,
            syscalls::run(harness, few, more)?
        ))
}

/// `dir` if it is on a tmpfs (else the tmpfs case is left out, saying so on stderr).
fn tmpfs(dir: &std::path::Path) -> Option<PathBuf> {
    const TMPFS_MAGIC: i64 = 0x0102_1994;
    let on_tmpfs = harness_core::base::git::stat_walk::file_system_magic(dir) == Some(TMPFS_MAGIC);
    if !on_tmpfs {
        eprintln!(
            "overhead: {} is not a tmpfs: the tmpfs case is left out",
            dir.display()
        );
    }
    on_tmpfs.then(|| dir.to_path_buf())
}

fn run(cli: &Cli) -> anyhow::Result<()> {
    if let Some(path) = &cli.write_raw {
        let text = entries::raw_text(&mut entries::EntryMaker::new(6), cli.entries);
        std::fs::write(path, text)?;
        return Ok(());
    }
    let harness = Harness {
        home: cli
            .harness_home
            .clone()
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")),
        bin_dir: match &cli.bin_dir {
            Some(dir) => dir.clone(),
            None => std::env::current_exe()?
                .parent()
                .expect("the program is in a directory")
                .to_path_buf(),
        },
        scratch: cli.scratch.clone().unwrap_or_else(std::env::temp_dir),
    };
    let harness = Harness {
        home: harness.home.canonicalize()?,
        ..harness
    };
    harness.check(&["worker", "validator", "planner"])?;
    let started = Instant::now();
    let machine = machine::Machine::describe();
    let mut report = format!(
        "# harness benchmarks\n\nCommand: `{}`\n\n## Machine\n\n{}",
        std::env::args().collect::<Vec<_>>().join(" "),
        machine.markdown()
    );
    for benchmark in &cli.only {
        let section = match benchmark {
            Benchmark::Overhead => (
                "4. Harness overhead per iteration",
                overhead_section(cli, &harness)?,
            ),
            Benchmark::Prompt => {
                let checkpoints: &[u32] = if cli.quick {
                    &[1, 10, 30]
                } else {
                    &[1, 10, 100, 1000]
                };
                (
                    "5. Prompt size over time",
                    prompt_size::run(&harness, checkpoints)?,
                )
            }
            Benchmark::Curator => {
                harness.check(&["curator"])?;
                let max = if cli.quick { 10_000 } else { cli.curator_max };
                (
                    "6. Curator scaling",
                    curator_scaling::run(&harness, max, cli.curator_timeout)?,
                )
            }
            Benchmark::Parallel => {
                let (widths, runs): (&[usize], usize) = if cli.quick {
                    (&[1, 2], 1)
                } else {
                    (&[1, 2, 4, 8], 3)
                };
                (
                    "7. Parallel throughput",
                    parallel::run(&harness, widths, runs)?,
                )
            }
        };
        report.push_str(&format!("\n## {}\n\n{}", section.0, section.1));
    }
    report.push_str(&format!(
        "\nAll benchmarks took {} s; load average at the end: {}.\n",
        stats::secs(started.elapsed().as_secs_f64()),
        machine::load_average()
    ));
    print!("{report}");
    Ok(())
}
