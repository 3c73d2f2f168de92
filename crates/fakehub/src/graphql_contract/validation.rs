//! The validation GitHub runs before executing a document: fields,
//! arguments, variables and input values checked against the schema,
//! with graphql-ruby's messages and `extensions.code`.
//!
//! Owns: [`validate`]. Must not: execute anything (`routes::graphql`
//! does) or parse (the parser does).

use super::*;

/// Everything GitHub checks before executing: the document against the
/// schema, then the variables against their definitions. An empty answer
/// means the operation may run.
pub(crate) fn validate(
    schema: &Schema,
    op: &Operation,
    variables: &Map<String, Value>,
) -> Vec<GqlError> {
    let mut check = Check {
        schema,
        op,
        used: BTreeSet::new(),
        errors: Vec::new(),
    };
    check.var_defs();
    let root = schema.root(op.kind).to_string();
    let mut path = vec![op.path_root()];
    check.selection(&root, &op.selection, &mut path);
    check.unused_vars();
    if check.errors.is_empty() {
        // As graphql-ruby: variables are coerced only for a valid document.
        check.variable_values(variables);
    }
    check.errors
}

pub(super) struct Check<'a> {
    schema: &'a Schema,
    op: &'a Operation,
    used: BTreeSet<String>,
    errors: Vec<GqlError>,
}

/// Where a value sits, for messages: `Field 'x'` or `InputObject 'T'`.
pub(super) struct Site<'s> {
    owner: String,
    name: &'s str,
    /// The slot's declared type, which messages quote whole.
    ty: &'s TypeRef,
    pos: Pos,
    /// The location has a default, so a nullable variable may fill a
    /// non-null slot (GraphQL's "IsVariableUsageAllowed").
    has_default: bool,
}

impl Check<'_> {
    fn push(&mut self, e: GqlError) {
        self.errors.push(e);
    }

    fn var_defs(&mut self) {
        let op = self.op;
        let mut seen = BTreeSet::new();
        for v in &op.vars {
            if !seen.insert(v.name.as_str()) {
                let msg = format!("There can be only one variable named \"{}\"", v.name);
                self.push(GqlError::new(msg, Some(v.pos)).code("variableNotUnique"));
            }
            let named = v.ty.named();
            match self.schema.types.get(named) {
                Some(t) if t.kind == Kind::InputObject && t.input_fields.is_none() => {
                    let msg = format!(
                        "{named} (on ${}) is outside the contract subset ({SUBSET_PATH})",
                        v.name
                    );
                    self.push(GqlError::new(msg, Some(v.pos)).code("outsideContractSubset"));
                }
                Some(t) if matches!(t.kind, Kind::Scalar | Kind::Enum | Kind::InputObject) => {}
                _ => {
                    let msg = format!("{named} isn't a defined input type (on ${})", v.name);
                    self.push(GqlError::new(msg, Some(v.pos)).code("variableRequiresValidType"));
                }
            }
        }
    }

    fn unused_vars(&mut self) {
        let op = self.op;
        let label = op.label();
        let unused: Vec<&VarDef> = op
            .vars
            .iter()
            .filter(|v| !self.used.contains(&v.name))
            .collect();
        let errors: Vec<GqlError> = unused
            .iter()
            .map(|v| {
                let msg = format!("Variable ${} is declared by {label} but not used", v.name);
                GqlError::new(msg, Some(v.pos)).code("variableNotUsed")
            })
            .collect();
        self.errors.extend(errors);
    }

    fn selection(&mut self, parent: &str, fields: &[Field], path: &mut Vec<String>) {
        for f in fields {
            path.push(f.key().to_string());
            self.field(parent, f, path);
            path.pop();
        }
    }

    fn field(&mut self, parent: &str, f: &Field, path: &mut Vec<String>) {
        if f.name == "__typename" {
            // Introspection's meta field exists on every object type.
            if !f.selection.is_empty() {
                self.leaf_selected(f, "String!", path);
            }
            return;
        }
        let schema = self.schema;
        let Some(def) = schema.field(parent, &f.name) else {
            let partial = schema.types.get(parent).is_some_and(|t| t.partial);
            let hint = if partial {
                format!(" (or it is outside the contract subset, {SUBSET_PATH})")
            } else {
                String::new()
            };
            let msg = format!("Field '{}' doesn't exist on type '{parent}'{hint}", f.name);
            self.push(
                GqlError::new(msg, Some(f.pos))
                    .code("undefinedField")
                    .at_path(path),
            );
            return;
        };
        self.args(f, def, path);
        self.sub_selection(f, def, path);
    }

    fn args(&mut self, f: &Field, def: &FieldDef, path: &mut Vec<String>) {
        let mut seen = BTreeSet::new();
        for a in &f.args {
            if !seen.insert(a.name.as_str()) {
                let msg = format!("There can be only one argument named \"{}\"", a.name);
                self.push(GqlError::new(msg, Some(a.pos)).code("argumentNotUnique"));
                continue;
            }
            path.push(a.name.clone());
            match def.args.get(&a.name) {
                None => {
                    let msg = format!("Field '{}' doesn't accept argument '{}'", f.name, a.name);
                    self.push(
                        GqlError::new(msg, Some(a.pos))
                            .code("argumentNotAccepted")
                            .at_path(path),
                    );
                }
                Some(iv) => {
                    let site = Site {
                        owner: format!("Field '{}'", f.name),
                        name: &a.name,
                        ty: &iv.ty,
                        pos: a.pos,
                        has_default: iv.default_value.is_some(),
                    };
                    self.value(&a.value, &iv.ty, &site, path);
                }
            }
            path.pop();
        }
        let missing: Vec<&str> = def
            .args
            .iter()
            .filter(|(name, iv)| iv.required() && f.arg(name).is_none())
            .map(|(name, _)| name.as_str())
            .collect();
        if !missing.is_empty() {
            let msg = format!(
                "Field '{}' is missing required arguments: {}",
                f.name,
                missing.join(", ")
            );
            self.push(
                GqlError::new(msg, Some(f.pos))
                    .code("missingRequiredArguments")
                    .at_path(path),
            );
        }
    }

    fn sub_selection(&mut self, f: &Field, def: &FieldDef, path: &mut Vec<String>) {
        let named = def.ty.named();
        let Some(t) = self.schema.types.get(named) else {
            let msg = format!("Field '{}' returns '{named}', which is outside the contract subset ({SUBSET_PATH})", f.name);
            self.push(
                GqlError::new(msg, Some(f.pos))
                    .code("outsideContractSubset")
                    .at_path(path),
            );
            return;
        };
        if t.is_leaf() {
            if !f.selection.is_empty() {
                self.leaf_selected(f, &def.ty.to_string(), path);
            }
        } else if f.selection.is_empty() {
            let msg = format!(
                "Field '{0}' of type '{named}' must have a selection of subfields. Try using '{0} {{ ... }}'.",
                f.name
            );
            self.push(
                GqlError::new(msg, Some(f.pos))
                    .code("selectionMismatch")
                    .at_path(path),
            );
        } else if t.fields.is_none() {
            let msg = format!("Field '{}' returns '{named}', which is outside the contract subset ({SUBSET_PATH})", f.name);
            self.push(
                GqlError::new(msg, Some(f.pos))
                    .code("outsideContractSubset")
                    .at_path(path),
            );
        } else {
            self.selection(named, &f.selection, path);
        }
    }

    fn leaf_selected(&mut self, f: &Field, ty: &str, path: &[String]) {
        let names: Vec<&str> = f.selection.iter().map(|s| s.name.as_str()).collect();
        let msg = format!(
            "Selections can't be made on scalars (field '{}' returns {ty} but has selections [{}])",
            f.name,
            names.join(", ")
        );
        self.push(
            GqlError::new(msg, Some(f.pos))
                .code("selectionMismatch")
                .at_path(path),
        );
    }

    /// A literal (or variable) in a slot of type `expected`.
    fn value(&mut self, lit: &Literal, expected: &TypeRef, site: &Site, path: &mut Vec<String>) {
        match (lit, expected) {
            (Literal::Var(v), _) => self.variable_use(v, expected, site, path),
            (Literal::Null, TypeRef::NonNull(_)) => self.invalid(lit, site, path),
            (Literal::Null, _) => {}
            (_, TypeRef::NonNull(inner)) => self.value(lit, inner, site, path),
            (Literal::List(items), TypeRef::List(inner)) => {
                for item in items {
                    self.value(item, inner, site, path);
                }
            }
            // Input coercion: a single value stands for a list of one.
            (_, TypeRef::List(inner)) => self.value(lit, inner, site, path),
            (_, TypeRef::Named(n)) => self.named_value(lit, n, site, path),
        }
    }

    fn named_value(&mut self, lit: &Literal, n: &str, site: &Site, path: &mut Vec<String>) {
        let schema = self.schema;
        let Some(t) = schema.types.get(n) else {
            return self.invalid(lit, site, path);
        };
        let ok = match (t.kind, lit) {
            (Kind::Scalar, _) => scalar_literal_ok(n, lit),
            (Kind::Enum, Literal::Enum(v)) => {
                t.enum_values.as_ref().is_none_or(|vs| vs.contains(v))
            }
            (Kind::InputObject, Literal::Object(fields)) => {
                return self.input_object(fields, n, t, site, path);
            }
            _ => false,
        };
        if !ok {
            self.invalid(lit, site, path);
        }
    }

    fn input_object(
        &mut self,
        fields: &[(String, Literal)],
        ty: &str,
        t: &TypeDef,
        site: &Site,
        path: &mut Vec<String>,
    ) {
        let Some(defs) = &t.input_fields else {
            let msg = format!("InputObject '{ty}' is outside the contract subset ({SUBSET_PATH})");
            self.push(
                GqlError::new(msg, Some(site.pos))
                    .code("outsideContractSubset")
                    .at_path(path),
            );
            return;
        };
        for (name, lit) in fields {
            path.push(name.clone());
            match defs.get(name) {
                None => {
                    let msg = format!("InputObject '{ty}' doesn't accept argument '{name}'");
                    self.push(
                        GqlError::new(msg, Some(site.pos))
                            .code("argumentNotAccepted")
                            .at_path(path),
                    );
                }
                Some(iv) => {
                    let inner = Site {
                        owner: format!("InputObject '{ty}'"),
                        name,
                        ty: &iv.ty,
                        pos: site.pos,
                        has_default: iv.default_value.is_some(),
                    };
                    self.value(lit, &iv.ty, &inner, path);
                }
            }
            path.pop();
        }
        for (name, iv) in defs {
            if iv.required() && !fields.iter().any(|(k, _)| k == name) {
                let msg = format!(
                    "Argument '{name}' on InputObject '{ty}' is required. Expected type {}",
                    iv.ty
                );
                self.push(
                    GqlError::new(msg, Some(site.pos))
                        .code("missingRequiredInputObjectAttribute")
                        .at_path(path),
                );
            }
        }
    }

    fn invalid(&mut self, lit: &Literal, site: &Site, path: &[String]) {
        let msg = format!(
            "Argument '{}' on {} has an invalid value ({lit}). Expected type '{}'.",
            site.name, site.owner, site.ty
        );
        self.push(
            GqlError::new(msg, Some(site.pos))
                .code("argumentLiteralsIncompatible")
                .at_path(path),
        );
    }

    fn variable_use(&mut self, v: &str, expected: &TypeRef, site: &Site, path: &[String]) {
        self.used.insert(v.to_string());
        let op = self.op;
        let Some(def) = op.var(v) else {
            let msg = format!("Variable ${v} is used by {} but not declared", op.label());
            self.push(
                GqlError::new(msg, Some(site.pos))
                    .code("variableNotDefined")
                    .at_path(path),
            );
            return;
        };
        let has_default =
            site.has_default || def.default.as_ref().is_some_and(|d| *d != Literal::Null);
        if !usage_allowed(&def.ty, expected, has_default) {
            let msg = format!(
                "Type mismatch on variable ${v} and argument {} ({} / {expected})",
                site.name, def.ty
            );
            self.push(
                GqlError::new(msg, Some(site.pos))
                    .code("variableMismatch")
                    .at_path(path),
            );
        }
    }

    fn variable_values(&mut self, variables: &Map<String, Value>) {
        let op = self.op;
        for def in &op.vars {
            let problem = match variables.get(&def.name) {
                None if def.default.is_some() => None,
                None if def.ty.is_non_null() => {
                    Some((Vec::new(), "Expected value to not be null".to_string()))
                }
                None => None,
                Some(value) => json_problem(self.schema, value, &def.ty),
            };
            if let Some((path, explanation)) = problem {
                let value = variables.get(&def.name).cloned().unwrap_or(Value::Null);
                let msg = format!(
                    "Variable ${} of type {} was provided invalid value",
                    def.name, def.ty
                );
                let mut e = GqlError::new(msg, Some(def.pos));
                e.extensions = Some(
                    json!({"value": value, "problems": [{"path": path, "explanation": explanation}]}),
                );
                self.push(e);
            }
        }
    }
}

/// GraphQL's "IsVariableUsageAllowed": `ID!` may fill `ID`, and `ID` may
/// fill `ID!` only when a default guarantees a value.
pub(super) fn usage_allowed(var: &TypeRef, location: &TypeRef, has_default: bool) -> bool {
    match (var, location) {
        (TypeRef::NonNull(_), _) | (_, TypeRef::Named(_) | TypeRef::List(_)) => {
            types_compatible(var, location)
        }
        (_, TypeRef::NonNull(loc)) => has_default && types_compatible(var, loc),
    }
}

/// GraphQL's "AreTypesCompatible".
pub(super) fn types_compatible(var: &TypeRef, location: &TypeRef) -> bool {
    match (var, location) {
        (TypeRef::NonNull(v), TypeRef::NonNull(l)) => types_compatible(v, l),
        (_, TypeRef::NonNull(_)) => false,
        (TypeRef::NonNull(v), _) => types_compatible(v, location),
        (TypeRef::List(v), TypeRef::List(l)) => types_compatible(v, l),
        (TypeRef::Named(v), TypeRef::Named(l)) => v == l,
        _ => false,
    }
}

/// Literals GitHub's scalars accept (custom scalars such as `DateTime` or
/// `URI` are strings).
pub(super) fn scalar_literal_ok(scalar: &str, lit: &Literal) -> bool {
    match scalar {
        "ID" => matches!(lit, Literal::Str(_) | Literal::Int(_)),
        "Int" => matches!(lit, Literal::Int(i) if i32::try_from(*i).is_ok()),
        "Float" => matches!(lit, Literal::Int(_) | Literal::Float(_)),
        "Boolean" => matches!(lit, Literal::Bool(_)),
        _ => matches!(lit, Literal::Str(_)),
    }
}

/// Why a JSON variable value does not fit its declared type: the path
/// inside the value and graphql-ruby's explanation.
pub(super) fn json_problem(
    schema: &Schema,
    value: &Value,
    ty: &TypeRef,
) -> Option<(Vec<Value>, String)> {
    match (ty, value) {
        (TypeRef::NonNull(_), Value::Null) => {
            Some((Vec::new(), "Expected value to not be null".into()))
        }
        (TypeRef::NonNull(inner), _) => json_problem(schema, value, inner),
        (_, Value::Null) => None,
        (TypeRef::List(inner), Value::Array(items)) => {
            items.iter().enumerate().find_map(|(i, item)| {
                json_problem(schema, item, inner).map(|(mut p, why)| {
                    p.insert(0, json!(i));
                    (p, why)
                })
            })
        }
        (TypeRef::List(inner), _) => json_problem(schema, value, inner),
        (TypeRef::Named(n), _) => named_json_problem(schema, value, n),
    }
}

pub(super) fn named_json_problem(
    schema: &Schema,
    value: &Value,
    n: &str,
) -> Option<(Vec<Value>, String)> {
    let coerce = || Some((Vec::new(), format!("Could not coerce value {value} to {n}")));
    let Some(t) = schema.types.get(n) else {
        return coerce();
    };
    match t.kind {
        Kind::Scalar if scalar_json_ok(n, value) => None,
        Kind::Scalar => coerce(),
        Kind::Enum => match (value.as_str(), &t.enum_values) {
            (Some(v), Some(vs)) if vs.iter().any(|x| x == v) => None,
            (Some(_), None) => None,
            (_, Some(vs)) => Some((
                Vec::new(),
                format!("Expected {value} to be one of: {}", vs.join(", ")),
            )),
            _ => coerce(),
        },
        Kind::InputObject => input_json_problem(schema, value, n, t),
        _ => coerce(),
    }
}

pub(super) fn input_json_problem(
    schema: &Schema,
    value: &Value,
    n: &str,
    t: &TypeDef,
) -> Option<(Vec<Value>, String)> {
    let (Some(obj), Some(defs)) = (value.as_object(), &t.input_fields) else {
        return Some((
            Vec::new(),
            format!("Expected {value} to be a key-value object."),
        ));
    };
    if let Some(k) = obj.keys().find(|k| !defs.contains_key(*k)) {
        return Some((vec![json!(k)], format!("Field is not defined on {n}")));
    }
    defs.iter().find_map(|(k, iv)| {
        let v = obj.get(k).unwrap_or(&Value::Null);
        if v.is_null() && !iv.required() {
            return None;
        }
        json_problem(schema, v, &iv.ty).map(|(mut p, why)| {
            p.insert(0, json!(k));
            (p, why)
        })
    })
}

pub(super) fn scalar_json_ok(scalar: &str, value: &Value) -> bool {
    match scalar {
        "ID" => value.is_string() || value.is_i64() || value.is_u64(),
        "String" => value.is_string(),
        "Int" => value.as_i64().is_some_and(|i| i32::try_from(i).is_ok()),
        "Float" => value.is_number(),
        "Boolean" => value.is_boolean(),
        _ => !value.is_object() && !value.is_array(),
    }
}
