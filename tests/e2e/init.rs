//! `./run.sh init` and `-C`.

use harness_tests::{code, text, Project};

#[test]
fn init_creates_the_templates_and_never_overwrites() {
    let project = Project::bare();
    let out = project.run(&["init"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    for file in ["config.yaml", "mission.md", "features.yaml"] {
        assert!(project.state_dir().join(file).is_file(), "{file}");
    }
    let config = project.read_state("config.yaml");
    assert!(config.contains("# "), "the config is commented");
    assert!(config.contains("prompt_via: stdin") && config.contains("max_iterations: 10"));

    project.write_state("config.yaml", "my own config\n");
    let out = project.run(&["init"]);
    assert_eq!(code(&out), 0);
    assert!(text(&out.stdout).contains("kept"), "{}", text(&out.stdout));
    assert_eq!(project.read_state("config.yaml"), "my own config\n");
}

#[test]
fn dash_c_works_before_and_after_the_subcommand() {
    let project = Project::bare();
    let run_sh = harness_tests::repo_root().join("run.sh");
    let out = std::process::Command::new(&run_sh)
        .args(["init", "-C"])
        .arg(&project.workdir)
        .env("HARNESS_BIN_DIR", harness_tests::bin_dir())
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert!(project.state_dir().join("config.yaml").is_file());

    let project = Project::new(
        "features:\n  - id: F-001\n    title: Hello\n",
        "steps:\n  - [promise: true]\n",
    );
    let out = std::process::Command::new(&run_sh)
        .arg("F-001")
        .arg("-C")
        .arg(&project.workdir)
        .env("HARNESS_BIN_DIR", harness_tests::bin_dir())
        .env("HARNESS_IDENTITY_DIR", project.identity_dir())
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(project.state("F-001")["status"], "done");
}

#[test]
fn help_lists_the_commands_and_exit_codes() {
    let project = Project::bare();
    let out = project.run(&["help"]);
    assert_eq!(code(&out), 0);
    let help = text(&out.stdout);
    for needle in [
        "init",
        "<FEATURE>",
        "-C, --workdir",
        "--max-iterations",
        "75",
    ] {
        assert!(help.contains(needle), "{needle} missing from help");
    }
}
