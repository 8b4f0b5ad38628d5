//! `curator --agent`: the curator role's agent is shown the items and the files, and proposes a
//! rewrite of summary.md. Only its wordings can be taken: the deterministic checks ([`check`])
//! make sure the rewrite keeps every item the pass put in summary.md (one bullet each, in its
//! section, with its marker), keeps every line of the user's, and stays within the bounds once
//! the curator adds the evidence back. A rejected rewrite changes nothing, and the pass writes
//! its own result; an accepted one is remembered in curator.json, so later passes keep the
//! agent's wording of an item until the item says something else.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use anyhow::Context;
use serde::Serialize;

use crate::agent::{AgentRun, End};
use crate::base::signals;
use crate::base::time;
use crate::roles::attempt::{Attempt, Place};
use crate::roles::inputs;
use crate::roles::prompt::Prompt;
use crate::spec::role::Role;
use crate::state::budget;
use crate::state::memory::{self, RawEntry};

use super::document::{marker_ids, size, SUMMARY_SECTIONS};
use super::judgments::{self, Judgments};
use super::log;
use super::similarity;
use super::{
    AgentVerdict, ItemReport, Params, Pass, Request, Snapshot, SummaryPlan, SUMMARY_TEXT_CHARS,
};

/// What the agent's run gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proposal {
    /// The accepted wordings (item id → text); empty when rejected.
    pub wordings: BTreeMap<String, String>,
    /// The accepted calls (items the same, decisions replaced, knowledge general or local);
    /// none when rejected.
    pub judgments: Judgments,
    /// Accepted or rejected, and why.
    pub verdict: AgentVerdict,
    /// The agent's memory entries and the curator's outcome line, for raw.md.
    pub entries: Vec<RawEntry>,
    /// The interrupt that stopped the run, if one did.
    pub interrupted: Option<i32>,
}

impl Proposal {
    /// No proposal: the agent did not run, for `reason`.
    fn not_run(reason: String) -> Self {
        Proposal {
            wordings: BTreeMap::new(),
            judgments: Judgments::default(),
            verdict: AgentVerdict {
                accepted: false,
                reason,
                run_dir: None,
            },
            entries: Vec::new(),
            interrupted: None,
        }
    }
}

/// Runs the curator's agent on the pass `draft` and checks its answer.
pub fn propose(request: &Request, snapshot: &Snapshot, draft: &Pass) -> anyhow::Result<Proposal> {
    let place = Place {
        workdir: request.workdir.clone(),
        state: request.state.clone(),
        home: request.home.clone(),
        echo: request.echo,
        path_var: request.path_var.clone(),
    };
    let (config, program) = inputs::check_mission_inputs(
        &place.workdir,
        &place.state,
        Role::Curator,
        place.path_var.as_deref(),
    )?;
    let role_prompt = inputs::read_role_prompt(&place.home, Role::Curator)?;
    let identity = memory::read_identity_layer(&place.home.identity(Role::Curator))
        .context("cannot read the curator's identity file")?;
    let attempt = Attempt::on_mission(
        &place,
        Role::Curator,
        (&config, program),
        request.run_id.clone(),
        &place.state.curations_dir(),
        (1, 1),
    );
    // Its spend counts against the mission budget: a used-up budget leaves the pass without it.
    let budget = match budget::mission_left(&config.budgets, &place.state) {
        Ok(left) => left,
        Err(exceeded) => return Ok(Proposal::not_run(format!("not run: {exceeded}"))),
    };
    let plan = &draft.summary_plan;
    let prompt = Prompt::new(&attempt.runtime, &role_prompt)
        .identity(Role::Curator, identity.as_deref())
        .untrusted(&items_section(draft, plan, snapshot))
        .untrusted(&format!(
            "## summary.md as it is now\n\n{}",
            indent(
                snapshot
                    .summary
                    .as_deref()
                    .unwrap_or("(there is no summary.md yet)")
            )
        ))
        .untrusted(&format!(
            "## The curator's draft of the new summary.md\n\n{}",
            indent(&plan.render(&BTreeMap::new()))
        ))
        .harness_words(&instructions(&request.params))
        .render();
    attempt.save_prompt(&prompt)?;
    eprintln!(
        "curator: the agent rewrites summary.md (run {})",
        attempt.run_id
    );
    let run = attempt.run(&prompt, &[], &budget)?;
    let ended_at = time::now();
    let (wordings, judgments, verdict) =
        decide(&attempt, &run, (draft, snapshot), &request.params)?;
    let outcome = if verdict.accepted {
        format!("agent rewrite of summary.md kept: {}", verdict.reason)
    } else {
        format!("agent rewrite of summary.md rejected: {}", verdict.reason)
    };
    let entries = attempt.raw_entries(&run, None, None, (ended_at, &outcome));
    attempt.write_result(
        &run,
        ended_at,
        &CuratorResult {
            accepted: verdict.accepted,
            reason: &verdict.reason,
            wordings: &wordings,
            memory_entries: run.output.entries.len(),
            memory_entries_dropped: run.output.entries_dropped,
        },
    )?;
    Ok(Proposal {
        wordings,
        judgments,
        verdict,
        entries,
        interrupted: match run.end {
            End::Interrupted(signal) => Some(signal),
            _ => None,
        },
    })
}

/// The agent's proposal, checked against the `draft` pass of `snapshot`: the wordings it
/// changes and the calls it makes (none when rejected), and the verdict on it.
fn decide(
    attempt: &Attempt,
    run: &AgentRun,
    (draft, snapshot): (&Pass, &Snapshot),
    params: &Params,
) -> anyhow::Result<(BTreeMap<String, String>, Judgments, AgentVerdict)> {
    let plan = &draft.summary_plan;
    let verdict = |accepted, reason| AgentVerdict {
        accepted,
        reason,
        run_dir: Some(attempt.run_dir.display().to_string()),
    };
    let checked = match run.end {
        End::Interrupted(signal) => Err(format!("interrupted by {}", signals::name(signal))),
        End::Exited(0) => check_answer(draft, snapshot, &attempt.answer(run)?, params),
        end => Err(format!(
            "the curator's agent did not finish: {}",
            end.in_words(attempt.agent())
        )),
    };
    Ok(match checked {
        Ok((wordings, judged)) => {
            let reason = format!(
                "{} of {} summary bullets reworded{}",
                wordings.len(),
                plan.bullets.iter().map(Vec::len).sum::<usize>(),
                calls(&judged)
            );
            (wordings, judged, verdict(true, reason))
        }
        Err(reason) => (
            BTreeMap::new(),
            Judgments::default(),
            verdict(false, reason),
        ),
    })
}

/// The wordings and the calls of an agent's `answer` to the pass `draft`, once both are checked
/// (see [`check`] and [`judgments::check`]), or why the answer is rejected.
fn check_answer(
    draft: &Pass,
    snapshot: &Snapshot,
    answer: &str,
    params: &Params,
) -> Result<(BTreeMap<String, String>, Judgments), String> {
    let block = last_block(answer)
        .ok_or_else(|| "the answer holds no fenced markdown block".to_string())?;
    let wordings = check(&draft.summary_plan, &block, params)?;
    let judged = judgments::parse(answer)?;
    let features = draft
        .report
        .items
        .iter()
        .flat_map(|item| item.features.iter().map(String::as_str));
    judgments::check(
        &judged,
        &draft.report.items,
        &similarity::Context::new(&snapshot.project, features),
    )?;
    Ok((wordings, judged))
}

/// `; 3 calls` (or nothing when the agent made none).
fn calls(judged: &Judgments) -> String {
    let count = judged.same.len()
        + judged.apart.len()
        + judged.supersedes.len()
        + judged.stands.len()
        + judged.general.len()
        + judged.local.len();
    match count {
        0 => String::new(),
        1 => "; 1 call".to_string(),
        n => format!("; {n} calls"),
    }
}

/// What the result.json of a curator agent run says besides the run, who ran and when.
#[derive(Debug, Serialize)]
struct CuratorResult<'a> {
    accepted: bool,
    reason: &'a str,
    wordings: &'a BTreeMap<String, String>,
    memory_entries: usize,
    memory_entries_dropped: usize,
}

/// Text indented four spaces: shown in the prompt as a block that is not a fence, so that an
/// agent that echoes its prompt never answers with the draft by accident.
fn indent(text: &str) -> String {
    text.lines()
        .map(|line| {
            if line.is_empty() {
                String::new()
            } else {
                format!("    {line}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The `## Items` section: each item the draft puts in summary.md, with its counters, then how
/// many others there are.
fn items_section(draft: &Pass, plan: &SummaryPlan, snapshot: &Snapshot) -> String {
    let shown: BTreeSet<&str> = plan
        .bullets
        .iter()
        .flatten()
        .map(|s| s.id.as_str())
        .collect();
    let mut text = String::from(
        "## Items\n\nThe memory items summary.md shows, then those MEMORY.md keeps, each the \
         entries of raw.md that say the same thing (id, tag, times seen, workers, text):\n\n",
    );
    let in_memory =
        |i: &&ItemReport| i.place.starts_with("MEMORY.md") && !shown.contains(i.id.as_str());
    let listed: Vec<&ItemReport> = draft
        .report
        .items
        .iter()
        .filter(|i| shown.contains(i.id.as_str()))
        .chain(draft.report.items.iter().filter(in_memory))
        .take(LISTED_ITEMS)
        .collect();
    let texts = entry_texts(&listed, snapshot);
    for item in &listed {
        // A replaced decision says by what: the agent may find it still stands.
        let replaced = item
            .superseded_by
            .as_ref()
            .map_or(String::new(), |newer| format!(" (replaced by c:{newer})"));
        text.push_str(&format!(
            "- c:{} {} seen {}× by {}: {}{replaced}\n",
            item.id,
            item.tag,
            item.seen,
            item.workers.join(", "),
            item.text
        ));
        // Its other wordings, each with an entry's id: the agent may find two apart.
        let mut worded = BTreeSet::from([item.text.as_str()]);
        for id in &item.evidence {
            if worded.len() > WORDINGS_SHOWN {
                break;
            }
            let Some(wording) = texts.get(id.as_str()) else {
                continue;
            };
            if worded.insert(wording.as_str()) {
                text.push_str(&format!("  - c:{id}: {wording}\n"));
            }
        }
    }
    let others = draft.report.items.len() - listed.len();
    text.push_str(&format!(
        "\n{others} other items are in archive/ and are not yours to place.\n"
    ));
    text
}

/// The most other wordings of an item the agent is shown.
const WORDINGS_SHOWN: usize = 4;

/// The text of each entry of `items` whose item has more than one, by the entry's id (read
/// from the log of `snapshot`).
fn entry_texts(items: &[&ItemReport], snapshot: &Snapshot) -> HashMap<String, String> {
    let wanted: HashSet<&str> = items
        .iter()
        .filter(|item| item.evidence.len() > 1)
        .flat_map(|item| item.evidence.iter().map(String::as_str))
        .collect();
    if wanted.is_empty() {
        return HashMap::new();
    }
    log::read(&snapshot.raw, &snapshot.chunks)
        .lines()
        .filter_map(|line| {
            let id = line.id();
            let entry = line.entry.as_ref().ok()?;
            wanted
                .contains(id.as_str())
                .then(|| (id, entry.text.clone()))
        })
        .collect()
}

/// The most items the agent is shown.
const LISTED_ITEMS: usize = 300;

/// How to answer (the harness's own words).
fn instructions(params: &Params) -> String {
    format!(
        "## Your answer\n\n\
         Rewrite the draft of summary.md so that every role reads it quickly and right: reword a \
         bullet to be shorter and clearer, keeping its meaning. Keep every bullet of the draft, \
         one per item, in its section, ending with its marker comment `<!-- c:ID -->` as in the \
         draft (the part after the id may be left out). Do not write the evidence in parentheses \
         at the end of a bullet: the curator adds it back. Do not add or remove bullets. Keep \
         every line without a marker exactly as it is: those lines are the user's. Once the \
         evidence is added back, the file must stay within {lines} lines and about {tokens} \
         tokens (one token per four characters).\n\n\
         Answer with ONE fenced code block: a line of three backticks followed by the word \
         markdown, then the whole new summary.md, then a line of three backticks. Only the last \
         such block of your answer is read; the draft is kept if your answer does not pass the \
         checks.\n\n\
         You may also make calls that words alone cannot, in a second fenced block whose info \
         string is judgments, one per line: `same c:ID c:ID` (two items of the list above say the \
         same thing: they become one item); `apart c:ID c:ID` (two entries the rules put in one \
         item say different things: each goes with the entries like it, in two items); \
         `supersedes c:NEW c:OLD` (decision NEW replaces \
         decision OLD, on the same subject); `stands c:ID` (decision ID is still in force: the \
         list shows it replaced, and nothing replaced it); `general c:ID: WORDING` (the item \
         holds in any project: if its evidence is enough it graduates into the identity files, \
         in WORDING, which must name nothing of this project: no feature id, path, port, \
         number, address or project name); `local c:ID` (the item holds in this project only: \
         it never graduates). \
         Leave the block out if you have no call to make. A call that names an item not in the \
         list, or a general wording that names something of this project, has the whole answer \
         rejected.",
        lines = params.summary_max_lines,
        tokens = params.summary_max_tokens
    )
}

/// The last fenced block of `answer` whose info string is `markdown`, `md` or empty.
pub fn last_block(answer: &str) -> Option<String> {
    let mut found = None;
    let mut open: Option<Vec<&str>> = None;
    for line in answer.lines() {
        let trimmed = line.trim();
        match &mut open {
            None => {
                if let Some(info) = trimmed.strip_prefix("```") {
                    if matches!(info.trim(), "" | "markdown" | "md") {
                        open = Some(Vec::new());
                    }
                }
            }
            Some(lines) => {
                if trimmed == "```" {
                    found = Some(lines.join("\n"));
                    open = None;
                } else {
                    lines.push(line);
                }
            }
        }
    }
    found
}

/// Checks a proposed summary.md against the draft `plan`: every item of the draft once, in its
/// section, with a usable wording; every line of the user's kept; nothing else added; within the
/// bounds. The wordings that differ from the draft's, or why the proposal is rejected.
pub fn check(
    plan: &SummaryPlan,
    proposal: &str,
    params: &Params,
) -> Result<BTreeMap<String, String>, String> {
    let section_of: BTreeMap<&str, (usize, &super::Shown)> = plan
        .bullets
        .iter()
        .enumerate()
        .flat_map(|(section, shown)| shown.iter().map(move |s| (s.id.as_str(), (section, s))))
        .collect();
    let user_lines: BTreeSet<&str> = plan
        .doc
        .user_lines()
        .filter(|line| !line.trim().is_empty())
        .collect();
    let mut current: Option<usize> = None;
    let mut wordings = BTreeMap::new();
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    let mut kept: BTreeSet<&str> = BTreeSet::new();
    for line in proposal.lines() {
        if line.trim().is_empty() {
            continue;
        }
        if line.starts_with("## ") {
            let title = line.trim_start_matches("## ").trim();
            current = SUMMARY_SECTIONS.iter().position(|s| *s == title);
            if current.is_none() && !user_lines.contains(line) {
                return Err(format!("unknown section {line:?}"));
            }
            kept.insert(line);
            continue;
        }
        let ids = marker_ids(line);
        if ids.is_empty() {
            if !user_lines.contains(line) && !plan.doc.preamble.iter().any(|l| l == line) {
                return Err(format!(
                    "{line:?} is neither a line of the user's nor a bullet with an item's marker"
                ));
            }
            kept.insert(line);
            continue;
        }
        if ids.len() > 1 {
            return Err(format!("{line:?} names more than one item"));
        }
        let id = ids[0].as_str();
        let Some((section, shown)) = section_of.get(id) else {
            return Err(format!(
                "{line:?} names c:{id}, which is not an item of the draft"
            ));
        };
        if current != Some(*section) {
            return Err(format!(
                "c:{id} belongs under ## {}",
                SUMMARY_SECTIONS[*section]
            ));
        }
        if !seen.insert(shown.id.as_str()) {
            return Err(format!("c:{id} appears twice"));
        }
        let text = wording(line, &shown.evidence)
            .ok_or_else(|| format!("{line:?} is not a bullet (`- text <!-- c:ID -->`)"))?;
        if text.is_empty() || text.chars().count() > SUMMARY_TEXT_CHARS {
            return Err(format!(
                "the wording of c:{id} must have 1 to {SUMMARY_TEXT_CHARS} characters"
            ));
        }
        if text.contains("<!--") || text.contains("-->") {
            return Err(format!("the wording of c:{id} holds a comment"));
        }
        if text != shown.text {
            wordings.insert(shown.id.clone(), text);
        }
    }
    if let Some(missing) = section_of
        .values()
        .find(|(_, s)| !seen.contains(s.id.as_str()))
    {
        return Err(format!(
            "c:{} ({:?}) is missing from the rewrite",
            missing.1.id, missing.1.text
        ));
    }
    if let Some(lost) = plan
        .doc
        .sections
        .iter()
        .flat_map(|s| s.user.iter())
        .find(|line| !line.trim().is_empty() && !kept.contains(line.as_str()))
    {
        return Err(format!(
            "the user's line {lost:?} is missing from the rewrite"
        ));
    }
    let rendered = size(&plan.render(&wordings));
    if rendered.lines > params.summary_max_lines || rendered.tokens > params.summary_max_tokens {
        return Err(format!(
            "with the evidence it takes {} lines and about {} tokens, over the bound of {} lines \
             and {} tokens",
            rendered.lines, rendered.tokens, params.summary_max_lines, params.summary_max_tokens
        ));
    }
    Ok(wordings)
}

/// The text of a bullet line: after `- `, before the marker, without the evidence if the agent
/// kept it.
fn wording(line: &str, evidence: &str) -> Option<String> {
    let body = line.trim().strip_prefix("- ")?;
    let body = &body[..body.find("<!--").unwrap_or(body.len())];
    let body = body.trim();
    let body = body
        .strip_suffix(&format!("({evidence})"))
        .map(str::trim_end)
        .unwrap_or(body);
    Some(body.to_string())
}
