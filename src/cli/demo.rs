//! `taskgate demo`: the guided walk-through a newcomer runs first.
//!
//! Owns: starting the fake GitHub (`fakehub`) and the real taskgate server
//! in-process, acting as a user against them (comments, pushes), waiting for
//! what GitHub then holds, and narrating it in plain text (no colour).
//! Must not: reach into taskgate's internals to make things happen; every
//! step goes through a signed webhook and is observed on the fake GitHub, as
//! a real installation would be. Where GitHub Actions would run a workflow,
//! the demo plays Actions openly: it completes the run on the fake and
//! delivers the `workflow_run` webhook GitHub would send.
//!
//! Steps 1–6 live here; a story's tasks (red push, branch todo, fix,
//! merged PRs) in `tasks.rs`; its way out (story PR, ship, deploy,
//! validation) in `ship.rs`.

mod ship;
mod tasks;

use std::collections::BTreeMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context};
use fakehub::{FakeGitHub, Issue, RepoHandle};
use taskgate::app::{self, Running, ServeConfig};
use taskgate_core::failure;

const REPO: &str = "octo-org/strategy";
const INSTALLATION: u64 = 42;
const USER: &str = "octocat";
const PLAN_PATH: &str = ".taskgate/stories/momentum.yml";
const BAD_PATH: &str = ".taskgate/stories/bad.yml";
const MOMENTUM: &str = include_str!("../../fixtures/plans/momentum.yml");
const BAD_PLAN: &str = include_str!("../../fixtures/plans/bad-unknown-dep.yml");
const POLL_EVERY: Duration = Duration::from_millis(20);
const WAIT_AT_MOST: Duration = Duration::from_secs(30);

#[derive(clap::Args, Debug)]
pub struct DemoArgs {
    /// Keep the fake GitHub and server running after the walk-through so you can curl them.
    #[arg(long)]
    pub keep: bool,
}

/// A directory under the system temp dir, removed when dropped.
struct ScratchDir(PathBuf);

impl ScratchDir {
    fn new(what: &str) -> anyhow::Result<ScratchDir> {
        let path = std::env::temp_dir().join(format!(
            "taskgate-demo-{what}-{}-{:08x}",
            std::process::id(),
            fastrand::u32(..)
        ));
        std::fs::create_dir_all(&path).with_context(|| format!("creating {}", path.display()))?;
        Ok(ScratchDir(path))
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

struct Demo {
    fake: FakeGitHub,
    /// `TASKGATE_API_TOKEN` of the demo's server (the dashboard's password).
    token: String,
    /// The repository the steps act on: `octo-org/strategy`, then the
    /// sample repository.
    repo: RepoHandle,
    running: Running,
    secret: String,
}

pub async fn run(args: DemoArgs) -> anyhow::Result<()> {
    let started = Instant::now();
    let dir = ScratchDir::new("db")?;
    let fake = FakeGitHub::start().await;
    // `against_fake` turns taskgate's pacing of writes off so the demo runs
    // in seconds; GitHub's secondary limit (80 writes a minute), which
    // pacing keeps taskgate under, goes with it.
    fake.set_secondary_limit(0);
    let secret = format!("{:032x}", fastrand::u128(..));
    let token = format!("{:032x}", fastrand::u128(..));
    // The fake GitHub serves the REST API; the commits the runner fetches
    // live in a real bare repository next to it.
    let remote = GitRemote::new(&dir.0.join("remotes"), tasks::SAMPLE_REPO)?;
    let running = app::start(ServeConfig {
        git: Some(remote.source()),
        api_token: Some(token.clone()),
        ..ServeConfig::against_fake(&fake, &secret, &dir.0.join("taskgate.db"))
    })
    .await
    .context("starting the taskgate server against the fake GitHub")?;
    // The App's webhook: like GitHub, the fake sends every webhook of every
    // write from now on, taskgate's own writes included.
    fake.set_app_webhook(&format!("http://{}/webhook", running.addr), &secret);
    println!("taskgate demo: everything below runs on this machine; nothing talks to github.com.");
    println!("  fake GitHub:     {}", fake.url());
    println!("  taskgate server: http://{}", running.addr);
    println!("  (taskgate's pacing of writes and GitHub's rate limit are both off: minutes of work in seconds)");
    println!();

    println!("1. Installing taskgate on {REPO}");
    let repo = fake.install(INSTALLATION, REPO);
    let mut demo = Demo {
        fake,
        token,
        repo,
        running,
        secret,
    };
    demo.help().await?;
    demo.plan().await?;
    demo.same_plan_again().await?;
    demo.bad_plan().await?;
    local_run().await?;
    let story = demo.sample_story(&remote).await?;
    demo.red_then_green(&remote, &story.tasks[0]).await?;
    demo.green_at_once(&remote, &story.tasks[1..]).await?;
    demo.story_pr(&story).await?;
    demo.ship(&story).await?;
    demo.deploy_and_validate(&story).await?;
    demo.dashboard().await?;
    demo.echoes().await?;

    let violations = demo.fake.contract_violations();
    ensure!(
        violations.is_empty(),
        "taskgate made requests GitHub would refuse:\n{}",
        violations.join("\n")
    );
    println!();
    println!("Every request taskgate made matched GitHub's published REST contract.");
    println!(
        "Done in {}.",
        taskgate_core::report::render_duration(started.elapsed().as_millis() as u64)
    );

    if args.keep {
        println!();
        println!("--keep: still running. Try:");
        println!("  curl http://{}/healthz", demo.running.addr);
        println!("  curl http://{}/metrics", demo.running.addr);
        println!(
            "  the dashboard, http://{}/ (any user name; password {})",
            demo.running.addr, demo.token
        );
        println!(
            "  The fake GitHub at {} wants tokens, as GitHub does;",
            demo.fake.url()
        );
        println!(
            "  webhooks to http://{}/webhook are signed with {}",
            demo.running.addr, demo.secret
        );
        println!("Press Ctrl-C to stop.");
        demo.running.wait().await;
    } else {
        demo.running.abort();
    }
    drop(dir);
    Ok(())
}

impl Demo {
    async fn help(&self) -> anyhow::Result<()> {
        println!();
        let issue = self
            .repo
            .create_issue("Plan the momentum strategy", "", USER);
        println!("2. @{USER} comments `/taskgate help` on issue #{issue}");
        self.repo.add_comment(issue, "/taskgate help", USER);
        let repo = &self.repo;
        let what = format!("the bot's reply on issue #{issue}");
        let reply = until(&what, || async move {
            let mut comments = repo.comments(issue).into_iter();
            Ok(comments.find(|c| c.author.ends_with("[bot]")))
        })
        .await?;
        println!("   {} replied:", reply.author);
        for line in reply.body.lines().filter(|l| !l.is_empty()).take(6) {
            println!("   | {line}");
        }
        println!("   | ...");
        Ok(())
    }

    async fn plan(&self) -> anyhow::Result<()> {
        println!();
        println!("3. @{USER} pushes {PLAN_PATH} to main");
        let writes_before = self.writes().len();
        let sha = self.push(PLAN_PATH, MOMENTUM).await?;
        println!("   pushed commit {}", short(&sha));
        let repo = &self.repo;
        let story = until("the story issue labelled taskgate:story", || async move {
            let mut issues = repo.issues().into_iter();
            Ok(issues.find(|i| i.labels.iter().any(|l| l == "taskgate:story")))
        })
        .await?;
        let branch = taskgate_core::story::story_branch(story.number);
        let what = format!("the branch {branch}");
        until(&what, || async { Ok(repo.branch_sha(&branch)) }).await?;
        self.settled().await?;
        let issues: BTreeMap<u64, Issue> =
            self.repo.issues().into_iter().map(|i| (i.id, i)).collect();
        let name = |id: &u64| {
            issues.get(id).map_or(format!("issue id {id}"), |i| {
                format!("#{} {}", i.number, i.title)
            })
        };
        println!("   story #{}: {}", story.number, story.title);
        println!("   issues and their labels (the task's state):");
        for i in issues
            .values()
            .filter(|i| i.id != story.id && i.parent.is_some())
        {
            println!(
                "     #{:<3} {:<26} [{}]",
                i.number,
                i.title,
                i.labels.join(", ")
            );
        }
        println!("   sub-issue tree:");
        tree(&issues, story.id, 0, &mut |line| println!("     {line}"));
        println!("   blocked-by links:");
        for i in issues.values().filter(|i| !i.blocked_by.is_empty()) {
            let by: Vec<String> = i.blocked_by.iter().map(name).collect();
            println!(
                "     #{} {} is blocked by {}",
                i.number,
                i.title,
                by.join(", ")
            );
        }
        let main_sha = self.repo.branch_sha("main");
        println!("   branches created:");
        for w in &self.writes()[writes_before..] {
            if w.route.as_deref() != Some("/repos/{owner}/{repo}/git/refs") {
                continue;
            }
            let branch = w.body["ref"].as_str().unwrap_or_default();
            let branch = branch.strip_prefix("refs/heads/").unwrap_or(branch);
            let from = if self.repo.branch_sha(branch) == main_sha {
                "at main's head"
            } else {
                "elsewhere"
            };
            println!("     {branch} ({from})");
        }
        let writes = &self.writes()[writes_before..];
        println!(
            "   it took {} GitHub write calls (installation tokens not counted):",
            writes.len()
        );
        let mut by_route: BTreeMap<String, usize> = BTreeMap::new();
        for w in writes {
            let route = w.route.as_deref().unwrap_or(&w.path);
            *by_route.entry(format!("{} {route}", w.method)).or_default() += 1;
        }
        for (route, n) in by_route {
            println!("     {n:>3}  {route}");
        }
        Ok(())
    }

    async fn same_plan_again(&self) -> anyhow::Result<()> {
        println!();
        println!(
            "4. @{USER} pushes the same plan again (a new commit; only a trailing newline differs)"
        );
        let before = self.writes().len();
        let sha = self.push(PLAN_PATH, &format!("{MOMENTUM}\n")).await?;
        println!("   pushed commit {}", short(&sha));
        self.settled().await?;
        let after = self.writes().len() - before;
        if after == 0 {
            println!("   0 write calls — nothing changed");
        } else {
            println!("   {after} write calls (expected none: the plan did not change)");
        }
        Ok(())
    }

    async fn bad_plan(&self) -> anyhow::Result<()> {
        println!();
        println!("5. @{USER} pushes a broken plan to {BAD_PATH}");
        let sha = self.push(BAD_PATH, BAD_PLAN).await?;
        println!("   pushed commit {}", short(&sha));
        let (repo, sha) = (&self.repo, &sha);
        let what = "a completed taskgate/plan check run on the pushed commit";
        let run = until(what, || async move {
            let mut runs = repo.check_runs().into_iter();
            Ok(runs.find(|c| {
                c.name == "taskgate/plan" && &c.head_sha == sha && c.conclusion.is_some()
            }))
        })
        .await?;
        self.settled().await?;
        println!(
            "   check run taskgate/plan: {}",
            run.conclusion.as_deref().unwrap_or("?")
        );
        println!("   title: {}", run.title.as_deref().unwrap_or("(none)"));
        println!("   summary:");
        for line in run.summary.as_deref().unwrap_or("(none)").lines() {
            println!("   | {line}");
        }
        Ok(())
    }

    fn labels(&self, number: u64) -> Vec<String> {
        self.repo
            .issue(number)
            .map(|i| i.labels)
            .unwrap_or_default()
    }

    /// Commits `content` to `path` on main and delivers the push; the new sha.
    async fn push(&self, path: &str, content: &str) -> anyhow::Result<String> {
        self.push_files(&[(path, content)]).await
    }

    /// Pushes one commit of `files` to main; GitHub delivers the push.
    async fn push_files(&self, files: &[(&str, &str)]) -> anyhow::Result<String> {
        let message = match files {
            [(path, _)] => format!("Update {path}"),
            _ => format!("Add {} files", files.len()),
        };
        Ok(self.repo.push_files("main", files, &message, USER))
    }

    /// `GET /` answers with the page, and what it shows is printed.
    async fn dashboard(&self) -> anyhow::Result<()> {
        println!();
        let url = format!("http://{}/", self.running.addr);
        println!("15. The dashboard at {url} (any user name, TASKGATE_API_TOKEN as the password):");
        let res = reqwest::Client::new()
            .get(&url)
            .basic_auth("demo", Some(&self.token))
            .send()
            .await
            .context("asking for the dashboard")?;
        let status = res.status();
        let page = res.text().await.context("reading the dashboard")?;
        ensure!(status == 200, "the dashboard answered {status}: {page}");
        let now = chrono::Utc::now().timestamp();
        let view =
            taskgate::web::dashboard::load_view(&self.running.store, &self.fake.url(), now, None)
                .await
                .context("reading taskgate's store")?;
        for s in &view.stories {
            ensure!(
                page.contains(&format!(">{}#{}</a>", s.repo, s.issue)),
                "the page lists {}#{}",
                s.repo,
                s.issue
            );
            println!(
                "   {}#{} \"{}\": {}, {}/{} tasks complete",
                s.repo, s.issue, s.title, s.state, s.done, s.total
            );
        }
        let t = &view.totals;
        println!(
            "   branch todos: {} fixed ({} without a person), {} open; review triggers fired: {}",
            t.todos_fixed,
            t.fixed_without_human,
            t.todos_open,
            view.triggers.len()
        );
        // The figures `/metrics` shows (`taskgate_fix_*`), as the story PR
        // body gives them.
        let counts = self
            .running
            .store
            .task_counts()
            .await
            .context("reading taskgate's store")?;
        let rates = counts.loop_stats.fix_rates(failure::MAX_AGENTS);
        if let Some(table) = failure::render_fix_rates(&rates) {
            println!("   the fix rate, by the agent each todo was routed to (none: its role names no agent):");
            for line in table.lines() {
                println!("   {line}");
            }
        }
        Ok(())
    }

    /// Write calls to GitHub other than installation-token exchanges.
    fn writes(&self) -> Vec<fakehub::RecordedRequest> {
        self.fake
            .writes()
            .into_iter()
            .filter(|w| !w.path.starts_with("/app/"))
            .collect()
    }

    /// Waits until GitHub and taskgate are both quiet: every webhook sent
    /// was answered, every delivery processed, no GitHub call due, and no
    /// write made meanwhile (a write sends webhooks again).
    async fn settled(&self) -> anyhow::Result<()> {
        let store = &self.running.store;
        let what = "taskgate to finish its work (no delivery or GitHub call left)";
        loop {
            self.fake.echoes_settled().await;
            let sent = self.fake.echo_stats().queued;
            until(what, || async move {
                let left = store
                    .unfinished_work()
                    .await
                    .context("reading taskgate's store")?;
                Ok((left == 0).then_some(()))
            })
            .await?;
            let now = self.fake.echo_stats();
            if now.queued == sent && now.delivered == now.queued {
                return Ok(());
            }
        }
    }

    /// What GitHub's echoes of taskgate's own writes caused, from the
    /// fake's count and taskgate's `/metrics`.
    async fn echoes(&self) -> anyhow::Result<()> {
        self.settled().await?;
        let sent = self.fake.echo_stats().from_app;
        let url = format!("http://{}/metrics", self.running.addr);
        let text = reqwest::get(&url)
            .await
            .context("asking for /metrics")?
            .text()
            .await
            .context("reading /metrics")?;
        let mut caused = BTreeMap::<String, u64>::new();
        for line in text.lines() {
            let Some(rest) = line.strip_prefix("taskgate_own_webhooks_total{") else {
                continue;
            };
            let Some((labels, n)) = rest.split_once("} ") else {
                continue;
            };
            if !labels.contains("caused=\"writes\"") {
                continue;
            }
            let event = labels
                .split(',')
                .find_map(|l| l.strip_prefix("event=\""))
                .map(|e| e.trim_end_matches('"').to_owned())
                .unwrap_or_default();
            *caused.entry(event).or_default() += n.trim().parse::<f64>().unwrap_or(0.0) as u64;
        }
        // These carry the story on, by design: a merge completes its task
        // or ships the story; the story PR is labelled and gated once
        // GitHub names it; a dispatched run's end is the deploy or the
        // validation.
        let merges = caused.remove("pull_request.closed").unwrap_or(0);
        let opened = caused.remove("pull_request.opened").unwrap_or(0);
        let runs = caused.remove("workflow_run.completed").unwrap_or(0);
        let others: u64 = caused.values().sum();
        println!();
        println!(
            "{sent} webhooks from taskgate's own writes (branches, issues, labels, comments, check runs, pull requests, dispatches), {others} writes caused;"
        );
        println!(
            "   by design, {merges} of its merges completed their task or story, {opened} story PR it opened was labelled and gated, and {runs} runs it dispatched finished."
        );
        ensure!(
            others == 0,
            "echoes of taskgate's own writes caused writes: {caused:?}"
        );
        Ok(())
    }
}

/// A real bare git repository standing in for GitHub's git side: the agent
/// commits here (through git2) and the runner fetches from it.
struct GitRemote {
    root: PathBuf,
    path: PathBuf,
    repo: git2::Repository,
}

impl GitRemote {
    fn new(root: &Path, repo: &str) -> anyhow::Result<GitRemote> {
        let path = root.join(format!("{repo}.git"));
        std::fs::create_dir_all(&path).with_context(|| format!("creating {}", path.display()))?;
        let repo = git2::Repository::init_bare(&path).context("creating the demo's git remote")?;
        Ok(GitRemote {
            root: root.to_owned(),
            path,
            repo,
        })
    }

    fn source(&self) -> taskgate::app::loops::run_queue::GitSource {
        taskgate::app::loops::run_queue::GitSource {
            url_template: format!("file://{}/{{repo}}.git", self.root.display()),
            with_token: false,
        }
    }

    /// Commits `files` (top-level paths) on top of `parent` (the branch's
    /// head as the fake GitHub has it, a real commit here) onto `branch`,
    /// and returns the sha.
    fn commit(
        &self,
        branch: &str,
        parent: Option<&str>,
        files: &[(&str, &str)],
        message: &str,
    ) -> anyhow::Result<String> {
        let r = &self.repo;
        let parent = parent
            .map(|sha| r.find_commit(git2::Oid::from_str(sha)?))
            .transpose()
            .context("the branch head is a commit of the demo's git remote")?;
        let base = parent.as_ref().map(|c| c.tree()).transpose()?;
        let mut tree = r.treebuilder(base.as_ref())?;
        for (path, content) in files {
            tree.insert(path, r.blob(content.as_bytes())?, 0o100644)?;
        }
        let tree = r.find_tree(tree.write()?)?;
        let who = git2::Signature::now("coder-agent", "agent@example.com")?;
        let parents: Vec<&git2::Commit> = parent.iter().collect();
        let oid = r.commit(None, &who, &who, message, &tree, &parents)?;
        r.reference(&format!("refs/heads/{branch}"), oid, true, message)?;
        Ok(oid.to_string())
    }
}

/// Polls `check` every 20 ms until it yields a value, for at most 30 s.
async fn until<T, F, Fut>(what: &str, mut check: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<Option<T>>>,
{
    let deadline = Instant::now() + WAIT_AT_MOST;
    loop {
        if let Some(found) = check().await? {
            return Ok(found);
        }
        if Instant::now() > deadline {
            bail!("timed out after {WAIT_AT_MOST:?} waiting for {what}");
        }
        tokio::time::sleep(POLL_EVERY).await;
    }
}

/// Prints `root`'s sub-issues as an indented tree.
fn tree(issues: &BTreeMap<u64, Issue>, root: u64, depth: usize, out: &mut dyn FnMut(String)) {
    let Some(issue) = issues.get(&root) else {
        return;
    };
    out(format!(
        "{}#{} {}",
        "  ".repeat(depth),
        issue.number,
        issue.title
    ));
    for child in &issue.sub_issues {
        tree(issues, *child, depth + 1, out);
    }
}

fn short(sha: &str) -> &str {
    &sha[..sha.len().min(7)]
}

/// Step 6: `taskgate run` on a tiny task, red then green, in a temp dir.
async fn local_run() -> anyhow::Result<()> {
    println!();
    println!("6. `taskgate run` runs a task's acceptance tests locally, with the bot's runner");
    let dir = ScratchDir::new("run")?;
    let stories = dir.0.join(".taskgate/stories");
    std::fs::create_dir_all(&stories).context("creating the demo checkout")?;
    std::fs::write(
        stories.join("hello.yml"),
        "story: Hello\ntasks:\n  - id: greet\n    title: Greeting\n    acceptance:\n      tests:\n        - { cmd: \"grep -q hello greeting.txt\", gate: unit }\n",
    )?;
    println!("   a task whose test is `grep -q hello greeting.txt`, before the file exists:");
    run_child(&dir.0).await?;
    std::fs::write(dir.0.join("greeting.txt"), "hello\n")?;
    println!("   after writing greeting.txt:");
    run_child(&dir.0).await?;
    Ok(())
}

async fn run_child(dir: &Path) -> anyhow::Result<()> {
    let exe = std::env::current_exe().context("finding the taskgate binary")?;
    let out = tokio::time::timeout(
        WAIT_AT_MOST,
        tokio::process::Command::new(&exe)
            .arg("run")
            .current_dir(dir)
            .env_remove("GITHUB_SHA")
            .kill_on_drop(true)
            .output(),
    )
    .await
    .with_context(|| format!("timed out after {WAIT_AT_MOST:?} waiting for `taskgate run`"))?
    .with_context(|| format!("running {} run", exe.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    ensure!(
        !stdout.trim().is_empty(),
        "`taskgate run` printed nothing (exit {:?}): {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    for line in stdout.lines() {
        println!("   | {line}");
    }
    println!("   (exit code {})", out.status.code().unwrap_or(-1));
    Ok(())
}
