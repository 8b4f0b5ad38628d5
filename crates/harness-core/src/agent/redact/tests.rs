use super::*;

const KEY: &str = "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz012345";

/// A key of each shape the redactor knows.
pub(super) const SHAPED_KEYS: &[&str] = &[
    KEY,
    "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx",
    "sk_live_AbCdEfGhIjKlMnOpQrStUvWx",
    "rk_test_AbCdEfGhIjKlMnOpQrStUvWx",
    "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "ghs_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "github_pat_11ABCDEFG0abcdefghijkl_mnopqrstuvwxyz0123456789",
    "glpat-AbCdEfGhIjKlMnOpQrSt",
    "xoxb-1234567890-abcdef",
    "xapp-1-A0123456789-abc",
    "AKIAIOSFODNN7EXAMPLE",
    "ASIAIOSFODNN7EXAMPLE",
    "AIzaSyA-1234567890abcdefghijklmnopqrstu",
    "hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567",
    "npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "pypi-AgEIcHlwaS5vcmcCJGY0ZjQ4ZjYxLWQ5ZTgtNDk1Ny1hNjQ2LTU3YzgwZGY0ZjU1ZQ",
    "SG.AbCdEfGhIjKlMnOpQrStUv.AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcde",
    "ya29.a0AfH6SMBx-AbCdEfGhIjKlMnOp",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.AbCdEfGhIjKlMnOp",
];

fn redactor() -> Redactor {
    Redactor::from_env([
        ("ANTHROPIC_API_KEY", "not-a-shape-but-secret-123"),
        ("MY_PASSWORD", "hunter2hunter2"),
        ("GITHUB_TOKEN", "short"),
        ("HOME", "/home/someone-long-enough"),
    ])
}

/// Everything `pieces` make, pushed in turn through one stream.
fn streamed(redactor: &Redactor, pieces: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut stream = RedactingStream::new(redactor);
    for piece in pieces {
        stream.push(piece, |clean| out.extend_from_slice(clean));
    }
    stream.finish(|clean| out.extend_from_slice(clean));
    out
}

fn text(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap()
}

#[test]
fn well_known_key_shapes_are_hidden() {
    let r = Redactor::default();
    for key in SHAPED_KEYS {
        let line = format!("export X={key} # done");
        assert_eq!(r.redact(&line), "export X=[REDACTED] # done", "{key}");
    }
}

#[test]
fn secrets_known_by_their_label_are_hidden_and_the_label_kept() {
    let r = Redactor::default();
    let aws = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
    for (line, expected) in [
        (
            format!("aws_secret_access_key = {aws}\n"),
            "aws_secret_access_key = [REDACTED]\n",
        ),
        (
            format!("export AWS_SECRET_ACCESS_KEY={aws}"),
            "export AWS_SECRET_ACCESS_KEY=[REDACTED]",
        ),
        (
            format!(r#"{{"SecretAccessKey": "{aws}", "x": 1}}"#),
            r#"{"SecretAccessKey": "[REDACTED]", "x": 1}"#,
        ),
        (
            format!(r#"{{"text":"{{\"SecretAccessKey\": \"{aws}\"}}"}}"#),
            r#"{"text":"{\"SecretAccessKey\": \"[REDACTED]\"}"}"#,
        ),
        (
            "Authorization: Bearer abc.DEF-ghi_jkl~mno+pqr/stu=".to_string(),
            "Authorization: Bearer [REDACTED]",
        ),
        (
            "git remote add origin https://bot:s3cr%40t-pass@example.com/repo.git".to_string(),
            "git remote add origin https://bot:[REDACTED]@example.com/repo.git",
        ),
        (
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo\n4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onL\n-----END RSA PRIVATE KEY-----\n".to_string(),
            "-----BEGIN RSA PRIVATE KEY-----\n[REDACTED]\n[REDACTED]\n-----END RSA PRIVATE KEY-----\n",
        ),
    ] {
        assert_eq!(r.redact(&line), expected);
    }
}

#[test]
fn ordinary_text_is_left_alone() {
    let r = Redactor::default();
    for text in [
        "task-list is fine",
        "sk-short",
        "risk-assessment-of-the-whole-thing-here",
        "ghp_tiny",
        "commit 3f9c2e1a7b4d5c6e8f9a0b1c2d3e4f5a6b7c8d9e",
        "see https://example.com:8080/path and http://localhost:3000/",
        "the bearer of bad news",
        "secret_access_key: ${AWS_SECRET}",
        r#"{"usage":{"input_tokens":19459,"output_tokens":1,"max_tokens":4096}}"#,
        "the user:password@host form",
    ] {
        assert_eq!(r.redact(text), text);
    }
}

#[test]
fn secret_names_are_recognised_by_their_words() {
    for name in [
        "OPENAI_API_KEY",
        "GITHUB_TOKEN",
        "CLIENT_SECRET",
        "DB_PASSWORD",
        "MYSQL_PASS",
        "GPG_PASSPHRASE",
        "AZURE_CREDENTIAL",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "NPM_AUTH",
        "NPM_AUTH_TOKEN",
        "HTTP_AUTHORIZATION",
        "OAUTH_CLIENT",
        "API_BEARER",
        "SERVICE_BEARER_VALUE",
        "GITHUB_PAT",
        "ado_pat",
    ] {
        assert!(is_secret_name(name), "{name}");
    }
    for name in [
        "PATH",
        "HOME",
        "PWD",
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "XAUTHORITY",
        "PATTERN",
        "COMPASS",
    ] {
        assert!(!is_secret_name(name), "{name}");
    }
}

#[test]
fn secret_environment_values_are_hidden_and_others_kept() {
    let r = redactor();
    assert_eq!(
        r.redact(
            "key=not-a-shape-but-secret-123 pw=hunter2hunter2 home=/home/someone-long-enough short"
        ),
        "key=[REDACTED] pw=[REDACTED] home=/home/someone-long-enough short"
    );
    // Inside a word too: the value is known exactly.
    assert_eq!(r.redact("xxhunter2hunter2xx"), "xx[REDACTED]xx");
}

#[test]
fn a_value_of_several_lines_counts_line_by_line() {
    let r = Redactor::from_env([(
        "DEPLOY_KEY",
        "first-line-of-it\r\n  second-line-of-it  \nshort\n",
    )]);
    assert_eq!(
        r.redact("a first-line-of-it b second-line-of-it c short"),
        "a [REDACTED] b [REDACTED] c short"
    );
}

#[test]
fn a_value_is_found_as_written_in_json() {
    let r = Redactor::from_env([("DB_PASSWORD", r#"pa"ss\word-1"#)]);
    let line = r#"{"type":"assistant","text":"the password is pa\"ss\\word-1."}"#;
    let out = r.redact(line);
    assert_eq!(
        out,
        r#"{"type":"assistant","text":"the password is [REDACTED]."}"#
    );
    assert!(serde_json::from_str::<serde_json::Value>(&out).is_ok());
}

#[test]
fn a_value_after_a_json_escape_keeps_the_json_valid() {
    let r = Redactor::from_env([("MY_TOKEN", "twelve-chars-x")]);
    let line = r#"{"text":"tab\twelve-chars-x and \\twelve-chars-x"}"#;
    let out = r.redact(line);
    assert!(
        serde_json::from_str::<serde_json::Value>(&out).is_ok(),
        "{out}"
    );
    assert!(!out.contains("welve-chars"), "{out}");
    // Also when the backslash ends one read and the value starts the next.
    let cut = line.find("\\twelve").unwrap() + 1;
    let out = text(streamed(
        &r,
        &[&line.as_bytes()[..cut], &line.as_bytes()[cut..]],
    ));
    assert!(
        serde_json::from_str::<serde_json::Value>(&out).is_ok(),
        "{out}"
    );
}

#[test]
fn a_key_after_an_escaped_line_break_in_json_is_a_word_start() {
    let r = Redactor::default();
    let line = format!(r#"{{"text":"Your key:\n{KEY}\tdone"}}"#);
    assert_eq!(r.redact(&line), r#"{"text":"Your key:\n[REDACTED]\tdone"}"#);
}

/// A secret printed across two lines: each piece is replaced, the line break kept.
#[test]
fn a_secret_split_across_two_lines_is_still_hidden() {
    let r = Redactor::from_env([("SERVICE_CREDENTIAL", "abcdefgh12345678")]);
    for (split, expected) in [
        ("v=abcdefgh\n12345678 end", "v=[REDACTED]\n[REDACTED] end"),
        (
            "v=abcdefgh\r\n12345678 end",
            "v=[REDACTED]\r\n[REDACTED] end",
        ),
        (
            r#"v=abcdefgh\n12345678 end"#,
            r#"v=[REDACTED]\n[REDACTED] end"#,
        ),
        (
            r#"v=abcdefgh\r\n12345678 end"#,
            r#"v=[REDACTED]\r\n[REDACTED] end"#,
        ),
        ("v=a\nbcdefgh12345678 end", "v=[REDACTED]\n[REDACTED] end"),
    ] {
        assert_eq!(r.redact(split), expected, "{split:?}");
    }
    // Two line breaks in a row end a secret: an empty line between is no wrap.
    assert_eq!(r.redact("abcdefgh\n\n12345678"), "abcdefgh\n\n12345678");
    // A key wrapped before its body is long enough on either line, or after.
    for wrapped in [
        "key: sk-ant-api03-AbCd\nEfGhIjKlMnOpQrStUvWx end",
        "key: sk-ant-api03-AbCdEfGhIjKlMnOp\nQrStUvWxYz012345 end",
        "key: sk-ant-api03-AbCdEfGhIjKlMnOp\\nqrstuvwxyz012345 end",
    ] {
        let out = Redactor::default().redact(wrapped);
        assert!(out.starts_with("key: [REDACTED]"), "{out}");
        assert!(out.ends_with("[REDACTED] end"), "{out}");
    }
    // A word that starts the line after a key is no part of it.
    assert_eq!(
        Redactor::default().redact(&format!("key {KEY}\nTRICK: use it\nnext")),
        "key [REDACTED]\nTRICK: use it\nnext"
    );
}

#[test]
fn every_cut_of_the_stream_gives_what_the_whole_gives() {
    let r = Redactor::from_env([
        ("MY_API_TOKEN", "tok-value-9876"),
        ("DB_PASS", "p@ss word!"),
    ]);
    let output = format!(
        "a {KEY} b tok-value-\n9876 c p@ss word! d\n-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0\n-----END PRIVATE KEY-----\n\
         https://u:pw@h e aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY f\n"
    );
    let bytes = output.as_bytes();
    let whole = streamed(&r, &[bytes]);
    for cut in 0..=bytes.len() {
        assert_eq!(
            String::from_utf8_lossy(&streamed(&r, &[&bytes[..cut], &bytes[cut..]])),
            String::from_utf8_lossy(&whole),
            "cut at {cut}"
        );
    }
    let one_by_one: Vec<&[u8]> = bytes.chunks(1).collect();
    assert_eq!(streamed(&r, &one_by_one), whole);
    let whole = text(whole);
    for piece in ["AbCdEf", "9876", "ss word", "MIIEv", "pw@", "EXAMPLEKEY"] {
        assert!(!whole.contains(piece), "{piece} survived: {whole}");
    }
}

/// Regression: a secret value inside a long run of key characters, cut by the end of a 64 KiB
/// read, was not held back (only values wholly before the cut were), so it went out in two
/// halves and neither was redacted.
#[test]
fn a_value_across_any_64_kib_boundary_is_still_redacted() {
    let secret = "envsecretvalue12345";
    let r = Redactor::from_env([("MY_TOKEN", secret)]);
    for boundary in [1usize, 2, 4, 16] {
        let boundary = boundary * 65_536;
        for offset in boundary - secret.len()..=boundary {
            let mut line = vec![b'x'; offset];
            line.extend_from_slice(secret.as_bytes());
            line.extend_from_slice(b"xx tail\n");
            let pieces: Vec<&[u8]> = line.chunks(65_536).collect();
            let out = text(streamed(&r, &pieces));
            assert!(
                out.ends_with("x[REDACTED]xx tail\n"),
                "offset {offset}: {}",
                &out[out.len().saturating_sub(60)..]
            );
        }
    }
}

/// A key far longer than any real one is still one secret, and the stream holds back only a
/// few bytes of it: it goes out redacted as it comes.
#[test]
fn a_key_of_any_length_goes_out_at_once_and_memory_stays_bounded() {
    let r = redactor();
    let mut out = Vec::new();
    let mut stream = RedactingStream::new(&r);
    stream.push(b"start sk-ant-", |clean| out.extend_from_slice(clean));
    let body = b"AbCdEfGhIj".repeat(6_554);
    for _ in 0..100 {
        stream.push(&body, |clean| out.extend_from_slice(clean));
        assert!(stream.held_back() < 64, "{}", stream.held_back());
    }
    stream.push(b"\nnext line hunter2", |clean| out.extend_from_slice(clean));
    assert!(stream.held_back() <= "hunter2".len());
    stream.push(b"hunter2\n", |clean| out.extend_from_slice(clean));
    stream.finish(|clean| out.extend_from_slice(clean));
    assert_eq!(text(out), "start [REDACTED]\nnext line [REDACTED]\n");
}

#[test]
fn a_stream_holds_back_no_more_than_it_must() {
    let r = Redactor::default();
    let mut out = Vec::new();
    let mut stream = RedactingStream::new(&r);
    stream.push(b"one\ntwo thr", |clean| out.extend_from_slice(clean));
    assert_eq!(out, b"one\ntwo thr", "nothing here may start a secret");
    stream.push(b"ee sk-ant-partial", |clean| out.extend_from_slice(clean));
    assert_eq!(
        out, b"one\ntwo three ",
        "the key that may go on is held back"
    );
    stream.push(b" done", |clean| out.extend_from_slice(clean));
    assert_eq!(out, b"one\ntwo three sk-ant-partial done");
}

#[test]
fn bytes_that_are_not_utf8_pass_through() {
    let r = redactor();
    let bytes = b"\xff\xfe hunter2hunter2 \x00";
    assert_eq!(r.redact_bytes(bytes).as_ref(), b"\xff\xfe [REDACTED] \x00");
}
