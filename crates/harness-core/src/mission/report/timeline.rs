//! The features section of the report: one row per feature (and one for mission planning),
//! each a timeline of its agent runs, one mark per run, and the list of those runs.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::format::{
    attribute, clock, compact, cost_text, duration, escape, money, percent, percent_encode,
    seconds_text, short_clock, thousands,
};
use super::page::status_glyph;
use super::{Inputs, PlanRun};
use crate::base::time::Timestamp;
use crate::mission::executor::JobRecord;
use crate::mission::status::{self, BoardStatus, FeatureRow};
use crate::spec::config::ExecutorKind;
use crate::spec::features::FeatureId;
use crate::spec::role::Role;
use crate::state::run_state::{Attempt, Outcome};
use crate::state::usage::CostSource;

/// An attempt's outcome as the report shows it: its name in state.json, the letter on its mark
/// (so that colour never carries the meaning alone) and its CSS class.
pub(super) fn outcome_key(outcome: Outcome) -> (&'static str, &'static str) {
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
        Outcome::ServiceError => ("service_error", "U"),
        Outcome::Verified => ("verified", "V"),
        Outcome::Rejected => ("rejected", "R"),
        Outcome::GateFailed => ("gate_failed", "G"),
        Outcome::PhasePassed => ("phase_passed", "P"),
    }
}

/// Every outcome, in the order the legend lists them.
const OUTCOMES: [Outcome; 15] = [
    Outcome::Completed,
    Outcome::PhasePassed,
    Outcome::Verified,
    Outcome::NoPromise,
    Outcome::Handoff,
    Outcome::Rejected,
    Outcome::GateFailed,
    Outcome::AgentError,
    Outcome::Crashed,
    Outcome::TimedOut,
    Outcome::OverBudget,
    Outcome::RateLimited,
    Outcome::ServiceError,
    Outcome::Interrupted,
    Outcome::Started,
];

/// One mark of a timeline: an attempt on a feature, or a planning run.
pub(super) struct Mark<'a> {
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
    /// The phase the attempt worked in, when the feature has phases.
    phase: Option<&'a str>,
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
            phase: attempt.phase.as_deref(),
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
            phase: None,
        }
    }

    /// `iteration 2` for a worker, `after iteration 2` for the roles that follow one.
    fn iteration_text(&self) -> Option<String> {
        let (iteration, _) = self.iteration?;
        let phase = self
            .phase
            .map_or(String::new(), |phase| format!(" (phase {phase})"));
        Some(match self.role {
            Role::Worker => format!("iteration {iteration}{phase}"),
            _ => format!("after iteration {iteration}{phase}"),
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
                self.tokens.map_or("unknown".to_string(), thousands),
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

/// One row per feature (and one for mission planning), with the legend.
pub(super) fn render_features(html: &mut String, inputs: &Inputs, board: &status::Board) {
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
        .flat_map(|state| state.attempts())
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
            .flat_map(|state| state.attempts())
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
    if let Some(phase) = &row.phase {
        let _ = writeln!(
            html,
            "<p class=\"reason\"><span class=\"rk\">Phase</span> {} ({} of {})</p>",
            escape(&phase.name),
            phase.number,
            phase.count
        );
    }
    let state = id.as_ref().and_then(|id| inputs.states.get(id));
    let running = id.as_ref().is_some_and(|id| inputs.running.contains(id));
    let marks: Vec<Mark> = match (state, &id) {
        (Some(state), Some(id)) => state
            .attempts()
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
    if let Some(job) = &row.job {
        render_job(html, inputs, &row.id, job);
    }
    if let Some(reason) = &row.reason {
        let what = match row.status {
            BoardStatus::Blocked => "Blocked",
            BoardStatus::Unmerged => "Not merged",
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

/// `Slurm job 4242 RUNNING (seen 14:02) · output`, the job's output linked.
fn render_job(html: &mut String, inputs: &Inputs, feature: &str, job: &JobRecord) {
    let output = job.output.file_name().map(|name| {
        format!(
            "{}runs/{}/jobs/{}",
            inputs.link_base,
            percent_encode(feature),
            percent_encode(&name.to_string_lossy())
        )
    });
    let _ = writeln!(
        html,
        "<p class=\"reason\"><span class=\"rk\">{} job</span> {} {} (seen {}){}</p>",
        match job.executor {
            ExecutorKind::Local => "Local",
            ExecutorKind::Slurm => "Slurm",
        },
        escape(&job.id),
        escape(&job.state),
        short_clock(job.seen_at, inputs.now),
        output.map_or(String::new(), |href| format!(
            " · <a href=\"{}\">output</a>",
            attribute(&href)
        ))
    );
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
                thousands(tokens)
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
            mark.tokens.map_or("unknown".to_string(), thousands),
            escape(&cost_text(mark.cost_usd, mark.cost_source).replace("unknown", "cost unknown")),
            attribute(&mark.dir),
            escape(mark.run_id),
        );
    }
    html.push_str("</ol>\n</details>\n");
}
