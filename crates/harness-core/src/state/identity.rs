//! The identity directory (L4) of an installed harness: made from the identity files the harness
//! ships the first time a role needs it, and from then on the user's own — never overwritten.

use std::fs::{self, File};
use std::io;
use std::path::Path;

use crate::spec::layout::{HarnessHome, IdentitySource};

/// Makes the user's identity directory from the shipped files if it does not exist yet (an
/// install's first use); returns whether it did. Only the data directory of an install is seeded:
/// a checkout's identity is the shipped files themselves, and a directory named by
/// `HARNESS_IDENTITY_DIR` is the user's to fill.
pub fn seed(home: &HarnessHome) -> io::Result<bool> {
    if home.identity_location().source != IdentitySource::DataDir || home.identity_dir().exists() {
        return Ok(false);
    }
    seed_dir(&home.shipped_identity(), home.identity_dir())
}

/// Copies the files of `shipped` into a new directory beside `target`, then renames it to
/// `target`: whoever sees `target` sees it whole, and of two first uses at once one wins and the
/// other leaves the winner's directory alone (a rename never replaces a non-empty directory).
fn seed_dir(shipped: &Path, target: &Path) -> io::Result<bool> {
    let (Some(parent), Some(name)) = (target.parent(), target.file_name()) else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the identity directory has no parent",
        ));
    };
    fs::create_dir_all(parent)?;
    let temp = parent.join(format!(
        ".{}.seed.{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    // Left by a killed seeding of a process that had our pid: never anyone's identity.
    let _ = fs::remove_dir_all(&temp);
    fs::create_dir(&temp)?;
    let result = (|| {
        copy_files(shipped, &temp)?;
        File::open(&temp)?.sync_all()?;
        match fs::rename(&temp, target) {
            Ok(()) => File::open(parent)?.sync_all().map(|()| true),
            Err(_) if target.exists() => Ok(false),
            Err(error) => Err(error),
        }
    })();
    let _ = fs::remove_dir_all(&temp);
    result
}

/// Copies the regular, non-hidden files of `from` (none if it does not exist) into `to`, synced.
fn copy_files(from: &Path, to: &Path) -> io::Result<()> {
    let entries = match fs::read_dir(from) {
        Ok(entries) => entries,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(error) => return Err(error),
    };
    for entry in entries {
        let entry = entry?;
        let hidden = entry.file_name().to_string_lossy().starts_with('.');
        if hidden || !entry.file_type()?.is_file() {
            continue;
        }
        let copy = to.join(entry.file_name());
        fs::copy(entry.path(), &copy)?;
        File::open(&copy)?.sync_all()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::spec::layout::UserDirs;
    use crate::spec::role::Role;

    /// An install at `<tmp>/lib/harness` shipping worker.md (and a lock file it must not copy),
    /// for a user whose data directory is `<tmp>/data`.
    fn install(tmp: &Path, identity_override: Option<PathBuf>) -> HarnessHome {
        let root = tmp.join("lib/harness");
        fs::create_dir_all(root.join("identity")).unwrap();
        fs::write(root.join("identity/worker.md"), "# shipped\n").unwrap();
        fs::write(root.join("identity/.curator.lock"), "").unwrap();
        let user = UserDirs {
            data_home: Some(tmp.join("data")),
            home: None,
        };
        HarnessHome::locate(root, identity_override, &user).unwrap()
    }

    #[test]
    fn the_data_directory_is_seeded_once_and_never_overwritten() {
        let tmp = tempfile::tempdir().unwrap();
        let home = install(tmp.path(), None);
        assert_eq!(
            home.identity_dir(),
            tmp.path().join("data/harness/identity")
        );
        assert!(seed(&home).unwrap());
        let mine = home.identity(Role::Worker);
        assert_eq!(fs::read_to_string(&mine).unwrap(), "# shipped\n");
        let names: Vec<_> = fs::read_dir(tmp.path().join("data/harness"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["identity"], "no temporary directory is left");
        assert!(!home.identity_dir().join(".curator.lock").exists());

        // The user's edits, and a file the user deleted, stay as the user left them.
        fs::write(&mine, "# mine\n").unwrap();
        fs::write(home.shipped_identity().join("planner.md"), "# new\n").unwrap();
        assert!(!seed(&home).unwrap());
        assert_eq!(fs::read_to_string(&mine).unwrap(), "# mine\n");
        assert!(!home.identity(Role::Planner).exists());
    }

    #[test]
    fn a_lost_race_keeps_the_winners_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let home = install(tmp.path(), None);
        fs::create_dir_all(home.identity_dir()).unwrap();
        fs::write(home.identity(Role::Worker), "# the winner's\n").unwrap();
        assert!(!seed_dir(&home.shipped_identity(), home.identity_dir()).unwrap());
        assert_eq!(
            fs::read_to_string(home.identity(Role::Worker)).unwrap(),
            "# the winner's\n"
        );
        assert_eq!(
            fs::read_dir(tmp.path().join("data/harness"))
                .unwrap()
                .count(),
            1
        );
    }

    #[test]
    fn an_override_or_a_checkout_is_never_seeded() {
        let tmp = tempfile::tempdir().unwrap();
        let home = install(tmp.path(), Some(tmp.path().join("mine")));
        assert!(!seed(&home).unwrap());
        assert!(!tmp.path().join("mine").exists());

        fs::write(home.root().join("Cargo.toml"), "").unwrap();
        let checkout = HarnessHome::locate(home.root(), None, &UserDirs::default()).unwrap();
        assert!(!seed(&checkout).unwrap());
        assert!(!tmp.path().join("data").exists());
    }
}
