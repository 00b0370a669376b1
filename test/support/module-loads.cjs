// Preloaded (`node --require`) into a process a test starts: at exit, prints on stderr one line
// `module-loads: <json>` naming which of the packages in $TRACE_PACKAGES the process loaded.
const Module = require('node:module');
const watched = (process.env.TRACE_PACKAGES ?? '').split(',').filter(Boolean);
const loaded = new Set();
const load = Module._load;
Module._load = function traced(request, parent, isMain) {
  for (const name of watched) {
    if (request === name || request.includes(`/node_modules/${name}/`)) loaded.add(name);
    if (parent?.filename?.includes(`/node_modules/${name}/`)) loaded.add(name);
  }
  return load.call(this, request, parent, isMain);
};
process.on('exit', () => process.stderr.write(`module-loads: ${JSON.stringify([...loaded].sort())}\n`));
