// Restore step of the actions/cache stand-in (see action.yml and common.js): like GitHub, the exact
// key then each restore-keys prefix (newest first) in the run's own ref, then the same in the
// default branch's; another ref's entries are never seen.
const { fs, path, input, store, target, safe, readableRefs } = require("./common.js");

const root = store();
const key = input("key");
const prefixes = input("restore-keys").split("\n").map((s) => s.trim()).filter(Boolean);
let found = null;
let exact = false;
let from = null;
for (const r of readableRefs()) {
  const dir = path.join(root, safe(r));
  if (!fs.existsSync(dir)) continue;
  if (fs.existsSync(path.join(dir, safe(key)))) {
    found = path.join(dir, safe(key));
    exact = true;
  } else {
    const names = fs.readdirSync(dir).filter((n) => !n.endsWith(".tmp"));
    for (const p of prefixes) {
      const hits = names.filter((n) => n.startsWith(safe(p)))
        .sort((a, b) => fs.statSync(path.join(dir, b)).mtimeMs - fs.statSync(path.join(dir, a)).mtimeMs);
      if (hits.length) { found = path.join(dir, hits[0]); break; }
    }
  }
  if (found) { from = r; break; }
}
if (found) {
  fs.mkdirSync(target(), { recursive: true });
  fs.cpSync(found, target(), { recursive: true });
  console.log(`cache stand-in: restored ${path.basename(found)} from ${from} into ${target()}${exact ? " (exact key)" : ""}`);
} else {
  console.log(
    `cache stand-in: no entry for ${key} or ${prefixes.join(", ") || "(no restore-keys)"} in ${readableRefs().join(", ")}`
  );
}
fs.appendFileSync(process.env.GITHUB_OUTPUT, `cache-hit=${exact}\n`);
fs.appendFileSync(process.env.GITHUB_STATE, `exact=${exact}\n`);
