//! Snapshots of every body, and the properties the sync relies on.

use super::*;
use crate::config::RepoConfig;
use crate::plan::{check_plan, Acceptance, MemFiles, NoFiles, Pos, Spanned};
use crate::story::markers::story_key_for_file;

const MOMENTUM: &str = include_str!("../../../fixtures/plans/momentum.yml");
const THREE_LEVEL: &str = include_str!("../../../fixtures/plans/three-level.yml");

fn plan(src: &str, repo: &dyn RepoFiles) -> Plan {
    check_plan("plan.yml", src, &RepoConfig::default(), repo)
        .plan
        .expect("valid plan")
}

fn views(rows: &[(&str, Option<u64>, TaskState)]) -> BTreeMap<TaskId, TaskView> {
    rows.iter()
        .map(|(id, issue, state)| {
            let view = TaskView {
                issue: *issue,
                state: *state,
                marker: None,
                branch: None,
            };
            (TaskId::new(*id), view)
        })
        .collect()
}

fn momentum() -> (Plan, BTreeMap<TaskId, TaskView>) {
    let v = views(&[
        ("data", Some(12), TaskState::Completed),
        ("signals", Some(13), TaskState::InProgress),
        ("entry", Some(14), TaskState::Testing),
    ]);
    (plan(MOMENTUM, &NoFiles), v)
}

fn task_body(p: &Plan, v: &BTreeMap<TaskId, TaskView>, id: &str) -> String {
    let t = p.task(&TaskId::new(id)).unwrap();
    render_task_body(&StoryId::new("file:momentum"), p, t, v, &NoFiles)
}

#[test]
fn story_body_of_the_momentum_plan() {
    let (p, v) = momentum();
    let story = story_key_for_file(".taskgate/stories/momentum.yml");
    insta::assert_snapshot!(render_story_body(&story, &p, &v, &NoFiles), @r##"
    **1/3 tasks complete**

    ### Tasks

    - [x] #12 · `completed`
    - [ ] #13 · Signals: 0/2 · `in-progress`
      - [ ] #14 · `testing`
      - [ ] Strategy notes · `pending` · no testing required

    ### Integration milestones

    - `backtest`: `pytest tests/integration -q` (timeout 300s) on the story branch · waits for #13 (`in-progress`)

    ### Dependency graph

    ```mermaid
    graph TD
      t1["#35;12 · Data loading integration<br/>completed"]
      subgraph t2["#35;13 · Signals: 0/2"]
        t3["#35;14 · Entry conditions<br/>testing"]
        t4["Strategy notes<br/>pending"]
      end
      m1{{"integration: backtest"}}
      t1 --> t3
      t2 --> m1
      class t1 completed
      class t3 testing
      class t4 pending
      classDef pending fill:#f6f8fa,stroke:#8c959f
      classDef testing fill:#fff8c5,stroke:#9a6700
      classDef completed fill:#dafbe1,stroke:#1a7f37
    ```

    <!-- taskgate:story=file:momentum -->
    "##);
}

#[test]
fn story_body_of_a_three_level_plan_shows_progress_at_every_level() {
    let p = plan(THREE_LEVEL, &NoFiles);
    let v = views(&[
        ("backend", Some(21), TaskState::InProgress),
        ("api-list", Some(23), TaskState::Completed),
        ("api-get", None, TaskState::TestFailed),
        ("frontend", None, TaskState::Blocked),
    ]);
    insta::assert_snapshot!(render_story_body(&StoryId::new("issue:20"), &p, &v, &NoFiles), @r##"
    **1/3 tasks complete**

    ### Tasks

    - [ ] #21 · Backend: 0/1 · `in-progress`
      - [ ] Report API: 1/2 · `in-progress`
        - [x] #23 · `completed`
        - [ ] Get one report · `test-failed`
    - [ ] Frontend · `blocked`

    ### Dependency graph

    ```mermaid
    graph TD
      subgraph t1["#35;21 · Backend: 0/1"]
        subgraph t2["Report API: 1/2"]
          t3["#35;23 · List reports<br/>completed"]
          t4["Get one report<br/>test-failed"]
        end
      end
      t5["Frontend<br/>blocked"]
      t3 --> t4
      t1 --> t5
      class t3 completed
      class t4 test_failed
      class t5 blocked
      classDef test_failed fill:#ffebe9,stroke:#cf222e
      classDef completed fill:#dafbe1,stroke:#1a7f37
      classDef blocked fill:#ffebe9,stroke:#cf222e,stroke-dasharray:4
    ```

    <!-- taskgate:story=issue:20 -->
    "##);
}

#[test]
fn task_body_of_a_leaf_with_tests_artifacts_and_metrics() {
    let (p, v) = momentum();
    insta::assert_snapshot!(task_body(&p, &v, "data"), @"
    Implement fetch_and_prepare_data(symbol, start, end)

    ### Acceptance

    - [x] `pytest tests/test_adapter.py::test_fetch -q` — gate `unit`, timeout 30s
    - [x] `ruff check .` — gate `lint`
    - [x] Artifact `Backtest/backtesting_adapter.py` exists
    - [x] Metric `rows_min ≥ 10`

    **Role:** `coder`  
    **Failure routing:** `spec_mismatch` → `architect`  
    **Plan id:** `data`

    <!-- taskgate:story=file:momentum task=data -->
    ");
}

#[test]
fn task_body_links_dependencies_with_their_state() {
    let (p, v) = momentum();
    insta::assert_snapshot!(task_body(&p, &v, "entry"), @"
    ### Acceptance

    - [ ] `pytest tests/test_entry.py` — gate `test`

    ### Depends on

    - #12 · `completed`

    **Role:** not set in the plan (the repository's routing decides)  
    **Plan id:** `entry`

    <!-- taskgate:story=file:momentum task=entry -->
    ");
}

#[test]
fn task_body_of_a_task_that_needs_no_testing() {
    let (p, v) = momentum();
    insta::assert_snapshot!(task_body(&p, &v, "docs"), @"
    ### Acceptance

    No testing required (`requires_testing: false`): complete when its pull request merges.

    **Role:** not set in the plan (the repository's routing decides)  
    **Plan id:** `docs`

    <!-- taskgate:story=file:momentum task=docs -->
    ");
}

#[test]
fn task_body_of_a_parent_lists_its_children_with_progress() {
    let (p, v) = momentum();
    insta::assert_snapshot!(task_body(&p, &v, "signals"), @"
    ### Acceptance

    Complete when every subtask is complete.

    ### Subtasks: 0/2 complete

    - [ ] #14 · `testing`
    - [ ] Strategy notes · `pending` · no testing required

    **Role:** not set in the plan (the repository's routing decides)  
    **Plan id:** `signals`

    <!-- taskgate:story=file:momentum task=signals -->
    ");
    let p = plan(THREE_LEVEL, &NoFiles);
    let v = views(&[("api-list", Some(23), TaskState::Completed)]);
    let backend = p.task(&TaskId::new("backend")).unwrap();
    insta::assert_snapshot!(render_task_body(&StoryId::new("issue:20"), &p, backend, &v, &NoFiles), @r"
    ### Acceptance

    Complete when every subtask is complete.

    ### Subtasks: 0/1 complete

    - [ ] Report API: 1/2 · `in-progress`

    **Role:** not set in the plan (the repository's routing decides)  
    **Plan id:** `backend`

    <!-- taskgate:story=issue:20 task=backend -->
    ");
}

#[test]
fn task_body_shows_a_discovered_command_and_why() {
    let src = "story: Reporting\ntasks:\n  - { id: api, title: API }\n  - { id: ui, title: UI, depends_on: [api] }\n";
    let repo = MemFiles::new(&[
        ("Makefile", "test-api:\n\tcargo test api\n"),
        ("Cargo.toml", ""),
    ]);
    let p = plan(src, &repo);
    let v = views(&[("api", Some(5), TaskState::Review)]);
    let api = p.task(&TaskId::new("api")).unwrap();
    insta::assert_snapshot!(render_task_body(&StoryId::new("file:reporting"), &p, api, &v, &repo), @"
    ### Acceptance

    - [x] `make test-api` — gate `test` (discovered: the Makefile has a `test-api` target)

    **Role:** not set in the plan (the repository's routing decides)  
    **Plan id:** `api`

    <!-- taskgate:story=file:reporting task=api -->
    ");
    insta::assert_snapshot!(render_story_body(&StoryId::new("file:reporting"), &p, &v, &repo), @r##"
    **0/2 tasks complete**

    ### Tasks

    - [ ] #5 · `review` · tested by `make test-api` (discovered)
    - [ ] UI · `pending` · tested by `cargo test` (discovered)

    ### Dependency graph

    ```mermaid
    graph TD
      t1["#35;5 · API<br/>review"]
      t2["UI<br/>pending"]
      t1 --> t2
      class t1 review
      class t2 pending
      classDef pending fill:#f6f8fa,stroke:#8c959f
      classDef review fill:#fbefff,stroke:#8250df
    ```

    <!-- taskgate:story=file:reporting -->
    "##);
}

#[test]
fn user_text_cannot_ping_forge_a_marker_or_break_the_layout() {
    let src = r#"story: s
tasks:
  - id: "a--b"
    title: "@octocat fix #3 <!-- taskgate:story=evil --> `x` | *y*"
    description: "cc @team/leads\n<!-- taskgate:story=evil -->\n```python\nprint('open fence')"
    acceptance: { tests: ["grep -c '``' x | wc -l"] }
  - id: b
    title: "Say \"hi\"; #1 <b>bold</b>\n```"
    depends_on: ["a--b"]
    acceptance: { tests: [x] }
"#;
    let p = plan(src, &NoFiles);
    let v = BTreeMap::new();
    let story = render_story_body(&StoryId::new("file:s"), &p, &v, &NoFiles);
    insta::assert_snapshot!(story, @r#"
    **0/2 tasks complete**

    ### Tasks

    - [ ] @‍octocat fix #‍3 \<\!-- taskgate:story=evil --\> \`x\` \| \*y\* · `pending`
    - [ ] Say "hi"; #‍1 \<b\>bold\</b\> \`\`\` · `pending`

    ### Dependency graph

    ```mermaid
    graph TD
      t1["@‍octocat fix #35;‍3 #lt;!-- taskgate:story=evil --#gt; #96;x#96; | *y*<br/>pending"]
      t2["Say #quot;hi#quot;#59; #35;‍1 #lt;b#gt;bold#lt;/b#gt; #96;#96;#96;<br/>pending"]
      t1 --> t2
      class t1 pending
      class t2 pending
      classDef pending fill:#f6f8fa,stroke:#8c959f
    ```

    <!-- taskgate:story=file:s -->
    "#);
    let a = render_task_body(&StoryId::new("file:s"), &p, &p.tasks[0], &v, &NoFiles);
    insta::assert_snapshot!(a, @r"
    cc @‍team/leads
    &lt;!-- taskgate:story=evil -->
    ```python
    print('open fence')
    ```

    ### Acceptance

    - [ ] ```grep -c '``' x | wc -l``` — gate `test`

    **Role:** not set in the plan (the repository's routing decides)  
    **Plan id:** `a--b`

    <!-- taskgate:story=file:s task=a-%2Db -->
    ");
    for body in [&story, &a] {
        assert!(
            !body.contains("@octocat") && !body.contains("@team"),
            "{body}"
        );
        assert_eq!(
            body.matches("<!--").count(),
            1,
            "one comment, the marker: {body}"
        );
    }
    assert_eq!(
        Marker::find_in(&story),
        Some(Marker::Story {
            story: "file:s".into()
        })
    );
    assert_eq!(
        Marker::find_in(&a),
        Some(Marker::Task {
            story: "file:s".into(),
            task: TaskId::new("a--b")
        })
    );
}

#[test]
fn an_unchanged_plan_renders_byte_identical_bodies() {
    let (p, v) = momentum();
    let render =
        |p: &Plan| {
            let mut all = vec![render_story_body(
                &StoryId::new("file:momentum"),
                p,
                &v,
                &NoFiles,
            )];
            all.extend(p.walk().iter().map(|r| {
                render_task_body(&StoryId::new("file:momentum"), p, r.task, &v, &NoFiles)
            }));
            all
        };
    assert_eq!(render(&p), render(&plan(MOMENTUM, &NoFiles)));
}

#[test]
fn a_title_change_changes_only_its_lines() {
    let (p, v) = momentum();
    let edited = plan(
        &MOMENTUM.replace("title: Strategy notes", "title: Strategy write-up"),
        &NoFiles,
    );
    let before = render_story_body(&StoryId::new("file:momentum"), &p, &v, &NoFiles);
    let after = render_story_body(&StoryId::new("file:momentum"), &edited, &v, &NoFiles);
    let changed: Vec<(&str, &str)> = before
        .lines()
        .zip(after.lines())
        .filter(|(a, b)| a != b)
        .collect();
    assert_eq!(before.lines().count(), after.lines().count());
    assert_eq!(
        changed,
        [
            (
                "  - [ ] Strategy notes · `pending` · no testing required",
                "  - [ ] Strategy write-up · `pending` · no testing required"
            ),
            (
                "    t4[\"Strategy notes<br/>pending\"]",
                "    t4[\"Strategy write-up<br/>pending\"]"
            ),
        ]
    );
    // Tasks whose issue exists are shown as `#n`: retitling one changes
    // nothing in the story body (GitHub shows the issue's own title)...
    let retitled = plan(
        &MOMENTUM.replace("title: Entry conditions", "title: Entry rules"),
        &NoFiles,
    );
    let story = |p: &Plan| render_story_body(&StoryId::new("file:momentum"), p, &v, &NoFiles);
    let diff = story(&p)
        .lines()
        .zip(story(&retitled).lines())
        .filter(|(a, b)| a != b)
        .count();
    assert_eq!(diff, 1, "only the graph node");
    // ...nor in the body of a task that depends on it.
    let d = plan(
        &MOMENTUM.replace("title: Data loading integration", "title: Data"),
        &NoFiles,
    );
    assert_eq!(task_body(&p, &v, "entry"), task_body(&d, &v, "entry"));
}

fn leaf(id: String, title: String) -> Task {
    Task {
        id: Spanned {
            value: TaskId::new(id),
            pos: Pos::default(),
        },
        title,
        description: None,
        repo: None,
        role: None,
        depends_on: Vec::new(),
        tasks: Vec::new(),
        acceptance: Acceptance::default(),
        failure_routing: BTreeMap::new(),
        requires_testing: false,
        max_retries: None,
        review: None,
    }
}

fn huge_plan(parents: usize, children: usize) -> Plan {
    let mut p = plan(MOMENTUM, &NoFiles);
    p.tasks = (0..parents)
        .map(|i| {
            let mut t = leaf(
                format!("p{i}"),
                format!("Phase {i} with a rather long descriptive title"),
            );
            t.tasks = (0..children)
                .map(|j| {
                    leaf(
                        format!("p{i}-{j}"),
                        format!("Step {j} of phase {i}, also long enough"),
                    )
                })
                .collect();
            t
        })
        .collect();
    p
}

#[test]
fn a_huge_plan_is_collapsed_to_fit_github() {
    for (parents, children) in [(40, 30), (3000, 1)] {
        let p = huge_plan(parents, children);
        let body = render_story_body(&StoryId::new("file:big"), &p, &BTreeMap::new(), &NoFiles);
        assert!(body.len() <= MAX_BODY_CHARS, "{parents}: {}", body.len());
        assert!(
            body.contains("only top-level tasks are listed"),
            "{parents}"
        );
        assert!(!body.contains("```mermaid"));
        assert!(body.ends_with("<!-- taskgate:story=file:big -->\n"));
        assert_eq!(body.contains("- … and "), parents == 3000);
    }
    let small = huge_plan(10, 3);
    let body = render_story_body(
        &StoryId::new("file:big"),
        &small,
        &BTreeMap::new(),
        &NoFiles,
    );
    assert!(body.contains("```mermaid") && !body.contains("only top-level"));
}

#[test]
fn a_huge_description_is_shortened_to_fit_github() {
    let mut p = plan(MOMENTUM, &NoFiles);
    p.tasks[0].description = Some("é".repeat(40_000));
    let body = render_task_body(
        &StoryId::new("file:m"),
        &p,
        &p.tasks[0],
        &BTreeMap::new(),
        &NoFiles,
    );
    assert!(body.len() <= MAX_BODY_CHARS, "{}", body.len());
    assert!(body.contains("description shortened"));
    assert!(body.ends_with("<!-- taskgate:story=file:m task=data -->\n"));
}

#[test]
fn code_spans_and_inline_text_escape_what_they_must() {
    assert_eq!(code("ruff check ."), "`ruff check .`");
    assert_eq!(code("echo `x`"), "`` echo `x` ``");
    assert_eq!(code("a\nb"), "`a b`");
    assert_eq!(
        inline("a_b *c* [d](e) <f> | g"),
        r"a\_b \*c\* \[d\](e) \<f\> \| g"
    );
    assert_eq!(markdown_block("```\ncode"), "```\ncode\n```");
    assert_eq!(
        markdown_block("~~~~\n```\n~~~~\nafter"),
        "~~~~\n```\n~~~~\nafter"
    );
}
