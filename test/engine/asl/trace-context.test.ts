/**
 * CompileOptions.traceContext (OpenTelemetry, issue 27): the FORK Task says its envelope carries the
 * trace context, and each fork branch's and Map item's envelope takes `traceparent` from the FORK's
 * `fork.traceparent`. Off, the definition is byte for byte what it was.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { compileWorkflow } from '../../../engine/asl/index.ts';
import type { Workflow } from '../../../engine/model/schema.ts';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const example = (name: string): Workflow =>
  JSON.parse(readFileSync(join(ROOT, 'examples', `${name}.json`), 'utf8')) as Workflow;

/** Every state of a definition, nested ones (Parallel branches, Map processors) included. */
function allStates(states: Record<string, unknown>): [string, Record<string, unknown>][] {
  return Object.entries(states).flatMap(([name, state]) => {
    const s = state as Record<string, unknown>;
    const nested = [
      ...((s.Branches as { States: Record<string, unknown> }[] | undefined) ?? []),
      ...(s.ItemProcessor ? [s.ItemProcessor as { States: Record<string, unknown> }] : []),
    ].flatMap((branch) => allStates(branch.States));
    return [[name, s] as [string, Record<string, unknown>], ...nested];
  });
}

describe('compiling with traceContext', () => {
  it('hands the FORK step’s trace context to each fork branch', () => {
    const states = allStates(
      compileWorkflow(example('fork-join-research'), { traceContext: true }).definition.States,
    );
    const parameters = (name: string) =>
      states.find(([n]) => n === name)![1].Parameters as Record<string, unknown>;
    expect(parameters('split').traceContext).toBe(true);
    for (const path of ['facts', 'risks', 'summary']) {
      expect(parameters(`split:${path}`)['traceparent.$']).toBe('$.fork.traceparent');
    }
    // No other Task is told to.
    expect(
      states.filter(([, state]) => (state.Parameters as { traceContext?: unknown })?.traceContext),
    ).toHaveLength(1);
  });

  it('hands it to each Map item', () => {
    const states = allStates(
      compileWorkflow(example('map-reduce'), { traceContext: true }).definition.States,
    );
    const map = states.find(([, state]) => state.Type === 'Map')![1];
    expect((map.ItemSelector as Record<string, unknown>)['traceparent.$']).toBe('$.fork.traceparent');
  });

  it('changes nothing when off', () => {
    for (const name of ['fork-join-research', 'map-reduce', 'route-loop']) {
      const text = JSON.stringify(compileWorkflow(example(name)).definition);
      expect(text).not.toContain('traceparent');
      expect(text).not.toContain('traceContext');
      expect(JSON.stringify(compileWorkflow(example(name), { traceContext: false }).definition)).toBe(text);
    }
  });
});
