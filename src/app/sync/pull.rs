//! A pull request into the default branch that adds or changes a plan
//! file or `.github/taskgate.yml`: the files read at its head, and the
//! core's preview (`core::sync::decide_plan_preview`) turned into its
//! `taskgate/plan` check run. Reads only; the check run is the one effect.

use super::{is_plan_file, read_file, SyncError, Syncer};
use crate::app::Handled;
use crate::github::RepoClient;
use taskgate_core::config::CONFIG_PATH;
use taskgate_core::ids::InstallationId;
use taskgate_core::story::story_key_for_file;
use taskgate_core::sync::{decide_plan_preview, PlanPreview, StoryPlan};
use taskgate_core::webhook::action::PullRequestAction;
use taskgate_core::webhook::PullRequestEvent;

impl Syncer {
    /// Not its own when the pull request touches no plan and no config (or is
    /// not a new head aimed at the default branch).
    pub async fn on_pull_request_plans(
        &self,
        installation: InstallationId,
        pull: &PullRequestEvent,
    ) -> Result<Handled, SyncError> {
        let new_head = match &pull.action {
            PullRequestAction::Opened
            | PullRequestAction::Synchronize
            | PullRequestAction::Reopened => true,
            PullRequestAction::ReadyForReview
            | PullRequestAction::ConvertedToDraft
            | PullRequestAction::Closed
            | PullRequestAction::Labeled
            | PullRequestAction::Edited
            | PullRequestAction::Other(_) => false,
        };
        if !new_head || pull.default_branch.as_deref() != Some(pull.base.as_str()) {
            return Ok(Handled::NotMine);
        }
        let client = self.github.installation_client(installation).await?;
        let github = RepoClient::new(&client, &pull.repo);
        let head = &pull.head.sha;
        // A pull request too large to list is left to the default branch's sync.
        let Some(changed) = github.changed_paths(&pull.base, head.as_str()).await? else {
            return Ok(Handled::NotMine);
        };
        let config_changed = changed.iter().any(|(path, _)| path == CONFIG_PATH);
        let plans: Vec<&str> = changed
            .iter()
            .filter(|(path, there)| *there && is_plan_file(path))
            .map(|(path, _)| path.as_str())
            .collect();
        if plans.is_empty() && !config_changed {
            return Ok(Handled::NotMine);
        }
        let (config, files) = self.repo_files(&client, &pull.repo, head).await?;
        let mut read = Vec::new();
        for path in plans {
            let Some(text) = read_file(&client, &pull.repo, path, head).await? else {
                continue;
            };
            let story = story_key_for_file(path);
            let known = self.known(&pull.repo, &story).await?;
            let plan = StoryPlan {
                repo: pull.repo.clone(),
                story,
                installation,
                source: path.to_owned(),
                plan: text,
                config: config.clone(),
                files: files.clone(),
                sha: head.clone(),
            };
            read.push((plan, known));
        }
        let texts: Vec<&str> = read.iter().map(|(p, _)| p.plan.as_str()).collect();
        let reach = super::reach::reach_of(&client, &pull.repo, &texts).await?;
        let preview = PlanPreview {
            repo: pull.repo.clone(),
            head: head.clone(),
            number: pull.number,
            config,
            plans: read
                .iter()
                .map(|(p, k)| (p.clone(), k.as_known()))
                .collect(),
            reach,
        };
        Ok(Handled::Decided(decide_plan_preview(&preview)))
    }
}
