//! What a role reads before its agent runs: the user's files, checked before anything changes
//! (config.yaml, features.yaml, the feature, the role's agent command), the role's prompt
//! (`roles/<role>.md`), and the memory layers that go into its prompt (identity, notes, summary).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::agent::{self, sandbox::Places, Enclosure};
use crate::base::error::InputError;
use crate::spec::config::{self, Config};
use crate::spec::features::{Feature, FeatureId, FeatureList};
use crate::spec::layout::{HarnessHome, StateDir};
use crate::spec::role::Role;
use crate::state::memory;
use crate::state::notes;
use crate::state::run_state;

/// What a role's invocation on a feature needs from the user's files, checked.
#[derive(Debug, Clone)]
pub struct Inputs {
    pub config: Config,
    pub feature: Feature,
    pub launcher: Launcher,
}

/// How a role's agent is started: its program and the enclosure it runs in.
#[derive(Debug, Clone)]
pub struct Launcher {
    /// The agent's program, found in `PATH` or the working directory.
    pub program: PathBuf,
    /// Its sandbox (as the role's `sandbox:` says, made sure it can be made here) and
    /// containment.
    pub enclosure: Enclosure,
}

/// config.yaml and features.yaml as last parsed, for a worker that runs many iterations in one
/// process. Each file is still read every time, and parsed again whenever its bytes changed: the
/// memo saves only the parse (~8 ms for 1,000 features), never a re-read.
#[derive(Debug, Default)]
pub struct InputMemo {
    config: Option<(String, Config)>,
    features: Option<(String, FeatureList)>,
}

/// `slot`'s value if it was parsed from the bytes `path` holds now; else `path` parsed anew.
fn parsed<'m, T>(
    slot: &'m mut Option<(String, T)>,
    path: &Path,
    parse: fn(&str, &Path) -> Result<T, InputError>,
) -> Result<&'m T, InputError> {
    let text = config::read_input(path)?;
    let stale = slot.as_ref().is_none_or(|(parsed, _)| *parsed != text);
    if stale {
        let value = parse(&text, path)?;
        *slot = Some((text, value));
    }
    Ok(&slot.as_ref().expect("just filled").1)
}

/// Reads and checks config.yaml, features.yaml, the feature and `role`'s agent command, parsing
/// only the files whose bytes differ from those `memo` parsed last: every input error surfaces
/// here, before any state is written.
pub fn check_inputs(
    memo: &mut InputMemo,
    workdir: &Path,
    state_dir: &StateDir,
    feature: &FeatureId,
    role: Role,
    path_var: Option<&OsStr>,
) -> Result<Inputs, InputError> {
    let (config, feature) = check_spec(memo, state_dir, feature)?;
    let launcher = launcher(&config, role, workdir, state_dir, path_var)?;
    Ok(Inputs {
        config,
        feature,
        launcher,
    })
}

/// [`check_inputs`] but for the agent command: what reads a prompt without running an agent
/// (`explain`) needs no agent installed.
pub fn check_spec(
    memo: &mut InputMemo,
    state_dir: &StateDir,
    feature: &FeatureId,
) -> Result<(Config, Feature), InputError> {
    state_dir.require_initialised_for(feature)?;
    let config = parsed(&mut memo.config, &state_dir.config(), Config::parse)?.clone();
    let features = parsed(
        &mut memo.features,
        &state_dir.features(),
        FeatureList::parse,
    )?;
    let feature = features.require(feature, &state_dir.features())?.clone();
    Ok((config, feature))
}

/// config.yaml and how `role`'s agent is started, for a role that works on the whole mission
/// (the planner's `plan`, the curator's agent).
pub fn check_mission_inputs(
    workdir: &Path,
    state_dir: &StateDir,
    role: Role,
    path_var: Option<&OsStr>,
) -> Result<(Config, Launcher), InputError> {
    state_dir.require_initialised()?;
    let config = Config::load(&state_dir.config())?;
    let launcher = launcher(&config, role, workdir, state_dir, path_var)?;
    Ok((config, launcher))
}

/// `role`'s agent program and enclosure: an input error naming config.yaml when the program is
/// missing or the sandbox cannot be made.
fn launcher(
    config: &Config,
    role: Role,
    workdir: &Path,
    state_dir: &StateDir,
    path_var: Option<&OsStr>,
) -> Result<Launcher, InputError> {
    let program = agent::resolve_program(
        &config.agent_for(role).command[0],
        workdir,
        path_var,
        &state_dir.config(),
    )?;
    let enclosure = enclosure(config, role, workdir, state_dir, path_var)?;
    Ok(Launcher { program, enclosure })
}

/// The enclosure `role`'s agent runs in, as its `sandbox:` says: an input error naming
/// config.yaml when the sandbox cannot be made here.
pub fn enclosure(
    config: &Config,
    role: Role,
    workdir: &Path,
    state_dir: &StateDir,
    path_var: Option<&OsStr>,
) -> Result<Enclosure, InputError> {
    let places = Places {
        workdir,
        state_dir: state_dir.root(),
        config: &state_dir.config(),
        path_var,
    };
    Enclosure::new(
        config.sandbox_for(role),
        config.agent_for(role).preset,
        places,
    )
}

/// The role's prompt file, which must exist.
pub fn read_role_prompt(home: &HarnessHome, role: Role) -> anyhow::Result<String> {
    let path = home.role_prompt(role);
    Ok(memory::read_layer(&path)
        .with_context(|| format!("cannot read {}", path.display()))?
        .ok_or_else(|| {
            InputError::in_file(
                &path,
                format!("the {role}'s role prompt is missing or empty"),
            )
            .with_hint("set HARNESS_HOME to the harness install (the directory with run.sh)")
        })?)
}

/// The memory and notes that go into a role's prompt.
#[derive(Debug, Clone, Default)]
pub struct Layers {
    /// `identity/<role>.md`, when it has content.
    pub identity: Option<String>,
    /// The feature's notes (none for a role on the whole mission).
    pub notes: Option<String>,
    /// summary.md, when it has content.
    pub summary: Option<String>,
}

/// Reads `role`'s identity, the notes of `feature` (if the role works on one) and summary.md
/// (no lock needed: each is written atomically).
pub fn read_layers(
    home: &HarnessHome,
    state: &StateDir,
    feature: Option<&FeatureId>,
    role: Role,
) -> anyhow::Result<Layers> {
    Ok(Layers {
        identity: memory::read_identity_layer(&home.identity(role))
            .with_context(|| format!("cannot read the {role}'s identity file"))?,
        notes: match feature {
            Some(feature) => notes_with_parent(state, feature)?,
            None => None,
        },
        summary: memory::read_memory_layer(&state.summary()).context("cannot read summary.md")?,
    })
}

/// What a prompt carries of the feature's notes, preceded by those of the failed feature it
/// re-breaks (`F-007` for `F-007.1`, when F-007 is superseded by it): they are why it exists.
/// Together within `notes::PROMPT_CHARS`, the feature's own first.
fn notes_with_parent(state: &StateDir, feature: &FeatureId) -> anyhow::Result<Option<String>> {
    let own = notes::read_for_prompt(state, feature, notes::PROMPT_CHARS)
        .context("cannot read the notes")?;
    let parent = feature
        .as_str()
        .rsplit_once('.')
        .and_then(|(parent, _)| FeatureId::parse(parent).ok())
        .filter(|parent| {
            run_state::superseded_by(&state.run_state(parent), parent).contains(feature)
        });
    let room = notes::PROMPT_CHARS
        - own
            .as_ref()
            .map_or(0, |own| own.chars().count().min(notes::PROMPT_CHARS));
    let inherited = match &parent {
        Some(parent) if room > 0 => notes::read_for_prompt(state, parent, room)
            .context("cannot read the notes")?
            .map(|notes| format!("### From {parent}, which this feature re-breaks\n\n{notes}")),
        _ => None,
    };
    Ok(match (inherited, own) {
        (Some(inherited), Some(own)) => Some(format!("{inherited}\n\n### This feature\n\n{own}")),
        (inherited, own) => inherited.or(own),
    })
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    static PARSES: AtomicUsize = AtomicUsize::new(0);

    fn counted(text: &str, _: &Path) -> Result<String, InputError> {
        PARSES.fetch_add(1, Ordering::SeqCst);
        Ok(text.to_uppercase())
    }

    #[test]
    fn a_file_is_parsed_again_only_when_its_bytes_changed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.yaml");
        let mut slot = None;
        std::fs::write(&path, "a").unwrap();
        assert_eq!(parsed(&mut slot, &path, counted).unwrap(), "A");
        assert_eq!(parsed(&mut slot, &path, counted).unwrap(), "A");
        assert_eq!(PARSES.load(Ordering::SeqCst), 1);
        std::fs::write(&path, "b").unwrap();
        assert_eq!(parsed(&mut slot, &path, counted).unwrap(), "B");
        assert_eq!(PARSES.load(Ordering::SeqCst), 2);
        // A file that became unreadable is an error, whatever was parsed before.
        std::fs::remove_file(&path).unwrap();
        assert!(parsed(&mut slot, &path, counted).is_err());
    }
}
