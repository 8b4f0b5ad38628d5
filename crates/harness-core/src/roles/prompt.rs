//! The prompt of each invocation, assembled from its layers. A pure function of its inputs, so
//! the same state always gives the same prompt, byte for byte.
//!
//! Order (top to bottom): L0 runtime context, the role's prompt, L4 identity, the feature's spec,
//! the continuation block, previous agent notes, L2 summary.

use std::path::PathBuf;

use crate::roles::lifecycle::checks::gate_checks;
use crate::spec::config::{Check, Config, Phase};
use crate::spec::features::Feature;
use crate::spec::layout::RunId;
use crate::spec::role::Role;
use crate::state::lifecycle::PhaseState;

/// L0: what run.sh injects at the top of every prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeContext {
    /// The feature being worked on.
    pub feature_id: String,
    /// The project directory (the agent's current directory).
    pub workdir: PathBuf,
    /// The `.harness/` directory.
    pub state_dir: PathBuf,
    pub run_id: RunId,
}

impl RuntimeContext {
    /// The `## Runtime context` block of DESIGN.md.
    pub fn render(&self) -> String {
        format!(
            "## Runtime context\n- FEATURE_ID={}\n- Working directory: {}\n- State directory: {}\n- Run ID: {}\n",
            self.feature_id,
            self.workdir.display(),
            self.state_dir.display(),
            self.run_id
        )
    }
}

/// The exact text whose presence in the agent's answer completes a feature.
pub fn completion_tag(promise: &str) -> String {
    format!("<promise>{promise}</promise>")
}

/// Tags whose literal form in an answer means something to the harness.
const ACTIVE_TAGS: [&str; 2] = ["promise", "verdict"];

/// Disarms the harness's tags in text that goes into a prompt but was not written by the harness
/// (notes holding an earlier answer, memory, the spec): an agent that echoes its prompt must never
/// complete, or pass, by accident. `<promise>` becomes `&lt;promise&gt;`, and so on.
pub fn defang(text: &str) -> String {
    let mut text = text.to_string();
    for tag in ACTIVE_TAGS {
        for form in [format!("<{tag}>"), format!("</{tag}>")] {
            if text.contains(&form) {
                let escaped = form.replace('<', "&lt;").replace('>', "&gt;");
                text = text.replace(&form, &escaped);
            }
        }
    }
    text
}

/// A prompt in layers, top to bottom, each a section separated by a blank line. Only what is
/// added with [`Prompt::harness_words`] is kept as is; every other layer may quote an earlier
/// answer or a user's text, so its harness tags are disarmed with [`defang`].
#[derive(Debug, Clone)]
pub struct Prompt {
    sections: Vec<String>,
}

impl Prompt {
    /// Starts with L0 and the role's prompt (`roles/<role>.md`).
    pub fn new(runtime: &RuntimeContext, role_prompt: &str) -> Self {
        Self {
            sections: vec![defang(&runtime.render()), defang(role_prompt)],
        }
    }

    /// L4: the role's identity, when it has content (as `memory::read_identity_layer` reads
    /// it).
    pub fn identity(self, role: Role, identity: Option<&str>) -> Self {
        match identity {
            Some(identity) => self.untrusted(&format!(
                "## Your identity (cross-mission memory for the {role} role)\n\n{}",
                identity.trim()
            )),
            None => self,
        }
    }

    /// A layer of text from files or earlier answers.
    pub fn untrusted(mut self, text: &str) -> Self {
        self.sections.push(defang(text));
        self
    }

    /// A layer written by the harness itself (instructions that name the tags).
    pub fn harness_words(mut self, text: &str) -> Self {
        self.sections.push(text.to_string());
        self
    }

    /// `## Previous Agent Notes`, when there are notes (already bounded: see `notes::for_prompt`).
    pub fn notes(self, notes: Option<&str>) -> Self {
        match notes {
            Some(notes) => self.untrusted(&format!(
                "## Previous Agent Notes\n\nWhat earlier attempts on this feature printed last (oldest first):\n\n{}",
                notes.trim()
            )),
            None => self,
        }
    }

    /// L2 at the bottom: summary.md, when it has content.
    pub fn memory(self, summary: Option<&str>) -> Self {
        match summary {
            Some(summary) => self.untrusted(&format!(
                "## Memory (curated from prior iterations of this run)\n\n{}",
                summary.trim()
            )),
            None => self,
        }
    }

    pub fn render(&self) -> String {
        join_sections(&self.sections)
    }

    /// Each layer's name (its first line, without the heading marks) and estimated tokens.
    pub fn layer_sizes(&self) -> Vec<(String, usize)> {
        self.sections
            .iter()
            .filter(|section| !section.trim().is_empty())
            .map(|section| {
                let first = section.trim().lines().next().unwrap_or("");
                let name = first.trim_start_matches('#').trim();
                let name: String = name.chars().take(60).collect();
                (name, estimate_tokens(section))
            })
            .collect()
    }
}

/// Estimated tokens of `text`: one per four characters, rounded up — the usual rule of thumb
/// for English and code with current tokenizers; good enough for budgets of prompt layers.
pub fn estimate_tokens(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

/// Everything the worker's prompt is made of.
#[derive(Debug, Clone)]
pub struct WorkerPrompt<'a> {
    /// L0.
    pub runtime: &'a RuntimeContext,
    /// `roles/worker.md`.
    pub role: &'a str,
    /// `identity/worker.md`, when it has content.
    pub identity: Option<&'a str>,
    /// The feature's spec from features.yaml.
    pub feature: &'a Feature,
    /// This iteration (1-based).
    pub iteration: u32,
    /// The guardrail.
    pub max_iterations: u32,
    /// The promise word.
    pub promise: &'a str,
    /// The feature's notes, when there are any.
    pub notes: Option<&'a str>,
    /// `summary.md`, when it has content.
    pub summary: Option<&'a str>,
    /// The feature's phase and the gate its promise goes through.
    pub lifecycle: Lifecycle<'a>,
}

/// What the worker's prompt says of the feature's lifecycle.
#[derive(Debug, Clone, Default)]
pub struct Lifecycle<'a> {
    /// Every phase of config.yaml, and the one the feature is in; none without phases.
    pub phase: Option<(&'a [Phase], &'a PhaseState)>,
    /// The checks the promise must pass.
    pub checks: Vec<&'a Check>,
}

impl<'a> Lifecycle<'a> {
    /// The lifecycle of a feature in `phase` (its index and state; `None` without phases) under
    /// `config`.
    pub fn of(config: &'a Config, phase: Option<(usize, &'a PhaseState)>) -> Self {
        Lifecycle {
            phase: phase.map(|(_, state)| (&config.phases[..], state)),
            checks: gate_checks(config, phase.map(|(index, _)| index)),
        }
    }

    /// Whether the promise ends only the current phase, not the feature.
    fn ends_a_phase_only(&self) -> bool {
        self.phase
            .is_some_and(|(_, phase)| phase.number < phase.count)
    }

    /// The `## Phase: …` section (what the phase is for, its instructions, its gate), or the
    /// `## Checks` section without phases; empty when there is neither.
    pub fn render(&self) -> String {
        let mut text = match self.phase {
            Some((phases, current)) => {
                let names: Vec<&str> = phases.iter().map(|p| p.name.as_str()).collect();
                let mut text = format!(
                    "## Phase: {}\n\nThis feature is worked in {} phases, one after the other: {}. You are in phase {}, {}.",
                    current.label(),
                    current.count,
                    names.join(" → "),
                    current.number,
                    current.name
                );
                let config = phases.iter().find(|p| p.name == current.name);
                if let Some(instructions) = config
                    .map(|p| p.instructions.trim())
                    .filter(|i| !i.is_empty())
                {
                    text.push_str(&format!("\n\n{instructions}"));
                }
                if self.ends_a_phase_only() {
                    text.push_str("\n\nYour completion promise ends this phase, not the whole feature: the harness then checks the phase's gate, and when it passes, a fresh agent starts the next phase. Do only this phase's work.");
                }
                if let Some(allow) = config.and_then(|p| p.allow.as_ref()) {
                    let globs: Vec<String> = allow.iter().map(|g| format!("`{g}`")).collect();
                    text.push_str(&format!(
                        "\n\nIn this phase only these paths may change (relative to the top of the repository): {}. A change anywhere else, committed or not, refuses the promise.",
                        if globs.is_empty() { "none".to_string() } else { globs.join(", ") }
                    ));
                }
                text
            }
            None if self.checks.is_empty() => return String::new(),
            None => "## Checks".to_string(),
        };
        if !self.checks.is_empty() {
            let checks: Vec<String> = self
                .checks
                .iter()
                .map(|check| format!("- `{}`: `{}`", check.name, check.command))
                .collect();
            text.push_str(&format!(
                "\n\nAfter your promise, the harness runs these checks in the working directory; if one fails, the promise does not count and the next attempt gets its output:\n{}",
                checks.join("\n")
            ));
        }
        text
    }
}

impl WorkerPrompt<'_> {
    /// The whole prompt text.
    pub fn render(&self) -> String {
        let prompt = self.build().render();
        debug_assert!(!prompt.contains(&completion_tag(self.promise)));
        prompt
    }

    /// The prompt in its layers.
    pub fn build(&self) -> Prompt {
        Prompt::new(self.runtime, self.role)
            .identity(Role::Worker, self.identity)
            .untrusted(&feature_spec(self.feature))
            .untrusted(&self.lifecycle.render())
            .harness_words(&self.continuation())
            .notes(self.notes)
            .memory(self.summary)
    }

    /// The continuation block (seed 001): objective, iteration count, the promise, and the
    /// instruction to review the workspace first.
    fn continuation(&self) -> String {
        let feature = self.feature;
        let first = self.iteration == 1;
        let (objective, when) = match self.lifecycle.phase {
            Some((_, phase)) if self.lifecycle.ends_a_phase_only() => (
                format!(
                    "do phase {} of feature {} ({})",
                    phase.label(),
                    feature.id,
                    feature.title.trim()
                ),
                "the work of this phase is done",
            ),
            _ => (
                format!(
                    "implement feature {} ({}) so that every acceptance criterion above holds",
                    feature.id,
                    feature.title.trim()
                ),
                "every acceptance criterion holds",
            ),
        };
        format!(
            "## Continuation\n\n\
             Objective: {objective}.\n\n\
             Iteration {iteration} of {max}. {memory}\n\n\
             Before you act, review your workspace files: the checklist and progress files you keep, \
             `git log` and `git status`, and the notes below. Leave the workspace so that a fresh \
             agent can carry on from it: commit your work and keep a progress file up to date.\n\n\
             When, and only when, {when}, finish with the completion promise \
             on a line of its own: the opening tag `<promise>`, then the word {promise}, then the \
             closing tag `</promise>`, written together with no spaces. If the work is not finished, \
             do not write it: say what is left instead, and the next iteration will continue.\n\n\
             To leave a lesson for later iterations and other features, print a line that starts with \
             `TRICK:`, `LESSON:`, `DECISION:`, `AVOID:` or `FAIL:` followed by one sentence.",
            iteration = self.iteration,
            max = self.max_iterations,
            promise = self.promise,
            memory = if first {
                "This is the first attempt at this feature."
            } else {
                "Your memory of the earlier iterations is gone; what they did is in the workspace and the notes."
            },
        )
    }
}

/// Sections separated by one blank line, the whole ending in one newline.
fn join_sections(sections: &[String]) -> String {
    let trimmed: Vec<&str> = sections
        .iter()
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .collect();
    format!("{}\n", trimmed.join("\n\n"))
}

/// The `## Feature` section: id, title, description, acceptance criteria, dependencies.
pub fn feature_spec(feature: &Feature) -> String {
    let mut text = format!("## Feature {}: {}\n", feature.id, feature.title.trim());
    if !feature.description.trim().is_empty() {
        text.push('\n');
        text.push_str(feature.description.trim());
        text.push('\n');
    }
    text.push_str("\n### Acceptance criteria\n\n");
    if feature.acceptance.is_empty() {
        text.push_str("- (none listed: the description is the spec)\n");
    }
    for criterion in &feature.acceptance {
        text.push_str(&format!("- {}\n", criterion.trim()));
    }
    if !feature.depends_on.is_empty() {
        let ids: Vec<&str> = feature.depends_on.iter().map(|d| d.as_str()).collect();
        text.push_str(&format!("\nBuilt on (already done): {}\n", ids.join(", ")));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::features::FeatureId;

    fn feature() -> Feature {
        Feature {
            id: FeatureId::parse("F-023").unwrap(),
            title: "Sign-up form".into(),
            description: "Build the form.".into(),
            acceptance: vec!["A new user can sign up.".into()],
            depends_on: vec![],
        }
    }

    fn runtime() -> RuntimeContext {
        RuntimeContext {
            feature_id: "F-023".into(),
            workdir: "/home/me/sheets-clone".into(),
            state_dir: "/home/me/sheets-clone/.harness".into(),
            run_id: RunId::parse("1777076234-worker-F-023").unwrap(),
        }
    }

    fn prompt(notes: Option<&str>, summary: Option<&str>, iteration: u32) -> String {
        let runtime = runtime();
        let feature = feature();
        WorkerPrompt {
            runtime: &runtime,
            role: "# Worker\nYou are the worker.",
            identity: Some("- always run the tests"),
            feature: &feature,
            iteration,
            max_iterations: 10,
            promise: "TASK_COMPLETE",
            notes,
            summary,
            lifecycle: Lifecycle::default(),
        }
        .render()
    }

    #[test]
    fn begins_with_the_runtime_context_of_the_design() {
        assert!(prompt(None, None, 1).starts_with(
            "## Runtime context\n- FEATURE_ID=F-023\n- Working directory: /home/me/sheets-clone\n- State directory: /home/me/sheets-clone/.harness\n- Run ID: 1777076234-worker-F-023\n\n# Worker"
        ));
    }

    #[test]
    fn layers_come_in_order_with_summary_at_the_bottom() {
        let text = prompt(Some("## Attempt 1 — worker"), Some("## Lessons\n- x"), 3);
        let order = [
            "## Runtime context",
            "# Worker",
            "## Your identity (cross-mission memory for the worker role)",
            "## Feature F-023: Sign-up form",
            "- A new user can sign up.",
            "## Continuation",
            "Iteration 3 of 10.",
            "review your workspace files",
            "## Previous Agent Notes",
            "## Attempt 1 — worker",
            "## Memory (curated from prior iterations of this run)",
            "- x",
        ];
        let positions: Vec<usize> = order
            .iter()
            .map(|needle| {
                text.find(needle)
                    .unwrap_or_else(|| panic!("{needle:?} missing"))
            })
            .collect();
        assert!(positions.windows(2).all(|w| w[0] < w[1]), "{positions:?}");
        assert!(text.ends_with("- x\n"));
    }

    #[test]
    fn optional_layers_are_left_out_when_empty() {
        let text = prompt(None, None, 1);
        assert!(!text.contains("Previous Agent Notes"));
        assert!(!text.contains("Memory (curated"));
        assert!(text.contains("This is the first attempt"));
    }

    #[test]
    fn the_prompt_never_holds_the_completion_tag() {
        let earlier = "Done! <promise>TASK_COMPLETE</promise> <verdict>PASS</verdict>";
        let text = prompt(Some(earlier), Some(earlier), 2);
        assert!(!text.contains("<promise>TASK_COMPLETE</promise>"));
        assert!(!text.contains("<verdict>PASS</verdict>"));
        assert!(text.contains("&lt;promise&gt;TASK_COMPLETE&lt;/promise&gt;"));
        // It still tells the agent how to finish.
        assert!(text.contains(
            "`<promise>`, then the word TASK_COMPLETE, then the closing tag `</promise>`"
        ));
    }

    #[test]
    fn layers_are_named_and_sized() {
        let runtime = runtime();
        let prompt = Prompt::new(&runtime, "# Role: worker\nWork.")
            .untrusted("## Feature F-023: Sign-up form\nx")
            .memory(Some("- a lesson"));
        let names: Vec<String> = prompt.layer_sizes().into_iter().map(|(n, _)| n).collect();
        assert_eq!(
            names,
            [
                "Runtime context",
                "Role: worker",
                "Feature F-023: Sign-up form",
                "Memory (curated from prior iterations of this run)"
            ]
        );
        assert_eq!(estimate_tokens("abcdefgh"), 2);
        assert_eq!(estimate_tokens("abcdefghi"), 3);
    }

    #[test]
    fn same_inputs_give_the_same_bytes() {
        assert_eq!(
            prompt(Some("n"), Some("s"), 2),
            prompt(Some("n"), Some("s"), 2)
        );
    }
}
