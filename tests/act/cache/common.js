// Shared by restore.js and save.js: the inputs as GitHub passes them (INPUT_<NAME> variables) and
// the store folder (BUNDLEGRAPH_EXTRA_ACT_CACHE). Only Node's own modules: nothing to install.
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

module.exports = { fs, path, input, store, target, safe };
