//! GitHub's JSON shapes for the fake's objects, shared by the REST routes and
//! the webhook payload builders. Fields follow GitHub's REST responses
//! (compared with fixtures/webhooks and octocrab's models): API `url`s point
//! at the fake, `html_url`s at github.com. The webhook payloads embed these
//! shapes too, so they also satisfy GitHub's webhook schemas.

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{json, Value};

use crate::state::{
    CheckRun, Comment, HookDelivery, Issue, Label, Pull, Reaction, Repo, State, User,
};

pub const HTML: &str = "https://github.com";

pub fn ts(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

fn opt_ts(t: Option<DateTime<Utc>>) -> Value {
    t.map(|t| Value::String(ts(t))).unwrap_or(Value::Null)
}

fn node_id(prefix: &str, id: u64) -> String {
    use base64::Engine;
    format!(
        "{prefix}_{}",
        base64::engine::general_purpose::STANDARD_NO_PAD.encode(format!("fake{id}"))
    )
}

pub fn user(base: &str, u: &User) -> Value {
    let l = &u.login;
    let api = format!("{base}/users/{l}");
    json!({
        "login": l, "id": u.id, "node_id": node_id(if u.kind == "Bot" { "BOT" } else { "U" }, u.id),
        "avatar_url": format!("https://avatars.githubusercontent.com/u/{}?v=4", u.id), "gravatar_id": "",
        "url": api, "html_url": format!("{HTML}/{}", l.trim_end_matches("[bot]")),
        "followers_url": format!("{api}/followers"), "following_url": format!("{api}/following{{/other_user}}"),
        "gists_url": format!("{api}/gists{{/gist_id}}"), "starred_url": format!("{api}/starred{{/owner}}{{/repo}}"),
        "subscriptions_url": format!("{api}/subscriptions"), "organizations_url": format!("{api}/orgs"),
        "repos_url": format!("{api}/repos"), "events_url": format!("{api}/events{{/privacy}}"),
        "received_events_url": format!("{api}/received_events"), "type": u.kind, "user_view_type": "public",
        "site_admin": false,
    })
}

pub fn user_by_login(st: &State, base: &str, login: &str) -> Value {
    let u = st.known_user(login).unwrap_or_else(|| User {
        login: login.into(),
        id: 0,
        kind: if login.ends_with("[bot]") {
            "Bot"
        } else {
            "User"
        }
        .into(),
    });
    user(base, &u)
}

pub fn repo_api(base: &str, r: &Repo) -> String {
    format!("{base}/repos/{}", r.full_name())
}

pub fn repository(st: &State, base: &str, r: &Repo) -> Value {
    let api = repo_api(base, r);
    let html = format!("{HTML}/{}", r.full_name());
    let owner = user_by_login(st, base, &r.owner);
    let open = r.issues.values().filter(|i| i.state == "open").count();
    let mut v = json!({
        "id": r.id, "node_id": node_id("R", r.id), "name": r.name, "full_name": r.full_name(), "private": r.private,
        "owner": owner, "html_url": html, "description": null, "fork": false, "url": api,
        "created_at": "2024-01-01T00:00:00Z", "updated_at": "2024-01-01T00:00:00Z", "pushed_at": "2024-01-01T00:00:00Z",
        "git_url": format!("git://github.com/{}.git", r.full_name()), "ssh_url": format!("git@github.com:{}.git", r.full_name()),
        "clone_url": format!("{html}.git"), "svn_url": html, "homepage": null, "size": 1,
        "stargazers_count": 0, "watchers_count": 0, "language": null, "has_issues": true, "has_projects": true,
        "has_downloads": true, "has_wiki": true, "has_pages": false, "has_discussions": false, "forks_count": 0,
        "mirror_url": null, "archived": false, "disabled": false, "open_issues_count": open, "license": null,
        "allow_forking": true, "is_template": false, "web_commit_signoff_required": false, "topics": [],
        "visibility": if r.private { "private" } else { "public" }, "forks": 0, "open_issues": open, "watchers": 0, "default_branch": r.default_branch,
        "custom_properties": {},
    });
    let urls = [
        ("forks_url", "/forks"),
        ("keys_url", "/keys{/key_id}"),
        ("collaborators_url", "/collaborators{/collaborator}"),
        ("teams_url", "/teams"),
        ("hooks_url", "/hooks"),
        ("issue_events_url", "/issues/events{/number}"),
        ("events_url", "/events"),
        ("assignees_url", "/assignees{/user}"),
        ("branches_url", "/branches{/branch}"),
        ("tags_url", "/tags"),
        ("blobs_url", "/git/blobs{/sha}"),
        ("git_tags_url", "/git/tags{/sha}"),
        ("git_refs_url", "/git/refs{/sha}"),
        ("trees_url", "/git/trees{/sha}"),
        ("statuses_url", "/statuses/{sha}"),
        ("languages_url", "/languages"),
        ("stargazers_url", "/stargazers"),
        ("contributors_url", "/contributors"),
        ("subscribers_url", "/subscribers"),
        ("subscription_url", "/subscription"),
        ("commits_url", "/commits{/sha}"),
        ("git_commits_url", "/git/commits{/sha}"),
        ("comments_url", "/comments{/number}"),
        ("issue_comment_url", "/issues/comments{/number}"),
        ("contents_url", "/contents/{+path}"),
        ("compare_url", "/compare/{base}...{head}"),
        ("merges_url", "/merges"),
        ("archive_url", "/{archive_format}{/ref}"),
        ("downloads_url", "/downloads"),
        ("issues_url", "/issues{/number}"),
        ("pulls_url", "/pulls{/number}"),
        ("milestones_url", "/milestones{/number}"),
        (
            "notifications_url",
            "/notifications{?since,all,participating}",
        ),
        ("labels_url", "/labels{/name}"),
        ("releases_url", "/releases{/id}"),
        ("deployments_url", "/deployments"),
    ];
    for (k, suffix) in urls {
        v[k] = Value::String(format!("{api}{suffix}"));
    }
    v
}

pub fn label(base: &str, r: &Repo, l: &Label) -> Value {
    json!({
        "id": l.id, "node_id": node_id("LA", l.id), "url": format!("{}/labels/{}", repo_api(base, r), l.name),
        "name": l.name, "color": l.color, "default": false, "description": l.description,
    })
}

pub fn reactions_summary(url: String, reactions: &[Reaction]) -> Value {
    let count = |c: &str| reactions.iter().filter(|r| r.content == c).count();
    json!({
        "url": url, "total_count": reactions.len(), "+1": count("+1"), "-1": count("-1"), "laugh": count("laugh"),
        "hooray": count("hooray"), "confused": count("confused"), "heart": count("heart"), "rocket": count("rocket"),
        "eyes": count("eyes"),
    })
}

pub fn reaction(st: &State, base: &str, r: &Reaction) -> Value {
    json!({
        "id": r.id, "node_id": node_id("REA", r.id), "user": user_by_login(st, base, &r.user),
        "content": r.content, "created_at": ts(r.created_at),
    })
}

pub fn author_association(st: &State, r: &Repo, login: &str) -> &'static str {
    if login.eq_ignore_ascii_case(&r.owner) {
        return "OWNER";
    }
    match st
        .permissions
        .get(&login.to_lowercase())
        .map(String::as_str)
    {
        Some("admin" | "maintain" | "write" | "triage") => "COLLABORATOR",
        _ => "NONE",
    }
}

pub fn issue(st: &State, base: &str, r: &Repo, i: &Issue) -> Value {
    let api = format!("{}/issues/{}", repo_api(base, r), i.number);
    let labels: Vec<Value> = i
        .labels
        .iter()
        .filter_map(|n| r.label(n))
        .map(|l| label(base, r, l))
        .collect();
    let assignees: Vec<Value> = i
        .assignees
        .iter()
        .map(|a| user_by_login(st, base, a))
        .collect();
    let comments = r
        .comments
        .iter()
        .filter(|c| c.issue_number == i.number)
        .count();
    let done = i
        .sub_issues
        .iter()
        .filter(|id| st.issue_anywhere(**id).is_some_and(|s| s.state == "closed"))
        .count();
    let total = i.sub_issues.len();
    let mut v = json!({
        "url": api, "repository_url": repo_api(base, r), "labels_url": format!("{api}/labels{{/name}}"),
        "comments_url": format!("{api}/comments"), "events_url": format!("{api}/events"),
        "html_url": format!("{HTML}/{}/{}/{}", r.full_name(), if i.is_pull_request { "pull" } else { "issues" }, i.number),
        "id": i.id, "node_id": node_id("I", i.id), "number": i.number, "title": i.title,
        "user": user_by_login(st, base, &i.author), "labels": labels, "state": i.state, "locked": false,
        "assignee": assignees.first().cloned().unwrap_or(Value::Null), "assignees": assignees, "milestone": null,
        "comments": comments, "created_at": ts(i.created_at), "updated_at": ts(i.updated_at), "closed_at": opt_ts(i.closed_at),
        "author_association": author_association(st, r, &i.author), "active_lock_reason": null, "body": i.body,
        "closed_by": null, "reactions": reactions_summary(format!("{api}/reactions"), &i.reactions),
        "timeline_url": format!("{api}/timeline"), "performed_via_github_app": performed_via(st, base, &i.author), "state_reason": i.state_reason,
        "sub_issues_summary": {"total": total, "completed": done, "percent_completed": (done * 100).checked_div(total).unwrap_or(0)},
    });
    if i.is_pull_request {
        let pr = format!("{}/pulls/{}", repo_api(base, r), i.number);
        let html = format!("{HTML}/{}/pull/{}", r.full_name(), i.number);
        v["pull_request"] = json!({"url": pr, "html_url": html, "diff_url": format!("{html}.diff"),
            "patch_url": format!("{html}.patch"), "merged_at": null});
    }
    v
}

pub fn comment(st: &State, base: &str, r: &Repo, c: &Comment) -> Value {
    let api = format!("{}/issues/comments/{}", repo_api(base, r), c.id);
    json!({
        "url": api, "html_url": format!("{HTML}/{}/issues/{}#issuecomment-{}", r.full_name(), c.issue_number, c.id),
        "issue_url": format!("{}/issues/{}", repo_api(base, r), c.issue_number), "id": c.id, "node_id": node_id("IC", c.id),
        "user": user_by_login(st, base, &c.author), "created_at": ts(c.created_at), "updated_at": ts(c.updated_at),
        "author_association": author_association(st, r, &c.author), "body": c.body,
        "reactions": reactions_summary(format!("{api}/reactions"), &c.reactions), "performed_via_github_app": performed_via(st, base, &c.author),
    })
}

fn branch_end(st: &State, base: &str, r: &Repo, branch: &str, sha: &str) -> Value {
    json!({
        "label": format!("{}:{branch}", r.owner), "ref": branch, "sha": sha,
        "user": user_by_login(st, base, &r.owner), "repo": repository(st, base, r),
    })
}

pub fn pull(st: &State, base: &str, r: &Repo, p: &Pull) -> Value {
    let api = format!("{}/pulls/{}", repo_api(base, r), p.number);
    let html = format!("{HTML}/{}/pull/{}", r.full_name(), p.number);
    let head_sha = r.branches.get(&p.head).cloned().unwrap_or_default();
    let base_sha = r.branches.get(&p.base).cloned().unwrap_or_default();
    let issue = r.issues.get(&p.number);
    // GitHub computes it from the branches (a conflict makes it false).
    let mergeable = p.state != "open" || crate::routes::pulls::mergeable_now(r, p);
    let labels: Vec<Value> = issue
        .map(|i| {
            i.labels
                .iter()
                .filter_map(|n| r.label(n))
                .map(|l| label(base, r, l))
                .collect()
        })
        .unwrap_or_default();
    json!({
        "url": api, "id": p.id, "node_id": node_id("PR", p.id), "html_url": html, "diff_url": format!("{html}.diff"),
        "patch_url": format!("{html}.patch"), "issue_url": format!("{}/issues/{}", repo_api(base, r), p.number),
        "commits_url": format!("{api}/commits"), "review_comments_url": format!("{api}/comments"),
        "review_comment_url": format!("{}/pulls/comments{{/number}}", repo_api(base, r)),
        "comments_url": format!("{}/issues/{}/comments", repo_api(base, r), p.number),
        "statuses_url": format!("{}/statuses/{head_sha}", repo_api(base, r)),
        "number": p.number, "state": p.state, "locked": false, "title": p.title, "user": user_by_login(st, base, &p.author),
        "body": p.body, "labels": labels, "milestone": null, "active_lock_reason": null,
        "created_at": ts(p.created_at), "updated_at": ts(p.updated_at), "closed_at": opt_ts(p.closed_at),
        "merged_at": opt_ts(p.merged_at), "merge_commit_sha": p.merge_commit_sha, "assignee": null, "assignees": [],
        "requested_reviewers": [], "requested_teams": [], "head": branch_end(st, base, r, &p.head, &head_sha),
        "base": branch_end(st, base, r, &p.base, &base_sha), "author_association": author_association(st, r, &p.author),
        "auto_merge": null, "draft": p.draft, "merged": p.merged, "mergeable": if p.state == "open" { json!(mergeable) } else { Value::Null },
        "rebaseable": mergeable, "mergeable_state": if mergeable { "clean" } else { "dirty" },
        "merged_by": p.merged_by.as_ref().map(|login| user_by_login(st, base, login)),
        "comments": 0, "review_comments": 0, "maintainer_can_modify": false, "commits": 1, "additions": 1, "deletions": 0,
        "changed_files": 1,
        "_links": {
            "self": {"href": api}, "html": {"href": html},
            "issue": {"href": format!("{}/issues/{}", repo_api(base, r), p.number)},
            "comments": {"href": format!("{}/issues/{}/comments", repo_api(base, r), p.number)},
            "review_comments": {"href": format!("{api}/comments")},
            "review_comment": {"href": format!("{}/pulls/comments{{/number}}", repo_api(base, r))},
            "commits": {"href": format!("{api}/commits")},
            "statuses": {"href": format!("{}/statuses/{head_sha}", repo_api(base, r))},
        },
    })
}

/// `performed_via_github_app` of an issue or comment by `author`: the App
/// whose bot account made it (GitHub's `integration`), null for a person.
/// The fake's own App made what its bot wrote; any other `<slug>[bot]` is
/// another App, with an id of its own.
pub fn performed_via(st: &State, base: &str, author: &str) -> Value {
    let mut v = app(st, base);
    // The webhook schema of an issue's or comment's App enumerates events
    // without `merge_group` (it predates merge queues): left out here.
    if let Some(events) = v["events"].as_array_mut() {
        events.retain(|e| e != "merge_group");
    }
    if author.eq_ignore_ascii_case(&st.bot_login()) {
        return v;
    }
    let Some(slug) = author.strip_suffix("[bot]") else {
        return Value::Null;
    };
    let bot_id = st.known_user(author).map_or(0, |u| u.id);
    let id = OTHER_APP_IDS + bot_id % OTHER_APP_IDS;
    v["id"] = json!(id);
    v["slug"] = json!(slug);
    v["node_id"] = json!(node_id("A", id));
    v["client_id"] = json!(format!("Iv1.{slug}"));
    v["name"] = json!(slug);
    v["html_url"] = json!(format!("{HTML}/apps/{slug}"));
    v
}

/// Where the ids of Apps other than the fake's own start.
const OTHER_APP_IDS: u64 = 9_000_000;

/// The fake's app; after a manifest conversion, as the manifest registered it.
pub fn app(st: &State, base: &str) -> Value {
    let owner = user_by_login(st, base, "taskgate-org");
    let mut v = json!({
        "id": st.app_id, "slug": st.slug, "node_id": node_id("A", st.app_id), "client_id": "Iv1.fakehub",
        "owner": owner, "name": "taskgate (test)", "description": "taskgate under test",
        "external_url": "https://example.com/taskgate", "html_url": format!("{HTML}/apps/{}", st.slug),
        "created_at": "2024-01-01T00:00:00Z", "updated_at": "2024-01-01T00:00:00Z",
        "permissions": permissions(), "events": EVENTS,
        "installations_count": st.installations.len(),
    });
    if let Some(r) = &st.registered {
        v["name"] = json!(r.name);
        v["description"] = json!(r.description);
        v["external_url"] = json!(r.external_url);
        v["permissions"] = r.permissions.clone();
        v["events"] = r.events.clone();
        if let Some(owner) = &r.owner {
            v["owner"] = user_by_login(st, base, owner);
        }
    }
    v
}

/// What taskgate's `app-manifest.yml` asks for: the fake App's
/// permissions, and an installation's unless a test set others.
pub fn permissions() -> Value {
    json!({"actions": "write", "checks": "write", "contents": "write", "issues": "write",
           "merge_queues": "read", "metadata": "read", "pull_requests": "write"})
}

/// The events `app-manifest.yml` subscribes to: the fake App's, and an
/// installation's unless a test set others.
pub const EVENTS: [&str; 9] = [
    "check_run",
    "check_suite",
    "issue_comment",
    "issues",
    "merge_group",
    "pull_request",
    "pull_request_review",
    "push",
    "workflow_run",
];

pub fn installation(st: &State, base: &str, id: u64) -> Value {
    let inst = st.installations.get(&id);
    let account = inst.map(|i| i.account.clone()).unwrap_or_default();
    let granted = inst
        .and_then(|i| i.permissions.clone())
        .unwrap_or_else(permissions);
    let events = inst
        .and_then(|i| i.events.clone())
        .unwrap_or_else(|| EVENTS.map(String::from).to_vec());
    let suspended_at = opt_ts(inst.and_then(|i| i.suspended_at));
    let acc = st.known_user(&account).unwrap_or_else(|| User {
        login: account,
        id: 0,
        kind: "User".into(),
    });
    json!({
        "id": id, "account": user(base, &acc), "repository_selection": "selected",
        "access_tokens_url": format!("{base}/app/installations/{id}/access_tokens"),
        "repositories_url": format!("{base}/installation/repositories"),
        "html_url": installation_html(&acc, id), "app_id": st.app_id, "app_slug": st.slug,
        "target_id": acc.id, "target_type": acc.kind, "permissions": granted,
        "events": events,
        "created_at": "2024-01-01T00:00:00Z", "updated_at": "2024-01-01T00:00:00Z", "single_file_name": null,
        "has_multiple_single_files": false, "single_file_paths": [], "suspended_by": null, "suspended_at": suspended_at,
    })
}

/// Where an installation's owner manages it: a person's settings, or the
/// organisation's.
fn installation_html(account: &User, id: u64) -> String {
    if account.kind == "Organization" {
        format!(
            "{HTML}/organizations/{}/settings/installations/{id}",
            account.login
        )
    } else {
        format!("{HTML}/settings/installations/{id}")
    }
}

pub fn check_run(st: &State, base: &str, r: &Repo, c: &CheckRun) -> Value {
    let api = format!("{}/check-runs/{}", repo_api(base, r), c.id);
    let mut app = app(st, base);
    if let Some((id, slug)) = &c.other_app {
        app["id"] = json!(id);
        app["slug"] = json!(slug);
        app["name"] = json!(slug);
        app["node_id"] = json!(node_id("A", *id));
        app["html_url"] = json!(format!("{HTML}/apps/{slug}"));
    }
    // GitHub falls back to the App's homepage when no details_url was given.
    let details_url = c
        .details_url
        .clone()
        .map_or_else(|| app["external_url"].clone(), Value::String);
    let suite = r.suite(&c.head_sha).map_or(c.id + 1, |s| s.id);
    json!({
        "id": c.id, "head_sha": c.head_sha, "node_id": node_id("CR", c.id), "external_id": c.external_id.clone().unwrap_or_default(),
        "url": api, "html_url": format!("{HTML}/{}/runs/{}", r.full_name(), c.id), "details_url": details_url,
        "status": c.status, "conclusion": c.conclusion, "started_at": opt_ts(c.started_at), "completed_at": opt_ts(c.completed_at),
        "output": {"title": c.title, "summary": c.summary, "text": c.text, "annotations_count": c.annotations.len(),
                   "annotations_url": format!("{api}/annotations")},
        "name": c.name, "check_suite": {"id": suite}, "app": app, "pull_requests": [],
    })
}

/// An item of `GET /app/hook/deliveries` (the list omits the URL, request
/// and response that the single-delivery endpoint adds).
pub fn hook_delivery(d: &HookDelivery) -> Value {
    json!({
        "id": d.id,
        "guid": d.guid,
        "delivered_at": ts(d.delivered_at),
        "redelivery": d.redelivery,
        "duration": d.duration,
        "status": d.status,
        "status_code": d.status_code,
        "event": d.event,
        "action": d.action,
        "installation_id": d.installation_id,
        "repository_id": d.repository_id,
        "throttled_at": null,
    })
}

/// `GET /app/hook/deliveries/{delivery_id}`'s shape: the list item plus the
/// `url` and the `request` (headers as sent, signature included, and
/// payload) and `response` (its body; headers are not kept).
pub fn hook_delivery_detail(app_id: u64, d: &HookDelivery) -> Value {
    let body = crate::webhooks::body(&d.payload);
    let headers: serde_json::Map<String, Value> =
        crate::webhooks::headers(app_id, &d.secret, &d.event, &d.guid, &body)
            .into_iter()
            .map(|(k, v)| (k.to_string(), Value::String(v)))
            .collect();
    let mut v = hook_delivery(d);
    v["url"] = json!(d.url);
    v["request"] = json!({"headers": headers, "payload": d.payload});
    v["response"] = json!({"headers": {}, "payload": d.response});
    v
}

/// A pull request review as the REST API answers it (`state` in capitals:
/// `APPROVED`, `CHANGES_REQUESTED`, `COMMENTED`, `DISMISSED`).
pub fn review(st: &State, base: &str, r: &Repo, review: &crate::state::Review) -> Value {
    let pull_api = format!("{}/pulls/{}", repo_api(base, r), review.pull);
    let html = format!(
        "{HTML}/{}/pull/{}#pullrequestreview-{}",
        r.full_name(),
        review.pull,
        review.id
    );
    json!({
        "id": review.id, "node_id": node_id("PRR", review.id), "user": user_by_login(st, base, &review.user),
        "body": review.body, "state": review.state, "html_url": html, "pull_request_url": pull_api,
        "author_association": author_association(st, r, &review.user),
        "_links": {"html": {"href": html}, "pull_request": {"href": pull_api}},
        "submitted_at": ts(review.submitted_at), "commit_id": review.commit_id,
    })
}
