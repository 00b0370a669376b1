/**
 * `npx tsx bench/expressions.ts`: how long the hostile expressions and templates of issue 14 take to end
 * with EXPRESSION_BUDGET_EXCEEDED (engine/expression/budget.ts); the searches of issue 31 that were
 * quadratic (a crafted 2,000-character query over MBs of text); how long a node step with 100 heavy
 * conditions, inputs or hooks runs on the embedded runtime before its node budget ends it; and what a
 * fork's width and a large workflow cost the compiler. Prints one line per case: time, and the outcome.
 */
import { compileWorkflow } from '../engine/asl/index.ts';
import { evaluate, renderString } from '../engine/expression/index.ts';
import type { Workflow, WorkflowNode } from '../engine/model/schema.ts';
import { createAwsClients } from '../functions/aws/clients.ts';
import { createLocalRuntime } from '../functions/local/runtime.ts';
import { startLocalServices } from '../functions/local/services.ts';

const MB = 1024 * 1024;
const scope = { s: 'a'.repeat(MB - 1), items: Array.from({ length: 90_000 }, (_, i) => i) };

function timed(label: string, fn: () => unknown): void {
  const start = performance.now();
  let outcome: string;
  try {
    const value = fn();
    outcome = typeof value === 'string' ? `ok (${value.length} characters)` : 'ok';
  } catch (error) {
    outcome = (error as { code?: string }).code ?? String(error);
  }
  console.log(`${label.padEnd(78)} ${(performance.now() - start).toFixed(0).padStart(6)} ms  ${outcome}`);
}

const replaces = `[${Array.from({ length: 150 }, () => "len(replace(s,'a','b'))").join(',')}]`;
timed(`150 × replace of a 1 MB string (${replaces.length} characters)`, () => evaluate(replaces, scope));
const concats = `[${Array.from({ length: 150 }, () => 'len(concat(items,[1]))').join(',')}]`;
timed(`150 × concat of 90,000 items (${concats.length} characters)`, () => evaluate(concats, scope));
const prompt = Array.from({ length: 2000 }, () => "{{ len(replace(s, 'a', 'b')) }}").join(' ');
timed(`a ${Math.round(prompt.length / 1024)} KB prompt of 2,000 replaces`, () => renderString(prompt, scope));

// Issue 31: each of these took 16 s (1M) to 63 s (4M) in one call before searches went linear.
const low = '\uDC00';
const surrogates = { t: low.repeat(4 * MB), q: `${low.repeat(1999)}x` };
for (const call of ['contains(t, q)', 'len(split(t, q))']) {
  timed(`${call} over 4M lone surrogates, a 2,000-character query`, () => evaluate(call, surrogates));
}
// A result is at most 1M units long, so replace is timed over 1M.
timed("len(replace(t, q, 'y')) over 1M lone surrogates, the same query", () =>
  evaluate("len(replace(t, q, 'y'))", { ...surrogates, t: low.repeat(MB - 1) }),
);
const nearMatch = { t: 'a'.repeat(4 * MB), q: `${'a'.repeat(1000)}b${'a'.repeat(999)}` };
timed("contains(t, q): 4M 'a', a query of 2,000 with one 'b' in the middle", () =>
  evaluate('contains(t, q)', nearMatch),
);

/** One node step with 100 heavy evaluations, each well inside its own budget, on the embedded runtime. */
async function nodeSteps(): Promise<void> {
  const heavy = `len(json([${Array.from({ length: 15 }, () => "len(replace(input.s, 'a', 'b'))").join(', ')}]))`;
  const hooks = Array.from({ length: 100 }, (_, i) => ({
    hookType: 'BEFORE_EXECUTE' as const,
    eventName: `hook-${i}`,
    condition: `${heavy} > 0`,
    eventPayload: { size: `{{ ${heavy} }}` },
  }));
  const nodes: Record<string, WorkflowNode> = {
    'a ROUTE with 100 conditions': {
      id: 'pick',
      type: 'ROUTE',
      config: {
        routes: Array.from({ length: 100 }, () => ({ condition: `${heavy} < 0`, targetNodeId: 'end' })),
        defaultTargetNodeId: 'end',
      },
    },
    'a CODE node with 100 inputs': {
      id: 'compute',
      type: 'CODE',
      config: {
        code: 'return 1',
        inputs: Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`n${i}`, heavy])),
      },
    },
    'a VARIABLE with 100 hooks': {
      id: 'set',
      type: 'VARIABLE',
      config: { variableName: 'v', variableType: 'number', expression: heavy },
      hooks,
    },
    'an END whose output follows 100 hooks': {
      id: 'end',
      type: 'END',
      config: { output: { size: `{{ ${heavy} }}` } },
      hooks,
    },
  };
  const names = { tableName: 'bench-expressions', bucketName: 'bench-expressions' };
  const services = await startLocalServices({ ephemeral: true, names });
  try {
    const runtime = createLocalRuntime({ clients: createAwsClients(services.target, names) });
    const input = { s: 'a'.repeat(100_000) };
    for (const [label, node] of Object.entries(nodes)) {
      const workflow: Workflow = {
        id: `bench-${node.id}`,
        version: 1,
        variables: [{ name: 'v', type: 'number', scope: 'thread', initial: 0 }],
        nodes: [
          { id: 'start', type: 'START' },
          node,
          ...(node.type === 'END' ? [] : [{ id: 'end', type: 'END' as const }]),
        ],
        edges: [
          { from: 'start', to: node.id },
          ...(node.type === 'END' || node.type === 'ROUTE' ? [] : [{ from: node.id, to: 'end' }]),
        ],
      };
      const prepared = runtime.prepare(workflow);
      const start = performance.now();
      const outcome = await prepared.run(input);
      const outcomeText = outcome.error
        ? `${outcome.error.code} (node ${outcome.error.nodeId})`
        : outcome.status;
      console.log(
        `${`${label}, each evaluation ~3M units (whole run)`.padEnd(78)} ${(performance.now() - start).toFixed(0).padStart(6)} ms  ${outcomeText}`,
      );
    }
  } finally {
    await services.close();
  }
}
await nodeSteps();

function fork(width: number): Workflow {
  const paths = Array.from({ length: width }, (_, i) => `path-${i}`.padEnd(60, '-'));
  const children = paths.map((_, i) => ({
    id: `child-${i}`,
    type: 'VARIABLE' as const,
    config: { variableName: 'v', variableType: 'number' as const, expression: '1' },
  }));
  return {
    id: 'wide',
    version: 1,
    variables: [{ name: 'v', type: 'number', scope: 'thread', initial: 0 }],
    nodes: [
      { id: 'start', type: 'START' },
      {
        id: 'split',
        type: 'FORK',
        config: { forkPathIds: paths, forkStrategy: 'parallel', childNodeIds: children.map((c) => c.id) },
      },
      ...children,
      {
        id: 'merge',
        type: 'JOIN',
        config: { forkPathIds: paths, joinStrategy: 'ALL_COMPLETED', timeout: 0 },
      },
      { id: 'end', type: 'END' },
    ],
    edges: [
      { from: 'start', to: 'split' },
      ...children.map((c) => ({ from: c.id, to: 'merge' })),
      { from: 'merge', to: 'end' },
    ],
  };
}
for (const width of [50, 150, 300]) {
  timed(`compile a ${width}-path fork (60-character path ids)`, () =>
    JSON.stringify(compileWorkflow(fork(width)).definition),
  );
}
