//! The mission report, `.harness/report.html` (`./run.sh report`): one self-contained page —
//! inline CSS, no script, no external asset — with the mission's progress and totals, a timeline
//! of every feature's attempts (each linking to its prompt.md and output.log), and the memory.
//!
//! [`render`] is a pure function of its [`Inputs`], byte-for-byte stable for fixed inputs, so it
//! is snapshot-tested; [`load`] gathers the inputs from the state directory and [`write_report`]
//! writes the page atomically. The totals are the status board's ([`status::board`]). Every text
//! that comes from a file or an agent is escaped, and the markdown subset of [`markdown`] never
//! lets raw HTML through.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::io;
use std::path::{Component, Path, PathBuf};

use anyhow::Context;
use serde::Deserialize;

use crate::base::atomic::write_atomic;
use crate::base::error::InputError;
use crate::base::time::Timestamp;
use crate::mission::schedule::{self, States};
use crate::mission::status::{self, BoardStatus, FeatureRow};
use crate::spec::config::Config;
use crate::spec::features::{FeatureId, FeatureList};
use crate::spec::layout::StateDir;
use crate::spec::role::Role;
use crate::state::memory::{self, RawEntry, Tag};
use crate::state::run_state::{Attempt, Outcome};
use crate::state::usage::CostSource;

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
    /// config.yaml's max_iterations, for features that never ran.
    pub default_max_iterations: u32,
    /// The runs of `plan` (mission planning), oldest first.
    pub plans: Vec<PlanRun>,
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
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct PlanRun {
    /// The run id (the directory's name).
    pub run_id: String,
    /// When it started.
    pub started_at: Timestamp,
    /// When it ended.
    #[serde(default)]
    pub ended_at: Option<Timestamp>,
    /// How it ended.
    pub outcome: Outcome,
    /// Tokens, when reported.
    #[serde(default)]
    pub tokens: Option<u64>,
    /// Cost in USD, when known.
    #[serde(default)]
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
    let raw = match std::fs::read(state_dir.raw()) {
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
    Ok(Inputs {
        project,
        features,
        states,
        running,
        default_max_iterations: config.max_iterations,
        plans: load_plans(state_dir),
        mission: read(state_dir.mission())?,
        summary: read(state_dir.summary())?,
        raw_tail: raw_tail(&raw, RAW_TAIL),
        curator: load_curator(state_dir)
            .map_err(|error| InputError::new(format!("cannot read the curated memory: {error}")))?,
        link_base: link_base(report_dir, state_dir.root()),
        now,
    })
}

/// Generates the report of `state_dir` and writes it atomically to `output`.
pub fn write_report(state_dir: &StateDir, output: &Path, now: Timestamp) -> anyhow::Result<()> {
    let output = std::path::absolute(output)
        .with_context(|| format!("bad output path {}", output.display()))?;
    let dir = output.parent().unwrap_or(Path::new("/"));
    let inputs = load(state_dir, dir, now)?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    write_atomic(&output, render(&inputs).as_bytes())
        .with_context(|| format!("cannot write {}", output.display()))
}

/// The curator's recent work: the one hook to point at the curator's own log once it keeps
/// one. Today, the newest lines of each section of MEMORY.md (L3); `None` while there is no
/// MEMORY.md (no curator pass yet).
pub fn load_curator(state_dir: &StateDir) -> io::Result<Option<CuratorView>> {
    let path = state_dir.memory();
    if !path.exists() {
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

/// Every mission planning run that left a readable result.json, oldest first. A run without one
/// (still running, or killed) is left out rather than failing the report.
fn load_plans(state_dir: &StateDir) -> Vec<PlanRun> {
    let Ok(entries) = std::fs::read_dir(state_dir.plans_dir()) else {
        return Vec::new();
    };
    let mut plans: Vec<PlanRun> = entries
        .flatten()
        .filter_map(|entry| std::fs::read(entry.path().join("result.json")).ok())
        .filter_map(|bytes| serde_json::from_slice::<PlanRun>(&bytes).ok())
        .filter(|plan| crate::spec::layout::RunId::parse(&plan.run_id).is_ok())
        .collect();
    plans.sort_by(|a, b| (a.started_at, &a.run_id).cmp(&(b.started_at, &b.run_id)));
    plans
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

/// `text` with everything but unreserved URL characters percent-encoded.
fn percent_encode(text: &str) -> String {
    let mut encoded = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            encoded.push(byte as char);
        } else {
            let _ = write!(encoded, "%{byte:02X}");
        }
    }
    encoded
}

/// `text` safe inside HTML text and quoted attributes: `& < > " '` become entities and control
/// characters (but newlines and tabs) become U+FFFD, so nothing from a file or an agent can
/// open a tag.
pub fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len() + text.len() / 8);
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&#39;"),
            '\n' | '\t' => escaped.push(c),
            c if c.is_control() => escaped.push('\u{fffd}'),
            c => escaped.push(c),
        }
    }
    escaped
}

/// [`escape`] for an attribute, newlines written `&#10;` so that an attribute stays on one line.
fn attribute(text: &str) -> String {
    escape(text).replace('\n', "&#10;")
}

/// A small, safe markdown: `#` headings (shifted down by `heading_offset` levels), `-`/`*`/`+`
/// and numbered lists, fenced code blocks, `---` rules and paragraphs, with inline `code` and
/// **bold**. HTML comments are dropped; everything else is escaped, never passed through.
pub fn markdown(text: &str, heading_offset: usize) -> String {
    let text = memory::strip_comments(text);
    let mut html = String::new();
    let mut paragraph: Vec<&str> = Vec::new();
    // The open list: ordered or not, and its items (each a line, maybe with continuations).
    let mut list: Option<(bool, Vec<(bool, String)>)> = None;
    let mut code: Option<Vec<&str>> = None;

    fn flush_paragraph(html: &mut String, paragraph: &mut Vec<&str>) {
        if !paragraph.is_empty() {
            let _ = writeln!(html, "<p>{}</p>", inline(&paragraph.join(" ")));
            paragraph.clear();
        }
    }
    fn flush_list(html: &mut String, list: &mut Option<(bool, Vec<(bool, String)>)>) {
        if let Some((ordered, items)) = list.take() {
            let tag = if ordered { "ol" } else { "ul" };
            let _ = writeln!(html, "<{tag}>");
            for (nested, item) in items {
                let class = if nested { " class=\"sub\"" } else { "" };
                let _ = writeln!(html, "<li{class}>{}</li>", inline(&item));
            }
            let _ = writeln!(html, "</{tag}>");
        }
    }

    for line in text.lines() {
        if let Some(lines) = &mut code {
            if line.trim_start().starts_with("```") {
                let _ = writeln!(
                    html,
                    "<pre><code>{}</code></pre>",
                    escape(&lines.join("\n"))
                );
                code = None;
            } else {
                lines.push(line);
            }
            continue;
        }
        let trimmed = line.trim();
        let indent = line.len() - line.trim_start().len();
        if trimmed.starts_with("```") {
            flush_paragraph(&mut html, &mut paragraph);
            flush_list(&mut html, &mut list);
            code = Some(Vec::new());
        } else if trimmed.is_empty() {
            flush_paragraph(&mut html, &mut paragraph);
            flush_list(&mut html, &mut list);
        } else if let Some((level, title)) = heading(trimmed) {
            flush_paragraph(&mut html, &mut paragraph);
            flush_list(&mut html, &mut list);
            let level = (level + heading_offset).min(6);
            let _ = writeln!(html, "<h{level}>{}</h{level}>", inline(title));
        } else if trimmed.len() >= 3
            && ['-', '*', '_']
                .iter()
                .any(|rule| trimmed.chars().all(|c| c == *rule))
        {
            flush_paragraph(&mut html, &mut paragraph);
            flush_list(&mut html, &mut list);
            html.push_str("<hr>\n");
        } else if let Some((ordered, item)) = list_item(trimmed) {
            flush_paragraph(&mut html, &mut paragraph);
            if list.as_ref().is_some_and(|(o, _)| *o != ordered) {
                flush_list(&mut html, &mut list);
            }
            let (_, items) = list.get_or_insert_with(|| (ordered, Vec::new()));
            items.push((indent >= 2 && !items.is_empty(), item.to_string()));
        } else if let (Some((_, items)), true) = (&mut list, indent >= 2) {
            // An indented line under an item continues it.
            if let Some((_, item)) = items.last_mut() {
                item.push(' ');
                item.push_str(trimmed);
            }
        } else {
            flush_list(&mut html, &mut list);
            paragraph.push(trimmed);
        }
    }
    if let Some(lines) = code {
        let _ = writeln!(
            html,
            "<pre><code>{}</code></pre>",
            escape(&lines.join("\n"))
        );
    }
    flush_paragraph(&mut html, &mut paragraph);
    flush_list(&mut html, &mut list);
    html
}

/// `## Title` → (2, "Title").
fn heading(line: &str) -> Option<(usize, &str)> {
    let level = line.chars().take_while(|c| *c == '#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    let rest = &line[level..];
    if rest.is_empty() {
        return Some((level, ""));
    }
    rest.strip_prefix(' ')
        .map(|title| (level, title.trim().trim_end_matches('#').trim_end()))
}

/// `- item`, `* item`, `+ item` → (false, "item"); `1. item`, `1) item` → (true, "item").
fn list_item(line: &str) -> Option<(bool, &str)> {
    for bullet in ["- ", "* ", "+ "] {
        if let Some(item) = line.strip_prefix(bullet) {
            return Some((false, item.trim()));
        }
    }
    let digits = line.chars().take_while(char::is_ascii_digit).count();
    if (1..=9).contains(&digits) {
        let rest = &line[digits..];
        if let Some(item) = rest.strip_prefix(". ").or_else(|| rest.strip_prefix(") ")) {
            return Some((true, item.trim()));
        }
    }
    None
}

/// Inline markdown: `code` spans, then **bold** outside them; everything escaped.
fn inline(text: &str) -> String {
    let mut html = String::new();
    let mut rest = text;
    while let Some(start) = rest.find('`') {
        let Some(length) = rest[start + 1..].find('`') else {
            break;
        };
        html.push_str(&bold(&rest[..start]));
        let _ = write!(
            html,
            "<code>{}</code>",
            escape(&rest[start + 1..start + 1 + length])
        );
        rest = &rest[start + 1 + length + 1..];
    }
    html.push_str(&bold(rest));
    html
}

/// `**bold**` pairs as `<strong>`; an unpaired `**` stays as it is.
fn bold(text: &str) -> String {
    let parts: Vec<&str> = text.split("**").collect();
    let delimiters = parts.len() - 1;
    let paired = delimiters - delimiters % 2;
    let mut html = String::new();
    for (index, part) in parts.iter().enumerate() {
        if index > 0 {
            html.push_str(match index {
                i if i > paired => "**",
                i if i % 2 == 1 => "<strong>",
                _ => "</strong>",
            });
        }
        html.push_str(&escape(part));
    }
    html
}

/// An attempt's outcome as the report shows it: its name in state.json, the letter on its mark
/// (so that colour never carries the meaning alone) and its CSS class.
fn outcome_key(outcome: Outcome) -> (&'static str, &'static str) {
    match outcome {
        Outcome::Started => ("started", "S"),
        Outcome::Completed => ("completed", "C"),
        Outcome::NoPromise => ("no_promise", "N"),
        Outcome::AgentError => ("agent_error", "E"),
        Outcome::Crashed => ("crashed", "X"),
        Outcome::TimedOut => ("timed_out", "T"),
        Outcome::Interrupted => ("interrupted", "I"),
        Outcome::Handoff => ("handoff", "H"),
        Outcome::OverBudget => ("over_budget", "B"),
        Outcome::RateLimited => ("rate_limited", "L"),
        Outcome::Verified => ("verified", "V"),
        Outcome::Rejected => ("rejected", "R"),
    }
}

/// Every outcome, in the order the legend lists them.
const OUTCOMES: [Outcome; 12] = [
    Outcome::Completed,
    Outcome::Verified,
    Outcome::NoPromise,
    Outcome::Handoff,
    Outcome::Rejected,
    Outcome::AgentError,
    Outcome::Crashed,
    Outcome::TimedOut,
    Outcome::OverBudget,
    Outcome::RateLimited,
    Outcome::Interrupted,
    Outcome::Started,
];

/// A feature's status: the glyph shown beside its word.
fn status_glyph(status: BoardStatus) -> &'static str {
    match status {
        BoardStatus::Pending => "○",
        BoardStatus::Running => "▶",
        BoardStatus::Interrupted => "❚❚",
        BoardStatus::Provisional => "◐",
        BoardStatus::Done => "✓",
        BoardStatus::Failed => "✗",
        BoardStatus::Blocked => "⊘",
        BoardStatus::Superseded => "↳",
    }
}

/// Every board status, in the order of the progress bar.
const STATUSES: [BoardStatus; 8] = [
    BoardStatus::Done,
    BoardStatus::Provisional,
    BoardStatus::Running,
    BoardStatus::Interrupted,
    BoardStatus::Pending,
    BoardStatus::Failed,
    BoardStatus::Blocked,
    BoardStatus::Superseded,
];

/// One mark of a timeline: an attempt on a feature, or a planning run.
struct Mark<'a> {
    run_id: &'a str,
    role: Role,
    /// The worker iteration, with its guardrail; `None` for mission planning.
    iteration: Option<(u32, u32)>,
    started_at: Timestamp,
    seconds: Option<u64>,
    outcome: Outcome,
    tokens: Option<u64>,
    cost_usd: Option<f64>,
    cost_source: Option<CostSource>,
    turns: Option<u64>,
    exit_code: Option<i32>,
    /// The run directory, as a link prefix ending in `/`.
    dir: String,
}

impl<'a> Mark<'a> {
    fn of_attempt(
        attempt: &'a Attempt,
        feature: &FeatureId,
        max_iterations: u32,
        running: bool,
        inputs: &Inputs,
    ) -> Self {
        Mark {
            run_id: &attempt.run_id,
            role: attempt.role,
            iteration: Some((attempt.iteration, max_iterations)),
            started_at: attempt.started_at,
            seconds: duration(attempt.started_at, attempt.ended_at, running, inputs.now),
            outcome: attempt.outcome,
            tokens: attempt.tokens,
            cost_usd: attempt.cost_usd,
            cost_source: attempt.usage.as_ref().map(|usage| usage.cost_source),
            turns: attempt.turns,
            exit_code: attempt.exit_code,
            // A valid run id needs no encoding; a hand-edited one stays one path segment.
            dir: format!(
                "{}runs/{feature}/{}/",
                inputs.link_base,
                percent_encode(&attempt.run_id)
            ),
        }
    }

    fn of_plan(plan: &'a PlanRun, inputs: &Inputs) -> Self {
        Mark {
            run_id: &plan.run_id,
            role: Role::Planner,
            iteration: None,
            started_at: plan.started_at,
            seconds: duration(plan.started_at, plan.ended_at, false, inputs.now),
            outcome: plan.outcome,
            tokens: plan.tokens,
            cost_usd: plan.cost_usd,
            cost_source: None,
            turns: None,
            exit_code: None,
            dir: format!("{}plans/{}/", inputs.link_base, plan.run_id),
        }
    }

    /// `iteration 2` for a worker, `after iteration 2` for the roles that follow one.
    fn iteration_text(&self) -> Option<String> {
        let (iteration, _) = self.iteration?;
        Some(match self.role {
            Role::Worker => format!("iteration {iteration}"),
            _ => format!("after iteration {iteration}"),
        })
    }

    /// One line of what the mark is, for screen readers and the attempt list.
    fn label(&self) -> String {
        let (name, _) = outcome_key(self.outcome);
        match self.iteration_text() {
            Some(iteration) => format!("{} · {iteration} · {name}", self.role),
            None => format!("{} · {name}", self.role),
        }
    }

    /// The tooltip: what ran, how it ended, how long, what it used.
    fn tooltip(&self) -> String {
        let (name, _) = outcome_key(self.outcome);
        let mut lines = vec![
            match (self.iteration_text(), self.iteration) {
                (Some(iteration), Some((_, max))) => {
                    format!("{} · {iteration} of {max}", self.role)
                }
                _ => format!("{} · mission planning", self.role),
            },
            format!("{name}: {}", self.outcome.describe()),
            format!(
                "started {} · {}",
                clock(self.started_at),
                seconds_text(self.seconds)
            ),
            format!(
                "tokens {} · cost {}",
                self.tokens.map_or("unknown".to_string(), group),
                cost_text(self.cost_usd, self.cost_source)
            ),
        ];
        let mut extra = Vec::new();
        if let Some(turns) = self.turns {
            extra.push(format!("turns {turns}"));
        }
        if let Some(code) = self.exit_code {
            extra.push(format!("exit {code}"));
        }
        if !extra.is_empty() {
            lines.push(extra.join(" · "));
        }
        lines.push(format!("run {}", self.run_id));
        lines.join("\n")
    }
}

/// Seconds from `start` to `end`; an attempt still running counts up to `now`; one without an
/// end that is not running has no known duration.
fn duration(
    start: Timestamp,
    end: Option<Timestamp>,
    running: bool,
    now: Timestamp,
) -> Option<u64> {
    let end = match end {
        Some(end) => end,
        None if running => now,
        None => return None,
    };
    Some(u64::try_from((end - start).num_seconds()).unwrap_or(0))
}

/// `1,234,567`.
fn group(number: u64) -> String {
    let digits = number.to_string();
    let mut grouped = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    grouped
}

/// `9,876`, `392.4k`, `1.74M`: short enough for a card; the exact number goes in a tooltip.
fn compact(number: u64) -> String {
    match number {
        n if n < 10_000 => group(n),
        n if n < 1_000_000 => format!("{:.1}k", n as f64 / 1e3).replace(".0k", "k"),
        n => format!("{:.2}M", n as f64 / 1e6),
    }
}

/// `$0.25`, `<$0.01`, or `unknown`.
fn money(cost: Option<f64>) -> String {
    match cost {
        None => "unknown".to_string(),
        Some(cost) if cost > 0.0 && cost < 0.005 => "<$0.01".to_string(),
        Some(cost) => format!("${cost:.2}"),
    }
}

/// A cost and where it comes from: `$0.25 (estimated)`.
fn cost_text(cost: Option<f64>, source: Option<CostSource>) -> String {
    match (cost, source) {
        (Some(_), Some(CostSource::Estimated)) => format!("{} (estimated)", money(cost)),
        (Some(_), Some(CostSource::Reported)) => format!("{} (reported)", money(cost)),
        _ => money(cost),
    }
}

/// `12m 05s`, `under 1s`, or `unknown`.
fn seconds_text(seconds: Option<u64>) -> String {
    match seconds {
        None => "duration unknown".to_string(),
        Some(0) => "under 1s".to_string(),
        Some(seconds) => status::human_duration(seconds),
    }
}

/// `2026-04-24 10:05:12 UTC`.
fn clock(time: Timestamp) -> String {
    time.format("%Y-%m-%d %H:%M:%S UTC").to_string()
}

/// `10:05:12` on the day of `now`, else `2026-04-23 10:05`.
fn short_clock(time: Timestamp, now: Timestamp) -> String {
    if time.date_naive() == now.date_naive() {
        time.format("%H:%M:%S").to_string()
    } else {
        time.format("%Y-%m-%d %H:%M").to_string()
    }
}

/// The text without a first `# Title` line (the report gives each file its own heading).
fn without_title(text: &str) -> &str {
    let trimmed = text.trim_start();
    match trimmed.split_once('\n') {
        Some((first, rest)) if first.starts_with("# ") => rest,
        None if trimmed.starts_with("# ") => "",
        _ => text,
    }
}

/// A percentage with one decimal, as CSS wants it.
fn percent(part: f64, whole: f64) -> String {
    if whole <= 0.0 {
        return "0%".to_string();
    }
    format!("{:.1}%", (part / whole * 100.0).clamp(0.0, 100.0))
}

/// The whole page.
pub fn render(inputs: &Inputs) -> String {
    let board = status::board(
        &inputs.features,
        &inputs.states,
        |id| inputs.running.contains(id),
        inputs.default_max_iterations,
        inputs.now,
    );
    let mut html = String::with_capacity(32 * 1024);
    let title = if inputs.project.is_empty() {
        "Mission report".to_string()
    } else {
        format!("Mission report — {}", inputs.project)
    };
    let _ = writeln!(
        html,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"color-scheme\" content=\"light dark\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n\
         <title>{}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>",
        escape(&title)
    );
    let _ = writeln!(
        html,
        "<header class=\"top\">\n<h1>Mission report</h1>\n<p class=\"sub\">{}generated {}</p>\n</header>\n<main>",
        if inputs.project.is_empty() {
            String::new()
        } else {
            format!("<strong>{}</strong> · ", escape(&inputs.project))
        },
        clock(inputs.now)
    );
    render_mission(&mut html, inputs, &board);
    render_features(&mut html, inputs, &board);
    render_memory(&mut html, inputs);
    html.push_str(
        "</main>\n<footer>Written by <code>planner report</code> (<code>./run.sh report</code>) from \
         <code>.harness/</code>; it changes nothing there. Hover a mark for its tokens and cost; \
         follow it to its output.log.</footer>\n</body>\n</html>\n",
    );
    html
}

/// The mission: features done, time, iterations, tokens, cost, the progress bar.
fn render_mission(html: &mut String, inputs: &Inputs, board: &status::Board) {
    let totals = &board.totals;
    let count = |status: BoardStatus| totals.by_status.get(&status).copied().unwrap_or(0);
    // A superseded feature is done through its pieces, which are features of their own.
    let counted = totals.features - count(BoardStatus::Superseded);
    let attempts: Vec<&Attempt> = inputs
        .states
        .values()
        .flat_map(|state| &state.attempts)
        .collect();
    let first = attempts.iter().map(|a| a.started_at).min();
    let last = attempts
        .iter()
        .map(|a| a.ended_at.unwrap_or(a.started_at))
        .max();
    let validations = attempts
        .iter()
        .filter(|a| a.role == Role::Validator)
        .count();
    let priced = attempts.iter().filter(|a| a.cost_usd.is_some()).count();
    let counted_tokens = attempts.iter().filter(|a| a.tokens.is_some()).count();

    html.push_str("<section class=\"mission\" aria-labelledby=\"mission-h\">\n<h2 id=\"mission-h\">The mission</h2>\n<div class=\"cards\">\n");
    let _ = writeln!(
        html,
        "<div class=\"card progress\"><div class=\"k\">Features done</div><div class=\"v\">{} <span class=\"of\">/ {}</span></div>",
        totals.done, counted
    );
    let _ = write!(
        html,
        "<div class=\"bar\" role=\"img\" aria-label=\"{} of {} features done\">",
        totals.done, counted
    );
    for status in STATUSES {
        let n = count(status);
        if n > 0 && status != BoardStatus::Superseded {
            let _ = write!(
                html,
                "<span class=\"seg s-{0}\" style=\"width:{1}\" title=\"{2} {0}\"></span>",
                status.as_str(),
                percent(n as f64, counted as f64),
                n
            );
        }
    }
    html.push_str("</div>\n<ul class=\"counts\">");
    for status in STATUSES {
        let n = count(status);
        if n > 0 {
            let _ = write!(
                html,
                "<li><span class=\"dot s-{0}\" aria-hidden=\"true\">{1}</span>{2} {0}</li>",
                status.as_str(),
                status_glyph(status),
                n
            );
        }
    }
    html.push_str("</ul></div>\n");
    let span = match (first, last) {
        (Some(first), Some(last)) => format!(
            "{} of wall clock from {}",
            seconds_text(Some(
                u64::try_from((last - first).num_seconds()).unwrap_or(0)
            )),
            first.format("%Y-%m-%d %H:%M UTC")
        ),
        _ => "no attempt yet".to_string(),
    };
    let _ = writeln!(
        html,
        "<div class=\"card\"><div class=\"k\">Agent time</div><div class=\"v\">{}</div><div class=\"n\">{}</div></div>",
        escape(&seconds_text(Some(totals.time_spent_secs)).replace("under 1s", "0s")),
        escape(&span)
    );
    let _ = writeln!(
        html,
        "<div class=\"card\"><div class=\"k\">Iterations</div><div class=\"v\">{}</div><div class=\"n\">worker iterations; {} validator run{}, {} attempt{} in all</div></div>",
        totals.iterations,
        validations,
        if validations == 1 { "" } else { "s" },
        attempts.len(),
        if attempts.len() == 1 { "" } else { "s" }
    );
    let _ = writeln!(
        html,
        "<div class=\"card\"><div class=\"k\">Tokens</div><div class=\"v\"{}>{}</div><div class=\"n\">{}</div></div>",
        totals
            .tokens
            .map_or(String::new(), |tokens| format!(" title=\"{}\"", group(tokens))),
        totals.tokens.map_or("unknown".to_string(), compact),
        known_of(counted_tokens, attempts.len(), "reported their tokens")
    );
    let _ = writeln!(
        html,
        "<div class=\"card\"><div class=\"k\">Cost</div><div class=\"v\">{}</div><div class=\"n\">{}</div></div>",
        money(totals.cost_usd),
        known_of(priced, attempts.len(), "have a known cost")
    );
    html.push_str("</div>\n");
    if let Some(mission) = &inputs.mission {
        let rendered = markdown(without_title(mission), 2);
        if !rendered.trim().is_empty() {
            let _ = writeln!(
                html,
                "<details class=\"brief\"><summary>mission.md</summary>\n<div class=\"md\">\n{rendered}</div>\n</details>"
            );
        }
    }
    html.push_str("</section>\n");
}

/// `3 of 7 attempts have a known cost`.
fn known_of(known: usize, all: usize, what: &str) -> String {
    match (known, all) {
        (_, 0) => "no attempt yet".to_string(),
        (known, all) if known == all => format!("all {all} attempts {what}"),
        (known, all) => format!("{known} of {all} attempts {what}"),
    }
}

/// One row per feature (and one for mission planning), with the legend.
fn render_features(html: &mut String, inputs: &Inputs, board: &status::Board) {
    html.push_str("<section class=\"features\" aria-labelledby=\"features-h\">\n<h2 id=\"features-h\">Features</h2>\n");
    render_legend(html, inputs);
    if board.features.is_empty() {
        html.push_str("<p class=\"empty\">No features yet: write <code>.harness/features.yaml</code>, or run <code>./run.sh plan</code>.</p>\n");
    }
    // Timelines share one scale: the longest feature fills its row.
    let longest =
        board
            .features
            .iter()
            .map(|row| row.time_spent_secs)
            .chain(inputs.plans.iter().map(|plan| {
                duration(plan.started_at, plan.ended_at, false, inputs.now).unwrap_or(0)
            }))
            .max()
            .unwrap_or(0);
    if !inputs.plans.is_empty() {
        let marks: Vec<Mark> = inputs
            .plans
            .iter()
            .map(|plan| Mark::of_plan(plan, inputs))
            .collect();
        let seconds: u64 = marks.iter().filter_map(|m| m.seconds).sum();
        let tokens = sum_known(marks.iter().map(|m| m.tokens));
        let cost = sum_known(marks.iter().map(|m| m.cost_usd));
        html.push_str("<article class=\"feature planning\" id=\"mission-planning\">\n<div class=\"fhead\"><span class=\"fid\">plan</span><span class=\"ftitle\">Mission planning (<code>./run.sh plan</code>)</span></div>\n");
        render_meta(html, None, Some(seconds), tokens, cost);
        render_track(html, &marks, seconds, longest);
        render_attempt_list(html, &marks);
        html.push_str("</article>\n");
    }
    for row in &board.features {
        render_feature(html, inputs, row, longest);
    }
    html.push_str("</section>\n");
}

/// The sum of the known values, `None` when none is.
fn sum_known<T: std::iter::Sum<T> + Copy>(values: impl Iterator<Item = Option<T>>) -> Option<T> {
    let known: Vec<T> = values.flatten().collect();
    (!known.is_empty()).then(|| known.into_iter().sum())
}

/// What the marks mean: the outcomes present, and the roles' shapes.
fn render_legend(html: &mut String, inputs: &Inputs) {
    let present: BTreeSet<&str> = inputs
        .states
        .values()
        .flat_map(|state| &state.attempts)
        .map(|attempt| outcome_key(attempt.outcome).0)
        .chain(inputs.plans.iter().map(|plan| outcome_key(plan.outcome).0))
        .collect();
    if present.is_empty() {
        return;
    }
    html.push_str(
        "<div class=\"legend\" aria-label=\"legend\"><div><span class=\"lk\">Outcomes</span><ul>",
    );
    for outcome in OUTCOMES {
        let (name, letter) = outcome_key(outcome);
        if present.contains(name) {
            let _ = write!(
                html,
                "<li><span class=\"mark sample o-{name}\" aria-hidden=\"true\">{letter}</span>{}</li>",
                name.replace('_', " ")
            );
        }
    }
    html.push_str("</ul></div><div><span class=\"lk\">Roles</span><ul>");
    let planned = !inputs.plans.is_empty()
        || inputs
            .states
            .values()
            .flat_map(|state| &state.attempts)
            .any(|attempt| attempt.role == Role::Planner);
    for (role, shape) in [
        (Role::Worker, "square"),
        (Role::Validator, "round"),
        (Role::Planner, "dashed"),
    ] {
        if role == Role::Planner && !planned {
            continue;
        }
        let _ = write!(
            html,
            "<li><span class=\"mark sample r-{role} o-none\" aria-hidden=\"true\"></span>{role} ({shape})</li>"
        );
    }
    html.push_str("</ul></div><p class=\"scale\">Each mark is one agent run, as wide as it took (one scale for every row, a minimum width for short runs); hover it for its tokens and cost, follow it to its output.</p></div>\n");
}

/// One feature: its head (id, title, status, numbers), its timeline, why it stopped, and its
/// attempts.
fn render_feature(html: &mut String, inputs: &Inputs, row: &FeatureRow, longest: u64) {
    let status = row.status.as_str();
    let _ = writeln!(
        html,
        "<article class=\"feature\" id=\"feature-{}\">\n<div class=\"fhead\"><span class=\"fid\">{}</span><span class=\"ftitle\">{}</span><span class=\"badge s-{status}\">{} {status}</span></div>",
        attribute(&row.id),
        escape(&row.id),
        escape(&row.title),
        status_glyph(row.status)
    );
    let id = FeatureId::parse(&row.id).ok();
    let ran = row.last.is_some();
    render_meta(
        html,
        Some((row.iteration, row.max_iterations)),
        ran.then_some(row.time_spent_secs),
        row.tokens,
        row.cost_usd,
    );
    let state = id.as_ref().and_then(|id| inputs.states.get(id));
    let running = id.as_ref().is_some_and(|id| inputs.running.contains(id));
    let marks: Vec<Mark> = match (state, &id) {
        (Some(state), Some(id)) => state
            .attempts
            .iter()
            .map(|attempt| Mark::of_attempt(attempt, id, state.max_iterations, running, inputs))
            .collect(),
        _ => Vec::new(),
    };
    if marks.is_empty() {
        html.push_str("<p class=\"none\">not run yet</p>\n");
    } else {
        render_track(html, &marks, row.time_spent_secs, longest);
    }
    if !row.superseded_by.is_empty() {
        let _ = writeln!(
            html,
            "<p class=\"reason\"><span class=\"rk\">Superseded by</span> {}</p>",
            row.superseded_by
                .iter()
                .map(|next| format!(
                    "<a href=\"#feature-{}\">{}</a>",
                    attribute(next),
                    escape(next)
                ))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if let Some(reason) = &row.reason {
        let what = match row.status {
            BoardStatus::Blocked => "Blocked",
            _ => "Stopped",
        };
        let _ = writeln!(
            html,
            "<p class=\"reason\"><span class=\"rk\">{what}</span> {}</p>",
            escape(reason)
        );
    }
    render_attempt_list(html, &marks);
    html.push_str("</article>\n");
}

/// `iteration 2/10 · 5m 03s · 12,345 tokens · $0.12`.
fn render_meta(
    html: &mut String,
    iteration: Option<(u32, u32)>,
    seconds: Option<u64>,
    tokens: Option<u64>,
    cost: Option<f64>,
) {
    html.push_str("<div class=\"fmeta\">");
    if let Some((iteration, max)) = iteration {
        let _ = write!(html, "<span>iteration {iteration}/{max}</span>");
    }
    if let Some(seconds) = seconds {
        let _ = write!(
            html,
            "<span>{}</span><span{}>{} tokens</span><span>cost {}</span>",
            seconds_text(Some(seconds)).replace("under 1s", "0s"),
            tokens.map_or(String::new(), |tokens| format!(
                " title=\"{}\"",
                group(tokens)
            )),
            tokens.map_or("unknown".to_string(), compact),
            money(cost)
        );
    }
    html.push_str("</div>\n");
}

/// The timeline: one mark per run, as wide as it took.
fn render_track(html: &mut String, marks: &[Mark], seconds: u64, longest: u64) {
    let _ = write!(
        html,
        "<div class=\"track\" style=\"width:{}\">",
        percent(seconds.max(1) as f64, longest.max(1) as f64)
    );
    for mark in marks {
        let (name, letter) = outcome_key(mark.outcome);
        let _ = write!(
            html,
            "<a class=\"mark r-{} o-{name}\" style=\"flex-grow:{}\" href=\"{}output.log\" title=\"{}\" aria-label=\"{}\">{letter}</a>",
            mark.role,
            mark.seconds.unwrap_or(0).max(1),
            attribute(&mark.dir),
            attribute(&mark.tooltip()),
            attribute(&mark.label()),
        );
    }
    html.push_str("</div>\n");
}

/// Every run of the row, folded: when, how long, what it used, and its prompt and output.
fn render_attempt_list(html: &mut String, marks: &[Mark]) {
    if marks.is_empty() {
        return;
    }
    let _ = writeln!(
        html,
        "<details class=\"attempts\"><summary>{} run{}</summary>\n<ol>",
        marks.len(),
        if marks.len() == 1 { "" } else { "s" }
    );
    for mark in marks {
        let (name, letter) = outcome_key(mark.outcome);
        let _ = writeln!(
            html,
            "<li id=\"run-{0}\"><span class=\"mark sample r-{1} o-{name}\" aria-hidden=\"true\">{letter}</span><span class=\"what\">{2}</span> <span class=\"when\">{3} · {4} · {5} tokens · {6}</span> <span class=\"links\"><a href=\"{7}prompt.md\">prompt</a> <a href=\"{7}output.log\">output</a></span> <code class=\"rid\">{8}</code></li>",
            attribute(mark.run_id),
            mark.role,
            escape(&mark.label()),
            escape(&clock(mark.started_at)),
            escape(&seconds_text(mark.seconds)),
            mark.tokens.map_or("unknown".to_string(), group),
            escape(&cost_text(mark.cost_usd, mark.cost_source).replace("unknown", "cost unknown")),
            attribute(&mark.dir),
            escape(mark.run_id),
        );
    }
    html.push_str("</ol>\n</details>\n");
}

/// The memory: summary.md and the curator's recent work side by side, then the newest raw.md
/// entries.
fn render_memory(html: &mut String, inputs: &Inputs) {
    html.push_str("<section class=\"memory\" aria-labelledby=\"memory-h\">\n<h2 id=\"memory-h\">Memory</h2>\n<div class=\"cols\">\n");
    html.push_str("<div class=\"panel\">\n<h3>Summary <span class=\"file\">summary.md · L2, in every prompt</span></h3>\n");
    match inputs
        .summary
        .as_deref()
        .map(|summary| markdown(without_title(summary), 2))
        .filter(|rendered| !rendered.trim().is_empty())
    {
        Some(rendered) => {
            let _ = writeln!(html, "<div class=\"md\">\n{rendered}</div>");
        }
        None => html.push_str("<p class=\"empty\">summary.md is empty: no curator pass yet, and nothing written by hand.</p>\n"),
    }
    html.push_str("</div>\n<div class=\"panel\">\n");
    render_curator(html, inputs.curator.as_ref());
    html.push_str("</div>\n</div>\n<div class=\"panel\">\n");
    render_raw(html, &inputs.raw_tail, inputs.now);
    html.push_str("</div>\n</section>\n");
}

/// What the curator did recently (see [`load_curator`]).
fn render_curator(html: &mut String, curator: Option<&CuratorView>) {
    match curator {
        Some(view) if view.sections.is_empty() => {
            let _ = writeln!(
                html,
                "<h3>Curated recently <span class=\"file\">{0} · L3</span></h3>\n<p class=\"empty\">{0} holds nothing yet: the curator moves there what outgrows summary.md.</p>",
                escape(&view.source)
            );
        }
        Some(view) => {
            let _ = writeln!(
                html,
                "<h3>Curated recently <span class=\"file\">{} · L3, the top of each section</span></h3>",
                escape(&view.source)
            );
            for section in &view.sections {
                let _ = writeln!(
                    html,
                    "<h4>{}</h4>\n<div class=\"md\">",
                    escape(&section.heading)
                );
                html.push_str(&markdown(&section.lines.join("\n"), 3));
                if section.more > 0 {
                    let _ = writeln!(
                        html,
                        "<p class=\"more\">and {} more in {}</p>",
                        section.more,
                        escape(&view.source)
                    );
                }
                html.push_str("</div>\n");
            }
        }
        None => html.push_str(
            "<h3>Curated recently <span class=\"file\">MEMORY.md · L3</span></h3>\n<p class=\"empty\">No curator pass yet: there is no MEMORY.md. Run <code>./run.sh curate</code>.</p>\n",
        ),
    }
}

/// The newest raw.md lines, newest first: time, tag, who, text. A line that is not an entry
/// (a hand edit) is shown as it is.
fn render_raw(html: &mut String, raw_tail: &[String], now: Timestamp) {
    html.push_str(
        "<h3>Newest entries <span class=\"file\">raw.md · L1, newest first</span></h3>\n",
    );
    if raw_tail.is_empty() {
        html.push_str("<p class=\"empty\">raw.md has no entries yet.</p>\n");
        return;
    }
    html.push_str("<ul class=\"raw\">\n");
    for line in raw_tail.iter().rev() {
        match RawEntry::parse(line) {
            Ok(entry) => {
                let tag = match entry.tag {
                    Tag::Outcome => "outcome",
                    tag => tag.as_str(),
                };
                let _ = writeln!(
                    html,
                    "<li><time title=\"{}\">{}</time><span class=\"tag t-{}\">{tag}</span><span class=\"who\">{} {}</span><span class=\"text\">{}</span></li>",
                    clock(entry.time),
                    short_clock(entry.time, now),
                    tag.to_ascii_lowercase(),
                    entry.role,
                    escape(entry.feature.as_ref().map_or("-", FeatureId::as_str)),
                    escape(&entry.text)
                );
            }
            Err(_) => {
                let _ = writeln!(
                    html,
                    "<li><time></time><span class=\"tag t-other\">line</span><span class=\"who\"></span><span class=\"text\">{}</span></li>",
                    escape(line)
                );
            }
        }
    }
    html.push_str("</ul>\n");
}

/// The page's style: light and dark, one column on a phone.
const STYLE: &str = r#":root {
  color-scheme: light dark;
  --bg: #f4f5f7; --panel: #ffffff; --text: #1b1f27; --muted: #5b6472; --line: #d9dde3;
  --accent: #2f5bd3; --track: #eceef2;
  --completed: #b7ebc1; --completed-b: #2f9e44; --completed-f: #0b3d17;
  --verified: #2f9e44; --verified-b: #1e6e2f; --verified-f: #ffffff;
  --no_promise: #dfe3e8; --no_promise-b: #7b8590; --no_promise-f: #22272e;
  --handoff: #a5d8ff; --handoff-b: #1c7ed6; --handoff-f: #0b3a66;
  --rejected: #fcc2d7; --rejected-b: #c2255c; --rejected-f: #5c0d2b;
  --agent_error: #ffc9c9; --agent_error-b: #e03131; --agent_error-f: #6b0d0d;
  --crashed: #e03131; --crashed-b: #a51111; --crashed-f: #ffffff;
  --timed_out: #ffd8a8; --timed_out-b: #e8590c; --timed_out-f: #5c2300;
  --over_budget: #e5dbff; --over_budget-b: #7048e8; --over_budget-f: #2b1370;
  --rate_limited: #fff3bf; --rate_limited-b: #f08c00; --rate_limited-f: #5c3c00;
  --interrupted: #f1f3f5; --interrupted-b: #9aa2ab; --interrupted-f: #495057;
  --started: #d0ebff; --started-b: #1c7ed6; --started-f: #0b3a66;
  --none: #ffffff; --none-b: #7b8590; --none-f: #22272e;
}
@media (prefers-color-scheme: dark) {
  :root {
    --bg: #111418; --panel: #1a1e24; --text: #e4e7eb; --muted: #9aa3ae; --line: #2e343d;
    --accent: #7aa2ff; --track: #232830;
    --completed: #1f4d2b; --completed-b: #51cf66; --completed-f: #d3f9d8;
    --verified: #2f9e44; --verified-b: #69db7c; --verified-f: #ffffff;
    --no_promise: #343a42; --no_promise-b: #868e96; --no_promise-f: #e9ecef;
    --handoff: #153e66; --handoff-b: #4dabf7; --handoff-f: #d0ebff;
    --rejected: #5c1630; --rejected-b: #f06595; --rejected-f: #ffdeeb;
    --agent_error: #5c1a1a; --agent_error-b: #ff6b6b; --agent_error-f: #ffe3e3;
    --crashed: #c92a2a; --crashed-b: #ff8787; --crashed-f: #ffffff;
    --timed_out: #5c2c0a; --timed_out-b: #ff922b; --timed_out-f: #ffe8cc;
    --over_budget: #32245e; --over_budget-b: #9775fa; --over_budget-f: #e5dbff;
    --rate_limited: #4d3b00; --rate_limited-b: #fcc419; --rate_limited-f: #fff3bf;
    --interrupted: #2b3036; --interrupted-b: #868e96; --interrupted-f: #ced4da;
    --started: #153e66; --started-b: #4dabf7; --started-f: #d0ebff;
    --none: #1a1e24; --none-b: #adb5bd; --none-f: #e9ecef;
  }
}
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body { margin: 0; background: var(--bg); color: var(--text);
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", "DejaVu Sans", sans-serif; }
header.top, main, footer { max-width: 72rem; margin: 0 auto; padding: 0 1rem; }
header.top { padding-top: 1.25rem; }
h1 { font-size: 1.6rem; margin: 0; }
h2 { font-size: 1.15rem; margin: 1.75rem 0 .75rem; }
h3 { font-size: 1rem; margin: 0 0 .5rem; }
h4 { font-size: .9rem; margin: .75rem 0 .25rem; color: var(--muted); }
.sub, .n, .file, .scale, .none, .empty, footer { color: var(--muted); }
.sub { margin: .25rem 0 0; }
.file { font-weight: normal; font-size: .8rem; margin-left: .35rem; }
a { color: var(--accent); }
code { font: .85em/1.4 ui-monospace, "SFMono-Regular", Menlo, Consolas, "DejaVu Sans Mono", monospace;
  background: var(--track); padding: .05em .3em; border-radius: 4px; overflow-wrap: anywhere; }
pre { background: var(--track); padding: .6rem .75rem; border-radius: 6px; overflow-x: auto; }
pre code { background: none; padding: 0; }
.cards { display: grid; grid-template-columns: minmax(0, 2.2fr) repeat(4, minmax(0, 1fr)); gap: .75rem; }
.card, .feature, .panel, .legend, details.brief { background: var(--panel); border: 1px solid var(--line); border-radius: 10px; }
.card { padding: .75rem 1rem; min-width: 0; }
.k { font-size: .8rem; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); }
.v { font-size: 1.6rem; font-weight: 650; line-height: 1.25; overflow-wrap: anywhere; }
.of { color: var(--muted); font-weight: 500; }
.n { font-size: .8rem; }
.bar { display: flex; height: .9rem; margin: .5rem 0; border-radius: 999px; overflow: hidden; background: var(--track); }
.seg { display: block; height: 100%; border-right: 2px solid var(--panel); }
.seg:last-child { border-right: 0; }
.counts { list-style: none; display: flex; flex-wrap: wrap; gap: .25rem 1rem; margin: 0; padding: 0; font-size: .85rem; }
.dot { display: inline-block; min-width: 1.3em; text-align: center; margin-right: .3rem; border-radius: 4px; font-size: .8em; }
.s-done { --c: var(--verified); --b: var(--verified-b); --f: var(--verified-f); }
.s-provisional { --c: var(--completed); --b: var(--completed-b); --f: var(--completed-f); }
.s-running { --c: var(--handoff); --b: var(--handoff-b); --f: var(--handoff-f); }
.s-interrupted { --c: var(--interrupted); --b: var(--interrupted-b); --f: var(--interrupted-f); }
.s-pending { --c: var(--track); --b: var(--no_promise-b); --f: var(--text); }
.s-failed { --c: var(--crashed); --b: var(--crashed-b); --f: var(--crashed-f); }
.s-blocked { --c: var(--timed_out); --b: var(--timed_out-b); --f: var(--timed_out-f); }
.s-superseded { --c: var(--over_budget); --b: var(--over_budget-b); --f: var(--over_budget-f); }
.seg, .dot, .badge { background: var(--c); color: var(--f); }
.dot, .badge { border: 1px solid var(--b); }
details.brief { margin-top: .75rem; padding: .5rem 1rem; }
summary { cursor: pointer; color: var(--muted); }
.legend { padding: .6rem 1rem; margin-bottom: .75rem; font-size: .85rem; }
.legend > div { display: flex; flex-wrap: wrap; align-items: center; gap: .3rem 0; margin-bottom: .3rem; }
.legend ul { list-style: none; display: flex; flex-wrap: wrap; gap: .3rem .9rem; margin: 0; padding: 0; }
.legend li { display: inline-flex; align-items: center; gap: .35rem; }
.lk { font-weight: 600; width: 5.5rem; flex: none; }
.scale { margin: .35rem 0 0; font-size: .8rem; }
.feature { padding: .7rem 1rem; margin-bottom: .6rem; }
.fhead { display: flex; flex-wrap: wrap; align-items: baseline; gap: .2rem .6rem; }
.fid { font-weight: 700; font-family: ui-monospace, Menlo, Consolas, "DejaVu Sans Mono", monospace; font-size: .9rem; }
.ftitle { flex: 1 1 12rem; min-width: 0; font-weight: 600; overflow-wrap: anywhere; }
.badge { font-size: .8rem; padding: .05rem .55rem; border-radius: 999px; white-space: nowrap; font-weight: 600; }
.fmeta { display: flex; flex-wrap: wrap; gap: 0 1rem; font-size: .8rem; color: var(--muted); margin: .15rem 0 .45rem; }
.track { display: flex; flex-wrap: wrap; gap: 3px; min-width: min(100%, max-content); max-width: 100%; }
.mark { --c: var(--none); --b: var(--none-b); --f: var(--none-f);
  flex: 1 1 0; min-width: 1.9rem; height: 1.9rem; display: inline-flex; align-items: center; justify-content: center;
  background: var(--c); color: var(--f); border: 1px solid var(--b); border-radius: 3px;
  font: 700 .8rem/1 ui-monospace, Menlo, Consolas, "DejaVu Sans Mono", monospace; text-decoration: none; }
a.mark:hover, a.mark:focus-visible { outline: 2px solid var(--accent); outline-offset: 1px; }
.mark.sample { flex: none; min-width: 1.35rem; width: 1.35rem; height: 1.35rem; font-size: .7rem; }
.r-validator { border-radius: 999px; box-shadow: inset 0 0 0 2px var(--b); }
.r-planner, .r-curator { border: 2px dashed var(--b); }
.o-none { --c: var(--none); --b: var(--none-b); --f: var(--none-f); }
.o-completed { --c: var(--completed); --b: var(--completed-b); --f: var(--completed-f); }
.o-verified { --c: var(--verified); --b: var(--verified-b); --f: var(--verified-f); }
.o-no_promise { --c: var(--no_promise); --b: var(--no_promise-b); --f: var(--no_promise-f); }
.o-handoff { --c: var(--handoff); --b: var(--handoff-b); --f: var(--handoff-f); }
.o-rejected { --c: var(--rejected); --b: var(--rejected-b); --f: var(--rejected-f); }
.o-agent_error { --c: var(--agent_error); --b: var(--agent_error-b); --f: var(--agent_error-f); }
.o-crashed { --c: var(--crashed); --b: var(--crashed-b); --f: var(--crashed-f); }
.o-timed_out { --c: var(--timed_out); --b: var(--timed_out-b); --f: var(--timed_out-f); }
.o-over_budget { --c: var(--over_budget); --b: var(--over_budget-b); --f: var(--over_budget-f); }
.o-rate_limited { --c: var(--rate_limited); --b: var(--rate_limited-b); --f: var(--rate_limited-f); }
.o-interrupted { --c: var(--interrupted); --b: var(--interrupted-b); --f: var(--interrupted-f); border-style: dashed; }
.o-started { --c: var(--started); --b: var(--started-b); --f: var(--started-f);
  background-image: repeating-linear-gradient(135deg, transparent 0 5px, rgba(127,127,127,.25) 5px 10px); }
.reason { margin: .45rem 0 0; font-size: .9rem; overflow-wrap: anywhere; }
.rk { font-weight: 700; margin-right: .25rem; }
.none { margin: 0; font-size: .85rem; }
details.attempts { margin-top: .4rem; font-size: .85rem; }
details.attempts ol { list-style: none; margin: .4rem 0 0; padding: 0; }
details.attempts li { display: flex; flex-wrap: wrap; align-items: center; gap: .1rem .5rem; padding: .3rem 0; border-top: 1px solid var(--line); }
.when { color: var(--muted); }
.links a { margin-right: .4rem; }
.rid { font-size: .75rem; }
.cols { display: grid; grid-template-columns: repeat(auto-fit, minmax(20rem, 1fr)); gap: .75rem; }
.panel { padding: .75rem 1rem; min-width: 0; }
.md { overflow-wrap: anywhere; }
.md h3, .md h4, .md h5, .md h6 { font-size: .95rem; margin: .75rem 0 .25rem; color: var(--text); }
.md ul, .md ol { padding-left: 1.2rem; margin: .25rem 0; }
.md li.sub { margin-left: 1.2rem; }
.md p { margin: .4rem 0; }
.md p.more { color: var(--muted); font-size: .85rem; }
ul.raw { list-style: none; margin: 0; padding: 0; font-size: .85rem; }
ul.raw li { display: grid; grid-template-columns: 4.6rem 5.6rem 8.5rem minmax(0, 1fr); align-items: baseline;
  padding: .3rem 0; border-top: 1px solid var(--line); overflow-wrap: anywhere; }
ul.raw li:first-child { border-top: 0; }
ul.raw time { color: var(--muted); font-variant-numeric: tabular-nums; font-size: .8rem; }
.tag { justify-self: start; font: 700 .7rem/1.4 ui-monospace, Menlo, Consolas, "DejaVu Sans Mono", monospace;
  padding: 0 .35rem; border-radius: 4px; margin-right: .4rem; border: 1px solid var(--b); background: var(--c); color: var(--f); }
.t-trick { --c: var(--completed); --b: var(--completed-b); --f: var(--completed-f); }
.t-lesson { --c: var(--handoff); --b: var(--handoff-b); --f: var(--handoff-f); }
.t-decision { --c: var(--over_budget); --b: var(--over_budget-b); --f: var(--over_budget-f); }
.t-avoid { --c: var(--timed_out); --b: var(--timed_out-b); --f: var(--timed_out-f); }
.t-fail { --c: var(--agent_error); --b: var(--agent_error-b); --f: var(--agent_error-f); }
.t-outcome, .t-other { --c: var(--track); --b: var(--line); --f: var(--muted); }
.who { color: var(--muted); font-size: .8rem; }
.memory .cols { margin-bottom: .75rem; }
footer { font-size: .8rem; padding-top: 1rem; padding-bottom: 2rem; }
@media (max-width: 56rem) {
  .cards { grid-template-columns: 1fr 1fr; }
  .card.progress { grid-column: 1 / -1; }
}
@media (max-width: 40rem) {
  body { font-size: 14px; }
  header.top, main, footer { padding: 0 .6rem; }
  .v { font-size: 1.3rem; }
  .cards { gap: .5rem; }
  ul.raw li { grid-template-columns: auto auto minmax(0, 1fr); gap: 0 .5rem; }
  ul.raw .text { grid-column: 1 / -1; }
  .card { padding: .6rem .75rem; }
  .feature, .panel, .legend { padding: .6rem .7rem; }
  .cols { grid-template-columns: 1fr; }
}
"#;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::testing::{at, id};
    use crate::state::run_state::{RunState, Status};
    use crate::state::usage::UsageRecord;

    fn attempt(
        state: &mut RunState,
        role: Role,
        (start, end): (i64, Option<i64>),
        outcome: Outcome,
        usage: Option<(u64, f64)>,
    ) {
        if role == Role::Worker {
            state.iteration_count += 1;
        }
        let run_id = format!("{}-{role}-{}", 1_777_000_000 + start, state.feature_id);
        state.begin_attempt(&run_id, role, at(start));
        let attempt = state.attempts.last_mut().unwrap();
        attempt.ended_at = end.map(at);
        attempt.outcome = outcome;
        if let Some((tokens, cost)) = usage {
            attempt.tokens = Some(tokens);
            attempt.cost_usd = Some(cost);
            attempt.usage = Some(UsageRecord {
                final_answer: None,
                turns: Some(3),
                input_tokens: None,
                output_tokens: None,
                cache_creation_tokens: None,
                cache_read_tokens: None,
                total_tokens: Some(tokens),
                context_tokens: None,
                cost_usd: Some(cost),
                cost_source: CostSource::Reported,
            });
        }
    }

    /// A mission of four features: one done after a rejection, one failed at its guardrail with
    /// an agent's attempt at HTML injection in its title and reason, one running, one pending.
    fn example() -> Inputs {
        let features = FeatureList::parse(
            "features:\n  - id: F-001\n    title: Sign-up form\n  - id: F-002\n    title: \"<img src=x onerror=alert(1)> export\"\n  - id: F-003\n    title: Login\n  - id: F-004\n    title: Admin\n    depends_on: [F-003]\n",
            Path::new("features.yaml"),
        )
        .unwrap();
        let mut states = States::new();
        let mut done = RunState::new(id("F-001"), 5, "P", at(0));
        attempt(
            &mut done,
            Role::Worker,
            (0, Some(300)),
            Outcome::NoPromise,
            Some((1000, 0.1)),
        );
        attempt(
            &mut done,
            Role::Worker,
            (300, Some(700)),
            Outcome::Completed,
            Some((2000, 0.2)),
        );
        attempt(
            &mut done,
            Role::Validator,
            (700, Some(760)),
            Outcome::Rejected,
            Some((500, 0.05)),
        );
        attempt(
            &mut done,
            Role::Worker,
            (760, Some(900)),
            Outcome::Completed,
            Some((800, 0.08)),
        );
        attempt(
            &mut done,
            Role::Validator,
            (900, Some(950)),
            Outcome::Verified,
            None,
        );
        done.status = Status::Done;
        states.insert(id("F-001"), done);

        let mut failed = RunState::new(id("F-002"), 2, "P", at(0));
        attempt(
            &mut failed,
            Role::Worker,
            (1000, Some(1600)),
            Outcome::TimedOut,
            None,
        );
        attempt(
            &mut failed,
            Role::Worker,
            (1600, Some(1700)),
            Outcome::Crashed,
            None,
        );
        failed.fail(
            "stalled: 2 iterations changed nothing <script>alert(2)</script>".into(),
            at(1700),
        );
        states.insert(id("F-002"), failed);

        let mut running = RunState::new(id("F-003"), 5, "P", at(0));
        attempt(
            &mut running,
            Role::Worker,
            (1700, None),
            Outcome::Started,
            None,
        );
        running.status = Status::Running;
        states.insert(id("F-003"), running);

        Inputs {
            project: "sheets <clone>".into(),
            features,
            states,
            running: [id("F-003")].into_iter().collect(),
            default_max_iterations: 10,
            plans: vec![PlanRun {
                run_id: "1776999990-planner-mission".into(),
                started_at: at(-10),
                ended_at: Some(at(-1)),
                outcome: Outcome::Completed,
                tokens: Some(400),
                cost_usd: None,
            }],
            mission: Some("# Mission\n\nA **spreadsheet** clone.\n<!-- template note -->\n".into()),
            summary: Some(
                "# Summary\n<!-- note -->\n## Lessons\n- run `cargo test -q` first <!-- c:ab12:cd34 -->\n- **never** <b>trust</b> the cache\n\n## Avoid\n- editing `<dist/>`\n".into(),
            ),
            raw_tail: vec![
                "[2026-04-24T03:06:40Z] worker F-001 TRICK: keep a PROGRESS.md checklist".into(),
                "a hand-written line <i>with a tag</i>".into(),
                "[2026-04-24T03:20:00Z] worker F-002 LESSON: <script>alert(1)</script>".into(),
                "[2026-04-24T03:21:40Z] validator F-001 -: F-001 verified: all good".into(),
            ],
            curator: None,
            link_base: String::new(),
            now: at(1800),
        }
    }

    #[test]
    fn escape_neutralises_markup_and_control_characters() {
        assert_eq!(
            escape("<script>alert('x') & \"y\"</script>"),
            "&lt;script&gt;alert(&#39;x&#39;) &amp; &quot;y&quot;&lt;/script&gt;"
        );
        assert_eq!(escape("a\u{1b}[31mb\nc"), "a\u{fffd}[31mb\nc");
        assert_eq!(attribute("one\ntwo \"q\""), "one&#10;two &quot;q&quot;");
    }

    #[test]
    fn markdown_renders_the_subset_and_escapes_the_rest() {
        let html = markdown(
            "# Title\n\nSome **bold** and `a <b>` code.\nSame paragraph.\n\n- one\n- two `x`\n  continued\n  - nested\n1. first\n2) second\n\n```\n<raw> & \"code\"\n```\n---\n<div onclick=x>html</div>\n<!-- hidden -->\nan ** unpaired",
            1,
        );
        assert_eq!(
            html,
            "<h2>Title</h2>\n\
             <p>Some <strong>bold</strong> and <code>a &lt;b&gt;</code> code. Same paragraph.</p>\n\
             <ul>\n<li>one</li>\n<li>two <code>x</code> continued</li>\n<li class=\"sub\">nested</li>\n</ul>\n\
             <ol>\n<li>first</li>\n<li>second</li>\n</ol>\n\
             <pre><code>&lt;raw&gt; &amp; &quot;code&quot;</code></pre>\n\
             <hr>\n\
             <p>&lt;div onclick=x&gt;html&lt;/div&gt;</p>\n\
             <p>an ** unpaired</p>\n"
        );
        assert_eq!(markdown("###### deep", 3), "<h6>deep</h6>\n");
        assert_eq!(markdown("#nospace", 0), "<p>#nospace</p>\n");
        assert_eq!(
            markdown("```\nunclosed <x>", 0),
            "<pre><code>unclosed &lt;x&gt;</code></pre>\n"
        );
    }

    #[test]
    fn nothing_from_a_file_or_an_agent_reaches_the_page_unescaped() {
        let html = render(&example());
        for injected in ["<img", "<script", "<b>", "<i>", "<dist/>", "<clone>"] {
            assert!(!html.contains(injected), "{injected} got through");
        }
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(html.contains("&lt;img src=x onerror=alert(1)&gt; export"));
        assert!(html.contains("<strong>never</strong> &lt;b&gt;trust&lt;/b&gt;"));
        assert!(!html.contains("c:ab12"), "the curator's markers are hidden");
    }

    #[test]
    fn the_totals_are_the_status_boards() {
        let inputs = example();
        let html = render(&inputs);
        // F-001: 300 + 400 + 60 + 140 + 50 s; F-002: 600 + 100 s; F-003 running for 100 s.
        assert!(
            html.contains("<div class=\"v\">1 <span class=\"of\">/ 4</span></div>"),
            "done / total"
        );
        assert!(
            html.contains("<div class=\"v\">29m 10s</div>"),
            "agent time"
        );
        assert!(
            html.contains("<div class=\"v\">6</div>"),
            "worker iterations"
        );
        assert!(
            html.contains("<div class=\"v\" title=\"4,300\">4,300</div>"),
            "tokens"
        );
        assert!(html.contains("<div class=\"v\">$0.43</div>"), "cost");
        assert!(html.contains("4 of 8 attempts have a known cost"));
        assert!(html.contains("1 done</li>") && html.contains("1 failed</li>"));
        assert!(html.contains("1 running</li>") && html.contains("1 pending</li>"));
    }

    #[test]
    fn every_attempt_has_a_mark_and_links_to_its_prompt_and_output() {
        let mut inputs = example();
        inputs.link_base = "../.harness/".into();
        let html = render(&inputs);
        for state in inputs.states.values() {
            for attempt in &state.attempts {
                let dir = format!("../.harness/runs/{}/{}/", state.feature_id, attempt.run_id);
                assert!(html.contains(&format!("href=\"{dir}prompt.md\"")), "{dir}");
                assert!(html.contains(&format!("href=\"{dir}output.log\"")), "{dir}");
            }
        }
        assert!(html.contains("href=\"../.harness/plans/1776999990-planner-mission/output.log\""));
        assert_eq!(html.matches("<a class=\"mark ").count(), 9);
        // The longest feature fills its row; the others are to scale.
        assert!(html.contains("<div class=\"track\" style=\"width:100.0%\">"));
        assert!(html.contains("<div class=\"track\" style=\"width:73.7%\">"));
        // The tooltip carries the usage, the mark its letter.
        assert!(html.contains("tokens 2,000 · cost $0.20 (reported)"));
        assert!(html.contains("o-rejected\" style=\"flex-grow:60\""));
        assert!(html.contains(">R</a>"));
        assert!(html.contains("<span class=\"rk\">Stopped</span> stalled: 2 iterations changed nothing &lt;script&gt;"));
        assert!(html.contains("not run yet"));
    }

    #[test]
    fn the_memory_shows_the_summary_the_newest_entries_and_the_curator() {
        let mut inputs = example();
        let html = render(&inputs);
        assert!(
            html.contains("<h4>Lessons</h4>\n<ul>\n<li>run <code>cargo test -q</code> first</li>")
        );
        let newest = html.find("F-001 verified: all good").unwrap();
        let oldest = html.find("keep a PROGRESS.md checklist").unwrap();
        assert!(newest < oldest, "newest first");
        assert!(html.contains("<span class=\"tag t-other\">line</span>"));
        assert!(html.contains("No curator pass yet"));

        inputs.curator = Some(curator_view(
            "MEMORY.md",
            "# Memory\n<!-- x -->\n## Decisions\n\n## History\n- a\n- b\n- c <!-- c:1:2 -->\n",
            2,
        ));
        assert_eq!(
            inputs.curator.as_ref().unwrap().sections,
            vec![CuratedSection {
                heading: "History".to_string(),
                lines: vec!["- a".to_string(), "- b".to_string()],
                more: 1,
            }]
        );
        let html = render(&inputs);
        assert!(html.contains(
            "<h4>History</h4>\n<div class=\"md\">\n<ul>\n<li>a</li>\n<li>b</li>\n</ul>\n<p class=\"more\">and 1 more in MEMORY.md</p>\n</div>"
        ));
        assert!(!html.contains("No curator pass yet"));
        inputs.curator = Some(curator_view("MEMORY.md", "# Memory\n## Decisions\n", 5));
        let html = render(&inputs);
        assert!(html.contains("MEMORY.md holds nothing yet"));
    }

    #[test]
    fn raw_tail_keeps_the_newest_entries_without_the_curators_note() {
        let raw = "<!-- curator: older entries are in archive/ -->\none\n\ntwo\nthree\n";
        assert_eq!(raw_tail(raw, 2), ["two", "three"]);
        assert_eq!(raw_tail(raw, 20), ["one", "two", "three"]);
        assert!(raw_tail("", 20).is_empty());
    }

    #[test]
    fn numbers_read_at_a_glance() {
        assert_eq!(group(1_234_567), "1,234,567");
        assert_eq!(group(999), "999");
        assert_eq!(compact(9_999), "9,999");
        assert_eq!(compact(633_000), "633k");
        assert_eq!(compact(392_400), "392.4k");
        assert_eq!(compact(1_735_100), "1.74M");
        assert_eq!(money(None), "unknown");
        assert_eq!(money(Some(0.001)), "<$0.01");
        assert_eq!(money(Some(0.0)), "$0.00");
        assert_eq!(money(Some(6.7349)), "$6.73");
    }

    #[test]
    fn links_are_relative_to_where_the_report_is() {
        let state = Path::new("/home/me/app/.harness");
        assert_eq!(link_base(state, state), "");
        assert_eq!(link_base(Path::new("/home/me/app"), state), ".harness/");
        assert_eq!(
            link_base(Path::new("/tmp/out"), state),
            "../../home/me/app/.harness/"
        );
        assert_eq!(
            link_base(Path::new("/home/me"), Path::new("/home/me/my app/.harness")),
            "my%20app/.harness/"
        );
    }

    #[test]
    fn an_empty_mission_says_how_to_start() {
        let inputs = Inputs {
            features: FeatureList::default(),
            states: States::new(),
            running: BTreeSet::new(),
            plans: Vec::new(),
            mission: None,
            summary: None,
            raw_tail: Vec::new(),
            ..example()
        };
        let html = render(&inputs);
        assert!(html.contains("No features yet"));
        assert!(html.contains("raw.md has no entries yet."));
        assert!(html.contains("summary.md is empty"));
        assert!(html.contains("no attempt yet"));
    }

    /// The whole page for the example, byte for byte. After an intended change, regenerate it
    /// with `UPDATE_SNAPSHOTS=1 cargo test -p harness-core report` and review the diff.
    #[test]
    fn the_page_snapshot() {
        let html = render(&example());
        assert_eq!(render(&example()), html, "the page is stable");
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/mission/snapshots/report.html");
        if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &html).unwrap();
        }
        let expected = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            expected == html,
            "{} differs from the rendered page: review, then UPDATE_SNAPSHOTS=1",
            path.display()
        );
    }
}
