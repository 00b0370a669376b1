/**
 * The commands the CLI prints for the user to run next (resume, respond, runs, inspect) are written as
 * the user ran it: `npm run stepthread -- …` in a checkout, `npx stepthread …` through npx,
 * `stepthread …` otherwise.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliInvocation, inUserForm } from '../../cli/invocation.ts';
import { runCli } from '../support/cli.ts';
import { cliProcess } from '../support/cli-process.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const EXAMPLE = join(ROOT, 'examples', 'support-triage.json');
const TICKET = { ticket: { subject: 'Charged twice this month', customer: 'Ada', monthlyFee: 30 } };

/** What npm sets for `npm run stepthread -- …` (npm 11; npm 10 says run-script). */
const NPM_RUN = {
  npm_lifecycle_event: 'stepthread',
  npm_command: 'run',
  npm_lifecycle_script: 'node bin/stepthread.js',
};
/** What npm sets for `npx stepthread …`. */
const NPX = { npm_lifecycle_event: 'npx', npm_command: 'exec', npm_lifecycle_script: "'stepthread'" };

describe('cliInvocation', () => {
  it('reads how npm, npx, yarn or pnpm started the process', () => {
    expect(cliInvocation({})).toBe('stepthread');
    expect(cliInvocation(NPM_RUN)).toBe('npm run stepthread --');
    expect(cliInvocation({ ...NPM_RUN, npm_command: 'run-script' })).toBe('npm run stepthread --');
    expect(cliInvocation(NPX)).toBe('npx stepthread');
    expect(cliInvocation({ ...NPX, npm_lifecycle_script: "'stepthread@0.2.0'" })).toBe(
      'npx stepthread@0.2.0',
    );
    expect(
      cliInvocation({
        npm_lifecycle_event: 'stepthread',
        npm_config_user_agent: 'yarn/1.22.22 npm/? node/v22',
      }),
    ).toBe('yarn stepthread');
    expect(
      cliInvocation({
        ...NPM_RUN,
        npm_command: 'run-script',
        npm_config_user_agent: 'pnpm/9.0.0 npm/? node/v22',
      }),
    ).toBe('pnpm stepthread');
  });

  it('is not fooled by a process that npm started for something else (a test runner under npx or npm test)', () => {
    // What the CLI inherits when `npx vitest` or `npm test` started its parent.
    expect(cliInvocation({ ...NPX, npm_lifecycle_script: "'vitest'" })).toBe('stepthread');
    expect(
      cliInvocation({ npm_lifecycle_event: 'test', npm_command: 'run', npm_lifecycle_script: 'vitest' }),
    ).toBe('stepthread');
  });
});

describe('inUserForm', () => {
  it('writes the commands a message names in the form the user ran, leaving forms already written out', () => {
    const message =
      'thread t-1 is COMPLETED; copy it (stepthread copy t-1) and run the copy; `stepthread pending` lists';
    expect(inUserForm(message, 'npm run stepthread --')).toBe(
      'thread t-1 is COMPLETED; copy it (npm run stepthread -- copy t-1) and run the copy; `npm run stepthread -- pending` lists',
    );
    expect(inUserForm(message, 'stepthread')).toBe(message);
    expect(inUserForm('go on with: npx stepthread resume e-1', 'npx stepthread')).toBe(
      'go on with: npx stepthread resume e-1',
    );
    expect(inUserForm('go on with: npm run stepthread -- resume e-1', 'npm run stepthread --')).toBe(
      'go on with: npm run stepthread -- resume e-1',
    );
    // The program's own name before a colon, and words that are not its commands, stay.
    expect(inUserForm('stepthread: run FAILED; stepthread stores', 'npx stepthread')).toBe(
      'stepthread: run FAILED; stepthread stores',
    );
  });
});

describe('printed commands', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'stepthread-invocation-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('a run stopped at a question says how to go on as the user ran it; runs, pending and inspect too', async () => {
    const dataDir = join(dir, 'data');
    const stopped = await cliProcess(
      ['run', EXAMPLE, '--input', JSON.stringify(TICKET), '--data-dir', dataDir],
      { cwd: dir, env: NPM_RUN },
    );
    expect(stopped.code).toBe(1);
    const executionId = /started execution (\S+)/.exec(stopped.stderr)?.[1];
    const tail = `resume ${executionId} --answers '{"approve-credit":true}' --data-dir ${dataDir}`;
    expect(stopped.stderr).toContain(`the run stops here, and goes on with: npm run stepthread -- ${tail}\n`);

    // The same run listed through npx, and read with no npm around it.
    const runs = await runCli(['runs', '--data-dir', dataDir], { cwd: dir, env: NPX });
    expect(runs.stdout).toContain(`  ↳ resume with: npx stepthread ${tail}\n`);
    const pending = await runCli(['pending', executionId!, '--data-dir', dataDir], { cwd: dir, env: NPX });
    expect(pending.stdout).toContain(`resume it with the answer: npx stepthread ${tail}\n`);
    const inspected = await runCli(['inspect', executionId!, '--data-dir', dataDir], {
      cwd: dir,
      env: NPM_RUN,
    });
    expect(inspected.stdout).toContain(`its process is gone; resume with: npm run stepthread -- ${tail}\n`);
    expect(inspected.stdout).toContain(`    answer with: npm run stepthread -- ${tail}\n`);
    const plain = await runCli(['inspect', executionId!, '--data-dir', dataDir], { cwd: dir, env: {} });
    expect(plain.stdout).toContain(`its process is gone; resume with: stepthread ${tail}\n`);
    const unknown = await runCli(['inspect', 'nope', '--data-dir', dataDir], { cwd: dir, env: NPM_RUN });
    expect(unknown.stderr).toContain(
      `(npm run stepthread -- runs --data-dir ${dataDir} lists the executions here)`,
    );
  }, 60_000);

  it('a message made below the CLI names its command as the user ran it (run --thread of an ended thread)', async () => {
    const dataDir = join(dir, 'ended');
    const done = await runCli(
      [
        'run',
        EXAMPLE,
        '--json',
        '--input',
        JSON.stringify(TICKET),
        '--answers',
        '{"approve-credit": true}',
        '--data-dir',
        dataDir,
      ],
      { cwd: dir, env: {} },
    );
    const { threadId } = JSON.parse(done.stdout) as { threadId: string };
    const again = await runCli(['run', EXAMPLE, '--thread', threadId, '--data-dir', dataDir], {
      cwd: dir,
      env: NPM_RUN,
    });
    expect(again.code).not.toBe(0);
    expect(again.stderr).toContain(`copy it (npm run stepthread -- copy ${threadId})`);
  }, 60_000);
});
