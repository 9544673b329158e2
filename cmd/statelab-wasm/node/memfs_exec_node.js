// Runs a GOOS=js test binary (or any js/wasm program) in Node on the
// in-memory file system of static/js/memfs.js instead of the real disk: the
// fs backend's checkpoint files, Pebble-free local directories and
// t.TempDir() all live in memory, as they do in the static site. The
// module's files (a package's testdata, ../docs) are copied in first, at the
// same absolute paths.
//
// Usage (go_js_wasm_memfs_exec does this): node memfs_exec_node.js prog.wasm [args]
'use strict';

const realFS = require('fs');
const path = require('path');

if (process.argv.length < 3) {
  console.error('usage: memfs_exec_node.js [wasm binary] [arguments]');
  process.exit(1);
}
const goroot = process.env.GOROOT;
if (!goroot) {
  console.error('memfs_exec_node.js: set GOROOT (go env GOROOT) so wasm_exec.js can be found');
  process.exit(1);
}

require(path.join(__dirname, '..', '..', '..', 'static', 'js', 'memfs.js'));
const mem = globalThis.StatelabMemFS((fd, buf) => realFS.writeSync(fd, buf), process.cwd());

const must = (op, ...args) => {
  let err = null; let res;
  mem[op](...args, (e, r) => { err = e; res = r; });
  if (err) throw err;
  return res;
};
function mkdirAll(dir) {
  let cur = '';
  for (const n of dir.split('/').filter(Boolean)) {
    cur += '/' + n;
    try { must('mkdir', cur, 0o755); } catch (e) { if (e.code !== 'EEXIST') throw e; }
  }
}
// copyIn copies the regular files under dir into the memory file system:
// sources, docs and testdata, not .git, build output, browser test
// artifacts or anything above 1 MB (binaries).
const skipDirs = new Set(['.git', 'node_modules', 'artifacts', 'target']);
function copyIn(dir, depth) {
  mkdirAll(dir);
  for (const ent of realFS.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, ent.name);
    if (ent.isDirectory()) {
      if (depth < 8 && !skipDirs.has(ent.name)) copyIn(p, depth + 1);
    } else if (ent.isFile() && realFS.statSync(p).size <= 1 << 20) {
      const data = realFS.readFileSync(p);
      const fd = must('open', p, 64 | 1, 0o644);
      must('write', fd, data, 0, data.length, null);
      must('close', fd);
    }
  }
}
// The module's root (where go.mod is), so that a test may read ../docs.
let root = process.cwd();
while (!realFS.existsSync(path.join(root, 'go.mod')) && path.dirname(root) !== root) root = path.dirname(root);
if (!realFS.existsSync(path.join(root, 'go.mod'))) root = process.cwd();
copyIn(root, 0);

globalThis.require = require;
globalThis.fs = mem;
globalThis.path = path;
globalThis.TextEncoder = require('util').TextEncoder;
globalThis.TextDecoder = require('util').TextDecoder;
globalThis.performance ??= require('perf_hooks').performance;
globalThis.crypto ??= require('crypto');

require(path.join(goroot, 'lib', 'wasm', 'wasm_exec.js'));

const go = new Go();
go.argv = process.argv.slice(2);
go.env = Object.assign({}, process.env, { TMPDIR: '/tmp' });
go.exit = process.exit;
WebAssembly.instantiate(realFS.readFileSync(process.argv[2]), go.importObject).then((result) => {
  process.on('exit', (code) => { // Node exits if no event handler is pending
    if (code === 0 && !go.exited) {
      // deadlock: make Go print the error and stack traces
      go._pendingEvent = { id: 0 };
      go._resume();
    }
  });
  return go.run(result.instance);
}).catch((err) => {
  console.error(err);
  process.exit(1);
});
