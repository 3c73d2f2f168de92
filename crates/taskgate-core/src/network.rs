//! Whether task code gets the network: the operator
//! decides, the repository only asks.
//!
//! Owns: the operator's policy (`TASKGATE_RUNNER_NETWORK`: `never`, the
//! default, or a comma-separated allow-list of `owner/repo`), the decision
//! for one run from the policy and the repository's `runner_network`, and
//! the sentence each gate's check run carries about it. Must not: read the
//! environment or set the sandbox up (`runner::sandbox::net` does: its own
//! network namespace behind slirp4netns, public addresses only).

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;

use crate::ids::RepoName;

/// The operator's choice of which repositories' task code may reach the
/// network.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum RunnerNetwork {
    /// No repository: `runner_network: true` is refused (the default).
    #[default]
    Never,
    /// Only these repositories, and only when their config asks.
    Allow(BTreeSet<RepoName>),
}

impl RunnerNetwork {
    /// What one run of `repo` gets when its config says `requested`.
    pub fn decide(&self, repo: &RepoName, requested: bool) -> Network {
        match self {
            _ if !requested => Network::Offline,
            RunnerNetwork::Allow(repos) if repos.contains(repo) => Network::Allowed,
            _ => Network::Refused,
        }
    }
}

/// A `TASKGATE_RUNNER_NETWORK` that does not parse: why a name is not a
/// repository's, in [`RepoName::parse`]'s words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}: expected `never` or a comma-separated list of owner/repo")]
pub struct RunnerNetworkError(pub String);

impl FromStr for RunnerNetwork {
    type Err = RunnerNetworkError;

    fn from_str(s: &str) -> Result<Self, RunnerNetworkError> {
        let s = s.trim();
        if s.is_empty() || s == "never" {
            return Ok(RunnerNetwork::Never);
        }
        let repos = s
            .split(',')
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .map(|r| RepoName::parse(r).map_err(|e| RunnerNetworkError(e.to_string())))
            .collect::<Result<BTreeSet<_>, _>>()?;
        Ok(RunnerNetwork::Allow(repos))
    }
}

impl fmt::Display for RunnerNetwork {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunnerNetwork::Never => f.write_str("never"),
            RunnerNetwork::Allow(repos) => {
                let names: Vec<&str> = repos.iter().map(RepoName::as_str).collect();
                f.write_str(&names.join(","))
            }
        }
    }
}

/// The network of one run's task code.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Network {
    /// None: a private loopback only (nobody asked).
    #[default]
    Offline,
    /// The repository asked (`runner_network: true`) and the operator does
    /// not allow it: offline, and every gate says so.
    Refused,
    /// Egress to public addresses only, and every gate says so.
    Allowed,
}

impl Network {
    /// Where whoever runs the commands decides by running them (`taskgate
    /// run` on one's machine or in Actions): the request stands.
    pub fn granted_if(requested: bool) -> Network {
        if requested {
            Network::Allowed
        } else {
            Network::Offline
        }
    }

    /// `true` when the repository's request was granted.
    pub fn allowed(self) -> bool {
        self == Network::Allowed
    }

    /// What each gate's check run says about the network; nothing offline
    /// when nobody asked.
    pub fn render_warning(self) -> Option<&'static str> {
        match self {
            Network::Offline => None,
            Network::Refused => Some(NETWORK_REFUSED),
            Network::Allowed => Some(NETWORK_ALLOWED),
        }
    }
}

const NETWORK_ALLOWED: &str = "the sandbox allowed network access to public addresses only \
     (`runner_network: true` in .github/taskgate.yml); the host's loopback, link-local and \
     private addresses stayed unreachable";
const NETWORK_REFUSED: &str = "ran offline: .github/taskgate.yml asks for the network \
     (`runner_network: true`), but this taskgate's operator does not allow it for this \
     repository (TASKGATE_RUNNER_NETWORK)";

#[cfg(test)]
mod tests {
    use super::*;

    fn repo(name: &str) -> RepoName {
        RepoName::parse(name).unwrap()
    }

    #[test]
    fn the_operator_decides_and_the_repository_only_asks() {
        let never: RunnerNetwork = "never".parse().unwrap();
        let some: RunnerNetwork = "Octo/Web, octo/api".parse().unwrap();
        assert_eq!(never, RunnerNetwork::default());
        assert_eq!(some.to_string(), "octo/api,octo/web");
        let (web, other) = (repo("octo/web"), repo("octo/other"));
        assert_eq!(never.decide(&web, false), Network::Offline);
        assert_eq!(never.decide(&web, true), Network::Refused);
        assert_eq!(some.decide(&web, true), Network::Allowed);
        assert_eq!(some.decide(&web, false), Network::Offline);
        assert_eq!(some.decide(&other, true), Network::Refused);
        let bad = "octo".parse::<RunnerNetwork>().unwrap_err();
        insta::assert_snapshot!(bad, @"`octo` is not of the form owner/name: expected `never` or a comma-separated list of owner/repo");
    }

    #[test]
    fn each_gate_says_what_became_of_the_request() {
        assert_eq!(Network::Offline.render_warning(), None);
        insta::assert_snapshot!(Network::Refused.render_warning().unwrap(), @"ran offline: .github/taskgate.yml asks for the network (`runner_network: true`), but this taskgate's operator does not allow it for this repository (TASKGATE_RUNNER_NETWORK)");
        insta::assert_snapshot!(Network::Allowed.render_warning().unwrap(), @"the sandbox allowed network access to public addresses only (`runner_network: true` in .github/taskgate.yml); the host's loopback, link-local and private addresses stayed unreachable");
    }
}
