/**
 * The stepthread version, read from the package's own package.json: the nearest one named
 * `stepthread` above this module (cli/ in a checkout; dist/cli/ or dist/bin/ in the installed
 * package), so the checkout and the package report the version they are.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let version: string | undefined;

export function packageVersion(): string {
  if (version !== undefined) return version;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      const manifest = JSON.parse(readFileSync(file, 'utf8')) as { name?: unknown; version?: unknown };
      if (manifest.name === 'stepthread' && typeof manifest.version === 'string') {
        version = manifest.version;
        return version;
      }
    }
    const parent = dirname(dir);
    if (parent === dir)
      throw new Error(`no package.json of stepthread above ${fileURLToPath(import.meta.url)}`);
    dir = parent;
  }
}
