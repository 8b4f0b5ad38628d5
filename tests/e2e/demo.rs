//! `make demo`'s script, run on the debug binaries: the whole example mission ends done.

use harness_tests::{bin_dir, code, repo_root, text};

#[test]
fn the_demo_mission_ends_done() {
    let out = std::process::Command::new(repo_root().join("examples/demo.sh"))
        .arg("--clean")
        .env("HARNESS_BIN_DIR", bin_dir())
        .env("TMPDIR", std::env::temp_dir())
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert_eq!(code(&out), 0, "{stdout}\n{}", text(&out.stderr));
    for feature in [
        "F-001   done      2 of 5       2",
        "F-002   done      3 of 5       2",
        "F-003   done      1 of 5       1",
    ] {
        assert!(
            stdout.contains(feature),
            "{feature:?} missing from\n{stdout}"
        );
    }
    assert!(
        stdout.contains("worker F-001 TRICK: keep a PROGRESS.md checklist"),
        "{stdout}"
    );
    assert!(stdout.contains("$ sh test.sh           -> ok"), "{stdout}");
    assert!(
        stdout.contains("(working tree clean: every change is committed)"),
        "{stdout}"
    );
}
