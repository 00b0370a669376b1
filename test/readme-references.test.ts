/**
 * Keeps the documentation's references to tests true: every test path the README or docs/ name
 * (`test/…`, in backticks or as a link) exists, and every test file they name is one that `npm test` or
 * `npm run test:cloud` runs.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..');
const documents = [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((file) => file.endsWith('.md'))
    .map((file) => `docs/${file}`),
];
const text = documents.map((path) => readFileSync(join(root, path), 'utf8')).join('\n');

/** Paths under test/ named in inline code (`test/x.ts`, `npx vitest run test/localstack`) or in link targets. */
function testPathsIn(markdown: string): string[] {
  const inCode = [...markdown.matchAll(/`([^`\n]+)`/g)].flatMap((code) =>
    [...code[1]!.matchAll(/(?:^|[\s(])(test\/[\w./-]*[\w/])/g)].map((match) => match[1]!),
  );
  const inLinks = [...markdown.matchAll(/\]\((?:\.\.\/)?(test\/[^)\s#]+)\)/g)].map((match) => match[1]!);
  return [...new Set([...inCode, ...inLinks])].sort();
}

describe('test references in the README and docs/', () => {
  const paths = testPathsIn(text);

  it('finds the references, in code and in links', () => {
    expect(
      testPathsIn('see `test/a.test.ts`, `npx vitest run test/b`, [c](test/c.sh) and [d](../test/d.ts)'),
    ).toEqual(['test/a.test.ts', 'test/b', 'test/c.sh', 'test/d.ts']);
    expect(paths.length).toBeGreaterThan(0);
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
