//! Secrets printed by the agent, in every shape the harness knows and at every offset that
//! matters, never land anywhere: not in any file under `.harness/`, not on the terminal.

use std::path::Path;

use harness_tests::{code, text, Project};

const ONE_FEATURE: &str = "features:\n  - id: F-001\n    title: Hello\n";

/// Secret environment variables, one of each kind of name.
const SECRET_ENV: [(&str, &str); 8] = [
    ("MY_SERVICE_CREDENTIAL", "cred-7Hq2Lp9Xw3Rt5Vy8"),
    ("REGISTRY_AUTH", "p@ss/w0rd+Q!x~9z=Tk"),
    ("UPSTREAM_BEARER_VALUE", "brr.9fK2mQ7vX4nL8pR1"),
    ("GITLAB_PAT", "patZ8k3Jd7Lq2Wm5Nx4"),
    ("OPENAI_API_KEY", "oa-key-Vb7Nm2Qw9Er4Ty6U"),
    ("CI_JOB_TOKEN", "tok_5Gh8Jk2Lm4Np6Qr9"),
    ("CLIENT_SECRET", "s3cr3t:Value,42;zz"),
    ("DB_PASSWORD", "Db'quote\\slash99"),
];

/// Well-known shapes, known without the environment: what is printed, the secret in it, and
/// what must stand in output.log.
const SHAPES: [(&str, &str, &str); 13] = [
    (
        "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz012345",
        "AbCdEfGhIjKlMnOpQrStUvWxYz012345",
        "[REDACTED]",
    ),
    (
        "ghp_Gh7Jk2Lm4Np6Qr9St1Uv3Wx5Yz8Ab0Cd2Ef",
        "Gh7Jk2Lm4Np6Qr9St1Uv3Wx5Yz8Ab0Cd2Ef",
        "[REDACTED]",
    ),
    (
        "github_pat_11AbCdEfG0_hIjKlMnOpQrStUvWxYz0123456789",
        "11AbCdEfG0_hIjKlMnOpQrStUvWxYz0123456789",
        "[REDACTED]",
    ),
    (
        "glpat-Xy9Zw8Vu7Ts6Rq5Po4Nm",
        "Xy9Zw8Vu7Ts6Rq5Po4Nm",
        "[REDACTED]",
    ),
    (
        "xoxb-2048-4096-Slk8Jh6Gf4",
        "2048-4096-Slk8Jh6Gf4",
        "[REDACTED]",
    ),
    ("AKIAZ7Y6X5W4V3U2T1S0", "Z7Y6X5W4V3U2T1S0", "[REDACTED]"),
    (
        "AIzaSyQ-9r8T7y6U5i4O3p2A1s0D9f8G7h6J5k",
        "SyQ-9r8T7y6U5i4O3p2A1s0D9f8G7h6J5k",
        "[REDACTED]",
    ),
    (
        "hf_Qw9Er8Ty7Ui6Op5As4Df3Gh2Jk1Lz0Xc9Vb",
        "Qw9Er8Ty7Ui6Op5As4Df3Gh2Jk1Lz0Xc9Vb",
        "[REDACTED]",
    ),
    (
        "npm_Mn8Bv7Cx6Za5Sd4Fg3Hj2Kl1Qw0Er9Ty8Ui",
        "Mn8Bv7Cx6Za5Sd4Fg3Hj2Kl1Qw0Er9Ty8Ui",
        "[REDACTED]",
    ),
    (
        "aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ9pL2mN4k",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ9pL2mN4k",
        "aws_secret_access_key=[REDACTED]",
    ),
    (
        "Authorization: Bearer eyT0k3n.Qm9vQmFy.Zm9vYmFyYmF6",
        "eyT0k3n.Qm9vQmFy.Zm9vYmFyYmF6",
        "Authorization: Bearer [REDACTED]",
    ),
    (
        "https://deploy:Pw-9xK2mQ7v@git.example.com/repo.git",
        "Pw-9xK2mQ7v",
        "https://deploy:[REDACTED]@git.example.com/repo.git",
    ),
    (
        "SecretAccessKey: \"Zx9Cv8Bn7Mq6Wl5Ek4Rj3Th2Yg1Uf0IdOsPaLk\"",
        "Zx9Cv8Bn7Mq6Wl5Ek4Rj3Th2Yg1Uf0IdOsPaLk",
        "SecretAccessKey: \"[REDACTED]\"",
    ),
];

/// Every secret of this file, for the sweep.
fn all_secrets() -> Vec<&'static str> {
    SECRET_ENV
        .iter()
        .map(|(_, value)| *value)
        .chain(SHAPES.iter().map(|(_, secret, _)| *secret))
        .collect()
}

/// What the agent prints (raw) and what output.log must hold (shown), built side by side.
#[derive(Default)]
struct Output {
    raw: String,
    shown: String,
}

impl Output {
    fn plain(&mut self, text: &str) {
        self.raw.push_str(text);
        self.shown.push_str(text);
    }

    fn secret(&mut self, raw: &str, shown: &str) {
        self.raw.push_str(raw);
        self.shown.push_str(shown);
    }
}

/// One line of 3 MiB with a secret across every multiple of 64 KiB, the cut falling at a
/// different place in each: environment values glued to the text around them (a value is a
/// secret wherever it is), shapes as words.
fn long_line(out: &mut Output) {
    let mut items: Vec<(&str, &str, bool)> = SECRET_ENV
        .iter()
        .map(|(_, value)| (*value, "[REDACTED]", true))
        .collect();
    items.extend(SHAPES.iter().map(|(raw, _, shown)| (*raw, *shown, false)));
    let start = out.raw.len();
    for multiple in 1..=48usize {
        let (raw, shown, glued) = items[multiple % items.len()];
        let separator = if glued { "" } else { " " };
        let inside = 1 + multiple * 7 % (raw.len() - 1);
        let fill = start + multiple * 65_536 - inside - separator.len() - out.raw.len();
        out.plain(&"x".repeat(fill));
        out.plain(separator);
        out.secret(raw, shown);
        out.plain(separator);
    }
    out.plain("\n");
}

/// Each secret on a line of its own, in a memory entry, and split across two lines.
fn short_lines(out: &mut Output) {
    for (name, value) in SECRET_ENV {
        out.plain(&format!("{name} is "));
        out.secret(value, "[REDACTED]");
        out.plain("\n");
    }
    for (raw, _, shown) in SHAPES {
        out.plain("found ");
        out.secret(raw, shown);
        out.plain(" here\n");
    }
    out.plain("TRICK: the registry password is ");
    out.secret(SECRET_ENV[1].1, "[REDACTED]");
    out.plain("\nsplit value: ");
    out.secret("cred-7Hq2Lp9X\nw3Rt5Vy8", "[REDACTED]\n[REDACTED]");
    out.plain(" end\nwrapped key: ");
    out.secret(
        "ghp_Gh7Jk2Lm4Np6Qr9\nSt1Uv3Wx5Yz8Ab0Cd2Ef",
        "[REDACTED]\n[REDACTED]",
    );
    out.plain("\nwrapped late: ");
    out.secret(
        "sk-ant-api03-AbCdEfGhIjKlMnOpQr\r\nStUvWxYz012345",
        "[REDACTED]\r\n[REDACTED]",
    );
    out.plain(" end\nLESSON: keep ");
    out.secret(SHAPES[5].0, "[REDACTED]");
    out.plain(" out of the code\n");
}

/// The fragments of `secret` a leak would show: its pieces of 10 characters.
fn fragments(secret: &str) -> Vec<&str> {
    let bytes = secret.len();
    (0..bytes.saturating_sub(9))
        .step_by(5)
        .chain([bytes.saturating_sub(10)])
        .filter_map(|start| secret.get(start..(start + 10).min(bytes)))
        .collect()
}

/// Panics if a fragment of a secret is in `haystack`.
fn assert_no_secret(name: &str, haystack: &str) {
    for secret in all_secrets() {
        for fragment in fragments(secret) {
            assert!(
                !haystack.contains(fragment),
                "{name} holds {fragment:?} of the secret {secret:?}"
            );
        }
    }
}

/// Panics where `actual` first differs from `expected`, showing both there.
fn assert_same_text(name: &str, actual: &str, expected: &str) {
    if actual == expected {
        return;
    }
    let at = actual
        .bytes()
        .zip(expected.bytes())
        .position(|(a, b)| a != b)
        .unwrap_or(actual.len().min(expected.len()));
    let around = |text: &str| {
        let end = (at + 60).min(text.len());
        String::from_utf8_lossy(&text.as_bytes()[at.saturating_sub(60)..end]).into_owned()
    };
    panic!(
        "{name} differs at byte {at} (lengths {} and {}):\n  got:      {:?}\n  expected: {:?}",
        actual.len(),
        expected.len(),
        around(actual),
        around(expected)
    );
}

/// Every file under `dir`, as text.
fn files_under(dir: &Path) -> Vec<(String, String)> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_file())
        .map(|entry| {
            let bytes = std::fs::read(entry.path()).unwrap();
            (
                entry.path().display().to_string(),
                String::from_utf8_lossy(&bytes).into_owned(),
            )
        })
        .collect()
}

/// The sweep: one agent run prints a 3 MiB line with a secret across every multiple of 64 KiB,
/// then each secret (every kind of secret name, every shape) on lines of its own, in memory
/// entries and split across two lines. output.log holds exactly the output with each secret
/// replaced; no file under `.harness/` (output.log, notes, raw.md, prompt.md, state.json,
/// result.json, report.html…) and nothing on the terminal holds a piece of any of them.
#[test]
fn no_secret_lands_anywhere_at_any_offset() {
    let mut out = Output::default();
    long_line(&mut out);
    short_lines(&mut out);
    let project = Project::new(
        ONE_FEATURE,
        &format!(
            "steps:\n  - [cat: agent-output.txt]\n  - [print: 'last words {}', promise: true]\n",
            SECRET_ENV[4].1
        ),
    );
    std::fs::write(project.root().join("agent-output.txt"), &out.raw).unwrap();
    let mut command = project.command(&["F-001"]);
    command.envs(SECRET_ENV);
    let run = command.output().unwrap();
    assert_eq!(code(&run), 0, "{}", text(&run.stderr));

    let log = std::fs::read(project.run_dirs("F-001")[0].join("output.log")).unwrap();
    assert_same_text("output.log", &String::from_utf8_lossy(&log), &out.shown);
    for (path, content) in files_under(&project.state_dir()) {
        assert_no_secret(&path, &content);
    }
    assert_no_secret("stdout", &text(&run.stdout));
    assert_no_secret("stderr", &text(&run.stderr));
    assert!(text(&run.stdout).contains("TRICK: the registry password is [REDACTED]"));
    assert!(project
        .read_state("raw.md")
        .contains("TRICK: the registry password is [REDACTED]"));
    assert!(
        project
            .prompt("F-001", 2)
            .contains("split value: [REDACTED]\n[REDACTED] end"),
        "the notes carry the redacted end of the output"
    );
}

/// A secret in a file the prompt quotes (here the feature's description) is not sent to the
/// agent, and prompt.md, which is what was sent, does not hold it either.
#[test]
fn a_secret_in_the_spec_is_neither_sent_nor_kept_in_prompt_md() {
    let project = Project::new(
        &format!(
            "features:\n  - id: F-001\n    title: Hello\n    description: call the API with {} or {}\n",
            SHAPES[0].0, SECRET_ENV[0].1
        ),
        "steps:\n  - [echo_prompt: true, promise: true]\n",
    );
    let mut command = project.command(&["F-001", "--quiet"]);
    command.envs(SECRET_ENV);
    let run = command.output().unwrap();
    assert_eq!(code(&run), 0, "{}", text(&run.stderr));
    let prompt = project.prompt("F-001", 1);
    assert!(
        prompt.contains("call the API with [REDACTED] or [REDACTED]"),
        "{prompt}"
    );
    let log = std::fs::read_to_string(project.run_dirs("F-001")[0].join("output.log")).unwrap();
    assert!(
        log.contains("call the API with [REDACTED] or [REDACTED]"),
        "the agent got the redacted prompt: {log}"
    );
}

/// A secret that only the agent's own environment holds (config.yaml's `agent: env:`) is
/// redacted from the prompt it is sent, from prompt.md, and from what `explain` shows.
#[test]
fn a_secret_of_the_agents_own_environment_is_redacted_from_the_prompt_and_explain() {
    let secret = "deploy-7Hq2Lx9Wv4Rt8Zp3";
    let project = Project::new(
        &format!(
            "features:\n  - id: F-001\n    title: Hello\n    description: deploy with {secret}\n"
        ),
        "steps:\n  - [echo_prompt: true, promise: true]\n",
    );
    project.config(&format!("env: {{DEPLOY_TOKEN: {secret}}}\n"), "");
    // Regression: explain redacted with the harness's environment only.
    let explain = project.run(&["explain", "F-001"]);
    assert_eq!(code(&explain), 0, "{}", text(&explain.stderr));
    let shown = text(&explain.stdout);
    assert!(shown.contains("deploy with [REDACTED]"), "{shown}");
    let run = project.run(&["F-001", "--quiet"]);
    assert_eq!(code(&run), 0, "{}", text(&run.stderr));
    let prompt = project.prompt("F-001", 1);
    assert!(prompt.contains("deploy with [REDACTED]"), "{prompt}");
    let log = std::fs::read_to_string(project.run_dirs("F-001")[0].join("output.log")).unwrap();
    assert!(!log.contains(secret), "the agent got the secret: {log}");
}

/// The same in a JSON stream (Claude Code's): secrets inside JSON strings — escaped quotes and
/// backslashes, split by an escaped `\n` — are redacted without breaking the JSON, so the
/// transcript on the terminal still shows the assistant's (redacted) words and tool uses.
#[test]
fn secrets_inside_a_json_stream_are_redacted_and_the_json_still_reads() {
    let json_password = serde_json::to_string(SECRET_ENV[7].1).unwrap();
    let lines = [
        format!(
            r#"{{"type":"assistant","message":{{"content":[{{"type":"text","text":"The key is {}\nand the password {} works."}}]}}}}"#,
            "sk-ant-api03-AbCdEfGhIjKl\\nMnOpQrStUvWxYz012345",
            &json_password[1..json_password.len() - 1]
        ),
        format!(
            r#"{{"type":"assistant","message":{{"content":[{{"type":"tool_use","id":"t1","name":"Bash","input":{{"command":"curl -H 'Authorization: Bearer {}' https://api.example.com"}}}}]}}}}"#,
            SHAPES[10].1
        ),
        format!(
            r#"{{"type":"user","message":{{"content":[{{"type":"tool_result","tool_use_id":"t1","content":"{{\"SecretAccessKey\": \"{}\"}}"}}]}}}}"#,
            SHAPES[12].1
        ),
        format!(
            r#"{{"type":"result","subtype":"success","is_error":false,"num_turns":2,"result":"Done with {}. <promise>TASK_COMPLETE</promise>"}}"#,
            SECRET_ENV[0].1
        ),
    ];
    let project = Project::new(ONE_FEATURE, "steps:\n  - [cat: agent-output.txt]\n");
    project.config("output_format: claude-stream-json\n", "");
    std::fs::write(
        project.root().join("agent-output.txt"),
        lines.join("\n") + "\n",
    )
    .unwrap();
    let mut command = project.command(&["F-001"]);
    command.envs(SECRET_ENV);
    let run = command.output().unwrap();
    assert_eq!(code(&run), 0, "{}", text(&run.stderr));

    let stdout = text(&run.stdout);
    assert_eq!(
        stdout,
        "The key is [REDACTED]\n[REDACTED]\nand the password [REDACTED] works.\n\
         → Bash: curl -H 'Authorization: Bearer [REDACTED]' https://api.example.com\n\
         Done with [REDACTED]. <promise>TASK_COMPLETE</promise>\n"
    );
    let log = std::fs::read_to_string(project.run_dirs("F-001")[0].join("output.log")).unwrap();
    for line in log.lines() {
        serde_json::from_str::<serde_json::Value>(line)
            .unwrap_or_else(|e| panic!("a redacted line is no longer JSON ({e}): {line}"));
    }
    for (path, content) in files_under(&project.state_dir()) {
        assert_no_secret(&path, &content);
    }
    assert_no_secret("stdout", &stdout);
    assert_no_secret("stderr", &text(&run.stderr));
}
