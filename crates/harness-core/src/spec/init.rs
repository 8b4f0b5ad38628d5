//! `./run.sh init`: a new `.harness/` with a commented config.yaml, a mission.md template, a
//! features.yaml template and a .gitignore for the run-time files. It never overwrites a file.

use std::io;
use std::path::PathBuf;

use crate::base::atomic::{create_new, write_atomic};
use crate::base::fs;
use crate::spec::layout::StateDir;

/// The config.yaml written by `init`.
pub const CONFIG_TEMPLATE: &str = r#"# harness configuration for this project. Every key is described in the harness README.

agent:
  # A known agent CLI, run headless: claude | codex | gemini | opencode | aider
  # (each reads the prompt and reports turns, tokens and cost its own way; see the README).
  preset: claude
  # Extra arguments for the preset, e.g. ["--model", "opus"].
  # args: []
  # Or any command instead of a preset (the prompt goes to its stdin unless prompt_via says
  # arg or file; {prompt_file} in the argv stands for the prompt file's path):
  # command: ["my-agent", "--headless"]
  # prompt_via: stdin
  # output_format: text
  # Time limit of one invocation, in seconds; then the agent's whole process tree is stopped.
  timeout_secs: 1800
  # Stop an agent that prints nothing for this long (0: never).
  idle_timeout_secs: 900
  # After its final answer, seconds an agent may take to exit before it is stopped.
  result_grace_secs: 30
  # Seconds between SIGTERM and SIGKILL when the agent has to be stopped.
  kill_grace_secs: 5
  # Live handoff: past this fraction of the model's context window, a fresh agent continues.
  # context_window: 200000
  # handoff_threshold: 0.8
  # USD per million tokens, to estimate the cost of agents that do not report it.
  # prices: {input_per_mtok: 3, output_per_mtok: 15}

# Fresh agent invocations a feature may take before it fails (run.sh exits 2).
# Fixed when a feature starts; raise it later with `./run.sh F-001 --max-iterations 15`.
max_iterations: 10

# The word the agent must print inside a promise tag to finish a feature.
completion_promise: TASK_COMPLETE

# After the promise, a validator agent checks the feature against its acceptance criteria;
# a rejection goes back to the worker with the reasons. false: the promise alone is enough.
validate: true

# A role may run another agent than the worker (every key of `agent:` above), e.g.:
# roles:
#   validator:
#     agent:
#       preset: claude
#       args: ["--model", "opus"]

# The presets skip the CLIs' permission prompts (the only way to work unattended): turn the sandbox
# on so that an agent can change its feature's tree and nothing else (Linux, bubblewrap).
# sandbox: bwrap
# sandbox: {kind: bwrap, network: false, writable: ["~/.cache/pip"]}   # a role may have its own

# Budgets per feature and for the whole mission: tokens, USD, seconds of agent time.
# budgets:
#   feature: {max_tokens: 5000000, max_cost_usd: 20, max_wall_secs: 14400}
#   mission: {max_cost_usd: 200}

# Checks (backpressure): commands that must pass after the agent's promise, before the
# validator, in the feature's working tree. A failing one voids the promise; its name, exit code
# and the end of its output go to the next attempt's notes. They cost no tokens and cannot be
# talked round. A string runs under `sh -c`; a list is the argv. Output: runs/<F>/<RUN>/checks/.
# checks:
#   - {name: tests, command: "cargo test --quiet", timeout_secs: 900}
#   - {name: lint, command: [cargo, clippy, --, -D, warnings]}

# Phases: the promise ends the current phase; its gate (its checks, and `allow:` — the paths it
# may change, committed or not — against what it changed) starts the next phase with a fresh
# agent, or sends the same phase round again with the reasons in the notes. The top-level checks
# guard the last phase. max_iterations caps a phase (all phases share the feature's). This
# example works as it is once uncommented:
# phases:
#   - name: plan
#     instructions: Write the plan of this feature to docs/plans/<feature id>.md (the steps, the files they touch, the tests that will show it works). Change nothing else.
#     allow: ["docs/plans/**", "PROGRESS.md"]
#     checks: [{name: plan-written, command: "test -s docs/plans/$HARNESS_FEATURE_ID.md"}]
#     max_iterations: 3
#   - name: research
#     instructions: Read the code and documentation the plan touches and write what you learn to docs/research/<feature id>.md; correct the plan where it was wrong. Change no code.
#     allow: ["docs/**", "PROGRESS.md"]
#   - name: build
#     instructions: Carry out the plan, with tests; commit as you go.
#   - name: verify
#     instructions: Run the tests, check every acceptance criterion yourself, fix what does not hold.

# Hooks: commands run on lifecycle events, with the event as one JSON object on stdin and its
# fields in HARNESS_* (HARNESS_EVENT, HARNESS_FEATURE_ID, HARNESS_MESSAGE, …). Events:
# iteration_start, agent_stop, phase_passed, phase_failed, checks_failed, feature_done,
# feature_failed, feature_blocked, budget_reached, rate_limit_wait, waits_exhausted,
# mission_done. A failing or hanging hook is recorded (hooks/runs.jsonl) and said, and the run
# goes on; `on_error: stop` makes it a gate. More examples (Slack, mail) in the README.
# hooks:
#   feature_done:
#     - command: ["sh", "-c", "notify-send harness \"$HARNESS_MESSAGE\""]
#   feature_failed:
#     - command: "curl -fsS -d \"$HARNESS_MESSAGE\" https://ntfy.sh/my-harness-topic"
#       timeout_secs: 10

# Iterations in a row that change nothing in the working tree before the feature stops as
# stalled (0: never).
stall_iterations: 3

# Rate and usage limits are waited out (not counted as iterations): until the time the agent says
# it resets (at most max_wait_secs), else wait_secs; up to max_waits in a row, then the run stops.
rate_limit: {wait_secs: 300, max_waits: 12, max_wait_secs: 21600}
# Transient service errors (overloaded, 5xx, lost connections) too, with back-off from wait_secs.
service_errors: {wait_secs: 30, max_waits: 8, max_wait_secs: 900}

# Run a curator pass (./run.sh curate) after every validator verdict.
auto_curate: false
# The curator's thresholds and bounds (the defaults shown):
# curator: {similarity: 0.3, supersede_similarity: 0.4, promote_min_seen: 2, keep_raw: 10,
#           summary_max_lines: 40, summary_max_tokens: 800, memory_max_lines: 200,
#           graduate_trick_workers: 2, graduate_failure_missions: 2, graduate_convention_times: 3}
# Where `./run.sh all` runs each feature: local (here) or slurm (one Slurm job per feature; the
# project must be on a filesystem shared by the nodes, at the same path). `--executor` overrides.
# executor:
#   kind: slurm
#   sbatch_args: ["--partition=short", "--time=04:00:00", "--account=my-lab"]
#   poll_secs: 30
"#;

/// The mission.md written by `init`.
pub const MISSION_TEMPLATE: &str = r#"# Mission

<!-- Say what the project should become, for whom, and what "done" means.
     The planner (`./run.sh plan`) turns this into features.yaml; you can also write features by hand. -->
"#;

/// The features.yaml written by `init`.
pub const FEATURES_TEMPLATE: &str = r#"# The feature list: the spec of the work. Edit it by hand (or let the planner fill it in).
# A feature's status is not kept here but in .harness/runs/<id>/state.json.
#
# features:
#   - id: F-001                 # letters, digits, '-', '_', '.'
#     title: Sign-up form
#     description: What to build, in prose.
#     acceptance:
#       - A new user can sign up with an email and a password.
#     depends_on: []            # ids of features that must be done first
features: []
"#;

/// The .gitignore written by `init`: agents often commit with `git add -A`, and the harness's
/// run-time files must not end up in the project's history (nor count as the agent's work).
/// The harness's own records (plan.json, curator.json, mission-id) are ignored too: it rewrites
/// them on every plan and pass, and a clone without them loses nothing it needs (the planner then
/// takes every feature for hand-written, the curator starts its record again, and the mission
/// gets a new id in the cross-mission ledger).
pub const GITIGNORE_TEMPLATE: &str = r#"# The harness's run-time state stays out of the project's commits. The spec and the curated
# memory (config.yaml, mission.md, features.yaml, summary.md, MEMORY.md) are worth tracking.
/runs/
/locks/
/notes/
/archive/
/raw.md
/plans/
/curations/
/worktrees/
/scripted-agent/
/report.html
/plan.json
/curator.json
/mission-id
/hooks/
/.*.tmp.*
/.*.swap.*
"#;

/// The entries of [`GITIGNORE_TEMPLATE`] that the .gitignore of the state directory lacks are
/// appended to it, so that a project `init` made before they were added ignores them too; the
/// user's lines stay as they are, and an entry the file names in any way (`!/plan.json`, say) is
/// theirs to decide. A state directory without a .gitignore (the user removed it) is left so.
/// Returns the entries added.
pub fn complete_gitignore(state: &StateDir) -> io::Result<Vec<&'static str>> {
    let path = state.root().join(".gitignore");
    let text = match fs::read(&path) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(error),
    };
    let named = |entry: &str| {
        let name = entry.trim_matches('/');
        text.lines()
            .map(|line| line.trim().trim_start_matches('!').trim_matches('/'))
            .any(|line| line == name)
    };
    let missing: Vec<&str> = GITIGNORE_TEMPLATE
        .lines()
        .filter(|line| line.starts_with('/') && !named(line))
        .collect();
    if missing.is_empty() {
        return Ok(missing);
    }
    let mut completed = text.clone();
    if !completed.is_empty() && !completed.ends_with('\n') {
        completed.push('\n');
    }
    completed.push_str(
        "# Added by the harness: files it writes that this project did not ignore yet.\n",
    );
    for line in &missing {
        completed.push_str(line);
        completed.push('\n');
    }
    write_atomic(&path, completed.as_bytes())?;
    Ok(missing)
}

/// [`complete_gitignore`] when a role starts: a .gitignore it cannot complete is said, never a
/// reason to stop.
pub fn keep_gitignore_complete(state: &StateDir, role: &str) {
    if let Err(error) = complete_gitignore(state) {
        eprintln!(
            "{role}: warning: cannot complete {}: {error}",
            state.root().join(".gitignore").display()
        );
    }
}

/// The commented example of `key` (`phases:`) in `template`, uncommented: the line `# key`
/// and the indented commented lines after it, each without its `# `.
pub fn uncommented(template: &str, key: &str) -> String {
    let mut lines = template
        .lines()
        .skip_while(|line| *line != format!("# {key}"));
    let Some(first) = lines.next() else {
        return String::new();
    };
    let mut block = format!("{}\n", &first[2..]);
    for line in lines.take_while(|line| line.starts_with("#  ")) {
        block.push_str(&line[2..]);
        block.push('\n');
    }
    block
}

/// What `init` did with each file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitReport {
    /// Files written.
    pub created: Vec<PathBuf>,
    /// Files that existed and were left alone.
    pub kept: Vec<PathBuf>,
}

/// Creates the state directory and its templates, keeping every file that exists.
pub fn init(state: &StateDir) -> io::Result<InitReport> {
    fs::create_dir_all(state.root())?;
    let mut report = InitReport {
        created: Vec::new(),
        kept: Vec::new(),
    };
    for (path, text) in [
        (state.config(), CONFIG_TEMPLATE),
        (state.mission(), MISSION_TEMPLATE),
        (state.features(), FEATURES_TEMPLATE),
        (state.root().join(".gitignore"), GITIGNORE_TEMPLATE),
    ] {
        if create_new(&path, text.as_bytes())? {
            report.created.push(path);
        } else {
            report.kept.push(path);
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::config::Config;
    use crate::spec::features::FeatureList;

    #[test]
    fn the_templates_sandbox_lines_parse_once_uncommented() {
        for line in CONFIG_TEMPLATE
            .lines()
            .filter(|l| l.starts_with("# sandbox: "))
        {
            let text = CONFIG_TEMPLATE.replace(line, &line[2..]);
            let config = Config::parse(&text, std::path::Path::new("config.yaml"))
                .unwrap_or_else(|error| panic!("{line}: {error}"));
            assert_eq!(config.sandbox.kind, crate::spec::config::SandboxKind::Bwrap);
        }
        assert_eq!(CONFIG_TEMPLATE.matches("\n# sandbox: ").count(), 2);
    }

    #[test]
    fn templates_parse_and_nothing_is_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateDir::in_workdir(dir.path());
        let report = init(&state).unwrap();
        assert_eq!(report.created.len(), 4);
        let config = Config::load(&state.config()).unwrap();
        assert_eq!(config.max_iterations, 10);
        assert!(FeatureList::load(&state.features())
            .unwrap()
            .features
            .is_empty());
        // Each commented example works once uncommented, as it is.
        let with = |block: &str| {
            Config::parse(
                &format!("{CONFIG_TEMPLATE}{}", uncommented(CONFIG_TEMPLATE, block)),
                &state.config(),
            )
            .unwrap_or_else(|error| panic!("{block}: {error}"))
        };
        assert_eq!(with("checks:").checks.len(), 2);
        let phases: Vec<String> = with("phases:").phases.into_iter().map(|p| p.name).collect();
        assert_eq!(phases, ["plan", "research", "build", "verify"]);
        assert_eq!(with("hooks:").hooks.len(), 2);
        std::fs::write(state.config(), "mine").unwrap();
        let report = init(&state).unwrap();
        assert_eq!(report.kept.len(), 4);
        assert_eq!(std::fs::read_to_string(state.config()).unwrap(), "mine");
        assert_eq!(complete_gitignore(&state).unwrap(), Vec::<&str>::new());
    }

    #[test]
    fn an_older_gitignore_gets_the_missing_entries_and_keeps_the_users_lines() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateDir::in_workdir(dir.path());
        std::fs::create_dir_all(state.root()).unwrap();
        let path = state.root().join(".gitignore");
        assert!(complete_gitignore(&state).unwrap().is_empty());
        assert!(!path.exists(), "a removed .gitignore stays removed");
        let older = GITIGNORE_TEMPLATE
            .replace("/plan.json\n", "")
            .replace("/curator.json\n", "")
            .replace("/mission-id\n", "")
            + "my-own-file\n!mission-id";
        std::fs::write(&path, &older).unwrap();
        assert_eq!(
            complete_gitignore(&state).unwrap(),
            ["/plan.json", "/curator.json"]
        );
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with(&older), "{text}");
        assert!(text.ends_with("!mission-id\n# Added by the harness: files it writes that this project did not ignore yet.\n/plan.json\n/curator.json\n"), "{text}");
        assert!(complete_gitignore(&state).unwrap().is_empty());
    }
}
