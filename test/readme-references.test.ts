/**
 * Keeps the README's "checked by" references true: every test path it names (`test/…`, in backticks or
 * as a link) exists, and every test file it names is one that `npm test` or `npm run test:cloud` runs.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');

/** Paths under test/ named in inline code (`test/x.ts`, `npx vitest run test/localstack`) or in link targets. */
function testPathsIn(markdown: string): string[] {
  const inCode = [...markdown.matchAll(/`([^`\n]+)`/g)].flatMap((code) =>
    [...code[1]!.matchAll(/(?:^|[\s(])(test\/[\w./-]*[\w/])/g)].map((match) => match[1]!),
  );
  const inLinks = [...markdown.matchAll(/\]\((test\/[^)\s#]+)\)/g)].map((match) => match[1]!);
  return [...new Set([...inCode, ...inLinks])].sort();
}

describe('README test references', () => {
  const paths = testPathsIn(readme);

  it('finds the references, in code and in links', () => {
    expect(testPathsIn('see `test/a.test.ts`, `npx vitest run test/b` and [c](test/c.sh)')).toEqual([
      'test/a.test.ts',
      'test/b',
      'test/c.sh',
    ]);
    expect(paths.length).toBeGreaterThan(20);
  });

  it.each(paths)('%s exists', (path) => {
    expect(existsSync(join(root, path))).toBe(true);
  });

  it.each(paths.filter((path) => path.endsWith('.ts') && /\.(test|suite)\.ts$/.test(path)))(
    '%s is run by npm test or npm run test:cloud',
    (path) => {
      // vitest.config.ts: test/**/*.test.ts; test/cloud/vitest.config.ts: test/cloud/**/*.suite.ts.
      expect(
        path.endsWith('.test.ts') || (path.startsWith('test/cloud/') && path.endsWith('.suite.ts')),
      ).toBe(true);
    },
  );
});
