//! The report's page, rendered from a fixed example mission: escaping, totals, links, memory
//! panels, and the snapshot of the whole page.

use super::*;
use crate::base::testing::{at, id};
use crate::mission::schedule::States;
use crate::spec::config::ExecutorKind;
use crate::spec::features::FeatureList;
use crate::spec::role::Role;
use crate::state::run_state::{RunState, Status};
use crate::state::usage::{CostSource, Usage, UsageRecord};

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
    let attempt = state.attempts_mut().last_mut().unwrap();
    attempt.ended_at = end.map(at);
    attempt.outcome = outcome;
    if let Some((tokens, cost)) = usage {
        attempt.tokens = Some(tokens);
        attempt.cost_usd = Some(cost);
        attempt.usage = Some(UsageRecord {
            final_answer: None,
            usage: Usage {
                turns: Some(3),
                cost_usd: Some(cost),
                ..Usage::default()
            },
            total_tokens: Some(tokens),
            context_tokens: None,
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
    states.insert(id("F-001"), done_after_a_rejection());
    states.insert(id("F-002"), failed_with_an_injection());
    states.insert(id("F-003"), running());

    Inputs {
        project: "sheets <clone>".into(),
        features,
        states,
        running: [id("F-003")].into_iter().collect(),
        jobs: BTreeMap::new(),
        default_max_iterations: 10,
        plans: vec![PlanRun {
            run_id: "1776999990-planner-mission".into(),
            started_at: at(-10),
            ended_at: Some(at(-1)),
            outcome: Outcome::Completed,
            tokens: Some(400),
            cost_usd: None,
        }],
        // The same planning run, as every run on the mission counts in the totals.
        mission_runs: vec![serde_json::from_value(serde_json::json!({
            "run_id": "1776999990-planner-mission",
            "role": "planner",
            "started_at": at(-10),
            "ended_at": at(-1),
            "outcome": "completed",
            "tokens": 400,
        }))
        .unwrap()],
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

/// F-001: two worker iterations, a rejection, a third, and the validator's pass.
fn done_after_a_rejection() -> RunState {
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
    done
}

/// F-002: timed out, then crashed, and failed with an agent's HTML in its reason.
fn failed_with_an_injection() -> RunState {
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
    failed
}

/// F-003: its first iteration still running.
fn running() -> RunState {
    let mut running = RunState::new(id("F-003"), 5, "P", at(0));
    attempt(
        &mut running,
        Role::Worker,
        (1700, None),
        Outcome::Started,
        None,
    );
    running.status = Status::Running;
    running
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
    // F-001: 300 + 400 + 60 + 140 + 50 s; F-002: 600 + 100 s; F-003 running for 100 s; the
    // planning run, 9 s and 400 tokens.
    assert!(
        html.contains("<div class=\"v\">1 <span class=\"of\">/ 4</span></div>"),
        "done / total"
    );
    assert!(
        html.contains("<div class=\"v\">29m 19s</div>"),
        "agent time"
    );
    assert!(
        html.contains("<div class=\"v\">6</div>"),
        "worker iterations"
    );
    assert!(
        html.contains("<div class=\"v\" title=\"4,700\">4,700</div>"),
        "tokens"
    );
    assert!(html.contains("<div class=\"v\">$0.43</div>"), "cost");
    assert!(html.contains("4 of 9 agent runs have a known cost"));
    assert!(html.contains("1 done</li>") && html.contains("1 failed</li>"));
    assert!(html.contains("1 running</li>") && html.contains("1 pending</li>"));
}

#[test]
fn every_attempt_has_a_mark_and_links_to_its_prompt_and_output() {
    let mut inputs = example();
    inputs.link_base = "../.harness/".into();
    let html = render(&inputs);
    for state in inputs.states.values() {
        for attempt in state.attempts() {
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
    assert!(html.contains(
        "<span class=\"rk\">Stopped</span> stalled: 2 iterations changed nothing &lt;script&gt;"
    ));
    assert!(html.contains("not run yet"));
}

#[test]
fn the_memory_shows_the_summary_the_newest_entries_and_the_curator() {
    let mut inputs = example();
    let html = render(&inputs);
    assert!(html.contains("<h4>Lessons</h4>\n<ul>\n<li>run <code>cargo test -q</code> first</li>"));
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
        jobs: BTreeMap::new(),
        plans: Vec::new(),
        mission_runs: Vec::new(),
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
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("src/mission/report/snapshots/report.html");
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

#[test]
fn a_feature_run_as_a_cluster_job_shows_the_job_and_links_its_output() {
    let mut inputs = example();
    inputs.jobs.insert(
        id("F-003"),
        JobRecord {
            executor: ExecutorKind::Slurm,
            id: "4242".into(),
            name: "harness-F-003-a1b2c3".into(),
            state: "RUNNING".into(),
            seen_at: at(1790),
            output: "/p/.harness/runs/F-003/jobs/slurm-4242.out".into(),
        },
    );
    let html = render(&inputs);
    let article = html.split("id=\"feature-F-003\"").nth(1).unwrap();
    let article = article.split("</article>").next().unwrap();
    assert!(
        article.contains("<span class=\"rk\">Slurm job</span> 4242 RUNNING (seen "),
        "{article}"
    );
    assert!(
        article.contains("<a href=\"runs/F-003/jobs/slurm-4242.out\">output</a>"),
        "{article}"
    );
    assert!(!render(&example()).contains("Slurm job"));
}

#[test]
fn a_feature_with_phases_shows_its_phase_and_each_attempts() {
    let mut inputs = example();
    let state = inputs.states.get_mut(&id("F-003")).unwrap();
    state.phase = Some(crate::state::lifecycle::PhaseState {
        name: "research".into(),
        number: 2,
        count: 4,
        started_after_iteration: 0,
        base_tree: None,
    });
    state.attempts_mut()[0].phase = Some("research".into());
    let html = render(&inputs);
    assert!(
        html.contains("<span class=\"rk\">Phase</span> research (2 of 4)"),
        "{html}"
    );
    assert!(
        html.contains("worker · iteration 1 (phase research)"),
        "{html}"
    );
    // A feature without phases shows none.
    assert_eq!(html.matches("<span class=\"rk\">Phase</span>").count(), 1);
}
