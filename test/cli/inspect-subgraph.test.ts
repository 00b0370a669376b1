/**
 * `inspect` on a run with SUBGRAPHs: each SUBGRAPH is a node run of its own, and its inlined child
 * START and END show as START and END (not as SUBGRAPH, the type their events carry), each node inside
 * a subgraph naming the SUBGRAPH it belongs to — nested subgraphs and a failing one included.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InspectReport } from '../../cli/commands/inspect.ts';
import { runCli } from '../support/cli.ts';

let dir: string;
const cli = (...args: string[]) => runCli([...args, '--data-dir', join(dir, 'data')], { cwd: dir });

/** START → the nodes in order → END, as a (child) workflow. */
function chain(id: string, middle: Record<string, unknown>[]) {
  const nodes = [{ id: 'begin', type: 'START' }, ...middle, { id: 'finish', type: 'END' }];
  return {
    id,
    version: 1,
    nodes,
    edges: nodes.slice(1).map((node, i) => ({ from: nodes[i]!.id, to: node.id })),
  };
}

/** outer (SUBGRAPH) → inner (SUBGRAPH) → work (CODE, `code`). */
function nested(id: string, code: string) {
  const work = { id: 'work', type: 'CODE', config: { code } };
  const inner = { id: 'inner', type: 'SUBGRAPH', config: { workflow: chain('inner', [work]) } };
  const outer = { id: 'outer', type: 'SUBGRAPH', config: { workflow: chain('outer', [inner]) } };
  return { ...chain(id, [outer]) };
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'stepthread-inspect-subgraph-'));
  await writeFile(join(dir, 'nested.json'), JSON.stringify(nested('nested', 'return 1')));
  await writeFile(join(dir, 'fails.json'), JSON.stringify(nested('fails', 'throw new Error("no")')));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

async function runOf(file: string): Promise<string> {
  const { stdout } = await cli('run', join(dir, file));
  return /^execution (\S+)/m.exec(stdout)![1]!;
}

async function rootRuns(executionId: string) {
  const { code, stdout } = await cli('inspect', executionId, '--json');
  expect(code).toBe(0);
  const report = JSON.parse(stdout) as InspectReport;
  return report.threads[0]!.nodes.map(({ nodeId, nodeType, subgraphNodeId, status }) => ({
    nodeId,
    nodeType,
    ...(subgraphNodeId ? { subgraphNodeId } : {}),
    status,
  }));
}

describe('inspect on a run with SUBGRAPHs', () => {
  it('lists each SUBGRAPH with its status and its child START and END as START and END in it (--json)', async () => {
    const executionId = await runOf('nested.json');
    const done = 'COMPLETED';
    expect(await rootRuns(executionId)).toEqual([
      { nodeId: 'begin', nodeType: 'START', status: done },
      { nodeId: 'outer', nodeType: 'SUBGRAPH', status: done },
      { nodeId: 'outer.begin', nodeType: 'START', subgraphNodeId: 'outer', status: done },
      { nodeId: 'outer.inner', nodeType: 'SUBGRAPH', subgraphNodeId: 'outer', status: done },
      { nodeId: 'outer.inner.begin', nodeType: 'START', subgraphNodeId: 'outer.inner', status: done },
      { nodeId: 'outer.inner.work', nodeType: 'CODE', subgraphNodeId: 'outer.inner', status: done },
      { nodeId: 'outer.inner.finish', nodeType: 'END', subgraphNodeId: 'outer.inner', status: done },
      { nodeId: 'outer.finish', nodeType: 'END', subgraphNodeId: 'outer', status: done },
      { nodeId: 'finish', nodeType: 'END', status: done },
    ]);
  });

  it('prints the same in text: real types, and the SUBGRAPH each node is in', async () => {
    const executionId = await runOf('nested.json');
    const { stdout } = await cli('inspect', executionId);
    const listed = stdout
      .split('\n')
      .filter((line) => /^ {2}(step \d+ +| {9})[A-Z]+ /.test(line))
      .map((line) => line.replace(/^ {2}(step \d+ +| {9})/, '').replace(/ {2}\d+ ms$/, ''));
    expect(listed).toEqual([
      'COMPLETED begin (START)',
      'COMPLETED outer (SUBGRAPH)',
      'COMPLETED outer.begin (START in SUBGRAPH outer)',
      'COMPLETED outer.inner (SUBGRAPH in SUBGRAPH outer)',
      'COMPLETED outer.inner.begin (START in SUBGRAPH outer.inner)',
      'COMPLETED outer.inner.work (CODE in SUBGRAPH outer.inner)',
      'COMPLETED outer.inner.finish (END in SUBGRAPH outer.inner)',
      'COMPLETED outer.finish (END in SUBGRAPH outer)',
      'COMPLETED finish (END)',
    ]);
  });

  it('shows the SUBGRAPHs a failure ends as FAILED, after the START that opened each', async () => {
    const executionId = await runOf('fails.json');
    expect(await rootRuns(executionId)).toEqual([
      { nodeId: 'begin', nodeType: 'START', status: 'COMPLETED' },
      { nodeId: 'outer', nodeType: 'SUBGRAPH', status: 'FAILED' },
      { nodeId: 'outer.begin', nodeType: 'START', subgraphNodeId: 'outer', status: 'COMPLETED' },
      { nodeId: 'outer.inner', nodeType: 'SUBGRAPH', subgraphNodeId: 'outer', status: 'FAILED' },
      { nodeId: 'outer.inner.begin', nodeType: 'START', subgraphNodeId: 'outer.inner', status: 'COMPLETED' },
      { nodeId: 'outer.inner.work', nodeType: 'CODE', subgraphNodeId: 'outer.inner', status: 'FAILED' },
    ]);
  });
});
