use std::fs as std_fs;
use std::os::unix::fs::symlink;

use super::*;
use crate::base::atomic::{create_new, write_atomic};

/// A confined state directory inside a temporary directory, with a file outside it.
fn state() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join(".harness");
    std_fs::create_dir_all(root.join("runs")).unwrap();
    confine(&root);
    let outside = dir.path().join("outside");
    std_fs::write(&outside, b"not yours\n").unwrap();
    (dir, root, outside)
}

fn refused_path(error: io::Error) -> PathBuf {
    let message = error.to_string();
    as_refused(&error)
        .unwrap_or_else(|| panic!("not refused: {message}"))
        .path
        .clone()
}

#[test]
fn a_link_to_a_file_is_never_read_or_written_through() {
    let (dir, root, outside) = state();
    let raw = root.join("raw.md");
    symlink(&outside, &raw).unwrap();
    assert_eq!(refused_path(read(&raw).unwrap_err()), raw);
    assert_eq!(refused_path(open(&raw, Mode::Append).unwrap_err()), raw);
    assert_eq!(refused_path(write_atomic(&raw, b"x").unwrap_err()), raw);
    assert_eq!(refused_path(create_new(&raw, b"x").unwrap_err()), raw);
    assert_eq!(kind(&raw).unwrap(), Some(Kind::Link));
    assert!(!is_file(&raw) && exists(&raw));
    assert!(read(&raw)
        .unwrap_err()
        .to_string()
        .contains(": a symbolic link, which the harness never"));
    // A dangling link is not created through either.
    let dangling = root.join("summary.md");
    symlink(dir.path().join("created"), &dangling).unwrap();
    assert_eq!(
        refused_path(open(&dangling, Mode::Create).unwrap_err()),
        dangling
    );
    assert!(!dir.path().join("created").exists());
    assert_eq!(std_fs::read(&outside).unwrap(), b"not yours\n");
    // Outside a state directory, links are followed as usual.
    let elsewhere = dir.path().join("identity.md");
    symlink(&outside, &elsewhere).unwrap();
    assert_eq!(read(&elsewhere).unwrap(), b"not yours\n");
}

#[test]
fn a_link_to_a_directory_is_never_walked_through() {
    let (dir, root, _) = state();
    let away = dir.path().join("away");
    std_fs::create_dir_all(away.join("F-001")).unwrap();
    symlink(&away, root.join("notes")).unwrap();
    symlink(&away, root.join("runs/F-001")).unwrap();
    let notes = root.join("notes/F-001.md");
    assert_eq!(refused_path(read(&notes).unwrap_err()), root.join("notes"));
    assert_eq!(
        refused_path(create_dir_all(&root.join("notes/x")).unwrap_err()),
        root.join("notes")
    );
    assert_eq!(
        refused_path(write_atomic(&root.join("runs/F-001/state.json"), b"{}").unwrap_err()),
        root.join("runs/F-001")
    );
    assert_eq!(
        refused_path(read_dir(&root.join("notes")).unwrap_err()),
        root.join("notes")
    );
    assert!(!exists(&notes));
    assert_eq!(std_fs::read_dir(&away).unwrap().count(), 1);
    assert_eq!(
        refused_path(refuse_links([root.join("config.yaml").as_path(), &notes]).unwrap_err()),
        root.join("notes")
    );
}

#[test]
fn the_state_directory_itself_may_be_a_link() {
    let dir = tempfile::tempdir().unwrap();
    std_fs::create_dir_all(dir.path().join("real")).unwrap();
    let root = dir.path().join(".harness");
    symlink(dir.path().join("real"), &root).unwrap();
    confine(&root);
    create_dir_all(&root.join("runs/F-001")).unwrap();
    write_atomic(&root.join("runs/F-001/state.json"), b"{}").unwrap();
    assert_eq!(read(&root.join("runs/F-001/state.json")).unwrap(), b"{}");
    let entries = read_dir(&root.join("runs")).unwrap();
    assert_eq!(
        entries,
        [Entry {
            name: "F-001".into(),
            kind: Kind::Dir
        }]
    );
    assert!(dir.path().join("real/runs/F-001/state.json").is_file());
}

#[test]
fn a_fifo_in_the_state_directory_is_refused_without_hanging() {
    let (_dir, root, _) = state();
    let fifo = root.join("raw.md");
    let c = CString::new(fifo.as_os_str().as_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    assert_eq!(refused_path(read(&fifo).unwrap_err()), fifo);
    assert_eq!(refused_path(open(&fifo, Mode::Append).unwrap_err()), fifo);
    assert!(read(&root.join("runs")).is_err());
}

/// What may touch the file system directly, outside this module: paths that are never state.
const ALLOWED: &[(&str, &str)] = &[
    // The project's own files, in its tree or a worktree: the agent's work, not state.
    (
        "harness-core/src/base/git/mod.rs",
        "std::fs::metadata(top.join(path))",
    ),
    // A private copy of the project's git index, in the temporary directory.
    (
        "harness-core/src/base/git/snapshot.rs",
        "std::fs::copy(&real, &path)",
    ),
    (
        "harness-core/src/base/git/snapshot.rs",
        "std::fs::remove_file(&self.path",
    ),
    (
        "harness-core/src/base/git/mod.rs",
        "std::fs::File::open(path)",
    ),
    (
        "harness-core/src/base/git/mod.rs",
        "workdir.join(\".git\").exists()",
    ),
    (
        "harness-core/src/base/git/mod.rs",
        "dir.join(\".git\").symlink_metadata()",
    ),
    (
        "harness-core/src/state/worktree.rs",
        "path.join(\".git\").exists()",
    ),
    (
        "harness-core/src/roles/worker.rs",
        "existing.path.join(\".git\").exists()",
    ),
    // git's own files (its admin directories, lock files, MERGE_HEAD), the project's files in the
    // main tree and in worktrees (a link there is the project's; the harness never follows one
    // into its state: a salvage that is a link is removed, not entered), and /proc.
    ("harness-core/src/base/git/stale.rs", ""),
    ("harness-core/src/base/git/stat_walk.rs", ""),
    ("harness-core/src/base/git/worktrees.rs", ""),
    ("harness-core/src/base/git/merge.rs", ""),
    ("cli/src/lib.rs", "if !workdir.is_dir() {"),
    // The harness install, the identity directory seeded from it, the agent's program on PATH.
    (
        "harness-core/src/spec/layout.rs",
        "root.join(\"Cargo.toml\").is_file()",
    ),
    ("harness-core/src/state/identity.rs", ""),
    (
        "harness-core/src/spec/layout.rs",
        ".find(|dir| dir.join(\"roles\").join(\"worker.md\").is_file())",
    ),
    (
        "harness-core/src/agent/mod.rs",
        "m.is_file() && m.permissions()",
    ),
    (
        "harness-core/src/agent/spawn.rs",
        "std::fs::metadata(&seen_here)",
    ),
    (
        "harness-core/src/agent/spawn.rs",
        "meta.is_file() && executable(",
    ),
    // The agent's stdin when it has none (as std's `Stdio::null`).
    (
        "harness-core/src/agent/spawn.rs",
        "File::open(\"/dev/null\")",
    ),
    // The curator's test hook: a file the test names, outside the state.
    (
        "harness-core/src/roles/curator/run.rs",
        "std::fs::write(&flag",
    ),
    (
        "harness-core/src/roles/curator/run.rs",
        "while path.exists() && std::time::Instant",
    ),
    // /proc and the cgroup file system, to contain the agent's processes; the paths a sandbox
    // mounts (the CLI's own state, git's metadata): none is state.
    ("harness-core/src/agent/contain/procfs.rs", ""),
    ("harness-core/src/base/process.rs", ""),
    ("harness-core/src/agent/contain/cgroup.rs", ""),
    (
        "harness-core/src/agent/contain/mod.rs",
        "path.canonicalize()",
    ),
    ("harness-core/src/agent/sandbox.rs", ""),
    // Types, not accesses.
    ("", "use std::fs::File;"),
    ("", "std::fs::Metadata"),
    ("", "use std::os::unix::fs::"),
];

/// The marks of a direct file-system access (`fs::` alone is this module: std's is never
/// imported under that name).
const DIRECT: &[&str] = &[
    "std::fs",
    "File::open",
    "File::create",
    "OpenOptions",
    ".exists()",
    ".is_file()",
    ".is_dir()",
    ".read_dir(",
    ".symlink_metadata(",
    ".canonicalize(",
];

/// Every `.rs` file under `dir`, with its path relative to `base`.
fn sources(base: &Path, dir: &Path, found: &mut Vec<(String, String)>) {
    for entry in std_fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(base, &path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let relative = path.strip_prefix(base).unwrap().display().to_string();
            found.push((relative, std_fs::read_to_string(&path).unwrap()));
        }
    }
}

#[test]
fn every_file_access_goes_through_this_module() {
    // harness-core and the role binaries; not the benchmarks nor the scripted agent.
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut files = Vec::new();
    for name in [
        "harness-core",
        "cli",
        "worker",
        "validator",
        "planner",
        "curator",
    ] {
        sources(crates, &crates.join(name).join("src"), &mut files);
    }
    assert!(files.len() > 50, "the sources are found");
    let mut direct = Vec::new();
    for (file, text) in &files {
        let own = file.starts_with("harness-core/src/base/fs")
            || file.ends_with("tests.rs")
            || file.ends_with("base/testing.rs");
        // Unit tests at the end of a file are not the harness's own accesses.
        let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or(text);
        for (number, line) in code.lines().enumerate() {
            let allowed = ALLOWED
                .iter()
                .any(|(path, snippet)| (path.is_empty() || file == path) && line.contains(snippet));
            let comment = line.trim_start().starts_with("//");
            if !own && !allowed && !comment && DIRECT.iter().any(|mark| line.contains(mark)) {
                direct.push(format!("{file}:{}: {}", number + 1, line.trim()));
            }
        }
    }
    assert!(
        direct.is_empty(),
        "file accesses outside base::fs (route them through it, or add them to ALLOWED with \
         why):\n{}",
        direct.join("\n")
    );
}

#[test]
fn a_state_directory_moved_away_or_made_again_is_not_the_one_written_to() {
    let (dir, root, _) = state();
    write_atomic(&root.join("runs/state.json"), b"1").unwrap();
    // Moved away: the path now names a new directory, which is the one written to.
    std_fs::rename(&root, dir.path().join("moved")).unwrap();
    std_fs::create_dir_all(root.join("runs")).unwrap();
    write_atomic(&root.join("runs/state.json"), b"2").unwrap();
    assert_eq!(std_fs::read(root.join("runs/state.json")).unwrap(), b"2");
    assert_eq!(
        std_fs::read(dir.path().join("moved/runs/state.json")).unwrap(),
        b"1"
    );
    // Removed and made again.
    std_fs::remove_dir_all(&root).unwrap();
    std_fs::create_dir_all(root.join("runs")).unwrap();
    write_atomic(&root.join("runs/state.json"), b"3").unwrap();
    assert_eq!(read(&root.join("runs/state.json")).unwrap(), b"3");
    // Replaced by a link: a state directory may be one, and it is followed to its directory.
    std_fs::rename(&root, dir.path().join("real")).unwrap();
    symlink(dir.path().join("real"), &root).unwrap();
    write_atomic(&root.join("runs/state.json"), b"4").unwrap();
    assert_eq!(
        std_fs::read(dir.path().join("real/runs/state.json")).unwrap(),
        b"4"
    );
}

#[test]
fn a_state_directory_inside_another_is_walked_to_from_it() {
    let (dir, root, outside) = state();
    let inner = root.join("worktrees/F-001/.harness");
    std_fs::create_dir_all(inner.join("runs")).unwrap();
    confine(&inner);
    let file = inner.join("runs/state.json");
    write_atomic(&file, b"{}").unwrap();
    write_atomic(&file, b"{ }").unwrap();
    assert_eq!(read(&file).unwrap(), b"{ }");
    // A link planted in the outer one is refused on the way to the inner one.
    std_fs::rename(root.join("worktrees"), dir.path().join("away")).unwrap();
    symlink(dir.path().join("away"), root.join("worktrees")).unwrap();
    assert_eq!(
        refused_path(read(&file).unwrap_err()),
        root.join("worktrees")
    );
    assert!(outside.exists());
}
