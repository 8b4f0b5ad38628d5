//! Agent presets: the headless form of each common CLI, so that `agent: {preset: claude}` is all
//! a config needs. A preset fixes the argv, how the prompt is delivered, how the output is read,
//! and the environment the CLI needs; `args` go between the preset's head and tail (so Codex's
//! trailing `-` stays last) and every other agent key overrides it. Where each form comes from
//! is said on its arm of [`Preset::spec`]; a sample of each CLI's output is in `tests/fixtures/`.

use serde::{Deserialize, Serialize};

/// The placeholder in an argv that stands for the prompt file's path (for CLIs that take the
/// prompt as a file argument, such as aider's `--message-file`).
pub const PROMPT_FILE_PLACEHOLDER: &str = "{prompt_file}";

/// How the prompt is delivered to the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PromptVia {
    /// Written to the agent's standard input, which is then closed.
    #[default]
    Stdin,
    /// Appended as the last argument.
    Arg,
    /// A file whose path is in `$HARNESS_PROMPT_FILE`.
    File,
}

/// The shape of the agent's output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OutputFormat {
    /// Plain text: all of it is the agent's answer.
    #[default]
    Text,
    /// Claude Code's `--output-format stream-json`: the final `result` event is the answer.
    ClaudeStreamJson,
    /// Codex's `exec --json`: the turn's last `agent_message` item is the answer,
    /// `turn.completed.usage` the tokens (no cost, no turn count).
    CodexJson,
    /// Gemini CLI's `--output-format stream-json`: the assistant's text after its last tool call
    /// is the answer; the `result` event's `stats` the tokens (no cost).
    GeminiStreamJson,
    /// opencode's `run --format json`: the text of the last step is the answer; the
    /// `step_finish` parts' `cost` and `tokens`, summed, the usage.
    OpencodeJson,
    /// aider's plain text (`--no-stream --no-pretty`): all of it is the answer; its
    /// `Tokens: … Cost: …` lines give the usage.
    Aider,
}

/// A known agent CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Preset {
    /// Claude Code.
    Claude,
    /// OpenAI Codex CLI.
    Codex,
    /// Google Gemini CLI.
    Gemini,
    /// opencode.
    Opencode,
    /// aider.
    Aider,
    /// Any command given in `command`, plain text out.
    Command,
}

/// What a preset fixes.
#[derive(Debug, Clone, PartialEq)]
pub struct PresetSpec {
    /// The argv before the user's extra `args`.
    pub head: &'static [&'static str],
    /// The argv after them (e.g. codex's trailing `-`, "read the prompt from stdin").
    pub tail: &'static [&'static str],
    /// How the prompt reaches the CLI.
    pub prompt_via: PromptVia,
    /// How its output is read.
    pub output_format: OutputFormat,
    /// Environment it needs.
    pub env: &'static [(&'static str, &'static str)],
    /// Its model's context window, for the handoff, when one is typical.
    pub context_window: Option<u64>,
}

impl Preset {
    /// The preset's name in config.yaml.
    pub fn name(self) -> &'static str {
        match self {
            Preset::Claude => "claude",
            Preset::Codex => "codex",
            Preset::Gemini => "gemini",
            Preset::Opencode => "opencode",
            Preset::Aider => "aider",
            Preset::Command => "command",
        }
    }

    /// What the preset fixes. Each form was checked against the CLI's own source or docs (named
    /// on each arm); Claude's and Codex's also against their captured output
    /// (`shared/fixtures/agent-output/`). The prompt goes on stdin wherever the CLI reads it
    /// there: a long prompt as an argument can stall some CLIs, and runs into argv limits.
    pub fn spec(self) -> PresetSpec {
        match self {
            // Captured with Claude Code 2.1.197: `-p` with stream-json needs `--verbose`; as
            // root, skip-permissions refuses unless IS_SANDBOX=1; without a prompt on stdin it
            // waits 3 s and warns. The non-essential-traffic switch keeps it from calling home.
            Preset::Claude => PresetSpec {
                head: &[
                    "claude",
                    "-p",
                    "--output-format",
                    "stream-json",
                    "--verbose",
                    "--dangerously-skip-permissions",
                ],
                tail: &[],
                prompt_via: PromptVia::Stdin,
                output_format: OutputFormat::ClaudeStreamJson,
                env: &[
                    ("IS_SANDBOX", "1"),
                    ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
                    // Its own retries (10 by default, with back-off from 500 ms to 32 s or what
                    // the server asks, in `services/api/withRetry.ts`) held a failing iteration
                    // in the CLI until timeout_secs: two quick ones absorb a blip without losing
                    // the agent's context, and the harness waits out the rest (README, "Setbacks").
                    ("CLAUDE_CODE_MAX_RETRIES", "2"),
                ],
                context_window: Some(200_000),
            },
            // Captured with Codex 0.169.0; `codex-rs/exec/src/cli.rs`: the prompt argument `-`
            // (or none) reads the instructions from stdin, to EOF: an open pipe waits forever,
            // which the harness avoids by closing stdin after the prompt. `--skip-git-repo-check`
            // lets it run outside a git repository. Its stream carries no context size, so there
            // is no window for a live handoff. Its retries are left as they are: the built-in
            // `openai` provider's (`request_max_retries` 4, `stream_max_retries` 5, back-off from
            // 200 ms: seconds in all) cannot be changed with `-c` — Codex keeps a built-in provider
            // over a user's entry of the same name, and a partial entry does not parse — and the
            // harness waits out the error Codex reports once they run out.
            Preset::Codex => PresetSpec {
                head: &[
                    "codex",
                    "exec",
                    "--json",
                    "--skip-git-repo-check",
                    "--dangerously-bypass-approvals-and-sandbox",
                ],
                tail: &["-"],
                prompt_via: PromptVia::Stdin,
                output_format: OutputFormat::CodexJson,
                env: &[],
                context_window: None,
            },
            // `docs/cli/headless.md`, `packages/cli/src/gemini.tsx`: a stdin that is not a
            // terminal makes the CLI headless and is read (to EOF, up to 8 MB) as the prompt, so
            // no `-p` (which takes the prompt as its value) is needed. `--approval-mode yolo`
            // replaces the deprecated `--yolo`. Where folder trust is on, an untrusted folder
            // stops a headless run: GEMINI_TRUST_WORKSPACE trusts the working directory for the
            // session (`docs/cli/trusted-folders.md`). Its stream carries no context size.
            Preset::Gemini => PresetSpec {
                head: &[
                    "gemini",
                    "--output-format",
                    "stream-json",
                    "--approval-mode",
                    "yolo",
                ],
                tail: &[],
                prompt_via: PromptVia::Stdin,
                output_format: OutputFormat::GeminiStreamJson,
                env: &[("GEMINI_TRUST_WORKSPACE", "true")],
                context_window: None,
            },
            // `packages/opencode/src/cli/cmd/run.ts`: a stdin that is not a terminal is read to
            // EOF and is the message when none is given as arguments. Unattended, `run` rejects
            // whatever permission it is asked for; OPENCODE_PERMISSION (an environment variable
            // of its CLI docs, older than the `--auto`/`--dangerously-skip-permissions` flags,
            // which came and were renamed across versions) allows everything up front instead,
            // and OPENCODE_DISABLE_AUTOUPDATE keeps it from updating itself mid-run. The context
            // window depends on the model chosen.
            Preset::Opencode => PresetSpec {
                head: &["opencode", "run", "--format", "json"],
                tail: &[],
                prompt_via: PromptVia::Stdin,
                output_format: OutputFormat::OpencodeJson,
                env: &[
                    ("OPENCODE_PERMISSION", r#"{"*":"allow"}"#),
                    ("OPENCODE_DISABLE_AUTOUPDATE", "true"),
                ],
                context_window: None,
            },
            // `aider/website/docs/config/options.md`, `docs/scripting.html`: `--message-file`
            // sends the file's text as one message, then exits. `--yes-always` answers every
            // question, so the update check (which offers to pip-install a new version) and the
            // analytics opt-in are turned off rather than answered yes; `--no-pretty` keeps
            // colour codes out of the text. aider's output is text, with a usage report line.
            Preset::Aider => PresetSpec {
                head: &[
                    "aider",
                    "--yes-always",
                    "--no-auto-commits",
                    "--no-stream",
                    "--no-pretty",
                    "--no-check-update",
                    "--no-analytics",
                ],
                tail: &["--message-file", PROMPT_FILE_PLACEHOLDER],
                prompt_via: PromptVia::File,
                output_format: OutputFormat::Aider,
                env: &[],
                context_window: None,
            },
            Preset::Command => PresetSpec {
                head: &[],
                tail: &[],
                prompt_via: PromptVia::Stdin,
                output_format: OutputFormat::Text,
                env: &[],
                context_window: None,
            },
        }
    }
}

impl Preset {
    /// What the CLI writes of its own outside the project (its settings, sessions, logins), which
    /// a sandbox leaves writable besides `sandbox.writable`: each CLI's documented home. A
    /// directory ends with `/` (made if missing, so the CLI can write in it); a file does not
    /// (left out while it does not exist).
    pub fn sandbox_writable(self) -> &'static [&'static str] {
        match self {
            // `~/.claude/` (settings, sessions, todos), `~/.claude.json` (its state and login),
            // `~/.local/state/claude/` (its version locks). It saves `~/.claude.json` through a
            // lock directory and a temporary file beside it, which a read-only home refuses; it
            // then writes the file in place, which the bind allows.
            Preset::Claude => &["~/.claude/", "~/.claude.json", "~/.local/state/claude/"],
            // CODEX_HOME, `~/.codex/` by default: config, logins, sessions, logs.
            Preset::Codex => &["~/.codex/"],
            // `~/.gemini/`: settings, OAuth credentials, its temporary files.
            Preset::Gemini => &["~/.gemini/"],
            // The XDG directories of `packages/opencode/src/global`: data, config, cache, state.
            Preset::Opencode => &[
                "~/.local/share/opencode/",
                "~/.config/opencode/",
                "~/.cache/opencode/",
                "~/.local/state/opencode/",
            ],
            // `~/.aider/`: analytics id and caches (its chat history is in the project).
            Preset::Aider => &["~/.aider/"],
            Preset::Command => &[],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::config::{AgentConfig, AgentSpec};

    fn resolve(preset: Preset, args: &[&str]) -> AgentConfig {
        AgentConfig::try_from(AgentSpec {
            preset: Some(preset),
            args: args.iter().map(|a| a.to_string()).collect(),
            ..Default::default()
        })
        .unwrap()
    }

    #[test]
    fn claude_runs_headless_with_stream_json_on_stdin() {
        let agent = resolve(Preset::Claude, &["--model", "opus"]);
        assert_eq!(
            agent.command,
            [
                "claude",
                "-p",
                "--output-format",
                "stream-json",
                "--verbose",
                "--dangerously-skip-permissions",
                "--model",
                "opus"
            ]
        );
        assert_eq!(agent.prompt_via, PromptVia::Stdin);
        assert_eq!(agent.output_format, OutputFormat::ClaudeStreamJson);
        assert!(agent.env.contains(&("IS_SANDBOX".into(), "1".into())));
        assert!(agent
            .env
            .contains(&("CLAUDE_CODE_MAX_RETRIES".into(), "2".into())));
        assert_eq!(agent.context_window, Some(200_000));
    }

    #[test]
    fn codex_keeps_the_stdin_dash_last() {
        let agent = resolve(Preset::Codex, &["--model", "gpt-5-codex"]);
        assert_eq!(
            agent.command,
            [
                "codex",
                "exec",
                "--json",
                "--skip-git-repo-check",
                "--dangerously-bypass-approvals-and-sandbox",
                "--model",
                "gpt-5-codex",
                "-"
            ]
        );
        assert_eq!(agent.prompt_via, PromptVia::Stdin);
        assert_eq!(agent.output_format, OutputFormat::CodexJson);
        assert_eq!(agent.context_window, None);
    }

    #[test]
    fn gemini_reads_the_prompt_from_stdin_without_p() {
        let agent = resolve(Preset::Gemini, &["-m", "gemini-2.5-flash"]);
        assert_eq!(
            agent.command,
            [
                "gemini",
                "--output-format",
                "stream-json",
                "--approval-mode",
                "yolo",
                "-m",
                "gemini-2.5-flash"
            ]
        );
        assert_eq!(agent.prompt_via, PromptVia::Stdin);
        assert_eq!(agent.output_format, OutputFormat::GeminiStreamJson);
        assert!(agent
            .env
            .contains(&("GEMINI_TRUST_WORKSPACE".into(), "true".into())));
    }

    #[test]
    fn opencode_reads_the_prompt_from_stdin_and_is_allowed_its_tools() {
        let agent = resolve(Preset::Opencode, &["--model", "anthropic/claude-sonnet-4"]);
        assert_eq!(
            agent.command,
            [
                "opencode",
                "run",
                "--format",
                "json",
                "--model",
                "anthropic/claude-sonnet-4"
            ]
        );
        assert_eq!(agent.prompt_via, PromptVia::Stdin);
        assert_eq!(agent.output_format, OutputFormat::OpencodeJson);
        assert!(agent
            .env
            .contains(&("OPENCODE_PERMISSION".into(), r#"{"*":"allow"}"#.into())));
    }

    #[test]
    fn aider_takes_the_prompt_file_last() {
        let agent = resolve(Preset::Aider, &["--model", "sonnet"]);
        assert_eq!(
            agent.command,
            [
                "aider",
                "--yes-always",
                "--no-auto-commits",
                "--no-stream",
                "--no-pretty",
                "--no-check-update",
                "--no-analytics",
                "--model",
                "sonnet",
                "--message-file",
                PROMPT_FILE_PLACEHOLDER
            ]
        );
        assert_eq!(agent.prompt_via, PromptVia::File);
        assert_eq!(agent.output_format, OutputFormat::Aider);
    }

    #[test]
    fn every_structured_cli_has_its_own_format_and_keys_override_the_preset() {
        let formats: Vec<OutputFormat> = [
            Preset::Claude,
            Preset::Codex,
            Preset::Gemini,
            Preset::Opencode,
            Preset::Aider,
        ]
        .into_iter()
        .map(|preset| preset.spec().output_format)
        .collect();
        assert!(!formats.contains(&OutputFormat::Text), "{formats:?}");
        let agent = AgentConfig::try_from(AgentSpec {
            preset: Some(Preset::Gemini),
            output_format: Some(OutputFormat::Text),
            prompt_via: Some(PromptVia::Arg),
            env: [("GEMINI_TRUST_WORKSPACE".to_string(), "false".to_string())].into(),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(agent.output_format, OutputFormat::Text);
        assert_eq!(agent.prompt_via, PromptVia::Arg);
        assert_eq!(
            agent.env,
            [("GEMINI_TRUST_WORKSPACE".to_string(), "false".to_string())]
        );
    }
}
