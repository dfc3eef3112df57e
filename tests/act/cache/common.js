// Shared by restore.js and save.js: the inputs as GitHub passes them (INPUT_<NAME> variables), the
// store folder (BUNDLEGRAPH_EXTRA_ACT_CACHE) and GitHub's cache scoping. Only Node's own modules.
//
// GitHub scopes a cache by the ref of the run that saved it: a run restores what its own ref saved
// or, failing that, what the repository's DEFAULT branch saved; never what another branch or tag
// saved (a run for tag b43 cannot restore the run for tag b42's entries). So the store holds one
// folder per ref (`<store>/<ref with / as _>/<key>`), and an entry is immutable once saved.
const fs = require("fs");
const path = require("path");

function input(name) {
  return (process.env[`INPUT_${name.toUpperCase()}`] || "").trim();
}

function store() {
  const s = process.env.BUNDLEGRAPH_EXTRA_ACT_CACHE;
  if (!s) throw new Error("BUNDLEGRAPH_EXTRA_ACT_CACHE is not set (the test passes it with act --env)");
  fs.mkdirSync(s, { recursive: true });
  return s;
}

function target() {
  const p = input("path");
  if (!p) throw new Error("input 'path' is required");
  return path.resolve(process.env.GITHUB_WORKSPACE || process.cwd(), p);
}

function safe(key) {
  return key.replace(/[^A-Za-z0-9._-]/g, "_");
}

// The ref this run saves under (GITHUB_REF: refs/tags/b42, refs/heads/main).
function ref() {
  const r = process.env.GITHUB_REF || "";
  if (!r) throw new Error("GITHUB_REF is not set: the cache is scoped by the run's ref");
  return r;
}

// The repository's default branch as a ref: the event's repository.default_branch (GitHub sends it
// with push events), else main.
function defaultRef() {
  try {
    const ev = JSON.parse(fs.readFileSync(process.env.GITHUB_EVENT_PATH || "", "utf8"));
    const b = ev && ev.repository && ev.repository.default_branch;
    if (b) return `refs/heads/${b}`;
  } catch (e) {
    // no event file: the default below
  }
  return "refs/heads/main";
}

// The refs a restore may read, in GitHub's order: the run's own, then the default branch.
function readableRefs() {
  return [...new Set([ref(), defaultRef()])];
}

module.exports = { fs, path, input, store, target, safe, ref, defaultRef, readableRefs };
