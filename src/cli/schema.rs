//! `taskgate schema plan|config`: prints a JSON Schema, the one committed
//! in `schemas/` and published with each release (both are the core's
//! tables, `taskgate_core::schema`).

use clap::ValueEnum;
use taskgate_core::schema;

/// Which file's schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Which {
    /// A plan file, `.taskgate/stories/*.yml`.
    Plan,
    /// The repository config, `.github/taskgate.yml`.
    Config,
}

#[derive(clap::Args, Debug)]
pub struct SchemaArgs {
    #[arg(value_enum)]
    pub which: Which,
}

/// The schema's text, as committed.
pub fn run(args: &SchemaArgs) -> String {
    match args.which {
        Which::Plan => schema::text(&schema::plan_schema()),
        Which::Config => schema::text(&schema::config_schema()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_the_committed_schemas() {
        for (which, file) in [(Which::Plan, "plan"), (Which::Config, "config")] {
            let path = format!("{}/schemas/{file}.schema.json", env!("CARGO_MANIFEST_DIR"));
            let committed = std::fs::read_to_string(&path).unwrap();
            assert_eq!(run(&SchemaArgs { which }), committed, "{path}");
        }
        let head: String = run(&SchemaArgs { which: Which::Plan })
            .lines()
            .take(6)
            .collect::<Vec<_>>()
            .join("\n");
        insta::assert_snapshot!(head);
    }
}
