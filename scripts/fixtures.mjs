#!/usr/bin/env node
// Regenerates taskgate's third-party data fixtures.
//
// Usage (from the repository root, Node 20+, `npm` and `tar` on PATH):
//
//   node scripts/fixtures.mjs [--webhooks <npm-spec>] [--openapi <npm-spec>]
//                             [--openapi-webhooks <npm-spec>]
//
//   --webhooks          npm spec of the webhook examples package
//                       (default: @octokit/webhooks-examples@7.6.1)
//   --openapi           npm spec of the OpenAPI description package
//                       (default: @octokit/openapi@23.0.2)
//   --openapi-webhooks  npm spec of the webhook schemas package
//                       (default: @octokit/openapi-webhooks@12.1.0)
//
// It runs `npm pack` for the packages in a temporary directory, unpacks
// only the files it needs with `tar`, and (re)writes:
//
//   fixtures/webhooks/<event>/<action>[.<n>].json  one file per example
//   fixtures/webhooks/README.md
//   fixtures/openapi/github-subset.json             REST operations subset
//   fixtures/openapi/webhooks-subset.json           webhook payload schemas subset
//   fixtures/openapi/README.md
//
// The output is deterministic: the versions are pinned by default, key order
// is the source's, and files are pretty-printed with two spaces plus a final
// newline. The per-event webhook directories are emptied before writing, so
// examples removed upstream disappear. To move to newer packages, pass
// explicit specs (e.g. `--openapi @octokit/openapi@latest`), review the diff,
// and then update the defaults below.
//
// No dependencies beyond the packages it unpacks.

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { npmPack, tarExtract, tarList } from "./npm-pack.mjs";

const DEFAULT_WEBHOOKS = "@octokit/webhooks-examples@7.6.1";
const DEFAULT_OPENAPI = "@octokit/openapi@23.0.2";
const DEFAULT_OPENAPI_WEBHOOKS = "@octokit/openapi-webhooks@12.1.0";

const WEBHOOK_EVENTS = [
  "ping",
  "installation",
  "installation_repositories",
  "issues",
  "issue_comment",
  "pull_request",
  "push",
  "check_run",
  "check_suite",
  "workflow_run",
  "merge_group",
  "pull_request_review",
];

// The webhooks fakehub sends (its echoes of writes), as [event, actions];
// an empty list is an event without actions. The subset's keys are
// GitHub's: `<event>-<action>` with `_` spelled `-`.
const WEBHOOK_SCHEMAS = [
  ["issues", ["opened", "edited", "closed", "reopened", "labeled", "unlabeled", "assigned", "unassigned"]],
  ["issue_comment", ["created", "edited", "deleted"]],
  [
    "pull_request",
    [
      "opened", "edited", "closed", "reopened", "ready_for_review", "converted_to_draft",
      "labeled", "unlabeled", "synchronize",
    ],
  ],
  ["push", []],
  ["create", []],
  ["check_run", ["created", "completed", "rerequested", "requested_action"]],
  ["check_suite", ["requested", "rerequested", "completed"]],
  ["workflow_run", ["requested", "in_progress", "completed"]],
  ["merge_group", ["checks_requested", "destroyed"]],
  ["pull_request_review", ["submitted", "edited", "dismissed"]],
];

// [method, path template] exactly as GitHub's description spells them.
const OPERATIONS = [
  ["get", "/app"],
  ["get", "/app/installations/{installation_id}"],
  ["post", "/app/installations/{installation_id}/access_tokens"],
  ["post", "/app-manifests/{code}/conversions"],
  ["get", "/app/hook/deliveries"],
  ["post", "/app/hook/deliveries/{delivery_id}/attempts"],
  ["get", "/repos/{owner}/{repo}/installation"],
  ["get", "/installation/repositories"],
  ["get", "/repos/{owner}/{repo}"],
  ["get", "/repos/{owner}/{repo}/issues"],
  ["post", "/repos/{owner}/{repo}/issues"],
  ["get", "/repos/{owner}/{repo}/issues/{issue_number}"],
  ["patch", "/repos/{owner}/{repo}/issues/{issue_number}"],
  ["get", "/repos/{owner}/{repo}/issues/{issue_number}/comments"],
  ["post", "/repos/{owner}/{repo}/issues/{issue_number}/comments"],
  ["get", "/repos/{owner}/{repo}/issues/comments/{comment_id}"],
  ["patch", "/repos/{owner}/{repo}/issues/comments/{comment_id}"],
  ["post", "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions"],
  ["post", "/repos/{owner}/{repo}/issues/{issue_number}/reactions"],
  ["get", "/repos/{owner}/{repo}/issues/{issue_number}/labels"],
  ["post", "/repos/{owner}/{repo}/issues/{issue_number}/labels"],
  ["put", "/repos/{owner}/{repo}/issues/{issue_number}/labels"],
  ["delete", "/repos/{owner}/{repo}/issues/{issue_number}/labels/{name}"],
  ["get", "/repos/{owner}/{repo}/labels"],
  ["post", "/repos/{owner}/{repo}/labels"],
  ["patch", "/repos/{owner}/{repo}/labels/{name}"],
  ["get", "/repos/{owner}/{repo}/issues/{issue_number}/sub_issues"],
  ["post", "/repos/{owner}/{repo}/issues/{issue_number}/sub_issues"],
  ["delete", "/repos/{owner}/{repo}/issues/{issue_number}/sub_issue"],
  ["get", "/repos/{owner}/{repo}/issues/{issue_number}/dependencies/blocked_by"],
  ["post", "/repos/{owner}/{repo}/issues/{issue_number}/dependencies/blocked_by"],
  ["delete", "/repos/{owner}/{repo}/issues/{issue_number}/dependencies/blocked_by/{issue_id}"],
  ["post", "/repos/{owner}/{repo}/git/refs"],
  ["get", "/repos/{owner}/{repo}/git/ref/{ref}"],
  ["patch", "/repos/{owner}/{repo}/git/refs/{ref}"],
  ["delete", "/repos/{owner}/{repo}/git/refs/{ref}"],
  ["get", "/repos/{owner}/{repo}/git/commits/{commit_sha}"],
  ["post", "/repos/{owner}/{repo}/git/commits"],
  ["get", "/repos/{owner}/{repo}/branches/{branch}"],
  ["get", "/repos/{owner}/{repo}/rules/branches/{branch}"],
  ["get", "/repos/{owner}/{repo}/rulesets/{ruleset_id}"],
  ["post", "/repos/{owner}/{repo}/merges"],
  ["get", "/repos/{owner}/{repo}/compare/{basehead}"],
  ["get", "/repos/{owner}/{repo}/pulls"],
  ["post", "/repos/{owner}/{repo}/pulls"],
  ["get", "/repos/{owner}/{repo}/pulls/{pull_number}"],
  ["patch", "/repos/{owner}/{repo}/pulls/{pull_number}"],
  ["put", "/repos/{owner}/{repo}/pulls/{pull_number}/merge"],
  ["get", "/repos/{owner}/{repo}/pulls/{pull_number}/reviews"],
  ["post", "/repos/{owner}/{repo}/pulls/{pull_number}/reviews"],
  ["put", "/repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}/dismissals"],
  ["post", "/repos/{owner}/{repo}/check-runs"],
  ["get", "/repos/{owner}/{repo}/check-runs/{check_run_id}"],
  ["patch", "/repos/{owner}/{repo}/check-runs/{check_run_id}"],
  ["get", "/repos/{owner}/{repo}/commits/{ref}/check-runs"],
  ["get", "/repos/{owner}/{repo}/contents/{path}"],
  ["get", "/repos/{owner}/{repo}/commits/{ref}"],
  ["post", "/repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches"],
  ["get", "/repos/{owner}/{repo}/actions/workflows/{workflow_id}/runs"],
  ["get", "/repos/{owner}/{repo}/actions/runs/{run_id}"],
  ["post", "/repos/{owner}/{repo}/actions/runs/{run_id}/cancel"],
  ["get", "/repos/{owner}/{repo}/actions/runs/{run_id}/artifacts"],
  ["get", "/repos/{owner}/{repo}/actions/artifacts/{artifact_id}/{archive_format}"],
  ["get", "/repos/{owner}/{repo}/collaborators/{username}/permission"],
  // `taskgate doctor`: whether a role's assignee can be assigned, the
  // Actions runner's workflow, the owner's plan (drafts).
  ["get", "/repos/{owner}/{repo}/assignees/{assignee}"],
  // A branch todo that closes stops its agent: the assignees its role
  // added are taken off (issue 30, budgets).
  ["delete", "/repos/{owner}/{repo}/issues/{issue_number}/assignees"],
  ["get", "/repos/{owner}/{repo}/actions/workflows/{workflow_id}"],
  ["get", "/orgs/{org}"],
  // A code-owning team (`@org/team` in CODEOWNERS) is approved by an
  // active member's review: taskgate asks who is one.
  ["get", "/orgs/{org}/teams/{team_slug}/memberships/{username}"],
];

// Depth at which $ref resolution (only needed when no dereferenced variant
// exists) gives up; a $ref that refers back to one being resolved is cut too.
const MAX_REF_DEPTH = 32;

const HTTP_METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

// ---------------------------------------------------------------- plumbing

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

function parseArgs(argv) {
  const opts = {
    webhooks: DEFAULT_WEBHOOKS,
    openapi: DEFAULT_OPENAPI,
    "openapi-webhooks": DEFAULT_OPENAPI_WEBHOOKS,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "-h" || a === "--help") {
      const src = fs.readFileSync(fileURLToPath(import.meta.url), "utf8");
      process.stdout.write(src.split("\n\nimport ")[0].replace(/^\/\/ ?/gm, "") + "\n");
      process.exit(0);
    } else if (a === "--webhooks" || a === "--openapi" || a === "--openapi-webhooks") {
      if (!argv[i + 1]) throw new Error(`${a} needs a value`);
      opts[a.slice(2)] = argv[++i];
    } else {
      throw new Error(`unknown argument: ${a} (try --help)`);
    }
  }
  return opts;
}


const readJson = (file) => JSON.parse(fs.readFileSync(file, "utf8"));
const pretty = (value) => JSON.stringify(value, null, 2) + "\n";

function writeFile(rel, text) {
  const file = path.join(ROOT, rel);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
}

// ---------------------------------------------------------------- webhooks

function webhooks(pkg, tmp) {
  const member = "package/api.github.com/index.json";
  const defs = readJson(tarExtract(pkg.tarball, member, path.join(tmp, "webhooks")));
  const counts = {};
  const noInstallation = {};
  for (const event of WEBHOOK_EVENTS) {
    const def = defs.find((d) => d.name === event);
    if (!def) throw new Error(`${pkg.name}: no definition for event ${event}`);
    const dir = path.join(ROOT, "fixtures/webhooks", event);
    fs.rmSync(dir, { recursive: true, force: true });
    const key = (ex) => (typeof ex.action === "string" && ex.action ? ex.action : "default");
    const total = {};
    for (const ex of def.examples) total[key(ex)] = (total[key(ex)] || 0) + 1;
    const seen = {};
    noInstallation[event] = [];
    for (const ex of def.examples) {
      const k = key(ex);
      seen[k] = (seen[k] || 0) + 1;
      const file = total[k] === 1 ? `${k}.json` : `${k}.${seen[k]}.json`;
      writeFile(path.join("fixtures/webhooks", event, file), pretty(ex));
      if (!("installation" in ex)) noInstallation[event].push(file.replace(/\.json$/, ""));
    }
    counts[event] = total;
  }

  const lines = [
    "# Webhook payload fixtures",
    "",
    `Source: npm package \`${pkg.name}@${pkg.version}\`, file \`${member.replace(/^package\//, "")}\``,
    "(GitHub's example payloads for api.github.com, as collected by Octokit).",
    "",
    "Generated — do not edit by hand. Regenerate with `node scripts/fixtures.mjs`",
    "(see the usage at the top of that script).",
    "",
    "Layout: `<event>/<action>.json`, or `<action>.<n>.json` (n from 1, in the",
    "package's order) when the package has several examples for one action.",
    "Events without an action (`ping`, `push`) use `default[.<n>].json`.",
    "The file content is the example exactly as in the package (same key order),",
    "pretty-printed with two spaces. These are payload bodies only: the",
    "`X-GitHub-Event` header is the directory name.",
    "",
    "Caution: many examples were captured from repository/organization webhooks,",
    "not GitHub App deliveries, so they have no `installation` object (listed in",
    "the last column). A GitHub App always receives `installation`; tests that",
    "need it must add `{\"id\": ..., \"node_id\": ...}` themselves.",
    "",
    "| event | examples (action × count) | without `installation` |",
    "|---|---|---|",
  ];
  for (const event of WEBHOOK_EVENTS) {
    const parts = Object.entries(counts[event]).map(([a, n]) => (n === 1 ? a : `${a} ×${n}`));
    const none = noInstallation[event];
    lines.push(`| ${event} | ${parts.join(", ")} | ${none.length ? none.join(", ") : "—"} |`);
  }
  writeFile("fixtures/webhooks/README.md", lines.join("\n") + "\n");
  return counts;
}

// ---------------------------------------------------------------- openapi

// Resolve local "#/..." $refs, cutting cycles and excessive depth to {}.
function makeResolver(doc) {
  const lookup = (ref) => {
    if (!ref.startsWith("#/")) throw new Error(`external $ref not supported: ${ref}`);
    let node = doc;
    for (const raw of ref.slice(2).split("/")) {
      const part = decodeURIComponent(raw).replace(/~1/g, "/").replace(/~0/g, "~");
      node = node?.[part];
    }
    if (node === undefined) throw new Error(`dangling $ref: ${ref}`);
    return node;
  };
  const resolve = (node, stack = [], depth = 0) => {
    if (Array.isArray(node)) return node.map((n) => resolve(n, stack, depth + 1));
    if (node === null || typeof node !== "object") return node;
    if (typeof node.$ref === "string") {
      if (stack.includes(node.$ref) || depth >= MAX_REF_DEPTH) return {};
      return resolve(lookup(node.$ref), [...stack, node.$ref], depth + 1);
    }
    const out = {};
    for (const [k, v] of Object.entries(node)) out[k] = resolve(v, stack, depth + 1);
    return out;
  };
  return resolve;
}

function openapi(pkg, tmp) {
  const members = tarList(pkg.tarball);
  const deref = "package/generated/api.github.com.deref.json";
  const plain = "package/generated/api.github.com.json";
  const member = members.includes(deref) ? deref : plain;
  if (!members.includes(member)) throw new Error(`${pkg.name}: neither ${deref} nor ${plain}`);
  const doc = readJson(tarExtract(pkg.tarball, member, path.join(tmp, "openapi")));
  if (!/^3\.0\./.test(doc.openapi)) throw new Error(`expected OpenAPI 3.0.x, got ${doc.openapi}`);
  const resolve = makeResolver(doc);

  const wanted = new Set(OPERATIONS.map(([m, p]) => `${m} ${p}`));
  const found = new Set();
  const paths = {};
  // Source order for paths and methods.
  for (const [tmpl, rawItem] of Object.entries(doc.paths)) {
    const item = resolve(rawItem);
    for (const method of Object.keys(item)) {
      if (!HTTP_METHODS.includes(method) || !wanted.has(`${method} ${tmpl}`)) continue;
      found.add(`${method} ${tmpl}`);
      const op = item[method];
      const params = [...(item.parameters || []), ...(op.parameters || [])];
      const byKey = new Map(); // operation-level parameters override path-level ones
      for (const p of params) byKey.set(`${p.in} ${p.name}`, p);
      const out = { operationId: op.operationId };
      out.parameters = [...byKey.values()]
        .filter((p) => p.in === "path" || p.in === "query")
        .map((p) => ({ name: p.name, in: p.in, required: p.required === true, schema: p.schema ?? {} }));
      const json = op.requestBody?.content?.["application/json"];
      if (op.requestBody && !json) {
        throw new Error(`${method} ${tmpl}: request body without application/json`);
      }
      if (json) out.requestBody = { content: { "application/json": { schema: json.schema ?? {} } } };
      out.responses = {};
      for (const [status, resp] of Object.entries(op.responses || {})) {
        out.responses[status] = { description: resp.description ?? "" };
      }
      (paths[tmpl] ||= {})[method] = out;
    }
  }
  const missing = OPERATIONS.filter(([m, p]) => !found.has(`${m} ${p}`));

  const subset = {
    openapi: doc.openapi,
    info: {
      title: doc.info.title,
      version: doc.info.version,
      "x-source": `${pkg.name}@${pkg.version} ${member.replace(/^package\//, "")}`,
    },
    paths,
  };
  const text = pretty(subset);
  if (text.includes('"$ref"')) throw new Error("subset still contains $ref");
  writeFile("fixtures/openapi/github-subset.json", text);

  const lines = [
    "# GitHub REST API subset (OpenAPI 3.0)",
    "",
    `Source: npm package \`${pkg.name}@${pkg.version}\`, file`,
    `\`${member.replace(/^package\//, "")}\` (GitHub's official description of the`,
    "api.github.com REST API, OpenAPI 3.0, with Octokit's `x-octokit` extension).",
    "",
    "Generated — do not edit by hand. Regenerate with `node scripts/fixtures.mjs`",
    "(see the usage at the top of that script). `github-subset.json` is used by",
    "`crates/fakehub` to validate the requests taskgate sends.",
    "",
    "## Shape",
    "",
    "```",
    '{ "openapi", "info": { "title", "version", "x-source": "<package>@<version> <file>" },',
    '  "paths": { "<template>": { "<method>": {',
    '    "operationId",',
    '    "parameters": [ { "name", "in": "path"|"query", "required", "schema" } ],',
    '    "requestBody": { "content": { "application/json": { "schema" } } },   // only when the operation has a body',
    '    "responses": { "<status>": { "description" } } } } } }',
    "```",
    "",
    "- Paths and methods are in the source's order; keys inside schemas too.",
    "- Header and cookie parameters are dropped; `required` is always present",
    "  (`false` when the source omits it).",
    "- Request-body schemas are kept whole. Response schemas, headers and",
    "  examples are stripped: only each status's `description` remains.",
    "- The file contains no `$ref`. The source variant used is the dereferenced",
    "  one when the package ships it; otherwise the script resolves every local",
    `  \`$ref\` itself and cuts a recursive reference (one that refers back to a`,
    `  \`$ref\` being resolved, or nesting deeper than ${MAX_REF_DEPTH}) to \`{}\` (accept anything).`,
    "- OpenAPI 3.0 `nullable: true` is kept as-is (not rewritten to a",
    '  `type: [..., "null"]` union); the validator in `crates/fakehub` understands it.',
    "",
    "## Operations",
    "",
    "| method | path | operationId |",
    "|---|---|---|",
  ];
  for (const [m, p] of OPERATIONS) {
    const id = paths[p]?.[m]?.operationId ?? "**missing**";
    lines.push(`| ${m.toUpperCase()} | \`${p}\` | ${id} |`);
  }
  lines.push("", "## Missing from the source", "");
  if (missing.length === 0) lines.push("None: every operation above exists in the source.");
  else for (const [m, p] of missing) lines.push(`- ${m.toUpperCase()} \`${p}\``);

  return { missing, bytes: Buffer.byteLength(text), subset, readme: lines };
}

// ---------------------------------------------------------------- webhook schemas

// The `webhooks` entries fakehub's echoes are checked against, each reduced
// to its operationId and request-body schema (a `$ref`), plus every
// `components/schemas` entry they reference, transitively, kept whole.
function webhookSchemas(pkg, tmp) {
  const member = "package/generated/api.github.com.json";
  const doc = readJson(tarExtract(pkg.tarball, member, path.join(tmp, "openapi-webhooks")));
  const names = WEBHOOK_SCHEMAS.flatMap(([event, actions]) =>
    (actions.length ? actions.map((a) => `${event}-${a}`) : [event]).map((n) => n.replace(/_/g, "-")),
  );
  const webhooks = {};
  const wanted = new Set();
  const collect = (node) => {
    if (Array.isArray(node)) return node.forEach(collect);
    if (node === null || typeof node !== "object") return;
    for (const [k, v] of Object.entries(node)) {
      if (k === "$ref" && typeof v === "string") {
        const prefix = "#/components/schemas/";
        if (!v.startsWith(prefix)) throw new Error(`unexpected $ref: ${v}`);
        const name = v.slice(prefix.length);
        if (wanted.has(name)) continue;
        if (!doc.components.schemas[name]) throw new Error(`dangling $ref: ${v}`);
        wanted.add(name);
        collect(doc.components.schemas[name]);
      } else {
        collect(v);
      }
    }
  };
  for (const name of names) {
    const op = doc.webhooks?.[name]?.post;
    if (!op) throw new Error(`${pkg.name}: no webhook ${name}`);
    const schema = op.requestBody?.content?.["application/json"]?.schema;
    if (!schema) throw new Error(`${pkg.name}: webhook ${name} has no JSON schema`);
    webhooks[name] = {
      post: { operationId: op.operationId, requestBody: { content: { "application/json": { schema } } } },
    };
    collect(schema);
  }
  const schemas = {};
  // Source order, for a stable diff.
  for (const [name, schema] of Object.entries(doc.components.schemas)) {
    if (wanted.has(name)) schemas[name] = schema;
  }
  const subset = {
    openapi: doc.openapi,
    info: {
      title: doc.info.title,
      version: doc.info.version,
      "x-source": `${pkg.name}@${pkg.version} ${member.replace(/^package\//, "")}`,
    },
    webhooks,
    components: { schemas },
  };
  const text = pretty(subset);
  writeFile("fixtures/openapi/webhooks-subset.json", text);
  const readme = [
    "",
    "# GitHub webhook payload schemas subset (OpenAPI 3.1)",
    "",
    `Source: npm package \`${pkg.name}@${pkg.version}\`, file`,
    `\`${member.replace(/^package\//, "")}\` (GitHub's official description of the`,
    "webhooks api.github.com sends). `webhooks-subset.json` is used by",
    "`crates/fakehub` to validate every webhook it sends (its echoes of writes).",
    "",
    "- `webhooks`: one entry per event and action fakehub sends, keyed as GitHub",
    "  keys them (`<event>-<action>`, `_` spelled `-`; `push` and `create` have no",
    "  action), reduced to `{post: {operationId, requestBody: {content:",
    "  {application/json: {schema}}}}}`; the schema is a `$ref`.",
    "- `components/schemas`: every schema those entries reference, transitively,",
    "  kept whole and in the source's order. `$ref`s are kept (the validator",
    "  resolves them); OpenAPI 3.1 spells nullable as `type: [..., \"null\"]`.",
    "",
    "| webhook | operationId |",
    "|---|---|",
    ...names.map((n) => `| \`${n}\` | ${webhooks[n].post.operationId} |`),
  ];
  return { count: names.length, schemas: wanted.size, bytes: Buffer.byteLength(text), readme };
}

// ---------------------------------------------------------------- main

function main() {
  const opts = parseArgs(process.argv.slice(2));
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "taskgate-fixtures-"));
  try {
    const wh = npmPack(opts.webhooks, tmp);
    const oa = npmPack(opts.openapi, tmp);
    const ow = npmPack(opts["openapi-webhooks"], tmp);
    const counts = webhooks(wh, tmp);
    for (const event of WEBHOOK_EVENTS) {
      const n = Object.values(counts[event]).reduce((a, b) => a + b, 0);
      console.log(`webhooks ${event}: ${n}`);
    }
    const { missing, bytes, readme } = openapi(oa, tmp);
    console.log(`openapi subset: ${OPERATIONS.length - missing.length}/${OPERATIONS.length} operations, ${bytes} bytes`);
    for (const [m, p] of missing) console.log(`  missing: ${m.toUpperCase()} ${p}`);
    const hooks = webhookSchemas(ow, tmp);
    console.log(`webhooks subset: ${hooks.count} webhooks, ${hooks.schemas} schemas, ${hooks.bytes} bytes`);
    writeFile("fixtures/openapi/README.md", [...readme, ...hooks.readme].join("\n") + "\n");
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

main();
