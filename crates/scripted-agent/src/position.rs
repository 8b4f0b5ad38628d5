//! How far a script has been played, kept in a file because every step is a new process.

use std::fs;
use std::io::{self, ErrorKind};
use std::path::{Path, PathBuf};

/// The file counting the steps played of script `script` for this role and feature.
pub fn file(state_dir: &Path, script: usize, role: &str, feature: &str) -> PathBuf {
    state_dir.join(format!(
        "{script}-{}-{}.pos",
        sanitize(role),
        sanitize(feature)
    ))
}

/// Makes a name safe as part of a file name; distinct features could collide only if they differ
/// in characters no feature id should contain.
fn sanitize(name: &str) -> String {
    if name.is_empty() {
        return "_".into();
    }
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The number of steps already played; 0 if the file does not exist yet.
pub fn read(path: &Path) -> io::Result<u64> {
    match fs::read_to_string(path) {
        Ok(text) => text.trim().parse().map_err(|_| {
            io::Error::new(
                ErrorKind::InvalidData,
                format!("{}: not a step count: {:?}", path.display(), text.trim()),
            )
        }),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(0),
        Err(e) => Err(e),
    }
}

/// Records `played`; the rename means a reader, or a process killed mid-write, never leaves or
/// sees a half-written number.
pub fn write(path: &Path, played: u64) -> io::Result<()> {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    fs::write(&tmp, format!("{played}\n"))?;
    fs::rename(&tmp, path).inspect_err(|_| {
        let _ = fs::remove_file(&tmp);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_are_sanitized_per_script_role_and_feature() {
        let dir = Path::new("/s");
        assert_eq!(
            file(dir, 0, "worker", "F-001"),
            Path::new("/s/0-worker-F-001.pos")
        );
        assert_eq!(file(dir, 2, "", ""), Path::new("/s/2-_-_.pos"));
        assert_eq!(
            file(dir, 1, "a/b", "../x y"),
            Path::new("/s/1-a_b-.._x_y.pos")
        );
    }

    #[test]
    fn read_and_write_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let pos = dir.path().join("0-w-f.pos");
        assert_eq!(read(&pos).unwrap(), 0);
        write(&pos, 1).unwrap();
        assert_eq!(read(&pos).unwrap(), 1);
        write(&pos, 42).unwrap();
        assert_eq!(read(&pos).unwrap(), 42);
        // No temporary file is left behind.
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn garbage_is_an_error_not_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let pos = dir.path().join("p.pos");
        fs::write(&pos, "three").unwrap();
        assert_eq!(read(&pos).unwrap_err().kind(), ErrorKind::InvalidData);
    }
}
