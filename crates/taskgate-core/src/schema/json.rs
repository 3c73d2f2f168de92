//! The tables of [`super::plan`] and [`super::config`] as JSON Schema
//! (draft-07, what yaml-language-server and SchemaStore read best): one
//! `definitions` entry per [`Shape`], `$ref`s between them.

use serde_json::{json, Map, Value};

use super::{Field, Keys, Kind, Shape, SCHEMA_BASE_URL};

/// The JSON Schema of a plan file.
pub fn plan_schema() -> Value {
    document(
        &super::plan::PLAN,
        "plan.schema.json",
        "taskgate plan (.taskgate/stories/*.yml)",
    )
}

/// The JSON Schema of `.github/taskgate.yml`.
pub fn config_schema() -> Value {
    document(
        &super::config::CONFIG,
        "config.schema.json",
        "taskgate repository config (.github/taskgate.yml)",
    )
}

fn document(root: &'static Shape, file: &str, title: &str) -> Value {
    let mut shapes: Vec<&'static Shape> = Vec::new();
    for field in root.fields {
        collect(&field.kind, &mut shapes);
    }
    let definitions: Map<String, Value> = shapes
        .iter()
        .filter(|s| s.name != root.name)
        .map(|s| (s.name.to_owned(), shape(s)))
        .collect();
    let mut doc = Map::new();
    doc.insert(
        "$schema".into(),
        json!("http://json-schema.org/draft-07/schema#"),
    );
    doc.insert("$id".into(), json!(format!("{SCHEMA_BASE_URL}/{file}")));
    doc.insert("title".into(), json!(title));
    if let Value::Object(body) = shape(root) {
        doc.extend(body);
    }
    if !definitions.is_empty() {
        doc.insert("definitions".into(), Value::Object(definitions));
    }
    Value::Object(doc)
}

/// Every shape `kind` reaches, each once, in the order first met.
fn collect(kind: &Kind, out: &mut Vec<&'static Shape>) {
    match kind {
        Kind::Object(s) => {
            if out.iter().any(|o| o.name == s.name) {
                return;
            }
            out.push(s);
            for f in s.fields {
                collect(&f.kind, out);
            }
        }
        Kind::StrList { item, .. } | Kind::List { item, .. } => collect(item, out),
        Kind::Map { value, .. } => collect(value, out),
        Kind::AnyOf(kinds) => kinds.iter().for_each(|k| collect(k, out)),
        Kind::Str
        | Kind::Pattern(_)
        | Kind::Bool
        | Kind::Int(_)
        | Kind::Number
        | Kind::Choice(_)
        | Kind::Null
        | Kind::Time => {}
    }
}

fn shape(s: &Shape) -> Value {
    let properties: Map<String, Value> = s
        .fields
        .iter()
        .map(|f| (f.key.to_owned(), field(f)))
        .collect();
    let required: Vec<&str> = s
        .fields
        .iter()
        .filter(|f| f.required)
        .map(|f| f.key)
        .collect();
    let mut out = json!({
        "type": if s.nullable { json!(["object", "null"]) } else { json!("object") },
        "description": s.description,
        "properties": properties,
        "additionalProperties": false,
    });
    if !required.is_empty() {
        out["required"] = json!(required);
    }
    if !s.one_of.is_empty() {
        let each: Vec<Value> = s
            .one_of
            .iter()
            .map(|k| json!({ "required": [k] }))
            .collect();
        out["oneOf"] = json!(each);
    }
    out
}

/// The schema's text as committed and printed: pretty, one final newline.
pub fn text(schema: &Value) -> String {
    let mut out = serde_json::to_string_pretty(schema).unwrap_or_default();
    out.push('\n');
    out
}

fn field(f: &Field) -> Value {
    let mut out = match kind(&f.kind) {
        // draft-07 ignores a `$ref`'s siblings: wrap it to keep the text.
        r @ Value::Object(_) if is_ref(&r) => json!({ "allOf": [r] }),
        other => other,
    };
    out["description"] = json!(f.description);
    // A bad example is caught by the schema tests, which parse each one.
    let example: Value = serde_json::from_str(f.example).unwrap_or(Value::Null);
    out["examples"] = json!([example]);
    out
}

fn is_ref(v: &Value) -> bool {
    v.as_object().is_some_and(|o| o.contains_key("$ref"))
}

/// Strings: an integer is read as its digits, so it is accepted too.
const TEXT: [&str; 2] = ["string", "integer"];

fn kind(k: &Kind) -> Value {
    match k {
        Kind::Str => json!({ "type": TEXT }),
        Kind::Pattern(p) => json!({ "type": TEXT, "pattern": p }),
        Kind::Bool => json!({ "type": "boolean" }),
        Kind::Int(b) => json!({ "type": "integer", "minimum": b.min, "maximum": b.max }),
        Kind::Number => json!({ "type": "number" }),
        Kind::Choice(words) => json!({ "type": "string", "enum": words }),
        Kind::StrList { item, unique } => {
            let mut list = json!({ "type": "array", "items": kind(item) });
            if *unique {
                list["uniqueItems"] = json!(true);
            }
            json!({ "anyOf": [list, kind(item), { "type": "null" }] })
        }
        Kind::List { item, max_items } => {
            let mut list = json!({ "type": ["array", "null"], "items": kind(item) });
            if let Some(max) = max_items {
                list["maxItems"] = json!(max);
            }
            list
        }
        Kind::Object(s) => json!({ "$ref": format!("#/definitions/{}", s.name) }),
        Kind::Map { keys, value } => {
            let mut map = json!({
                "type": ["object", "null"],
                "additionalProperties": kind(value),
            });
            if let Keys::Of(names) = keys {
                map["propertyNames"] = json!({ "enum": names() });
            }
            map
        }
        Kind::AnyOf(kinds) => json!({ "anyOf": kinds.iter().map(kind).collect::<Vec<_>>() }),
        Kind::Null => json!({ "type": "null" }),
        Kind::Time => json!({ "type": "string", "pattern": super::config::TIME_PATTERN }),
    }
}
