//! The sign of life while an agent runs: one status line on stderr — feature, role, iteration,
//! elapsed time, tokens and cost so far (where the agent reports them), the last tool or action
//! seen — redrawn in place on a terminal, or written as plain timestamped lines otherwise.

use std::io::Write;
use std::time::{Duration, Instant};

use crate::agent::Usage;
use crate::base::time;
use crate::spec::role::Role;

/// How often a terminal's status line is redrawn at most (and when the agent is silent).
pub const TERMINAL_TICK: Duration = Duration::from_secs(1);
/// How often a plain line is written when nothing new happened.
pub const PLAIN_TICK: Duration = Duration::from_secs(60);

/// Who is running, for the status line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Label {
    /// The feature (or `-` for the mission's planner).
    pub feature: String,
    pub role: Role,
    /// The worker iteration and the guardrail, for the roles where they mean something (the
    /// worker's, the validator's that follows it); `None` for a run on the whole mission.
    pub iteration: Option<(u32, u32)>,
}

/// What the status line shows, at one moment.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Snapshot {
    /// Time since the agent started.
    pub elapsed: Duration,
    pub usage: Usage,
    /// The largest context seen, when no token total is reported yet.
    pub context_tokens: Option<u64>,
    /// The last tool or action.
    pub last_action: Option<String>,
}

/// The status line's text: `F-001 worker 3/10 · 2m05s · 12.3k tokens · $0.42 · Edit`.
pub fn line(label: &Label, snapshot: &Snapshot) -> String {
    let who = match label.iteration {
        Some((iteration, max)) => format!("{} {} {iteration}/{max}", label.feature, label.role),
        None => format!("{} {}", label.feature, label.role),
    };
    let mut parts = vec![who, duration(snapshot.elapsed)];
    if let Some(tokens) = snapshot.usage.total_tokens().or(snapshot.context_tokens) {
        parts.push(format!("{} tokens", count(tokens)));
    }
    if let Some(cost) = snapshot.usage.cost_usd {
        parts.push(format!("${cost:.2}"));
    }
    if let Some(action) = &snapshot.last_action {
        parts.push(shown_action(action));
    }
    parts.join(" · ")
}

/// The most of the last action the line shows.
const ACTION_CHARS: usize = 40;

/// The action as the line shows it: its start.
fn shown_action(action: &str) -> String {
    action.chars().take(ACTION_CHARS).collect()
}

fn duration(elapsed: Duration) -> String {
    let secs = elapsed.as_secs();
    match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m{:02}s", secs / 60, secs % 60),
        _ => format!("{}h{:02}m", secs / 3600, secs % 3600 / 60),
    }
}

fn count(tokens: u64) -> String {
    match tokens {
        0..1_000 => tokens.to_string(),
        1_000..1_000_000 => format!("{:.1}k", tokens as f64 / 1e3),
        _ => format!("{:.1}M", tokens as f64 / 1e6),
    }
}

/// Draws the status line.
pub struct Progress {
    label: Label,
    terminal: bool,
    out: Box<dyn Write + Send>,
    last_drawn: Option<Instant>,
    last_text: String,
    shown: bool,
    /// Set while the agent's output stops mid-line: nothing is drawn then.
    held: bool,
}

impl Progress {
    /// A status line on stderr, redrawn in place when stderr is a terminal.
    pub fn stderr(label: Label) -> Self {
        // SAFETY: isatty only inspects the descriptor.
        let terminal = unsafe { libc::isatty(libc::STDERR_FILENO) } == 1;
        Self::new(label, terminal, Box::new(std::io::stderr()))
    }

    /// A status line written to `out`, as on a terminal or not.
    pub fn new(label: Label, terminal: bool, out: Box<dyn Write + Send>) -> Self {
        Self {
            label,
            terminal,
            out,
            last_drawn: None,
            last_text: String::new(),
            shown: false,
            held: false,
        }
    }

    /// How long the line may stay as it is before it is redrawn anyway.
    pub fn tick(&self) -> Duration {
        if self.terminal {
            TERMINAL_TICK
        } else {
            PLAIN_TICK
        }
    }

    /// Shows the state now: on a terminal at most once a tick; as plain lines when the last
    /// action changed or a tick passed (`force` draws anyway).
    pub fn update(&mut self, snapshot: &Snapshot, force: bool) {
        let text = line(&self.label, snapshot);
        if self.held {
            // Drawn after the line of output ends instead: never inside it.
            self.last_text = text;
            return;
        }
        let due = self
            .last_drawn
            .is_none_or(|drawn| drawn.elapsed() >= self.tick());
        if self.terminal {
            if force || due {
                let _ = write!(self.out, "\r\x1b[2K{text}");
                let _ = self.out.flush();
                self.shown = true;
                self.last_drawn = Some(Instant::now());
            }
        } else {
            let action_changed = snapshot.last_action.as_deref().is_some_and(|action| {
                !self.last_text.is_empty()
                    && !self
                        .last_text
                        .ends_with(&format!(" · {}", shown_action(action)))
            });
            if force || due || action_changed {
                // One write: a line of its own, not pieces among other processes' lines.
                let line = format!("[{}] {text}\n", time::format(time::now()));
                let _ = self.out.write_all(line.as_bytes());
                self.last_drawn = Some(Instant::now());
            }
        }
        self.last_text = text;
    }

    /// Takes the line off the terminal, before other output is written there.
    pub fn clear(&mut self) {
        if self.terminal && self.shown {
            let _ = write!(self.out, "\r\x1b[2K");
            let _ = self.out.flush();
            self.shown = false;
        }
    }

    /// Says whether the output written last stopped mid-line: while it did, the status line is
    /// not drawn, not even in plain lines, since stdout and stderr may be the same terminal or
    /// file.
    pub fn hold(&mut self, mid_line: bool) {
        self.held = mid_line;
    }

    /// Puts the last line back after other output (not while held).
    pub fn restore(&mut self) {
        if self.terminal && !self.held && !self.last_text.is_empty() && !self.shown {
            let _ = write!(self.out, "\r\x1b[2K{}", self.last_text);
            let _ = self.out.flush();
            self.shown = true;
        }
    }
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Progress")
            .field("label", &self.label)
            .field("terminal", &self.terminal)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    fn label() -> Label {
        Label {
            feature: "F-001".into(),
            role: Role::Worker,
            iteration: Some((3, 10)),
        }
    }

    #[test]
    fn the_line_says_what_is_known_and_nothing_else() {
        let bare = Snapshot {
            elapsed: Duration::from_secs(125),
            ..Snapshot::default()
        };
        assert_eq!(line(&label(), &bare), "F-001 worker 3/10 · 2m05s");
        let full = Snapshot {
            elapsed: Duration::from_secs(3725),
            usage: Usage {
                input_tokens: Some(12_000),
                output_tokens: Some(345),
                cost_usd: Some(0.4249),
                ..Usage::default()
            },
            context_tokens: None,
            last_action: Some("Edit".into()),
        };
        assert_eq!(
            line(&label(), &full),
            "F-001 worker 3/10 · 1h02m · 12.3k tokens · $0.42 · Edit"
        );
        let planner = Label {
            feature: "-".into(),
            role: Role::Planner,
            iteration: None,
        };
        assert_eq!(line(&planner, &bare), "- planner · 2m05s");
    }

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_terminal_gets_one_line_redrawn_in_place_and_cleared() {
        let out = Shared::default();
        let mut progress = Progress::new(label(), true, Box::new(out.clone()));
        progress.update(&Snapshot::default(), true);
        progress.clear();
        progress.restore();
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        assert_eq!(
            text,
            "\r\x1b[2KF-001 worker 3/10 · 0s\r\x1b[2K\r\x1b[2KF-001 worker 3/10 · 0s"
        );
        assert!(!text.contains('\n'));
    }

    #[test]
    fn nothing_is_drawn_while_the_output_stops_mid_line() {
        for terminal in [true, false] {
            let out = Shared::default();
            let mut progress = Progress::new(label(), terminal, Box::new(out.clone()));
            progress.hold(true);
            progress.update(&Snapshot::default(), true);
            progress.restore();
            assert!(out.0.lock().unwrap().is_empty(), "terminal: {terminal}");
            progress.hold(false);
            progress.update(&Snapshot::default(), true);
            assert!(!out.0.lock().unwrap().is_empty(), "terminal: {terminal}");
        }
    }

    #[test]
    fn elsewhere_it_writes_plain_lines_when_the_action_changes() {
        let out = Shared::default();
        let mut progress = Progress::new(label(), false, Box::new(out.clone()));
        let mut snapshot = Snapshot::default();
        progress.update(&snapshot, true);
        progress.update(&snapshot, false);
        snapshot.last_action = Some("Bash".into());
        progress.update(&snapshot, false);
        // An action longer than the line shows is the same action the next time.
        snapshot.last_action = Some(format!("Bash: {}", "x".repeat(100)));
        progress.update(&snapshot, false);
        progress.update(&snapshot, false);
        progress.clear();
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(lines[0].starts_with('[') && lines[0].ends_with("] F-001 worker 3/10 · 0s"));
        assert!(lines[1].ends_with(" · Bash"));
        assert!(lines[2].contains(" · Bash: xxx"));
        assert!(!text.contains('\x1b'));
    }
}
