//! The pass as a whole, on files held in memory: examples first, then properties over generated
//! logs (bounds, nothing lost, idempotence, order independence, the user's lines kept).

use std::path::Path;

use proptest::prelude::*;

use super::*;

/// The clock of every test pass.
fn clock() -> Timestamp {
    chrono::DateTime::from_timestamp(1_777_500_000, 0).unwrap()
}

fn at(seconds: i64) -> String {
    time::format(crate::base::testing::at(seconds))
}

/// A raw.md line.
fn line(seconds: i64, role: &str, feature: &str, tag: &str, text: &str) -> String {
    format!("[{}] {role} {feature} {tag}: {text}", at(seconds))
}

fn snapshot(raw: &[String]) -> Snapshot {
    Snapshot {
        raw: raw
            .iter()
            .flat_map(|l| format!("{l}\n").into_bytes())
            .collect(),
        identities: Role::ALL.into_iter().map(|r| (r, None)).collect(),
        mission: "m-test".into(),
        mission_recorded: true,
        project: "/p".into(),
        ..Snapshot::default()
    }
}

/// A pass's `cancel` that never says so.
fn never() -> bool {
    false
}

fn pass(snapshot: &Snapshot) -> Pass {
    curate(
        snapshot,
        &Params::default(),
        clock(),
        &BTreeMap::new(),
        &never,
    )
    .unwrap()
}

/// The files after `pass` is written (with nothing appended meanwhile).
fn apply(snapshot: &Snapshot, pass: &Pass) -> Snapshot {
    let mut next = snapshot.clone();
    let files = &pass.files;
    if let Some(chunk) = &files.chunk {
        next.chunks.push(chunk.clone());
    }
    if let Some(text) = &files.demoted {
        next.demoted = text.clone();
    }
    if let Some(text) = &files.memory {
        next.memory = Some(text.clone());
    }
    if let Some(text) = &files.summary {
        next.summary = Some(text.clone());
    }
    for (role, text) in &files.identities {
        let slot = next.identities.iter_mut().find(|(r, _)| r == role).unwrap();
        slot.1 = Some(text.clone());
    }
    if let Some(text) = &files.ledger {
        next.ledger = Ledger::parse(text, Path::new("ledger.json")).unwrap();
    }
    if let Some(text) = &files.record {
        next.record = Record::parse(text, Path::new("curator.json")).unwrap();
    }
    if let Some(raw) = &files.raw {
        next.raw = raw.clone();
    }
    next
}

/// Every log line, archive then raw.md.
fn log_lines(snapshot: &Snapshot) -> Vec<String> {
    log::read(&snapshot.raw, &snapshot.chunks)
        .lines()
        .map(log::Line::text)
        .collect()
}

fn mission_log() -> Vec<String> {
    vec![
        line(
            0,
            "worker",
            "F-001",
            "TRICK",
            "psql -f drizzle/*.sql applies migrations in filename order",
        ),
        line(
            10,
            "worker",
            "F-001",
            "DECISION",
            "SQLite for the test database",
        ),
        line(
            20,
            "worker",
            "F-001",
            "-",
            "iteration 1 of F-001: no promise",
        ),
        line(
            100,
            "worker",
            "F-002",
            "TRICK",
            "migrations are applied in filename order by psql -f drizzle/*.sql",
        ),
        line(
            110,
            "worker",
            "F-002",
            "AVOID",
            "do not run the dev server on port 3000, it is taken",
        ),
        line(
            200,
            "worker",
            "F-003",
            "AVOID",
            "the dev server must not use port 3000 (taken)",
        ),
        line(
            210,
            "worker",
            "F-003",
            "LESSON",
            "cargo fmt before every commit",
        ),
        line(300, "validator", "F-003", "-", "F-003 verified: ok"),
        line(
            400,
            "worker",
            "F-004",
            "DECISION",
            "Postgres for the test database, not SQLite",
        ),
        line(
            410,
            "worker",
            "F-004",
            "TRICK",
            "seed data lives in fixtures/seed.sql",
        ),
        line(500, "worker", "F-005", "TRICK", "alone said once"),
        line(600, "worker", "F-005", "-", "iteration 1 of F-005: done"),
    ]
}

#[test]
fn a_pass_promotes_supersedes_graduates_and_archives() {
    let before = snapshot(&mission_log());
    let pass = pass(&before);
    let summary = pass.files.summary.clone().unwrap();
    let shown = crate::state::memory::strip_comments(&summary);
    assert_eq!(
        shown,
        "# Summary\n\n\n## Lessons\n\
         - psql -f drizzle/*.sql applies migrations in filename order (2× by F-001, F-002; 2026-04-24) \n\n\
         ## Decisions (current)\n\
         - Postgres for the test database, not SQLite (F-004; 2026-04-24) \n\n\
         ## Avoid\n\
         - do not run the dev server on port 3000, it is taken (2× by F-002, F-003; 2026-04-24) \n"
    );
    let memory = pass.files.memory.clone().unwrap();
    let context = memory.split("## Context\n").nth(1).unwrap();
    assert!(
        context.contains(&format!(
            "- TRICK: seed data lives in fixtures/seed.sql (F-004, {})",
            at(410)
        )),
        "{memory}"
    );
    assert!(memory.contains("- LESSON: cargo fmt before every commit"));
    let history = memory.split("## History\n").nth(1).unwrap();
    assert!(
        history.starts_with("- SQLite for the test database (F-001, ")
            && history.contains("→ superseded by c:"),
        "{memory}"
    );
    // The trick from two workers graduates into the worker's identity, saying why.
    let (role, identity) = &pass.files.identities[0];
    assert_eq!(*role, Role::Worker);
    assert!(
        identity.contains("TRICK reported by 2 distinct workers: F-001, F-002"),
        "{identity}"
    );
    // raw.md keeps its last 10 lines; the first 2 go to archive/raw-000001.md.
    assert_eq!(pass.report.archived_lines, 2);
    let after = apply(&before, &pass);
    assert_eq!(log_lines(&after), mission_log());
    let actions: Vec<&str> = pass.report.changes.iter().map(|c| c.action).collect();
    assert!(
        actions.contains(&"promote")
            && actions.contains(&"supersede")
            && actions.contains(&"graduate")
    );
}

#[test]
fn a_second_pass_with_nothing_new_changes_nothing() {
    let first = snapshot(&mission_log());
    let after = apply(&first, &pass(&first));
    let again = pass(&after);
    assert_eq!(again.files, Files::default(), "{:?}", again.files.names());
    assert!(
        again.report.changes.is_empty(),
        "{:?}",
        again.report.changes
    );
}

#[test]
fn the_users_lines_are_kept_byte_for_byte_and_an_edited_bullet_becomes_theirs() {
    let first = snapshot(&mission_log());
    let mut after = apply(&first, &pass(&first));
    let summary = after.summary.clone().unwrap();
    let edited = summary
        .lines()
        .find(|l| l.contains("psql"))
        .unwrap()
        .replace("applies migrations", "applies ALL migrations");
    let text = summary
        .lines()
        .map(|l| {
            if l.contains("psql") {
                edited.clone()
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        .replace("## Avoid", "## Avoid\n  * my own   note, spaced oddly\t")
        + "\n## Mine\nfree text\n";
    after.summary = Some(text.clone());
    let pass = pass(&after);
    let new = pass.files.summary.clone().unwrap_or(text);
    for kept in [
        edited.as_str(),
        "  * my own   note, spaced oddly\t",
        "## Mine",
        "free text",
    ] {
        assert_eq!(
            new.lines().filter(|l| *l == kept).count(),
            1,
            "{kept:?} in\n{new}"
        );
    }
    // The item is the user's now: the curator writes it nowhere else.
    assert_eq!(new.matches("psql").count(), 1);
    assert!(!pass.files.memory.unwrap_or_default().contains("psql"));
}

#[test]
fn a_deleted_curator_bullet_stays_deleted() {
    let first = snapshot(&mission_log());
    let mut after = apply(&first, &pass(&first));
    let summary = after.summary.clone().unwrap();
    after.summary = Some(
        summary
            .lines()
            .filter(|l| !l.contains("port 3000"))
            .map(|l| format!("{l}\n"))
            .collect(),
    );
    let second = pass(&after);
    assert!(second.report.changes.iter().any(|c| c.action == "dismiss"));
    let after = apply(&after, &second);
    assert!(!after.summary.as_deref().unwrap().contains("port 3000"));
    assert!(!after.memory.as_deref().unwrap().contains("port 3000"));
    assert_eq!(after.record.dismissed.len(), 1);
    let third = pass(&after);
    assert_eq!(third.files, Files::default());
}

#[test]
fn a_graduated_line_the_user_deleted_stays_deleted() {
    let first = snapshot(&mission_log());
    let mut after = apply(&first, &pass(&first));
    let identity = &mut after.identities[0];
    assert!(identity.1.as_deref().unwrap().contains("TRICK reported by"));
    identity.1 = Some("# Identity: worker\n\n".into());
    let second = pass(&after);
    assert!(second.files.identities.is_empty(), "{:?}", second.files);
    let after = apply(&after, &second);
    assert_eq!(
        after.identities[0].1.as_deref(),
        Some("# Identity: worker\n\n")
    );
    assert_eq!(pass(&after).files, Files::default());
}

#[test]
fn bullets_that_leave_memory_go_to_the_demoted_file() {
    let lines: Vec<String> = (0..30)
        .map(|n| {
            line(
                n * 10,
                "worker",
                "F-1",
                "LESSON",
                &format!("topic{n} needs care{n}"),
            )
        })
        .collect();
    let params = Params {
        memory_max_lines: 20,
        ..Params::default()
    };
    let first = snapshot(&lines);
    let one = curate(&first, &params, clock(), &BTreeMap::new(), &never).unwrap();
    let after = apply(&first, &one);
    let tight = Params {
        memory_max_lines: 12,
        ..params
    };
    let two = curate(&after, &tight, clock(), &BTreeMap::new(), &never).unwrap();
    let demoted = two.files.demoted.clone().unwrap();
    assert!(demoted.starts_with(&format!(
        "[{}] MEMORY.md ## Context: - LESSON: ",
        time::format(clock())
    )));
    assert!(two
        .report
        .changes
        .iter()
        .any(|c| c.action == "demote" && c.to == "archive/"));
    let after = apply(&after, &two);
    assert!(after.memory.as_deref().unwrap().lines().count() <= 12);
    assert_eq!(
        curate(&after, &tight, clock(), &BTreeMap::new(), &never)
            .unwrap()
            .files,
        Files::default()
    );
}

#[test]
fn the_agents_wordings_replace_the_summary_text_until_the_item_changes() {
    let first = snapshot(&mission_log());
    let draft = pass(&first);
    let id = draft.summary_plan.bullets[0][0].id.clone();
    let wordings: BTreeMap<String, String> = [(
        id.clone(),
        "psql -f runs migrations by file name".to_string(),
    )]
    .into();
    let with = curate(&first, &Params::default(), clock(), &wordings, &never).unwrap();
    let summary = with.files.summary.clone().unwrap();
    assert!(
        summary.contains("- psql -f runs migrations by file name (2× by F-001, F-002"),
        "{summary}"
    );
    // Later passes keep the wording.
    let after = apply(&first, &with);
    assert_eq!(pass(&after).files, Files::default());
    assert_eq!(
        after.record.wording[&id].text,
        "psql -f runs migrations by file name"
    );
}

// ---------------------------------------------------------------------------------------------
// Properties.

/// Subjects with paraphrases, so that generated logs have recurring items.
const TOPICS: [[&str; 3]; 8] = [
    [
        "psql -f drizzle/*.sql applies migrations in filename order",
        "migrations are applied in filename order by psql -f drizzle/*.sql",
        "psql -f applies drizzle/*.sql migrations in filename order",
    ],
    [
        "run cargo fmt before each commit",
        "cargo fmt before every commit",
        "always cargo fmt before commit",
    ],
    [
        "the dev server port 3000 is taken",
        "dev server port 3000 was already taken",
        "port 3000 taken by dev server",
    ],
    [
        "SQLite for the test database",
        "Postgres for the test database",
        "the test database is Postgres 16",
    ],
    [
        "pytest -x stops at the first failure",
        "pytest -x to stop at first failure",
        "stop at the first failure with pytest -x",
    ],
    [
        "never commit the .env file",
        "do not commit .env",
        ".env must never be committed",
    ],
    [
        "npm ci is faster than npm install in CI",
        "in CI npm ci beats npm install",
        "npm ci over npm install for CI",
    ],
    [
        "the API returns 201 on create",
        "create returns HTTP 201 from the API",
        "API create answers 201",
    ],
];
const NOISE: [&str; 16] = [
    "widget", "parser", "cache", "token", "schema", "router", "queue", "socket", "lexer", "index",
    "shard", "bucket", "daemon", "kernel", "plugin", "stream",
];
const TAGS: [&str; 6] = ["TRICK", "LESSON", "DECISION", "AVOID", "FAIL", "-"];
const ROLES: [&str; 3] = ["worker", "worker", "validator"];

/// One generated line: a topic's paraphrase or noise words, a tag, a role, a feature, a time.
fn generated_line(choice: (usize, usize, usize, usize, i64, usize)) -> String {
    let (topic, variant, role, feature, time, tag) = choice;
    let text = if topic < TOPICS.len() {
        TOPICS[topic][variant].to_string()
    } else if topic == TOPICS.len() {
        return format!("hand-written note {time}");
    } else {
        let n = topic * 7 + variant * 3 + tag;
        format!(
            "{} {} {}",
            NOISE[n % 16],
            NOISE[(n / 3) % 16],
            NOISE[(n / 5 + time as usize) % 16]
        )
    };
    // Each topic keeps one kind of tag, as real entries would.
    let tag = if topic < TOPICS.len() {
        match topic % 4 {
            0 => ["TRICK", "TRICK", "LESSON"][variant],
            1 => "LESSON",
            2 => ["AVOID", "FAIL", "AVOID"][variant],
            _ => "DECISION",
        }
    } else {
        TAGS[tag]
    };
    line(time, ROLES[role], &format!("F-{feature}"), tag, &text)
}

fn generated_log() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(
        (
            0usize..20,
            0usize..3,
            0usize..3,
            0usize..6,
            0i64..50_000,
            0usize..6,
        ),
        0..100,
    )
    .prop_map(|choices| choices.into_iter().map(generated_line).collect())
}

/// The user's own lines, put in the files before the pass.
fn user_lines() -> impl Strategy<Value = Vec<(bool, usize, String)>> {
    prop::collection::vec(
        (
            any::<bool>(),
            0usize..4,
            "[a-zé *_`<>!\\t-]{1,30}".prop_map(|text| format!("- mine: {text}")),
        ),
        0..4,
    )
}

fn params() -> impl Strategy<Value = Params> {
    (6usize..40, 80usize..800, 8usize..200, 1usize..4).prop_map(|(lines, tokens, memory, seen)| {
        Params {
            summary_max_lines: lines,
            summary_max_tokens: tokens,
            memory_max_lines: memory,
            promote_min_seen: seen,
            ..Params::default()
        }
    })
}

/// A snapshot with `lines`, the first `archived` of them in an archive chunk, and the user's
/// lines in summary.md and MEMORY.md.
fn setup(lines: &[String], archived: usize, users: &[(bool, usize, String)]) -> Snapshot {
    let archived = archived.min(lines.len());
    let mut snapshot = snapshot(&lines[archived..]);
    if archived > 0 {
        let chunk: Vec<u8> = lines[..archived]
            .iter()
            .flat_map(|l| format!("{l}\n").into_bytes())
            .collect();
        snapshot.chunks.push((1, chunk));
        let mut raw = format!("{}\n", log::header(1)).into_bytes();
        raw.extend_from_slice(&snapshot.raw);
        snapshot.raw = raw;
    }
    for (in_summary, section, text) in users {
        let layer = if *in_summary {
            Layer::Summary
        } else {
            Layer::Memory
        };
        let slot = if *in_summary {
            &mut snapshot.summary
        } else {
            &mut snapshot.memory
        };
        let doc = Document::parse(layer, slot.as_deref());
        let heading = doc.heading(section % layer.sections().len()).to_string();
        let current = doc.render(&[]);
        *slot = Some(current.replacen(&format!("{heading}\n"), &format!("{heading}\n{text}\n"), 1));
    }
    snapshot
}

/// The lines of the user's in both files, in order.
fn users_of(snapshot: &Snapshot) -> Vec<String> {
    [
        (Layer::Summary, &snapshot.summary),
        (Layer::Memory, &snapshot.memory),
    ]
    .iter()
    .flat_map(|(layer, text)| {
        text.as_deref()
            .map(|text| {
                text.lines()
                    .filter(|l| l.starts_with("- mine:"))
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default()
            .into_iter()
            .map(move |l| format!("{}: {l}", layer.file_name()))
    })
    .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn bounds_always_hold(lines in generated_log(), archived in 0usize..50, params in params(), users in user_lines()) {
        let before = setup(&lines, archived, &users);
        let pass = curate(&before, &params, clock(), &BTreeMap::new(), &never).unwrap();
        let after = apply(&before, &pass);
        // Within the bounds, unless the user's own lines (and the headings) alone exceed them:
        // then the curator adds nothing there.
        let summary_floor = size(&Document::parse(Layer::Summary, before.summary.as_deref()).render_user_only());
        let summary = size(after.summary.as_deref().unwrap_or(""));
        if summary_floor.lines <= params.summary_max_lines && summary_floor.tokens <= params.summary_max_tokens {
            prop_assert!(summary.lines <= params.summary_max_lines, "{summary:?}");
            prop_assert!(summary.tokens <= params.summary_max_tokens, "{summary:?}");
        } else {
            prop_assert!(pass.summary_plan.bullets.iter().all(Vec::is_empty));
        }
        let memory_floor = size(&Document::parse(Layer::Memory, before.memory.as_deref()).render_user_only());
        let memory = size(after.memory.as_deref().unwrap_or(""));
        prop_assert!(memory.lines <= params.memory_max_lines.max(memory_floor.lines), "{memory:?}");
        prop_assert!(log::read(&after.raw, &after.chunks).raw.len() <= params.keep_raw);
    }

    #[test]
    fn nothing_is_lost(lines in generated_log(), archived in 0usize..50, params in params(), users in user_lines()) {
        let before = setup(&lines, archived, &users);
        let pass = curate(&before, &params, clock(), &BTreeMap::new(), &never).unwrap();
        let after = apply(&before, &pass);
        // Every line ever appended is in archive/ or raw.md, once, in order.
        prop_assert_eq!(log_lines(&after), lines.clone());
        // Every item is somewhere: a bullet in summary.md or MEMORY.md, or archive/.
        let summary = after.summary.clone().unwrap_or_default();
        let memory = after.memory.clone().unwrap_or_default();
        for item in &pass.report.items {
            let marker = format!("c:{}:", item.id);
            let found = match item.place.as_str() {
                p if p.starts_with("summary.md") => summary.contains(&marker),
                p if p.starts_with("MEMORY.md") => memory.contains(&marker),
                "archive/" => item.evidence.len() <= lines.len(),
                other => unreachable!("{other}"),
            };
            prop_assert!(found, "{} lost ({})", item.id, item.place);
        }
        // And stays so on the next pass.
        let again = apply(&after, &curate(&after, &params, clock(), &BTreeMap::new(), &never).unwrap());
        prop_assert_eq!(log_lines(&again), lines);
    }

    #[test]
    fn a_second_pass_changes_no_byte(lines in generated_log(), archived in 0usize..50, params in params(), users in user_lines()) {
        let before = setup(&lines, archived, &users);
        let after = apply(&before, &curate(&before, &params, clock(), &BTreeMap::new(), &never).unwrap());
        let second = curate(&after, &params, clock(), &BTreeMap::new(), &never).unwrap();
        prop_assert_eq!(&second.files, &Files::default(), "{:?}", second.files.names());
    }

    #[test]
    fn the_order_of_entries_does_not_matter(lines in generated_log(), seed in any::<u64>(), params in params()) {
        let mut shuffled = lines.clone();
        // A deterministic shuffle from the seed.
        let mut state = seed | 1;
        for i in (1..shuffled.len()).rev() {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            shuffled.swap(i, (state % (i as u64 + 1)) as usize);
        }
        let one = curate(&setup(&lines, 0, &[]), &params, clock(), &BTreeMap::new(), &never).unwrap();
        let two = curate(&setup(&shuffled, lines.len() / 2, &[]), &params, clock(), &BTreeMap::new(), &never).unwrap();
        prop_assert_eq!(one.files.summary, two.files.summary);
        prop_assert_eq!(one.files.memory, two.files.memory);
        prop_assert_eq!(one.files.identities, two.files.identities);
        prop_assert_eq!(one.files.ledger, two.files.ledger);
    }

    #[test]
    fn the_users_lines_are_kept(lines in generated_log(), params in params(), users in user_lines()) {
        let before = setup(&lines, 0, &users);
        let expected = users_of(&before);
        let after = apply(&before, &curate(&before, &params, clock(), &BTreeMap::new(), &never).unwrap());
        prop_assert_eq!(users_of(&after), expected.clone());
        let again = apply(&after, &curate(&after, &params, clock(), &BTreeMap::new(), &never).unwrap());
        prop_assert_eq!(users_of(&again), expected);
    }
}
