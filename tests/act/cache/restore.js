// Restore step of the actions/cache stand-in (see action.yml).
const { fs, path, input, store, target, safe } = require("./common.js");

const root = store();
const key = input("key");
const prefixes = input("restore-keys").split("\n").map((s) => s.trim()).filter(Boolean);
let found = fs.existsSync(path.join(root, safe(key))) ? safe(key) : null;
const exact = found !== null;
if (!found) {
  const names = fs.readdirSync(root).filter((n) => !n.endsWith(".tmp"));
  for (const p of prefixes) {
    const hits = names.filter((n) => n.startsWith(safe(p)))
      .sort((a, b) => fs.statSync(path.join(root, b)).mtimeMs - fs.statSync(path.join(root, a)).mtimeMs);
    if (hits.length) { found = hits[0]; break; }
  }
}
if (found) {
  fs.mkdirSync(target(), { recursive: true });
  fs.cpSync(path.join(root, found), target(), { recursive: true });
  console.log(`cache stand-in: restored ${found} into ${target()}${exact ? " (exact key)" : ""}`);
} else {
  console.log(`cache stand-in: no entry for ${key} or ${prefixes.join(", ") || "(no restore-keys)"}`);
}
fs.appendFileSync(process.env.GITHUB_OUTPUT, `cache-hit=${exact}\n`);
fs.appendFileSync(process.env.GITHUB_STATE, `exact=${exact}\n`);
