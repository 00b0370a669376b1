/**
 * Tasks that name their node by reference (`node: { id, ref }`): the dispatch puts the description from
 * the node table in its place before a handler runs; the Lambdas read tables from the bucket, once each,
 * checked against their ref; a table that cannot be read fails the node with NODE_TABLE_NOT_FOUND.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileWorkflow } from '../../../engine/asl/index.ts';
import type { Envelope } from '../../../engine/thread/types.ts';
import { createAwsClients } from '../../../functions/aws/clients.ts';
import type { HandlerDeps } from '../../../functions/handlers/deps.ts';
import { createDispatch } from '../../../functions/handlers/dispatch-table.ts';
import { memoryNodeTables } from '../../../functions/handlers/node-tables.ts';
import { type LocalServices, startLocalServices } from '../../../functions/local/services.ts';
import { createS3NodeTables, nodeTableKey, putNodeTable } from '../../../functions/stores/node-tables.ts';
import { valid } from '../../e2e/helpers.ts';

const workflow = valid({
  id: 'tables',
  version: 1,
  variables: [{ name: 'n', type: 'number', initial: 0 }],
  nodes: [
    { id: 'start', type: 'START' },
    {
      id: 'bump',
      type: 'VARIABLE',
      config: { variableName: 'n', variableType: 'number', expression: 'n + 1' },
    },
    { id: 'end', type: 'END' },
  ],
  edges: [
    { from: 'start', to: 'bump' },
    { from: 'bump', to: 'end' },
  ],
});
const { nodeTable } = compileWorkflow(workflow);
const envelope = {
  executionId: 'e',
  workflowId: 'tables',
  workflowVersion: 1,
  rootThreadId: 't',
  threadId: 't',
  step: 1,
  maxSteps: 10,
};

/** A VARIABLE function that answers with the node it was given. */
const dispatch = createDispatch({
  VARIABLE: { execute: async (event) => ({ ...event.envelope, seen: event.node }) as unknown as Envelope },
});

function failure(error: unknown): { name: string; code: string } {
  const e = error as Error;
  return { name: e.name, code: (JSON.parse(e.message) as { code: string }).code };
}

describe('the dispatch with a node named by reference', () => {
  it('gives the handler the description from the node table', async () => {
    const tables = memoryNodeTables();
    tables.add(nodeTable.ref, nodeTable.json);
    const deps = { nodeTables: tables } as unknown as HandlerDeps;
    const result = await dispatch({ node: { id: 'bump', ref: nodeTable.ref }, envelope }, deps);
    expect((result as unknown as { seen: unknown }).seen).toMatchObject({
      id: 'bump',
      type: 'VARIABLE',
      config: { expression: 'n + 1' },
    });
  });

  it('fails the node with NODE_TABLE_NOT_FOUND for a table it cannot find, or a node the table lacks', async () => {
    const deps = { nodeTables: memoryNodeTables() } as unknown as HandlerDeps;
    const missing = await dispatch({ node: { id: 'bump', ref: nodeTable.ref }, envelope }, deps).catch(
      failure,
    );
    expect(missing).toEqual({ name: 'stepthread.NodeFailed', code: 'NODE_TABLE_NOT_FOUND' });
    const tables = memoryNodeTables();
    tables.add(nodeTable.ref, nodeTable.json);
    const other = await dispatch({ node: { id: 'nope', ref: nodeTable.ref }, envelope }, {
      nodeTables: tables,
    } as unknown as HandlerDeps).catch(failure);
    expect(other).toEqual({ name: 'stepthread.NodeFailed', code: 'NODE_TABLE_NOT_FOUND' });
  });

  it('refuses a table whose content is not what its ref names', () => {
    const tables = memoryNodeTables();
    expect(() => tables.add(nodeTable.ref, nodeTable.json.replace('n + 1', 'n + 2'))).toThrow(
      expect.objectContaining({ code: 'NODE_TABLE_NOT_FOUND' }),
    );
  });
});

describe('node tables in the bucket', () => {
  let services: LocalServices;
  beforeAll(async () => {
    services = await startLocalServices({
      ephemeral: true,
      names: { tableName: 'node-tables', bucketName: 'node-tables' },
    });
  });
  afterAll(() => services?.close());

  it('reads a stored table once, and reports a missing one as NODE_TABLE_NOT_FOUND naming its key', async () => {
    const { s3 } = createAwsClients(services.target, { tableName: 'node-tables', bucketName: 'node-tables' });
    let gets = 0;
    const counting = {
      send: ((command: { constructor: { name: string } }) => {
        if (command.constructor.name === 'GetObjectCommand') gets += 1;
        return s3.send(command as never);
      }) as typeof s3.send,
      destroy: () => s3.destroy(),
    };
    const source = createS3NodeTables({ s3: async () => counting, bucketName: 'node-tables' });
    await expect(source.table(nodeTable.ref)).rejects.toMatchObject({
      code: 'NODE_TABLE_NOT_FOUND',
      message: expect.stringContaining(`s3://node-tables/${nodeTableKey(nodeTable.ref)}`),
    });
    // A missing table is looked for again by the next Task: the deploy may store it after all.
    await putNodeTable(s3, 'node-tables', nodeTable);
    gets = 0;
    const counted = [await source.table(nodeTable.ref), await source.table(nodeTable.ref)];
    expect(counted[0]).toMatchObject({ workflowId: 'tables', nodes: { bump: { type: 'VARIABLE' } } });
    expect(counted[1]).toBe(counted[0]);
    expect(gets).toBe(1);
  });
});
