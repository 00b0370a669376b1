/**
 * `npm run build` (and `prepack`): everything the installed package runs, under dist/.
 *
 *   dist/<engine|functions|infra|cli>/…   tsc output: ES modules and .d.ts (imports rewritten to .js)
 *   dist/cli/commands.json                what `stepthread --help` lists (cli/main.ts)
 *   dist/functions/sandbox/sandbox-worker.mjs   the CODE sandbox worker, QuickJS embedded
 *   dist/bin/                             the CLI the `stepthread` bin runs: one bundle, split per command
 *   dist/lambda/<type>/index.mjs          each handler bundled as the deploy bundles it (infra/bundling.ts),
 *                                         with sandbox-worker.mjs beside it where the sandbox runs
 *   then `npm run build:console` when package.json has it (the dev console's SPA joins the build there)
 *
 * The repository itself runs from its TypeScript sources (tsx, vitest); nothing there reads dist/.
 *
 *   npx tsx scripts/build.ts
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { build } from 'esbuild';
import { COMMAND_SUMMARIES_FILE, commandSummaries } from '../cli/main.ts';
import { buildStoreServer } from '../functions/local/store-server-build.ts';
import { buildSandboxWorker } from '../functions/sandbox/build.ts';
import { handlerEsbuildOptions } from '../infra/bundling.ts';
import {
  availableHandlerTypes,
  bundleDirName,
  HANDLER_SPECS,
  handlerEntryPath,
  PROJECT_ROOT,
} from '../infra/handler-registry.ts';
import { cliBundleOptions } from './cli-bundle.ts';
import { assertNoCommonJsDynamicImports } from './split-bundle-check.ts';

const root = PROJECT_ROOT;
const dist = join(root, 'dist');
const started = performance.now();
const step = (what: string) =>
  console.error(`build: ${what} (${Math.round(performance.now() - started)} ms)`);

rmSync(dist, { recursive: true, force: true });

// 1. The library and CLI modules, with declarations.
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { stdio: ['ignore', 2, 2] });
rewriteDeclarationImports(dist);
// What `stepthread --help` lists, so it need not import every command (cli/main.ts).
const summaries = `${JSON.stringify(await commandSummaries(), null, 2)}\n`;
writeFileSync(join(dist, 'cli', COMMAND_SUMMARIES_FILE), summaries);
step('tsc → dist/');

// 2. The sandbox worker the compiled functions/sandbox starts (worker-location.ts).
await buildSandboxWorker({ outdir: join(dist, 'functions', 'sandbox') });
step('sandbox worker');

// 3. The CLI as the `stepthread` bin runs it (scripts/cli-bundle.ts), its import()s checked.
const binDir = join(dist, 'bin');
const cli = await build(cliBundleOptions(root, binDir));
assertNoCommonJsDynamicImports(cli.metafile);
// The shared data directory's store server, started as its own process from beside the bundle
// (functions/local/data-dir-server.ts): one CommonJS file, compiled through a code cache.
await buildStoreServer({ outdir: binDir });
writeFileSync(join(binDir, COMMAND_SUMMARIES_FILE), summaries);
await buildSandboxWorker({ outdir: binDir });
step('CLI bundle');

// 4. Prebuilt Lambda bundles, so a user's CDK app needs neither our sources nor a lock file.
for (const type of availableHandlerTypes(root)) {
  const outdir = join(dist, 'lambda', bundleDirName(type));
  await build(handlerEsbuildOptions(handlerEntryPath(type, root), join(outdir, 'index.mjs')));
  if (HANDLER_SPECS[type].sandboxWorker) await buildSandboxWorker({ outdir });
}
step('lambda bundles');

// 5. Hook for other build parts (the dev console's SPA): they add a `build:console` script.
const scripts = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts?: object })
  .scripts;
if (scripts && 'build:console' in scripts) {
  execFileSync('npm', ['run', 'build:console'], { cwd: root, stdio: ['ignore', 2, 2] });
  step('build:console');
}

/**
 * tsc keeps the sources' `.ts` specifiers in declaration files; consumers resolve `.js` (the emitted
 * files beside each .d.ts), so rewrite relative ones.
 */
function rewriteDeclarationImports(dir: string): void {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) rewriteDeclarationImports(path);
    else if (name.endsWith('.d.ts')) {
      const text = readFileSync(path, 'utf8');
      const rewritten = text.replace(/(from\s+|import\()(['"])(\.{1,2}\/[^'"]*?)\.ts\2/g, '$1$2$3.js$2');
      if (rewritten !== text) writeFileSync(path, rewritten);
    }
  }
}
