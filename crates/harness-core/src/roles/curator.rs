//! The curator: one deterministic, idempotent pass over the mission's memory layers (DESIGN.md,
//! "The curator"). It reads the log (raw.md and archive/), groups the entries that say the same
//! thing into [items], places each item in summary.md (L2) or MEMORY.md (L3) within their
//! bounds, graduates the ones that earned it into `identity/<role>.md` (L4), and truncates raw.md
//! to its last entries, the rest going to archive/ verbatim. Nothing is ever lost: what leaves a
//! layer goes one layer down, and every entry stays in archive/ or raw.md.
//!
//! [`curate`] is the pass itself, a pure function of the files it reads ([`Snapshot`]), the
//! parameters and the clock, returning the files to write and a [`Report`]. [`run()`] does the I/O
//! around it (locks, reads, the optional agent [`rewrite`], writes in a kill-safe order).
//!
//! Where an item goes: an item the user took over (edited its bullet) or dismissed (deleted its
//! bullet) is theirs; a superseded decision goes to MEMORY.md's History; a current decision, and
//! a lesson or thing to avoid seen at least `promote_min_seen` times, to summary.md, best
//! supported first while summary.md stays within its bounds, the rest to MEMORY.md; what was
//! seen once to MEMORY.md's Context. MEMORY.md keeps the best supported within its bound, the
//! History last; what does not fit is in archive/ only (its bullet, if it had one, is copied to
//! archive/demoted.md).

pub mod document;
pub mod graduation;
pub mod hygiene;
pub mod items;
pub mod join;
pub mod judgments;
pub mod kinds;
pub mod log;
pub mod modes;
pub mod practices;
pub mod record;
pub mod report;
pub mod rewrite;
pub mod run;
pub mod similarity;
pub mod supersede;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::base::hash;
use crate::base::text::cut;
use crate::base::time::{self, Timestamp};
use crate::spec::role::Role;
use crate::state::memory::{Tag, GRADUATED_COMMENT};

use document::{bullet_line, marker_ids, size, Document, Layer};
use graduation::{Graduation, Identities, Ledger, Recurrence};
use items::{Item, Kind};
use record::{Record, Wording};
use similarity::Context;

pub use report::{AgentVerdict, Change, ItemReport, Malformed, Report};
pub use run::{read_text, run, Interrupted, Outcome, Request};

/// Length of an item id (hex digits of a hash of its earliest raw line).
pub const ID_LEN: usize = 10;
/// The longest text of a summary bullet (a longer item is cut there; MEMORY.md and archive/ have
/// it whole).
pub const SUMMARY_TEXT_CHARS: usize = 200;
/// The file in archive/ that keeps, verbatim, the bullets the curator took out of MEMORY.md.
pub const DEMOTED_FILE: &str = "demoted.md";

/// The curator's parameters, as config.yaml's `curator:` sets them.
pub use crate::spec::config::CuratorParams as Params;

/// Everything a pass reads.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    /// raw.md's bytes (empty when missing).
    pub raw: Vec<u8>,
    /// The archive chunks: number and bytes.
    pub chunks: Vec<(u32, Vec<u8>)>,
    /// summary.md, if it exists.
    pub summary: Option<String>,
    /// MEMORY.md, if it exists.
    pub memory: Option<String>,
    /// archive/demoted.md (empty when missing).
    pub demoted: String,
    /// curator.json.
    pub record: Record,
    /// `identity/<role>.md` of every role.
    pub identities: Identities,
    /// identity/ledger.json.
    pub ledger: Ledger,
    /// This mission's id (`.harness/mission-id`).
    pub mission: String,
    /// Whether `.harness/mission-id` holds it already (else a pass that writes records it).
    pub mission_recorded: bool,
    /// The project directory, for the ledger.
    pub project: String,
    /// Calls of the curator's agent accepted in this run, not in the record yet.
    pub judged: judgments::Judgments,
}

/// Where an item is after a pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Place {
    /// A curator bullet in summary.md, in its known section `n`.
    Summary(usize),
    /// A curator bullet in MEMORY.md, in its known section `n`.
    Memory(usize),
    /// A line of the user's (an edited curator bullet) stands for it in this file.
    Yours(Layer),
    /// In no file: it did not fit; its entries are in archive/.
    Archive,
    /// The user deleted its bullet; its entries are in archive/.
    Dismissed,
}

impl Place {
    /// Where, in words: `summary.md Lessons`, `archive/`…
    pub fn describe(self) -> String {
        match self {
            Place::Summary(n) => format!("summary.md {}", Layer::Summary.sections()[n]),
            Place::Memory(n) => format!("MEMORY.md {}", Layer::Memory.sections()[n]),
            Place::Yours(layer) => format!("your line in {}", layer.file_name()),
            Place::Archive => "archive/".into(),
            Place::Dismissed => "dismissed (you deleted its line)".into(),
        }
    }
}

/// MEMORY.md's sections, by index in [`document::MEMORY_SECTIONS`].
const MEMORY_DECISIONS: usize = 0;
const MEMORY_CONTEXT: usize = 1;
const MEMORY_HISTORY: usize = 2;
const MEMORY_LESSONS: usize = 3;

/// The summary section of a kind.
fn summary_section(kind: Kind) -> usize {
    match kind {
        Kind::Lesson => 0,
        Kind::Decision => 1,
        Kind::Avoid => 2,
    }
}

/// The files a pass writes; `None` (or absent) means unchanged.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Files {
    /// `.harness/mission-id`, when this pass is the first to write anything.
    pub mission: Option<String>,
    /// A new archive chunk: number and bytes.
    pub chunk: Option<(u32, Vec<u8>)>,
    /// archive/demoted.md.
    pub demoted: Option<String>,
    /// MEMORY.md.
    pub memory: Option<String>,
    /// summary.md.
    pub summary: Option<String>,
    /// `identity/<role>.md` files that gain lines.
    pub identities: Vec<(Role, String)>,
    /// identity/ledger.json.
    pub ledger: Option<String>,
    /// curator.json.
    pub record: Option<String>,
    /// raw.md, in place of the bytes that were read.
    pub raw: Option<Vec<u8>>,
}

impl Files {
    /// `archive/<chunk>`, when the pass writes a new archive chunk.
    pub fn chunk_path(&self) -> Option<String> {
        let (seq, _) = self.chunk.as_ref()?;
        Some(format!("archive/{}", log::chunk_name(*seq)))
    }

    /// The names of the files that change, in the order they are written.
    pub fn names(&self) -> Vec<String> {
        let mut names = Vec::new();
        if self.mission.is_some() {
            names.push("mission-id".to_string());
        }
        names.extend(self.chunk_path());
        let fixed = [
            (self.demoted.is_some(), format!("archive/{DEMOTED_FILE}")),
            (self.memory.is_some(), "MEMORY.md".to_string()),
            (self.summary.is_some(), "summary.md".to_string()),
        ];
        names.extend(fixed.into_iter().filter(|(c, _)| *c).map(|(_, n)| n));
        names.extend(
            self.identities
                .iter()
                .map(|(role, _)| format!("identity/{role}.md")),
        );
        if self.ledger.is_some() {
            names.push("identity/ledger.json".into());
        }
        if self.record.is_some() {
            names.push("curator.json".into());
        }
        if self.raw.is_some() {
            names.push("raw.md".into());
        }
        names
    }
}

/// A summary bullet as the pass shows it, for the agent's rewrite to start from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shown {
    pub id: String,
    /// The bullet's text (before the evidence).
    pub text: String,
    /// The evidence, compact.
    pub evidence: String,
}

/// summary.md as the pass lays it out: the document (the user's lines) and the curator's
/// bullets of each section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SummaryPlan {
    /// The parsed summary.md.
    pub doc: Document,
    /// The bullets of each known section, in order.
    pub bullets: Vec<Vec<Shown>>,
}

impl SummaryPlan {
    /// The file's text, with the wordings in `wordings` (item id → text) in place of the
    /// pass's own.
    pub fn render(&self, wordings: &BTreeMap<String, String>) -> String {
        let lines: Vec<Vec<String>> = self
            .bullets
            .iter()
            .enumerate()
            .map(|(section, shown)| {
                let heading = self.doc.heading(section);
                shown
                    .iter()
                    .map(|s| {
                        let text = wordings.get(&s.id).unwrap_or(&s.text);
                        bullet_line(
                            Layer::Summary,
                            heading,
                            &s.id,
                            &format!("- {text} ({})", s.evidence),
                        )
                    })
                    .collect()
            })
            .collect();
        self.doc.render(&lines)
    }
}

pub use crate::base::cancel::Cancelled;

/// A large value of a pass, freed on a thread of its own when dropped: freeing the millions of
/// allocations of a pass over a million entries takes most of a second, which neither the end
/// of the pass nor an interrupt should wait for.
struct Background<T: Send + 'static>(Option<T>);

impl<T: Send + 'static> Background<T> {
    fn new(value: T) -> Self {
        Self(Some(value))
    }

    /// The value, to be freed by whoever takes it.
    fn into_inner(mut self) -> T {
        self.0.take().expect("a value until it is taken")
    }
}

impl<T: Send + 'static> std::ops::Deref for Background<T> {
    type Target = T;

    fn deref(&self) -> &T {
        self.0.as_ref().expect("a value until it is taken")
    }
}

impl<T: Send + 'static> std::ops::DerefMut for Background<T> {
    fn deref_mut(&mut self) -> &mut T {
        self.0.as_mut().expect("a value until it is taken")
    }
}

impl<T: Send + 'static> Drop for Background<T> {
    fn drop(&mut self) {
        if let Some(value) = self.0.take() {
            // Should the thread not start, the value is freed here, as it would have been.
            let _ = std::thread::Builder::new()
                .name("free".into())
                .spawn(move || drop(value));
        }
    }
}

/// The outcome of [`curate`].
#[derive(Debug, Clone, PartialEq)]
pub struct Pass {
    /// The files to write.
    pub files: Files,
    /// What was found and done.
    pub report: Report,
    /// summary.md's layout, for `--agent`.
    pub summary_plan: SummaryPlan,
}

/// One pass: from what the files hold (`snapshot`), the parameters, the clock and the agent's
/// accepted wordings (item id → summary text), the files to write and the report. Pure: the
/// same inputs give the same bytes. `cancel` is asked all along the pass (it must be cheap);
/// when it says so, the pass stops with [`Cancelled`].
pub fn curate(
    snapshot: &Snapshot,
    params: &Params,
    now: Timestamp,
    wordings: &BTreeMap<String, String>,
    cancel: &dyn Fn() -> bool,
) -> Result<Pass, Cancelled> {
    // Between the steps that are not cancelled inside (none takes long).
    let check = || if cancel() { Err(Cancelled) } else { Ok(()) };
    let log = Background::new(log::read_unless(&snapshot.raw, &snapshot.chunks, cancel)?);
    let lines: Vec<&log::Line> = log.lines().collect();
    let context = log_context(&snapshot.project, &lines);
    let judged = snapshot.record.judgments.with(&snapshot.judged);
    let grouped = items::group(
        &lines,
        params.similarity,
        params.supersede_similarity,
        &context,
        cancel,
    )?;
    let items = Background::new(judgments::apply(grouped, &judged, &context));
    let summary_doc = Document::parse(Layer::Summary, snapshot.summary.as_deref());
    let memory_doc = Document::parse(Layer::Memory, snapshot.memory.as_deref());
    let edits = HandEdits::read(snapshot, &summary_doc, &memory_doc);
    let mut warnings = log.warnings.clone();

    let summary_text = |item: &Item| summary_text(item, wordings, &snapshot.record);
    let (place, plan) = place_items(
        &items,
        &edits,
        [&summary_doc, &memory_doc],
        params,
        &summary_text,
        &mut warnings,
        cancel,
    )?;
    let summary_new = plan.render(&BTreeMap::new());
    let memory_new = render_memory(&items, &place, &memory_doc);
    let demoted = demoted_text(
        snapshot,
        &items,
        &place,
        &edits,
        [&summary_doc, &memory_doc],
        now,
    );
    check()?;

    // Graduation, and this mission's failure modes and lessons in the ledger.
    let (eligible, ledger) = eligible_and_ledger(snapshot, &items, &place);
    let recurrence = Recurrence::new(&ledger, params.similarity, &snapshot.mission, &context);
    let graduations = graduation::graduate(
        (&eligible, &snapshot.record.graduated),
        &snapshot.identities,
        &recurrence,
        (&context, &judged),
        params,
        cancel,
    )?;

    let record = new_record(
        &items,
        &place,
        &edits,
        demoted.len(),
        wordings,
        &snapshot.record,
        (judged, graduated_ids(snapshot, &eligible, &graduations)),
    );
    let truncation = log::truncate(&log, &snapshot.raw, params.keep_raw);
    check()?;
    let archived_lines = truncation.archived_lines;
    let files = new_files(
        snapshot,
        truncation,
        demoted,
        (&memory_new, &summary_new),
        &place,
        &graduations,
        (&ledger, &record),
    );

    let old_places = old_places(&summary_doc, &memory_doc);
    // Large, and dropped at once if the pass is given up below.
    let items_report = Background::new(report::items(&items, &place, &recurrence, cancel)?);
    let changes = report::changes(
        &items,
        &place,
        &|item: &Item| old_place(item, &old_places),
        &edits.newly_dismissed,
        &graduations,
        cancel,
    )?;
    let report = Report {
        mission: snapshot.mission.clone(),
        entries: lines.len(),
        malformed: report::malformed(&lines),
        items: items_report.into_inner(),
        changes,
        archived_lines,
        chunk: files.chunk_path(),
        summary: size(&summary_new),
        memory: size(&memory_new),
        warnings,
        files: files.names(),
        agent: None,
        dry_run: false,
    };
    Ok(Pass {
        files,
        report,
        summary_plan: plan,
    })
}

/// The items that may graduate (lessons and things to avoid the user did not dismiss), and the
/// cross-mission ledger with this mission's failure modes and lessons among them.
fn eligible_and_ledger<'i>(
    snapshot: &Snapshot,
    items: &'i [Item],
    place: &BTreeMap<&str, Place>,
) -> (Vec<&'i Item>, Ledger) {
    let eligible: Vec<&Item> = items
        .iter()
        .filter(|item| item.kind != Kind::Decision && place[item.id.as_str()] != Place::Dismissed)
        .collect();
    let ledger = snapshot
        .ledger
        .with_mission(&snapshot.mission, &snapshot.project, &eligible);
    (eligible, ledger)
}

/// The files a pass changes, from what it decided (`None`: unchanged); `.harness/mission-id`
/// with the first pass that writes anything.
fn new_files(
    snapshot: &Snapshot,
    truncation: log::Truncation,
    demoted: String,
    (memory_new, summary_new): (&str, &str),
    place: &BTreeMap<&str, Place>,
    graduations: &[Graduation],
    (ledger, record): (&Ledger, &Record),
) -> Files {
    let has = |wanted: fn(&Place) -> bool| place.values().any(wanted);
    let mut files = Files {
        mission: None,
        chunk: truncation.chunk,
        demoted: (demoted != snapshot.demoted).then_some(demoted),
        memory: changed_text(
            &snapshot.memory,
            memory_new,
            has(|p| matches!(p, Place::Memory(_))),
        ),
        summary: changed_text(
            &snapshot.summary,
            summary_new,
            has(|p| matches!(p, Place::Summary(_))),
        ),
        identities: identity_files(&snapshot.identities, graduations),
        ledger: (*ledger != snapshot.ledger).then(|| ledger.to_json()),
        record: (*record != snapshot.record).then(|| record.to_json()),
        raw: truncation.raw,
    };
    if !snapshot.mission_recorded && files != Files::default() {
        files.mission = Some(format!("{}\n", snapshot.mission));
    }
    files
}

/// The context in which a mission's entries are read: its project's name, the feature ids of
/// its entries, the directories their paths name and the passwords they give.
fn log_context(project: &str, lines: &[&log::Line]) -> Context {
    let features: BTreeSet<&str> = lines
        .iter()
        .filter_map(|line| line.entry.as_ref().ok())
        .filter_map(|entry| entry.feature.as_ref().map(|f| f.as_str()))
        .collect();
    let entries = || lines.iter().filter_map(|line| line.entry.as_ref().ok());
    Context::new(project, features)
        .with_directories_of(entries().map(|entry| entry.text.as_str()))
        .with_passwords_in(entries().map(|entry| entry.text.as_str()))
        .with_names_chosen_in(
            entries()
                .filter(|entry| entry.tag == Tag::Decision)
                .map(|entry| entry.text.as_str()),
        )
}

/// What the user did by hand since the last pass, as the files and the record tell.
struct HandEdits<'a> {
    /// Item ids named in the user's lines of summary.md: edited curator bullets.
    claimed_summary: BTreeSet<String>,
    /// The same in MEMORY.md.
    claimed_memory: BTreeSet<String>,
    /// Items whose line the user deleted, since the last pass or before.
    dismissed: BTreeSet<String>,
    /// Those deleted since the last pass.
    newly_dismissed: BTreeSet<String>,
    /// archive/demoted.md past what the record saw: written by a pass stopped before its record.
    fresh_demotions: &'a str,
}

impl<'a> HandEdits<'a> {
    /// An item the last pass left a line for (the record says where) that now has none — no
    /// curator bullet, no line of the user's naming it, no fresh demotion — was deleted by hand.
    fn read(snapshot: &'a Snapshot, summary: &Document, memory: &Document) -> Self {
        let claimed_summary = summary.claimed_ids();
        let claimed_memory = memory.claimed_ids();
        let seen_bytes = snapshot
            .record
            .demoted_bytes
            .min(snapshot.demoted.len() as u64) as usize;
        let fresh_demotions = snapshot.demoted.get(seen_bytes..).unwrap_or("");
        let present: BTreeSet<String> = [summary, memory]
            .iter()
            .flat_map(|doc| doc.sections.iter().flat_map(|s| s.curator.iter()))
            .map(|bullet| bullet.id.clone())
            .chain(claimed_summary.iter().cloned())
            .chain(claimed_memory.iter().cloned())
            .chain(fresh_demotions.lines().flat_map(marker_ids))
            .collect();
        let newly_dismissed: BTreeSet<String> = snapshot
            .record
            .placed
            .keys()
            .filter(|id| !present.contains(*id))
            .cloned()
            .collect();
        Self {
            dismissed: snapshot
                .record
                .dismissed
                .union(&newly_dismissed)
                .cloned()
                .collect(),
            claimed_summary,
            claimed_memory,
            newly_dismissed,
            fresh_demotions,
        }
    }
}

/// Where each item goes (see the module documentation), and summary.md's layout.
fn place_items<'a>(
    items: &'a [Item],
    edits: &HandEdits,
    [summary_doc, memory_doc]: [&Document; 2],
    params: &Params,
    summary_text: &dyn Fn(&Item) -> String,
    warnings: &mut Vec<String>,
    cancel: &dyn Fn() -> bool,
) -> Result<(BTreeMap<&'a str, Place>, SummaryPlan), Cancelled> {
    let mut place: BTreeMap<&str, Place> = BTreeMap::new();
    let mut summary_candidates: Vec<&Item> = Vec::new();
    let mut memory_live: Vec<(&Item, usize)> = Vec::new();
    let mut history: Vec<&Item> = Vec::new();
    for item in items {
        if cancel() {
            return Err(Cancelled);
        }
        if item.named_by(&edits.dismissed) {
            place.insert(&item.id, Place::Dismissed);
        } else if item.named_by(&edits.claimed_summary) {
            place.insert(&item.id, Place::Yours(Layer::Summary));
        } else if item.named_by(&edits.claimed_memory) {
            place.insert(&item.id, Place::Yours(Layer::Memory));
        } else if item.superseded_by.is_some() {
            history.push(item);
        } else if item.kind == Kind::Decision || item.seen >= params.promote_min_seen {
            summary_candidates.push(item);
        } else {
            memory_live.push((item, MEMORY_CONTEXT));
        }
    }

    // summary.md: the current decisions first (what every role must follow), then the best
    // supported, while the file stays within its bounds.
    summary_candidates.sort_by(|a, b| {
        (a.kind != Kind::Decision, rank(a)).cmp(&(b.kind != Kind::Decision, rank(b)))
    });
    let mut plan = SummaryPlan {
        bullets: vec![Vec::new(); Layer::Summary.sections().len()],
        doc: summary_doc.clone(),
    };
    let user_only = size(&summary_doc.render_user_only());
    if user_only.lines > params.summary_max_lines || user_only.tokens > params.summary_max_tokens {
        warnings.push(format!(
            "your own lines in summary.md alone take {} lines and about {} tokens, over its bound \
             of {} lines and {} tokens: they are kept, and the curator's bullets moved to MEMORY.md",
            user_only.lines, user_only.tokens, params.summary_max_lines, params.summary_max_tokens
        ));
    }
    let mut full = false;
    for item in summary_candidates {
        let section = summary_section(item.kind);
        if !full {
            plan.bullets[section].push(Shown {
                id: item.id.clone(),
                text: summary_text(item),
                evidence: evidence_short(item),
            });
            let fits = size(&plan.render(&BTreeMap::new()));
            if fits.lines <= params.summary_max_lines && fits.tokens <= params.summary_max_tokens {
                place.insert(&item.id, Place::Summary(section));
                continue;
            }
            // The least supported and oldest from here on are demoted.
            plan.bullets[section].pop();
            full = true;
        }
        let section = if item.kind == Kind::Decision {
            MEMORY_DECISIONS
        } else {
            MEMORY_LESSONS
        };
        memory_live.push((item, section));
    }

    // MEMORY.md: one line each, live items by support, then the History, newest first.
    memory_live.sort_by(|(a, _), (b, _)| rank(a).cmp(&rank(b)));
    history.sort_by(|a, b| b.last_seen.cmp(&a.last_seen).then(a.id.cmp(&b.id)));
    let user_lines = size(&memory_doc.render_user_only()).lines;
    if user_lines > params.memory_max_lines {
        warnings.push(format!(
            "your own lines in MEMORY.md alone take {user_lines} lines, over its bound of {}: \
             they are kept, and the curator's bullets moved to archive/",
            params.memory_max_lines
        ));
    }
    let mut room = params.memory_max_lines.saturating_sub(user_lines);
    for (item, section) in memory_live
        .into_iter()
        .chain(history.into_iter().map(|item| (item, MEMORY_HISTORY)))
    {
        if cancel() {
            return Err(Cancelled);
        }
        let at = if room > 0 {
            room -= 1;
            Place::Memory(section)
        } else {
            Place::Archive
        };
        place.insert(&item.id, at);
    }
    Ok((place, plan))
}

/// An item's summary text: the agent's wording accepted in this pass, or in an earlier one
/// while the item still says the same, else its own text (cut to [`SUMMARY_TEXT_CHARS`]).
fn summary_text(item: &Item, wordings: &BTreeMap<String, String>, record: &Record) -> String {
    wordings
        .get(&item.id)
        .cloned()
        .or_else(|| {
            record
                .wording
                .get(&item.id)
                .filter(|w| w.of == item.text)
                .map(|w| w.text.clone())
        })
        .unwrap_or_else(|| cut(&item.text, SUMMARY_TEXT_CHARS))
}

/// MEMORY.md's new text: the user's lines, then the curator's bullets of each section (the
/// History newest first, the others best supported first).
fn render_memory(items: &[Item], place: &BTreeMap<&str, Place>, doc: &Document) -> String {
    let by_id: BTreeMap<&str, &Item> = items.iter().map(|i| (i.id.as_str(), i)).collect();
    let mut sections: Vec<Vec<&Item>> = vec![Vec::new(); Layer::Memory.sections().len()];
    for item in items {
        if let Place::Memory(section) = place[item.id.as_str()] {
            sections[section].push(item);
        }
    }
    let lines: Vec<Vec<String>> = sections
        .into_iter()
        .enumerate()
        .map(|(section, mut shown)| {
            if section == MEMORY_HISTORY {
                shown.sort_by(|a, b| b.last_seen.cmp(&a.last_seen).then(a.id.cmp(&b.id)));
            } else {
                shown.sort_by(|a, b| rank(a).cmp(&rank(b)));
            }
            let heading = doc.heading(section);
            shown
                .into_iter()
                .map(|item| {
                    let body = memory_body(item, section, &by_id);
                    bullet_line(Layer::Memory, heading, &item.id, &body)
                })
                .collect()
        })
        .collect();
    doc.render(&lines)
}

/// archive/demoted.md with the curator bullets that leave both files appended, verbatim, each
/// after the time and where it was (unless a stopped pass appended it already).
fn demoted_text(
    snapshot: &Snapshot,
    items: &[Item],
    place: &BTreeMap<&str, Place>,
    edits: &HandEdits,
    docs: [&Document; 2],
    now: Timestamp,
) -> String {
    let mut text = snapshot.demoted.clone();
    let by_entry = items_by_entry(items);
    for doc in docs {
        for section in &doc.sections {
            for bullet in &section.curator {
                let item = by_entry.get(bullet.id.as_str());
                let gone = item.is_none_or(|item| place[item.id.as_str()] == Place::Archive);
                if !gone || edits.fresh_demotions.contains(&bullet.line) {
                    continue;
                }
                if !text.is_empty() && !text.ends_with('\n') {
                    text.push('\n');
                }
                text.push_str(&format!(
                    "[{}] {} {}: {}\n",
                    time::format(now),
                    doc.layer.file_name(),
                    section.heading.trim_end(),
                    bullet.line
                ));
            }
        }
    }
    text
}

/// The items this mission graduated, after the pass: those the record says, those of
/// `graduations`, and those of `eligible` whose own line an identity file holds already (a pass
/// killed after it wrote the identity file, before curator.json, graduated them; without them
/// the record would not keep a line the user deletes deleted).
fn graduated_ids(
    snapshot: &Snapshot,
    eligible: &[&Item],
    graduations: &[Graduation],
) -> BTreeSet<String> {
    let own_lines: BTreeSet<String> = snapshot
        .identities
        .iter()
        .filter_map(|(_, text)| text.as_deref())
        .flat_map(str::lines)
        .filter(|line| line.contains(GRADUATED_COMMENT))
        .filter_map(|line| marker_ids(line).into_iter().next())
        .collect();
    let mut graduated = snapshot.record.graduated.clone();
    graduated.extend(graduations.iter().map(|g| g.id.clone()));
    graduated.extend(
        eligible
            .iter()
            .filter(|item| own_lines.contains(&item.id))
            .map(|item| item.id.clone()),
    );
    graduated
}

/// curator.json after the pass: where each item's line is, the dismissed items, how far
/// archive/demoted.md goes, the agent's wordings still valid and its calls, and the items this
/// mission graduated.
fn new_record(
    items: &[Item],
    place: &BTreeMap<&str, Place>,
    edits: &HandEdits,
    demoted_bytes: usize,
    wordings: &BTreeMap<String, String>,
    old: &Record,
    (judgments, graduated): (judgments::Judgments, BTreeSet<String>),
) -> Record {
    let mut record = Record {
        dismissed: edits.dismissed.clone(),
        demoted_bytes: demoted_bytes as u64,
        judgments,
        graduated,
        ..Record::default()
    };
    for item in items {
        let file = match place[item.id.as_str()] {
            Place::Summary(_) | Place::Yours(Layer::Summary) => Layer::Summary.file_name(),
            Place::Memory(_) | Place::Yours(Layer::Memory) => Layer::Memory.file_name(),
            Place::Archive | Place::Dismissed => continue,
        };
        record.placed.insert(item.id.clone(), file.to_string());
        let wording = wordings
            .get(&item.id)
            .map(|text| Wording {
                text: text.clone(),
                of: item.text.clone(),
            })
            .or_else(|| {
                old.wording
                    .get(&item.id)
                    .filter(|w| w.of == item.text)
                    .cloned()
            });
        if let Some(wording) = wording {
            record.wording.insert(item.id.clone(), wording);
        }
    }
    record
}

/// A memory file's new text, or `None` when it does not change; a file that does not exist is
/// created only once it has a bullet to hold.
fn changed_text(old: &Option<String>, new: &str, has_bullets: bool) -> Option<String> {
    if old.as_deref() == Some(new) || (old.is_none() && !has_bullets) {
        None
    } else {
        Some(new.to_string())
    }
}

/// Each entry id of `items` with its item: the item that a marker naming the entry names.
fn items_by_entry(items: &[Item]) -> HashMap<&str, &Item> {
    let mut by_entry = HashMap::new();
    for item in items {
        for id in item.entry_ids() {
            by_entry.entry(id).or_insert(item);
        }
    }
    by_entry
}

/// Where the curator's bullets were before the pass: each bullet's id with the first known
/// section that shows it (summary.md's first), numbered in that order.
fn old_places<'a>(summary: &'a Document, memory: &'a Document) -> HashMap<&'a str, (usize, Place)> {
    let mut places = HashMap::new();
    let sections = [summary, memory].into_iter().flat_map(|doc| {
        doc.sections.iter().filter_map(move |section| {
            let place = match doc.layer {
                Layer::Summary => Place::Summary(section.known?),
                Layer::Memory => Place::Memory(section.known?),
            };
            Some((section, place))
        })
    });
    for (order, (section, place)) in sections.enumerate() {
        for bullet in &section.curator {
            places.entry(bullet.id.as_str()).or_insert((order, place));
        }
    }
    places
}

/// Where the curator's bullet of `item` was before the pass, if it had one: the first section
/// of [`old_places`] showing any of its entries.
fn old_place(item: &Item, old_places: &HashMap<&str, (usize, Place)>) -> Option<Place> {
    item.entry_ids()
        .filter_map(|id| old_places.get(id))
        .min_by_key(|(order, _)| *order)
        .map(|(_, place)| *place)
}

/// The order of support, best first: more workers, more sightings, more recent, then by id. The
/// bounds demote from the end: the least supported and oldest first.
fn rank(
    item: &Item,
) -> (
    std::cmp::Reverse<usize>,
    std::cmp::Reverse<usize>,
    std::cmp::Reverse<Timestamp>,
    &str,
) {
    use std::cmp::Reverse;
    (
        Reverse(item.workers.len()),
        Reverse(item.seen),
        Reverse(item.last_seen),
        &item.id,
    )
}

/// `2026-04-24`, `2026-04-24…26`, `2026-04-24…05-02`, or both dates whole.
fn date_range(first: Timestamp, last: Timestamp) -> String {
    let (a, b) = (
        first.format("%Y-%m-%d").to_string(),
        last.format("%Y-%m-%d").to_string(),
    );
    if a == b {
        a
    } else if a[..7] == b[..7] {
        format!("{a}…{}", &b[8..])
    } else if a[..4] == b[..4] {
        format!("{a}…{}", &b[5..])
    } else {
        format!("{a}…{b}")
    }
}

/// The evidence of a summary bullet: `3× by F-001, F-004; 2026-04-24…26`.
fn evidence_short(item: &Item) -> String {
    let who = graduation::list(&item.workers, 3, "");
    let when = date_range(item.first_seen, item.last_seen);
    if item.seen == 1 {
        format!("{who}; {when}")
    } else {
        format!("{}× by {who}; {when}", item.seen)
    }
}

/// The evidence of a MEMORY.md bullet, with the first and last entries' times (which find them
/// in archive/).
fn evidence_long(item: &Item) -> String {
    let who = graduation::list(&item.workers, 6, "");
    if item.seen == 1 && item.evidence.len() == 1 {
        format!("{who}, {}", time::format(item.first_seen))
    } else {
        format!(
            "{}× by {who}; first {}, last {}",
            item.seen,
            time::format(item.first_seen),
            time::format(item.last_seen)
        )
    }
}

/// A MEMORY.md bullet's text for `item` in `section`.
fn memory_body(item: &Item, section: usize, by_id: &BTreeMap<&str, &Item>) -> String {
    let evidence = evidence_long(item);
    match section {
        MEMORY_DECISIONS => format!("- {} ({evidence})", item.text),
        MEMORY_HISTORY => {
            let successor = item
                .superseded_by
                .as_deref()
                .and_then(|id| by_id.get(id))
                .map(|next| format!("superseded by c:{}: {}", next.id, cut(&next.text, 80)))
                .unwrap_or_else(|| "superseded".into());
            format!("- {} ({evidence}) → {successor}", item.text)
        }
        _ => format!("- {}: {} ({evidence})", item.tag.as_str(), item.text),
    }
}

/// The identity files that gain lines, with their new text.
fn identity_files(identities: &Identities, graduations: &[Graduation]) -> Vec<(Role, String)> {
    Role::ALL
        .into_iter()
        .filter_map(|role| {
            let lines: Vec<String> = graduations
                .iter()
                .filter(|g| g.role == role)
                .map(|g| g.line.clone())
                .collect();
            if lines.is_empty() {
                return None;
            }
            let current = identities
                .iter()
                .find(|(r, _)| *r == role)
                .and_then(|(_, text)| text.as_deref());
            Some((role, graduation::appended(role, current, &lines)))
        })
        .collect()
}

/// An id of [`ID_LEN`] hex digits for `bytes` (an entry's raw line).
pub(crate) fn short_id(bytes: &[u8]) -> String {
    hash::hex_id(bytes, ID_LEN)
}

/// A six-hex-digit check of `bytes`.
pub(crate) fn short_hash(bytes: &[u8]) -> String {
    hash::hex_id(bytes, 6)
}

// ---------------------------------------------------------------------------------------------
#[cfg(test)]
mod tests;
