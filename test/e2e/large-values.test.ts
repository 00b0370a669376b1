/**
 * Values of any size by reference: a 5 MB input and a 20 MB tool result travel through a run as
 * references to S3 objects, every state payload stays small, DynamoDB items stay small, and inspect
 * shows both with their sizes.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildInspectReport, previewValue } from '../../cli/commands/inspect.ts';
import { itemBytes } from '../../functions/aws/write-meter.ts';
import { isValueRef } from '../../functions/stores/value-refs.ts';
import { type E2e, PAYLOAD_LIMIT_BYTES, ROOT, startE2e, valid } from './helpers.ts';

let e2e: E2e;
beforeAll(async () => {
  e2e = await startE2e('large-values');
});
afterAll(() => e2e.close());

const MB = 1024 * 1024;

const workflow = valid({
  id: 'large-values',
  version: 1,
  variables: [{ name: 'report', type: 'string', scope: 'thread' }],
  tools: {
    export: {
      description: 'Exports a large report',
      parameters: { type: 'object', properties: { size: { type: 'number' } }, required: ['size'] },
      handler: 'module:tools.mjs#report',
    },
  },
  nodes: [
    { id: 'start', type: 'START' },
    {
      id: 'fetch',
      type: 'TOOL',
      config: { toolName: 'export', arguments: { size: 20 * MB }, outputVariable: 'report' },
    },
    {
      id: 'measure',
      type: 'VARIABLE',
      config: { variableName: 'report', variableType: 'string', expression: "slice(report, 0, 10) + '…'" },
    },
    {
      id: 'end',
      type: 'END',
      config: {
        output: { inputLength: '{{len(input.document)}}', head: '{{report}}', tool: '{{len(nodes.fetch)}}' },
      },
    },
  ],
  edges: [
    { from: 'start', to: 'fetch' },
    { from: 'fetch', to: 'measure' },
    { from: 'measure', to: 'end' },
  ],
});

describe('large values', () => {
  it('runs with a 5 MB input and a 20 MB tool result: small payloads and items, inspect shows both', async () => {
    const document = 'd'.repeat(5 * MB);
    const before = process.env.STEPTHREAD_WORKFLOW_DIR;
    process.env.STEPTHREAD_WORKFLOW_DIR = join(ROOT, 'test', 'functions', 'tools', 'fixtures');
    const outcome = await e2e.runtime
      .prepare(workflow)
      .run({ document })
      .finally(() => {
        if (before === undefined) delete process.env.STEPTHREAD_WORKFLOW_DIR;
        else process.env.STEPTHREAD_WORKFLOW_DIR = before;
      });
    expect(outcome.error).toBeUndefined();
    expect(outcome.status).toBe('COMPLETED');
    expect(outcome.output).toEqual({ inputLength: 5 * MB, head: 'rrrrrrrrrr…', tool: 20 * MB });
    expect(outcome.largestPayloadBytes).toBeLessThan(PAYLOAD_LIMIT_BYTES);

    // The head holds references, not the values.
    const { thread } = await e2e.runtime.stores.threads.getThread(outcome.threadId);
    expect(isValueRef(thread.input)).toBe(true);
    expect(itemBytes(thread as unknown as Record<string, unknown>)).toBeLessThan(4096);
    const records = await e2e.runtime.stores.threads.readSteps(outcome.threadId);
    for (const record of records) expect(JSON.stringify(record).length).toBeLessThan(4096);
    const fetched = records.find((record) => record.result.nodeId === 'fetch')!;
    expect(fetched.result.output).toMatchObject({ bytes: 20 * MB + 2 });

    const report = await buildInspectReport(e2e.runtime, outcome.threadId);
    const root = report.threads[0]!;
    // Over 1 MB: not read back, shown as its size.
    const unread = ' bytes, stored by reference; inspect reads values up to 1,048,576 bytes)';
    expect(previewValue(root.input)).toBe(`(${(5 * MB + 15).toLocaleString('en-US')}${unread}`);
    expect(previewValue(root.results?.fetch)).toBe(`(${(20 * MB + 2).toLocaleString('en-US')}${unread}`);
    expect(root.output).toEqual(outcome.output);
  }, 120_000);

  it('fails with VALUE_TOO_LARGE, naming the node, past the configured maximum per value', async () => {
    const before = process.env.STEPTHREAD_MAX_VALUE_BYTES;
    process.env.STEPTHREAD_MAX_VALUE_BYTES = String(100_000);
    try {
      const outcome = await e2e.runtime.prepare(workflow).run({ document: 'd'.repeat(200_000) });
      expect(outcome.status).toBe('FAILED');
      expect(outcome.error).toMatchObject({ code: 'VALUE_TOO_LARGE', nodeId: 'start' });
    } finally {
      if (before === undefined) delete process.env.STEPTHREAD_MAX_VALUE_BYTES;
      else process.env.STEPTHREAD_MAX_VALUE_BYTES = before;
    }
  });

  it('lets a CODE node return as much as a stored value may hold, not only the sandbox default of 256 KiB', async () => {
    const code = valid({
      id: 'large-code',
      version: 1,
      nodes: [
        { id: 'start', type: 'START' },
        { id: 'make', type: 'CODE', config: { code: "return 'c'.repeat(2 * 1024 * 1024)" } },
        { id: 'end', type: 'END', config: { output: { length: '{{len(nodes.make)}}' } } },
      ],
      edges: [
        { from: 'start', to: 'make' },
        { from: 'make', to: 'end' },
      ],
    });
    const outcome = await e2e.runtime.prepare(code).run({});
    expect(outcome.error).toBeUndefined();
    expect(outcome.output).toEqual({ length: 2 * MB });
  }, 60_000);
});
