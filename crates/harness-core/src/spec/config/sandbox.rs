//! `sandbox:` (top level, and per role under `roles:`): what an agent may touch. `none` runs it as
//! the user, as any program; `bwrap` runs it under bubblewrap, the file system read-only but for
//! its working directory, a private `/tmp` and the paths in `writable` (see `agent::sandbox`).

use serde::{Deserialize, Serialize};

/// The sandbox a role's agent runs in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "serde_yaml::Value", into = "SandboxSpec")]
pub struct SandboxConfig {
    /// What makes the sandbox.
    pub kind: SandboxKind,
    /// Whether the agent may reach the network (its API needs it; a local agent may do without).
    pub network: bool,
    /// Paths the agent may write besides its working directory and `/tmp` (absolute, or `~/…`),
    /// added to its preset's own (the CLI's state, see `Preset::sandbox_writable`).
    pub writable: Vec<String>,
}

/// What makes the sandbox. Another kind (a container runtime: podman or docker with the
/// working directory mounted) is one more variant here and one more arm where the command line
/// is made (`agent::sandbox`); the roles only pass the config through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SandboxKind {
    /// No sandbox: the agent runs as the user, as any program.
    #[default]
    None,
    /// bubblewrap (`bwrap`): mount, PID (and, without network, network) namespaces.
    Bwrap,
}

/// `sandbox:` as written: a kind alone, or the whole mapping.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SandboxSpec {
    Kind(SandboxKind),
    Full {
        kind: SandboxKind,
        network: bool,
        writable: Vec<String>,
    },
}

/// The keys of the mapping form.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Mapping {
    kind: SandboxKind,
    #[serde(default = "network_default")]
    network: bool,
    #[serde(default)]
    writable: Vec<String>,
}

fn network_default() -> bool {
    true
}

impl TryFrom<serde_yaml::Value> for SandboxConfig {
    type Error = String;

    fn try_from(value: serde_yaml::Value) -> Result<Self, String> {
        let config = match value {
            serde_yaml::Value::String(_) => {
                let kind: SandboxKind = serde_yaml::from_value(value).map_err(|_| {
                    "sandbox must be `none`, `bwrap`, or {kind: bwrap, network: …, writable: […]}"
                        .to_string()
                })?;
                SandboxConfig {
                    kind,
                    network: true,
                    writable: Vec::new(),
                }
            }
            value => {
                let Mapping {
                    kind,
                    network,
                    writable,
                } = serde_yaml::from_value(value).map_err(|error| format!("sandbox: {error}"))?;
                SandboxConfig {
                    kind,
                    network,
                    writable,
                }
            }
        };
        Ok(config)
    }
}

impl From<SandboxConfig> for SandboxSpec {
    fn from(config: SandboxConfig) -> Self {
        SandboxSpec::Full {
            kind: config.kind,
            network: config.network,
            writable: config.writable,
        }
    }
}

impl Default for SandboxConfig {
    fn default() -> Self {
        Self::of(SandboxKind::None)
    }
}

impl SandboxConfig {
    /// A sandbox of `kind` with the defaults (network on, nothing more writable).
    pub fn of(kind: SandboxKind) -> Self {
        Self {
            kind,
            network: true,
            writable: Vec::new(),
        }
    }

    /// Refuses what would be silently ignored: network or paths without a sandbox, and paths
    /// that are neither absolute nor under `~/`.
    pub(super) fn check(&self) -> Result<(), String> {
        if self.kind == SandboxKind::None && (!self.network || !self.writable.is_empty()) {
            return Err(
                "sandbox: network and writable need a sandbox (kind: bwrap); without one the agent can reach and write everything".into(),
            );
        }
        if let Some(path) = self
            .writable
            .iter()
            .find(|path| !(path.starts_with('/') || path.starts_with("~/") || *path == "~"))
        {
            return Err(format!(
                "sandbox: writable path {path:?} must be absolute or start with ~/"
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<SandboxConfig, String> {
        let config: SandboxConfig = serde_yaml::from_str(text).map_err(|e| e.to_string())?;
        config.check()?;
        Ok(config)
    }

    #[test]
    fn a_kind_alone_or_a_mapping() {
        assert_eq!(parse("none").unwrap(), SandboxConfig::default());
        assert_eq!(
            parse("bwrap").unwrap(),
            SandboxConfig::of(SandboxKind::Bwrap)
        );
        let full = parse("{kind: bwrap, network: false, writable: [~/.cache/x, /srv/y]}").unwrap();
        assert_eq!(full.kind, SandboxKind::Bwrap);
        assert!(!full.network);
        assert_eq!(full.writable, ["~/.cache/x", "/srv/y"]);
        assert!(parse("{kind: bwrap}").unwrap().network);
    }

    #[test]
    fn what_would_be_ignored_is_refused() {
        for bad in [
            "docker",
            "{kind: none, network: false}",
            "{kind: none, writable: [/x]}",
            "{kind: bwrap, writable: [relative/path]}",
            "{kind: bwrap, netwrok: false}",
            "{network: false}",
        ] {
            assert!(parse(bad).is_err(), "{bad} accepted");
        }
        assert!(parse("{kind: bwrap, netwrok: false}")
            .unwrap_err()
            .contains("netwrok"));
    }
}
