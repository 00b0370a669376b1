/**
 * Builds the data directory's store server for the compiled CLI (scripts/build.ts): next to the CLI's
 * bundle, `store-server.cjs` (data-dir-daemon.ts and everything it loads, one CommonJS file) and
 * `data-dir-server-main.js`, its entry, which runs it through V8's code cache
 * (data-dir-server-cached.ts). data-dir-server.ts starts the entry beside it.
 *
 * esbuild is a build-time dependency: it is imported only when a build runs.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface StoreServerBuildOptions {
  outdir: string;
  /** esbuild target; default `node22` (the oldest Node stepthread supports). */
  target?: string;
}

const DAEMON = fileURLToPath(new URL('./data-dir-daemon.ts', import.meta.url));
const CACHED_ENTRY = fileURLToPath(new URL('./data-dir-server-cached.ts', import.meta.url));

export async function buildStoreServer(options: StoreServerBuildOptions): Promise<void> {
  const esbuild = await import('esbuild');
  const common: import('esbuild').BuildOptions = {
    bundle: true,
    platform: 'node',
    target: options.target ?? 'node22',
    minify: true,
    mainFields: ['module', 'main'],
    logLevel: 'warning',
  };
  await esbuild.build({
    ...common,
    entryPoints: [DAEMON],
    outfile: join(options.outdir, 'store-server.cjs'),
    format: 'cjs',
    // dynalite goes in the bundle, so its hundred-odd files are neither resolved nor compiled one by
    // one at each start (its computed requires made static: staticDynaliteRequires); LevelDB's
    // native addon stays a package, required from where dynalite's own `level` finds it.
    plugins: [staticDynaliteRequires(), classicLevelBesideDynalite()],
    // import() as require: a script compiled with the vm module has no loader for import().
    supported: { 'dynamic-import': false },
  });
  await esbuild.build({
    ...common,
    entryPoints: [CACHED_ENTRY],
    outfile: join(options.outdir, 'data-dir-server-main.js'),
    format: 'esm',
  });
}

/**
 * dynalite's index.js requires `./actions/<name>` and `./validations/<name>` by computed names, which
 * a bundler cannot follow: this rewrites those two requires into a table of literal ones, one per
 * file in those directories.
 */
function staticDynaliteRequires(): import('esbuild').Plugin {
  return {
    name: 'static-dynalite-requires',
    setup(build) {
      build.onLoad({ filter: /[\\/]dynalite[\\/]index\.js$/ }, (args) => {
        const dir = dirname(args.path);
        let contents = readFileSync(args.path, 'utf8');
        for (const folder of ['actions', 'validations']) {
          const computed = `require('./${folder}/' + action)`;
          if (!contents.includes(computed)) throw new Error(`dynalite's index.js no longer has ${computed}`);
          const names = readdirSync(join(dir, folder))
            .filter((name) => name.endsWith('.js') && name !== 'index.js')
            .map((name) => name.slice(0, -3));
          const table = names.map((name) => `${JSON.stringify(name)}: () => require('./${folder}/${name}')`);
          contents = contents.replace(computed, `({ ${table.join(', ')} })[action]()`);
        }
        return { contents, loader: 'js' };
      });
    },
  };
}

/**
 * classic-level (LevelDB, a native addon) is not bundled: the bundle requires it at run time as
 * dynalite's `level` would, from the installed dynalite (a dependency of ours; classic-level is
 * only its dependency's, so it need not be reachable from the bundle's own directory).
 */
function classicLevelBesideDynalite(): import('esbuild').Plugin {
  const namespace = 'classic-level-beside-dynalite';
  return {
    name: namespace,
    setup(build) {
      build.onResolve({ filter: /^classic-level$/ }, () => ({ path: 'classic-level', namespace }));
      build.onLoad({ filter: /.*/, namespace }, () => ({
        contents: [
          "const { createRequire } = require('node:module');",
          "const fromDynalite = createRequire(createRequire(__filename).resolve('dynalite'));",
          "const fromLevel = createRequire(fromDynalite.resolve('level'));",
          "module.exports = fromLevel('classic-level');",
        ].join('\n'),
        loader: 'js',
      }));
    },
  };
}
