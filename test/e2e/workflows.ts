/** Workflows the e2e tests share. */
import type { Workflow } from '../../engine/model/schema.ts';
import { valid } from './helpers.ts';

export interface ForkOptions {
  paths: string[];
  strategy?: 'parallel' | 'serial';
  join?: Record<string, unknown>;
  /** Per-path profile (default "default"). */
  profiles?: Record<string, string>;
  extraProfiles?: Record<string, unknown>;
  /** Replies of the default profile once a node's byNode entries are used up. */
  fallback?: string[];
}

/** start → intro (LLM) → split → one LLM per path → merge → after (LLM) → end. */
export function forkWorkflow(id: string, options: ForkOptions): Workflow {
  const byNode: Record<string, string[]> = { intro: ['intro reply'], after: ['after reply'] };
  for (const path of options.paths) byNode[`${path}-work`] = [`${path} reply`];
  return valid({
    id,
    version: 1,
    profiles: {
      default: { provider: 'scripted', byNode, ...(options.fallback ? { responses: options.fallback } : {}) },
      ...(options.extraProfiles ?? {}),
    },
    nodes: [
      { id: 'start', type: 'START' },
      { id: 'intro', type: 'LLM', config: { prompt: 'intro prompt' } },
      {
        id: 'split',
        type: 'FORK',
        config: {
          forkPathIds: options.paths,
          forkStrategy: options.strategy ?? 'parallel',
          childNodeIds: options.paths.map((path) => `${path}-work`),
        },
      },
      ...options.paths.map((path) => ({
        id: `${path}-work`,
        type: 'LLM',
        config: {
          prompt: `${path} prompt`,
          ...(options.profiles?.[path] ? { profileId: options.profiles[path] } : {}),
        },
      })),
      {
        id: 'merge',
        type: 'JOIN',
        config: {
          forkPathIds: options.paths,
          joinStrategy: 'ALL_COMPLETED',
          timeout: 0,
          ...(options.join ?? {}),
        },
      },
      { id: 'after', type: 'LLM', config: { prompt: 'after prompt' } },
      { id: 'end', type: 'END', config: { output: { merged: '{{nodes.merge}}', after: '{{nodes.after}}' } } },
    ],
    edges: [
      { from: 'start', to: 'intro' },
      { from: 'intro', to: 'split' },
      ...options.paths.map((path) => ({ from: `${path}-work`, to: 'merge' })),
      { from: 'merge', to: 'after' },
      { from: 'after', to: 'end' },
    ],
  });
}

/**
 * start → a loop over `input.items` setting `counter` to `expression` each turn → end with `{ counter }`,
 * as a workflow file holds it (for the CLI to read; not validated here).
 */
export function countingLoop(expression: string) {
  return {
    id: 'count',
    version: 1,
    variables: [{ name: 'counter', type: 'number', scope: 'thread', initial: 0 }],
    nodes: [
      { id: 'start', type: 'START' },
      {
        id: 'each',
        type: 'LOOP_START',
        config: {
          loopId: 'l',
          dataSource: '{{input.items}}',
          iterationVariable: 'item',
          maxIterations: 1000,
        },
      },
      {
        id: 'inc',
        type: 'VARIABLE',
        config: { variableName: 'counter', variableType: 'number', expression },
      },
      { id: 'next', type: 'LOOP_END', config: { loopId: 'l' } },
      { id: 'end', type: 'END', config: { output: { counter: '{{counter}}' } } },
    ],
    edges: [
      { from: 'start', to: 'each' },
      { from: 'each', to: 'inc' },
      { from: 'inc', to: 'next' },
      { from: 'next', to: 'end' },
    ],
  };
}

/** A child workflow the SUBGRAPH tests run: doubles `n` (subgraph scope) and says so through an LLM. */
const doubler: Workflow = {
  id: 'doubler',
  version: 1,
  variables: [
    { name: 'n', type: 'number', scope: 'subgraph' },
    { name: 'doubled', type: 'number', scope: 'subgraph' },
  ],
  nodes: [
    { id: 'start', type: 'START' },
    {
      id: 'double',
      type: 'VARIABLE',
      config: { variableName: 'doubled', variableType: 'number', expression: 'n * 2' },
    },
    { id: 'say', type: 'LLM', config: { prompt: 'Twice {{n}} is {{doubled}}.' } },
    { id: 'end', type: 'END' },
  ],
  edges: [
    { from: 'start', to: 'double' },
    { from: 'double', to: 'say' },
    { from: 'say', to: 'end' },
  ],
};

/**
 * start → a → b → end, `a` and `b` SUBGRAPH nodes running the same child: `a` doubles `input.value`
 * into `first`, `b` doubles `first + 1` into `second`; `leaked` shows whether the child's variable
 * got out.
 */
export function twoSubgraphs(): Workflow {
  return valid({
    id: 'subgraphs',
    version: 1,
    variables: [
      { name: 'first', type: 'number', scope: 'thread', initial: 0 },
      { name: 'second', type: 'number', scope: 'thread', initial: 0 },
    ],
    profiles: { default: { provider: 'scripted', responses: ['ok'] } },
    nodes: [
      { id: 'start', type: 'START' },
      {
        id: 'a',
        type: 'SUBGRAPH',
        config: {
          workflow: doubler,
          inputMapping: { n: 'input.value' },
          outputMapping: { first: 'doubled' },
        },
      },
      {
        id: 'b',
        type: 'SUBGRAPH',
        config: { workflow: doubler, inputMapping: { n: 'first + 1' }, outputMapping: { second: 'doubled' } },
      },
      {
        id: 'end',
        type: 'END',
        config: { output: { first: '{{first}}', second: '{{second}}', leaked: '{{doubled ?? "none"}}' } },
      },
    ],
    edges: [
      { from: 'start', to: 'a' },
      { from: 'a', to: 'b' },
      { from: 'b', to: 'end' },
    ],
  });
}

/**
 * start → a FORK of `paths` branches, each adding 1 to the global `done` and its path id to the global
 * `seen` → JOIN → end with both.
 */
export function counterWorkflow(paths: number, strategy: 'parallel' | 'serial' = 'parallel'): Workflow {
  const ids = Array.from({ length: paths }, (_, i) => `p${i}`);
  return valid({
    id: `counter-${paths}-${strategy}`,
    version: 1,
    variables: [
      { name: 'done', type: 'number', scope: 'global', initial: 0 },
      { name: 'seen', type: 'array', scope: 'global', initial: [] },
    ],
    nodes: [
      { id: 'start', type: 'START' },
      {
        id: 'split',
        type: 'FORK',
        config: { forkPathIds: ids, forkStrategy: strategy, childNodeIds: ids.map((id) => `${id}-inc`) },
      },
      ...ids.flatMap((id) => [
        {
          id: `${id}-inc`,
          type: 'VARIABLE',
          config: { variableName: 'done', variableType: 'number', expression: 'done + 1' },
        },
        {
          id: `${id}-note`,
          type: 'VARIABLE',
          config: { variableName: 'seen', variableType: 'array', expression: `concat(seen, ['${id}'])` },
        },
      ]),
      { id: 'merge', type: 'JOIN', config: { forkPathIds: ids, joinStrategy: 'ALL_COMPLETED', timeout: 0 } },
      { id: 'end', type: 'END', config: { output: { done: '{{done}}', seen: '{{seen}}' } } },
    ],
    edges: [
      { from: 'start', to: 'split' },
      ...ids.flatMap((id) => [
        { from: `${id}-inc`, to: `${id}-note` },
        { from: `${id}-note`, to: 'merge' },
      ]),
      { from: 'merge', to: 'end' },
    ],
  });
}
