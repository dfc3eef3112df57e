// Post step of the actions/cache stand-in (see action.yml): save `path` under `key`.
const { fs, path, input, store, target, safe } = require("./common.js");

const root = store();
const key = safe(input("key"));
if (process.env.STATE_exact === "true") {
  console.log(`cache stand-in: ${key} was restored exactly; not saved again`);
} else if (!fs.existsSync(target())) {
  console.log(`cache stand-in: ${target()} does not exist; nothing saved`);
} else {
  const tmp = path.join(root, `${key}.${process.pid}.tmp`);
  fs.rmSync(tmp, { recursive: true, force: true });
  fs.cpSync(target(), tmp, { recursive: true });
  fs.rmSync(path.join(root, key), { recursive: true, force: true });
  fs.renameSync(tmp, path.join(root, key));
  console.log(`cache stand-in: saved ${target()} as ${key}`);
}
