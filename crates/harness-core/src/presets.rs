//! Agent presets: the headless form of each common CLI, so that `agent: {preset: claude}` is all
//! a config needs. A preset fixes the argv, how the prompt is delivered, how the output is read,
//! and the environment the CLI needs; `args` adds to it and every other agent key overrides it.

use serde::{Deserialize, Serialize};

use crate::config::{OutputFormat, PromptVia};

/// The placeholder in an argv that stands for the prompt file's path (for CLIs that take the
/// prompt as a file argument, such as aider's `--message-file`).
pub const PROMPT_FILE_PLACEHOLDER: &str = "{prompt_file}";

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

    /// What the preset fixes.
    pub fn spec(self) -> PresetSpec {
        match self {
            // -p with stream-json needs --verbose; as root, skip-permissions needs IS_SANDBOX=1.
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
                ],
                context_window: Some(200_000),
            },
            // The trailing `-` makes codex read the prompt from stdin (it waits for EOF).
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
                output_format: OutputFormat::Text,
                env: &[],
                context_window: None,
            },
            Preset::Gemini => PresetSpec {
                head: &["gemini", "--output-format", "stream-json", "--yolo"],
                tail: &[],
                prompt_via: PromptVia::Stdin,
                output_format: OutputFormat::Text,
                env: &[],
                context_window: None,
            },
            Preset::Opencode => PresetSpec {
                head: &["opencode", "run", "--format", "json"],
                tail: &[],
                prompt_via: PromptVia::Arg,
                output_format: OutputFormat::Text,
                env: &[],
                context_window: None,
            },
            Preset::Aider => PresetSpec {
                head: &["aider", "--yes-always", "--no-auto-commits", "--no-stream"],
                tail: &["--message-file", PROMPT_FILE_PLACEHOLDER],
                prompt_via: PromptVia::File,
                output_format: OutputFormat::Text,
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
