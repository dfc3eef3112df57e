// Post step of the actions/cache stand-in (see action.yml), and actions/cache/save: save `path`
// under `key` in the run's own ref (common.js). Like GitHub, an entry is immutable: a key the ref
// already holds is not saved again.
const { fs, path, input, store, target, safe, ref } = require("./common.js");

const dir = path.join(store(), safe(ref()));
const key = safe(input("key"));
if (process.env.STATE_exact === "true") {
  console.log(`cache stand-in: ${key} was restored exactly; not saved again`);
} else if (!fs.existsSync(target())) {
  console.log(`cache stand-in: ${target()} does not exist; nothing saved`);
} else if (fs.existsSync(path.join(dir, key))) {
  console.log(`cache stand-in: ${ref()} already holds ${key}; not saved (entries are immutable)`);
} else {
  fs.mkdirSync(dir, { recursive: true });
  const tmp = path.join(dir, `${key}.${process.pid}.tmp`);
  fs.rmSync(tmp, { recursive: true, force: true });
  fs.cpSync(target(), tmp, { recursive: true });
  fs.renameSync(tmp, path.join(dir, key));
  console.log(`cache stand-in: saved ${target()} as ${key} in ${ref()}`);
}
