/**
 * The stepthread package this CLI runs from: its folder (the nearest one above this module whose
 * package.json is stepthread's: the checkout's root, or node_modules/stepthread with the CLI in
 * dist/cli/ or dist/bin/) and its version.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

interface PackageInfo {
  readonly root: string;
  readonly version: string;
}

let found: PackageInfo | undefined;

function packageInfo(): PackageInfo {
  if (found !== undefined) return found;
  const here = fileURLToPath(import.meta.url);
  for (let dir = dirname(here); ; dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      const manifest = JSON.parse(readFileSync(file, 'utf8')) as { name?: unknown; version?: unknown };
      if (manifest.name === 'stepthread' && typeof manifest.version === 'string') {
        found = { root: dir, version: manifest.version };
        return found;
      }
    }
    if (dirname(dir) === dir) throw new Error(`no package.json of stepthread above ${here}`);
  }
}

export function packageVersion(): string {
  return packageInfo().version;
}

export function packageRoot(): string {
  return packageInfo().root;
}
