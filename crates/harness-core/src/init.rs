//! `./run.sh init`: a new `.harness/` with a commented config.yaml, a mission.md template, a
//! features.yaml template and a .gitignore for the run-time files. It never overwrites a file.

use std::io;
use std::path::PathBuf;

use crate::atomic::create_new;
use crate::layout::StateDir;

/// The config.yaml written by `init`.
pub const CONFIG_TEMPLATE: &str = r#"# harness configuration for this project. Every key is described in the harness README.

agent:
  # The agent's argv. Any command that reads a prompt and works in the current directory will do.
  #   Claude Code: ["claude", "-p", "--dangerously-skip-permissions"]
  #                (as root it also needs IS_SANDBOX=1 in the environment)
  #   Codex:       ["codex", "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "-"]
  command: ["claude", "-p", "--dangerously-skip-permissions"]
  # How the prompt reaches the agent: stdin | arg (appended as the last argument)
  # | file (its path is in $HARNESS_PROMPT_FILE).
  prompt_via: stdin
  # How to read the agent's answer: text | claude-stream-json
  # (with claude: -p --output-format stream-json --verbose, which also reports turns and cost).
  output_format: text
  # Time limit of one invocation, in seconds; then the agent's whole process tree is stopped.
  timeout_secs: 1800
  # Seconds between SIGTERM and SIGKILL when the agent has to be stopped.
  kill_grace_secs: 5

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
#       command: ["claude", "-p", "--model", "opus", "--dangerously-skip-permissions"]
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
pub const GITIGNORE_TEMPLATE: &str = r#"# The harness's run-time state stays out of the project's commits. The spec and the curated
# memory (config.yaml, mission.md, features.yaml, summary.md, MEMORY.md) are worth tracking.
/runs/
/locks/
/notes/
/archive/
/raw.md
/plans/
/worktrees/
/scripted-agent/
"#;

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
    std::fs::create_dir_all(state.root())?;
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
    use crate::config::Config;
    use crate::features::FeatureList;

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
        std::fs::write(state.config(), "mine").unwrap();
        let report = init(&state).unwrap();
        assert_eq!(report.kept.len(), 4);
        assert_eq!(std::fs::read_to_string(state.config()).unwrap(), "mine");
    }
}
