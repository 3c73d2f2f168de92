// Shared by the fixture scripts: fetch a pinned npm package with `npm pack`
// and unpack single files of it with `tar`, nothing installed.

import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

export function run(cmd, args, cwd) {
  return execFileSync(cmd, args, {
    cwd,
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
    stdio: ["ignore", "pipe", "inherit"],
    shell: process.platform === "win32",
  });
}

// npm pack <spec> into tmp; returns { name, version, tarball }.
export function npmPack(spec, tmp) {
  const out = JSON.parse(run("npm", ["pack", spec, "--json", "--silent"], tmp));
  const info = Array.isArray(out) ? out[0] : out;
  return { name: info.name, version: info.version, tarball: path.join(tmp, info.filename) };
}

export function tarExtract(tarball, member, dest) {
  fs.mkdirSync(dest, { recursive: true });
  run("tar", ["-xzf", tarball, "-C", dest, member]);
  return path.join(dest, member);
}

export function tarList(tarball) {
  return run("tar", ["-tzf", tarball]).split(/\r?\n/).filter(Boolean);
}
