/**
 * Any JSON value round-trips through a run (issue 14 item 4): keys that are special to JavaScript or
 * to the DynamoDB marshaller (`__proto__`, `constructor`, `hasOwnProperty`), integers beyond 2^53,
 * numbers outside DynamoDB's range, keys ending in `.$` (special to Step Functions), in the input, a
 * CODE output, a tool result and a node output read by a later node. Deeper than MAX_VALUE_DEPTH is
 * refused with VALUE_TOO_DEEP naming the node.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_VALUE_DEPTH } from '../../engine/model/json-values.ts';
import { type E2e, startE2e, valid } from './helpers.ts';

let e2e: E2e;
beforeAll(async () => {
  e2e = await startE2e('any-json');
});
afterAll(() => e2e.close());

/** Small on purpose: under the 256-byte threshold, so it would sit in DynamoDB items inline. */
const AWKWARD_TEXT =
  '{"__proto__": {"polluted": true}, "constructor": "c", "hasOwnProperty": 1, "big": 18014398509481984, "huge": 1e300, "tiny": 5e-324, "price.$": 3, "list": [{"__proto__": null}]}';

const workflow = valid({
  id: 'any-json',
  version: 1,
  variables: [
    { name: 'fromCode', type: 'any', scope: 'thread' },
    { name: 'fromTool', type: 'any', scope: 'thread' },
  ],
  tools: {
    awkward: {
      description: 'Returns awkward JSON',
      parameters: { type: 'object', properties: {} },
      handler: { kind: 'code', code: `return JSON.parse(${JSON.stringify(AWKWARD_TEXT)})` },
    },
  },
  nodes: [
    { id: 'start', type: 'START' },
    {
      id: 'code',
      type: 'CODE',
      config: { code: `return JSON.parse(${JSON.stringify(AWKWARD_TEXT)})`, outputVariable: 'fromCode' },
    },
    { id: 'tool', type: 'TOOL', config: { toolName: 'awkward', arguments: {}, outputVariable: 'fromTool' } },
    {
      id: 'end',
      type: 'END',
      config: {
        output: {
          input: '{{input}}',
          code: '{{fromCode}}',
          tool: '{{fromTool}}',
          read: '{{nodes.code}}',
          'static.$': { 'nested.$~': 'kept' },
        },
      },
    },
  ],
  edges: [
    { from: 'start', to: 'code' },
    { from: 'code', to: 'tool' },
    { from: 'tool', to: 'end' },
  ],
});

function nested(depth: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = i % 2 === 0 ? [value] : { a: value };
  return value;
}

describe('any JSON value', () => {
  it('round-trips prototype keys, numbers past 2^53 and DynamoDB range, and ".$" keys through every store', async () => {
    const awkward = JSON.parse(AWKWARD_TEXT) as Record<string, unknown>;
    const outcome = await e2e.runtime
      .prepare(workflow)
      .run({ ...awkward, deep: nested(MAX_VALUE_DEPTH - 2) });
    expect(outcome.error).toBeUndefined();
    expect(outcome.status).toBe('COMPLETED');
    const output = outcome.output as Record<string, unknown>;
    // JSON text equality: key order and own `__proto__` keys included.
    expect(JSON.stringify(output.code)).toBe(JSON.stringify(awkward));
    expect(JSON.stringify(output.tool)).toBe(JSON.stringify(awkward));
    expect(JSON.stringify(output.read)).toBe(JSON.stringify(awkward));
    expect(JSON.stringify(output.input)).toBe(
      JSON.stringify({ ...awkward, deep: nested(MAX_VALUE_DEPTH - 2) }),
    );
    expect(Object.hasOwn(output.code as object, '__proto__')).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(output['static.$']).toEqual({ 'nested.$~': 'kept' });
  }, 60_000);

  it(`refuses an input nested deeper than ${MAX_VALUE_DEPTH} levels with VALUE_TOO_DEEP, even 10,000 deep`, async () => {
    for (const depth of [MAX_VALUE_DEPTH, 10_000]) {
      await expect(e2e.runtime.prepare(workflow).run({ deep: nested(depth) })).rejects.toMatchObject({
        code: 'VALUE_TOO_DEEP',
        nodeId: 'start',
      });
    }
  }, 60_000);

  it('refuses a CODE output nested too deep with VALUE_TOO_DEEP naming the node', async () => {
    const deepCode = valid({
      id: 'deep-code',
      version: 1,
      nodes: [
        { id: 'start', type: 'START' },
        {
          id: 'code',
          type: 'CODE',
          config: { code: 'let v = 1; for (let i = 0; i < 500; i++) v = { a: v }; return v;' },
        },
        { id: 'end', type: 'END' },
      ],
      edges: [
        { from: 'start', to: 'code' },
        { from: 'code', to: 'end' },
      ],
    });
    const outcome = await e2e.runtime.prepare(deepCode).run({});
    expect(outcome.status).toBe('FAILED');
    expect(outcome.error).toMatchObject({ code: 'VALUE_TOO_DEEP', nodeId: 'code' });
  }, 60_000);

  it('refuses a tool result nested too deep with VALUE_TOO_DEEP naming the TOOL node', async () => {
    const deepTool = valid({
      id: 'deep-tool',
      version: 1,
      tools: {
        deep: {
          description: 'Returns a deep value',
          parameters: { type: 'object', properties: {} },
          handler: { kind: 'code', code: 'let v = 1; for (let i = 0; i < 500; i++) v = [v]; return v;' },
        },
      },
      nodes: [
        { id: 'start', type: 'START' },
        { id: 'call', type: 'TOOL', config: { toolName: 'deep', arguments: {} } },
        { id: 'end', type: 'END' },
      ],
      edges: [
        { from: 'start', to: 'call' },
        { from: 'call', to: 'end' },
      ],
    });
    const outcome = await e2e.runtime.prepare(deepTool).run({});
    expect(outcome.status).toBe('FAILED');
    expect(outcome.error).toMatchObject({ code: 'VALUE_TOO_DEEP', nodeId: 'call' });
  }, 60_000);
});
