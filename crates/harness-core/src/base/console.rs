//! Lines for the terminal. Rust's stderr is unbuffered, so `eprintln!` writes each piece of its
//! format separately: the lines of parallel features' processes interleave mid-line, and a line
//! costs a system call per piece. A line here is written whole, at once.

use std::io::Write;

/// Writes `text` and a line break to stderr in one write.
pub fn say(text: &str) {
    let mut line = String::with_capacity(text.len() + 1);
    line.push_str(text);
    line.push('\n');
    // A closed stderr is no reason to stop the work.
    let _ = std::io::stderr().write_all(line.as_bytes());
}
