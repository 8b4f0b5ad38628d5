//! The page: its head and stylesheet, the mission's numbers, and the memory panels; the
//! features section is [`super::timeline`]'s.

use std::fmt::Write as _;

use super::format::{
    clock, compact, escape, known_of, money, percent, seconds_text, short_clock, thousands,
};
use super::markdown::{markdown, without_title};
use super::timeline::render_features;
use super::{CuratorView, Inputs};
use crate::base::time::Timestamp;
use crate::mission::status::{self, BoardStatus};
use crate::spec::features::FeatureId;
use crate::spec::role::Role;
use crate::state::memory::{RawEntry, Tag};
use crate::state::run_state::Attempt;

/// A feature's status: the glyph shown beside its word.
pub(super) fn status_glyph(status: BoardStatus) -> &'static str {
    match status {
        BoardStatus::Pending => "○",
        BoardStatus::Running => "▶",
        BoardStatus::Interrupted => "❚❚",
        BoardStatus::Provisional => "◐",
        BoardStatus::Done => "✓",
        BoardStatus::Unmerged => "⇄",
        BoardStatus::Failed => "✗",
        BoardStatus::Blocked => "⊘",
        BoardStatus::Superseded => "↳",
    }
}

/// Every board status, in the order of the progress bar.
pub(super) const STATUSES: [BoardStatus; 9] = [
    BoardStatus::Done,
    BoardStatus::Unmerged,
    BoardStatus::Provisional,
    BoardStatus::Running,
    BoardStatus::Interrupted,
    BoardStatus::Pending,
    BoardStatus::Failed,
    BoardStatus::Blocked,
    BoardStatus::Superseded,
];

/// The whole page: a pure function of `inputs`, byte for byte the same for the same inputs.
pub fn render(inputs: &Inputs) -> String {
    let board = status::board(
        &inputs.features,
        &inputs.states,
        |id| inputs.running.contains(id),
        inputs.default_max_iterations,
        inputs.now,
    )
    .with_jobs(&inputs.jobs)
    .with_mission_runs(&inputs.mission_runs);
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
    let attempts: Vec<&Attempt> = inputs
        .states
        .values()
        .flat_map(|state| state.attempts())
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
    // The runs on the whole mission count as attempts do in the totals.
    let runs = &inputs.mission_runs;
    let priced = attempts.iter().filter(|a| a.cost_usd.is_some()).count()
        + runs.iter().filter(|r| r.cost_usd().is_some()).count();
    let counted_tokens = attempts.iter().filter(|a| a.tokens.is_some()).count()
        + runs.iter().filter(|r| r.tokens().is_some()).count();
    let invocations = attempts.len() + runs.len();

    html.push_str("<section class=\"mission\" aria-labelledby=\"mission-h\">\n<h2 id=\"mission-h\">The mission</h2>\n<div class=\"cards\">\n");
    render_progress(html, board);
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
        "<div class=\"card\"><div class=\"k\">Iterations</div><div class=\"v\">{}</div><div class=\"n\">worker iterations; {} validator run{}, {} agent run{} in all</div></div>",
        totals.iterations,
        validations,
        if validations == 1 { "" } else { "s" },
        invocations,
        if invocations == 1 { "" } else { "s" }
    );
    let _ = writeln!(
        html,
        "<div class=\"card\"><div class=\"k\">Tokens</div><div class=\"v\"{}>{}</div><div class=\"n\">{}</div></div>",
        totals
            .tokens
            .map_or(String::new(), |tokens| format!(" title=\"{}\"", thousands(tokens))),
        totals.tokens.map_or("unknown".to_string(), compact),
        known_of(counted_tokens, invocations, "reported their tokens")
    );
    let _ = writeln!(
        html,
        "<div class=\"card\"><div class=\"k\">Cost</div><div class=\"v\">{}</div><div class=\"n\">{}</div></div>",
        money(totals.cost_usd),
        known_of(priced, invocations, "have a known cost")
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

/// The first card: features done out of the total, the progress bar by status, the counts.
fn render_progress(html: &mut String, board: &status::Board) {
    let totals = &board.totals;
    let count = |status: BoardStatus| totals.by_status.get(&status).copied().unwrap_or(0);
    // A superseded feature is done through its pieces, which are features of their own.
    let counted = totals.features - count(BoardStatus::Superseded);
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

/// What the curator did recently (see [`super::load_curator`]).
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
const STYLE: &str = include_str!("report.css");
