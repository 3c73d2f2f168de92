//! The schemas against the readers: the committed files are the generated
//! ones; every plan and config of `fixtures/`, the templates and the docs
//! passes both; each broken document is refused by both at the same place.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::*;
use crate::config::parse_config;
use crate::plan::{parse_plan, yaml};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn json_of(src: &str) -> Value {
    match yaml::load(src) {
        Ok(Some(root)) => root.to_json(),
        Ok(None) => Value::Null,
        Err(p) => panic!("not YAML: {p:?}\n{src}"),
    }
}

fn validator(schema: &Value) -> jsonschema::Validator {
    jsonschema::draft7::new(schema).expect("the schema compiles")
}

/// Where each schema error is: its instance path, and for an unexpected or
/// badly named key, the key's own path (where the reader puts it).
fn schema_errors(schema: &Value, doc: &Value) -> Vec<String> {
    let v = validator(schema);
    let mut out = Vec::new();
    for e in v.iter_errors(doc) {
        let at = e.instance_path().as_str().to_owned();
        match e.kind() {
            jsonschema::error::ValidationErrorKind::AdditionalProperties { unexpected } => {
                out.extend(unexpected.iter().map(|k| format!("{at}/{k}")))
            }
            jsonschema::error::ValidationErrorKind::PropertyNames { error } => {
                let key = error.instance().as_str().unwrap_or_default().to_owned();
                out.push(format!("{at}/{key}"));
            }
            _ => out.push(at),
        }
    }
    out
}

#[test]
fn the_committed_schemas_are_the_generated_ones() {
    for (name, schema) in [("plan", plan_schema()), ("config", config_schema())] {
        let path = workspace().join(format!("schemas/{name}.schema.json"));
        if std::env::var_os("TASKGATE_WRITE_SCHEMAS").is_some() {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, text(&schema)).unwrap();
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == text(&schema),
            "{} is not the schema the reader's tables give: run `TASKGATE_WRITE_SCHEMAS=1 cargo test -p taskgate-core schema` (or `taskgate schema {name} > schemas/{name}.schema.json`) and commit it",
            path.display()
        );
    }
}

#[test]
fn every_field_has_a_description_and_an_example_its_own_schema_accepts() {
    for doc in [plan_schema(), config_schema()] {
        let definitions = doc["definitions"].clone();
        let mut shapes: Vec<&Value> = vec![&doc];
        shapes.extend(definitions.as_object().unwrap().values());
        let mut seen = 0;
        for shape in shapes {
            for (key, field) in shape["properties"].as_object().unwrap() {
                let text = field["description"].as_str().unwrap_or_default();
                assert!(text.ends_with('.') && text.len() > 10, "{key}: {text:?}");
                let example = &field["examples"][0];
                assert!(!example.is_null(), "{key}: its example is not JSON");
                let mut own = field.clone();
                own["definitions"] = definitions.clone();
                let errors = schema_errors(&own, example);
                assert!(
                    errors.is_empty(),
                    "{key}: example {example} refused at {errors:?}"
                );
                seen += 1;
            }
        }
        assert!(seen > 20, "{seen}");
    }
}

#[test]
fn the_tables_agree_with_the_model() {
    let ops: Vec<&str> = crate::plan::MetricOp::ALL.iter().map(|(s, _)| *s).collect();
    assert_eq!(ops, plan::METRIC_OPERATORS);
    let levels = [
        crate::config::Permission::Read,
        crate::config::Permission::Triage,
        crate::config::Permission::Write,
        crate::config::Permission::Maintain,
        crate::config::Permission::Admin,
    ]
    .map(|p| p.name());
    assert_eq!(levels, config::PERMISSION_LEVELS);
    assert!(is_id("a-b_7") && !is_id("a b") && !is_id(""));
}

/// Plans, configs and task fragments (```yaml blocks) in the docs.
fn doc_blocks() -> Vec<(String, String)> {
    let mut files = vec![workspace().join("README.md")];
    for dir in ["docs", "docs/decisions"] {
        for entry in std::fs::read_dir(workspace().join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "md") {
                files.push(path);
            }
        }
    }
    let mut blocks = Vec::new();
    for path in files {
        let text = read(&path);
        for (i, block) in text.split("```yaml\n").skip(1).enumerate() {
            let body = block.split("```").next().unwrap_or_default();
            // A block showing two files keeps taskgate's.
            let ours = body
                .split("\n# .github/workflows/")
                .next()
                .unwrap_or_default();
            blocks.push((format!("{}#{i}", path.display()), ours.to_owned()));
        }
    }
    blocks
}

#[test]
fn every_plan_and_config_of_the_fixtures_the_templates_and_the_docs_passes() {
    let plans = validator(&plan_schema());
    let configs = validator(&config_schema());
    let mut task = plan_schema();
    task["$ref"] = json!("#/definitions/task");
    let tasks = validator(&task);
    let mut checked = Vec::new();
    let mut check = |name: String, src: &str| {
        let mut doc = json_of(src);
        let keys: Vec<&str> = doc
            .as_object()
            .map_or(vec![], |o| o.keys().map(String::as_str).collect());
        let (which, v, reader) = if keys.contains(&"story") {
            ("plan", &plans, parse_plan(src).1)
        } else if !keys.is_empty() && keys.iter().all(|k| config::CONFIG.field(k).is_some()) {
            ("config", &configs, parse_config(src).1)
        } else if !keys.is_empty() && keys.iter().all(|k| plan::TASK.field(k).is_some()) {
            // A task's keys shown alone (its `acceptance`, say).
            let object = doc.as_object_mut().unwrap();
            object.entry("id").or_insert(json!("shown"));
            ("task", &tasks, vec![])
        } else {
            return;
        };
        assert!(
            reader.is_empty(),
            "{name}: the reader refuses it: {reader:?}"
        );
        let errors: Vec<String> = v
            .iter_errors(&doc)
            .map(|e| format!("{} {e}", e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{name} ({which}): {errors:#?}");
        checked.push(format!("{which} {name}"));
    };
    for dir in ["fixtures/plans", "fixtures/sample-repo/.taskgate/stories"] {
        for entry in std::fs::read_dir(workspace().join(dir)).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            // The broken fixtures: syntax and relations (below, and in
            // `plan::tests`).
            if !name.starts_with("bad-") {
                check(path.display().to_string(), &read(&path));
            }
        }
    }
    for file in [
        "templates/taskgate.yml",
        "fixtures/sample-repo/.github/taskgate.yml",
    ] {
        check(file.into(), &read(&workspace().join(file)));
    }
    check(
        "plan new".into(),
        &crate::plan::starter::starter("A story").text,
    );
    for (name, block) in doc_blocks() {
        check(name, &block);
    }
    let count = |which: &str| checked.iter().filter(|c| c.starts_with(which)).count();
    assert!(
        count("plan") >= 4 && count("config") >= 5 && count("task") >= 1,
        "{checked:#?}"
    );
}

/// Each: the document, where the reader puts its problem, where the
/// schema puts its error (the same field; a list's count and uniqueness
/// are the list's, where the reader names the item).
const BROKEN_PLANS: &[(&str, &str, &str)] = &[
    ("tasks: []\n", "", ""),
    ("story: s\ntasks:\n  - id: a\n    depends: [b]\n", "/tasks/0/depends", "/tasks/0/depends"),
    ("story: s\nsettings: { max_depth: 9 }\n", "/settings/max_depth", "/settings/max_depth"),
    ("story: s\nsettings: { branch_timeout_seconds: 59 }\n", "/settings/branch_timeout_seconds", "/settings/branch_timeout_seconds"),
    ("story: s\ntasks:\n  - id: a\n    review: humane\n", "/tasks/0/review", "/tasks/0/review"),
    ("story: s\ntasks:\n  - id: a\n    requires_testing: maybe\n", "/tasks/0/requires_testing", "/tasks/0/requires_testing"),
    ("story: s\ntasks:\n  - id: 'a b'\n", "/tasks/0/id", "/tasks/0/id"),
    ("story: s\ntasks:\n  - id: a\n    repo: acme\n", "/tasks/0/repo", "/tasks/0/repo"),
    ("story: s\ntasks:\n  - id: a\n    repo: acme/web/x\n", "/tasks/0/repo", "/tasks/0/repo"),
    ("story: s\ntasks:\n  - id: a\n    repo: -acme/web\n", "/tasks/0/repo", "/tasks/0/repo"),
    ("story: s\ntasks:\n  - id: a\n    repo: acme/..\n", "/tasks/0/repo", "/tasks/0/repo"),
    ("story: s\ntasks:\n  - id: a\n    repo: 'acme/we b'\n", "/tasks/0/repo", "/tasks/0/repo"),
    ("story: s\ntasks:\n  - title: no id\n", "/tasks/0", "/tasks/0"),
    ("story: s\ntasks:\n  - id: a\n    max_retries: 11\n", "/tasks/0/max_retries", "/tasks/0/max_retries"),
    ("story: s\ntasks:\n  - id: a\n    depends_on: { x: 1 }\n", "/tasks/0/depends_on", "/tasks/0/depends_on"),
    ("story: s\ntasks:\n  - id: a\n    acceptance:\n      tests: [{ cmd: x, timeout_seconds: 0 }]\n", "/tasks/0/acceptance/tests/0/timeout_seconds", "/tasks/0/acceptance/tests/0"),
    ("story: s\ntasks:\n  - id: a\n    acceptance:\n      tests: [{ timeout_seconds: 5 }]\n", "/tasks/0/acceptance/tests/0", "/tasks/0/acceptance/tests/0"),
    ("story: s\ntasks:\n  - id: a\n    acceptance:\n      tests: [{ cmd: x, gate: 'a/b' }]\n", "/tasks/0/acceptance/tests/0/gate", "/tasks/0/acceptance/tests/0"),
    ("story: s\ntasks:\n  - id: a\n    acceptance:\n      metrics: [{ name: m, operator: '=>', value: 1 }]\n", "/tasks/0/acceptance/metrics/0/operator", "/tasks/0/acceptance/metrics/0/operator"),
    ("story: s\ntasks:\n  - id: a\n    acceptance:\n      metrics: [{ name: m, operator: '>', value: high }]\n", "/tasks/0/acceptance/metrics/0/value", "/tasks/0/acceptance/metrics/0/value"),
    ("story: s\ntasks:\n  - id: a\n    failure_routing: { spec_mismatc: architect }\n", "/tasks/0/failure_routing/spec_mismatc", "/tasks/0/failure_routing/spec_mismatc"),
    ("story: s\ntasks:\n  - id: a\n    acceptance:\n      tests: [{ cmd: x, reports: [/tmp/junit.xml] }]\n", "/tasks/0/acceptance/tests/0/reports/0", "/tasks/0/acceptance/tests/0"),
    ("story: s\ntasks:\n  - id: a\n    acceptance:\n      tests: [{ cmd: x, reports: [../up.xml] }]\n", "/tasks/0/acceptance/tests/0/reports/0", "/tasks/0/acceptance/tests/0"),
    ("story: s\ntasks:\n  - id: a\n    acceptance:\n      required_tests: [t1, t1]\n", "/tasks/0/acceptance/required_tests/1", "/tasks/0/acceptance/required_tests"),
    ("story: s\ntasks:\n  - id: a\n    acceptance:\n      required_tests: ['  ']\n", "/tasks/0/acceptance/required_tests/0", "/tasks/0/acceptance/required_tests"),
    ("story: s\nintegration:\n  - { id: it, after: [a] }\n", "/integration/0", "/integration/0"),
    ("story: s\nintegration:\n  - { id: it, cmd: x, timeout_seconds: 21601 }\n", "/integration/0/timeout_seconds", "/integration/0/timeout_seconds"),
];

const BROKEN_CONFIGS: &[(&str, &str, &str)] = &[
    ("runer: local\n", "/runer", "/runer"),
    ("runner: remote\n", "/runner", "/runner"),
    (
        "limits: { max_concurrent_runs: 65 }\n",
        "/limits/max_concurrent_runs",
        "/limits/max_concurrent_runs",
    ),
    (
        "limits: { max_plan_depth: 0 }\n",
        "/limits/max_plan_depth",
        "/limits/max_plan_depth",
    ),
    ("ship_bisect: thirds\n", "/ship_bisect", "/ship_bisect"),
    (
        "ship_batch_wait: 3601\n",
        "/ship_batch_wait",
        "/ship_batch_wait",
    ),
    ("merge_method: fast\n", "/merge_method", "/merge_method"),
    (
        "roles:\n  coder: { agent: robot }\n",
        "/roles/coder/agent",
        "/roles/coder/agent",
    ),
    (
        "roles:\n  coder: { agent: { mention: claude } }\n",
        "/roles/coder/agent/mention",
        "/roles/coder/agent",
    ),
    (
        "roles:\n  coder: { agent: { label: x, workflow: a.yml } }\n",
        "/roles/coder/agent",
        "/roles/coder/agent",
    ),
    (
        "roles:\n  coder: { agent: { workflow: 'ci/agent.yml' } }\n",
        "/roles/coder/agent/workflow",
        "/roles/coder/agent",
    ),
    (
        "roles:\n  coder: { agent_workflow: agent.txt }\n",
        "/roles/coder/agent_workflow",
        "/roles/coder/agent_workflow",
    ),
    (
        "roles:\n  coder: { asignees: [a] }\n",
        "/roles/coder/asignees",
        "/roles/coder/asignees",
    ),
    (
        "routing: { test_failur: coder }\n",
        "/routing/test_failur",
        "/routing/test_failur",
    ),
    (
        "commands:\n  permissions: { shipp: maintain }\n",
        "/commands/permissions/shipp",
        "/commands/permissions/shipp",
    ),
    (
        "commands:\n  permissions: { ship: root }\n",
        "/commands/permissions/ship",
        "/commands/permissions/ship",
    ),
    (
        "freeze_windows:\n  - { days: [fri], from: '25:00', to: '24:00' }\n",
        "/freeze_windows/0/from",
        "/freeze_windows/0/from",
    ),
    (
        "freeze_windows:\n  - { days: [fri], from: '16:00' }\n",
        "/freeze_windows/0",
        "/freeze_windows/0",
    ),
    (
        "freeze_windows:\n  - { days: [fryday], from: '16:00', to: '18:00' }\n",
        "/freeze_windows/0/days/0",
        "/freeze_windows/0/days",
    ),
    (
        "flaky: { quarantine_days: 0 }\n",
        "/flaky/quarantine_days",
        "/flaky/quarantine_days",
    ),
    ("ship_train: yes please\n", "/ship_train", "/ship_train"),
];

fn assert_refused(
    what: &str,
    cases: &[(&str, &str, &str)],
    schema: &Value,
    read: impl Fn(&str) -> Vec<crate::plan::Problem>,
) {
    for (src, reader_at, schema_at) in cases {
        let problems = read(src);
        let pointers: Vec<&str> = problems
            .iter()
            .filter_map(|p| p.pointer.as_deref())
            .collect();
        assert!(
            pointers.contains(reader_at),
            "{what} {src:?}: the reader names {pointers:?}, not {reader_at:?}: {problems:#?}"
        );
        let errors = schema_errors(schema, &json_of(src));
        assert!(
            errors.iter().any(|e| e == schema_at),
            "{what} {src:?}: the schema names {errors:?}, not {schema_at:?}"
        );
    }
}

#[test]
fn each_broken_plan_is_refused_by_the_schema_and_the_reader_at_the_same_field() {
    assert_refused("plan", BROKEN_PLANS, &plan_schema(), |src| {
        parse_plan(src).1
    });
    // A count is checked after reading: 101 top-level tasks.
    let many: String = (0..101)
        .map(|i| format!("  - {{ id: t{i}, requires_testing: false }}\n"))
        .collect();
    let src = format!("story: s\ntasks:\n{many}");
    let report = crate::plan::check_plan("p.yml", &src, &Default::default(), &crate::plan::NoFiles);
    assert_eq!(report.problems[0].pointer.as_deref(), Some("/tasks/100/id"));
    assert_eq!(schema_errors(&plan_schema(), &json_of(&src)), ["/tasks"]);
}

#[test]
fn each_broken_config_is_refused_by_the_schema_and_the_reader_at_the_same_field() {
    assert_refused("config", BROKEN_CONFIGS, &config_schema(), |src| {
        parse_config(src).1
    });
}
