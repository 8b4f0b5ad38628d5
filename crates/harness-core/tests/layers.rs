//! The layers of harness-core, checked from its sources: every `crate::…` path in a file (outside
//! its `#[cfg(test)]` items) is an edge from that file's module to the module the path names.
//! An edge may only go down or across the layers, base ← spec ← state ← agent ← roles ← mission,
//! and the edges between modules must form no cycle. The failure names the offending edges.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, lowest first: a module may import from its own layer and the ones before it.
const LAYERS: [&str; 6] = ["base", "spec", "state", "agent", "roles", "mission"];

/// One module of the crate: its path (`roles::worker`) and the text of its file.
struct Module {
    path: String,
    file: PathBuf,
    text: String,
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// `roles/curator/run.rs` → `roles::curator::run`; `agent/mod.rs` → `agent`.
fn module_path(relative: &Path) -> String {
    let mut parts: Vec<String> = relative
        .iter()
        .map(|part| part.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().expect("a file name");
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && stem != "lib" {
        parts.push(stem.to_string());
    }
    parts.join("::")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("src is readable")
        .map(|entry| entry.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

/// Every module of the crate but the root, with its text.
fn modules() -> Vec<Module> {
    let root = src();
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    files
        .into_iter()
        .map(|file| {
            let relative = file.strip_prefix(&root).expect("under src").to_path_buf();
            Module {
                path: module_path(&relative),
                text: std::fs::read_to_string(&file).expect("a readable source file"),
                file: relative,
            }
        })
        .filter(|module| !module.path.is_empty())
        .collect()
}

/// `text` without comments and string literals (their words are not paths).
fn code_only(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i..].starts_with(b"//") {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
        } else if bytes[i..].starts_with(b"/*") {
            let end = text[i + 2..]
                .find("*/")
                .map_or(bytes.len(), |at| i + 2 + at + 2);
            i = end;
        } else if bytes[i] == b'"' {
            i += 1;
            while i < bytes.len() && bytes[i] != b'"' {
                i += if bytes[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if bytes[i..].starts_with(b"r#\"") {
            let end = text[i + 3..]
                .find("\"#")
                .map_or(bytes.len(), |at| i + 3 + at + 2);
            i = end;
            out.push_str("\"\"");
        } else {
            let c = text[i..].chars().next().expect("a char");
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// `code` without its `#[cfg(test)]` items (a test module, a test helper), and the names of the
/// child modules declared test-only (`#[cfg(test)] mod testing;`).
fn without_test_items(code: &str) -> (String, Vec<String>) {
    let mut out = String::new();
    let mut test_children = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let item = &rest[at + "#[cfg(test)]".len()..];
        let end_of_declaration = item.find(';');
        let open = item.find('{');
        match (end_of_declaration, open) {
            (Some(semicolon), open) if open.is_none_or(|open| semicolon < open) => {
                let declaration = item[..semicolon].trim();
                if let Some(name) = declaration.split_whitespace().last() {
                    if declaration.contains("mod ") {
                        test_children.push(name.to_string());
                    }
                }
                rest = &item[semicolon + 1..];
            }
            (_, Some(open)) => {
                let mut depth = 0;
                let mut end = item.len();
                for (offset, c) in item[open..].char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                end = open + offset + 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                rest = &item[end..];
            }
            _ => rest = "",
        }
    }
    out.push_str(rest);
    (out, test_children)
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The paths after `crate::` at `code[at..]`, with `use` groups expanded
/// (`crate::state::{budget, usage::Prices}` gives `state::budget` and `state::usage::Prices`).
fn paths_at(code: &str, prefix: &str, out: &mut Vec<String>) -> usize {
    let mut i = 0;
    let mut path = prefix.to_string();
    let bytes = code.as_bytes();
    loop {
        let start = i;
        while i < code.len() && is_ident(bytes[i] as char) {
            i += 1;
        }
        if i > start {
            if !path.is_empty() {
                path.push_str("::");
            }
            path.push_str(&code[start..i]);
        }
        if code[i..].starts_with("::{") {
            i += 3;
            loop {
                while code[i..].starts_with(|c: char| c.is_whitespace() || c == ',') {
                    i += 1;
                }
                if code[i..].starts_with('}') {
                    i += 1;
                    break;
                }
                if i >= code.len() {
                    break;
                }
                i += paths_at(&code[i..], &path, out);
                // Past an `as name` rename or anything else up to the next item of the group.
                while i < code.len() && !code[i..].starts_with([',', '}']) {
                    if code[i..].starts_with('{') {
                        break;
                    }
                    i += 1;
                }
            }
            return i;
        }
        if code[i..].starts_with("::") && code[i + 2..].starts_with(|c: char| is_ident(c)) {
            i += 2;
            continue;
        }
        out.push(path);
        return i;
    }
}

/// The module a `crate::…` path names: the longest known module it starts with.
fn resolve<'m>(path: &str, known: &'m BTreeSet<String>) -> Option<&'m String> {
    let segments: Vec<&str> = path.split("::").collect();
    (1..=segments.len())
        .rev()
        .map(|n| segments[..n].join("::"))
        .find_map(|candidate| known.get(&candidate))
}

fn layer_of(module: &str) -> Option<usize> {
    let first = module.split("::").next()?;
    LAYERS.iter().position(|layer| *layer == first)
}

/// Every edge between two modules, each with the file it is read from.
fn edges() -> BTreeMap<(String, String), PathBuf> {
    let modules = modules();
    let mut test_only = BTreeSet::new();
    let mut codes = Vec::new();
    for module in &modules {
        let (code, children) = without_test_items(&code_only(&module.text));
        for child in children {
            test_only.insert(format!("{}::{child}", module.path));
        }
        codes.push(code);
    }
    let known: BTreeSet<String> = modules.iter().map(|m| m.path.clone()).collect();
    let mut edges = BTreeMap::new();
    for (module, code) in modules.iter().zip(&codes) {
        if test_only.contains(&module.path) {
            continue;
        }
        let mut paths = Vec::new();
        let mut rest = code.as_str();
        while let Some(at) = rest.find("crate::") {
            let preceded_by_ident = rest[..at].chars().next_back().is_some_and(is_ident);
            let after = &rest[at + "crate::".len()..];
            if preceded_by_ident {
                rest = after;
                continue;
            }
            let used = paths_at(after, "", &mut paths);
            rest = &after[used.max(1).min(after.len())..];
        }
        for path in paths {
            if let Some(target) = resolve(&path, &known) {
                if *target != module.path {
                    edges
                        .entry((module.path.clone(), target.clone()))
                        .or_insert_with(|| module.file.clone());
                }
            }
        }
    }
    edges
}

/// A cycle among `edges`, as the modules along it, if there is one.
fn find_cycle(edges: &BTreeMap<(String, String), PathBuf>) -> Option<Vec<String>> {
    let mut next: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (from, to) in edges.keys() {
        next.entry(from).or_default().push(to);
    }
    // 0 unvisited, 1 on the current path, 2 done.
    let mut state: BTreeMap<&str, u8> = BTreeMap::new();
    fn visit<'a>(
        node: &'a str,
        next: &BTreeMap<&'a str, Vec<&'a str>>,
        state: &mut BTreeMap<&'a str, u8>,
        stack: &mut Vec<&'a str>,
    ) -> Option<Vec<String>> {
        state.insert(node, 1);
        stack.push(node);
        for &to in next.get(node).into_iter().flatten() {
            match state.get(to).copied().unwrap_or(0) {
                1 => {
                    let from = stack.iter().position(|n| *n == to).expect("on the path");
                    let mut cycle: Vec<String> =
                        stack[from..].iter().map(|n| n.to_string()).collect();
                    cycle.push(to.to_string());
                    return Some(cycle);
                }
                0 => {
                    if let Some(cycle) = visit(to, next, state, stack) {
                        return Some(cycle);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(node, 2);
        None
    }
    let nodes: Vec<&str> = next.keys().copied().collect();
    for node in nodes {
        if state.get(node).copied().unwrap_or(0) == 0 {
            if let Some(cycle) = visit(node, &next, &mut state, &mut Vec::new()) {
                return Some(cycle);
            }
        }
    }
    None
}

#[test]
fn imports_only_go_down_the_layers() {
    let edges = edges();
    assert!(edges.len() > 50, "the sources were not read: {edges:?}");
    let upward: Vec<String> = edges
        .iter()
        .filter(|((from, to), _)| match (layer_of(from), layer_of(to)) {
            (Some(from), Some(to)) => to > from,
            _ => true,
        })
        .map(|((from, to), file)| format!("{from} -> {to} (in src/{})", file.display()))
        .collect();
    assert!(
        upward.is_empty(),
        "imports from a lower layer to a higher one ({}):\n{}",
        LAYERS.join(" <- "),
        upward.join("\n")
    );
}

#[test]
fn no_import_cycle_between_modules() {
    let edges = edges();
    if let Some(cycle) = find_cycle(&edges) {
        let steps: Vec<String> = cycle
            .windows(2)
            .map(|pair| {
                let file = &edges[&(pair[0].clone(), pair[1].clone())];
                format!("{} -> {} (in src/{})", pair[0], pair[1], file.display())
            })
            .collect();
        panic!("an import cycle:\n{}", steps.join("\n"));
    }
}

#[test]
fn the_reader_sees_grouped_and_inline_paths() {
    let mut paths = Vec::new();
    paths_at(
        "state::{budget::{self, Spent}, usage::Prices};",
        "",
        &mut paths,
    );
    assert_eq!(
        paths,
        [
            "state::budget::self",
            "state::budget::Spent",
            "state::usage::Prices"
        ]
    );
    let (code, children) = without_test_items(
        "use crate::a;\n#[cfg(test)]\nmod testing;\nfn f() {}\n#[cfg(test)]\nmod tests {\n use crate::b::{c};\n}\n",
    );
    assert_eq!(children, ["testing"]);
    assert!(code.contains("crate::a") && !code.contains("crate::b"));
    assert_eq!(code_only("a // crate::x\n\"crate::y\" b"), "a \n\"\" b");
}
