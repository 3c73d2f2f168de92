//! Steps 11–14 of `taskgate demo`: a story's way out (SPEC §7). Its last
//! task merged, the story PR opens with a green `taskgate/ship-gate`; a
//! maintainer adds the `ship` label; taskgate merges the story PR and
//! dispatches the deploy workflow, then the validation workflow.
//!
//! Owns: playing the person who ships and GitHub Actions running the two
//! workflows (completing the dispatched run on the fake and delivering
//! `workflow_run` `completed`, as GitHub would), and narrating what GitHub
//! then holds: the story PR, its labels and gate, the bot's comments.
//! Must not: ask taskgate (its store or API) what state a story is in; the
//! labels and comments on GitHub say it.

use anyhow::Context;
use fakehub::Pull;

use super::tasks::Story;
use super::{short, until, Demo, USER};

impl Demo {
    /// Step 11: the story PR, its `shippable` label and its green gate.
    pub(super) async fn story_pr(&self, story: &Story) -> anyhow::Result<()> {
        println!();
        println!(
            "11. Every task of story #{} is complete: taskgate opens the story PR",
            story.issue
        );
        let pr = self.story_pull(story).await?;
        // GitHub tells the app about the pull request it opened.
        let repo = &self.repo;
        let number = pr.number;
        until("the `shippable` label on the story PR", || async move {
            Ok(repo
                .issue(number)
                .filter(|i| i.labels.iter().any(|l| l == "shippable")))
        })
        .await?;
        let head = repo
            .branch_sha(&story.branch)
            .context("the story branch's head")?;
        let head = &head;
        let gate = until("a completed taskgate/ship-gate check run", || async move {
            Ok(repo.check_runs().into_iter().find(|c| {
                c.name == "taskgate/ship-gate" && &c.head_sha == head && c.conclusion.is_some()
            }))
        })
        .await?;
        self.settled().await?;
        let pr = self.pull(number)?;
        println!(
            "   story PR #{number}: {} ({} → {}), opened by {}",
            pr.title, pr.head, pr.base, pr.author
        );
        println!("     labels: {}", self.labels(number).join(", "));
        println!(
            "     check run taskgate/ship-gate on commit {}: {} — {}",
            short(head),
            gate.conclusion.as_deref().unwrap_or("?"),
            gate.title.as_deref().unwrap_or("")
        );
        println!("     what its body says was proven:");
        let body = pr.body.unwrap_or_default();
        for line in body.lines().filter(|l| l.starts_with("- ")) {
            println!("     {}", plain(line));
        }
        println!("   nothing ships by itself: the PR waits for a person");
        Ok(())
    }

    /// Step 12: @octocat adds the `ship` label; the story is proven on the
    /// current base, lands, and the deploy workflow is dispatched.
    pub(super) async fn ship(&self, story: &Story) -> anyhow::Result<()> {
        println!();
        let pr = self.story_pull(story).await?;
        let number = pr.number;
        println!("12. @{USER} adds the `ship` label to PR #{number}");
        self.repo.add_labels(number, &["ship"], USER);
        let repo = &self.repo;
        let merged = until("the story PR to be merged", || async move {
            Ok(repo
                .pulls()
                .into_iter()
                .find(|p| p.number == number && p.merged))
        })
        .await?;
        let landed = repo.branch_sha(&merged.base).unwrap_or_default();
        println!(
            "   taskgate merged the story with {}'s head on taskgate/ship-{}, ran every gate on that merge commit,",
            merged.base, story.issue
        );
        println!(
            "   then moved {} to exactly the commit that passed, commit {}: GitHub marks PR #{number} merged",
            merged.base,
            short(&landed)
        );
        let mut proof: Vec<String> = repo
            .check_runs()
            .into_iter()
            .filter(|c| c.head_sha == landed)
            .map(|c| format!("{} {}", c.name, c.conclusion.unwrap_or_default()))
            .collect();
        proof.sort();
        for line in proof {
            println!("     check run {line}");
        }
        // GitHub tells the app its pull request was merged.
        let dispatch = self.dispatched("deploy.yml").await?;
        self.settled().await?;
        println!(
            "   taskgate dispatched {} on {}",
            dispatch.workflow, dispatch.git_ref
        );
        self.print_comments(story.issue, 0);
        Ok(())
    }

    /// Steps 13–14: GitHub Actions runs the deploy workflow, then the
    /// validation workflow taskgate dispatches after it; both succeed.
    pub(super) async fn deploy_and_validate(&self, story: &Story) -> anyhow::Result<()> {
        let pr = self.story_pull(story).await?.number;
        println!();
        println!("13. GitHub Actions runs deploy.yml (played by the demo): success");
        let seen = self.repo.comments(story.issue).len();
        self.finish_run("deploy.yml").await?;
        self.wait_for_label(pr, "deployed").await?;
        let validation = self.dispatched("validate.yml").await?;
        self.settled().await?;
        println!("   story PR #{pr} labels: {}", self.labels(pr).join(", "));
        println!(
            "   taskgate dispatched {} on {}",
            validation.workflow, validation.git_ref
        );
        self.print_comments(story.issue, seen);

        println!();
        println!("14. GitHub Actions runs validate.yml (played by the demo): success");
        let seen = self.repo.comments(story.issue).len();
        self.finish_run("validate.yml").await?;
        self.wait_for_label(pr, "review-ready").await?;
        self.settled().await?;
        println!("   story PR #{pr} labels: {}", self.labels(pr).join(", "));
        self.print_comments(story.issue, seen);
        println!(
            "   story #{} \"{}\" is shipped, deployed and validated: review-ready",
            story.issue, story.title
        );
        Ok(())
    }

    /// The story PR (the story branch into the default branch), once open.
    async fn story_pull(&self, story: &Story) -> anyhow::Result<Pull> {
        let repo = &self.repo;
        let what = format!("the story PR from {}", story.branch);
        until(&what, || async move {
            Ok(repo
                .pulls()
                .into_iter()
                .find(|p| p.head == story.branch && p.base == "main"))
        })
        .await
    }

    fn pull(&self, number: u64) -> anyhow::Result<Pull> {
        self.repo
            .pulls()
            .into_iter()
            .find(|p| p.number == number)
            .with_context(|| format!("pull request #{number}"))
    }

    async fn dispatched(&self, workflow: &str) -> anyhow::Result<fakehub::WorkflowDispatch> {
        let repo = &self.repo;
        let what = format!("taskgate to dispatch {workflow}");
        until(&what, || async move {
            Ok(repo
                .dispatches()
                .into_iter()
                .find(|d| d.workflow == workflow))
        })
        .await
    }

    /// Plays GitHub Actions: the dispatched run of `workflow` completes
    /// with success and GitHub delivers `workflow_run` `completed`.
    async fn finish_run(&self, workflow: &str) -> anyhow::Result<()> {
        let run = self.dispatched(workflow).await?.run_id;
        self.repo.complete_run(run, "success", &[]);
        Ok(())
    }

    async fn wait_for_label(&self, number: u64, label: &str) -> anyhow::Result<()> {
        let repo = &self.repo;
        let what = format!("the `{label}` label on PR #{number}");
        until(&what, || async move {
            Ok(repo
                .issue(number)
                .filter(|i| i.labels.iter().any(|l| l == label))
                .map(|_| ()))
        })
        .await
    }

    /// The bot's comments on `issue` after the first `skip`, in plain text.
    fn print_comments(&self, issue: u64, skip: usize) {
        for c in self.repo.comments(issue).into_iter().skip(skip) {
            if !c.author.ends_with("[bot]") {
                continue;
            }
            println!("   {} on story #{issue}:", c.author);
            // Markers are HTML comments: GitHub does not show them.
            let shown = c
                .body
                .lines()
                .filter(|l| !l.is_empty() && !l.starts_with("<!--"));
            for line in shown {
                println!("   | {}", plain(line));
            }
        }
    }
}

/// Markdown made plain for the terminal: a link shows its text, and a
/// commit sha in backticks reads `commit <sha>`.
fn plain(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(at) = rest.find(['[', '`']) {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        if let Some(link) = tail.strip_prefix('[') {
            if let Some((text, after)) = link.split_once("](") {
                if let Some((_, after)) = after.split_once(')') {
                    out.push_str(text);
                    rest = after;
                    continue;
                }
            }
        } else if let Some((code, after)) = tail[1..].split_once('`') {
            let sha = code.len() >= 7 && code.chars().all(|c| c.is_ascii_hexdigit());
            if sha {
                out.push_str("commit ");
                out.push_str(code);
            } else {
                out.push('`');
                out.push_str(code);
                out.push('`');
            }
            rest = after;
            continue;
        }
        out.push_str(&tail[..1]);
        rest = &tail[1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::plain;

    #[test]
    fn plain_shows_link_text_and_shas_as_commits() {
        assert_eq!(
            plain("Deployed: `deploy.yml` run [7](https://x/runs/7) concluded `success`."),
            "Deployed: `deploy.yml` run 7 concluded `success`."
        );
        assert_eq!(
            plain("merging #11 at `0a1b2c3`. [not a link"),
            "merging #11 at commit 0a1b2c3. [not a link"
        );
    }
}
