//! The part of GitHub's GraphQL schema taskgate's operations touch, read
//! once from the committed subset.
//!
//! Owns: [`Schema`], its types and fields, and [`schema`]. Must not:
//! validate documents (`validation` does).

use super::*;

#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub(crate) enum Kind {
    Scalar,
    Object,
    Interface,
    Union,
    Enum,
    InputObject,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InputValue {
    #[serde(rename = "type")]
    pub ty: TypeRef,
    pub default_value: Option<String>,
}

impl InputValue {
    /// Non-null without a default: the client must give it.
    pub(super) fn required(&self) -> bool {
        self.ty.is_non_null() && self.default_value.is_none()
    }
}

#[derive(Debug, Deserialize)]
pub(crate) struct FieldDef {
    #[serde(rename = "type")]
    pub ty: TypeRef,
    #[serde(default)]
    pub args: BTreeMap<String, InputValue>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TypeDef {
    pub kind: Kind,
    /// Query and Mutation list only the root fields taskgate uses.
    #[serde(default)]
    pub partial: bool,
    /// Absent for types the subset only mentions.
    pub fields: Option<BTreeMap<String, FieldDef>>,
    pub input_fields: Option<BTreeMap<String, InputValue>>,
    pub enum_values: Option<Vec<String>>,
}

impl TypeDef {
    pub(super) fn is_leaf(&self) -> bool {
        matches!(self.kind, Kind::Scalar | Kind::Enum)
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Schema {
    pub query_type: String,
    pub mutation_type: String,
    pub types: BTreeMap<String, TypeDef>,
}

/// The subset, parsed once per process (the file is compiled in).
pub(crate) fn schema() -> &'static Schema {
    static SCHEMA: OnceLock<Schema> = OnceLock::new();
    SCHEMA
        .get_or_init(|| serde_json::from_str(SUBSET).expect("github-subset.json (graphql) parses"))
}

impl Schema {
    pub fn root(&self, kind: OpKind) -> &str {
        match kind {
            OpKind::Query => &self.query_type,
            OpKind::Mutation => &self.mutation_type,
        }
    }

    /// A field of an expanded type.
    pub fn field(&self, ty: &str, name: &str) -> Option<&FieldDef> {
        self.types.get(ty)?.fields.as_ref()?.get(name)
    }
}
