//! Benchmark 6: one curator pass over a raw.md of 1,000, 10,000, 100,000 and 1,000,000 entries
//! (synthetic, like a long mission's log: outcome lines, recurring lessons in varying words,
//! one-off remarks). Wall time and peak resident memory of the curator process, read with
//! wait4(2)'s resource usage of that very child.

use std::fs::File;
use std::os::unix::process::ExitStatusExt;
use std::process::{ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::Context;

use crate::entries::{raw_text, EntryMaker};
use crate::project::{tail, Harness, Project};
use crate::stats::{bytes, count, secs};

/// One pass measured.
struct Pass {
    entries: usize,
    raw_bytes: u64,
    /// `None`: stopped at the time limit.
    seconds: Option<f64>,
    peak_rss_kib: u64,
    status: ExitStatus,
    /// The curator's last line on stderr (its summary).
    summary: String,
}

/// Runs the benchmark on powers of ten from 1,000 entries up to `max`; a pass longer than
/// `timeout_secs` is stopped and reported as such (the larger sizes are then skipped).
pub fn run(harness: &Harness, max: usize, timeout_secs: u64) -> anyhow::Result<String> {
    let mut passes = Vec::new();
    let mut size = 1_000;
    while size <= max {
        let pass = measure(harness, size, Duration::from_secs(timeout_secs))?;
        eprintln!(
            "curator: {} entries: {} s, {} peak",
            count(size),
            pass.seconds.map_or("timed out".into(), secs),
            bytes(pass.peak_rss_kib * 1024)
        );
        let stop = pass.seconds.is_none();
        passes.push(pass);
        if stop {
            break;
        }
        size *= 10;
    }
    Ok(report(&passes, timeout_secs))
}

fn measure(harness: &Harness, entries: usize, timeout: Duration) -> anyhow::Result<Pass> {
    let project = Project::new(harness, false)?;
    let raw = raw_text(&mut EntryMaker::new(6), entries);
    project.write_state("raw.md", &raw)?;
    let stdout = File::create(project.root().join("curator.stdout"))?;
    let stderr_path = project.root().join("curator.stderr");
    let stderr = File::create(&stderr_path)?;
    let mut command = project.curator(&["--quiet"]);
    command
        .stdout(Stdio::from(stdout))
        .stderr(Stdio::from(stderr));
    let started = Instant::now();
    let child = command.spawn().context("cannot start the curator")?;
    let pid = child.id() as libc::pid_t;
    // A watchdog stops a pass that takes too long; it is told when the pass ended by itself.
    let (ended, watch) = mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        if let Err(mpsc::RecvTimeoutError::Timeout) = watch.recv_timeout(timeout) {
            // SAFETY: kill(2) on our own child, not yet reaped (the main thread is in wait4).
            unsafe { libc::kill(pid, libc::SIGKILL) };
            true
        } else {
            false
        }
    });
    let (raw_status, usage) = wait_with_usage(pid)?;
    let seconds = started.elapsed().as_secs_f64();
    let _ = ended.send(());
    let timed_out = watchdog.join().unwrap_or(false);
    // The child was reaped by wait4; `child` must not wait for it again.
    drop(child);
    let text = std::fs::read_to_string(&stderr_path).unwrap_or_default();
    let status = ExitStatus::from_raw(raw_status);
    if !timed_out && !status.success() {
        anyhow::bail!(
            "the curator failed on {entries} entries ({status}):\n{}",
            tail(&text, 2000)
        );
    }
    Ok(Pass {
        entries,
        raw_bytes: raw.len() as u64,
        seconds: (!timed_out).then_some(seconds),
        // ru_maxrss is in KiB on Linux.
        peak_rss_kib: usage.ru_maxrss as u64,
        status,
        // "curator: N log lines, M items; summary.md …; wrote …": the figures, not the files.
        summary: text
            .lines()
            .last()
            .unwrap_or_default()
            .trim_start_matches("curator: ")
            .split("; wrote")
            .next()
            .unwrap_or_default()
            .to_string(),
    })
}

/// Waits for child `pid` and returns its raw wait status and its resource usage.
fn wait_with_usage(pid: libc::pid_t) -> anyhow::Result<(i32, libc::rusage)> {
    let mut status = 0;
    // SAFETY: rusage is plain data, and wait4 fills it in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: waiting for our own child with valid out-pointers.
        let result = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if result == pid {
            return Ok((status, usage));
        }
        let error = std::io::Error::last_os_error();
        if error.kind() != std::io::ErrorKind::Interrupted {
            return Err(error).context("wait4 on the curator");
        }
    }
}

fn report(passes: &[Pass], timeout_secs: u64) -> String {
    let mut text = String::from(
        "One pass of the `curator` binary (no agent) over a raw.md of N synthetic entries (30 % outcome lines, 45 % recurring lessons in varying words, 25 % one-off remarks over a 20,000-word vocabulary), in a fresh project. Wall time, and peak resident memory from wait4(2).\n\n| entries | raw.md | wall time (s) | µs per entry | time ×, for 10× the entries | peak RSS | bytes of RSS per entry | curator's summary |\n|---:|---:|---:|---:|---:|---:|---:|---|\n",
    );
    let mut previous: Option<f64> = None;
    for pass in passes {
        let (time, per_entry, growth) = match pass.seconds {
            Some(seconds) => (
                secs(seconds),
                format!("{:.1}", seconds * 1e6 / pass.entries as f64),
                previous.map_or("–".into(), |p| format!("{:.1}×", seconds / p)),
            ),
            None => (
                format!("> {timeout_secs} (stopped)"),
                "–".into(),
                "–".into(),
            ),
        };
        previous = pass.seconds;
        text.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
            count(pass.entries),
            bytes(pass.raw_bytes),
            time,
            per_entry,
            growth,
            bytes(pass.peak_rss_kib * 1024),
            pass.peak_rss_kib * 1024 / pass.entries as u64,
            if pass.status.success() {
                pass.summary.replace('|', "/")
            } else {
                format!("{}", pass.status)
            }
        ));
    }
    text
}
