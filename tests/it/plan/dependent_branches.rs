//! Dependent tasks start from their dependencies' work (SPEC §3): a task's
//! branch is made when the task becomes ready, from the story branch's
//! head, so it holds every dependency's merged work; its issue says what
//! it was started from. Real git behind the fake GitHub, so the runner
//! tests what an agent would check out.

use crate::support::origin::Origin;
use crate::support::plan::{Plan, Task};
use crate::support::{eventually, TestApp, REPO};

const PLAN_PATH: &str = ".taskgate/stories/cli.yml";
fn plan() -> String {
    Plan::story("A command line over a core")
        .task(Task::new("core", "Core module").runs("sh test_core.sh"))
        .task(
            Task::new("cli", "Command line")
                .depends_on("core")
                .runs("sh test_cli.sh"),
        )
        .yaml()
}

/// `cli` needs `core.sh`, which only `core`'s work brings: without it the
/// test fails as an import error would.
const TEST_CLI: &str = ". ./core.sh || exit 1\n. ./cli.sh\ntest \"$(cli)\" = \"core says hi\"\n";

struct Story {
    app: TestApp,
    origin: Origin,
}

async fn story(shuffled: bool) -> Story {
    crate::support::init_logs();
    let fake = fakehub::FakeGitHub::start().await;
    let repo = fake.install(crate::support::INSTALLATION, REPO);
    fake.set_secondary_limit(100_000);
    if shuffled {
        crate::support::shuffle(&fake);
    }
    let origin = Origin::new();
    repo.back_with_git(&origin.bare());
    let source = origin.source();
    let app = TestApp::with_config(fake, move |c| {
        c.git = Some(source);
        c.max_concurrent_runs = 1;
    })
    .await;
    app.push_to_main(&[(PLAN_PATH, plan().as_str())]).await;
    Story { app, origin }
}

impl Story {
    fn issue(&self, title: &str) -> u64 {
        let issues = self.app.fake.repo(REPO).issues();
        issues.iter().find(|i| i.title == title).unwrap().number
    }

    /// An agent commits `files` on `branch` as GitHub has it, and pushes.
    async fn work(&self, branch: &str, files: &[(&str, &str)], message: &str) -> String {
        let repo = self.app.fake.repo(REPO);
        let from = repo.branch_sha(branch).expect("the branch exists");
        let sha = self.origin.commit_from(branch, &from, files, message);
        repo.push_commit(branch, &sha, message, files, "agent");
        self.app.settle().await;
        sha
    }

    /// Waits for the one check run on `sha` and gives its conclusion.
    async fn conclusion(&self, sha: &str) -> String {
        let repo = self.app.fake.repo(REPO);
        let done = || {
            repo.check_runs()
                .into_iter()
                .find(|c| c.head_sha == sha && c.status == "completed")
        };
        eventually("the check run completed", || async { done().is_some() }).await;
        self.app.settle().await;
        done().unwrap().conclusion.unwrap()
    }

    fn branch(&self, title: &str, id: &str) -> String {
        format!("taskgate/task-{}-{id}", self.issue(title))
    }

    fn story_branch(&self) -> String {
        format!(
            "taskgate/story-{}",
            self.issue("A command line over a core")
        )
    }

    /// `core` worked on, tested green and merged into the story branch.
    async fn finish_core(&self) {
        let core_branch = self.branch("Core module", "core");
        let core_head = self
            .work(
                &core_branch,
                &[
                    ("core.sh", "greeting() { echo \"core says hi\"; }\n"),
                    (
                        "test_core.sh",
                        ". ./core.sh\ntest \"$(greeting)\" = \"core says hi\"\n",
                    ),
                ],
                "core",
            )
            .await;
        assert_eq!(self.conclusion(&core_head).await, "success");
        self.merge(&core_branch).await;
    }

    /// The check runs of `cli`'s gate, whatever their commit.
    fn cli_gate_runs(&self) -> Vec<fakehub::CheckRun> {
        let repo = self.app.fake.repo(REPO);
        (repo.check_runs().into_iter())
            .filter(|c| {
                c.name == "taskgate/test"
                    && c.external_id
                        .as_deref()
                        .is_some_and(|k| k.contains(" task=cli "))
            })
            .collect()
    }

    /// The task PR of `branch` marked ready; auto review merges it.
    async fn merge(&self, branch: &str) {
        let repo = self.app.fake.repo(REPO);
        let pr = repo.pulls().into_iter().find(|p| p.head == branch).unwrap();
        repo.set_draft(pr.number, false, "agent");
        self.app.settle().await;
        let merged = repo.pulls().into_iter().find(|p| p.head == branch).unwrap();
        assert!(merged.merged, "{merged:#?}");
    }
}

/// Short and full shas vary with the time the commits were made.
fn without_shas(text: &str) -> String {
    let mut out = String::new();
    let mut run = String::new();
    for c in text.chars().chain(std::iter::once(' ')) {
        if c.is_ascii_hexdigit() {
            run.push(c);
            continue;
        }
        if run.len() >= 7 && run.chars().any(|c| c.is_ascii_digit()) {
            out.push_str("<sha>");
        } else {
            out.push_str(&run);
        }
        run.clear();
        out.push(c);
    }
    out.pop();
    out
}

#[tokio::test]
async fn a_dependent_task_branch_is_made_when_ready_and_holds_its_dependencys_work() {
    let branch = two_tasks(story(false).await).await;
    insta::assert_snapshot!(branch, @r"
    ### Branch

    `taskgate/task-3-cli` was started from the story branch `taskgate/story-1` at `<sha>`, with the merged work of #2.
    ");
}

/// The same, with GitHub's webhooks out of order and some twice.
#[tokio::test]
async fn with_webhooks_shuffled_and_duplicated_the_dependent_task_still_starts_from_its_dependency()
{
    let branch = two_tasks(story(true).await).await;
    assert!(
        branch.contains("was started from the story branch `taskgate/story-1` at `<sha>`, with the merged work of #2."),
        "{branch}"
    );
}

/// `core` then `cli`, each worked on, tested and merged as GitHub has its
/// branch; gives the "Branch" section of `cli`'s issue (shas hidden).
async fn two_tasks(s: Story) -> String {
    let repo = s.app.fake.repo(REPO);
    let (core, cli) = (s.issue("Core module"), s.issue("Command line"));
    let core_branch = format!("taskgate/task-{core}-core");
    let cli_branch = format!("taskgate/task-{cli}-cli");
    assert!(repo.branch_sha(&core_branch).is_some(), "core is ready");
    assert!(
        repo.branch_sha(&cli_branch).is_none(),
        "cli is pending: no branch yet"
    );

    s.finish_core().await;

    // cli became ready: its branch is made from the story branch, which
    // holds core's merged work.
    let story_head = repo.branch_sha(&format!(
        "taskgate/story-{}",
        s.issue("A command line over a core")
    ));
    assert_eq!(repo.branch_sha(&cli_branch), story_head);
    assert!(
        repo.file(&cli_branch, "core.sh").is_some(),
        "cli's branch has core.sh"
    );

    let cli_head = s
        .work(
            &cli_branch,
            &[
                ("cli.sh", "cli() { greeting; }\n"),
                ("test_cli.sh", TEST_CLI),
            ],
            "cli",
        )
        .await;
    assert_eq!(s.conclusion(&cli_head).await, "success");

    let body = repo.issue(cli).unwrap().body.unwrap_or_default();
    let branch = &body[body.find("### Branch").expect("a Branch section")..];
    let branch = &branch[..branch.find("**Role:**").unwrap()];
    s.app.assert_contract_kept();
    without_shas(branch).trim().to_owned()
}

/// A task branch that exists without commits of its own when its task
/// becomes ready is fast-forwarded to the story branch. GitHub lists the
/// story's commits in that push as `distinct: false`: it brings no work of
/// the task's own (SPEC §3), so nothing runs until the task's work comes.
#[tokio::test]
async fn a_task_branch_fast_forwarded_to_the_story_branch_runs_nothing() {
    let s = story(false).await;
    let repo = s.app.fake.repo(REPO);
    let (cli_branch, story_branch) = (s.branch("Command line", "cli"), s.story_branch());
    // A person made cli's branch at the story head while cli was pending.
    let at = repo.branch_sha(&story_branch).unwrap();
    repo.push_commit(&cli_branch, &at, "", &[], "agent");
    s.app.settle().await;

    s.finish_core().await;
    let story_head = repo.branch_sha(&story_branch).unwrap();
    assert_ne!(story_head, at);
    assert_eq!(
        repo.branch_sha(&cli_branch),
        Some(story_head),
        "fast-forwarded"
    );
    s.app.settle().await;
    assert_eq!(
        s.cli_gate_runs(),
        [],
        "no run for commits that bring no work"
    );
    let labels = repo.issue(s.issue("Command line")).unwrap().labels;
    assert!(labels.contains(&"state:ready".to_string()), "{labels:?}");

    // The task's own work runs, once.
    let head = s
        .work(
            &cli_branch,
            &[
                ("cli.sh", "cli() { greeting; }\n"),
                ("test_cli.sh", TEST_CLI),
            ],
            "cli",
        )
        .await;
    assert_eq!(s.conclusion(&head).await, "success");
    assert_eq!(s.cli_gate_runs().len(), 1);
    s.app.assert_contract_kept();
}

/// A task whose branch had work before its dependency completed is brought
/// up to date when the dependency merges: the story branch is merged into
/// it. That one update is one attempt, at the merge, not one for the old
/// head and another for the merge.
#[tokio::test]
async fn an_early_branch_brought_up_to_date_is_tested_once() {
    let s = story(false).await;
    let repo = s.app.fake.repo(REPO);
    let (cli_branch, story_branch) = (s.branch("Command line", "cli"), s.story_branch());
    let at = repo.branch_sha(&story_branch).unwrap();
    let files = [
        ("cli.sh", "cli() { greeting; }\n"),
        ("test_cli.sh", TEST_CLI),
    ];
    let early = s.origin.commit_from(&cli_branch, &at, &files, "cli");
    repo.push_commit(&cli_branch, &early, "cli", &files, "agent");
    s.app.settle().await;
    assert_eq!(s.cli_gate_runs(), [], "pending: not run");

    s.finish_core().await;
    let merged = repo.branch_sha(&cli_branch).unwrap();
    assert_ne!(merged, early, "the story branch was merged in");
    assert!(repo.file(&cli_branch, "core.sh").is_some());
    assert_eq!(s.conclusion(&merged).await, "success");
    let runs: Vec<(String, u32)> = s
        .cli_gate_runs()
        .into_iter()
        .map(|c| (c.head_sha, c.conclusion.map_or(0, |_| 1)))
        .collect();
    assert_eq!(runs, [(merged, 1)], "one attempt for one update");
    s.app.assert_contract_kept();
}
