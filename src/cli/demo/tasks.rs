//! Steps 7–10 of `taskgate demo`: the sample repository (`fixtures/sample-repo/`)
//! pushed to a second installation, and its three tasks worked by
//! coder-agent with the bot's local runner fetching real commits: one red
//! push (failing check run, branch todo) and its fix, the other two green at
//! once; each proven task PR merged into the story branch.
//!
//! Owns: playing coder-agent (commits in the demo's git remote, recorded on
//! the fake, the `push` webhook GitHub would send) and the PR author who
//! marks a draft ready.
//! Must not: ask taskgate what happened; the check runs, issues and pull
//! requests on the fake say it.

use anyhow::Context;

use super::{short, until, Demo, GitRemote, USER};

/// The sample repository's name on the fake: another account's, with an
/// installation of its own.
pub(super) const SAMPLE_REPO: &str = "octocat/hello";
const SAMPLE_INSTALLATION: u64 = 43;
const CONFIG_PATH: &str = ".github/taskgate.yml";
const PLAN_PATH: &str = ".taskgate/stories/hello.yml";
const SAMPLE: [(&str, &str); 3] = [
    (
        "README.md",
        include_str!("../../../fixtures/sample-repo/README.md"),
    ),
    (
        CONFIG_PATH,
        include_str!("../../../fixtures/sample-repo/.github/taskgate.yml"),
    ),
    (
        PLAN_PATH,
        include_str!("../../../fixtures/sample-repo/.taskgate/stories/hello.yml"),
    ),
];
/// coder-agent's bot account: an agent's pushes, as GitHub names them.
const AGENT: &str = "coder-agent[bot]";

/// What coder-agent writes for each task: the file, a first try that fails
/// its test (used for the first task only), and the content that passes.
const WORK: [(&str, &str, &str); 3] = [
    ("greeting.txt", "hi\n", "hello\n"),
    ("farewell.txt", "", "goodbye\n"),
    ("NOTES.md", "", "Run `cat greeting.txt`.\n"),
];

/// The sample story, as its issues on the fake say.
pub(super) struct Story {
    pub issue: u64,
    pub title: String,
    /// `taskgate/story-<issue>`: the story PR's head.
    pub branch: String,
    /// In plan order.
    pub tasks: Vec<Task>,
}

pub(super) struct Task {
    pub number: u64,
    pub title: String,
    pub branch: String,
    pub test: String,
    /// The file coder-agent writes, a failing and a passing content.
    pub file: &'static str,
    pub red: &'static str,
    pub green: &'static str,
}

impl Demo {
    /// Step 7: taskgate installed on the sample repository, its files pushed.
    pub(super) async fn sample_story(&mut self, remote: &GitRemote) -> anyhow::Result<Story> {
        println!();
        println!("7. Installing taskgate on {SAMPLE_REPO}, @{USER}'s own repository (so @{USER} is its admin)");
        self.repo = self.fake.install(SAMPLE_INSTALLATION, SAMPLE_REPO);
        // Every commit the fake GitHub makes (the pushed files, merges,
        // the ship's merge commit) is a real commit the runner can test,
        // on top of the repository's first commit.
        remote.commit(
            "main",
            None,
            &[("README.md", "# hello\n")],
            "Initial commit",
        )?;
        self.repo.back_with_git(&remote.path);
        // The two workflows the config names, as GitHub Actions knows them.
        self.repo.add_workflow("deploy.yml");
        self.repo.add_workflow("validate.yml");
        println!(
            "   @{USER} pushes the sample repository fixtures/sample-repo/ to main; its {CONFIG_PATH}"
        );
        println!(
            "   names the repository's deploy and validation workflows, and ships a story without waiting for more to batch with it:"
        );
        let config = SAMPLE[1].1.lines().filter(|l| !l.starts_with('#'));
        for line in config {
            println!("   | {line}");
        }
        self.push_files(&SAMPLE).await?;
        let repo = &self.repo;
        let story = until("the story issue labelled taskgate:story", || async move {
            let mut issues = repo.issues().into_iter();
            Ok(issues.find(|i| i.labels.iter().any(|l| l == "taskgate:story")))
        })
        .await?;
        let plan = taskgate_core::plan::parse_plan(SAMPLE[2].1)
            .0
            .context("the sample plan parses")?;
        let mut tasks = Vec::new();
        for ((task, work), top) in plan.tasks.iter().zip(WORK).zip(1..) {
            let title = task.title.as_str();
            let what = format!("the task issue \"{title}\"");
            let issue = until(&what, || async move {
                Ok(repo.issues().into_iter().find(|i| i.title == title))
            })
            .await?;
            let branch = taskgate_core::story::BranchName::Task {
                issue: taskgate_core::ids::IssueNumber::new(issue.number),
                slug: task.id.value.as_str().to_string(),
            }
            .to_string();
            let what = format!("the branch {branch}");
            until(&what, || async { Ok(repo.branch_sha(&branch)) }).await?;
            let test = task.acceptance.tests.first().map(|t| t.cmd.clone());
            tasks.push(Task {
                number: issue.number,
                title: issue.title,
                branch,
                test: test.with_context(|| format!("task {top} has a test"))?,
                file: work.0,
                red: work.1,
                green: work.2,
            });
        }
        self.settled().await?;
        println!(
            "   story #{}: {}, three tasks, each on its own branch:",
            story.number, story.title
        );
        for t in &tasks {
            println!(
                "     #{} {:<14} [{}]  test `{}`  branch {}",
                t.number,
                t.title,
                self.labels(t.number).join(", "),
                t.test,
                t.branch
            );
        }
        Ok(Story {
            branch: taskgate_core::story::story_branch(story.number),
            issue: story.number,
            title: story.title,
            tasks,
        })
    }

    /// Steps 8–9: a red first try → branch todo; the fix → green → merged.
    pub(super) async fn red_then_green(
        &self,
        remote: &GitRemote,
        task: &Task,
    ) -> anyhow::Result<()> {
        let (file, branch) = (task.file, &task.branch);
        println!();
        println!(
            "8. coder-agent pushes a first try to {branch} ({file} says \"{}\")",
            task.red.trim()
        );
        let red = self.agent_push(remote, task, task.red, "First try").await?;
        let run = self.check_run(&red).await?;
        println!(
            "   check run taskgate/unit on commit {}: {} — {}",
            short(&red),
            run.conclusion.as_deref().unwrap_or("?"),
            run.title.as_deref().unwrap_or("")
        );
        let repo = &self.repo;
        let todo = until("the branch-todo issue", || async move {
            Ok(repo
                .issues()
                .into_iter()
                .find(|i| i.labels.iter().any(|l| l == "taskgate:branch-todo")))
        })
        .await?;
        self.settled().await?;
        println!("   branch todo #{}: {}", todo.number, todo.title);
        println!("     labels: {}", todo.labels.join(", "));
        println!("     a sub-issue of #{}; its body starts:", task.number);
        for line in todo.body.as_deref().unwrap_or("").lines().take(3) {
            println!("   | {line}");
        }
        println!(
            "   task #{} labels: {}",
            task.number,
            self.labels(task.number).join(", ")
        );
        let pr = self.task_pull(task)?;
        println!(
            "   the first push opened draft PR #{} ({} → {})",
            pr.number, pr.head, pr.base
        );

        println!();
        println!(
            "9. coder-agent pushes the fix ({file} says \"{}\")",
            task.green.trim()
        );
        let green = self.agent_push(remote, task, task.green, "Fix").await?;
        let run = self.check_run(&green).await?;
        println!(
            "   check run taskgate/unit on commit {}: {} — {}",
            short(&green),
            run.conclusion.as_deref().unwrap_or("?"),
            run.title.as_deref().unwrap_or("")
        );
        self.settled().await?;
        let todo = self.repo.issue(todo.number).context("the branch todo")?;
        println!("   branch todo #{}: {}", todo.number, todo.state);
        // No person acted since the todo opened: taskgate marks the draft
        // it opened ready, and review mode auto merges it.
        self.merged(
            task,
            "no person acted since the todo opened: taskgate marked the draft it opened ready",
        )
        .await
    }

    /// Step 10: the other tasks' first pushes pass; their PRs merge.
    pub(super) async fn green_at_once(
        &self,
        remote: &GitRemote,
        tasks: &[Task],
    ) -> anyhow::Result<()> {
        println!();
        println!("10. coder-agent does the other two tasks right the first time");
        for task in tasks {
            println!(
                "   pushes {} to {} and marks its PR ready",
                task.file, task.branch
            );
            let sha = self.agent_push(remote, task, task.green, "Done").await?;
            let run = self.check_run(&sha).await?;
            println!(
                "   check run taskgate/unit on commit {}: {} — {}",
                short(&sha),
                run.conclusion.as_deref().unwrap_or("?"),
                run.title.as_deref().unwrap_or("")
            );
            self.settled().await?;
            self.ready_and_merged(task).await?;
        }
        Ok(())
    }

    /// The task's PR marked ready by its author; with review mode auto,
    /// taskgate merges it (it was proven at its head) and the task closes.
    async fn ready_and_merged(&self, task: &Task) -> anyhow::Result<()> {
        let number = self.task_pull(task)?.number;
        // GitHub sends `pull_request.ready_for_review`.
        self.repo.set_draft(number, false, AGENT);
        self.merged(task, "").await
    }

    /// Waits for the task's PR to merge and its issue to close; `why`, if
    /// any, says who marked it ready.
    async fn merged(&self, task: &Task, why: &str) -> anyhow::Result<()> {
        let pr = self.task_pull(task)?;
        let number = pr.number;
        let repo = &self.repo;
        until("the task PR to be merged", || async move {
            Ok(repo
                .pulls()
                .into_iter()
                .find(|p| p.number == number && p.merged))
        })
        .await?;
        if !why.is_empty() {
            println!("   {why}");
        }
        println!(
            "   review mode auto: PR #{number} merged into {} (it was proven at its head)",
            pr.base
        );
        // GitHub tells taskgate of its own merge (`pull_request.closed`).
        self.settled().await?;
        let issue = self.repo.issue(task.number).context("the task issue")?;
        println!(
            "   task #{}: {} [{}]",
            issue.number,
            issue.state,
            issue.labels.join(", ")
        );
        Ok(())
    }

    fn task_pull(&self, task: &Task) -> anyhow::Result<fakehub::Pull> {
        self.repo
            .pulls()
            .into_iter()
            .find(|p| p.head == task.branch)
            .with_context(|| format!("the draft pull request of task #{}", task.number))
    }

    /// coder-agent commits `content` to the task's file on its branch and
    /// GitHub tells taskgate.
    async fn agent_push(
        &self,
        remote: &GitRemote,
        task: &Task,
        content: &str,
        message: &str,
    ) -> anyhow::Result<String> {
        let branch = &task.branch;
        let files = [(task.file, content)];
        let head = self.repo.branch_sha(branch);
        let sha = remote.commit(branch, head.as_deref(), &files, message)?;
        self.repo.push_commit(branch, &sha, message, &files, AGENT);
        Ok(sha)
    }

    async fn check_run(&self, sha: &str) -> anyhow::Result<fakehub::CheckRun> {
        let repo = &self.repo;
        until("the completed taskgate/unit check run", || async move {
            Ok(repo
                .check_runs()
                .into_iter()
                .find(|c| c.head_sha == sha && c.name == "taskgate/unit" && c.conclusion.is_some()))
        })
        .await
    }
}
