//! The edges of a pass: the locks, reading the files into a [`Snapshot`], the agent's rewrite,
//! and writing what [`curate`] decided, each file atomically and in an order such that a
//! `kill -9` between any two writes loses nothing and duplicates nothing on the next pass.
//!
//! Locks: raw.md's, then summary.md's, always in that order. summary.md's is held by one curator
//! for its whole pass (another exits 75, or waits with `--wait`); raw.md's only while reading it
//! and while truncating it, so workers appending never wait more than a moment. The identity
//! directory's lock, shared by every project's curator, is held from reading the identity files
//! to writing them.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::base::atomic::{self, create_new, Replaced};
use crate::base::error::{InputError, LockHeld};
use crate::base::exit_codes;
use crate::base::fs;
use crate::base::locks::{self, Lock};
use crate::base::signals;
use crate::base::time::{self, Timestamp};
use crate::spec::layout::{HarnessHome, RunId, StateDir};
use crate::spec::role::Role;
use crate::state::memory;

use super::graduation::Ledger;
use super::record::Record;
use super::{
    curate, log, rewrite, short_hash, Cancelled, Params, Pass, Report, Snapshot, DEMOTED_FILE,
};

/// A `curator` invocation.
#[derive(Debug, Clone)]
pub struct Request {
    /// The project directory.
    pub workdir: PathBuf,
    /// The `.harness/` directory.
    pub state: StateDir,
    /// The harness install (roles, identity).
    pub home: HarnessHome,
    /// The parameters.
    pub params: Params,
    /// Print what would change and write nothing.
    pub dry_run: bool,
    /// Have the curator's agent propose a rewrite of summary.md.
    pub agent: bool,
    /// Wait for another curator to finish instead of exiting 75.
    pub wait: bool,
    /// The run id of the agent's invocation (`--agent`); generated when absent.
    pub run_id: Option<RunId>,
    /// Copy the agent's output to stdout.
    pub echo: bool,
    /// `PATH`, to find the agent.
    pub path_var: Option<OsString>,
}

/// A pass stopped by an interrupt (Ctrl-C, SIGTERM, SIGHUP) before it wrote anything: every
/// file is as it was. The curator exits 130 on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interrupted {
    /// The signal that stopped it.
    pub signal: i32,
    /// It came while waiting for another curator (`--wait`), before the pass began.
    pub waiting: bool,
}

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let when = if self.waiting {
            "while waiting for the other curator"
        } else {
            "during the pass"
        };
        write!(
            f,
            "interrupted by {} {when}; nothing was changed",
            signals::name(self.signal)
        )
    }
}

impl std::error::Error for Interrupted {}

/// The interrupt received, as an error, once [`curate`] gave up on it (which it does only once
/// one was received).
fn interrupted(_: Cancelled) -> anyhow::Error {
    Interrupted {
        signal: signals::received().unwrap_or(libc::SIGINT),
        waiting: false,
    }
    .into()
}

/// What a `curator` invocation ended with.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// 0 done, 130 interrupted during the agent's run (nothing written).
    pub exit_code: u8,
    /// The pass's report.
    pub report: Report,
}

/// How many times a pass starts again when a file it was about to write changed since it read
/// it (a hand edit made during the pass) before it leaves the file as it is.
const MAX_PASSES: usize = 3;

/// Runs one pass on the project of `request` (see the module documentation). An interrupt during
/// the pass stops it at once with [`Interrupted`], nothing written; one during the agent's run
/// ends it with exit code 130, nothing written either. A memory file edited by hand during the
/// pass is never overwritten: the pass starts again on the new text, and after [`MAX_PASSES`]
/// leaves the file as it is, with a warning.
pub fn run(request: &Request) -> anyhow::Result<Outcome> {
    request
        .params
        .check()
        .map_err(|message| InputError::new(format!("curator parameter {message}")))?;
    let state = &request.state;
    if !fs::is_dir(state.root()) {
        return Err(
            InputError::in_file(state.root(), "the state directory does not exist")
                .with_hint("create it with `./run.sh init -C <project dir>`")
                .into(),
        );
    }
    state.refuse_links(None)?;
    if !request.dry_run {
        crate::spec::init::keep_gitignore_complete(state, "curator");
    }
    let now = time::now();
    let holder = locks::describe_holder(std::process::id(), "curator", &time::format(now));
    let (raw, _summary_lock) = lock(request, &holder)?;
    let mut read = Read::default();
    let mut snapshot = read_snapshot(request, raw, now, &mut read)?;

    // An interrupt is noted by the signal thread; the pass looks at the note as it goes.
    let cancel = || signals::received().is_some();
    let mut wordings = BTreeMap::new();
    let mut verdict = None;
    let mut agent_entries = Vec::new();
    if request.agent {
        let draft =
            curate(&snapshot, &request.params, now, &wordings, &cancel).map_err(interrupted)?;
        let proposal = rewrite::propose(request, &snapshot, &draft)?;
        if let Some(signal) = proposal.interrupted {
            let mut report = draft.report;
            report.files.clear();
            report.agent = Some(proposal.verdict);
            eprintln!(
                "curator: interrupted by {} during the agent's run; the memory files were left as they were",
                signals::name(signal)
            );
            return Ok(Outcome {
                exit_code: exit_codes::INTERRUPTED,
                report,
            });
        }
        wordings = proposal.wordings;
        snapshot.judged = proposal.judgments;
        verdict = Some(proposal.verdict);
        agent_entries = proposal.entries;
    }

    let mut restarts = Vec::new();
    let report = loop {
        let last = restarts.len() + 1 == MAX_PASSES;
        match curate_and_write(request, &mut snapshot, &mut read, now, &wordings, last)? {
            Written::All(report) => break report,
            Written::Stopped(changed) => {
                restarts.push(format!(
                    "{changed} was edited during the pass: the pass started again on your text"
                ));
                let raw = read_raw(state)?;
                read = Read::default();
                snapshot = read_snapshot(request, raw, now, &mut read)?;
            }
        }
    };
    let mut report = *report;
    report.warnings.splice(0..0, restarts);
    report.agent = verdict;
    if !agent_entries.is_empty() && !request.dry_run {
        memory::append_raw(state, &agent_entries).context("cannot append to raw.md")?;
    }
    Ok(Outcome {
        exit_code: exit_codes::DONE,
        report,
    })
}

/// raw.md's lock, then summary.md's (which one curator holds for the whole pass, or none for a
/// dry run); raw.md's only as long as it takes to sweep and read the file, whose bytes come back.
fn lock(request: &Request, holder: &str) -> anyhow::Result<(Vec<u8>, Option<Lock>)> {
    let state = &request.state;
    loop {
        let raw_lock = Lock::acquire(&state.raw_lock()).context("cannot lock raw.md")?;
        let summary_lock = if request.dry_run {
            None
        } else {
            match Lock::try_acquire(&state.summary_lock(), "the curator", holder) {
                Ok(lock) => Some(lock),
                Err(error) if request.wait && error.downcast_ref::<LockHeld>().is_some() => {
                    // Never wait holding raw.md's lock: the other curator needs it to finish.
                    drop(raw_lock);
                    if let Some(signal) = signals::sleep(std::time::Duration::from_millis(100)) {
                        let waiting = true;
                        return Err(Interrupted { signal, waiting }.into());
                    }
                    continue;
                }
                Err(error) => return Err(error),
            }
        };
        if summary_lock.is_some() {
            sweep(request);
        }
        let raw = read_optional(&state.raw())?.unwrap_or_default();
        return Ok((raw, summary_lock));
    }
}

/// raw.md's bytes, read under its lock.
fn read_raw(state: &StateDir) -> anyhow::Result<Vec<u8>> {
    let _raw_lock = Lock::acquire(&state.raw_lock()).context("cannot lock raw.md")?;
    Ok(read_optional(&state.raw())?.unwrap_or_default())
}

/// Clears what killed writers left in the directories a pass writes (a temp file, or a hand
/// edit a killed pass had swapped out, which goes back in place), before reading them.
fn sweep(request: &Request) {
    let state = &request.state;
    for dir in [
        state.root(),
        &state.archive_dir(),
        request.home.identity_dir(),
    ] {
        atomic::sweep_stale_temps(dir);
    }
}

/// The bytes a pass read of each file it may replace (`None`: the file did not exist), so that
/// it replaces only those (see [`atomic::replace_if_unchanged`]).
#[derive(Debug, Default)]
struct Read(BTreeMap<PathBuf, Option<String>>);

impl Read {
    /// [`read_text`], remembered.
    fn text(&mut self, path: &Path) -> anyhow::Result<Option<String>> {
        let text = read_text(path)?;
        self.0.insert(path.to_path_buf(), text.clone());
        Ok(text)
    }

    /// What was read of `path`.
    fn of(&self, path: &Path) -> Option<&[u8]> {
        self.0
            .get(path)
            .and_then(|text| text.as_deref().map(str::as_bytes))
    }
}

/// Everything but the identity files (read under their lock, later), given raw.md's bytes.
fn read_snapshot(
    request: &Request,
    raw: Vec<u8>,
    now: Timestamp,
    read: &mut Read,
) -> anyhow::Result<Snapshot> {
    let state = &request.state;
    let mut snapshot = Snapshot {
        raw,
        chunks: read_chunks(&state.archive_dir())?,
        summary: read.text(&state.summary())?,
        memory: read.text(&state.memory())?,
        demoted: read
            .text(&state.archive_dir().join(DEMOTED_FILE))?
            .unwrap_or_default(),
        record: match read.text(&state.curator_record())? {
            Some(text) => Record::parse(&text, &state.curator_record())?,
            None => Record::default(),
        },
        identities: Vec::new(),
        ledger: Ledger::default(),
        mission: String::new(),
        mission_recorded: false,
        project: request.workdir.display().to_string(),
        judged: Default::default(),
    };
    read_identity(&request.home, &mut snapshot, read)?;
    (snapshot.mission, snapshot.mission_recorded) = mission_id(state, now)?;
    Ok(snapshot)
}

/// What [`curate_and_write`] wrote.
enum Written {
    /// Everything the pass decided (or, dry, nothing): its report.
    All(Box<Report>),
    /// Not this file, changed since the pass read it, nor any after it.
    Stopped(String),
}

/// One pass over `snapshot` (the identity files read again under their lock) and its writes.
/// The `last` pass writes what it can and leaves a changed file as it is.
fn curate_and_write(
    request: &Request,
    snapshot: &mut Snapshot,
    read: &mut Read,
    now: Timestamp,
    wordings: &BTreeMap<String, String>,
    last: bool,
) -> anyhow::Result<Written> {
    let cancel = || signals::received().is_some();
    // The identity directory is shared by every mission: its lock is held from reading the
    // identity files to writing them, so two projects' curators never lose each other's lines.
    let identity_lock = if request.dry_run {
        None
    } else {
        let lock = identity_lock(&request.home)?;
        read_identity(&request.home, snapshot, read)?;
        Some(lock)
    };
    let mut pass =
        curate(snapshot, &request.params, now, wordings, &cancel).map_err(interrupted)?;
    pass.report.dry_run = request.dry_run;
    if request.dry_run {
        return Ok(Written::All(Box::new(pass.report)));
    }
    // The last moment to stop with nothing written. The writes that follow are quick, and are
    // not stopped halfway: that would leave the rest to the next pass.
    if let Some(signal) = signals::received() {
        let waiting = false;
        return Err(Interrupted { signal, waiting }.into());
    }
    pause_for_tests();
    match write_pass(request, snapshot, read, &mut pass, identity_lock)? {
        Some(changed) if !last => Ok(Written::Stopped(changed)),
        Some(changed) => {
            pass.report.warnings.push(format!(
                "{changed} kept changing during the pass: it was left as you wrote it (run the \
                 curator again)"
            ));
            Ok(Written::All(Box::new(pass.report)))
        }
        None => Ok(Written::All(Box::new(pass.report))),
    }
}

/// For tests only: with `HARNESS_TEST_CURATOR_PAUSE=<path>`, the first pass of this process,
/// having read every file and decided what to write, creates `<path>.paused` and waits while
/// `<path>` exists, so that a test can edit a file at that very moment.
fn pause_for_tests() {
    static PAUSED: std::sync::Once = std::sync::Once::new();
    let Some(path) = std::env::var_os("HARNESS_TEST_CURATOR_PAUSE").map(PathBuf::from) else {
        return;
    };
    PAUSED.call_once(|| {
        let mut flag = path.clone().into_os_string();
        flag.push(".paused");
        let _ = std::fs::write(&flag, std::process::id().to_string());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
        while path.exists() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    });
}

/// The identity directory's lock (created with the directory if need be).
fn identity_lock(home: &HarnessHome) -> anyhow::Result<Lock> {
    let path = home.identity_lock();
    Lock::acquire(&path).with_context(|| format!("cannot lock {}", path.display()))
}

/// Reads the identity files and the ledger into `snapshot`.
fn read_identity(
    home: &HarnessHome,
    snapshot: &mut Snapshot,
    read: &mut Read,
) -> anyhow::Result<()> {
    snapshot.identities = Role::ALL
        .into_iter()
        .map(|role| Ok((role, read.text(&home.identity(role))?)))
        .collect::<anyhow::Result<_>>()?;
    snapshot.ledger = match read.text(&home.ledger())? {
        Some(text) => Ledger::parse(&text, &home.ledger())?,
        None => Ledger::default(),
    };
    Ok(())
}

/// Writes what the pass decided, in an order that a kill between two writes never loses an entry
/// nor duplicates one on the next pass: the archive chunk before raw.md is truncated (a chunk
/// whose lines are still in raw.md is recognised by raw.md's note), the demoted bullets before
/// MEMORY.md lets them go, MEMORY.md before summary.md lets a demoted item go, and the record
/// last but raw.md. A file the user may edit replaces only the bytes the pass read: if one
/// changed since, the writes stop there and its name comes back (the report lists what was
/// written).
fn write_pass(
    request: &Request,
    snapshot: &Snapshot,
    read: &Read,
    pass: &mut Pass,
    identity_lock: Option<Lock>,
) -> anyhow::Result<Option<String>> {
    let state = &request.state;
    let files = &pass.files;
    let mut written = Vec::new();
    if let Some(text) = &files.mission {
        let path = state.mission_id();
        create_new(&path, text.as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
        written.push("mission-id".to_string());
    }
    if let Some((seq, bytes)) = &files.chunk {
        let dir = state.archive_dir();
        fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let path = dir.join(log::chunk_name(*seq));
        if !create_new(&path, bytes).with_context(|| format!("cannot write {}", path.display()))? {
            anyhow::bail!(
                "{} exists already; raw.md was left as it was (run the curator again)",
                path.display()
            );
        }
        written.push(format!("archive/{}", log::chunk_name(*seq)));
    }
    let mut replacements = vec![
        (
            files.demoted.as_deref(),
            state.archive_dir().join(DEMOTED_FILE),
        ),
        (files.memory.as_deref(), state.memory()),
        (files.summary.as_deref(), state.summary()),
    ];
    let identities = files
        .identities
        .iter()
        .map(|(role, text)| (Some(text.as_str()), request.home.identity(*role)));
    replacements.extend(identities);
    replacements.push((files.ledger.as_deref(), request.home.ledger()));
    let warnings = &mut pass.report.warnings;
    let mut stopped = replace_all(request, read, replacements, &mut written, warnings)?;
    drop(identity_lock);
    if stopped.is_none() {
        let record = vec![(files.record.as_deref(), state.curator_record())];
        stopped = replace_all(request, read, record, &mut written, warnings)?;
    }
    if stopped.is_some() {
        pass.report.files = written;
        return Ok(stopped);
    }
    if let Some(new_raw) = &files.raw {
        if truncate_raw(state, snapshot, new_raw)? {
            written.push("raw.md".into());
        } else {
            pass.report.warnings.push(
                "raw.md was edited during the pass: it was left as it is and will be truncated \
                 by the next pass"
                    .into(),
            );
        }
    }
    pass.report.files = written;
    Ok(None)
}

/// The name of a file a pass writes, as its report gives it (`summary.md`, `identity/worker.md`).
fn display_name(request: &Request, path: &Path) -> String {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let dir = path.parent().unwrap_or(Path::new(""));
    if dir == request.state.root() {
        name.into_owned()
    } else if dir == request.home.identity_dir() {
        format!("identity/{name}")
    } else {
        format!("archive/{name}")
    }
}

/// Replaces each of `files` that has a new text, in turn, while it holds what the pass read (see
/// [`replace`]); stops at the first that changed, and returns its name. `written` gets the names
/// of those written.
fn replace_all(
    request: &Request,
    read: &Read,
    files: Vec<(Option<&str>, PathBuf)>,
    written: &mut Vec<String>,
    warnings: &mut Vec<String>,
) -> anyhow::Result<Option<String>> {
    for (text, path) in files {
        let Some(text) = text else { continue };
        if let Some(changed) = replace(request, read, &path, text.as_bytes(), warnings)? {
            return Ok(Some(changed));
        }
        written.push(display_name(request, &path));
    }
    Ok(None)
}

/// Replaces `path` with `bytes` if it still holds what the pass read; else leaves it as it is
/// and returns its name. A version the user saved twice during the write is kept beside it,
/// with a warning.
fn replace(
    request: &Request,
    read: &Read,
    path: &Path,
    bytes: &[u8],
    warnings: &mut Vec<String>,
) -> anyhow::Result<Option<String>> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    let replaced = atomic::replace_if_unchanged(path, read.of(path), bytes)
        .with_context(|| format!("cannot write {}", path.display()))?;
    let name = display_name(request, path);
    match replaced {
        Replaced::Done => Ok(None),
        Replaced::Changed => Ok(Some(name)),
        Replaced::Kept(kept) => {
            warnings.push(format!(
                "{name} was saved twice while the pass wrote it: it holds your last version, and \
                 the one before is in {}",
                kept.display()
            ));
            Ok(Some(name))
        }
    }
}

/// Truncates raw.md to the pass's `new_raw`, keeping the lines appended since the pass read it
/// (under raw.md's lock, which appenders take); `false` if it was otherwise edited meanwhile
/// (then it is left as it is).
fn truncate_raw(state: &StateDir, snapshot: &Snapshot, new_raw: &[u8]) -> anyhow::Result<bool> {
    // Taken again while summary.md's is held: safe, since a curator holding raw.md's lock never
    // waits for summary.md's, and workers hold it only to append.
    let _raw_lock = Lock::acquire(&state.raw_lock()).context("cannot lock raw.md")?;
    let current = read_optional(&state.raw())?.unwrap_or_default();
    if !current.starts_with(&snapshot.raw) {
        return Ok(false);
    }
    // Lines appended during the pass stay, after the kept ones.
    let mut text = new_raw.to_vec();
    text.extend_from_slice(&current[snapshot.raw.len()..]);
    let replaced = atomic::replace_if_unchanged(&state.raw(), Some(&current), &text)
        .context("cannot write raw.md")?;
    Ok(replaced == Replaced::Done)
}

/// A file's bytes, `None` when it does not exist.
fn read_optional(path: &Path) -> anyhow::Result<Option<Vec<u8>>> {
    fs::read_optional(path).with_context(|| format!("cannot read {}", path.display()))
}

/// A memory file's text, `None` when it does not exist. Invalid UTF-8 is an input error naming
/// the line: the curator keeps the user's lines byte for byte and cannot if it cannot read them.
pub fn read_text(path: &Path) -> anyhow::Result<Option<String>> {
    let Some(bytes) = read_optional(path)? else {
        return Ok(None);
    };
    match String::from_utf8(bytes) {
        Ok(text) => Ok(Some(text)),
        Err(error) => {
            let valid = error.utf8_error().valid_up_to();
            let line = error.as_bytes()[..valid]
                .iter()
                .filter(|&&b| b == b'\n')
                .count()
                + 1;
            Err(InputError::in_file(path, "not valid UTF-8")
                .at_line(Some(line))
                .with_hint("save the file as UTF-8 in your editor")
                .into())
        }
    }
}

/// The archive chunks in `dir`: number and bytes.
fn read_chunks(dir: &Path) -> anyhow::Result<Vec<(u32, Vec<u8>)>> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => {
            return Err(anyhow::Error::new(error).context(format!("cannot read {}", dir.display())))
        }
    };
    let mut chunks = Vec::new();
    for entry in entries {
        if let Some(seq) = entry.name.to_str().and_then(log::chunk_seq) {
            let path = dir.join(&entry.name);
            let bytes =
                fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
            chunks.push((seq, bytes));
        }
    }
    chunks.sort_by_key(|(seq, _)| *seq);
    Ok(chunks)
}

/// This mission's id, from `.harness/mission-id`, and whether it is recorded there; a new one
/// (not written yet: the first pass that writes anything records it) when there is none.
fn mission_id(state: &StateDir, now: Timestamp) -> anyhow::Result<(String, bool)> {
    let path = state.mission_id();
    if let Some(text) = read_text(&path)? {
        let id = text.trim();
        let valid = !id.is_empty()
            && id.len() <= 64
            && id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !valid {
            return Err(
                InputError::in_file(&path, format!("invalid mission id {id:?}"))
                    .at_line(Some(1))
                    .with_hint(
                        "use letters, digits, '-', '_' and '.', or delete the file for a new id",
                    )
                    .into(),
            );
        }
        return Ok((id.to_string(), true));
    }
    let seed = format!(
        "{}\n{}\n{:?}",
        state.root().display(),
        std::process::id(),
        std::time::SystemTime::now()
    );
    Ok((
        format!("m-{}-{}", now.timestamp(), short_hash(seed.as_bytes())),
        false,
    ))
}
