//! The mission report, `.harness/report.html` (`./run.sh report`): one self-contained page —
//! inline CSS, no script, no external asset — with the mission's progress and totals, a timeline
//! of every feature's attempts (each linking to its prompt.md and output.log), and the memory.
//!
//! [`render`] is a pure function of its [`Inputs`], byte-for-byte stable for fixed inputs, so it
//! is snapshot-tested; [`load`] gathers the inputs from the state directory and [`write_report`]
//! writes the page atomically. The totals are the status board's ([`crate::mission::status::board`]). Every text
//! that comes from a file or an agent is escaped ([`escape`]), and the Markdown of [`markdown`]
//! never lets raw HTML through.
//!
//! `page` lays out the page, `timeline` the features section, `markdown` renders the memory
//! files, `format` writes numbers and times, and `report.css` is the stylesheet.

mod format;
mod markdown;
mod page;
mod timeline;

pub use format::escape;
pub use markdown::markdown;
pub use page::render;

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Component, Path, PathBuf};

use anyhow::Context;

use crate::base::atomic::write_atomic;
use crate::base::error::InputError;
use crate::base::fs;
use crate::base::time::Timestamp;
use crate::mission::executor::{self, JobRecord};
use crate::mission::schedule::{self, States};
use crate::spec::config::Config;
use crate::spec::features::{FeatureId, FeatureList};
use crate::spec::layout::StateDir;
use crate::spec::role::Role;
use crate::state::memory;
use crate::state::mission_runs::{self, MissionRun};
use crate::state::run_state::Outcome;
use format::percent_encode;

/// The newest raw.md entries the report shows.
pub const RAW_TAIL: usize = 20;
/// The newest lines of each curated section the report shows.
pub const CURATOR_LINES: usize = 5;

/// Everything the report shows, read from the state directory by [`load`].
#[derive(Debug, Clone, PartialEq)]
pub struct Inputs {
    /// The project's name (its directory's), for the title.
    pub project: String,
    /// features.yaml.
    pub features: FeatureList,
    /// The run state of each feature that has one.
    pub states: States,
    /// The features a process is running now (their lock is held).
    pub running: BTreeSet<FeatureId>,
    /// The cluster job of each feature that has one, as last seen (the report asks no cluster:
    /// it is written at the end of every run, on a cluster's nodes too).
    pub jobs: BTreeMap<FeatureId, JobRecord>,
    /// config.yaml's max_iterations, for features that never ran.
    pub default_max_iterations: u32,
    /// The runs of `plan` (mission planning), oldest first.
    pub plans: Vec<PlanRun>,
    /// Every run on the whole mission (`plan`, the curator's agent), whose spend the totals
    /// count.
    pub mission_runs: Vec<MissionRun>,
    /// mission.md's text, if any.
    pub mission: Option<String>,
    /// summary.md's text (L2), if any.
    pub summary: Option<String>,
    /// The newest raw.md lines (L1), oldest first, at most [`RAW_TAIL`].
    pub raw_tail: Vec<String>,
    /// What the curator did recently; `None` before its first pass.
    pub curator: Option<CuratorView>,
    /// What goes before `runs/…` in a link: empty when the report is in the state directory.
    pub link_base: String,
    /// The clock: attempts still running count up to it; the page says when it was made.
    pub now: Timestamp,
}

/// One run of `plan`, from its `plans/<RUN_ID>/result.json`.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanRun {
    /// The run id (the directory's name).
    pub run_id: String,
    pub started_at: Timestamp,
    pub ended_at: Option<Timestamp>,
    pub outcome: Outcome,
    /// Tokens, when reported.
    pub tokens: Option<u64>,
    /// Cost in USD, when known.
    pub cost_usd: Option<f64>,
}

/// What the curator left recently, section by section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CuratorView {
    /// The file the lines come from, e.g. `MEMORY.md`.
    pub source: String,
    /// The sections that hold a line, in the file's order.
    pub sections: Vec<CuratedSection>,
}

/// The top of one curated section: the curator writes the best supported and the newest
/// lines first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CuratedSection {
    /// The `## ` heading.
    pub heading: String,
    /// Its first lines.
    pub lines: Vec<String>,
    /// How many more lines the section holds.
    pub more: usize,
}

/// Reads everything the report shows from `state_dir`, for a report written into `report_dir`
/// (the links to run directories are relative to it).
pub fn load(state_dir: &StateDir, report_dir: &Path, now: Timestamp) -> Result<Inputs, InputError> {
    state_dir.require_initialised()?;
    let config = Config::load(&state_dir.config())?;
    let features = FeatureList::load(&state_dir.features())?;
    let states = schedule::load_states(state_dir, &features)?;
    let running = features
        .features
        .iter()
        .map(|feature| &feature.id)
        .filter(|id| schedule::is_being_run(state_dir, id))
        .cloned()
        .collect();
    let read = |path: PathBuf| {
        memory::read_layer(&path)
            .map_err(|error| InputError::in_file(&path, format!("cannot read it: {error}")))
    };
    let raw = match fs::read(&state_dir.raw()) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(error) if error.kind() == io::ErrorKind::NotFound => String::new(),
        Err(error) => {
            return Err(InputError::in_file(
                &state_dir.raw(),
                format!("cannot read it: {error}"),
            ))
        }
    };
    let project = state_dir
        .root()
        .parent()
        .and_then(Path::file_name)
        .map_or_else(String::new, |name| name.to_string_lossy().into_owned());
    let mission_runs = mission_runs::load(state_dir);
    Ok(Inputs {
        project,
        jobs: executor::recorded_jobs(state_dir, &features)?,
        features,
        states,
        running,
        default_max_iterations: config.max_iterations,
        plans: plans_of(&mission_runs),
        mission_runs,
        mission: read(state_dir.mission())?,
        summary: read(state_dir.summary())?,
        raw_tail: raw_tail(&raw, RAW_TAIL),
        curator: load_curator(state_dir)
            .map_err(|error| InputError::new(format!("cannot read the curated memory: {error}")))?,
        link_base: link_base(report_dir, state_dir.root()),
        now,
    })
}

/// Generates the report of `state_dir` and writes it atomically to `output`. It is written at
/// the end of every run, so it first clears what killed writers left (see
/// [`sweep_after_kills`](crate::roles::attempt::sweep_after_kills)).
pub fn write_report(state_dir: &StateDir, output: &Path, now: Timestamp) -> anyhow::Result<()> {
    crate::roles::attempt::sweep_after_kills(state_dir);
    let output = std::path::absolute(output)
        .with_context(|| format!("bad output path {}", output.display()))?;
    let dir = output.parent().unwrap_or(Path::new("/"));
    let inputs = load(state_dir, dir, now)?;
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    write_atomic(&output, render(&inputs).as_bytes())
        .with_context(|| format!("cannot write {}", output.display()))
}

/// The curator's recent work: the one hook to point at the curator's own log once it keeps
/// one. Today, the newest lines of each section of MEMORY.md (L3); `None` while there is no
/// MEMORY.md (no curator pass yet).
pub fn load_curator(state_dir: &StateDir) -> io::Result<Option<CuratorView>> {
    let path = state_dir.memory();
    if !fs::exists(&path) {
        return Ok(None);
    }
    let text = memory::read_layer(&path)?.unwrap_or_default();
    Ok(Some(curator_view("MEMORY.md", &text, CURATOR_LINES)))
}

/// The first `per_section` lines of each `## ` section of a curated file, comments dropped;
/// sections without a line left out.
pub fn curator_view(source: &str, text: &str, per_section: usize) -> CuratorView {
    let text = memory::strip_comments(text);
    let mut sections: Vec<(String, Vec<String>)> = Vec::new();
    for line in text.lines() {
        if let Some(heading) = line.strip_prefix("## ") {
            sections.push((heading.trim().to_string(), Vec::new()));
        } else if let Some((_, lines)) = sections.last_mut() {
            if !line.trim().is_empty() {
                lines.push(line.trim_end().to_string());
            }
        }
    }
    let sections = sections
        .into_iter()
        .filter(|(_, lines)| !lines.is_empty())
        .map(|(heading, mut lines)| {
            let more = lines.len().saturating_sub(per_section);
            lines.truncate(per_section);
            CuratedSection {
                heading,
                lines,
                more,
            }
        })
        .collect();
    CuratorView {
        source: source.to_string(),
        sections,
    }
}

/// The mission planning runs among `runs` (every run that left a readable result.json, oldest
/// first: one still running, or killed, is left out rather than failing the report).
fn plans_of(runs: &[MissionRun]) -> Vec<PlanRun> {
    runs.iter()
        .filter(|run| run.role == Role::Planner)
        .filter(|run| crate::spec::layout::RunId::parse(&run.run_id).is_ok())
        .filter_map(|run| {
            Some(PlanRun {
                run_id: run.run_id.clone(),
                started_at: run.started_at,
                ended_at: Some(run.ended_at),
                outcome: run.outcome?,
                tokens: run.tokens(),
                cost_usd: run.cost_usd(),
            })
        })
        .collect()
}

/// The last `count` entries of raw.md's text, oldest first: blank lines and the curator's
/// comment lines left out.
pub fn raw_tail(raw: &str, count: usize) -> Vec<String> {
    let lines: Vec<&str> = raw
        .lines()
        .map(str::trim_end)
        .filter(|line| !line.trim().is_empty() && !line.trim_start().starts_with("<!--"))
        .collect();
    let skip = lines.len().saturating_sub(count);
    lines[skip..].iter().map(|line| line.to_string()).collect()
}

/// The prefix that turns `runs/…` (relative to the state directory) into a link from a page in
/// `report_dir`: empty when they are the same directory, else a relative path ending in `/`.
/// Both paths are absolute.
pub fn link_base(report_dir: &Path, state_root: &Path) -> String {
    let from: Vec<Component> = report_dir.components().collect();
    let to: Vec<Component> = state_root.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut base = String::new();
    for _ in common..from.len() {
        base.push_str("../");
    }
    for component in &to[common..] {
        base.push_str(&percent_encode(&component.as_os_str().to_string_lossy()));
        base.push('/');
    }
    base
}

#[cfg(test)]
mod tests;
