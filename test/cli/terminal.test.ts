/**
 * A person answers a USER_INTERACTION at the terminal: `stepthread run` in a real pseudo-terminal
 * (util-linux `script`), answered when the question appears on screen.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
const hasScript = spawnSync('script', ['--version']).status === 0;
if (!hasScript) console.warn('terminal.test.ts: skipped — util-linux `script` (a pty) is not installed');

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'stepthread-tty-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

/** Runs `command` in a pty; each time `when` appears in the output (after the last answer), types the next answer. */
function inTerminal(
  command: string,
  answers: { when: string; type: string }[],
): Promise<{ code: number; screen: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('script', ['-qec', command, '/dev/null'], {
      cwd: dir,
      env: { ...process.env, CI: '' },
    });
    let screen = '';
    let answered = 0;
    child.stdout.on('data', (chunk: Buffer) => {
      screen += chunk.toString();
      const next = answers[0];
      if (next && screen.slice(answered).includes(next.when)) {
        answered = screen.length;
        answers.shift();
        child.stdin.write(next.type);
      }
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, screen });
    });
  });
}

describe.runIf(hasScript)('answering on the terminal', () => {
  it('asks the approval question and continues with the answer', async () => {
    const input = JSON.stringify({ ticket: { subject: 'Charged twice', customer: 'Ada', monthlyFee: 30 } });
    const command = `node ${join(ROOT, 'bin/stepthread.js')} run ${join(ROOT, 'examples/support-triage.json')} --input '${input}' --json`;
    const { code, screen } = await inTerminal(command, [
      { when: 'y/n [reason]:', type: 'n already refunded\n' },
    ]);
    expect(screen).toContain('Grant Ada a goodwill credit of 20% of their 30 EUR monthly fee?');
    expect(code).toBe(0);
    const json = screen.slice(screen.indexOf('{\r\n  "executionId"'));
    const result = JSON.parse(json.replaceAll('\r\n', '\n')) as {
      status: string;
      output: Record<string, unknown>;
    };
    expect(result.status).toBe('COMPLETED');
    expect(result.output).toMatchObject({ approved: false, credit: { amount: 0, currency: 'EUR' } });
  });
});
