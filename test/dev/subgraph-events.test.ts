/**
 * A SUBGRAPH node under its own id in `stepthread dev`'s event stream, thread events and execution
 * page: it runs while its child runs, and completes or fails as the child ends.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DevServer, startDevServer } from '../../cli/dev/server.ts';
import { createAwsClients } from '../../functions/aws/clients.ts';
import { type LocalServices, startLocalServices } from '../../functions/local/services.ts';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

let services: LocalServices;
let server: DevServer;
let folder: string;

/** start → `review` (a SUBGRAPH whose child runs `inner`) → end. */
function withSubgraph(id: string, inner: Record<string, unknown>) {
  const chain = (nodes: Record<string, unknown>[]) =>
    nodes.slice(1).map((node, i) => ({ from: nodes[i]!.id, to: node.id }));
  const childNodes = [
    { id: 'begin', type: 'START' },
    inner,
    { id: 'finish', type: 'END', config: { output: '{{n}}' } },
  ];
  const nodes = [
    { id: 'start', type: 'START' },
    {
      id: 'review',
      type: 'SUBGRAPH',
      config: {
        outputMapping: { result: 'output' },
        workflow: { id: 'child', version: 1, nodes: childNodes, edges: chain(childNodes) },
      },
    },
    { id: 'end', type: 'END', config: { output: { result: '{{result}}' } } },
  ];
  return {
    id,
    version: 1,
    variables: [{ name: 'result', type: 'string', scope: 'thread', initial: '' }],
    nodes,
    edges: chain(nodes),
  };
}

beforeAll(async () => {
  folder = mkdtempSync(join(tmpdir(), 'stepthread-dev-subgraph-'));
  const set = {
    id: 'work',
    type: 'VARIABLE',
    config: { variableName: 'n', variableType: 'string', expression: "'done'" },
  };
  const boom = { id: 'work', type: 'CODE', config: { code: "throw new Error('boom')", outputVariable: 'n' } };
  writeFileSync(join(folder, 'sub-ok.json'), JSON.stringify(withSubgraph('sub-ok', set)));
  writeFileSync(join(folder, 'sub-fails.json'), JSON.stringify(withSubgraph('sub-fails', boom)));
  services = await startLocalServices({ ephemeral: true });
  server = await startDevServer({
    clients: createAwsClients(services.target, services.names),
    workflowsDir: folder,
  });
});

afterAll(async () => {
  await server?.close();
  await services?.close();
  rmSync(folder, { recursive: true, force: true });
});

/** Runs a workflow over the API with the event stream open; the `node` events of `nodeId`, in order. */
async function runWatching(workflowId: string, nodeId: string) {
  const controller = new AbortController();
  const stream = await fetch(`${server.url}/api/events`, { signal: controller.signal });
  const frames: { type: string; data: Record<string, unknown> }[] = [];
  const reading = (async () => {
    const decoder = new TextDecoder();
    let buffer = '';
    for await (const chunk of stream.body as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
        const frame = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const type = /^event: (.*)$/m.exec(frame)?.[1];
        const data = /^data: (.*)$/m.exec(frame)?.[1];
        if (type && data) frames.push({ type, data: JSON.parse(data) });
      }
    }
  })().catch(() => {});
  const started = await fetch(`${server.url}/api/workflows/${workflowId}/runs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ input: {} }),
  });
  const { executionId, threadId } = (await started.json()) as { executionId: string; threadId: string };
  const ended = () =>
    frames.some(
      (f) => f.type === 'execution' && f.data.executionId === executionId && f.data.status !== 'RUNNING',
    );
  while (!ended()) await new Promise((resolve) => setTimeout(resolve, 25));
  controller.abort();
  await reading;
  const statuses = frames
    .filter((f) => f.type === 'node' && f.data.executionId === executionId && f.data.nodeId === nodeId)
    .map((f) => f.data.status);
  const page = (await (await fetch(`${server.url}/api/executions/${executionId}`)).json()) as {
    nodeStatus: Record<string, { status: string }>;
  };
  const journal = (await (await fetch(`${server.url}/api/threads/${threadId}/events`)).json()) as {
    events: { type: string; nodeId?: string }[];
  };
  const events = journal.events
    .filter((e) => e.nodeId === nodeId && e.type.startsWith('NODE_'))
    .map((e) => e.type);
  const head = (await (await fetch(`${server.url}/api/threads/${threadId}`)).json()) as { output?: unknown };
  return { statuses, nodeStatus: page.nodeStatus[nodeId]?.status, events, output: head.output };
}

describe('a SUBGRAPH node in stepthread dev', () => {
  it('runs from its child START to its child END, under its own id', async () => {
    expect(await runWatching('sub-ok', 'review')).toEqual({
      statuses: ['RUNNING', 'COMPLETED'],
      nodeStatus: 'COMPLETED',
      events: ['NODE_STARTED', 'NODE_COMPLETED'],
      // The child's output, mapped out to the caller's `result`.
      output: { result: 'done' },
    });
  });

  it('fails when a node inside it fails', async () => {
    expect(await runWatching('sub-fails', 'review')).toEqual({
      statuses: ['RUNNING', 'FAILED'],
      nodeStatus: 'FAILED',
      events: ['NODE_STARTED', 'NODE_FAILED'],
      output: undefined,
    });
  });
});
