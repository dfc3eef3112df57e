'use strict';
// Local stand-in for actions/download-artifact@v4, for workflows run under nektos/act.
// Downloads through @actions/artifact (v2 client, v4 "results" protocol), which reads
// ACTIONS_RESULTS_URL and ACTIONS_RUNTIME_TOKEN set by act for node actions.
const path = require('path');
const fs = require('fs');
const core = require('@actions/core');
const minimatch = require('minimatch');
const { DefaultArtifactClient } = require('@actions/artifact');

async function run() {
  const name = core.getInput('name');
  const pattern = core.getInput('pattern');
  const mergeMultiple = (core.getInput('merge-multiple') || 'false').toLowerCase() === 'true';
  const workspace = process.env.GITHUB_WORKSPACE || process.cwd();
  let dest = core.getInput('path') || workspace;
  if (dest.startsWith('~')) dest = path.join(require('os').homedir(), dest.slice(1));
  dest = path.resolve(workspace, dest);

  const client = new DefaultArtifactClient();
  let artifacts;
  let single = false;

  if (name) {
    if (pattern) core.warning(`Both name and pattern given: downloading only '${name}'`);
    const { artifact } = await client.getArtifact(name);
    if (!artifact) throw new Error(`Artifact not found: ${name}`);
    artifacts = [artifact];
    single = true;
  } else {
    const { artifacts: all } = await client.listArtifacts({ latest: true });
    artifacts = pattern ? all.filter((a) => minimatch(a.name, pattern)) : all;
    core.info(`Found ${all.length} artifact(s)` + (pattern ? `, ${artifacts.length} matching '${pattern}'` : ''));
  }

  if (artifacts.length === 0) {
    core.warning(`No artifacts to download${pattern ? ` for pattern '${pattern}'` : ''}`);
  }

  fs.mkdirSync(dest, { recursive: true });
  for (const a of artifacts) {
    // One artifact by name, or merge-multiple: straight into dest. Otherwise dest/<name>/.
    const target = single || mergeMultiple ? dest : path.join(dest, a.name);
    core.info(`Downloading artifact '${a.name}' (id ${a.id}, ${a.size} bytes) to ${target}`);
    await client.downloadArtifact(a.id, { path: target });
  }

  core.info(`Downloaded ${artifacts.length} artifact(s) to ${dest}`);
  core.setOutput('download-path', dest);
}

run().catch((err) => core.setFailed(err && err.message ? err.message : String(err)));
