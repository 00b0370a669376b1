/**
 * One holder per execution (issue 31 item 6): two `resume`s of one interrupted run started together
 * ran it twice (the final state right, a side effect doubled). The run record is the lock now: of two
 * takeovers of the same dead holder's record one lands, the other is EXECUTION_BUSY naming the holder;
 * a holder lets go when its run returns. Checked on the record itself (two takeovers at once, then a
 * release) and end to end: two resume processes launched together, one HTTP POST.
 */
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAwsClients } from '../../functions/aws/clients.ts';
import {
  getLocalRun,
  isRunnerAlive,
  recordLocalRun,
  releaseLocalRun,
} from '../../functions/local/run-registry.ts';
import { cliProcess } from '../support/cli-process.ts';
import { type E2e, startE2e, valid } from './helpers.ts';

let e2e: E2e;
let dir: string;
let posts = 0;
const side = createServer((request, response) => {
  if (request.method === 'POST') posts += 1;
  request.resume();
  // Held a moment, so the first resume still runs when the second, launched with it, has started.
  request.on('end', () =>
    setTimeout(() => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end('{"sent":true}');
    }, 1000),
  );
});
let sideUrl: string;

beforeAll(async () => {
  e2e = await startE2e('resume-once');
  dir = await mkdtemp(join(tmpdir(), 'stepthread-resume-once-'));
  await new Promise<void>((resolve) => side.listen(0, '127.0.0.1', resolve));
  sideUrl = `http://127.0.0.1:${(side.address() as AddressInfo).port}`;
});
afterAll(async () => {
  side.closeAllConnections();
  await new Promise((resolve) => (side as Server).close(resolve));
  await rm(dir, { recursive: true, force: true });
  await e2e.close();
});

/** A question, then one POST: a run stopped at the question sends it only when resumed. */
function notifyWorkflow() {
  return valid({
    id: 'notify-once',
    version: 1,
    tools: {
      notify: {
        description: 'Tells the team',
        parameters: { type: 'object' },
        handler: { kind: 'http', url: `${sideUrl}/notify`, method: 'POST', allowPrivateNetwork: true },
      },
    },
    nodes: [
      { id: 'start', type: 'START' },
      {
        id: 'approve',
        type: 'USER_INTERACTION',
        config: { userInteractionType: 'ask_for_approval', showMessage: 'Send it?', timeoutSeconds: 3600 },
      },
      { id: 'send', type: 'TOOL', config: { toolName: 'notify', arguments: { text: 'hello' } } },
      { id: 'end', type: 'END', config: { output: { sent: '{{nodes.send.sent}}' } } },
    ],
    edges: [
      { from: 'start', to: 'approve' },
      { from: 'approve', to: 'send' },
      { from: 'send', to: 'end' },
    ],
  });
}

/** A pid no process has any more. */
const gonePid = () => spawnSync(process.execPath, ['-e', '']).pid;

describe('one holder per execution', () => {
  it("lets one of two takeovers of a dead holder's record land, the other EXECUTION_BUSY naming the holder; released, it is free again", async () => {
    const clients = createAwsClients(e2e.services.target, {
      tableName: 'e2e-resume-once',
      bucketName: 'e2e-resume-once',
    });
    const workflow = notifyWorkflow();
    const executionId = 'exec-taken-twice';
    const now = () => new Date().toISOString();
    await recordLocalRun(clients, { executionId, workflow, now: now() });
    // Its process died.
    await clients.dynamo.send(
      new UpdateCommand({
        TableName: 'e2e-resume-once',
        Key: { pk: `EXEC#${executionId}`, sk: 'LOCAL' },
        UpdateExpression: 'SET pid = :pid',
        ExpressionAttributeValues: { ':pid': gonePid() },
      }),
    );
    const dead = (await getLocalRun(clients, executionId))!;
    expect(isRunnerAlive(dead)).toBe(false);
    // Two resumes found it dead at the same moment; both try to take it over.
    const takes = await Promise.allSettled(
      [0, 1].map(() =>
        recordLocalRun(clients, { executionId, workflow, now: now(), takingOver: { held: dead } }),
      ),
    );
    expect(takes.map((take) => take.status).sort()).toEqual(['fulfilled', 'rejected']);
    const refused = takes.find((take) => take.status === 'rejected')!.reason;
    expect(refused).toMatchObject({ code: 'EXECUTION_BUSY' });
    expect(refused.message).toContain(`execution ${executionId} is being run by process ${process.pid}`);
    const held = (await getLocalRun(clients, executionId))!;
    expect(isRunnerAlive(held)).toBe(true);
    // A takeover of a record that is gone by now (taken meanwhile) is refused the same way.
    await expect(
      recordLocalRun(clients, { executionId, workflow, now: now(), takingOver: { held: undefined } }),
    ).rejects.toMatchObject({ code: 'EXECUTION_BUSY' });
    // The holder's run returned: free, though this process lives; a stale release changes nothing.
    await releaseLocalRun(clients, held);
    const released = (await getLocalRun(clients, executionId))!;
    expect(isRunnerAlive(released)).toBe(false);
    const again = await recordLocalRun(clients, {
      executionId,
      workflow,
      now: now(),
      takingOver: { held: released },
    });
    await releaseLocalRun(clients, held);
    expect(isRunnerAlive((await getLocalRun(clients, executionId))!)).toBe(true);
    await releaseLocalRun(clients, again);
  });

  it('runs an interrupted run once when two resumes start together: one POST, the other EXECUTION_BUSY', async () => {
    const file = join(dir, 'notify.json');
    await writeFile(file, JSON.stringify(notifyWorkflow()));
    for (let trial = 0; trial < 3; trial += 1) {
      const dataDir = join(dir, `data-${trial}`);
      const cli = (...args: string[]) =>
        cliProcess([...args, '--data-dir', dataDir], { cwd: dir, env: { STEPTHREAD_DATA_DIR: '' } });
      // No terminal and no answers: the run stops at the question, its process gone.
      const stopped = await cli('run', file);
      expect(stopped.code, stopped.stderr).toBe(1);
      const executionId = /started execution (\S+)/.exec(stopped.stderr)![1]!;
      posts = 0;
      const both = await Promise.all(
        [0, 1].map(() => cli('resume', executionId, '--answers', '{"approve":true}', '--json')),
      );
      const codes = both.map((result) => result.code).sort();
      expect({ trial, codes, posts }).toEqual({ trial, codes: [0, 1], posts: 1 });
      const winner = both.find((result) => result.code === 0)!;
      expect(JSON.parse(winner.stdout)).toMatchObject({ status: 'COMPLETED', output: { sent: true } });
      const loser = both.find((result) => result.code === 1)!;
      expect(loser.stderr).toMatch(
        new RegExp(`EXECUTION_BUSY: execution ${executionId} is being run by process \\d+`),
      );
    }
  }, 180_000);
});
