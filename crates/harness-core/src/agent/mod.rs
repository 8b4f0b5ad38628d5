//! Running an agent: the configured argv with the prompt on stdin, as an argument or in a file;
//! enclosed ([`enclosure`]: its own process group, its containment, its sandbox), so a timeout or
//! Ctrl-C stops everything it started and nothing outlives it; its output streamed to
//! `output.log` (and the terminal) while a bounded reader extracts what the harness needs — the
//! promise, turns, memory entries, the tail for the notes — in constant memory, whatever it prints.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::base::error::InputError;
use crate::base::fs;
use crate::base::signals;
use crate::spec::config::{AgentConfig, OutputFormat, Prices, PromptVia};
use crate::state::budget::Remaining;
use crate::state::memory::{self, Tag, MAX_ENTRIES_PER_INVOCATION};
use crate::state::run_state::Outcome;
use crate::state::usage::UsageRecord;
use progress::{Progress, Snapshot};
use transcript::Transcript;

pub mod contain;
pub mod enclosure;
pub mod format;
pub mod progress;
pub mod redact;
pub mod sandbox;
pub mod spawn;
pub mod transcript;

use contain::Containment;
pub use enclosure::Enclosure;
pub use format::{Event, Parser, Setback, SetbackKind, Usage};
pub use redact::{RedactingStream, Redactor};

/// The longest output line parsed (JSON events included); the rest of a longer line is still
/// logged but not parsed.
pub const MAX_LINE_BYTES: usize = 1 << 20;
/// How much of the end of the output is kept in memory for the notes.
pub const TAIL_BYTES: usize = 16 << 10;

/// One invocation of the agent.
#[derive(Debug, Clone)]
pub struct Invocation<'a> {
    /// The argv; `argv[0]` already resolved (see [`resolve_program`]).
    pub argv: &'a [String],
    /// How it is started and held: its sandbox and containment.
    pub enclosure: &'a Enclosure,
    pub prompt: &'a str,
    pub prompt_via: PromptVia,
    /// The file holding the prompt (given in `$HARNESS_PROMPT_FILE` when `prompt_via: file`).
    pub prompt_file: &'a Path,
    /// The agent's current directory.
    pub workdir: &'a Path,
    /// Extra environment (the `HARNESS_*` variables).
    pub env: &'a [(String, String)],
    pub timeout: Duration,
    /// Between SIGTERM and SIGKILL.
    pub kill_grace: Duration,
    pub output_format: OutputFormat,
    /// Exact texts to look for in the agent's answer (the completion tag, verdict tags).
    pub markers: &'a [String],
    /// Where the whole output goes.
    pub log: &'a Path,
    /// Whether the output is also copied to our stdout as it comes.
    pub echo: bool,
    /// Idle, final-answer grace, context and token limits.
    pub limits: Limits,
    /// Secrets to keep out of the log, the terminal and everything read from the output.
    pub redactor: Redactor,
    /// Who runs, for the live status line on stderr; `None` shows none (`--quiet`).
    pub progress: Option<progress::Label>,
}

/// How the agent process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// It exited with this code.
    Exited(i32),
    /// A signal the harness did not send killed it.
    Signaled(i32),
    /// The total time ran out; the harness stopped it.
    TimedOut,
    /// It printed nothing for the idle limit; the harness stopped it.
    IdleTimedOut,
    /// It gave its final answer but did not exit within the grace period; the harness stopped it.
    /// Its answer stands, as if it had exited cleanly.
    Lingered,
    /// Its context passed the handoff threshold (this many tokens); the harness stopped it so
    /// that a fresh agent continues.
    Handoff(u64),
    /// Its tokens (this many) passed what the budgets leave; the harness stopped it.
    OverBudget(u64),
    /// It ran out of what the time budgets leave; the harness stopped it.
    OutOfTime,
    /// Its reported cost (in cents) passed what the cost budgets leave; the harness stopped it.
    OverCost(u64),
    /// Ctrl-C / SIGTERM reached the harness, which stopped it.
    Interrupted(i32),
}

impl End {
    /// Whether the agent finished its work by itself (its answer counts).
    pub fn is_clean(self) -> bool {
        matches!(self, End::Exited(0) | End::Lingered)
    }

    /// How the attempt is recorded, from how the agent ended and whether the promise was in its
    /// answer.
    pub fn outcome(self, promise_found: bool) -> Outcome {
        match self {
            _ if self.is_clean() && promise_found => Outcome::Completed,
            End::Exited(0) | End::Lingered => Outcome::NoPromise,
            End::Exited(_) => Outcome::AgentError,
            End::Signaled(_) => Outcome::Crashed,
            End::TimedOut | End::IdleTimedOut => Outcome::TimedOut,
            End::Handoff(_) => Outcome::Handoff,
            End::OverBudget(_) | End::OverCost(_) | End::OutOfTime => Outcome::OverBudget,
            End::Interrupted(_) => Outcome::Interrupted,
        }
    }

    /// How the agent ended, in words for notes and raw.md (`outcome` words a clean exit).
    pub fn describe(self, outcome: Outcome, agent: &AgentConfig) -> String {
        match self {
            End::Exited(0) => outcome.describe().to_string(),
            End::Exited(code) => format!("agent exited with code {code}"),
            End::Signaled(signal) => format!("agent crashed ({})", signals::name(signal)),
            End::TimedOut => format!(
                "agent timed out after {} s and was stopped",
                agent.timeout_secs
            ),
            End::IdleTimedOut => format!(
                "agent printed nothing for {} s and was stopped",
                agent.idle_timeout_secs.unwrap_or(0)
            ),
            End::Lingered => format!(
                "{}; the agent did not exit within {} s of its final answer and was stopped",
                outcome.describe(),
                agent.result_grace_secs
            ),
            End::Handoff(tokens) => format!(
                "handoff: context — {tokens} tokens passed {:.0}% of the {}-token window; a fresh agent continues",
                agent.handoff_threshold * 100.0,
                agent.context_window.unwrap_or(0)
            ),
            End::OverBudget(tokens) => {
                format!("stopped after {tokens} tokens: the token budget ran out")
            }
            End::OutOfTime => "stopped: the time budget ran out".to_string(),
            End::OverCost(cents) => format!(
                "stopped after ${:.2}: the cost budget ran out",
                cents as f64 / 100.0
            ),
            End::Interrupted(signal) => format!("interrupted by {}", signals::name(signal)),
        }
    }

    /// How an agent whose answer holds no promise ended, in words: why a role that needs it to
    /// finish (the validator, the planner, the curator) did not take its answer.
    pub fn in_words(self, agent: &AgentConfig) -> String {
        self.describe(self.outcome(false), agent)
    }
}

/// Limits the supervisor enforces during one invocation, beside the total timeout.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Limits {
    /// Stop after this long without output.
    pub idle: Option<Duration>,
    /// After the final answer, stop an agent that has not exited within this long.
    pub result_grace: Option<Duration>,
    /// Hand off when the context reaches this many tokens.
    pub context_limit: Option<u64>,
    /// Stop when the invocation has used this many tokens (what the budgets leave).
    pub token_limit: Option<u64>,
    /// Stop when the invocation has run this long (what the time budgets leave).
    pub wall_limit: Option<Duration>,
    /// Stop when the agent reports it has spent this much (USD; what the cost budgets leave).
    pub cost_limit: Option<f64>,
}

impl Limits {
    /// The limits of one invocation of `agent`, given what the budgets leave.
    pub fn new(agent: &AgentConfig, budget: &Remaining) -> Self {
        Self {
            idle: agent.idle_timeout_secs.map(Duration::from_secs),
            result_grace: Some(Duration::from_secs(agent.result_grace_secs)),
            context_limit: agent
                .context_window
                .map(|window| (window as f64 * agent.handoff_threshold) as u64),
            token_limit: budget.tokens,
            wall_limit: budget.wall,
            cost_limit: budget.cost_usd,
        }
    }
}

/// What the harness learnt from one invocation.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentRun {
    pub end: End,
    pub duration: Duration,
    pub output: OutputSummary,
    /// Set when output.log could not be written completely (a full disk).
    pub log_error: Option<String>,
}

impl AgentRun {
    /// The exit code and the signal of the agent's end, as far as it exited or was killed.
    pub fn exit_status(&self) -> (Option<i32>, Option<i32>) {
        match self.end {
            End::Exited(code) => (Some(code), None),
            End::Signaled(signal) => (None, Some(signal)),
            _ => (None, None),
        }
    }

    /// The usage record of this run, with `prices` to estimate a cost the agent did not report.
    pub fn usage_record(&self, prices: Option<&Prices>) -> UsageRecord {
        let output = &self.output;
        UsageRecord::new(
            &output.usage,
            output.final_answer.as_deref(),
            output.context_tokens,
            prices,
        )
    }
}

/// What the output reader extracted.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct OutputSummary {
    pub bytes: u64,
    /// How many times each marker was in the agent's answer, in the order given.
    pub marker_counts: Vec<u64>,
    /// The final answer, for agents with structured output.
    pub final_answer: Option<String>,
    /// Turns, tokens and cost as the agent reports them.
    pub usage: Usage,
    /// The largest context the agent's model had, when the stream tells it.
    pub context_tokens: Option<u64>,
    /// The last tool or action seen.
    pub last_action: Option<String>,
    /// The last setback the agent's CLI reported: a rate or usage limit, a transient service
    /// error.
    pub setback: Option<Setback>,
    /// The end of the readable output (text, or the assistant's text for JSON streams).
    pub tail: String,
    /// Memory entries found, in order, at most [`MAX_ENTRIES_PER_INVOCATION`].
    pub entries: Vec<(Tag, String)>,
    /// Entries found past that bound.
    pub entries_dropped: usize,
}

/// Reads an agent's output as it streams, in bounded memory.
pub struct OutputReader {
    parser: Box<dyn Parser>,
    markers: Vec<String>,
    line: Vec<u8>,
    tail: Vec<u8>,
    events: Vec<Event>,
    summary: OutputSummary,
    /// The terminal's transcript and what it rendered since it was last taken, when asked.
    transcript: Option<(Transcript, String)>,
}

impl std::fmt::Debug for OutputReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutputReader")
            .field("summary", &self.summary)
            .finish_non_exhaustive()
    }
}

impl OutputReader {
    /// A reader for `format` counting `markers` in the answer.
    pub fn new(format: OutputFormat, markers: &[String]) -> Self {
        Self {
            parser: format::parser_for(format),
            markers: markers.to_vec(),
            line: Vec::new(),
            tail: Vec::new(),
            events: Vec::new(),
            summary: OutputSummary {
                marker_counts: vec![0; markers.len()],
                ..OutputSummary::default()
            },
            transcript: None,
        }
    }

    /// The same reader, also rendering a transcript for the terminal (see [`transcript`]).
    pub fn with_transcript(mut self) -> Self {
        self.transcript = Some((Transcript::default(), String::new()));
        self
    }

    /// What the transcript rendered since the last call; `None` without a transcript.
    pub fn take_rendered(&mut self) -> Option<String> {
        self.transcript
            .as_mut()
            .map(|(_, rendered)| std::mem::take(rendered))
    }

    /// The events the last chunk completed (for the supervisor).
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// What the status line shows now.
    pub fn progress(&self, elapsed: Duration) -> Snapshot {
        Snapshot {
            elapsed,
            usage: self.summary.usage.clone(),
            context_tokens: self.summary.context_tokens,
            last_action: self.summary.last_action.clone(),
        }
    }

    /// Takes the next chunk of output; returns the events it completed (for the supervisor).
    pub fn feed(&mut self, mut chunk: &[u8]) -> &[Event] {
        self.events.clear();
        self.summary.bytes += chunk.len() as u64;
        if self.parser.text_is_answer() {
            // Raw bytes, so that a flood without newlines still leaves its true end.
            push_tail(&mut self.tail, chunk);
        }
        while let Some(newline) = chunk.iter().position(|&b| b == b'\n') {
            self.extend_line(&chunk[..newline]);
            self.end_line();
            chunk = &chunk[newline + 1..];
        }
        self.extend_line(chunk);
        &self.events
    }

    /// Ends the output: a last line without a newline counts too.
    pub fn finish(&mut self) {
        self.events.clear();
        if !self.line.is_empty() {
            self.end_line();
        }
    }

    /// What was found so far.
    pub fn snapshot(&self) -> OutputSummary {
        let mut summary = self.summary.clone();
        summary.tail = String::from_utf8_lossy(&self.tail).into_owned();
        summary
    }

    fn extend_line(&mut self, bytes: &[u8]) {
        let room = MAX_LINE_BYTES.saturating_sub(self.line.len());
        self.line.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    fn end_line(&mut self) {
        let line = std::mem::take(&mut self.line);
        let line = String::from_utf8_lossy(&line);
        let line = line.strip_suffix('\r').unwrap_or(&line);
        let first = self.events.len();
        self.parser.line(line, &mut self.events);
        if let Some((transcript, rendered)) = &mut self.transcript {
            transcript.line(line, &self.events[first..], rendered);
        }
        let text_is_answer = self.parser.text_is_answer();
        for index in first..self.events.len() {
            match &self.events[index] {
                Event::Text(text) => {
                    if text_is_answer {
                        count_markers(&self.markers, text, &mut self.summary.marker_counts);
                    } else {
                        push_tail(&mut self.tail, text.as_bytes());
                        push_tail(&mut self.tail, b"\n");
                    }
                    if let Some(entry) = memory::harvest_line(text) {
                        if self.summary.entries.len() < MAX_ENTRIES_PER_INVOCATION {
                            self.summary.entries.push(entry);
                        } else {
                            self.summary.entries_dropped += 1;
                        }
                    }
                }
                Event::Other(text) | Event::Error(text) => {
                    if !text_is_answer {
                        push_tail(&mut self.tail, text.as_bytes());
                        push_tail(&mut self.tail, b"\n");
                    }
                }
                Event::Final(answer) => {
                    // The final answer is the answer: counts from earlier results are replaced.
                    self.summary.marker_counts = vec![0; self.markers.len()];
                    count_markers(&self.markers, answer, &mut self.summary.marker_counts);
                    self.summary.final_answer = Some(answer.clone());
                }
                Event::Usage(usage) => self.summary.usage.update(usage),
                Event::Context(tokens) => {
                    let largest = self.summary.context_tokens.unwrap_or(0).max(*tokens);
                    self.summary.context_tokens = Some(largest);
                }
                Event::Action(action) => self.summary.last_action = Some(action.clone()),
                Event::Setback(setback) => self.summary.setback = Some(setback.clone()),
            }
        }
    }
}

fn count_markers(markers: &[String], text: &str, counts: &mut [u64]) {
    for (marker, count) in markers.iter().zip(counts.iter_mut()) {
        *count += text.matches(marker.as_str()).count() as u64;
    }
}

impl OutputSummary {
    /// Whether marker `index` was in the answer.
    pub fn found(&self, index: usize) -> bool {
        self.marker_counts
            .get(index)
            .is_some_and(|&count| count > 0)
    }

    /// The answer as text: the final answer of a structured agent, else the output's tail.
    pub fn answer(&self) -> &str {
        self.final_answer.as_deref().unwrap_or(&self.tail)
    }
}

fn push_tail(tail: &mut Vec<u8>, bytes: &[u8]) {
    let bytes = &bytes[bytes.len().saturating_sub(TAIL_BYTES)..];
    tail.extend_from_slice(bytes);
    // Trim in batches so a stream of small writes does not shift the buffer every time.
    if tail.len() > 2 * TAIL_BYTES {
        tail.drain(..tail.len() - TAIL_BYTES);
    }
}

/// Finds the program of an agent command: a name is looked up in `PATH`; a path with a `/` is
/// taken relative to the working directory. A missing program is an input error naming
/// `config_path`, raised before anything runs.
pub fn resolve_program(
    program: &str,
    workdir: &Path,
    path_var: Option<&std::ffi::OsStr>,
    config_path: &Path,
) -> Result<PathBuf, InputError> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |candidate: &Path| {
        candidate
            .metadata()
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    };
    let found = if program.contains('/') {
        let candidate = workdir.join(program);
        executable(&candidate).then_some(candidate)
    } else {
        path_var.and_then(|paths| {
            std::env::split_paths(paths)
                .map(|dir| dir.join(program))
                .find(|candidate| executable(candidate))
        })
    };
    found.ok_or_else(|| {
        InputError::in_file(
            config_path,
            format!("agent command {program:?} was not found or is not executable"),
        )
        .with_hint("install the agent CLI, or fix agent.command (a name in PATH, or a path)")
    })
}

/// What the supervisor waits for.
enum Signal {
    Exited(io::Result<std::process::ExitStatus>),
    OutputClosed,
    Interrupt(i32),
    /// The final answer arrived: the agent gets a grace period to exit by itself.
    FinalAnswer,
    /// The context passed the handoff threshold.
    ContextFull(u64),
    /// The invocation's tokens passed what the budgets leave.
    OverBudget(u64),
    /// The invocation's reported cost (cents) passed what the budgets leave.
    OverCost(u64),
}

/// Runs the agent to its end and reports what happened. An I/O error means the agent could not
/// be started (or its log not created); once started, every ending is an [`End`].
pub fn run(invocation: &Invocation) -> io::Result<AgentRun> {
    let started = Instant::now();
    let mut log = fs::open(invocation.log, fs::Mode::Create)?;
    let (mut child, pipe_reader, containment) = spawn(invocation)?;
    let pgid = child.id() as i32;

    let (sender, signals_in) = mpsc::channel::<Signal>();
    if let Some(mut stdin) = child.stdin.take() {
        let prompt = invocation.prompt.to_string();
        crate::base::threads::run(move || {
            // An agent that exits without reading its prompt is its own business, not an error.
            let _ = stdin.write_all(prompt.as_bytes());
        });
    }

    let mut reader = OutputReader::new(invocation.output_format, invocation.markers);
    if invocation.echo && transcript::is_rendered(invocation.output_format) {
        reader = reader.with_transcript();
    }
    let reader = Arc::new(Mutex::new(reader));
    let progress = invocation
        .progress
        .clone()
        .map(|label| Arc::new(Mutex::new(Progress::stderr(label))));
    let log_error: Arc<Mutex<Option<String>>> = Arc::default();
    let last_output = Arc::new(AtomicU64::new(0));
    {
        let pump = Pump {
            reader: Arc::clone(&reader),
            log_error: Arc::clone(&log_error),
            last_output: Arc::clone(&last_output),
            started,
            sender: sender.clone(),
            echo: invocation.echo,
            limits: invocation.limits,
            redactor: invocation.redactor.clone(),
            progress: progress.clone(),
        };
        crate::base::threads::run(move || {
            pump.run(pipe_reader, &mut log);
            let _ = pump.sender.send(Signal::OutputClosed);
        });
    }
    {
        let sender = sender.clone();
        crate::base::threads::run(move || {
            let _ = sender.send(Signal::Exited(child.wait()));
        });
    }
    {
        let sender = sender.clone();
        signals::subscribe(move |signal| {
            let _ = sender.send(Signal::Interrupt(signal));
        });
    }
    drop(sender);

    let mut supervisor = Supervisor {
        pgid,
        containment,
        enclosure: invocation.enclosure,
        signals: signals_in,
        output_closed: false,
        grace: invocation.kill_grace,
        progress: progress.clone().map(|progress| StatusLine {
            progress,
            reader: Arc::clone(&reader),
            started,
        }),
    };
    let end = match signals::received() {
        Some(signal) => supervisor.stop(End::Interrupted(signal)),
        None => supervisor.watch(
            started,
            invocation.timeout,
            &invocation.limits,
            &last_output,
        ),
    };
    signals::unsubscribe();
    supervisor.reap_all();
    if let Some(progress) = &progress {
        if let Ok(mut progress) = progress.lock() {
            progress.clear();
        }
    }

    // If a process that left the group still holds the pipe, this is what was read so far.
    let output = reader.lock().map(|r| r.snapshot()).unwrap_or_default();
    let log_error = log_error.lock().ok().and_then(|e| e.clone());
    Ok(AgentRun {
        end,
        duration: started.elapsed(),
        output,
        log_error,
    })
}

/// Starts the agent enclosed, its stdout and stderr on one pipe, its prompt delivered as
/// configured (on stdin: written by the caller); returns it, the pipe's end and what contains it.
fn spawn(invocation: &Invocation) -> io::Result<(spawn::Child, io::PipeReader, Containment)> {
    let (pipe_reader, pipe_writer) = io::pipe()?;

    let (mut command, containment) =
        invocation
            .enclosure
            .command(invocation.argv, invocation.workdir, invocation.env);
    command.output(pipe_writer);
    match invocation.prompt_via {
        PromptVia::Stdin => {
            command.stdin(spawn::Stdin::Piped);
        }
        PromptVia::Arg => {
            command.arg(invocation.prompt).stdin(spawn::Stdin::Null);
        }
        PromptVia::File => {
            command
                .env("HARNESS_PROMPT_FILE", invocation.prompt_file)
                .stdin(spawn::Stdin::Null);
        }
    }
    let child = command.spawn()?;
    // Our copy of the pipe's write end must go, or the reader would never see the end.
    drop(command);
    Ok((child, pipe_reader, containment))
}

/// The copier between the agent's pipe and everything that reads its output.
struct Pump {
    reader: Arc<Mutex<OutputReader>>,
    log_error: Arc<Mutex<Option<String>>>,
    /// Milliseconds from `started` to the last output, for the idle timer.
    last_output: Arc<AtomicU64>,
    started: Instant,
    sender: mpsc::Sender<Signal>,
    echo: bool,
    limits: Limits,
    redactor: Redactor,
    progress: Option<Arc<Mutex<Progress>>>,
}

impl Pump {
    /// Copies the pipe, with secrets redacted, to the log, the terminal and the reader, until
    /// every writer closed; tells the supervisor what it must act on.
    fn run(&self, mut pipe: io::PipeReader, log: &mut File) {
        let mut buffer = vec![0u8; 64 << 10];
        let mut stream = RedactingStream::new(&self.redactor);
        let mut sink = Sink {
            log,
            log_ok: true,
            echo: self.echo,
            progress: self.progress.clone(),
        };
        let mut final_seen = false;
        loop {
            let count = match pipe.read(&mut buffer) {
                Ok(0) => break,
                Ok(count) => count,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            };
            self.last_output
                .store(self.started.elapsed().as_millis() as u64, Ordering::Relaxed);
            // Only the few bytes where a secret may be beginning wait for the next read (see
            // `RedactingStream`), so memory stays bounded and no key leaks, whatever the cuts.
            stream.push(&buffer[..count], |clean| {
                self.deliver(clean, &mut sink, &mut final_seen)
            });
        }
        stream.finish(|clean| self.deliver(clean, &mut sink, &mut final_seen));
        if let Ok(mut reader) = self.reader.lock() {
            reader.finish();
        }
        if let Some(error) = sink.finish() {
            if let Ok(mut slot) = self.log_error.lock() {
                *slot = Some(error);
            }
        }
    }

    /// One redacted chunk: to the log, to the reader, then to the terminal (the transcript
    /// for JSON streams, else the chunk), and the status line. The reader's lock is let go
    /// before the status line's is taken: the supervisor takes them the other way round.
    fn deliver(&self, chunk: &[u8], sink: &mut Sink, final_seen: &mut bool) {
        if let Some(error) = sink.log(chunk) {
            if let Ok(mut slot) = self.log_error.lock() {
                *slot = Some(error);
            }
        }
        let Ok(mut reader) = self.reader.lock() else {
            return;
        };
        reader.feed(chunk);
        let rendered = reader.take_rendered();
        let snapshot = reader.progress(self.started.elapsed());
        self.signal(&reader, final_seen);
        drop(reader);
        sink.echo(rendered.as_ref().map_or(chunk, String::as_bytes));
        if let Some(progress) = &self.progress {
            if let Ok(mut progress) = progress.lock() {
                progress.update(&snapshot, false);
            }
        }
    }

    /// Tells the supervisor what the last chunk means to it: a final answer, a full context, a
    /// budget used up.
    fn signal(&self, reader: &OutputReader, final_seen: &mut bool) {
        for event in reader.events() {
            let signal = match event {
                Event::Final(_) if !*final_seen => {
                    *final_seen = true;
                    Some(Signal::FinalAnswer)
                }
                Event::Context(tokens) => self
                    .limits
                    .context_limit
                    .filter(|limit| tokens >= limit)
                    .map(|_| Signal::ContextFull(*tokens)),
                _ => None,
            };
            if let Some(signal) = signal {
                let _ = self.sender.send(signal);
            }
        }
        if let (Some(limit), Some(used)) = (
            self.limits.token_limit,
            reader
                .summary
                .usage
                .total_tokens()
                .or(reader.summary.context_tokens),
        ) {
            if used >= limit {
                let _ = self.sender.send(Signal::OverBudget(used));
            }
        }
        if let (Some(limit), Some(spent)) = (self.limits.cost_limit, reader.summary.usage.cost_usd)
        {
            if spent >= limit {
                let _ = self
                    .sender
                    .send(Signal::OverCost((spent * 100.0).round() as u64));
            }
        }
    }
}

/// Where the output goes besides the reader: output.log and, when asked, the terminal.
struct Sink<'a> {
    log: &'a mut File,
    log_ok: bool,
    echo: bool,
    progress: Option<Arc<Mutex<Progress>>>,
}

impl Sink<'_> {
    /// Writes a chunk to the log; returns the log's error the first time it fails.
    fn log(&mut self, chunk: &[u8]) -> Option<String> {
        if !self.log_ok {
            return None;
        }
        let error = self.log.write_all(chunk).err()?;
        // Keep draining the pipe (or the agent would block), but say the log is cut.
        self.log_ok = false;
        Some(format!("output.log is incomplete: {error}"))
    }

    /// Writes to the terminal, when asked. The status line steps aside for the agent's words,
    /// then comes back under them; while they stop mid-line it stays away, so it is never
    /// drawn inside one of their lines.
    fn echo(&mut self, bytes: &[u8]) {
        if !self.echo || bytes.is_empty() {
            return;
        }
        let mut progress = self.progress.as_ref().and_then(|p| p.lock().ok());
        if let Some(progress) = progress.as_mut() {
            progress.clear();
        }
        let stdout = io::stdout();
        let mut out = stdout.lock();
        self.echo = out.write_all(bytes).and_then(|()| out.flush()).is_ok();
        if let Some(progress) = progress.as_mut() {
            progress.hold(!bytes.ends_with(b"\n"));
            progress.restore();
        }
    }

    fn finish(&mut self) -> Option<String> {
        self.log
            .flush()
            .err()
            .map(|error| format!("output.log is incomplete: {error}"))
    }
}

/// Waits for the agent and stops everything it started when it must.
struct Supervisor<'a> {
    pgid: i32,
    /// What holds the agent's processes beyond its group.
    containment: Containment,
    enclosure: &'a Enclosure,
    signals: mpsc::Receiver<Signal>,
    output_closed: bool,
    grace: Duration,
    /// The status line, when it is shown.
    progress: Option<StatusLine>,
}

/// The status line and what it reads: the output reader, and when the agent started.
struct StatusLine {
    progress: Arc<Mutex<Progress>>,
    reader: Arc<Mutex<OutputReader>>,
    started: Instant,
}

impl Supervisor<'_> {
    /// Waits for the agent to exit, or for a reason to stop it: an interrupt, the total time,
    /// silence past the idle limit, lingering after its final answer, a full context, a budget.
    fn watch(
        &mut self,
        started: Instant,
        timeout: Duration,
        limits: &Limits,
        last_output: &AtomicU64,
    ) -> End {
        let total_deadline = started + timeout;
        let mut linger_deadline: Option<Instant> = None;
        // The idle deadline moves with the output, so it is computed afresh each time.
        let idle_deadline = || {
            limits.idle.map(|idle| {
                started + Duration::from_millis(last_output.load(Ordering::Relaxed)) + idle
            })
        };
        loop {
            let tick = self
                .progress
                .as_ref()
                .and_then(|line| line.progress.lock().ok().map(|p| Instant::now() + p.tick()));
            let (deadline, why) = [
                tick.map(|at| (at, None)),
                Some((total_deadline, Some(End::TimedOut))),
                limits
                    .wall_limit
                    .map(|wall| (started + wall, Some(End::OutOfTime))),
                idle_deadline().map(|at| (at, Some(End::IdleTimedOut))),
                linger_deadline.map(|at| (at, Some(End::Lingered))),
            ]
            .into_iter()
            .flatten()
            .min_by_key(|(deadline, _)| *deadline)
            .expect("the total deadline is always there");
            let remaining = deadline.saturating_duration_since(Instant::now());
            match self.signals.recv_timeout(remaining) {
                Ok(Signal::Exited(status)) => {
                    let end = end_of(status, self.enclosure);
                    if died_of_an_interrupt(end) {
                        return self.own_interrupt(SIBLING_SIGNAL_WAIT).unwrap_or(end);
                    }
                    return end;
                }
                Ok(Signal::OutputClosed) => self.output_closed = true,
                Ok(Signal::Interrupt(signal)) => return self.stop(End::Interrupted(signal)),
                Ok(Signal::FinalAnswer) => {
                    linger_deadline = limits.result_grace.map(|grace| Instant::now() + grace);
                }
                Ok(Signal::ContextFull(tokens)) => return self.stop(End::Handoff(tokens)),
                Ok(Signal::OverBudget(tokens)) => return self.stop(End::OverBudget(tokens)),
                Ok(Signal::OverCost(cents)) => return self.stop(End::OverCost(cents)),
                Err(RecvTimeoutError::Timeout) => match why {
                    // The status line's tick: show that the agent is alive, and keep waiting.
                    None => self.show_progress(),
                    // Output came since this deadline was computed: not idle after all.
                    Some(End::IdleTimedOut)
                        if idle_deadline().is_some_and(|at| at > Instant::now()) => {}
                    Some(why) => return self.stop(why),
                },
                Err(RecvTimeoutError::Disconnected) => return End::Exited(-1),
            }
        }
    }

    fn show_progress(&self) {
        if let Some(line) = &self.progress {
            if let (Ok(mut progress), Ok(reader)) = (line.progress.lock(), line.reader.lock()) {
                progress.update(&reader.progress(line.started.elapsed()), true);
            }
        }
    }

    /// The harness's own interrupt, if one comes within `limit` (or came already).
    fn own_interrupt(&mut self, limit: Duration) -> Option<End> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(signal) = signals::received() {
                return Some(End::Interrupted(signal));
            }
            let remaining = deadline.saturating_duration_since(Instant::now());
            match self.signals.recv_timeout(remaining) {
                Ok(Signal::Interrupt(signal)) => return Some(End::Interrupted(signal)),
                Ok(Signal::OutputClosed) => self.output_closed = true,
                Ok(_) => {}
                Err(_) => return None,
            }
        }
    }

    /// SIGTERM to all the agent's processes, SIGKILL after the grace period; returns `why` once
    /// the agent is gone.
    fn stop(&mut self, why: End) -> End {
        self.signal_all(libc::SIGTERM);
        let deadline = Instant::now() + self.grace;
        loop {
            let remaining = deadline.saturating_duration_since(Instant::now());
            match self.signals.recv_timeout(remaining) {
                Ok(Signal::Exited(_)) => return why,
                Ok(Signal::OutputClosed) => self.output_closed = true,
                Ok(_) => {}
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => return why,
            }
        }
        self.signal_all(libc::SIGKILL);
        loop {
            match self.signals.recv() {
                Ok(Signal::Exited(_)) | Err(_) => return why,
                Ok(Signal::OutputClosed) => self.output_closed = true,
                Ok(_) => {}
            }
        }
    }

    /// Sends `signal` to every process of the agent: its group and all its containment holds;
    /// whether any got it. Under a sandbox a SIGTERM goes to the processes inside only: bwrap
    /// dies of it, and its death is a SIGKILL to everything inside.
    fn signal_all(&self, signal: i32) -> bool {
        let gentle = signal != libc::SIGKILL && self.enclosure.is_sandboxed();
        let group = !gentle && signal_group(self.pgid, signal);
        let contained = self.containment.signal(signal, !gentle);
        group || contained
    }

    /// After the agent ended: whatever it left running — in its group, in a session of its own —
    /// is stopped (SIGTERM, SIGKILL after the grace period), so nothing writes after the harness
    /// recorded the end; then the output is read to its end.
    fn reap_all(&mut self) {
        if self.signal_all(libc::SIGTERM) {
            self.wait_gone(self.grace);
        }
        self.containment.end();
        signal_group(self.pgid, libc::SIGKILL);
        self.wait_output(self.grace);
    }

    /// Waits, up to `limit`, for the output to close and every process of the agent to be gone.
    fn wait_gone(&mut self, limit: Duration) {
        let deadline = Instant::now() + limit;
        let gone = |supervisor: &Self| {
            // SAFETY: signal 0 only checks for existence.
            let group = unsafe { libc::kill(-supervisor.pgid, 0) == 0 };
            supervisor.output_closed && !group && !supervisor.containment.any_left()
        };
        while !gone(self) {
            let remaining = deadline.saturating_duration_since(Instant::now());
            if remaining.is_zero() {
                return;
            }
            if let Ok(Signal::OutputClosed) = self
                .signals
                .recv_timeout(remaining.min(Duration::from_millis(20)))
            {
                self.output_closed = true;
            }
        }
    }

    fn wait_output(&mut self, limit: Duration) {
        let deadline = Instant::now() + limit;
        while !self.output_closed {
            let remaining = deadline.saturating_duration_since(Instant::now());
            match self.signals.recv_timeout(remaining) {
                Ok(Signal::OutputClosed) => self.output_closed = true,
                Ok(_) => {}
                Err(_) => return,
            }
        }
    }
}

/// Sends `signal` to the process group; returns whether any process was there to get it.
fn signal_group(pgid: i32, signal: i32) -> bool {
    // SAFETY: kill has no memory effects; a negative pid addresses the group we created.
    unsafe { libc::kill(-pgid, signal) == 0 }
}

/// How long the harness waits for its own interrupt after its agent died of one: a batch
/// scheduler's cancel or time limit signals every process of the job at once, and the agent may
/// die of it a moment before the harness hears its own.
const SIBLING_SIGNAL_WAIT: Duration = Duration::from_secs(2);

/// Whether the agent died of an interrupt (SIGINT, SIGTERM, SIGHUP), or a shell said so with
/// 128 + the signal.
fn died_of_an_interrupt(end: End) -> bool {
    let interrupt = |signal: i32| matches!(signal, libc::SIGINT | libc::SIGTERM | libc::SIGHUP);
    match end {
        End::Signaled(signal) => interrupt(signal),
        End::Exited(code) => code > 128 && interrupt(code - 128),
        _ => false,
    }
}

/// How the agent ended, by its exit status (a sandbox's exit code for a signal taken back).
fn end_of(status: io::Result<std::process::ExitStatus>, enclosure: &Enclosure) -> End {
    match status {
        Ok(status) => match (status.code(), status.signal()) {
            (Some(code), _) => match enclosure.signal_of_exit(code) {
                Some(signal) => End::Signaled(signal),
                None => End::Exited(code),
            },
            (None, Some(signal)) => End::Signaled(signal),
            (None, None) => End::Exited(-1),
        },
        Err(_) => End::Exited(-1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TAG: &str = "<promise>TASK_COMPLETE</promise>";

    fn read_all(format: OutputFormat, chunks: &[&[u8]]) -> OutputSummary {
        let mut reader = OutputReader::new(format, &[TAG.to_string()]);
        for chunk in chunks {
            reader.feed(chunk);
        }
        reader.finish();
        reader.snapshot()
    }

    #[test]
    fn text_promise_is_found_across_chunk_boundaries() {
        let summary = read_all(
            OutputFormat::Text,
            &[b"working\nall done <promise>TASK_", b"COMPLETE</promise>"],
        );
        assert!(summary.found(0));
        assert_eq!(summary.bytes, 49);
    }

    #[test]
    fn an_explained_promise_is_not_a_promise() {
        let summary = read_all(
            OutputFormat::Text,
            &[b"the opening tag `<promise>`, then the word TASK_COMPLETE, then `</promise>`\n"],
        );
        assert!(!summary.found(0));
    }

    #[test]
    fn entries_are_harvested_and_bounded() {
        let mut text = String::from("TRICK: a\r\nLESSON: b\nnoise\n");
        for i in 0..100 {
            text.push_str(&format!("AVOID: {i}\n"));
        }
        let summary = read_all(OutputFormat::Text, &[text.as_bytes()]);
        assert_eq!(summary.entries[0], (Tag::Trick, "a".into()));
        assert_eq!(summary.entries[1], (Tag::Lesson, "b".into()));
        assert_eq!(summary.entries.len(), MAX_ENTRIES_PER_INVOCATION);
        assert_eq!(summary.entries_dropped, 102 - MAX_ENTRIES_PER_INVOCATION);
    }

    #[test]
    fn memory_stays_bounded_under_a_flood() {
        let mut reader = OutputReader::new(OutputFormat::Text, &[TAG.to_string()]);
        let chunk = vec![b'x'; 64 << 10];
        for _ in 0..200 {
            reader.feed(&chunk);
        }
        reader.feed(b"\nlast words\n");
        assert!(reader.line.capacity() <= 2 * MAX_LINE_BYTES);
        assert!(reader.tail.capacity() <= 4 * TAIL_BYTES);
        reader.finish();
        let summary = reader.snapshot();
        assert!(summary.tail.ends_with("last words\n"));
        assert!(summary.tail.len() <= 2 * TAIL_BYTES);
    }

    #[test]
    fn claude_stream_json_reads_the_result_event() {
        let fixture = concat!(
            r#"{"type":"system","subtype":"init"}"#,
            "\n",
            r#"{"type":"assistant","message":{"content":[{"type":"text","text":"I'll do it.\nTRICK: use the Write tool"}]}}"#,
            "\n",
            r#"{"type":"user","message":{"content":[{"type":"tool_result","content":"<promise>TASK_COMPLETE</promise>"}]}}"#,
            "\n",
            r#"{"type":"result","num_turns":2,"result":"Done. <promise>TASK_COMPLETE</promise>","total_cost_usd":0.19706,"usage":{"input_tokens":39052,"output_tokens":72,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}"#,
            "\n",
        );
        let summary = read_all(OutputFormat::ClaudeStreamJson, &[fixture.as_bytes()]);
        assert!(summary.found(0));
        assert_eq!(summary.usage.turns, Some(2));
        assert_eq!(summary.usage.total_tokens(), Some(39124));
        assert_eq!(summary.usage.cost_usd, Some(0.19706));
        assert_eq!(
            summary.entries,
            vec![(Tag::Trick, "use the Write tool".into())]
        );
        assert!(summary.tail.contains("I'll do it."));
    }

    #[test]
    fn claude_promise_in_tool_output_only_does_not_count() {
        let fixture = concat!(
            r#"{"type":"user","message":{"content":[{"type":"tool_result","content":"<promise>TASK_COMPLETE</promise>"}]}}"#,
            "\n",
            "<promise>TASK_COMPLETE</promise> on stderr\n",
            r#"{"type":"result","num_turns":1,"result":"not yet"}"#,
            "\n",
        );
        let summary = read_all(OutputFormat::ClaudeStreamJson, &[fixture.as_bytes()]);
        assert!(!summary.found(0));
        assert_eq!(summary.final_answer.as_deref(), Some("not yet"));
    }

    #[test]
    fn outcomes_follow_the_end() {
        assert_eq!(End::Exited(0).outcome(true), Outcome::Completed);
        assert_eq!(End::Exited(0).outcome(false), Outcome::NoPromise);
        assert_eq!(End::Exited(3).outcome(true), Outcome::AgentError);
        assert_eq!(End::Signaled(9).outcome(false), Outcome::Crashed);
        assert_eq!(End::TimedOut.outcome(false), Outcome::TimedOut);
        assert_eq!(End::Interrupted(2).outcome(false), Outcome::Interrupted);
    }

    #[test]
    fn missing_program_is_an_input_error_naming_the_config() {
        let dir = tempfile::tempdir().unwrap();
        let error = resolve_program(
            "no-such-agent-xyz",
            dir.path(),
            Some(std::ffi::OsStr::new("/usr/bin:/bin")),
            Path::new(".harness/config.yaml"),
        )
        .unwrap_err();
        assert!(error
            .to_string()
            .starts_with(".harness/config.yaml: agent command"));
        assert!(resolve_program(
            "sh",
            dir.path(),
            Some("/usr/bin:/bin".as_ref()),
            Path::new("c")
        )
        .is_ok());
    }
}
