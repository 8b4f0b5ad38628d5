//! Playing a step: placeholders, and what each action does.

use std::fs::{self, OpenOptions};
use std::io::{self, ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::process::{self, Command, Stdio};
use std::thread;
use std::time::Duration;

use crate::scenario::{Action, FileText, Flood};
use crate::Stop;

/// Everything about the invocation that placeholders and actions may use.
#[derive(Debug, Default)]
pub struct Context {
    /// `HARNESS_ROLE`.
    pub role: String,
    /// `HARNESS_FEATURE_ID`.
    pub feature: String,
    /// `HARNESS_ITERATION`.
    pub iteration: String,
    /// `HARNESS_RUN_ID`.
    pub run_id: String,
    /// `HARNESS_PHASE` (empty without phases).
    pub phase: String,
    /// `HARNESS_COMPLETION_PROMISE`, or `TASK_COMPLETE`.
    pub promise: String,
    /// The 1-based number of the step being played.
    pub step: String,
    /// The prompt received.
    pub prompt: String,
    /// Where `cat` paths are relative to.
    pub scenario_dir: PathBuf,
}

impl Context {
    fn var(&self, name: &str) -> Option<&str> {
        Some(match name {
            "feature" => &self.feature,
            "role" => &self.role,
            "iteration" => &self.iteration,
            "run_id" => &self.run_id,
            "phase" => &self.phase,
            "promise" => &self.promise,
            "step" => &self.step,
            _ => return None,
        })
    }

    /// Replaces known `{name}` placeholders in `text`; anything else is left as written.
    pub fn expand(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(open) = rest.find('{') {
            out.push_str(&rest[..open]);
            let from_brace = &rest[open..];
            let known = from_brace[1..]
                .find('}')
                .and_then(|close| self.var(&from_brace[1..1 + close]).map(|v| (close, v)));
            match known {
                Some((close, value)) => {
                    out.push_str(value);
                    rest = &from_brace[close + 2..];
                }
                None => {
                    out.push('{');
                    rest = &from_brace[1..];
                }
            }
        }
        out.push_str(rest);
        out
    }
}

/// Runs the actions of one step in order; returns early only through `exit`, `crash` or an error.
pub fn play(actions: &[Action], ctx: &Context) -> Result<(), Stop> {
    actions.iter().try_for_each(|action| run(action, ctx))
}

fn run(action: &Action, ctx: &Context) -> Result<(), Stop> {
    match action {
        Action::Print(text) => out_line(&ctx.expand(text)),
        Action::Stderr(text) => eprintln!("{}", ctx.expand(text)),
        Action::Promise(true) => out_line(&format!("<promise>{}</promise>", ctx.promise)),
        Action::EchoPrompt(true) => {
            // A newline keeps whatever is printed next on a line of its own.
            if ctx.prompt.ends_with('\n') || ctx.prompt.is_empty() {
                out(ctx.prompt.as_bytes());
            } else {
                out_line(&ctx.prompt);
            }
        }
        Action::ExpectPrompt(text) => {
            let text = ctx.expand(text);
            if !ctx.prompt.contains(&text) {
                return Err(Stop::new(
                    98,
                    format!("prompt does not contain \"{}\"", spaced(&text)),
                ));
            }
        }
        Action::RejectPrompt(text) => {
            let text = ctx.expand(text);
            if ctx.prompt.contains(&text) {
                return Err(Stop::new(
                    98,
                    format!("prompt contains \"{}\"", spaced(&text)),
                ));
            }
        }
        Action::Write(file) => write_file(file, ctx, false)?,
        Action::Append(file) => write_file(file, ctx, true)?,
        Action::Commit(message) => commit(&ctx.expand(message))?,
        Action::Cat(path) => cat(&ctx.scenario_dir.join(path))?,
        Action::Sleep(seconds) => thread::sleep(Duration::from_secs_f64(*seconds)),
        Action::Hang(true) => {
            flush();
            loop {
                thread::sleep(Duration::from_secs(3600));
            }
        }
        Action::Flood(flood) => self::flood(flood),
        Action::Spawn(command) => spawn(&ctx.expand(command))?,
        Action::Exit(code) => {
            flush();
            process::exit(*code);
        }
        Action::Crash(true) => {
            flush();
            process::abort();
        }
        Action::Promise(false)
        | Action::EchoPrompt(false)
        | Action::Hang(false)
        | Action::Crash(false) => {}
    }
    Ok(())
}

// Stdout errors are ignored: a harness that stopped reading is the harness's business, and the
// scenario should go on to play its side effects as it would have.
fn out(bytes: &[u8]) {
    let mut stdout = io::stdout().lock();
    let _ = stdout.write_all(bytes).and_then(|()| stdout.flush());
}

fn out_line(text: &str) {
    out(format!("{text}\n").as_bytes());
}

fn flush() {
    let _ = io::stdout().flush();
}

fn write_file(file: &FileText, ctx: &Context, append: bool) -> Result<(), Stop> {
    let path = Path::new(&file.path);
    let fail = |e: io::Error| Stop::new(1, format!("{}: {e}", path.display()));
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent).map_err(fail)?;
    }
    let content = ctx.expand(&file.content);
    if append {
        OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut f| f.write_all(content.as_bytes()))
            .map_err(fail)
    } else {
        fs::write(path, content).map_err(fail)
    }
}

fn commit(message: &str) -> Result<(), Stop> {
    git(&["add", "-A"])?;
    // A signing setup in the user's git config would make a test's commit prompt or fail.
    git(&["-c", "commit.gpgsign=false", "commit", "-q", "-m", message])
}

fn git(args: &[&str]) -> Result<(), Stop> {
    let output = Command::new("git")
        .args(args)
        .env("GIT_AUTHOR_NAME", "scripted-agent")
        .env("GIT_AUTHOR_EMAIL", "scripted-agent@example.invalid")
        .env("GIT_COMMITTER_NAME", "scripted-agent")
        .env("GIT_COMMITTER_EMAIL", "scripted-agent@example.invalid")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Stop::new(96, format!("git {}: {e}", args.join(" "))))?;
    if output.status.success() {
        return Ok(());
    }
    let mut why = String::from_utf8_lossy(&output.stderr).trim().to_string();
    if why.is_empty() {
        // `git commit` with nothing to commit explains itself on stdout.
        why = String::from_utf8_lossy(&output.stdout).trim().to_string();
    }
    Err(Stop::new(
        96,
        format!("git {} failed ({}): {why}", args.join(" "), output.status),
    ))
}

fn cat(path: &Path) -> Result<(), Stop> {
    let mut file =
        fs::File::open(path).map_err(|e| Stop::new(1, format!("{}: {e}", path.display())))?;
    let mut stdout = io::stdout().lock();
    match io::copy(&mut file, &mut stdout).and_then(|_| stdout.flush()) {
        Err(e) if e.kind() != ErrorKind::BrokenPipe => {
            Err(Stop::new(1, format!("cat {}: {e}", path.display())))
        }
        _ => Ok(()),
    }
}

/// Writes exactly `flood.bytes` bytes of repeated lines, from one buffer of whole lines reused for
/// every write so that hundreds of megabytes cost neither time nor memory.
fn flood(flood: &Flood) {
    const CHUNK: usize = 1 << 20;
    let line = format!("{}\n", flood.line);
    let buffer = line.repeat((CHUNK / line.len()).max(1));
    let mut left = flood.bytes;
    let mut stdout = io::stdout().lock();
    while left > 0 {
        let n = usize::try_from(left).map_or(buffer.len(), |left| left.min(buffer.len()));
        if stdout.write_all(&buffer.as_bytes()[..n]).is_err() {
            return; // Usually EPIPE: the reader has gone, which is what some tests are about.
        }
        left -= n as u64;
    }
    let _ = stdout.flush();
}

fn spawn(command: &str) -> Result<(), Stop> {
    flush();
    // Not waited for, and left in our process group, so the harness must kill it with us.
    Command::new("sh")
        .arg("-c")
        .arg(command)
        .stdin(Stdio::null())
        .spawn()
        .map(drop)
        .map_err(|e| Stop::new(1, format!("spawn {command:?}: {e}")))
}

/// The text with `·` between its characters, for error messages: the message reaches the harness's
/// notes and so the next prompt, where the text itself would satisfy a replayed `expect_prompt`.
fn spaced(text: &str) -> String {
    let mut spaced = String::with_capacity(text.len() * 3);
    for (index, c) in text.chars().enumerate() {
        if index > 0 {
            spaced.push('·');
        }
        spaced.push(c);
    }
    spaced
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> Context {
        Context {
            role: "worker".into(),
            feature: "F-001".into(),
            iteration: "3".into(),
            run_id: "r1".into(),
            phase: "plan".into(),
            promise: "DONE".into(),
            step: "2".into(),
            ..Context::default()
        }
    }

    #[test]
    fn known_placeholders_are_replaced() {
        assert_eq!(
            ctx().expand(
                "{role} on {feature}, iteration {iteration} of {run_id}, step {step}: {promise}"
            ),
            "worker on F-001, iteration 3 of r1, step 2: DONE"
        );
        assert_eq!(ctx().expand("phase {phase}"), "phase plan");
        assert_eq!(ctx().expand("{feature}{feature}"), "F-001F-001");
    }

    #[test]
    fn other_braces_are_left_alone() {
        let c = ctx();
        for text in [
            "",
            "plain",
            "{unknown}",
            "{",
            "}",
            "{feature",
            "a {} b",
            "{\"json\": 1}",
        ] {
            assert_eq!(c.expand(text), text);
        }
        assert_eq!(c.expand("{{feature}}"), "{F-001}");
        assert_eq!(c.expand("{x {role}"), "{x worker");
        assert_eq!(c.expand("é{role}ü"), "éworkerü");
    }

    #[test]
    fn empty_values_expand_to_nothing() {
        assert_eq!(Context::default().expand("[{role}|{feature}]"), "[|]");
    }
}
