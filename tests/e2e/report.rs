//! The mission report (`planner report`): generated from a whole scripted mission, it shows
//! every feature and every attempt with working links, the mission's totals, and escapes what
//! the agents printed.

use std::path::Path;

use harness_tests::{code, text, Project};

const FEATURES: &str = "features:\n  - id: F-001\n    title: Sign-up form\n    acceptance: [a user can sign up]\n  - id: F-002\n    title: CSV export\n    acceptance: [the sheet exports]\n  - id: F-003\n    title: Logout\n    acceptance: [a user can log out]\n";

/// A Claude stream-json `result` event: the final answer, `tokens` input tokens, `cost` USD.
fn result(answer: &str, tokens: u64, cost: f64) -> String {
    format!(
        "print: '{{\"type\":\"result\",\"is_error\":false,\"num_turns\":2,\"result\":\"{answer}\",\"total_cost_usd\":{cost},\"usage\":{{\"input_tokens\":{tokens}}}}}'"
    )
}

/// A Claude stream-json `assistant` event holding one line of text.
fn says(line: &str) -> String {
    format!(
        "print: '{{\"type\":\"assistant\",\"message\":{{\"content\":[{{\"type\":\"text\",\"text\":\"{line}\"}}]}}}}'"
    )
}

/// F-001: completed, rejected, completed, verified. F-002: no promise twice, failed at
/// max_iterations (2), printing markup. F-003: completed and verified at once.
fn scenario() -> String {
    let promise = "done <promise>{promise}</promise>";
    format!(
        r#"
scripts:
  - match: {{role: validator, feature: F-001}}
    steps:
      - [{}]
      - [{}]
  - match: {{role: validator}}
    steps:
      - [{}]
  - match: {{feature: F-001}}
    steps:
      - [{}]
  - match: {{feature: F-002}}
    steps:
      - [{}, {}]
  - match: {{feature: F-003}}
    steps:
      - [{}]
"#,
        result("no sign-up button <verdict>FAIL</verdict>", 200, 0.02),
        result("it works <verdict>PASS</verdict>", 200, 0.02),
        result("it works <verdict>PASS</verdict>", 200, 0.02),
        result(promise, 1000, 0.1),
        says("TRICK: <script>alert(1)</script> is how the page greets"),
        result("not yet <img src=x onerror=alert(2)>", 3000, 0.3),
        result(promise, 500, 0.05),
    )
}

/// Every `href="…"` of the page.
fn links(html: &str) -> Vec<String> {
    html.split("href=\"")
        .skip(1)
        .map(|rest| rest.split('"').next().unwrap().to_string())
        .collect()
}

#[test]
fn the_report_of_a_mission_shows_every_feature_attempt_and_total_escaped() {
    let project = Project::new(FEATURES, &scenario());
    project.config(
        "output_format: claude-stream-json\n",
        "validate: true\nmax_iterations: 2\n",
    );
    project.write_state(
        "summary.md",
        "# Summary\n## Lessons\n- run `make test` <img src=x onerror=alert(3)> **first**\n",
    );
    let out = project.run(&["all"]);
    assert_eq!(
        code(&out),
        2,
        "F-002 stops at max_iterations\n{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );

    let out = project.planner(&["report"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let path = project.state_dir().join("report.html");
    assert_eq!(text(&out.stdout).trim(), path.display().to_string());
    let html = std::fs::read_to_string(&path).unwrap();

    // Every feature, with its status.
    for (id, title, status) in [
        ("F-001", "Sign-up form", "done"),
        ("F-002", "CSV export", "failed"),
        ("F-003", "Logout", "done"),
    ] {
        assert!(
            html.contains(&format!("<span class=\"fid\">{id}</span><span class=\"ftitle\">{title}</span><span class=\"badge s-{status}\">")),
            "{id} {status}"
        );
    }
    assert!(
        html.contains("<span class=\"rk\">Stopped</span> max_iterations (2) reached"),
        "the failed feature says why"
    );

    // Every attempt: a mark and links to its prompt and output, which exist.
    let mut attempts = 0;
    for (feature, outcomes) in [
        (
            "F-001",
            &["completed", "rejected", "completed", "verified"][..],
        ),
        ("F-002", &["no_promise", "no_promise"][..]),
        ("F-003", &["completed", "verified"][..]),
    ] {
        let state = project.state(feature);
        let recorded: Vec<&str> = state["attempts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["outcome"].as_str().unwrap())
            .collect();
        assert_eq!(recorded, outcomes, "{feature}");
        for attempt in state["attempts"].as_array().unwrap() {
            let run_id = attempt["run_id"].as_str().unwrap();
            let dir = format!("runs/{feature}/{run_id}/");
            assert!(html.contains(&format!("href=\"{dir}prompt.md\"")), "{dir}");
            assert!(html.contains(&format!("href=\"{dir}output.log\"")), "{dir}");
            assert!(html.contains(&format!("<code class=\"rid\">{run_id}</code>")));
            attempts += 1;
        }
    }
    assert_eq!(html.matches("<a class=\"mark ").count(), attempts);
    for link in links(&html) {
        if !link.starts_with('#') {
            assert!(
                project.state_dir().join(&link).is_file(),
                "{link} leads nowhere"
            );
        }
    }

    // The totals: 2 of 3 done, 5 worker iterations, the tokens and cost of all 8 attempts.
    assert!(html.contains("<div class=\"v\">2 <span class=\"of\">/ 3</span></div>"));
    assert!(html.contains("<div class=\"v\">5</div>"), "iterations");
    assert!(
        html.contains("<div class=\"v\" title=\"9,100\">9,100</div>"),
        "tokens"
    );
    assert!(html.contains("<div class=\"v\">$0.91</div>"), "cost");
    assert!(html.contains("all 8 agent runs have a known cost"));

    // The memory: the agent's entry and the hand-written summary, escaped.
    assert!(project
        .read_state("raw.md")
        .contains("TRICK: <script>alert(1)</script>"));
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt; is how the page greets"));
    assert!(html.contains(
        "run <code>make test</code> &lt;img src=x onerror=alert(3)&gt; <strong>first</strong>"
    ));
    assert!(html.contains("No curator pass yet"));
    for raw in ["<script", "<img", "onerror=alert(2)>"] {
        assert!(!html.contains(raw), "{raw} reached the page unescaped");
    }
    // Self-contained: nothing is fetched.
    for external in [" src=\"", "<link", "@import", "url("] {
        assert!(!html.contains(external), "{external}");
    }
}

#[test]
fn a_report_written_elsewhere_links_back_into_the_state_directory() {
    let project = Project::new(FEATURES, "steps:\n  - [promise: true]\n");
    let out = project.run(&["F-003"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let output = project.root().join("out/report.html");
    // run.sh wrote the page at its end; written elsewhere, the state directory's copy is not touched.
    std::fs::remove_file(project.state_dir().join("report.html")).unwrap();
    let out = project.planner(&["report", "--output", output.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let html = std::fs::read_to_string(&output).unwrap();
    let run_id = project.state("F-003")["attempts"][0]["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    let link = format!("../project/.harness/runs/F-003/{run_id}/output.log");
    assert!(html.contains(&format!("href=\"{link}\"")), "{link}");
    assert!(Path::new(&project.root().join("out")).join(&link).is_file());
    assert!(!project.state_dir().join("report.html").exists());
}

#[test]
fn report_without_a_state_directory_is_an_input_error() {
    let project = Project::bare();
    let out = project.planner(&["report"]);
    assert_eq!(code(&out), 1);
    assert!(
        text(&out.stderr).contains("hint: create it with `./run.sh init"),
        "{}",
        text(&out.stderr)
    );
}
