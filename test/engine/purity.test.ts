import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

// engine/ must stay pure: no AWS SDK, no I/O, no clocks or randomness. These are the only packages it may import.
const ALLOWED_PACKAGES = new Set(['zod', 'jsep']);
const FORBIDDEN_GLOBALS = [
  /\bprocess\./,
  /\bfetch\(/,
  /\brequire\(/,
  /\bDate\.now\(/,
  /\bMath\.random\(/,
  /\bnew Date\(\)/,
  /\bset(Timeout|Interval)\(/,
  /\beval\(/,
  /\bnew Function\(/,
];

const engineDir = join(import.meta.dirname, '..', '..', 'engine');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

function importedSpecifiers(source: string): string[] {
  const specifiers: string[] = [];
  const pattern =
    /(?:^|\n)\s*(?:import|export)\b[^'"]*?from\s*['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)|(?:^|\n)\s*import\s*['"]([^'"]+)['"]/g;
  for (const match of source.matchAll(pattern)) specifiers.push((match[1] ?? match[2] ?? match[3])!);
  return specifiers;
}

// Scripts that write files (e.g. regenerating the JSON Schema) are tooling, not engine logic.
const TOOLING = new Set(['model/write-json-schema.ts']);

describe('engine purity', () => {
  const files = sourceFiles(engineDir).filter((file) => !TOOLING.has(relative(engineDir, file)));

  it('has source files to check', () => {
    expect(files.length).toBeGreaterThan(5);
  });

  it.each(files.map((file) => [relative(engineDir, file), file]))(
    '%s imports only engine modules, zod and jsep',
    (_name, file) => {
      const offending = importedSpecifiers(readFileSync(file, 'utf8')).filter((specifier) => {
        if (specifier.startsWith('.')) return false;
        const pkg = specifier.startsWith('@')
          ? specifier.split('/').slice(0, 2).join('/')
          : specifier.split('/')[0]!;
        return !ALLOWED_PACKAGES.has(pkg);
      });
      expect(offending).toEqual([]);
    },
  );

  it.each(files.map((file) => [relative(engineDir, file), file]))(
    '%s uses no I/O, clock or randomness globals',
    (_name, file) => {
      const code = readFileSync(file, 'utf8').replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '');
      expect(FORBIDDEN_GLOBALS.filter((pattern) => pattern.test(code)).map(String)).toEqual([]);
    },
  );

  it('detects a forbidden import (the check can fail)', () => {
    expect(
      importedSpecifiers("import { S3Client } from '@aws-sdk/client-s3';\nimport x from 'node:fs';"),
    ).toEqual(['@aws-sdk/client-s3', 'node:fs']);
  });
});
