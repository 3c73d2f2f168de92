#!/usr/bin/env node
// Regenerates fixtures/graphql/: the part of GitHub's GraphQL schema that
// taskgate's operations touch, for crates/fakehub's GraphQL contract check.
//
// Usage (from the repository root, Node 20+, `npm` and `tar` on PATH):
//
//   node scripts/graphql-subset.mjs [--schema <npm-spec>]
//
//   --schema  npm spec of the schema package
//             (default: @octokit/graphql-schema@15.26.1)
//
// It runs `npm pack` in a temporary directory, unpacks only
// `package/schema.json` (GitHub's introspection result) with `tar`, and
// (re)writes:
//
//   fixtures/graphql/github-subset.json  the subset (shape in the README)
//   fixtures/graphql/README.md
//
// What is kept: the root fields listed in ROOT_FIELDS (with their arguments),
// every type in EXPANDED in full (fields with arguments and types, input
// fields, enum values), and for every other type those mention only its
// `kind` (plus enum values for enums), so a selection into it can be told
// apart from a typo. Query and Mutation are marked `partial`: they hold only
// the listed root fields.
//
// The output is deterministic: the version is pinned by default, types and
// fields keep the source's order, and the file is pretty-printed with two
// spaces plus a final newline. To move to a newer schema, pass an explicit
// spec (e.g. `--schema @octokit/graphql-schema@latest`), review the diff,
// and then update the default below.
//
// No dependencies beyond the package it unpacks.

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { npmPack, tarExtract } from "./npm-pack.mjs";

const DEFAULT_SCHEMA = "@octokit/graphql-schema@15.26.1";

// The root fields taskgate calls, per operation type.
const ROOT_FIELDS = {
  query: [],
  mutation: ["markPullRequestReadyForReview", "enqueuePullRequest"],
};

// Types whose fields the fake validates selections and literals against.
const EXPANDED = [
  "MarkPullRequestReadyForReviewInput",
  "MarkPullRequestReadyForReviewPayload",
  "PullRequest",
  "EnqueuePullRequestInput",
  "EnqueuePullRequestPayload",
  "MergeQueueEntry",
];

// GraphQL's built-in scalars: variables may name them even when no kept
// field does.
const BUILTIN_SCALARS = ["ID", "String", "Int", "Float", "Boolean"];

const MEMBER = "package/schema.json";

// ---------------------------------------------------------------- plumbing

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

function parseArgs(argv) {
  const opts = { schema: DEFAULT_SCHEMA };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "-h" || a === "--help") {
      const src = fs.readFileSync(fileURLToPath(import.meta.url), "utf8");
      process.stdout.write(src.split("\n\nimport ")[0].replace(/^\/\/ ?/gm, "") + "\n");
      process.exit(0);
    } else if (a === "--schema") {
      if (!argv[i + 1]) throw new Error(`${a} needs a value`);
      opts.schema = argv[++i];
    } else {
      throw new Error(`unknown argument: ${a} (try --help)`);
    }
  }
  return opts;
}


const pretty = (value) => JSON.stringify(value, null, 2) + "\n";

function writeFile(rel, text) {
  const file = path.join(ROOT, rel);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
}

// ---------------------------------------------------------------- subset

// An introspection type reference as GraphQL spells it: `[ID!]!`.
function typeString(ref) {
  if (ref.kind === "NON_NULL") return typeString(ref.ofType) + "!";
  if (ref.kind === "LIST") return "[" + typeString(ref.ofType) + "]";
  return ref.name;
}

function namedType(ref) {
  return ref.ofType ? namedType(ref.ofType) : ref.name;
}

// Arguments and input fields: name → { type, defaultValue? }. A default
// makes a non-null argument optional, so it is kept when present.
function inputValues(list, mention) {
  const out = {};
  for (const v of list) {
    mention(v.type);
    out[v.name] = { type: typeString(v.type) };
    if (v.defaultValue !== null && v.defaultValue !== undefined) {
      out[v.name].defaultValue = v.defaultValue;
    }
  }
  return out;
}

function outputFields(list, mention) {
  const out = {};
  for (const f of list) {
    mention(f.type);
    const entry = { type: typeString(f.type) };
    if (f.args.length) entry.args = inputValues(f.args, mention);
    out[f.name] = entry;
  }
  return out;
}

function expand(t, mention) {
  const out = { kind: t.kind };
  if (t.fields) out.fields = outputFields(t.fields, mention);
  if (t.inputFields) out.inputFields = inputValues(t.inputFields, mention);
  if (t.enumValues) out.enumValues = t.enumValues.map((e) => e.name);
  return out;
}

function subset(pkg, schema) {
  const byName = new Map(schema.types.map((t) => [t.name, t]));
  const roots = { query: schema.queryType.name, mutation: schema.mutationType.name };
  const mentioned = new Set(BUILTIN_SCALARS);
  const mention = (ref) => mentioned.add(namedType(ref));
  const built = new Map();

  for (const [op, names] of Object.entries(ROOT_FIELDS)) {
    const root = byName.get(roots[op]);
    const picked = names.map((n) => {
      const f = root.fields.find((x) => x.name === n);
      if (!f) throw new Error(`${pkg.name}: no field ${roots[op]}.${n}`);
      return f;
    });
    built.set(root.name, { kind: root.kind, partial: true, fields: outputFields(picked, mention) });
  }
  for (const name of EXPANDED) {
    const t = byName.get(name);
    if (!t) throw new Error(`${pkg.name}: no type ${name}`);
    built.set(name, expand(t, mention));
  }
  for (const name of mentioned) {
    if (built.has(name)) continue;
    const t = byName.get(name);
    if (!t) throw new Error(`${pkg.name}: dangling type ${name}`);
    const entry = { kind: t.kind };
    if (t.enumValues) entry.enumValues = t.enumValues.map((e) => e.name);
    built.set(name, entry);
  }

  // Source order, so a regeneration diff shows only real changes.
  const types = {};
  for (const t of schema.types) if (built.has(t.name)) types[t.name] = built.get(t.name);
  return {
    "x-source": `${pkg.name}@${pkg.version} ${MEMBER.replace(/^package\//, "")}`,
    queryType: roots.query,
    mutationType: roots.mutation,
    expanded: EXPANDED,
    types,
  };
}

function readme(pkg, out) {
  const rootList = Object.entries(ROOT_FIELDS)
    .flatMap(([op, names]) => names.map((n) => `| ${op} | \`${n}\` |`));
  return [
    "# GitHub GraphQL API subset",
    "",
    `Source: npm package \`${pkg.name}@${pkg.version}\`, file`,
    `\`${MEMBER.replace(/^package\//, "")}\` (the introspection result of GitHub's public`,
    "GraphQL schema, as published by Octokit).",
    "",
    "Generated — do not edit by hand. Regenerate with `node scripts/graphql-subset.mjs`",
    "(see the usage at the top of that script). `github-subset.json` is used by",
    "`crates/fakehub` to validate the GraphQL documents taskgate sends to `POST /graphql`.",
    "",
    "## Shape",
    "",
    "```",
    '{ "x-source": "<package>@<version> schema.json", "queryType", "mutationType",',
    '  "expanded": [ "<type>", ... ],',
    '  "types": { "<type>": {',
    '    "kind": "OBJECT"|"INPUT_OBJECT"|"ENUM"|"SCALAR"|"INTERFACE"|"UNION",',
    '    "partial": true,                                   // Query/Mutation: only the fields below',
    '    "fields": { "<name>": { "type": "[X!]!", "args": { "<arg>": { "type", "defaultValue"? } } } },',
    '    "inputFields": { "<name>": { "type", "defaultValue"? } },',
    '    "enumValues": [ "<VALUE>", ... ] } } }',
    "```",
    "",
    "- Type references are GraphQL type strings (`ID!`, `[String!]`).",
    "- Types listed in `expanded` are complete (every field, argument, input",
    "  field). Query and Mutation hold only the root fields below.",
    "- Every other type named by a kept field, argument or input field appears",
    "  with its `kind` only (and its values, for enums): selecting into it is",
    "  outside the subset.",
    "- Types and fields are in the source's order; descriptions and deprecation",
    "  notes are dropped.",
    "",
    "## Root fields",
    "",
    "| operation | field |",
    "|---|---|",
    ...rootList,
    "",
    `Types: ${Object.keys(out.types).length}.`,
    "",
  ].join("\n");
}

// ---------------------------------------------------------------- main

function main() {
  const opts = parseArgs(process.argv.slice(2));
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "taskgate-graphql-"));
  try {
    const pkg = npmPack(opts.schema, tmp);
    const file = tarExtract(pkg.tarball, MEMBER, path.join(tmp, "schema"));
    const doc = JSON.parse(fs.readFileSync(file, "utf8"));
    const schema = doc.__schema ?? doc.data?.__schema;
    if (!schema) throw new Error(`${pkg.name}: ${MEMBER} has no __schema`);
    const out = subset(pkg, schema);
    const text = pretty(out);
    writeFile("fixtures/graphql/github-subset.json", text);
    writeFile("fixtures/graphql/README.md", readme(pkg, out));
    console.log(`graphql subset: ${Object.keys(out.types).length} types, ${Buffer.byteLength(text)} bytes`);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

main();
