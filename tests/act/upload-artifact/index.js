'use strict';
// Local stand-in for actions/upload-artifact@v4, for workflows run under nektos/act.
// Uploads through @actions/artifact (v2 client, v4 "results" protocol), which reads
// ACTIONS_RESULTS_URL and ACTIONS_RUNTIME_TOKEN set by act for node actions.
const fs = require('fs');
const path = require('path');
const core = require('@actions/core');
const glob = require('@actions/glob');
const { DefaultArtifactClient } = require('@actions/artifact');

function isHidden(file, root) {
  const rel = path.relative(root, file);
  return rel.split(path.sep).some((part) => part.startsWith('.') && part !== '.' && part !== '..');
}

// Deepest directory that contains every given directory.
function commonDirectory(dirs) {
  const split = dirs.map((d) => path.resolve(d).split(path.sep));
  const first = split[0];
  let n = first.length;
  for (const parts of split.slice(1)) {
    let i = 0;
    while (i < n && i < parts.length && parts[i] === first[i]) i++;
    n = i;
  }
  const joined = first.slice(0, n).join(path.sep);
  return joined === '' ? path.sep : joined;
}

async function collect(pathInput, includeHidden) {
  const globber = await glob.create(pathInput, { implicitDescendants: true });
  const matched = await globber.glob();
  const searchPaths = globber.getSearchPaths();

  const files = [];
  const seen = new Set();
  for (const m of matched) {
    let st;
    try { st = fs.statSync(m); } catch (e) { continue; }
    if (!st.isFile()) continue; // directories are covered by implicitDescendants
    if (seen.has(m)) continue;
    seen.add(m);
    files.push(m);
  }

  if (files.length === 0) return { files, root: '' };

  // Root: the part of each pattern before its first wildcard (glob's search paths),
  // so that `dist/*` stores `a.txt`, not `dist/a.txt`. With several patterns the
  // common ancestor of their search paths is used. A single literal file is stored
  // under its own name.
  let root;
  if (searchPaths.length === 1 && files.length === 1 && path.resolve(searchPaths[0]) === path.resolve(files[0])) {
    root = path.dirname(files[0]);
  } else {
    const dirs = searchPaths.map((p) => {
      try { return fs.statSync(p).isDirectory() ? p : path.dirname(p); } catch (e) { return path.dirname(p); }
    });
    root = commonDirectory(dirs);
  }

  const kept = includeHidden ? files : files.filter((f) => !isHidden(f, root));
  return { files: kept, root };
}

async function run() {
  const name = core.getInput('name') || 'artifact';
  const pathInput = core.getInput('path', { required: true });
  const ifNoFiles = (core.getInput('if-no-files-found') || 'warn').toLowerCase();
  const retentionDays = parseInt(core.getInput('retention-days') || '0', 10);
  const compressionLevel = parseInt(core.getInput('compression-level') || '6', 10);
  const includeHidden = (core.getInput('include-hidden-files') || 'false').toLowerCase() === 'true';

  if (!['warn', 'error', 'ignore'].includes(ifNoFiles)) {
    throw new Error(`Unknown if-no-files-found value '${ifNoFiles}': use warn, error or ignore`);
  }

  const { files, root } = await collect(pathInput, includeHidden);
  if (files.length === 0) {
    const msg = `No files were found with the provided path: ${pathInput}. No artifacts will be uploaded.`;
    if (ifNoFiles === 'error') throw new Error(msg);
    if (ifNoFiles === 'warn') core.warning(msg); else core.info(msg);
    return;
  }

  core.info(`Uploading ${files.length} file(s) as artifact '${name}' (root ${root})`);
  for (const f of files) core.info(`  ${path.relative(root, f)}`);

  const options = {};
  if (retentionDays > 0) options.retentionDays = retentionDays;
  if (!Number.isNaN(compressionLevel)) options.compressionLevel = compressionLevel;

  const client = new DefaultArtifactClient();
  const res = await client.uploadArtifact(name, files, root, options);
  core.info(`Artifact '${name}' uploaded: id ${res.id}, ${res.size} bytes`);
  core.setOutput('artifact-id', String(res.id ?? ''));
  core.setOutput('artifact-url', '');
}

run().catch((err) => core.setFailed(err && err.message ? err.message : String(err)));
