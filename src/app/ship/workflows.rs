//! The story's deploy and validation runs in the shell: a `workflow_run`
//! is taken as one only when the executor recorded its id from the
//! dispatch, or, on hosts that do not answer with the id, when it is the
//! configured workflow on the default branch and exactly one story waits
//! for it. Everything else is left to the Actions runner.

use super::*;
use taskgate_core::ids::StoryId;

impl Ship {
    /// A `workflow_run` `completed` of a story's deploy or validation run;
    /// not its own for any other run (the Actions runner's, or someone
    /// else's).
    pub async fn on_workflow_run(&self, p: &WorkflowRunEvent) -> Result<Handled, ShipError> {
        let repo = p.repo.clone();
        let run = &p.run;
        let default = p.default_branch.as_deref();
        let found = match self.store.story_run(&repo, run.id).await? {
            Some(r) => Some((r.story, r.workflow)),
            None => self.waiting_for(&repo, run, default).await?,
        };
        let Some((story, which)) = found else {
            return Ok(Handled::NotMine);
        };
        if p.action != WorkflowRunAction::Completed {
            return Ok(Handled::Decided(Decision::nothing(format!(
                "story {story}'s {} run {}: {}",
                which.name(),
                run.id,
                p.action
            ))));
        }
        let Some(mut l) = self.locate(&repo, &story, default).await? else {
            return Ok(Handled::NotMine);
        };
        if l.default_branch.is_empty() {
            let client = self.client(&l).await?;
            l.default_branch = RepoClient::new(&client, &l.repo).default_branch().await?;
        }
        let conclusion = run.conclusion.as_deref().unwrap_or("unknown");
        let file = run.file().unwrap_or("the workflow");
        let report = match &run.html_url {
            Some(url) => format!("`{file}` run [{}]({url}) concluded `{conclusion}`", run.id),
            None => format!("`{file}` run {} concluded `{conclusion}`", run.id),
        };
        let success = conclusion == "success";
        let d = match which {
            StoryWorkflow::Deploy => {
                ship::on_deploy_finished(&l.record, run.id, success, &report, &l.ctx())
            }
            StoryWorkflow::Validation => {
                ship::on_validation_finished(&l.record, run.id, success, &report, &l.ctx())
            }
        };
        Ok(Handled::Decided(l.finish(d)))
    }

    /// Without a recorded run id: the configured deploy (validation)
    /// workflow on the default branch, when exactly one story of the
    /// repository is `shipping` (`deployed`) and has no run of it yet.
    async fn waiting_for(
        &self,
        repo: &RepoName,
        run: &WorkflowRun,
        default: Option<&str>,
    ) -> Result<Option<(StoryId, StoryWorkflow)>, ShipError> {
        // Only a dispatched run can be taskgate's deploy or validation; a
        // push-triggered or manual run of the same file is someone else's.
        let Some(file) = run.file().filter(|_| run.dispatched_on_default(default)) else {
            return Ok(None);
        };
        let mut candidates = Vec::new();
        for (story, record) in self.store.story_records(repo).await? {
            let which = match record.state {
                ShipState::Shipping if record.deploy_run.is_none() => StoryWorkflow::Deploy,
                ShipState::Deployed if record.validation_run.is_none() => StoryWorkflow::Validation,
                _ => continue,
            };
            let Some(saved) = self.store.story(repo, &story).await? else {
                continue;
            };
            let config = load_config(saved.config.as_deref()).unwrap_or_default();
            let wanted = match which {
                StoryWorkflow::Deploy => config.deploy_workflow,
                StoryWorkflow::Validation => config.validation_workflow,
            };
            if wanted.as_deref() == Some(file) {
                candidates.push((story, which));
            }
        }
        Ok((candidates.len() == 1).then(|| candidates.remove(0)))
    }
}
