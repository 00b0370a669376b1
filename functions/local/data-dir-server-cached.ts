/**
 * The built store server's entry (`dist/bin/data-dir-server-main.js`; from the sources,
 * data-dir-server-main.ts runs instead): runs `store-server.cjs` beside it — data-dir-daemon.ts and
 * everything it loads (dynalite, s3rver) as one CommonJS file — through V8's code cache.
 *
 * A command that finds no server for its data directory waits for this process to be ready, and
 * compiling that JavaScript was about a third of the time it takes to load it. Node's own compile
 * cache (module.enableCompileCache, which the CLI's bin uses) keeps only what is compiled with the
 * file, its top level; this one readies the server sooner (Node 22, start to ready, medians of 11 and
 * 15: 384 against 510 ms, 377 against 435).
 *
 * Once it has been ready, the server writes V8's cached data for the file as it exits — every function
 * compiled while starting and serving, the request handlers too — under the user's cache directory
 * (`$XDG_CACHE_HOME/stepthread`, else `~/.cache/stepthread`; a few MB, one file, replacing the
 * previous build's), keyed by Node version, architecture and the file's size and mtime; the next start
 * compiles from it. V8 checks the data against the source and its own version and flags, and a
 * rejected or unreadable cache only means compiling as before (and writing it again).
 */
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Script } from 'node:vm';
import { serveArguments } from './data-dir-info.ts';

interface StoreServerModule {
  serveDataDir(dataDir: string, options: { standby: boolean }): Promise<void>;
}

const { dataDir, standby } = serveArguments(process.argv.slice(2));
if (dataDir === undefined) {
  process.stderr.write('usage: data-dir-server-main <dataDir> [--standby]\n');
  process.exit(2);
}

const file = fileURLToPath(new URL('./store-server.cjs', import.meta.url));
const source = readFileSync(file, 'utf8');
const cacheFile = cacheFileFor(file);
let cachedData: Buffer | undefined;
try {
  if (cacheFile !== undefined) cachedData = readFileSync(cacheFile);
} catch {
  // None yet.
}
// The CommonJS wrapper, the same every time (the cached data is for this exact text).
const script = new Script(`(function (exports, require, module, __filename, __dirname) {${source}\n})`, {
  filename: file,
  ...(cachedData === undefined ? {} : { cachedData }),
});
const loaded = { exports: {} as StoreServerModule };
script.runInThisContext()(loaded.exports, createRequire(file), loaded, file, dirname(file));
await loaded.exports.serveDataDir(dataDir, { standby });
// Ready, and serving: the cache, when there was none or V8 refused it, is written as the server exits
// (idle, no command waiting), so it holds the code compiled while serving too — the request handlers
// a command's first requests otherwise wait for V8 to compile.
if (cacheFile !== undefined && (cachedData === undefined || script.cachedDataRejected)) {
  process.once('exit', () => writeCache(cacheFile));
}

function writeCache(cacheFile: string): void {
  try {
    mkdirSync(dirname(cacheFile), { recursive: true });
    const temporary = `${cacheFile}.${process.pid}`;
    writeFileSync(temporary, script.createCachedData());
    renameSync(temporary, cacheFile);
    // One build's cache at a time: those of other Node versions or earlier builds go.
    for (const name of readdirSync(dirname(cacheFile))) {
      if (/^store-server-.*\.v8cache$/.test(name) && name !== basename(cacheFile)) {
        rmSync(join(dirname(cacheFile), name), { force: true });
      }
    }
  } catch {
    // A cache that cannot be written costs the next start its compile time, nothing else.
  }
}

/** `<user cache dir>/stepthread/…`, or nothing when there is no such place ($XDG_CACHE_HOME, else ~/.cache). */
function cacheFileFor(path: string): string | undefined {
  try {
    const base = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
    const { size, mtimeMs } = statSync(path);
    const key = `${process.version}-${process.arch}-${size}-${Math.round(mtimeMs)}`;
    return join(base, 'stepthread', `store-server-${key}.v8cache`);
  } catch {
    return undefined;
  }
}
