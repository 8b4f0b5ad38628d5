//! Errors that callers branch on. Everything else travels as `anyhow::Error` with context.

use std::fmt;
use std::path::{Path, PathBuf};

/// Something the user must fix in an input: names the file, the line where known, what is wrong,
/// and optionally a hint. Maps to exit code 1, and is always raised before any state changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    /// The file at fault, if the error is about a file.
    pub path: Option<PathBuf>,
    /// 1-based line in `path`, where known.
    pub line: Option<usize>,
    /// What is wrong, in one line.
    pub message: String,
    /// How to fix it, when that helps.
    pub hint: Option<String>,
}

impl InputError {
    /// An error that is not about one file (a bad flag, an unknown feature id).
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            path: None,
            line: None,
            message: message.into(),
            hint: None,
        }
    }

    /// An error about `path`.
    pub fn in_file(path: &Path, message: impl Into<String>) -> Self {
        Self {
            path: Some(path.to_path_buf()),
            ..Self::new(message)
        }
    }

    /// Sets the 1-based line.
    pub fn at_line(mut self, line: Option<usize>) -> Self {
        self.line = line;
        self
    }

    /// Adds a `hint:` line.
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.path, self.line) {
            (Some(path), Some(line)) => write!(f, "{}:{}: ", path.display(), line)?,
            (Some(path), None) => write!(f, "{}: ", path.display())?,
            _ => {}
        }
        f.write_str(&self.message)?;
        if let Some(hint) = &self.hint {
            write!(f, "\nhint: {hint}")?;
        }
        Ok(())
    }
}

impl std::error::Error for InputError {}

/// Another process holds a lock that must not be waited for (a feature being run). Exit code 75.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockHeld {
    /// What is locked, for the message ("F-001").
    pub what: String,
    /// The lock file.
    pub path: PathBuf,
    /// Who holds it, as the holder wrote it into the lock file (may be empty).
    pub holder: String,
}

impl fmt::Display for LockHeld {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let holder = if self.holder.trim().is_empty() {
            "another process".to_string()
        } else {
            self.holder.trim().to_string()
        };
        write!(
            f,
            "{} is already being run by {} (lock {})",
            self.what,
            holder,
            self.path.display()
        )
    }
}

impl std::error::Error for LockHeld {}
