/**
 * `inspect` lists a run's fork children in their FORK's forkPathIds order and a list's items by
 * index: they start in the same millisecond, and the store lists threads by hashed id.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DeleteCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InspectReport } from '../../cli/commands/inspect.ts';
import { createAwsClients } from '../../functions/aws/clients.ts';
import { openDataDir } from '../../functions/local/data-dir-server.ts';
import { runCli } from '../support/cli.ts';
import { manyForks, manyForksInput, manyForksPathOrder } from '../support/many-forks.ts';

let dir: string;
const cli = (...args: string[]) => runCli([...args, '--data-dir', join(dir, 'data')], { cwd: dir });

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'stepthread-inspect-fork-order-'));
  await writeFile(join(dir, 'many-forks.json'), JSON.stringify(manyForks));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('inspect on a run with FORKs', () => {
  it("lists fork children in their FORK's path order, a list's items by index (--json and text)", async () => {
    const run = await cli('run', join(dir, 'many-forks.json'), '--input', JSON.stringify(manyForksInput));
    expect(run.code, run.stderr).toBe(0);
    const executionId = /^execution (\S+)/m.exec(run.stdout)![1]!;
    const json = await cli('inspect', executionId, '--json');
    const report = JSON.parse(json.stdout) as InspectReport;
    expect(report.threads.map((thread) => thread.forkPathId ?? 'root')).toEqual([
      'root',
      ...manyForksPathOrder,
    ]);
    const pathOf = new Map(report.threads.map((thread) => [thread.threadId, thread.forkPathId]));
    expect(report.threads[0]!.children.map((id) => pathOf.get(id))).toEqual(manyForksPathOrder);
    const text = await cli('inspect', executionId);
    const listed = [...text.stdout.matchAll(/path (\S+\/\S+)/g)].map((match) => match[1]);
    expect(listed).toEqual(manyForksPathOrder);
  });

  it("lists them in that order for a run no local process recorded (a deployed stack's): its FORK steps name their paths", async () => {
    const run = await cli('run', join(dir, 'many-forks.json'), '--input', JSON.stringify(manyForksInput));
    expect(run.code, run.stderr).toBe(0);
    const executionId = /^execution (\S+)/m.exec(run.stdout)![1]!;
    // What a deployed run lacks: the local run's record, which holds the workflow it ran.
    const services = await openDataDir(join(dir, 'data'));
    try {
      const { dynamo } = createAwsClients(services.target, services.names);
      await dynamo.send(
        new DeleteCommand({
          TableName: services.names.tableName,
          Key: { pk: `EXEC#${executionId}`, sk: 'LOCAL' },
        }),
      );
    } finally {
      await services.close();
    }
    const report = JSON.parse((await cli('inspect', executionId, '--json')).stdout) as InspectReport;
    expect(report.threads.map((thread) => thread.forkPathId ?? 'root')).toEqual([
      'root',
      ...manyForksPathOrder,
    ]);
  });
});
