//! The curator's judgment, scored on the labelled logs of tests/fixtures/curation/labelled/ (its
//! README says how they were written, labelled and scored): the real `curator` binary runs over
//! each mission as `auto_curate` would, and what it promoted, kept current and graduated is read
//! back to the knowledge the labels name.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;

use harness_core::roles::curator::similarity::{analyse, Context};
use harness_core::roles::curator::{log, SUMMARY_TEXT_CHARS};
use harness_tests::{bin_dir, code, repo_root, text};

/// What a careful curator does with one piece of knowledge (labels.txt).
#[derive(Debug, Default)]
struct Label {
    /// What the label says the knowledge is, before the evidence it names (the text after `#`
    /// up to its last `: `).
    gist: String,
    graduate: bool,
    promote: Vec<String>,
    current: Option<String>,
    superseded_by: Option<String>,
}

/// One mission of a labelled log: its name (its project's) and its lines, each with the
/// knowledge id of the entry (`-` for outcome lines).
struct Mission {
    name: String,
    lines: Vec<(String, String)>,
}

/// A labelled log: its missions in order, the labels, and the words no graduated line may hold.
struct Labelled {
    missions: Vec<Mission>,
    labels: BTreeMap<String, Label>,
    specific: Vec<String>,
}

impl Labelled {
    fn load(dir: &Path) -> Self {
        let mut names: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "log"))
            .collect();
        names.sort();
        let missions = names
            .iter()
            .map(|path| Mission {
                name: path.file_stem().unwrap().to_string_lossy()[2..].to_string(),
                lines: std::fs::read_to_string(path)
                    .unwrap()
                    .lines()
                    .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
                    .map(|l| {
                        let (id, raw) = l.split_once(' ').unwrap();
                        (id.to_string(), raw.to_string())
                    })
                    .collect(),
            })
            .collect();
        let mut labelled = Labelled {
            missions,
            labels: BTreeMap::new(),
            specific: Vec::new(),
        };
        labelled.read_labels(&std::fs::read_to_string(dir.join("labels.txt")).unwrap());
        labelled
    }

    fn read_labels(&mut self, text: &str) {
        for line in text.lines() {
            let (line, why) = line.split_once('#').unwrap_or((line, ""));
            // "a tool convention forgotten again and again: mix format before committing: F-001,
            // F-004": the knowledge is between the kind and the evidence.
            let gist = why.rsplit_once(": ").map_or(why, |(gist, _)| gist);
            let gist = gist.split_once(": ").map_or(gist, |(_, gist)| gist).trim();
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.as_slice() {
                [] => {}
                ["specific", _mission, rest @ ..] => {
                    self.specific.extend(rest.iter().map(|w| w.to_string()))
                }
                [id, labels @ ..] => {
                    let mut label = Label {
                        gist: gist.to_string(),
                        ..Label::default()
                    };
                    for word in labels {
                        match word.split_once('=') {
                            None if *word == "graduate" => label.graduate = true,
                            None if *word == "neither" => {}
                            Some(("promote", m)) => {
                                label.promote = m.split(',').map(str::to_string).collect()
                            }
                            Some(("current", m)) => label.current = Some(m.to_string()),
                            Some(("superseded-by", id)) => {
                                label.superseded_by = Some(id.to_string())
                            }
                            _ => panic!("labels.txt: unknown label {word:?}"),
                        }
                    }
                    self.labels.insert(id.to_string(), label);
                }
            }
        }
        for mission in &self.missions {
            for (id, _) in &mission.lines {
                assert!(
                    id == "-" || self.labels.contains_key(id),
                    "{id} has no label"
                );
            }
        }
    }
}

/// The knowledge of a bullet or an identity line: that of the entry whose text it shows, else
/// that of the entry its marker names.
struct Knowledge {
    by_text: HashMap<String, Option<String>>,
    by_entry: HashMap<String, String>,
}

impl Knowledge {
    fn new(labelled: &Labelled) -> Self {
        let mut by_text: HashMap<String, Option<String>> = HashMap::new();
        let mut by_entry = HashMap::new();
        for mission in &labelled.missions {
            let raw: String = mission
                .lines
                .iter()
                .map(|(_, l)| format!("{l}\n"))
                .collect();
            let lines = log::read(raw.as_bytes(), &[]).raw;
            for ((id, _), line) in mission.lines.iter().zip(&lines) {
                let Ok(entry) = &line.entry else {
                    panic!("not an entry: {}", line.text())
                };
                by_entry.insert(line.id(), id.clone());
                let slot = by_text
                    .entry(entry.text.clone())
                    .or_insert(Some(id.clone()));
                if slot.as_deref() != Some(id) {
                    *slot = None;
                }
            }
        }
        // What the agent of the second run gives as general wordings (see [`Oracle`]).
        for (id, label) in &labelled.labels {
            by_text
                .entry(label.gist.clone())
                .or_insert(Some(id.clone()));
        }
        Self { by_text, by_entry }
    }

    /// `shown`: the text a line shows (cut with `…` maybe); `marker`: the item id it names.
    fn of(&self, shown: &str, marker: &str) -> Option<String> {
        let by_text = match shown.strip_suffix('…') {
            Some(start) => self
                .by_text
                .iter()
                .find(|(text, _)| text.starts_with(start))
                .and_then(|(_, id)| id.clone()),
            None => self.by_text.get(shown).cloned().flatten(),
        };
        by_text.or_else(|| self.by_entry.get(marker).cloned())
    }
}

/// A curator line (a bullet of summary.md or MEMORY.md, or an identity line): its text without
/// the evidence or reason, and the item id of its marker.
fn curator_line(line: &str) -> Option<(String, String)> {
    let body = line.strip_prefix("- ")?;
    let (body, comment) = body.split_once(" <!-- ")?;
    // An identity line's comment says why it graduated, then its markers.
    let marker = comment
        .strip_prefix("c:")
        .or_else(|| comment.split_once("; c:").map(|(_, markers)| markers))?;
    let id: String = marker
        .chars()
        .take_while(|c| c.is_ascii_hexdigit())
        .collect();
    let text = if comment.starts_with("graduated ") {
        body
    } else {
        body.rfind(" (").map_or(body, |at| &body[..at])
    };
    Some((text.to_string(), id))
}

/// The curator lines of `section` (`## <section>`) of a memory file.
fn section_lines(text: &str, section: &str) -> Vec<(String, String)> {
    let heading = format!("## {section}");
    text.lines()
        .skip_while(|l| l.trim_end() != heading)
        .skip(1)
        .take_while(|l| !l.starts_with("## "))
        .filter_map(curator_line)
        .collect()
}

/// What the curator did over the labelled log.
#[derive(Default)]
struct Outcome {
    /// (mission, knowledge) that some pass of the mission put in summary.md.
    reached: BTreeSet<(String, String)>,
    /// Per mission, the knowledge under "Decisions (current)" after its last pass.
    current: BTreeMap<String, BTreeSet<String>>,
    /// Per mission, the knowledge in MEMORY.md's History after its last pass.
    history: BTreeMap<String, BTreeSet<String>>,
    /// Every line graduated into identity/, with its knowledge.
    graduated: Vec<(String, Option<String>)>,
    passes: usize,
}

fn curate(workdir: &Path, identity: &Path, args: &[&str]) -> std::process::Output {
    let out = Command::new(bin_dir().join("curator"))
        .arg("-C")
        .arg(workdir)
        .args(args)
        .env("HARNESS_IDENTITY_DIR", identity)
        .env("HARNESS_HOME", repo_root())
        .env_remove("HARNESS_FEATURE_ID")
        .env_remove("HARNESS_RUN_ID")
        .env_remove("HARNESS_WORKDIR")
        .env_remove("HARNESS_STATE_DIR")
        .output()
        .expect("curator starts");
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    out
}

/// The curator's agent of the scorer's second run: it makes the calls a careful human curator
/// makes (the labels' calls, given the items of the pass), and never rewords summary.md.
struct Oracle<'l> {
    labelled: &'l Labelled,
    knowledge: &'l Knowledge,
    /// Where the deterministic draft of each pass is made.
    scratch: tempfile::TempDir,
}

impl<'l> Oracle<'l> {
    fn new(labelled: &'l Labelled, knowledge: &'l Knowledge) -> Self {
        Self {
            labelled,
            knowledge,
            scratch: tempfile::tempdir().unwrap(),
        }
    }

    /// Makes the project at `workdir` curate with this agent: its config names a script that
    /// prints `answer.md`.
    fn install(&self, workdir: &Path) {
        let script = self.scratch.path().join("agent.sh");
        let answer = self.scratch.path().join("answer.md");
        let body = format!(
            "#!/bin/sh\ncat >/dev/null\ncat {:?}\n",
            answer.display().to_string()
        );
        std::fs::write(&script, body).unwrap();
        std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let config = format!("agent:\n  command: [{:?}]\n", script.display().to_string());
        std::fs::write(workdir.join(".harness/config.yaml"), config).unwrap();
    }

    /// Writes the answer to the pass the project at `workdir` is about to make: the draft of
    /// summary.md unchanged (a deterministic pass on a copy), and the calls.
    fn prepare(&self, workdir: &Path, identity: &Path) {
        // The copy has the project's name: what is specific in a text depends on it.
        let copy = self.scratch.path().join("draft");
        let project = copy.join(workdir.file_name().unwrap());
        let _ = std::fs::remove_dir_all(&copy);
        for (from, to) in [
            (workdir.join(".harness"), project.join(".harness")),
            (identity.to_path_buf(), copy.join("identity")),
        ] {
            copy_tree(&from, &to);
        }
        let _ = std::fs::remove_file(project.join(".harness/config.yaml"));
        let out = curate(&project, &copy.join("identity"), &["--json"]);
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let draft = std::fs::read_to_string(project.join(".harness/summary.md")).unwrap();
        let items = report["items"].as_array().unwrap();
        let features = items
            .iter()
            .flat_map(|item| item["features"].as_array().unwrap())
            .filter_map(|feature| feature.as_str());
        let context = Context::new(&project.to_string_lossy(), features);
        let calls = self.calls(items, &context);
        let answer = format!(
            "```markdown\n{draft}```\n\n```judgments\n{}\n```\n",
            calls.join("\n")
        );
        std::fs::write(self.scratch.path().join("answer.md"), answer).unwrap();
    }

    /// The calls on `items` (a pass's report, read in `context`): items of one knowledge are
    /// the same, a decision labelled superseded is replaced by its successor's and one labelled
    /// current stands, knowledge not to graduate is local, and knowledge to graduate is general
    /// in the words of its label (when they name nothing of one mission).
    fn calls(&self, items: &[serde_json::Value], context: &Context) -> Vec<String> {
        // What an item says, as an agent reads it: the knowledge of its text (the rules may
        // have grouped other knowledge's entries with it).
        let knowledge_of = |item: &serde_json::Value| {
            let text = item["text"].as_str().unwrap();
            self.knowledge.of(text, item["id"].as_str().unwrap())
        };
        let decision = |item: &serde_json::Value| item["tag"] == "DECISION";
        let id = |item: &serde_json::Value| item["id"].as_str().unwrap().to_string();
        let mut calls = Vec::new();
        let mut lessons: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for item in items.iter().filter(|i| !decision(i)) {
            let Some(knowledge) = knowledge_of(item) else {
                continue;
            };
            // No `apart` calls: the split goes by likeness to the two entries named, and moved
            // entries of one knowledge told in far-apart words to the other side (measured:
            // promotion recall rose, main 0.89 -> 0.96, but fresh's graduation recall fell,
            // 0.83 -> 0.78, and main's 0.88 -> 0.85).
            let label = &self.labelled.labels[&knowledge];
            if !label.graduate {
                calls.push(format!("local c:{}", id(item)));
            } else if general(&label.gist, context) {
                calls.push(format!("general c:{}: {}", id(item), label.gist));
            }
            lessons.entry(knowledge).or_default().push(id(item));
        }
        for ids in lessons.values() {
            calls.extend(
                ids[1..]
                    .iter()
                    .map(|other| format!("same c:{} c:{other}", ids[0])),
            );
        }
        for old in items.iter().filter(|i| decision(i)) {
            let Some(knowledge) = knowledge_of(old) else {
                continue;
            };
            let current = self.labelled.labels[&knowledge].current.is_some();
            if current && !old["superseded_by"].is_null() {
                calls.push(format!("stands c:{}", id(old)));
            }
            let Some(successor) = &self.labelled.labels[&knowledge].superseded_by else {
                continue;
            };
            let newer = items.iter().filter(|i| decision(i)).find(|new| {
                knowledge_of(new).as_ref() == Some(successor)
                    && new["last_seen"].as_str() > old["last_seen"].as_str()
            });
            if let Some(new) = newer {
                if old["superseded_by"].as_str() != Some(id(new).as_str()) {
                    calls.push(format!("supersedes c:{} c:{}", id(new), id(old)));
                }
            }
        }
        calls
    }
}

/// Whether `wording` may be given as general: one line, nothing of one mission in it.
fn general(wording: &str, context: &Context) -> bool {
    !wording.is_empty()
        && wording.chars().count() <= SUMMARY_TEXT_CHARS
        && !wording.contains("F-")
        && analyse(wording, context).specifics.is_empty()
}

/// Copies the directory tree `from` to `to`.
fn copy_tree(from: &Path, to: &Path) {
    for entry in walkdir::WalkDir::new(from) {
        let entry = entry.unwrap();
        let target = to.join(entry.path().strip_prefix(from).unwrap());
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
        } else if entry.file_type().is_file() {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Runs the curator over each mission in turn (see the module documentation); `agent`: with
/// its agent making the labels' calls (see [`Oracle`]).
fn run(labelled: &Labelled, agent: bool) -> Outcome {
    let root = tempfile::tempdir().unwrap();
    let identity = root.path().join("identity");
    std::fs::create_dir_all(&identity).unwrap();
    let knowledge = Knowledge::new(labelled);
    let oracle = agent.then(|| Oracle::new(labelled, &knowledge));
    let mut outcome = Outcome::default();
    for mission in &labelled.missions {
        let workdir = root.path().join(&mission.name);
        let state = workdir.join(".harness");
        std::fs::create_dir_all(&state).unwrap();
        if let Some(oracle) = &oracle {
            oracle.install(&workdir);
        }
        let mut verdicts = 0;
        let mut pending = String::new();
        let last = mission.lines.len() - 1;
        for (index, (_, line)) in mission.lines.iter().enumerate() {
            pending.push_str(line);
            pending.push('\n');
            let verdict = line.contains("] validator ") && line.contains(" -: ");
            verdicts += usize::from(verdict);
            if !(index == last || (verdict && verdicts % 2 == 0)) {
                continue;
            }
            let raw = state.join("raw.md");
            let mut log = std::fs::read_to_string(&raw).unwrap_or_default();
            log.push_str(&std::mem::take(&mut pending));
            std::fs::write(&raw, log).unwrap();
            match &oracle {
                Some(oracle) => {
                    oracle.prepare(&workdir, &identity);
                    let out = curate(&workdir, &identity, &["--agent"]);
                    let said = text(&out.stderr);
                    assert!(!said.contains("rejected"), "{said}");
                }
                None => {
                    curate(&workdir, &identity, &[]);
                }
            }
            outcome.passes += 1;
            let summary = std::fs::read_to_string(state.join("summary.md")).unwrap_or_default();
            for section in ["Lessons", "Decisions (current)", "Avoid"] {
                for (shown, marker) in section_lines(&summary, section) {
                    if let Some(id) = knowledge.of(&shown, &marker) {
                        outcome.reached.insert((mission.name.clone(), id));
                    }
                }
            }
        }
        let summary = std::fs::read_to_string(state.join("summary.md")).unwrap_or_default();
        let memory = std::fs::read_to_string(state.join("MEMORY.md")).unwrap_or_default();
        for (into, text, section) in [
            (&mut outcome.current, &summary, "Decisions (current)"),
            (&mut outcome.history, &memory, "History"),
        ] {
            let found = section_lines(text, section)
                .into_iter()
                .filter_map(|(shown, marker)| knowledge.of(&shown, &marker))
                .collect();
            into.insert(mission.name.clone(), found);
        }
    }
    outcome.graduated = graduated(&identity, &knowledge);
    // The projects and identity files, to study a log (`CURATION_KEEP=1`: kept, path printed).
    if std::env::var_os("CURATION_KEEP").is_some() {
        eprintln!("kept: {}", root.keep().display());
    }
    outcome
}

/// The curator's lines of every identity file, with their knowledge.
fn graduated(identity: &Path, knowledge: &Knowledge) -> Vec<(String, Option<String>)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(identity)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    files.sort();
    let mut lines = Vec::new();
    for file in files {
        for line in std::fs::read_to_string(file).unwrap().lines() {
            if let Some((shown, marker)) = curator_line(line) {
                lines.push((line.to_string(), knowledge.of(&shown, &marker)));
            }
        }
    }
    lines
}

/// A ratio and its parts.
#[derive(Debug, Clone, Copy)]
struct Ratio(usize, usize);

impl Ratio {
    fn value(self) -> f64 {
        if self.1 == 0 {
            1.0
        } else {
            self.0 as f64 / self.1 as f64
        }
    }
}

impl std::fmt::Display for Ratio {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:.2} ({} of {})", self.value(), self.0, self.1)
    }
}

/// The scores of an outcome, and what went wrong, line by line.
struct Score {
    graduation_precision: Ratio,
    graduation_recall: Ratio,
    promotion_recall: Ratio,
    current_kept: Ratio,
    superseded_left_current: Ratio,
    wrong: Vec<String>,
}

/// Whether the text of a graduated line names a feature id, a run id, or a word of one mission.
fn unhygienic<'w>(shown: &str, specific: &'w [String]) -> Option<&'w str> {
    let bytes = shown.as_bytes();
    let feature_id = (0..bytes.len().saturating_sub(2))
        .any(|i| bytes[i] == b'F' && bytes[i + 1] == b'-' && bytes[i + 2].is_ascii_digit());
    let run_id = ["-worker-", "-validator-", "-planner-", "-curator-"]
        .iter()
        .any(|role| shown.contains(role));
    if feature_id || run_id {
        return Some("a feature or run id");
    }
    specific
        .iter()
        .find(|word| shown.contains(word.as_str()))
        .map(String::as_str)
}

fn score(labelled: &Labelled, outcome: &Outcome) -> Score {
    let mut wrong = Vec::new();
    let mut good = BTreeSet::new();
    for (line, id) in &outcome.graduated {
        let shown = curator_line(line).unwrap().0;
        let verdict = match id {
            None => Some("not read back to any knowledge".to_string()),
            Some(id) if !labelled.labels[id].graduate => Some(format!("{id} is not general")),
            Some(id) if good.contains(id) => Some(format!("{id} again")),
            Some(id) => unhygienic(&shown, &labelled.specific)
                .map(|word| format!("{id} names {word}"))
                .or_else(|| {
                    good.insert(id.clone());
                    None
                }),
        };
        if let Some(why) = verdict {
            wrong.push(format!("graduated ({why}): {line}"));
        }
    }
    let graduate: Vec<&String> = labelled
        .labels
        .iter()
        .filter(|(_, l)| l.graduate)
        .map(|(id, _)| id)
        .collect();
    for id in graduate.iter().filter(|id| !good.contains(**id)) {
        wrong.push(format!("not graduated: {id}"));
    }
    let mut promoted = Ratio(0, 0);
    let mut kept = Ratio(0, 0);
    let mut left = Ratio(0, 0);
    for (id, label) in &labelled.labels {
        for mission in &label.promote {
            promoted.1 += 1;
            if outcome.reached.contains(&(mission.clone(), id.clone())) {
                promoted.0 += 1;
            } else {
                wrong.push(format!("never in {mission}'s summary.md: {id}"));
            }
        }
        if let Some(mission) = &label.current {
            kept.1 += 1;
            if outcome.current[mission].contains(id) {
                kept.0 += 1;
            } else {
                wrong.push(format!("not current at the end of {mission}: {id}"));
            }
        }
        if let Some(successor) = &label.superseded_by {
            let mission = labelled.labels[successor].current.as_ref().unwrap();
            left.1 += 1;
            if outcome.current[mission].contains(id) {
                left.0 += 1;
                wrong.push(format!("still current, superseded by {successor}: {id}"));
            }
        }
    }
    Score {
        graduation_precision: Ratio(good.len(), outcome.graduated.len()),
        graduation_recall: Ratio(good.len(), graduate.len()),
        promotion_recall: promoted,
        current_kept: kept,
        superseded_left_current: left,
        wrong,
    }
}

fn scored(name: &str) -> Score {
    scored_by(name, false)
}

/// `name`'s score, the curator's agent making the labels' calls if `agent`.
fn scored_by(name: &str, agent: bool) -> Score {
    let labelled = Labelled::load(
        &repo_root()
            .join("tests/fixtures/curation/labelled")
            .join(name),
    );
    let outcome = run(&labelled, agent);
    assert!(
        outcome.passes > labelled.missions.len(),
        "a pass every few verdicts"
    );
    let score = score(&labelled, &outcome);
    eprintln!(
        "curation score, {name} log{} ({} passes):\n  graduation precision {}\n  graduation recall {}\n  \
         promotion recall {}\n  current decisions kept {}\n  superseded decisions left current {}",
        if agent { ", the agent judging" } else { "" },
        outcome.passes,
        score.graduation_precision,
        score.graduation_recall,
        score.promotion_recall,
        score.current_kept,
        score.superseded_left_current
    );
    for line in &score.wrong {
        eprintln!("  {line}");
    }
    // Every graduated line, to study a log (`CURATION_SHOW=1 cargo test … -- --nocapture`).
    if std::env::var_os("CURATION_SHOW").is_some() {
        for (line, knowledge) in &outcome.graduated {
            eprintln!("  [{}] {line}", knowledge.as_deref().unwrap_or("?"));
        }
    }
    score
}

/// Whether `score` meets the targets of issue 15: graduation precision 0.95 and recall 0.8,
/// promotion recall 0.8, every current decision current and no superseded one.
fn meets_targets(score: &Score) -> bool {
    reaches(score, &[0.95, 0.8, 0.8]) && decisions_right(score)
}

/// Whether `score` reaches at least the graduation precision, graduation recall and promotion
/// recall given.
fn reaches(score: &Score, [precision, recall, promotion]: &[f64; 3]) -> bool {
    score.graduation_precision.value() >= *precision
        && score.graduation_recall.value() >= *recall
        && score.promotion_recall.value() >= *promotion
}

/// Every current decision current at the end, and no superseded one.
fn decisions_right(score: &Score) -> bool {
    score.current_kept.value() == 1.0 && score.superseded_left_current.0 == 0
}

/// `name`'s score, once checked that its log labels enough knowledge to score (at least
/// `graduate` to graduate and `promote` to promote) and that `holds` of it (else `what`, with
/// the score's mistakes).
fn scored_holding(
    name: &str,
    (graduate, promote): (usize, usize),
    holds: impl Fn(&Score) -> bool,
    what: &str,
) -> Score {
    let score = scored(name);
    assert!(score.graduation_recall.1 >= graduate && score.promotion_recall.1 >= promote);
    assert!(holds(&score), "{what}: {:?}", score.wrong);
    score
}

/// Nothing wrong or local graduated, and no current decision lost.
fn clean(score: &Score) -> bool {
    score.graduation_precision.value() >= 0.95 && score.current_kept.value() == 1.0
}

#[test]
fn curation_score_on_the_main_labelled_log() {
    scored_holding("main", (20, 40), meets_targets, "below the targets");
}

/// The holdout log was not looked at while the curator was tuned: its scores (BENCHMARKS.md)
/// say what holds on text the rules were not made for. What is asserted is the property that
/// matters most, and held: nothing wrong or local reaches the identity files.
#[test]
fn curation_score_on_the_holdout_log() {
    let what = "graduated what it should not, or lost a current decision";
    scored_holding("holdout", (10, 15), clean, what);
}

/// The fresh log was written after the tuning on the main log, by someone who did not read the
/// curator's rules; its first score (BENCHMARKS.md) is the honest measure of what generalised,
/// and the rules were then made more general with it. What is asserted is what must hold.
#[test]
fn curation_score_on_the_fresh_log() {
    let what = "graduated what it should not, or lost a current decision";
    scored_holding("fresh", (15, 30), clean, what);
}

/// How much knowledge a log's labels give at least: to graduate, to promote.
type Least = (usize, usize);

/// What each blind log must still score with the rules alone: the floors it reached after the
/// general rules made with it (each log's first score and history are in BENCHMARKS.md, §8);
/// nothing may get worse. By log: how much knowledge its labels give to graduate and to promote
/// at least; graduation precision, graduation recall and promotion recall; current decisions
/// kept current, at least; superseded decisions left current, at most.
#[rustfmt::skip]
const FLOORS: &[(&str, Least, [f64; 3], usize, usize)] = &[
    ("blind",  (15, 30), [0.86, 0.88, 0.91], 26, 1),
    ("blind2", (15, 30), [0.91, 0.88, 0.93], 24, 0),
    ("blind3", (15, 30), [0.99, 0.89, 0.90], 30, 0),
    ("blind4", (15, 30), [0.89, 0.89, 0.86], 28, 1),
    ("blind5", (15, 30), [0.89, 0.60, 0.83], 20, 2),
    ("blind6", (15, 30), [0.99, 0.68, 0.78], 23, 0),
    ("blind7", (15, 25), [0.90, 0.61, 0.92], 25, 2),
    ("blind8", (15, 25), [0.87, 0.81, 0.67], 23, 2),
    ("blind9", (10, 20), [0.91, 0.91, 0.86], 34, 3),
    ("blind10", (10, 20), [0.74, 0.59, 0.92], 22, 4),
    ("blind11", (10, 20), [0.99, 0.78, 0.67], 28, 0),
    ("blind12", (15, 30), [0.85, 0.59, 0.84], 31, 3),
    ("blind13", (10, 20), [0.84, 0.84, 0.83], 28, 0),
    ("blind14", (10, 20), [0.99, 0.72, 0.79], 25, 0),
    ("blind15", (10, 20), [0.79, 0.61, 0.89], 23, 2),
    ("blind16", (10, 20), [0.99, 0.66, 0.86], 27, 0),
    ("blind17", (10, 20), [0.78, 0.78, 0.96], 26, 1),
    ("blind18", (10, 20), [0.99, 0.66, 0.81], 22, 1),
    ("blind19", (10, 20), [0.82, 0.76, 0.83], 23, 1),
    ("blind20", (10, 20), [0.90, 0.76, 0.70], 30, 0),
    ("blind21", (10, 20), [0.88, 0.79, 0.76], 19, 0),
    ("blind22", (10, 20), [0.88, 0.61, 0.82], 27, 1),
    ("blind23", (10, 20), [0.64, 0.52, 0.82], 21, 0),
    ("blind24", (10, 20), [0.61, 0.79, 0.91], 16, 0),
    ("blind25", (10, 20), [0.92, 0.54, 0.85], 22, 0),
    ("blind26", (10, 20), [0.74, 0.79, 0.87], 29, 1),
    ("blind27", (10, 20), [0.84, 0.84, 0.88], 31, 0),
    ("blind28", (10, 20), [0.84, 0.57, 0.84], 31, 1),
    ("blind29", (10, 20), [0.69, 0.36, 0.81], 19, 2),
    ("blind30", (10, 20), [0.77, 0.63, 0.71], 29, 2),
    ("blind31", (5, 20), [0.85, 0.66, 0.80], 24, 1),
    ("blind32", (10, 20), [0.99, 0.54, 0.82], 25, 2),
    ("blind33", (10, 20), [0.99, 0.39, 0.80], 27, 2),
    ("blind34", (10, 20), [0.84, 0.61, 0.79], 22, 2),
    ("blind35", (10, 20), [0.83, 0.49, 0.84], 23, 1),
    ("blind36", (10, 20), [0.90, 0.66, 0.93], 30, 1),
    ("blind37", (10, 20), [0.91, 0.68, 0.80], 25, 0),
];

/// Scores the blind log `name` and checks that it holds its floor (see [`FLOORS`]).
fn holds_its_floor(name: &str) {
    let (_, least, ratios, kept, left) = FLOORS.iter().find(|(n, ..)| *n == name).expect("a floor");
    let holds = |score: &Score| {
        reaches(score, ratios)
            && score.current_kept.0 >= *kept
            && score.superseded_left_current.0 <= *left
    };
    scored_holding(name, *least, holds, "worse than after its corrections");
}

/// The blind log was written after the rules were made more general with the fresh log, by
/// someone who did not read them. Its first score (BENCHMARKS.md) is below the targets: what a
/// project names again and again (a build preset, a fixture, a cluster account) still passed
/// for a tool's. The rules were then corrected for what was wrong in general (a project's own
/// rule, a feature's placeholder, units, a directory its paths name, an option's value), and
/// later for what every blind log missed (a lesson drawn from another worker's failure, a flag
/// or an identifier only two entries name, a change that turns a decision around); what is
/// asserted is that nothing got worse than after those corrections.
#[test]
fn curation_score_on_the_blind_log() {
    holds_its_floor("blind");
}

/// The second blind log was written after the rules were corrected with the first, by someone
/// who did not read them, and scored once (BENCHMARKS.md), below the targets; general rules
/// came after (a possessor is not a decision's subject, another mission's wording must name
/// what this one's does; then those of the first blind log's last corrections, and a decision
/// that states no subject naming the one another states). What is asserted is that nothing
/// gets worse than after them.
#[test]
fn curation_score_on_the_second_blind_log() {
    holds_its_floor("blind2");
}

/// The third blind log was written after the rules were corrected with the second, by someone
/// who did not read them, and scored once (BENCHMARKS.md); the rules on decisions were then
/// corrected with it, and the graduation rules with all three blind logs (see the first). What
/// is asserted is that nothing gets worse than that. (Promotion recall was 0.91 before two more
/// decisions were rightly kept current: they take the room of a lesson one worker repeated,
/// summary.md's bound being in tokens.)
#[test]
fn curation_score_on_the_third_blind_log() {
    holds_its_floor("blind3");
}

/// The fourth blind log was written after the rules were corrected with the third, by someone
/// who did not read them, and scored once (BENCHMARKS.md): well below the targets. General
/// rules came after (a change said in a consequence clause is not the decision's; a release of
/// three parts is a version; a program a package manager installed, and a quantity given to an
/// option, are the tool's); what is asserted is that nothing gets worse than after them.
#[test]
fn curation_score_on_the_fourth_blind_log() {
    holds_its_floor("blind4");
}

/// The fifth blind log was written after the rules were corrected with the fourth, by someone
/// who did not read them, and scored once (BENCHMARKS.md): well below the targets, most of all
/// on decisions. General rules came after, mostly on decisions (a version ending in letters, a
/// change in a clause after "so", what is called old, an aside, "lives in", where a thing is
/// kept, fees as money; two entries alone naming a value are one item at less likeness; a
/// command held at a question is one failure mode); what is asserted is that nothing gets
/// worse than after them.
#[test]
fn curation_score_on_the_fifth_blind_log() {
    holds_its_floor("blind5");
}

/// The sixth blind log was written after the rules were corrected with the fifth, by someone
/// who did not read them, and scored once (BENCHMARKS.md): the rules of this session's start
/// and those made with the fourth and fifth logs scored it alike. General rules came after
/// (what the reviewer checks is the project's rule; what joins a decision replaces nothing; a
/// command that needed the network is one failure mode); what is asserted is that nothing
/// gets worse than after them.
#[test]
fn curation_score_on_the_sixth_blind_log() {
    holds_its_floor("blind6");
}

/// The seventh blind log was written at the same time as the sixth, in the same way, and
/// scored once (BENCHMARKS.md): the furthest below the targets of all, most of its knowledge
/// to graduate being one lesson told in each mission's tools. General rules came after
/// (versions differ in any part both give; what the project counts as something is its rule;
/// failure modes every agent meets, in any tool's words); what is asserted is that nothing
/// gets worse than after them.
#[test]
fn curation_score_on_the_seventh_blind_log() {
    holds_its_floor("blind7");
}

/// The eighth blind log was written after the failure modes and the ninth log's rules were
/// made, by someone who did not read the rules, and scored once (BENCHMARKS.md): what was made
/// since this session's start left its graduation as it was (0.79 / 0.65), and on decisions
/// caught two more superseded ones but lost one current. General rules came after (where a
/// thing lives is another thing than what else is done to it; a pronoun is no rare word; "as
/// well" in a later clause adds nothing to other decisions; more words of the failure modes);
/// what is asserted is that nothing gets worse than after them.
#[test]
fn curation_score_on_the_eighth_blind_log() {
    holds_its_floor("blind8");
}

/// The ninth blind log was written after the failure modes were made with the earlier logs, by
/// someone who did not read the rules, and scored once (BENCHMARKS.md): the modes raised its
/// graduation recall from 0.62 to 0.69. The modes' words were then corrected with it (a real
/// endpoint is the network, a cache thrown away was stale, a REPL waits for a person), and
/// general rules on decisions (a name taken to a version; "X is removed" announces a change; a
/// copula after "so" or a condition states no subject);
/// what is asserted is that nothing gets worse than after that. Its labeller counts an editor and a
/// server left in the foreground as one lesson, where the modes (and the first blind log's
/// labeller) see two: one line is counted twice.
#[test]
fn curation_score_on_the_ninth_blind_log() {
    holds_its_floor("blind9");
}

/// The tenth blind log (an Erlang service, a Neovim plugin, a PostgreSQL extension) was scored
/// once (BENCHMARKS.md) with the rules of the session that made the names a project chooses its
/// own: 0.70 / 0.47 / 0.89, 6 superseded decisions of 11 left current, the same as before that
/// session. General rules came after (on decisions: "instead" announces a change, a subject said
/// to be a version, the head of a name is its last part; a product's name, `LuaJIT`, is no
/// identifier); what is asserted is that nothing gets worse than after them.
#[test]
fn curation_score_on_the_tenth_blind_log() {
    holds_its_floor("blind10");
}

/// The eleventh blind log (a Perl web app with Mojolicious, a Nix flake with VM tests, an Elm
/// app) was scored once (BENCHMARKS.md) with the session's rules that made the practices and the
/// formatter's rule, and at the session's start: 0.90 / 0.64 / 0.61, one superseded decision of
/// 9 left current, both times. General rules came after (a validator that looks for something
/// checks it; `perltidy` is a formatter, and a validator's entry among a formatter's convention
/// makes it no project's rule; a file a decision says is gone names the decision that names it);
/// what is asserted is that nothing gets worse than after them.
#[test]
fn curation_score_on_the_eleventh_blind_log() {
    holds_its_floor("blind11");
}

/// The twelfth blind log (an ESP32 firmware on PlatformIO, a Hugo site on Netlify, a Crystal
/// service on Kemal) was scored once (BENCHMARKS.md) with the rules of the session's start:
/// 0.73 / 0.55 / 0.83, 28 of 32 current decisions kept and 3 of 10 superseded ones left current.
/// General rules came after (what is so in "this service" is the project's rule; a number a unit
/// follows is no version, a variable's name no acronym; `prettier` formats, and formatting before
/// committing recurs across missions only with its formatter); what is asserted is that nothing
/// gets worse than after them.
#[test]
fn curation_score_on_the_twelfth_blind_log() {
    holds_its_floor("blind12");
}

/// The thirteenth blind log (a Common Lisp service, a LaTeX thesis, an Ada/SPARK library) was
/// scored once (BENCHMARKS.md), the same with the rules of the session's start and with those
/// made with the twelfth: 0.69 / 0.69 / 0.77, 25 of 29 current decisions kept and 2 of 8
/// superseded ones left current. General rules came after (more words of the failure modes: a
/// host a fetch "could not reach", a server that "blocks forever", a watcher that "rebuilds on
/// every change"; a decision done "like the rest" adds to the others); what is asserted is that
/// nothing gets worse than after them.
#[test]
fn curation_score_on_the_thirteenth_blind_log() {
    holds_its_floor("blind13");
}

/// The fourteenth blind log (a Gleam service, Bash tools, an SWI-Prolog solver) was scored once
/// (BENCHMARKS.md) at the session's start, 0.67 / 0.55 / 0.80, and with the rules made with the
/// twelfth and thirteenth, 0.70 / 0.64 / 0.80, both keeping 23 of 26 current decisions and no
/// superseded one. General rules came after (a failure mode graduates in its own words, and a
/// line graduated from a failure knows its mode; the team's rule is the project's; "between"
/// ends a subject's head); what is asserted is that nothing gets worse than after them.
#[test]
fn curation_score_on_the_fourteenth_blind_log() {
    holds_its_floor("blind14");
}

/// The fifteenth and sixteenth blind logs were written after the rules made with the fourteenth
/// (and those that came of a second look at the older logs' misses), by someone who did not read
/// them; their first scores (BENCHMARKS.md) were the same with the rules of the session's start.
#[test]
fn curation_score_on_the_fifteenth_blind_log() {
    holds_its_floor("blind15");
}

#[test]
fn curation_score_on_the_sixteenth_blind_log() {
    holds_its_floor("blind16");
}

/// The seventeenth and eighteenth blind logs were written after the rules made with the
/// sixteenth, by someone who did not read them; their first scores (BENCHMARKS.md) were the same
/// with the rules of the session's start. General rules came after (a possessive feature id, a
/// variable set to a number, a failure's mode known to its lesson, decisions opening with
/// different names of code); what is asserted is that nothing gets worse than after them.
#[test]
fn curation_score_on_the_seventeenth_blind_log() {
    holds_its_floor("blind17");
}

#[test]
fn curation_score_on_the_eighteenth_blind_log() {
    holds_its_floor("blind18");
}

/// The nineteenth and twentieth blind logs were written after the rules made with the
/// eighteenth, by someone who did not read them; their first scores (BENCHMARKS.md) were again
/// the same with the rules of the session's start. General rules came after (a line graduated
/// from an item of a failure mode knows the mode, a relative clause is not a subject, a later
/// clause that keeps the older's subject, "a second …", "before …"); what is asserted is that
/// nothing gets worse than after them.
#[test]
fn curation_score_on_the_nineteenth_blind_log() {
    holds_its_floor("blind19");
}

#[test]
fn curation_score_on_the_twentieth_blind_log() {
    holds_its_floor("blind20");
}

/// The twenty-first blind log was written after the rules made with the twentieth, by someone
/// who did not read them (but the labelled README's section on scoring); it is the first whose
/// first score (BENCHMARKS.md) was better than with the rules of the session's start: one
/// worker's flaky test and a mode's lesson said again no longer graduate. What is asserted is
/// that nothing gets worse than that first score.
#[test]
fn curation_score_on_the_twenty_first_blind_log() {
    holds_its_floor("blind21");
}

/// The twenty-second blind log was written after the rules made with the twentieth, by someone
/// who did not read them; its first score (BENCHMARKS.md) was again the same with the rules of
/// the session's start. General rules came after (a command held "without &" is a server in
/// the foreground; an identity line that names other code holds other knowledge); what is
/// asserted is that nothing gets worse than after them.
#[test]
fn curation_score_on_the_twenty_second_blind_log() {
    holds_its_floor("blind22");
}

/// The twenty-third blind log was written after the rules made with the twenty-second, by someone
/// who did not read them (but the labelled README's section on scoring, which changed no label);
/// it was first scored with the rules of the session's start (BENCHMARKS.md). What is asserted
/// is that nothing gets worse than that first score.
#[test]
fn curation_score_on_the_twenty_third_blind_log() {
    holds_its_floor("blind23");
}

/// The twenty-fourth blind log was written after the rules made with the twenty-second, by someone
/// who did not read them (but the labelled README's section on scoring, which changed no label);
/// it was first scored with the rules of the session's start (BENCHMARKS.md). What is asserted
/// is that nothing gets worse than that first score.
#[test]
fn curation_score_on_the_twenty_fourth_blind_log() {
    holds_its_floor("blind24");
}

/// The twenty-fifth blind log was written after the rules made with the twenty-second, by two
/// writers in turn who did not read them (the second also read the labelled README's section on
/// scoring, and reworded one label's text for it); it was first scored with the rules of the
/// session's end and of its start (BENCHMARKS.md). What is asserted is that nothing gets worse
/// than its first score.
#[test]
fn curation_score_on_the_twenty_fifth_blind_log() {
    holds_its_floor("blind25");
}

/// The twenty-sixth to twenty-eighth blind logs were written after the rules made with the
/// twenty-fifth, by writers who did not read them; they were first scored with the rules of the
/// session's start (BENCHMARKS.md). Two missions named as their tool or platform were renamed
/// then, as their writers had flagged (the labelled README says how), and scored again with the
/// same rules. What is asserted is that nothing gets worse than that.
#[test]
fn curation_score_on_the_twenty_sixth_blind_log() {
    holds_its_floor("blind26");
}

/// See [`curation_score_on_the_twenty_sixth_blind_log`].
#[test]
fn curation_score_on_the_twenty_seventh_blind_log() {
    holds_its_floor("blind27");
}

/// See [`curation_score_on_the_twenty_sixth_blind_log`].
#[test]
fn curation_score_on_the_twenty_eighth_blind_log() {
    holds_its_floor("blind28");
}

/// The twenty-ninth to thirty-first blind logs were written after the rules made with the
/// twenty-eighth, by writers who did not read them; they were first scored with the rules of
/// their writing (BENCHMARKS.md). What is asserted is that nothing gets worse than that.
#[test]
fn curation_score_on_the_twenty_ninth_blind_log() {
    holds_its_floor("blind29");
}

/// See [`curation_score_on_the_twenty_ninth_blind_log`].
#[test]
fn curation_score_on_the_thirtieth_blind_log() {
    holds_its_floor("blind30");
}

/// See [`curation_score_on_the_twenty_ninth_blind_log`].
#[test]
fn curation_score_on_the_thirty_first_blind_log() {
    holds_its_floor("blind31");
}

/// The thirty-second to thirty-seventh blind logs were written three at a time, each three
/// after the rules made with the logs before them, by writers who did not read those rules; they
/// were first scored with the rules of their writing (BENCHMARKS.md). What is asserted is that
/// nothing gets worse than after the rules made with them.
#[test]
fn curation_score_on_the_thirty_second_blind_log() {
    holds_its_floor("blind32");
}

/// See [`curation_score_on_the_thirty_second_blind_log`].
#[test]
fn curation_score_on_the_thirty_third_blind_log() {
    holds_its_floor("blind33");
}

/// See [`curation_score_on_the_thirty_second_blind_log`].
#[test]
fn curation_score_on_the_thirty_fourth_blind_log() {
    holds_its_floor("blind34");
}

/// See [`curation_score_on_the_thirty_second_blind_log`].
#[test]
fn curation_score_on_the_thirty_fifth_blind_log() {
    holds_its_floor("blind35");
}

/// See [`curation_score_on_the_thirty_second_blind_log`].
#[test]
fn curation_score_on_the_thirty_sixth_blind_log() {
    holds_its_floor("blind36");
}

/// See [`curation_score_on_the_thirty_second_blind_log`].
#[test]
fn curation_score_on_the_thirty_seventh_blind_log() {
    holds_its_floor("blind37");
}

/// The curator's agent making the calls a careful human makes (which items say the same, which
/// decision replaces which, what is local, what is general and in what words), on every
/// labelled log: what the rules cannot see is then seen, and the rules still check each call
/// (no answer is rejected) and the evidence graduation needs. Every log meets the targets but
/// those [`BELOW_WITH_THE_AGENT`] says, whose labels ask what the rules' evidence refuses.
/// (The seventh blind log's graduation recall was 0.75 before the failure modes: this agent
/// calls general only in its label's words when they name nothing of one mission, and two of
/// its labels name such words, an RPC fork and a deployer key.)
#[test]
fn curation_score_with_the_agent_judging() {
    // One log, to study it: `CURATION_LOG=fresh`.
    let only = std::env::var("CURATION_LOG").ok();
    for name in [
        "main", "holdout", "fresh", "blind", "blind2", "blind3", "blind4", "blind5", "blind6",
        "blind7", "blind8", "blind9", "blind10", "blind11", "blind12", "blind13", "blind14",
        "blind15", "blind16", "blind17", "blind18", "blind19", "blind20", "blind21", "blind22",
        "blind23", "blind24", "blind25", "blind26", "blind27", "blind28", "blind29", "blind30",
        "blind31", "blind32", "blind33", "blind34", "blind35", "blind36", "blind37",
    ] {
        if only.as_deref().is_some_and(|only| only != name) {
            continue;
        }
        let score = scored_by(name, true);
        let below = BELOW_WITH_THE_AGENT.iter().find(|(n, _)| *n == name);
        let holds = match below {
            Some((_, least)) => reaches(&score, least) && decisions_right(&score),
            None => meets_targets(&score),
        };
        assert!(
            holds,
            "{name}, the agent judging: below what it must reach: {:?}",
            score.wrong
        );
    }
}

/// The logs on which the agent's calls cannot meet the targets, and the graduation precision,
/// graduation recall and promotion recall they must reach with them. The twenty-third log's
/// labels graduate what one feature's worker and its validator said (a boot sector's
/// signature, gdb's real-mode architecture), which the rules' evidence refuses (two features),
/// knowledge that names QEMU's gdb port 1234, which hygiene reads as a mission's port, and a
/// server left in the foreground, which the identity already holds: its watcher's lesson
/// ("jest in watch mode never returns") is the same failure mode. The twenty-fifth's graduate
/// what one feature's worker and validator said (openFPGALoader's `-f`, a trigger installer); a
/// queue consumer that never returns, whose failure mode the identity holds; a Jest run of one
/// file, which PHPUnit's `--filter` line holds as one practice (the agent's words name no other
/// code); and yosys's GHDL plugin, whose TRICK the rules grouped with other knowledge (these
/// calls part nothing). The twenty-ninth's graduate what one feature's worker and validator
/// said (native compilation's warnings, a token kept out of the repository), git opening an
/// editor, whose failure mode the identity holds (a command waiting for a person), and a
/// mixin's missing target, whose failures the rules grouped with another feature's TRICK
/// (genSources). The thirty-first's graduate what one feature's worker and validator said
/// (COOP and COEP headers, `wasm-pack test --headless --firefox`).
const BELOW_WITH_THE_AGENT: &[(&str, [f64; 3])] = &[
    ("blind23", [0.95, 0.70, 0.87]),
    ("blind25", [0.95, 0.77, 0.90]),
    ("blind29", [0.95, 0.78, 0.93]),
    ("blind31", [0.95, 0.77, 0.88]),
];
