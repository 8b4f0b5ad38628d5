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

use crate::base::atomic::{create_new, write_atomic};
use crate::base::error::{InputError, LockHeld};
use crate::base::exit_codes;
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

/// Runs one pass on the project of `request` (see the module documentation). An interrupt during
/// the pass stops it at once with [`Interrupted`], nothing written; one during the agent's run
/// ends it with exit code 130, nothing written either.
pub fn run(request: &Request) -> anyhow::Result<Outcome> {
    request
        .params
        .check()
        .map_err(|message| InputError::new(format!("curator parameter {message}")))?;
    let state = &request.state;
    if !state.root().is_dir() {
        return Err(
            InputError::in_file(state.root(), "the state directory does not exist")
                .with_hint("create it with `./run.sh init -C <project dir>`")
                .into(),
        );
    }
    let now = time::now();
    let holder = locks::describe_holder(std::process::id(), "curator", &time::format(now));
    // raw.md's lock, then summary.md's (which one curator holds for the whole pass); raw.md's
    // only as long as it takes to read the file.
    let (raw, _summary_lock) = loop {
        let raw_lock = Lock::acquire(&state.raw_lock()).context("cannot lock raw.md")?;
        let summary_lock = if request.dry_run {
            None
        } else {
            match Lock::try_acquire(&state.summary_lock(), "the curator", &holder) {
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
        let raw = read_optional(&state.raw())?.unwrap_or_default();
        drop(raw_lock);
        break (raw, summary_lock);
    };
    let mut snapshot = Snapshot {
        raw,
        chunks: read_chunks(&state.archive_dir())?,
        summary: read_text(&state.summary())?,
        memory: read_text(&state.memory())?,
        demoted: read_text(&state.archive_dir().join(DEMOTED_FILE))?.unwrap_or_default(),
        record: match read_text(&state.curator_record())? {
            Some(text) => Record::parse(&text, &state.curator_record())?,
            None => Record::default(),
        },
        identities: Vec::new(),
        ledger: Ledger::default(),
        mission: String::new(),
        mission_recorded: false,
        project: request.workdir.display().to_string(),
    };
    read_identity(&request.home, &mut snapshot)?;
    (snapshot.mission, snapshot.mission_recorded) = mission_id(state, now)?;

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
        verdict = Some(proposal.verdict);
        agent_entries = proposal.entries;
    }

    // The identity directory is shared by every mission: its lock is held from reading the
    // identity files to writing them, so two projects' curators never lose each other's lines.
    let identity_lock = if request.dry_run {
        None
    } else {
        Some(identity_lock(&request.home)?)
    };
    if identity_lock.is_some() {
        read_identity(&request.home, &mut snapshot)?;
    }
    let mut pass =
        curate(&snapshot, &request.params, now, &wordings, &cancel).map_err(interrupted)?;
    pass.report.agent = verdict;
    pass.report.dry_run = request.dry_run;
    if request.dry_run {
        return Ok(Outcome {
            exit_code: exit_codes::DONE,
            report: pass.report,
        });
    }
    // The last moment to stop with nothing written. The writes that follow are quick, and are
    // not stopped halfway: that would leave the rest to the next pass.
    if let Some(signal) = signals::received() {
        return Err(Interrupted {
            signal,
            waiting: false,
        }
        .into());
    }
    write_pass(request, &snapshot, &mut pass, identity_lock)?;
    if !agent_entries.is_empty() {
        memory::append_raw(state, &agent_entries).context("cannot append to raw.md")?;
    }
    Ok(Outcome {
        exit_code: exit_codes::DONE,
        report: pass.report,
    })
}

/// The identity directory's lock (created with the directory if need be).
fn identity_lock(home: &HarnessHome) -> anyhow::Result<Lock> {
    let path = home.identity_lock();
    Lock::acquire(&path).with_context(|| format!("cannot lock {}", path.display()))
}

/// Reads the identity files and the ledger into `snapshot`.
fn read_identity(home: &HarnessHome, snapshot: &mut Snapshot) -> anyhow::Result<()> {
    snapshot.identities = Role::ALL
        .into_iter()
        .map(|role| Ok((role, read_text(&home.identity(role))?)))
        .collect::<anyhow::Result<_>>()?;
    snapshot.ledger = match read_text(&home.ledger())? {
        Some(text) => Ledger::parse(&text, &home.ledger())?,
        None => Ledger::default(),
    };
    Ok(())
}

/// Writes what the pass decided, in an order that a kill between two writes never loses an entry
/// nor duplicates one on the next pass: the archive chunk before raw.md is truncated (a chunk
/// whose lines are still in raw.md is recognised by raw.md's note), the demoted bullets before
/// MEMORY.md lets them go, MEMORY.md before summary.md lets a demoted item go, and the record
/// last but raw.md.
fn write_pass(
    request: &Request,
    snapshot: &Snapshot,
    pass: &mut Pass,
    identity_lock: Option<Lock>,
) -> anyhow::Result<()> {
    let state = &request.state;
    let files = &pass.files;
    if let Some(text) = &files.mission {
        let path = state.mission_id();
        create_new(&path, text.as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if let Some((seq, bytes)) = &files.chunk {
        let dir = state.archive_dir();
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        let path = dir.join(log::chunk_name(*seq));
        if !create_new(&path, bytes).with_context(|| format!("cannot write {}", path.display()))? {
            anyhow::bail!(
                "{} exists already; raw.md was left as it was (run the curator again)",
                path.display()
            );
        }
    }
    if let Some(text) = &files.demoted {
        let path = state.archive_dir().join(DEMOTED_FILE);
        std::fs::create_dir_all(state.archive_dir())?;
        write_atomic(&path, text.as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    for (text, path) in [
        (&files.memory, state.memory()),
        (&files.summary, state.summary()),
    ] {
        if let Some(text) = text {
            write_atomic(&path, text.as_bytes())
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
    }
    if !files.identities.is_empty() || files.ledger.is_some() {
        std::fs::create_dir_all(request.home.identity_dir())
            .with_context(|| format!("cannot create {}", request.home.identity_dir().display()))?;
    }
    for (role, text) in &files.identities {
        let path = request.home.identity(*role);
        write_atomic(&path, text.as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if let Some(text) = &files.ledger {
        let path = request.home.ledger();
        write_atomic(&path, text.as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    drop(identity_lock);
    if let Some(text) = &files.record {
        let path = state.curator_record();
        write_atomic(&path, text.as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if let Some(new_raw) = &files.raw {
        // Taken again while summary.md's is held: safe, since a curator holding raw.md's lock
        // never waits for summary.md's, and workers hold it only to append.
        let _raw_lock = Lock::acquire(&state.raw_lock()).context("cannot lock raw.md")?;
        let current = read_optional(&state.raw())?.unwrap_or_default();
        if current.starts_with(&snapshot.raw) {
            // Lines appended during the pass stay, after the kept ones.
            let mut text = new_raw.clone();
            text.extend_from_slice(&current[snapshot.raw.len()..]);
            write_atomic(&state.raw(), &text).context("cannot write raw.md")?;
        } else {
            pass.report.warnings.push(
                "raw.md was edited during the pass: it was left as it is and will be truncated \
                 by the next pass"
                    .into(),
            );
            pass.report.files.retain(|name| name != "raw.md");
        }
    }
    Ok(())
}

/// A file's bytes, `None` when it does not exist.
fn read_optional(path: &Path) -> anyhow::Result<Option<Vec<u8>>> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(error) => {
            Err(anyhow::Error::new(error).context(format!("cannot read {}", path.display())))
        }
    }
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
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => {
            return Err(anyhow::Error::new(error).context(format!("cannot read {}", dir.display())))
        }
    };
    let mut chunks = Vec::new();
    for entry in entries {
        let entry = entry.with_context(|| format!("cannot read {}", dir.display()))?;
        let name = entry.file_name();
        if let Some(seq) = name.to_str().and_then(log::chunk_seq) {
            let bytes = std::fs::read(entry.path())
                .with_context(|| format!("cannot read {}", entry.path().display()))?;
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
