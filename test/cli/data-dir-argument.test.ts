/** The `--data-dir` a printed resume command carries, quoted for a POSIX shell when it needs to be. */
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { dataDirArgument } from '../../cli/local-session.ts';

describe('dataDirArgument', () => {
  it('is empty without --data-dir, and the path as is when it is plain', () => {
    expect(dataDirArgument({})).toBe('');
    expect(dataDirArgument({ dataDir: '/tmp/runs-1/data' })).toBe(' --data-dir /tmp/runs-1/data');
  });

  it('quotes spaces, quotes and shell characters so the shell gives back the same path', () => {
    for (const dir of ["/tmp/my runs/it's here", '/tmp/$HOME;rm -rf x', '/tmp/a`b`']) {
      const argument = dataDirArgument({ dataDir: dir });
      const echoed = execFileSync('sh', ['-c', `printf '%s' ${argument.replace(' --data-dir ', '')}`], {
        encoding: 'utf8',
      });
      expect(echoed).toBe(dir);
    }
  });
});
