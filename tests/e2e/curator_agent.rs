//! The curator's agent making the semantic calls (`curate --agent`, a ```` ```judgments ````
//! block): items that say the same, a decision replaced, knowledge general (in the agent's
//! wording) or local. The deterministic rules check the calls before anything is kept: a call
//! that breaks hygiene or would lose an item has the whole answer rejected.

use harness_core::roles::curator::log;
use harness_tests::{code, text, Project};

/// Three workers' entries: a trick whose every wording names a path of the project (the rules
/// alone never graduate it), a trick they graduate, two decisions on one subject in other
/// words, and two remarks on one thing in other words.
const RAW: &str = "\
[2026-05-04T08:00:00Z] worker F-001 TRICK: npx drizzle-kit generate reads tools/db/drizzle.config.ts and writes the SQL migration
[2026-05-04T08:00:00Z] worker F-001 DECISION: REST endpoints are versioned under a path prefix
[2026-05-04T08:00:00Z] worker F-001 -: iteration 1 of F-001: completed
[2026-05-04T09:00:00Z] worker F-002 TRICK: run npx drizzle-kit generate after each schema change; it reads tools/db/drizzle.config.ts
[2026-05-04T09:00:00Z] worker F-002 TRICK: cargo test -q keeps the output short
[2026-05-04T09:00:00Z] worker F-002 LESSON: reload the page after the service worker updates
[2026-05-04T09:00:00Z] worker F-002 -: iteration 1 of F-002: completed
[2026-05-04T10:00:00Z] worker F-003 TRICK: the output stays short with cargo test -q
[2026-05-04T10:00:00Z] worker F-003 AVOID: trusting a cached bundle right after a deploy
[2026-05-04T10:00:00Z] worker F-003 DECISION: the public API is GraphQL only
[2026-05-04T10:00:00Z] worker F-003 -: iteration 1 of F-003: completed
";

/// The id of the entry of RAW whose text starts with `start` (an item's id is its first
/// entry's).
fn id(start: &str) -> String {
    id_in(RAW, start)
}

/// The id of the entry of `raw` whose text starts with `start`.
fn id_in(raw: &str, start: &str) -> String {
    log::read(raw.as_bytes(), &[])
        .lines()
        .find(|line| line.text().contains(&format!(": {start}")))
        .unwrap_or_else(|| panic!("no entry {start}"))
        .id()
}

/// summary.md as the deterministic pass writes it for `raw` (in a project of its own).
fn draft_summary(raw: &str) -> String {
    let project = Project::new("features: []\n", "steps: []\n");
    project.write_state("raw.md", raw);
    assert_eq!(code(&project.curator(&["--quiet"])), 0);
    project.read_state("summary.md")
}

/// A project with RAW in raw.md whose curator's agent answers the draft unchanged and the
/// calls `judgments`; the curator run with `--agent` on it, and its stderr.
fn answered(judgments: &str) -> (Project, String) {
    answered_on(RAW, judgments)
}

/// [`answered`] with `raw` in raw.md.
fn answered_on(raw: &str, judgments: &str) -> (Project, String) {
    let project = Project::new("features: []\n", "steps: [[cat: answer.md]]\n");
    let answer = format!(
        "```markdown\n{}```\n\n```judgments\n{judgments}\n```\n",
        draft_summary(raw)
    );
    std::fs::write(project.root().join("answer.md"), answer).unwrap();
    project.write_state("raw.md", raw);
    let out = project.curator(&["--agent", "--quiet"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    (project, text(&out.stderr))
}

/// The prompt of the curator agent's (only) run in `project`.
fn prompt_of(project: &Project) -> String {
    walkdir::WalkDir::new(project.state_dir().join("curations"))
        .into_iter()
        .filter_map(Result::ok)
        .find(|e| e.file_name() == "prompt.md")
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .expect("the agent's prompt is kept")
}

fn identity(project: &Project) -> String {
    std::fs::read_to_string(project.identity_dir().join("worker.md")).unwrap_or_default()
}

#[test]
fn the_agents_calls_are_kept_when_the_rules_allow_them() {
    // The rules alone: the trick with a path does not graduate, the other does; both
    // decisions are current; the two remarks are two items.
    let plain = Project::new("features: []\n", "steps: []\n");
    plain.write_state("raw.md", RAW);
    assert_eq!(code(&plain.curator(&["--quiet"])), 0);
    assert!(
        !identity(&plain).contains("drizzle-kit") && identity(&plain).contains("cargo test -q")
    );
    let summary = plain.read_state("summary.md");
    assert!(
        summary.contains("- REST endpoints are versioned")
            && summary.contains("- the public API is GraphQL"),
        "{summary}"
    );

    let calls = format!(
        "same c:{} c:{}\nsupersedes c:{} c:{}\ngeneral c:{}: npx drizzle-kit generate --config <config file> writes the SQL migration\nlocal c:{}",
        id("reload the page"),
        id("trusting a cached bundle"),
        id("the public API"),
        id("REST endpoints"),
        id("npx drizzle-kit"),
        id("cargo test -q"),
    );
    let (project, stderr) = answered(&calls);
    assert!(
        stderr.contains("the agent's rewrite was kept: 0 of ") && stderr.contains("; 4 calls"),
        "{stderr}"
    );
    let worker = identity(&project);
    assert!(
        worker.contains("- npx drizzle-kit generate --config <config file> writes the SQL migration <!-- graduated "),
        "{worker}"
    );
    assert!(
        !worker.contains("cargo test -q"),
        "a local item graduated: {worker}"
    );
    let memory = project.read_state("MEMORY.md");
    let history = memory.split("## History\n").nth(1).unwrap();
    assert!(
        history.contains("REST endpoints are versioned") && history.contains("superseded by"),
        "{memory}"
    );
    // The two remarks are one item, seen twice: it is promoted.
    let summary = project.read_state("summary.md");
    assert!(summary.contains("(2× by F-002, F-003;"), "{summary}");
    // The calls are remembered: a plain pass keeps them.
    let record = project.read_state("curator.json");
    assert!(
        record.contains("\"judgments\"") && record.contains("\"supersedes\""),
        "{record}"
    );
    assert_eq!(code(&project.curator(&["--quiet"])), 0);
    assert!(project
        .read_state("MEMORY.md")
        .split("## History\n")
        .nth(1)
        .unwrap()
        .contains("REST endpoints"));
    assert_eq!(project.read_state("summary.md"), summary);
}

#[test]
fn a_decision_the_agent_says_stands_stays_current() {
    // Alike in words, so the rules take the older for replaced; they are on two subjects.
    let raw = "\
[2026-05-04T08:00:00Z] worker F-001 DECISION: the API answers every error as JSON with a code and a message
[2026-05-04T08:00:00Z] worker F-001 -: iteration 1 of F-001: completed
[2026-05-05T08:00:00Z] worker F-004 DECISION: the API answers the health check as plain text, no JSON
[2026-05-05T08:00:00Z] worker F-004 -: iteration 1 of F-004: completed
";
    let current = |project: &Project| {
        let summary = project.read_state("summary.md");
        summary
            .split("## Decisions (current)")
            .nth(1)
            .unwrap_or("")
            .contains("every error")
    };
    let older = id_in(raw, "the API answers every error");
    let (project, stderr) = answered_on(raw, &format!("stands c:{older}"));
    assert!(stderr.contains("; 1 call"), "{stderr}");
    assert!(current(&project), "{}", project.read_state("summary.md"));
    // The agent was shown what replaced it.
    let prompt = prompt_of(&project);
    assert!(prompt.contains(&format!("c:{older} DECISION")), "{prompt}");
    assert!(prompt.contains(" (replaced by c:"), "{prompt}");
    // Remembered: a plain pass keeps it current; the rules alone do not.
    assert_eq!(code(&project.curator(&["--quiet"])), 0);
    assert!(current(&project));
    let plain = Project::new("features: []\n", "steps: []\n");
    plain.write_state("raw.md", raw);
    assert_eq!(code(&plain.curator(&["--quiet"])), 0);
    assert!(!current(&plain), "{}", plain.read_state("summary.md"));
    // Only a decision stands.
    let (_, stderr) = answered_on(raw, "stands c:0123456789");
    assert!(stderr.contains("rejected"), "{stderr}");
}

#[test]
fn entries_the_agent_says_are_apart_are_two_items() {
    // The rules group the three: two say the same, the third another thing.
    let raw = "\
[2026-05-04T08:00:00Z] worker F-001 TRICK: cargo test -q keeps the output short
[2026-05-04T08:00:00Z] worker F-001 -: iteration 1 of F-001: completed
[2026-05-05T08:00:00Z] worker F-002 TRICK: cargo test -q -- --test-threads=1 keeps the database tests apart
[2026-05-05T08:00:00Z] worker F-002 -: iteration 1 of F-002: completed
[2026-05-06T08:00:00Z] worker F-003 TRICK: the output stays short with cargo test -q
[2026-05-06T08:00:00Z] worker F-003 -: iteration 1 of F-003: completed
";
    let items = |project: &Project| {
        let out = project.curator(&["--dry-run", "--json"]);
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let mut evidence: Vec<usize> = report["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|item| item["evidence"].as_array().unwrap().len())
            .collect();
        evidence.sort_unstable();
        evidence
    };
    let plain = Project::new("features: []\n", "steps: []\n");
    plain.write_state("raw.md", raw);
    assert_eq!(items(&plain), [3]);
    let (short, threads) = (
        id_in(raw, "cargo test -q keeps"),
        id_in(raw, "cargo test -q --"),
    );
    let (project, stderr) = answered_on(raw, &format!("apart c:{short} c:{threads}"));
    assert!(stderr.contains("; 1 call"), "{stderr}");
    // The agent was shown the item's other wordings, each with an entry's id.
    let prompt = prompt_of(&project);
    assert!(
        prompt.contains(&format!(
            "  - c:{threads}: cargo test -q -- --test-threads=1"
        )),
        "{prompt}"
    );
    // The third entry goes with the one it is like; remembered by later passes.
    assert_eq!(items(&project), [1, 2]);
    assert_eq!(code(&project.curator(&["--quiet"])), 0);
    assert_eq!(items(&project), [1, 2]);
    // Entries of two items are apart already; one entry is not apart from itself.
    let (_, stderr) = answered_on(raw, &format!("apart c:{short} c:{}", id("cargo test -q")));
    assert!(stderr.contains("rejected"), "{stderr}");
    let (project, stderr) = answered_on(raw, &format!("apart c:{short} c:{short}"));
    assert!(
        stderr.contains("names c:") && stderr.contains("twice"),
        "{stderr}"
    );
    assert_eq!(items(&project), [3]);
}

#[test]
fn an_answer_whose_calls_break_the_rules_is_rejected() {
    let expected = draft_summary(RAW);
    for (calls, reason) in [
        (
            format!(
                "general c:{}: npx drizzle-kit generate --config tools/db/drizzle.config.ts writes it",
                id("npx drizzle-kit")
            ),
            "names \"tools/db/drizzle.config.ts\", which is of one mission",
        ),
        (
            format!("same c:{} c:{}", id("REST endpoints"), id("reload the page")),
            "is a decision, not a lesson",
        ),
        (
            format!("supersedes c:{} c:{}", id("REST endpoints"), id("the public API")),
            "is not newer than",
        ),
        (format!("local c:{}", "0123456789"), "is not an item of this pass"),
        ("merge everything".to_string(), "is not a judgment"),
    ] {
        let (project, stderr) = answered(&calls);
        assert!(
            stderr.contains("the agent's rewrite was rejected: ") && stderr.contains(reason),
            "{calls}: {stderr}"
        );
        // Nothing of the answer was kept: the deterministic pass's files.
        assert_eq!(project.read_state("summary.md"), expected);
        assert!(!identity(&project).contains("drizzle-kit"));
        assert!(!project.read_state("curator.json").contains("judgments"));
    }
}

/// What the agent read as general knowledge is confirmed by distinct workers whatever their
/// tags: the rules alone ask a TRICK among them (or a failure then its lesson), their way of
/// telling a technique from a remark, which the agent's call answers.
#[test]
fn distinct_workers_confirm_what_the_agent_called_general_whatever_their_tags() {
    let raw = |second: &str| {
        format!(
            "[2026-05-04T08:00:00Z] worker F-001 LESSON: CI runs forge snapshot --check; rerun forge snapshot and commit .gas-snapshot when gas changes\n\
             [2026-05-04T08:00:00Z] worker F-001 -: iteration 1 of F-001: completed\n\
             [2026-05-04T09:00:00Z] worker {second} AVOID: pushing a contract change without rerunning forge snapshot: .gas-snapshot drifts and the check fails\n\
             [2026-05-04T09:00:00Z] worker {second} -: iteration 1 of {second}: completed\n"
        )
    };
    for (second, graduates) in [("F-002", true), ("F-001", false)] {
        let raw = raw(second);
        // The rules alone: a lesson, then a thing to avoid, and no TRICK.
        let plain = Project::new("features: []\n", "steps: []\n");
        plain.write_state("raw.md", &raw);
        assert_eq!(code(&plain.curator(&["--quiet"])), 0);
        assert!(
            !identity(&plain).contains("snapshot"),
            "{}",
            identity(&plain)
        );
        // The rules group the two; the agent calls the item general.
        let calls = format!(
            "general c:{}: rerun the gas snapshot and commit it after each contract change",
            id_in(&raw, "CI runs forge"),
        );
        let (project, stderr) = answered_on(&raw, &calls);
        // One worker repeating itself is no confirmation, whatever the agent says.
        assert_eq!(
            identity(&project).contains("- rerun the gas snapshot and commit it"),
            graduates,
            "{second}: {}\n{stderr}\n{}",
            identity(&project),
            project.read_state("curator.json")
        );
    }
}
