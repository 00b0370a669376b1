/**
 * The installed package once loaded ajv without its `Ajv` export ("r is not a constructor"), so every
 * tool with `parameters` failed, and an LLM node showed the model each failure and its run ended
 * COMPLETED. A tool whose arguments cannot be checked because stepthread's own validator did not
 * load fails the node (NODE_EXECUTION_FAILED naming the tool), whether an LLM or a TOOL node calls it,
 * on the embedded runtime.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type E2e, startE2e, valid } from './helpers.ts';

// As the broken bundle gave it: the module loads, and its Ajv is no constructor.
vi.mock('../../functions/tools/ajv.ts', () => ({ Ajv: undefined }));

let e2e: E2e;
beforeAll(async () => {
  e2e = await startE2e('argument-checker');
});
afterAll(() => e2e.close());

const tenure = {
  description: 'Years as a customer',
  parameters: { type: 'object', properties: { since: { type: 'integer' } }, required: ['since'] },
  handler: { kind: 'code', code: 'return { years: 2025 - input.since }' },
};

function workflow(caller: Record<string, unknown>) {
  return valid({
    id: 'checker',
    version: 1,
    profiles: {
      default: {
        provider: 'scripted',
        byNode: { ask: [{ toolCalls: [{ name: 'tenure', arguments: { since: 2019 } }] }, 'Six years.'] },
      },
    },
    tools: { tenure },
    nodes: [
      { id: 'start', type: 'START' },
      caller,
      { id: 'end', type: 'END', config: { output: `{{nodes.${caller.id as string}}}` } },
    ],
    edges: [
      { from: 'start', to: caller.id },
      { from: caller.id, to: 'end' },
    ],
  });
}

const UNAVAILABLE =
  /^node (ask|call): tool "tenure": its arguments cannot be checked: the JSON Schema validator \(ajv\) did not load: .*not a constructor/;

describe('a tool whose arguments stepthread cannot check', () => {
  it('fails the LLM node that called it, instead of showing the model the failure and completing', async () => {
    const outcome = await e2e.runtime
      .prepare(workflow({ id: 'ask', type: 'LLM', config: { prompt: 'How long?', tools: ['tenure'] } }))
      .run({});
    expect(outcome.status).toBe('FAILED');
    expect(outcome.error).toMatchObject({ code: 'NODE_EXECUTION_FAILED', nodeId: 'ask' });
    expect(outcome.error?.message).toMatch(UNAVAILABLE);
  });

  it('fails a TOOL node calling it', async () => {
    const outcome = await e2e.runtime
      .prepare(
        workflow({ id: 'call', type: 'TOOL', config: { toolName: 'tenure', arguments: { since: 2019 } } }),
      )
      .run({});
    expect(outcome.status).toBe('FAILED');
    expect(outcome.error).toMatchObject({ code: 'NODE_EXECUTION_FAILED', nodeId: 'call' });
  });
});
