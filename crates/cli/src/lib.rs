//! harness-cli: the flags every role binary shares (`-C`, `--state-dir`, `--feature`, the
//! harness install…) and the one way they end (an exit code, errors printed with their chain).
//! It keeps the binaries to their own few lines.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use harness_core::base::exit_codes;
use harness_core::roles::attempt::{FeatureRequest, Place as RolePlace};
use harness_core::spec::features::FeatureId;
use harness_core::spec::layout::{HarnessHome, RunId, StateDir, UserDirs};
use harness_core::InputError;

/// What `--version` prints after a binary's name: the version and the commit it was built from.
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("HARNESS_COMMIT"), ")");

/// Where the project and its state are.
#[derive(Debug, Clone, clap::Args)]
pub struct Place {
    /// The project directory (the agent's working directory).
    #[arg(
        short = 'C',
        long = "workdir",
        env = "HARNESS_WORKDIR",
        default_value = "."
    )]
    pub workdir: PathBuf,

    /// The state directory [default: <workdir>/.harness].
    #[arg(long, env = "HARNESS_STATE_DIR")]
    pub state_dir: Option<PathBuf>,
}

impl Place {
    /// The absolute working directory, which must exist, and its state directory.
    pub fn resolve(&self) -> anyhow::Result<(PathBuf, StateDir)> {
        let workdir = std::path::absolute(&self.workdir)
            .with_context(|| format!("bad working directory {}", self.workdir.display()))?;
        if !workdir.is_dir() {
            return Err(InputError::in_file(&workdir, "no such directory").into());
        }
        let state = match &self.state_dir {
            Some(dir) => StateDir::new(std::path::absolute(dir)?),
            None => StateDir::in_workdir(&workdir),
        };
        Ok((workdir, state))
    }
}

/// The harness install and the identity files.
#[derive(Debug, Clone, clap::Args)]
pub struct Install {
    /// The harness install holding roles/ and identity/ [default: found from this binary].
    #[arg(long, env = "HARNESS_HOME")]
    pub harness_home: Option<PathBuf>,

    /// Where the identity files (L4) are [default: <harness home>/identity in a checkout, else
    /// $XDG_DATA_HOME/harness/identity].
    #[arg(long, env = "HARNESS_IDENTITY_DIR")]
    pub identity_dir: Option<PathBuf>,
}

impl Install {
    /// The install, found from the flags, the environment or this binary's location; writes
    /// nothing (what `status` and `help` use to say where the identity is).
    pub fn locate(&self) -> anyhow::Result<HarnessHome> {
        let root = match &self.harness_home {
            Some(home) => home.clone(),
            None => std::env::current_exe()
                .ok()
                .and_then(|exe| HarnessHome::discover_from(&exe))
                .context("cannot find the harness install (roles/); set HARNESS_HOME")?,
        };
        Ok(HarnessHome::locate(
            root,
            self.identity_dir.clone(),
            &UserDirs::from_env(),
        )?)
    }

    /// [`Install::locate`] for a role about to run: an install's identity directory is seeded
    /// from the shipped files on its first use.
    pub fn resolve(&self) -> anyhow::Result<HarnessHome> {
        let home = self.locate()?;
        harness_core::state::identity::seed(&home).map_err(|error| {
            InputError::in_file(
                home.identity_dir(),
                format!(
                    "cannot create the identity directory from {}: {error}",
                    home.shipped_identity().display()
                ),
            )
            .with_hint("make it writable, or set HARNESS_IDENTITY_DIR to a directory you can write")
        })?;
        Ok(home)
    }
}

/// The flags of a role invocation on one feature.
#[derive(Debug, Clone, clap::Args)]
pub struct FeatureArgs {
    /// The feature (an id from features.yaml).
    #[arg(long, env = "HARNESS_FEATURE_ID")]
    pub feature: Option<String>,

    #[command(flatten)]
    pub place: Place,

    /// The run id of this invocation [default: <unix-time>-<role>-<FEATURE>].
    #[arg(long, env = "HARNESS_RUN_ID")]
    pub run_id: Option<String>,

    #[command(flatten)]
    pub install: Install,

    /// Do not copy the agent's output to stdout (it still goes to output.log).
    #[arg(long, short)]
    pub quiet: bool,
}

impl FeatureArgs {
    /// The request these flags make.
    pub fn request(&self) -> anyhow::Result<FeatureRequest> {
        let Some(feature) = &self.feature else {
            return Err(InputError::new(
                "which feature? give --feature <ID> (or HARNESS_FEATURE_ID)",
            )
            .into());
        };
        let feature = FeatureId::parse(feature)?;
        Ok(FeatureRequest {
            place: role_place(&self.place, &self.install, self.quiet)?,
            feature,
            run_id: self.run_id.as_deref().map(RunId::parse).transpose()?,
            caller_holds_feature_lock: caller_holds_feature_lock(),
        })
    }
}

/// Where a role runs, from its flags: the project and its state, the install, the terminal.
pub fn role_place(place: &Place, install: &Install, quiet: bool) -> anyhow::Result<RolePlace> {
    let (workdir, state) = place.resolve()?;
    Ok(RolePlace {
        workdir,
        state,
        home: install.resolve()?,
        echo: !quiet,
        path_var: std::env::var_os("PATH"),
    })
}

/// run.sh takes the feature lock for its whole loop and says so in HARNESS_FEATURE_LOCK_PID;
/// that is trusted only from our parent.
pub fn caller_holds_feature_lock() -> bool {
    std::env::var("HARNESS_FEATURE_LOCK_PID")
        .ok()
        .and_then(|pid| pid.parse::<u32>().ok())
        == Some(std::os::unix::process::parent_id())
}

/// The body of a role binary's `main`: signals set up first (a full disk or a file-size limit
/// then fails a write instead of killing the process), then `run`; an error is printed as
/// `<name>: error: …` with its chain and mapped to its exit code.
pub fn main(name: &str, run: impl FnOnce() -> anyhow::Result<u8>) -> ExitCode {
    harness_core::base::signals::fail_writes_past_the_size_limit();
    if let Err(error) = harness_core::base::signals::install() {
        eprintln!("{name}: cannot set up signal handling: {error}");
        return ExitCode::from(exit_codes::USAGE);
    }
    let result = run();
    // What an agent moved out of its cgroup does not outlive the process that started it.
    harness_core::agent::contain::end_strays();
    match result {
        Ok(code) => ExitCode::from(code),
        Err(error) => {
            eprintln!("{name}: error: {error:#}");
            ExitCode::from(exit_codes::for_error(&error))
        }
    }
}
