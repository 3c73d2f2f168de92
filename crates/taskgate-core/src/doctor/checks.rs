//! One function per check of the doctor: the findings its facts make.

use super::{
    Access, AppFacts, Facts, Finding, InstallationFacts, Level, Link, Needs, RepoFacts,
    SandboxFacts, WorkflowFacts,
};
use crate::config::{load_config, RepoConfig, RunnerKind, CONFIG_PATH};
use crate::ship::RuleKind;

const DRAFTS_DOC: &str = "https://docs.github.com/en/pull-requests/collaborating-with-pull-requests/proposing-changes-to-your-work-with-pull-requests/changing-the-stage-of-a-pull-request";
const PLANS_DOC: &str =
    "https://docs.github.com/en/get-started/learning-about-github/githubs-plans";
const DISPATCH_DOC: &str = "https://docs.github.com/en/actions/writing-workflows/choosing-when-your-workflow-runs/events-that-trigger-workflows#workflow_dispatch";

pub(super) fn finding(level: Level, topic: impl Into<String>, says: impl Into<String>) -> Finding {
    Finding {
        level,
        topic: topic.into(),
        says: says.into(),
        fix: None,
        links: Vec::new(),
    }
}

impl Finding {
    pub(super) fn fix(mut self, fix: impl Into<String>) -> Finding {
        self.fix = Some(fix.into());
        self
    }

    pub(super) fn link(mut self, label: &str, url: impl Into<String>) -> Finding {
        self.links.push(Link {
            label: label.into(),
            url: url.into(),
        });
        self
    }
}

/// The App's settings page (`…/permissions`, `…/advanced`), or the list of
/// one's Apps when the App could not be read.
fn app_settings(facts: &Facts, page: &str) -> String {
    match &facts.app {
        Ok(AppFacts {
            slug,
            owner,
            owner_is_org: true,
            ..
        }) => format!(
            "{}/organizations/{owner}/settings/apps/{slug}/{page}",
            facts.web
        ),
        Ok(app) => format!("{}/settings/apps/{}/{page}", facts.web, app.slug),
        Err(_) => format!("{}/settings/apps", facts.web),
    }
}

/// The repository's page.
pub(super) fn repo_url(facts: &Facts) -> String {
    match facts.repository.as_ref().map(|r| &r.about) {
        Some(Ok(about)) => about.html_url.clone(),
        _ => format!("{}/{}", facts.web, facts.repo),
    }
}

pub(super) fn default_branch(facts: &Facts) -> String {
    match facts.repository.as_ref().map(|r| &r.about) {
        Some(Ok(about)) => about.default_branch.clone(),
        _ => "the default branch".into(),
    }
}

pub(super) fn could_not(level: Level, topic: &str, what: &str, why: &str) -> Finding {
    finding(level, topic, format!("could not {what}: {why}"))
}

/// The App, its installation on the repository, and what it grants.
/// GitHub's merge queue event, and the permission an App needs for it.
const MERGE_GROUP: &str = "merge_group";
const MERGE_QUEUES: &str = "merge_queues";

/// How much something only the merge queue route needs matters: it stops
/// taskgate where the default branch has a merge queue, is a note where
/// it has none, and a warning where its rules could not be read.
fn queue_need(facts: &Facts, says: String, why: &str) -> (Level, String) {
    let branch = default_branch(facts);
    let rules = facts.repository.as_ref().map(|r| &r.landing);
    match rules {
        Some(Ok(rules)) if rules.rules.iter().any(|r| r.rule == RuleKind::MergeQueue) => (
            Level::Block,
            format!("{says}: `{branch}` takes changes through GitHub's merge queue, and {why}, so no story ships"),
        ),
        Some(Ok(_)) => (
            Level::Note,
            format!("{says}: `{branch}` has no merge queue, so taskgate needs none of it now; it will if a merge queue is added ({why})"),
        ),
        _ => (
            Level::Warn,
            format!("{says}: taskgate could not read whether `{branch}` has a merge queue; where it has one, {why}"),
        ),
    }
}

pub(super) fn installation(facts: &Facts, needs: &Needs) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Err(why) = &facts.app {
        out.push(could_not(
            Level::Warn,
            "App",
            "read the App (GET /app)",
            why,
        ));
    }
    let inst = match &facts.installation {
        Err(why) => {
            let f = could_not(Level::Block, "Installation", "ask GitHub for the App's installation", why)
                .fix("Check APP_ID and the private key (PRIVATE_KEY or PRIVATE_KEY_PATH): they must be the App's.");
            return vec![f];
        }
        Ok(None) => {
            let install = match &facts.app {
                Ok(app) => format!("{}/apps/{}/installations/new", facts.web, app.slug),
                Err(_) => app_settings(facts, ""),
            };
            out.push(
                finding(
                    Level::Block,
                    "Installation",
                    format!("the App is not installed on {}", facts.repo),
                )
                .fix("Install it on the repository (or add the repository to its installation).")
                .link("install the App", install),
            );
            return out;
        }
        Ok(Some(inst)) => inst,
    };
    if inst.suspended {
        out.push(
            finding(
                Level::Block,
                "Installation",
                format!(
                    "installation {} is suspended: GitHub sends taskgate nothing",
                    inst.id
                ),
            )
            .fix("Unsuspend it in the installation's settings.")
            .link("the installation", &inst.html_url),
        );
    }
    let before = out.len();
    permissions(facts, needs, inst, &mut out);
    events(facts, needs, inst, &mut out);
    if out.len() == before && !inst.suspended {
        out.push(finding(
            Level::Ok,
            "Installation",
            format!(
                "installation {} grants every permission and event app-manifest.yml asks for",
                inst.id
            ),
        ));
    }
    let workflows = inst
        .permissions
        .get("workflows")
        .and_then(|w| Access::parse(w));
    if workflows < Some(Access::Write) {
        out.push(
            finding(Level::Note, "Permission `workflows`", "not granted: GitHub refuses taskgate's writes of a story or proof that changes `.github/workflows/`")
                .fix("Grant `workflows: write` to the App if stories will change workflows.")
                .link("the App's permissions", app_settings(facts, "permissions")),
        );
    }
    out
}

fn permissions(facts: &Facts, needs: &Needs, inst: &InstallationFacts, out: &mut Vec<Finding>) {
    for (name, need) in &needs.permissions {
        let granted = inst.permissions.get(name).and_then(|g| Access::parse(g));
        if granted >= Some(*need) {
            continue;
        }
        let has = granted.map_or("none".to_owned(), |g| format!("`{}`", g.name()));
        let says = format!("`{}` needed, {has} granted", need.name());
        let app_asks = facts
            .app
            .as_ref()
            .ok()
            .and_then(|a| a.permissions.get(name));
        let fix = if app_asks.and_then(|a| Access::parse(a)) >= Some(*need) {
            "The App asks for it; the installation has not accepted it yet: accept the new permissions on the installation.".to_owned()
        } else {
            format!(
                "Set `{name}` to \"{}\" in the App's permissions, then accept the new permissions on the installation.",
                need.setting()
            )
        };
        let (level, says) = match name.as_str() {
            MERGE_QUEUES => queue_need(
                facts,
                says,
                "GitHub sends the `merge_group` event only to an App with it",
            ),
            _ => (Level::Block, says),
        };
        out.push(
            finding(level, format!("Permission `{name}`"), says)
                .fix(fix)
                .link("the App's permissions", app_settings(facts, "permissions"))
                .link("the installation", &inst.html_url),
        );
    }
}

fn events(facts: &Facts, needs: &Needs, inst: &InstallationFacts, out: &mut Vec<Finding>) {
    let unheard = |e: &&String| !inst.events.contains(e);
    let missing: Vec<String> = needs
        .events
        .iter()
        .filter(unheard)
        .filter(|e| *e != MERGE_GROUP)
        .map(|e| format!("`{e}`"))
        .collect();
    if needs
        .events
        .iter()
        .filter(unheard)
        .any(|e| e == MERGE_GROUP)
    {
        let says = format!("not subscribed to `{MERGE_GROUP}`");
        let (level, says) = queue_need(
            facts,
            says,
            "taskgate is never asked to prove a merge group",
        );
        out.push(
            finding(level, "Events", says)
                .fix("Tick \"Merge group\" under \"Subscribe to events\" in the App's permissions (it needs the \"Merge queues\" permission), then accept the change on the installation.")
                .link("the App's permissions", app_settings(facts, "permissions"))
                .link("the installation", &inst.html_url),
        );
    }
    if missing.is_empty() {
        return;
    }
    out.push(
        finding(
            Level::Block,
            "Events",
            format!("not subscribed to {}: taskgate never hears of them", missing.join(", ")),
        )
        .fix("Tick them under \"Subscribe to events\" in the App's permissions, then accept the change on the installation.")
        .link("the App's permissions", app_settings(facts, "permissions"))
        .link("the installation", &inst.html_url),
    );
}

/// `.github/taskgate.yml`: the config the other checks read, unless refused.
pub(super) fn config(repo: &RepoFacts, out: &mut Vec<Finding>) -> Option<RepoConfig> {
    let topic = "Configuration";
    let text = match &repo.config_text {
        Err(why) => {
            out.push(could_not(
                Level::Warn,
                topic,
                &format!("read `{CONFIG_PATH}`"),
                why,
            ));
            return None;
        }
        Ok(text) => text,
    };
    match load_config(text.as_deref()) {
        Ok(config) => {
            let runner = runner_name(config.runner);
            out.push(finding(
                Level::Ok,
                topic,
                match text {
                    None => format!("no `{CONFIG_PATH}`: the defaults apply (runner `{runner}`)"),
                    Some(_) => format!("`{CONFIG_PATH}` is valid (runner `{runner}`)"),
                },
            ));
            Some(config)
        }
        Err(problems) => {
            let listed: Vec<String> = problems
                .iter()
                .filter(|p| p.is_error())
                .map(|p| match p.pos {
                    Some(at) => format!("{CONFIG_PATH}:{}:{}: {}", at.line, at.column, p.message),
                    None => format!("{CONFIG_PATH}: {}", p.message),
                })
                .collect();
            out.push(
                finding(Level::Block, topic, format!("`{CONFIG_PATH}` is refused: {}", listed.join("; ")))
                    .fix("Correct it on the default branch; until then taskgate reads no plan of this repository."),
            );
            None
        }
    }
}

fn runner_name(runner: RunnerKind) -> &'static str {
    match runner {
        RunnerKind::Local => "local",
        RunnerKind::Actions => "actions",
    }
}

/// Draft pull requests: every public repository; a private one only on
/// GitHub Team or Enterprise (and everywhere on GitHub Enterprise Server).
pub(super) fn drafts(facts: &Facts, repo: &RepoFacts, out: &mut Vec<Finding>) {
    let topic = "Draft pull requests";
    let about = match &repo.about {
        Err(why) => {
            out.push(could_not(Level::Warn, topic, "read the repository", why));
            return;
        }
        Ok(about) => about,
    };
    let available = |why: &str| finding(Level::Ok, topic, format!("available ({why})"));
    let unavailable = |why: String| {
        finding(Level::Warn, topic, format!("unavailable: {why}"))
            .fix("taskgate opens task pull requests as normal ones here. Drafts in private repositories need GitHub Team or Enterprise Cloud.")
            .link("drafts", DRAFTS_DOC)
            .link("GitHub's plans", PLANS_DOC)
    };
    let plan = about.plan.as_deref().map(str::to_ascii_lowercase);
    out.push(match (about.private, about.owner_is_org, plan.as_deref()) {
        (false, _, _) => available("a public repository"),
        _ if facts.enterprise_server => available("GitHub Enterprise Server"),
        (true, false, _) => {
            unavailable("a private repository of a personal account (GitHub Free or Pro)".into())
        }
        (true, true, Some("free")) => {
            unavailable("a private repository of an organisation on GitHub Free".into())
        }
        (true, true, Some(p @ ("team" | "enterprise" | "business" | "business_plus"))) => {
            available(&format!("a private repository on the `{p}` plan"))
        }
        (true, true, Some(other)) => unknown_drafts(format!("on the `{other}` plan"), false),
        (true, true, None) => unknown_drafts(
            "whose plan GitHub shows only to an App with `organization_plan: read`".into(),
            !granted(facts, "organization_plan"),
        ),
    });
}

/// Drafts that only the first task pull request will tell: nothing to
/// change, since taskgate falls back to a normal pull request then.
fn unknown_drafts(whose: String, may_grant: bool) -> Finding {
    let mut fix = "Nothing to change: taskgate asks for a draft at the first task pull request and, where GitHub refuses it, opens a normal pull request and remembers that for this repository.".to_owned();
    if may_grant {
        fix.push_str(" To know now, grant the App `organization_plan: read`.");
    }
    finding(
        Level::Note,
        "Draft pull requests",
        format!("unknown: a private repository of an organisation {whose}"),
    )
    .fix(fix)
    .link("GitHub's plans", PLANS_DOC)
}

/// Whether the installation was granted `permission` (any access).
fn granted(facts: &Facts, permission: &str) -> bool {
    matches!(&facts.installation, Ok(Some(i)) if i.permissions.contains_key(permission))
}

/// Each role's assignees: GitHub refuses to assign who cannot be.
pub(super) fn assignees(facts: &Facts, repo: &RepoFacts, out: &mut Vec<Finding>) {
    let mut fine = Vec::new();
    for (role, login, assignable) in &repo.assignees {
        let topic = format!("Assignee `{login}`");
        match assignable {
            Ok(true) => fine.push(format!("`{login}` ({role})")),
            Ok(false) => out.push(
                finding(Level::Warn, topic, format!("role `{role}` names `{login}`, who cannot be assigned in {}: its issues go out without them", facts.repo))
                    .fix(format!("Give `{login}` access to the repository, or take them out of `roles.{role}.assignees` in `{CONFIG_PATH}`."))
                    .link("collaborators", format!("{}/settings/access", repo_url(facts))),
            ),
            Err(why) => out.push(could_not(Level::Warn, &topic, "ask whether they can be assigned", why)),
        }
    }
    if !fine.is_empty() {
        out.push(finding(
            Level::Ok,
            "Assignees",
            format!("{} can be assigned", fine.join(", ")),
        ));
    } else if repo.assignees.is_empty() {
        out.push(finding(Level::Ok, "Assignees", "no role names assignees"));
    }
}

/// Which workflows the config has taskgate dispatch, by file: what each is
/// for and whether a problem with it blocks taskgate.
pub fn workflows_to_check(config: &RepoConfig) -> Vec<(String, String, Level)> {
    let mut out = Vec::new();
    if config.runner == RunnerKind::Actions {
        let purpose = "the Actions runner's workflow".to_owned();
        out.push((config.runner_workflow.clone(), purpose, Level::Block));
    }
    for (file, purpose) in [
        (&config.deploy_workflow, "the deploy workflow"),
        (&config.validation_workflow, "the validation workflow"),
    ] {
        if let Some(file) = file {
            out.push((file.clone(), purpose.to_owned(), Level::Warn));
        }
    }
    for (role, r) in &config.roles {
        if let Some(file) = r.agent_workflow() {
            out.push((
                file.to_owned(),
                format!("role `{role}`'s agent workflow"),
                Level::Warn,
            ));
        }
    }
    out
}

pub(super) fn workflows(
    facts: &Facts,
    repo: &RepoFacts,
    config: &RepoConfig,
    out: &mut Vec<Finding>,
) {
    let branch = default_branch(facts);
    for (file, purpose, level) in workflows_to_check(config) {
        let topic = format!("Workflow `{file}`");
        let page = format!("{}/actions/workflows/{file}", repo_url(facts));
        out.push(match repo.workflows.get(&file) {
            None => continue,
            Some(Err(why)) => could_not(Level::Warn, &topic, &format!("read {purpose}"), why),
            Some(Ok(WorkflowFacts::Missing)) => {
                let fix = if level == Level::Block {
                    format!("Run `taskgate init` and commit `.github/workflows/{file}` to `{branch}`.")
                } else {
                    format!("Commit `.github/workflows/{file}` to `{branch}`, or name another in `{CONFIG_PATH}`.")
                };
                finding(level, topic, format!("{purpose} is not on `{branch}`: nothing can dispatch it")).fix(fix)
            }
            Some(Ok(WorkflowFacts::Present { dispatchable: false, .. })) => {
                finding(level, topic, format!("{purpose} has no `workflow_dispatch` trigger: GitHub refuses to dispatch it"))
                    .fix("Add `workflow_dispatch:` under its `on:`.")
                    .link("workflow_dispatch", DISPATCH_DOC)
            }
            Some(Ok(WorkflowFacts::Present { state, .. })) if state != "active" => {
                finding(level, topic, format!("{purpose} is disabled on GitHub (`{state}`): GitHub refuses to dispatch it"))
                    .fix("Enable it on its page in the Actions tab.")
                    .link("the workflow", page)
            }
            Some(Ok(WorkflowFacts::Present { .. })) => finding(
                Level::Ok,
                topic,
                format!("{purpose} is on `{branch}` and can be dispatched"),
            ),
        });
    }
}

/// The sandbox task code runs in; it matters where the local runner runs.
pub(super) fn sandbox(facts: &Facts, runner: Option<RunnerKind>, out: &mut Vec<Finding>) {
    let topic = "Sandbox";
    let host = facts.host;
    let (level, elsewhere) = match runner {
        Some(RunnerKind::Actions) => (
            Level::Warn,
            "; this repository's runner is `actions`, so its tasks do not run here",
        ),
        _ => (Level::Block, ""),
    };
    out.push(match &facts.sandbox {
        SandboxFacts::Works {
            processes_limited: true,
        } => finding(Level::Ok, topic, format!("bubblewrap runs task code in its sandbox on {host}")),
        SandboxFacts::Works {
            processes_limited: false,
        } => finding(Level::Warn, topic, format!("bubblewrap runs task code on {host}, but cannot limit its processes: taskgate runs as root and no pids cgroup is writable"))
            .fix("Run taskgate as a user of its own, or give it a writable pids cgroup."),
        SandboxFacts::Fails(why) => finding(level, topic, format!("task code cannot run in the sandbox on {host}{elsewhere}")).fix(why.clone()),
        SandboxFacts::Refused(why) => finding(level, topic, format!("the sandbox settings are refused on {host}{elsewhere}")).fix(why.clone()),
        SandboxFacts::Unsandboxed => finding(Level::Warn, topic, format!("TASKGATE_UNSANDBOXED=1: task code runs on {host} without a sandbox, with taskgate's access"))
            .fix("Install bubblewrap and unset TASKGATE_UNSANDBOXED."),
    });
}

/// The runner host's free space against its floor: said only when runs
/// are held by it.
pub(super) fn disk(facts: &Facts, out: &mut Vec<Finding>) {
    if let Some(low) = &facts.low_disk {
        out.push(
            finding(Level::Warn, "Disk", format!("{} on {}", low.says(), facts.host))
                .fix("Free space under taskgate's work directory (TASKGATE_WORK_DIR: mirrors and workspaces), or lower TASKGATE_MIN_FREE_MIB."),
        );
    }
}

/// GitHub's deliveries to taskgate for this repository.
pub(super) fn deliveries(facts: &Facts, out: &mut Vec<Finding>) {
    let topic = "Webhook deliveries";
    let log = app_settings(facts, "advanced");
    let d = match &facts.deliveries {
        Err(why) => {
            out.push(could_not(
                Level::Warn,
                topic,
                "read the App's delivery log",
                why,
            ));
            return;
        }
        Ok(d) => d,
    };
    let Some(newest) = d.failed.first() else {
        out.push(finding(
            Level::Ok,
            topic,
            format!("none for {} failed in the last 3 days", facts.repo),
        ));
        return;
    };
    let what = format!(
        "`{}` at {}: {}",
        newest.event, newest.delivered_at, newest.status
    );
    out.push(if d.newest_failed {
        finding(Level::Block, topic, format!("GitHub's latest delivery failed ({what}): taskgate does not hear from GitHub"))
            .fix("Check that `taskgate serve` is running and that the App's webhook URL reaches its webhook path.")
            .link("the App's webhook and delivery log", log)
    } else {
        let n = d.failed.len();
        let deliveries = if n == 1 { "delivery" } else { "deliveries" };
        finding(Level::Warn, topic, format!("{n} {deliveries} failed in the last 3 days and never arrived (newest: {what})"))
            .fix("`taskgate serve` asks GitHub to send them again (TASKGATE_REDELIVER_MINUTES); each attempt is in the App's delivery log.")
            .link("the delivery log", log)
    });
}
