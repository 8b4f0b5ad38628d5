//! Running an agent: the configured argv with the prompt on stdin, as an argument or in a file;
//! its own process group, so a timeout or Ctrl-C stops its whole tree; its output streamed to
//! `output.log` (and the terminal) while a bounded reader extracts what the harness needs — the
//! promise, turns, memory entries, the tail for the notes — in constant memory, whatever it prints.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::config::{OutputFormat, PromptVia};
use crate::error::InputError;
use crate::memory::{self, Tag, MAX_ENTRIES_PER_INVOCATION};
use crate::signals;

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
    /// The prompt.
    pub prompt: &'a str,
    /// How the prompt is delivered.
    pub prompt_via: PromptVia,
    /// The file holding the prompt (given in `$HARNESS_PROMPT_FILE` when `prompt_via: file`).
    pub prompt_file: &'a Path,
    /// The agent's current directory.
    pub workdir: &'a Path,
    /// Extra environment (the `HARNESS_*` variables).
    pub env: &'a [(String, String)],
    /// How long it may run.
    pub timeout: Duration,
    /// Between SIGTERM and SIGKILL.
    pub kill_grace: Duration,
    /// How to read its output.
    pub output_format: OutputFormat,
    /// Exact texts to look for in the agent's answer (the completion tag, verdict tags).
    pub markers: &'a [String],
    /// Where the whole output goes.
    pub log: &'a Path,
    /// Whether the output is also copied to our stdout as it comes.
    pub echo: bool,
}

/// How the agent process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// It exited with this code.
    Exited(i32),
    /// A signal the harness did not send killed it.
    Signaled(i32),
    /// The timeout ran out; the harness stopped it.
    TimedOut,
    /// Ctrl-C / SIGTERM reached the harness, which stopped it.
    Interrupted(i32),
}

/// What the harness learnt from one invocation.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentRun {
    /// How it ended.
    pub end: End,
    /// How long it ran.
    pub duration: Duration,
    /// What the output told.
    pub output: OutputSummary,
    /// Set when output.log could not be written completely (a full disk).
    pub log_error: Option<String>,
}

/// What the output reader extracted.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct OutputSummary {
    /// Bytes of output.
    pub bytes: u64,
    /// How many times each marker was in the agent's answer, in the order given.
    pub marker_counts: Vec<u64>,
    /// The final answer, for agents with structured output.
    pub final_answer: Option<String>,
    /// Turns, when the agent reports them.
    pub turns: Option<u64>,
    /// Tokens (input + output + cache), when reported.
    pub tokens: Option<u64>,
    /// Cost in USD, when reported.
    pub cost_usd: Option<f64>,
    /// The end of the readable output (text, or the assistant's text for JSON streams).
    pub tail: String,
    /// Memory entries found, in order, at most [`MAX_ENTRIES_PER_INVOCATION`].
    pub entries: Vec<(Tag, String)>,
    /// Entries found past that bound.
    pub entries_dropped: usize,
}

/// Reads an agent's output as it streams, in bounded memory.
#[derive(Debug)]
pub struct OutputReader {
    format: OutputFormat,
    markers: Vec<String>,
    line: Vec<u8>,
    line_overflowed: bool,
    tail: Vec<u8>,
    summary: OutputSummary,
}

impl OutputReader {
    /// A reader for `format` counting `markers` in the answer.
    pub fn new(format: OutputFormat, markers: &[String]) -> Self {
        Self {
            format,
            markers: markers.to_vec(),
            line: Vec::new(),
            line_overflowed: false,
            tail: Vec::new(),
            summary: OutputSummary {
                marker_counts: vec![0; markers.len()],
                ..OutputSummary::default()
            },
        }
    }

    /// Takes the next chunk of output.
    pub fn feed(&mut self, mut chunk: &[u8]) {
        self.summary.bytes += chunk.len() as u64;
        if self.format == OutputFormat::Text {
            push_tail(&mut self.tail, chunk);
        }
        while let Some(newline) = chunk.iter().position(|&b| b == b'\n') {
            self.extend_line(&chunk[..newline]);
            self.end_line();
            chunk = &chunk[newline + 1..];
        }
        self.extend_line(chunk);
    }

    /// Ends the output: a last line without a newline counts too.
    pub fn finish(&mut self) {
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
        if bytes.len() > room {
            self.line_overflowed = true;
        }
        self.line.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    fn end_line(&mut self) {
        let line = std::mem::take(&mut self.line);
        self.line_overflowed = false;
        let line = String::from_utf8_lossy(&line);
        let line = line.strip_suffix('\r').unwrap_or(&line);
        match self.format {
            OutputFormat::Text => {
                count_markers(&self.markers, line, &mut self.summary.marker_counts);
                self.harvest(line);
            }
            OutputFormat::ClaudeStreamJson => self.claude_event(line),
        }
    }

    fn harvest(&mut self, line: &str) {
        if let Some(entry) = memory::harvest_line(line) {
            if self.summary.entries.len() < MAX_ENTRIES_PER_INVOCATION {
                self.summary.entries.push(entry);
            } else {
                self.summary.entries_dropped += 1;
            }
        }
    }

    fn text_line(&mut self, line: &str) {
        push_tail(&mut self.tail, line.as_bytes());
        push_tail(&mut self.tail, b"\n");
        self.harvest(line);
    }

    /// Claude Code's stream-json: assistant text is the readable transcript; the final
    /// `result` event holds the answer, turns, usage and cost. Lines that are not JSON (stderr)
    /// go to the tail but can never complete the feature.
    fn claude_event(&mut self, line: &str) {
        let Ok(event) = serde_json::from_str::<serde_json::Value>(line) else {
            if !line.trim().is_empty() {
                push_tail(&mut self.tail, line.as_bytes());
                push_tail(&mut self.tail, b"\n");
            }
            return;
        };
        match event.get("type").and_then(|t| t.as_str()) {
            Some("assistant") => {
                let content = event
                    .pointer("/message/content")
                    .and_then(|c| c.as_array())
                    .cloned()
                    .unwrap_or_default();
                for item in content {
                    if item.get("type").and_then(|t| t.as_str()) == Some("text") {
                        let text = item.get("text").and_then(|t| t.as_str()).unwrap_or("");
                        for text_line in text.lines() {
                            self.text_line(text_line);
                        }
                    }
                }
            }
            Some("result") => {
                let answer = event
                    .get("result")
                    .and_then(|r| r.as_str())
                    .map(str::to_string);
                if let Some(answer) = &answer {
                    // The final answer is the answer: counts from earlier results are replaced.
                    self.summary.marker_counts = vec![0; self.markers.len()];
                    count_markers(&self.markers, answer, &mut self.summary.marker_counts);
                }
                self.summary.final_answer = answer;
                self.summary.turns = event.get("num_turns").and_then(|n| n.as_u64());
                self.summary.cost_usd = event.get("total_cost_usd").and_then(|c| c.as_f64());
                self.summary.tokens = event.get("usage").map(|usage| {
                    [
                        "input_tokens",
                        "output_tokens",
                        "cache_creation_input_tokens",
                        "cache_read_input_tokens",
                    ]
                    .iter()
                    .filter_map(|key| usage.get(key).and_then(|n| n.as_u64()))
                    .sum()
                });
            }
            _ => {}
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

enum Event {
    Exited(io::Result<std::process::ExitStatus>),
    OutputClosed,
    Interrupt(i32),
}

/// Runs the agent to its end and reports what happened. An I/O error means the agent could not
/// be started (or its log not created); once started, every ending is an [`End`].
pub fn run(invocation: &Invocation) -> io::Result<AgentRun> {
    let started = Instant::now();
    let mut log = File::create(invocation.log)?;
    let (pipe_reader, pipe_writer) = io::pipe()?;

    let mut command = Command::new(&invocation.argv[0]);
    command
        .args(&invocation.argv[1..])
        .current_dir(invocation.workdir)
        .envs(invocation.env.iter().map(|(k, v)| (k, v)))
        .stdout(pipe_writer.try_clone()?)
        .stderr(pipe_writer)
        .process_group(0);
    match invocation.prompt_via {
        PromptVia::Stdin => {
            command.stdin(Stdio::piped());
        }
        PromptVia::Arg => {
            command.arg(invocation.prompt).stdin(Stdio::null());
        }
        PromptVia::File => {
            command
                .env("HARNESS_PROMPT_FILE", invocation.prompt_file)
                .stdin(Stdio::null());
        }
    }
    // SAFETY: the closure makes only async-signal-safe calls (sigprocmask, prctl).
    unsafe {
        command.pre_exec(|| {
            signals::reset_in_child();
            // If the harness dies (kill -9), the agent is not left working unsupervised.
            #[cfg(target_os = "linux")]
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let mut child = command.spawn()?;
    // Our copies of the pipe's write end must go, or the reader would never see the end.
    drop(command);
    let pgid = child.id() as i32;

    let (sender, events) = mpsc::channel::<Event>();
    if let Some(mut stdin) = child.stdin.take() {
        let prompt = invocation.prompt.to_string();
        std::thread::spawn(move || {
            // An agent that exits without reading its prompt is its own business, not an error.
            let _ = stdin.write_all(prompt.as_bytes());
        });
    }

    let reader = Arc::new(Mutex::new(OutputReader::new(
        invocation.output_format,
        invocation.markers,
    )));
    let log_error: Arc<Mutex<Option<String>>> = Arc::default();
    {
        let reader = Arc::clone(&reader);
        let log_error = Arc::clone(&log_error);
        let sender = sender.clone();
        let echo = invocation.echo;
        std::thread::spawn(move || {
            pump(pipe_reader, &mut log, echo, &reader, &log_error);
            let _ = sender.send(Event::OutputClosed);
        });
    }
    {
        let sender = sender.clone();
        std::thread::spawn(move || {
            let _ = sender.send(Event::Exited(child.wait()));
        });
    }
    {
        let sender = sender.clone();
        signals::subscribe(move |signal| {
            let _ = sender.send(Event::Interrupt(signal));
        });
    }
    drop(sender);

    let mut supervisor = Supervisor {
        pgid,
        events,
        output_closed: false,
        grace: invocation.kill_grace,
    };
    let deadline = started + invocation.timeout;
    let end = match signals::received() {
        Some(signal) => supervisor.stop(End::Interrupted(signal)),
        None => supervisor.wait_until(deadline),
    };
    signals::unsubscribe();
    supervisor.reap_group();

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

/// Copies the pipe to the log (and the terminal) and feeds the reader, until every writer closed.
fn pump(
    mut pipe: io::PipeReader,
    log: &mut File,
    mut echo: bool,
    reader: &Mutex<OutputReader>,
    log_error: &Mutex<Option<String>>,
) {
    let mut buffer = vec![0u8; 64 << 10];
    let mut log_ok = true;
    let stdout = io::stdout();
    loop {
        let count = match pipe.read(&mut buffer) {
            Ok(0) => break,
            Ok(count) => count,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let chunk = &buffer[..count];
        if log_ok {
            if let Err(error) = log.write_all(chunk) {
                // Keep draining the pipe (or the agent would block), but say the log is cut.
                log_ok = false;
                if let Ok(mut slot) = log_error.lock() {
                    *slot = Some(format!("output.log is incomplete: {error}"));
                }
            }
        }
        if echo {
            let mut out = stdout.lock();
            echo = out.write_all(chunk).and_then(|()| out.flush()).is_ok();
        }
        if let Ok(mut reader) = reader.lock() {
            reader.feed(chunk);
        }
    }
    if let Ok(mut reader) = reader.lock() {
        reader.finish();
    }
    let _ = log.flush();
}

/// Waits for the agent and stops its process group when it must.
struct Supervisor {
    pgid: i32,
    events: mpsc::Receiver<Event>,
    output_closed: bool,
    grace: Duration,
}

impl Supervisor {
    /// Waits for the agent to exit, an interrupt, or the deadline.
    fn wait_until(&mut self, deadline: Instant) -> End {
        loop {
            let remaining = deadline.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(remaining) {
                Ok(Event::Exited(status)) => return end_of(status),
                Ok(Event::OutputClosed) => self.output_closed = true,
                Ok(Event::Interrupt(signal)) => return self.stop(End::Interrupted(signal)),
                Err(RecvTimeoutError::Timeout) => return self.stop(End::TimedOut),
                Err(RecvTimeoutError::Disconnected) => return End::Exited(-1),
            }
        }
    }

    /// SIGTERM to the group, SIGKILL after the grace period; returns `why` once the agent is gone.
    fn stop(&mut self, why: End) -> End {
        signal_group(self.pgid, libc::SIGTERM);
        let deadline = Instant::now() + self.grace;
        loop {
            let remaining = deadline.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(remaining) {
                Ok(Event::Exited(_)) => return why,
                Ok(Event::OutputClosed) => self.output_closed = true,
                Ok(Event::Interrupt(_)) => {}
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => return why,
            }
        }
        signal_group(self.pgid, libc::SIGKILL);
        loop {
            match self.events.recv() {
                Ok(Event::Exited(_)) | Err(_) => return why,
                Ok(Event::OutputClosed) => self.output_closed = true,
                Ok(Event::Interrupt(_)) => {}
            }
        }
    }

    /// After the agent ended: whatever it left running in its group is stopped, so nothing
    /// writes after the harness recorded the end; then the output is read to its end.
    fn reap_group(&mut self) {
        if signal_group(self.pgid, libc::SIGTERM) {
            self.wait_output(self.grace);
            signal_group(self.pgid, libc::SIGKILL);
        }
        self.wait_output(self.grace);
    }

    fn wait_output(&mut self, limit: Duration) {
        let deadline = Instant::now() + limit;
        while !self.output_closed {
            let remaining = deadline.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(remaining) {
                Ok(Event::OutputClosed) => self.output_closed = true,
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

fn end_of(status: io::Result<std::process::ExitStatus>) -> End {
    match status {
        Ok(status) => match (status.code(), status.signal()) {
            (Some(code), _) => End::Exited(code),
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
        assert_eq!(summary.turns, Some(2));
        assert_eq!(summary.tokens, Some(39124));
        assert_eq!(summary.cost_usd, Some(0.19706));
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
