//! Records the commit the binaries are built from, for `harness --version`: `HARNESS_COMMIT` is
//! `commit <hash>` (HEAD of the source tree) or `unknown commit` outside git (a source tarball).

use std::path::PathBuf;
use std::process::Command;

fn main() {
    // Only this workspace's own repository counts, not one it was unpacked into.
    let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default();
    let workspace = PathBuf::from(manifest_dir).join("../..");
    let own = git(&["rev-parse", "--show-toplevel"])
        .is_some_and(|top| PathBuf::from(top).canonicalize().ok() == workspace.canonicalize().ok());
    let commit = own
        .then(|| git(&["rev-parse", "--short=12", "HEAD"]))
        .flatten();
    let text = commit.map_or("unknown commit".to_string(), |hash| {
        format!("commit {hash}")
    });
    println!("cargo:rustc-env=HARNESS_COMMIT={text}");
    // Built again when HEAD moves: a checkout (HEAD), a commit or a fetch (the branch's ref,
    // loose or packed). Only files that exist are named: cargo reruns on a missing one each time.
    println!("cargo:rerun-if-changed=build.rs");
    let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string()];
    watched.extend(git(&["symbolic-ref", "-q", "HEAD"]));
    for name in watched {
        if let Some(path) = git(&["rev-parse", "--path-format=absolute", "--git-path", &name]) {
            if PathBuf::from(&path).is_file() {
                println!("cargo:rerun-if-changed={path}");
            }
        }
    }
}

/// The trimmed output of a git command in the source tree, if it succeeded.
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !text.is_empty()).then_some(text)
}
