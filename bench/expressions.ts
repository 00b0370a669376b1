/**
 * `npx tsx bench/expressions.ts`: how long the hostile expressions and templates of issue 14 take to end
 * with EXPRESSION_BUDGET_EXCEEDED (engine/expression/budget.ts), and what a fork's width and a large
 * workflow cost the compiler. Prints one line per case: time, and the outcome.
 */
import { compileWorkflow } from '../engine/asl/index.ts';
import { evaluate, renderString } from '../engine/expression/index.ts';
import type { Workflow } from '../engine/model/schema.ts';

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
  console.log(`${label.padEnd(60)} ${(performance.now() - start).toFixed(0).padStart(6)} ms  ${outcome}`);
}

const replaces = `[${Array.from({ length: 150 }, () => "len(replace(s,'a','b'))").join(',')}]`;
timed(`150 × replace of a 1 MB string (${replaces.length} characters)`, () => evaluate(replaces, scope));
const concats = `[${Array.from({ length: 150 }, () => 'len(concat(items,[1]))').join(',')}]`;
timed(`150 × concat of 90,000 items (${concats.length} characters)`, () => evaluate(concats, scope));
const prompt = Array.from({ length: 2000 }, () => "{{ len(replace(s, 'a', 'b')) }}").join(' ');
timed(`a ${Math.round(prompt.length / 1024)} KB prompt of 2,000 replaces`, () => renderString(prompt, scope));

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
