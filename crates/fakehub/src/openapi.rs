//! The OpenAPI contract: GitHub's own description of the operations taskgate
//! may call (`fixtures/openapi/github-subset.json`, `$ref`s inlined, 3.0
//! dialect), and a small validator for request bodies — also used, with
//! local `$ref` resolution ([`validate_in`]), for the webhook payloads
//! fakehub sends (`fixtures/openapi/webhooks-subset.json`, 3.1, see `echo`).
//!
//! The validator knows the keywords that occur in that subset: type (integer
//! is not number), properties, required, enum, items, oneOf, anyOf, allOf,
//! additionalProperties, nullable, min/maxLength, minimum/maximum,
//! min/maxItems, maxProperties. `oneOf` is checked as "at least one": GitHub's
//! alternatives overlap (an open object matches several), so exactly-one would
//! reject bodies GitHub accepts. format/pattern/description are ignored.

use serde_json::Value;

use crate::routes::match_template;

const SUBSET: &str = include_str!("../fixtures/openapi/github-subset.json");

pub struct OpenApi {
    paths: serde_json::Map<String, Value>,
}

impl OpenApi {
    pub fn load() -> OpenApi {
        let doc: Value = serde_json::from_str(SUBSET).expect("github-subset.json is JSON");
        let paths = doc
            .get("paths")
            .and_then(Value::as_object)
            .cloned()
            .expect("github-subset.json has paths");
        OpenApi { paths }
    }

    fn operation(&self, method: &str, template: &str) -> Option<&Value> {
        self.paths.get(template)?.get(method.to_lowercase())
    }

    pub fn has(&self, method: &str, template: &str) -> bool {
        self.operation(method, template).is_some()
    }

    /// The most specific template of the subset matching a concrete path.
    pub fn find_template(&self, method: &str, path: &str) -> Option<String> {
        self.paths
            .iter()
            .filter(|(_, ops)| ops.get(method.to_lowercase()).is_some())
            .filter_map(|(t, _)| match_template(t, path).map(|(_, lits)| (t, lits)))
            .max_by_key(|(_, lits)| *lits)
            .map(|(t, _)| t.clone())
    }

    /// Validates a JSON request body against the operation's schema.
    pub fn validate_body(
        &self,
        method: &str,
        template: &str,
        body: &Value,
    ) -> Result<(), Vec<String>> {
        let Some(op) = self.operation(method, template) else {
            return Ok(());
        };
        let Some(rb) = op.get("requestBody") else {
            return Ok(());
        };
        let Some(schema) = rb.pointer("/content/application~1json/schema") else {
            return Ok(());
        };
        if body.is_null() {
            return if rb.get("required").and_then(Value::as_bool).unwrap_or(false) {
                Err(vec!["body: a request body is required".into()])
            } else {
                Ok(())
            };
        }
        let mut errors = Vec::new();
        validate(schema, body, "body", &mut errors);
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn type_matches(expected: &str, v: &Value) -> bool {
    let actual = type_name(v);
    actual == expected || (expected == "number" && actual == "integer")
}

/// Appends every problem of `v` against `schema` to `errors`, with a JSON path.
pub fn validate(schema: &Value, v: &Value, at: &str, errors: &mut Vec<String>) {
    validate_in(&Value::Null, schema, v, at, errors)
}

/// [`validate`] for a schema whose local `$ref`s (`#/components/...`)
/// point into `root`, as in the webhook subset; an unresolvable `$ref`
/// accepts anything.
pub fn validate_in(root: &Value, schema: &Value, v: &Value, at: &str, errors: &mut Vec<String>) {
    let Some(s) = schema.as_object() else { return };
    if let Some(target) = s.get("$ref").and_then(Value::as_str) {
        if let Some(resolved) = target.strip_prefix('#').and_then(|p| root.pointer(p)) {
            validate_in(root, resolved, v, at, errors);
        }
        return;
    }
    if v.is_null() && s.get("nullable").and_then(Value::as_bool) == Some(true) {
        return;
    }
    validate_combinators(root, s, v, at, errors);
    // A value of the wrong type has no length, range or items worth checking.
    if !validate_type(s, v, at, errors) {
        return;
    }
    if let Some(options) = s.get("enum").and_then(Value::as_array) {
        if !options.contains(v) {
            errors.push(format!(
                "{at}: {v} is not one of {}",
                Value::Array(options.clone())
            ));
        }
    }
    match v {
        Value::String(text) => validate_string(s, text, at, errors),
        Value::Number(n) => validate_number(s, n, at, errors),
        Value::Array(items) => validate_array(root, s, items, at, errors),
        Value::Object(map) => validate_object(root, s, map, at, errors),
        _ => {}
    }
}

/// `allOf` (every one), `oneOf` and `anyOf` (at least one, see the header).
fn validate_combinators(
    root: &Value,
    s: &serde_json::Map<String, Value>,
    v: &Value,
    at: &str,
    errors: &mut Vec<String>,
) {
    if let Some(all) = s.get("allOf").and_then(Value::as_array) {
        for sub in all {
            validate_in(root, sub, v, at, errors);
        }
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(alts) = s.get(key).and_then(Value::as_array) {
            let mut first = Vec::new();
            let ok = alts.iter().enumerate().any(|(i, sub)| {
                let mut e = Vec::new();
                validate_in(root, sub, v, at, &mut e);
                if i == 0 {
                    first = e.clone();
                }
                e.is_empty()
            });
            if !ok {
                let detail = first.first().cloned().unwrap_or_default();
                errors.push(format!(
                    "{at}: matches none of the {key} alternatives (first: {detail})"
                ));
            }
        }
    }
}

/// `type`, one name or a list of them; false (with the error recorded)
/// when `v` is of none of them.
fn validate_type(
    s: &serde_json::Map<String, Value>,
    v: &Value,
    at: &str,
    errors: &mut Vec<String>,
) -> bool {
    match s.get("type") {
        Some(Value::String(t)) if !type_matches(t, v) => {
            errors.push(format!("{at}: expected {t}, got {}", type_name(v)));
            false
        }
        Some(Value::Array(ts))
            if !ts
                .iter()
                .filter_map(Value::as_str)
                .any(|t| type_matches(t, v)) =>
        {
            errors.push(format!(
                "{at}: expected one of {ts:?}, got {}",
                type_name(v)
            ));
            false
        }
        _ => true,
    }
}

/// `maxLength` and `minLength`, in characters.
fn validate_string(
    s: &serde_json::Map<String, Value>,
    text: &str,
    at: &str,
    errors: &mut Vec<String>,
) {
    let len = text.chars().count() as u64;
    if let Some(max) = s.get("maxLength").and_then(Value::as_u64) {
        if len > max {
            errors.push(format!("{at}: length {len} exceeds maxLength {max}"));
        }
    }
    if let Some(min) = s.get("minLength").and_then(Value::as_u64) {
        if len < min {
            errors.push(format!("{at}: length {len} is below minLength {min}"));
        }
    }
}

/// `maximum` and `minimum`.
fn validate_number(
    s: &serde_json::Map<String, Value>,
    n: &serde_json::Number,
    at: &str,
    errors: &mut Vec<String>,
) {
    let x = n.as_f64().unwrap_or(0.0);
    if let Some(max) = s.get("maximum").and_then(Value::as_f64) {
        if x > max {
            errors.push(format!("{at}: {x} exceeds maximum {max}"));
        }
    }
    if let Some(min) = s.get("minimum").and_then(Value::as_f64) {
        if x < min {
            errors.push(format!("{at}: {x} is below minimum {min}"));
        }
    }
}

/// `maxItems`, `minItems`, and `items` for each element.
fn validate_array(
    root: &Value,
    s: &serde_json::Map<String, Value>,
    items: &[Value],
    at: &str,
    errors: &mut Vec<String>,
) {
    if let Some(max) = s.get("maxItems").and_then(Value::as_u64) {
        if items.len() as u64 > max {
            errors.push(format!("{at}: {} items exceed maxItems {max}", items.len()));
        }
    }
    if let Some(min) = s.get("minItems").and_then(Value::as_u64) {
        if (items.len() as u64) < min {
            errors.push(format!(
                "{at}: {} items are below minItems {min}",
                items.len()
            ));
        }
    }
    if let Some(item_schema) = s.get("items") {
        for (i, item) in items.iter().enumerate() {
            validate_in(root, item_schema, item, &format!("{at}[{i}]"), errors);
        }
    }
}

fn validate_object(
    root: &Value,
    s: &serde_json::Map<String, Value>,
    map: &serde_json::Map<String, Value>,
    at: &str,
    errors: &mut Vec<String>,
) {
    if let Some(required) = s.get("required").and_then(Value::as_array) {
        for name in required.iter().filter_map(Value::as_str) {
            if !map.contains_key(name) {
                errors.push(format!("{at}.{name}: required property is missing"));
            }
        }
    }
    if let Some(max) = s.get("maxProperties").and_then(Value::as_u64) {
        if map.len() as u64 > max {
            errors.push(format!(
                "{at}: {} properties exceed maxProperties {max}",
                map.len()
            ));
        }
    }
    let props = s.get("properties").and_then(Value::as_object);
    for (name, value) in map {
        let path = format!("{at}.{name}");
        match props.and_then(|p| p.get(name)) {
            Some(sub) => validate_in(root, sub, value, &path, errors),
            None => match s.get("additionalProperties") {
                Some(Value::Bool(false)) => errors.push(format!("{path}: property is not allowed")),
                Some(sub @ Value::Object(_)) => validate_in(root, sub, value, &path, errors),
                _ => {}
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn errs(schema: Value, v: Value) -> Vec<String> {
        let mut e = Vec::new();
        validate(&schema, &v, "body", &mut e);
        e
    }

    #[test]
    fn integer_is_not_number_but_number_accepts_integer() {
        assert!(errs(json!({"type": "number"}), json!(3)).is_empty());
        assert_eq!(
            errs(json!({"type": "integer"}), json!(3.5)),
            ["body: expected integer, got number"]
        );
    }

    #[test]
    fn required_properties_and_nested_paths_are_reported() {
        let s = json!({"type": "object", "required": ["title"], "properties": {"labels": {"type": "array", "items": {"type": "string"}}}});
        assert_eq!(
            errs(s, json!({"labels": ["a", 2]})),
            [
                "body.title: required property is missing",
                "body.labels[1]: expected string, got integer"
            ]
        );
    }

    #[test]
    fn nullable_enum_and_lengths() {
        let s =
            json!({"type": "string", "nullable": true, "enum": ["open", "closed"], "maxLength": 4});
        assert!(errs(s.clone(), Value::Null).is_empty());
        assert_eq!(errs(s.clone(), json!("open")), Vec::<String>::new());
        assert_eq!(errs(s, json!("closed")).len(), 1);
        assert_eq!(
            errs(json!({"type": "string"}), Value::Null),
            ["body: expected string, got null"]
        );
    }

    #[test]
    fn one_of_any_of_all_of() {
        let title = json!({"oneOf": [{"type": "string"}, {"type": "integer"}]});
        assert!(errs(title.clone(), json!("x")).is_empty());
        assert!(errs(title.clone(), json!(7)).is_empty());
        assert_eq!(errs(title, json!(true)).len(), 1);
        assert!(errs(json!({"anyOf": [{"type": "string"}]}), json!("s")).is_empty());
        let all = json!({"allOf": [{"type": "object", "required": ["a"]}, {"type": "object", "required": ["b"]}]});
        assert_eq!(
            errs(all, json!({"a": 1})),
            ["body.b: required property is missing"]
        );
    }

    #[test]
    fn additional_properties_items_bounds_and_numbers() {
        let s = json!({"type": "object", "properties": {"a": {"type": "integer", "minimum": 1, "maximum": 3}}, "additionalProperties": false});
        assert_eq!(
            errs(s.clone(), json!({"a": 5})),
            ["body.a: 5 exceeds maximum 3"]
        );
        assert_eq!(
            errs(s, json!({"b": 1})),
            ["body.b: property is not allowed"]
        );
        let typed = json!({"type": "object", "additionalProperties": {"type": "string"}});
        assert_eq!(
            errs(typed, json!({"k": 1})),
            ["body.k: expected string, got integer"]
        );
        let arr = json!({"type": "array", "minItems": 1, "maxItems": 2});
        assert_eq!(errs(arr.clone(), json!([])).len(), 1);
        assert_eq!(errs(arr, json!([1, 2, 3])).len(), 1);
    }

    #[test]
    fn the_subset_loads_and_checks_create_issue() {
        let api = OpenApi::load();
        assert!(api.has("POST", "/repos/{owner}/{repo}/issues"));
        assert!(api
            .validate_body(
                "POST",
                "/repos/{owner}/{repo}/issues",
                &json!({"title": "t", "labels": ["x"]})
            )
            .is_ok());
        let e = api
            .validate_body(
                "POST",
                "/repos/{owner}/{repo}/issues",
                &json!({"body": "no title"}),
            )
            .unwrap_err();
        assert_eq!(e, ["body.title: required property is missing"]);
        assert_eq!(
            api.find_template("GET", "/repos/o/r/git/ref/heads/feature/x")
                .as_deref(),
            Some("/repos/{owner}/{repo}/git/ref/{ref}")
        );
    }
}
