/** Hand-written workflows that exercise every shape the ASL compiler must handle. */
import type { Edge, Workflow, WorkflowNode } from '../../../engine/model/schema.ts';

const scripted = { default: { provider: 'scripted' as const, responses: ['ok'] } };
const chain = (...ids: string[]): Edge[] => ids.slice(1).map((to, i) => ({ from: ids[i]!, to }));

function workflow(id: string, nodes: WorkflowNode[], edges: Edge[], extra: Partial<Workflow> = {}): Workflow {
  return { id, version: 1, profiles: scripted, ...extra, nodes, edges };
}

/** Every node type once: VARIABLE, CODE, LLM with a tool, TOOL, USER_INTERACTION, CONTEXT_PROCESSOR, ROUTE, a loop, a subgraph and a fork. */
export const everyNodeType: Workflow = workflow(
  'every-node-type',
  [
    { id: 'start', type: 'START' },
    {
      id: 'count',
      type: 'VARIABLE',
      hooks: [{ hookType: 'AFTER_EXECUTE', eventName: 'counted' }],
      config: { variableName: 'n', variableType: 'number', expression: 'n + 1' },
    },
    { id: 'calc', type: 'CODE', config: { code: 'return input.n * 2;', outputVariable: 'doubled' } },
    {
      id: 'ask',
      type: 'LLM',
      config: { prompt: 'Look up {{n}}', tools: ['lookup'], outputVariable: 'answer' },
    },
    { id: 'call', type: 'TOOL', config: { toolName: 'lookup', arguments: { q: '{{n}}' } } },
    {
      id: 'confirm',
      type: 'USER_INTERACTION',
      config: { userInteractionType: 'ask_for_approval', showMessage: 'Go on?', timeoutSeconds: 600 },
    },
    {
      id: 'tidy',
      type: 'CONTEXT_PROCESSOR',
      config: { operation: 'clear', clear: { keepSystemMessage: true } },
    },
    {
      id: 'pick',
      type: 'ROUTE',
      config: {
        routes: [
          { condition: 'n > 10', targetNodeId: 'nested', priority: 1 },
          { condition: 'n > 5', targetNodeId: 'each' },
        ],
        defaultTargetNodeId: 'each',
      },
    },
    { id: 'each', type: 'LOOP_START', config: { loopId: 'l', dataSource: [1, 2, 3], maxIterations: 5 } },
    {
      id: 'body',
      type: 'VARIABLE',
      config: { variableName: 'n', variableType: 'number', expression: 'n + item' },
    },
    { id: 'again', type: 'LOOP_END', config: { loopId: 'l', breakCondition: 'n > 100' } },
    {
      id: 'nested',
      type: 'SUBGRAPH',
      config: {
        inputMapping: { m: 'n' },
        outputMapping: { n: 'm' },
        workflow: {
          id: 'inner',
          version: 2,
          variables: [{ name: 'm', type: 'number', initial: 0 }],
          nodes: [
            { id: 'begin', type: 'START' },
            {
              id: 'bump',
              type: 'VARIABLE',
              config: { variableName: 'm', variableType: 'number', expression: 'm + 1' },
            },
            { id: 'finish', type: 'END', config: { output: '{{m}}' } },
          ],
          edges: chain('begin', 'bump', 'finish'),
        },
      },
    },
    {
      id: 'split',
      type: 'FORK',
      config: { forkPathIds: ['left', 'right'], forkStrategy: 'parallel', childNodeIds: ['l1', 'r1'] },
    },
    { id: 'l1', type: 'LLM', config: { prompt: 'left' } },
    {
      id: 'r1',
      type: 'VARIABLE',
      config: { variableName: 'side', variableType: 'string', expression: "'right'" },
    },
    {
      id: 'merge',
      type: 'JOIN',
      config: { forkPathIds: ['left', 'right'], joinStrategy: 'ALL_COMPLETED', mainPathId: 'right' },
    },
    { id: 'end', type: 'END', config: { output: { n: '{{n}}' } } },
  ],
  [
    ...chain('start', 'count', 'calc', 'ask', 'call', 'confirm', 'tidy', 'pick'),
    ...chain('each', 'body', 'again', 'nested', 'split'),
    { from: 'l1', to: 'merge' },
    { from: 'r1', to: 'merge' },
    { from: 'merge', to: 'end' },
  ],
  {
    variables: [
      { name: 'n', type: 'number', initial: 0 },
      { name: 'side', type: 'string', initial: '' },
      { name: 'answer', type: 'string' },
    ],
    tools: {
      lookup: {
        description: 'Looks a number up',
        parameters: { type: 'object', properties: { q: { type: 'string' } } },
        handler: 'builtin:echo',
      },
    },
    profiles: {
      default: { provider: 'scripted', responses: ['ok'], byNode: { ask: ['a1'], l1: ['l'] } },
    },
  },
);

/** A parallel fork whose first path holds another fork (ANY_COMPLETED), the outer join with a timeout. */
export const forkInFork: Workflow = workflow(
  'fork-in-fork',
  [
    { id: 'start', type: 'START' },
    {
      id: 'outer',
      type: 'FORK',
      config: { forkPathIds: ['p', 'q'], forkStrategy: 'parallel', childNodeIds: ['inner', 'q1'] },
    },
    {
      id: 'inner',
      type: 'FORK',
      config: { forkPathIds: ['x', 'y'], forkStrategy: 'parallel', childNodeIds: ['x1', 'y1'] },
    },
    { id: 'x1', type: 'LLM', config: { prompt: 'x' } },
    { id: 'y1', type: 'LLM', config: { prompt: 'y' } },
    { id: 'inner-join', type: 'JOIN', config: { forkPathIds: ['x', 'y'], joinStrategy: 'ANY_COMPLETED' } },
    { id: 'p2', type: 'LLM', config: { prompt: 'p2' } },
    { id: 'q1', type: 'LLM', config: { prompt: 'q' } },
    {
      id: 'outer-join',
      type: 'JOIN',
      config: { forkPathIds: ['p', 'q'], joinStrategy: 'ALL_COMPLETED', timeout: 30 },
    },
    { id: 'end', type: 'END' },
  ],
  [
    ...chain('start', 'outer'),
    { from: 'x1', to: 'inner-join' },
    { from: 'y1', to: 'inner-join' },
    ...chain('inner-join', 'p2', 'outer-join'),
    { from: 'q1', to: 'outer-join' },
    { from: 'outer-join', to: 'end' },
  ],
);

/** A serial fork inside a loop body. */
export const forkInLoop: Workflow = workflow(
  'fork-in-loop',
  [
    { id: 'start', type: 'START' },
    { id: 'round', type: 'LOOP_START', config: { loopId: 'rounds', maxIterations: 3 } },
    {
      id: 'split',
      type: 'FORK',
      config: { forkPathIds: ['a', 'b'], forkStrategy: 'serial', childNodeIds: ['a1', 'b1'] },
    },
    { id: 'a1', type: 'LLM', config: { prompt: 'a' } },
    { id: 'b1', type: 'LLM', config: { prompt: 'b' } },
    { id: 'merge', type: 'JOIN', config: { forkPathIds: ['a', 'b'], joinStrategy: 'ANY_COMPLETED' } },
    { id: 'next-round', type: 'LOOP_END', config: { loopId: 'rounds' } },
    { id: 'end', type: 'END' },
  ],
  [
    ...chain('start', 'round', 'split'),
    { from: 'a1', to: 'merge' },
    { from: 'b1', to: 'merge' },
    ...chain('merge', 'next-round', 'end'),
  ],
);

/** A loop inside one path of a parallel fork; the other path is empty (the FORK's child is the JOIN). */
export const loopInFork: Workflow = workflow(
  'loop-in-fork',
  [
    { id: 'start', type: 'START' },
    {
      id: 'split',
      type: 'FORK',
      config: { forkPathIds: ['looping', 'idle'], forkStrategy: 'parallel', childNodeIds: ['spin', 'merge'] },
    },
    { id: 'spin', type: 'LOOP_START', config: { loopId: 'spin', dataSource: 'abc', maxIterations: 10 } },
    { id: 'work', type: 'LLM', config: { prompt: 'work on {{item}}' } },
    { id: 'spun', type: 'LOOP_END', config: { loopId: 'spin', breakCondition: "item == 'b'" } },
    {
      id: 'merge',
      type: 'JOIN',
      config: { forkPathIds: ['looping', 'idle'], joinStrategy: 'ALL_COMPLETED', mainPathId: 'looping' },
    },
    { id: 'end', type: 'END' },
  ],
  [...chain('start', 'split'), ...chain('spin', 'work', 'spun', 'merge'), ...chain('merge', 'end')],
);

/** Three serial paths under a threshold join with a (fractional) timeout: the timer wraps the chain. */
export const serialWithTimeout: Workflow = workflow(
  'serial-with-timeout',
  [
    { id: 'start', type: 'START' },
    {
      id: 'split',
      type: 'FORK',
      config: { forkPathIds: ['a', 'b', 'c'], forkStrategy: 'serial', childNodeIds: ['a1', 'b1', 'c1'] },
    },
    { id: 'a1', type: 'LLM', config: { prompt: 'a' } },
    { id: 'b1', type: 'LLM', config: { prompt: 'b' } },
    { id: 'c1', type: 'LLM', config: { prompt: 'c' } },
    {
      id: 'merge',
      type: 'JOIN',
      config: {
        forkPathIds: ['a', 'b', 'c'],
        joinStrategy: 'SUCCESS_COUNT_THRESHOLD',
        threshold: 2,
        timeout: 5,
      },
    },
    { id: 'end', type: 'END' },
  ],
  [
    ...chain('start', 'split'),
    { from: 'a1', to: 'merge' },
    { from: 'b1', to: 'merge' },
    { from: 'c1', to: 'merge' },
    { from: 'merge', to: 'end' },
  ],
);

/** A ROUTE without a default inside a fork path, and a ROUTE whose target is the JOIN itself. */
export const routesInFork: Workflow = workflow(
  'routes-in-fork',
  [
    { id: 'start', type: 'START' },
    {
      id: 'split',
      type: 'FORK',
      config: { forkPathIds: ['r', 's'], forkStrategy: 'parallel', childNodeIds: ['choose', 's1'] },
    },
    {
      id: 'choose',
      type: 'ROUTE',
      config: {
        routes: [
          { condition: 'true', targetNodeId: 'r1' },
          { condition: 'false', targetNodeId: 'merge' },
        ],
      },
    },
    { id: 'r1', type: 'LLM', config: { prompt: 'r' } },
    { id: 's1', type: 'LLM', config: { prompt: 's' } },
    { id: 'merge', type: 'JOIN', config: { forkPathIds: ['r', 's'], joinStrategy: 'ANY_FAILED' } },
    { id: 'end', type: 'END' },
  ],
  [
    ...chain('start', 'split'),
    { from: 'r1', to: 'merge' },
    { from: 's1', to: 'merge' },
    { from: 'merge', to: 'end' },
  ],
);

const long = (tag: string): string => `${tag}-${'x'.repeat(60)}`;

/**
 * Node ids as long as validation allows (their states' suffixes within 80 characters) and ids that look
 * like the compiler's helper state names.
 */
export const awkwardNames: Workflow = workflow(
  'awkward-names',
  [
    { id: 'start', type: 'START' },
    {
      id: long('route'),
      type: 'ROUTE',
      config: {
        routes: [{ condition: 'true', targetNodeId: long('loop') }],
        defaultTargetNodeId: 'pick:choice',
      },
    },
    { id: long('loop'), type: 'LOOP_START', config: { loopId: 'l', maxIterations: 2 } },
    {
      id: `${long('loop')}:choice`,
      type: 'VARIABLE',
      config: { variableName: 'v', variableType: 'any', expression: '1' },
    },
    { id: long('loop-end'), type: 'LOOP_END', config: { loopId: 'l' } },
    {
      id: 'pick',
      type: 'ROUTE',
      config: {
        routes: [{ condition: 'true', targetNodeId: 'pick:choice' }],
        defaultTargetNodeId: ':fail',
      },
    },
    { id: 'pick:choice', type: 'END' },
    { id: ':fail', type: 'END' },
  ],
  [
    ...chain('start', long('route')),
    ...chain(long('loop'), `${long('loop')}:choice`, long('loop-end'), 'pick'),
  ],
  { variables: [{ name: 'v', type: 'any' }] },
);

/** A FORK over a list with a JOIN timeout (the Map inside a Parallel with the timer), one at a time. */
export const listWithTimeout: Workflow = workflow(
  'list-with-timeout',
  [
    { id: 'start', type: 'START' },
    {
      id: 'each',
      type: 'FORK',
      config: {
        forkPathIds: ['doc'],
        forkStrategy: 'serial',
        childNodeIds: ['read'],
        forEach: '{{input.docs}}',
        itemVariable: 'doc',
      },
    },
    { id: 'read', type: 'LLM', config: { prompt: 'Read {{doc}} ({{docIndex}})' } },
    {
      id: 'merge',
      type: 'JOIN',
      config: { forkPathIds: ['doc'], joinStrategy: 'ANY_COMPLETED', timeout: 30 },
    },
    { id: 'end', type: 'END' },
  ],
  chain('start', 'each').concat(chain('read', 'merge', 'end')),
);

/**
 * A distributed FORK over a list whose items wait for a person (Standard child executions), with an
 * inline list nested in each item.
 */
export const distributedList: Workflow = workflow(
  'distributed-list',
  [
    { id: 'start', type: 'START' },
    {
      id: 'each',
      type: 'FORK',
      config: {
        forkPathIds: ['case'],
        forkStrategy: 'parallel',
        childNodeIds: ['review'],
        forEach: '{{input.cases}}',
        mode: 'distributed',
        maxConcurrency: 500,
      },
    },
    { id: 'review', type: 'USER_INTERACTION', config: { userInteractionType: 'ask_for_approval' } },
    {
      id: 'parts',
      type: 'FORK',
      config: {
        forkPathIds: ['part'],
        forkStrategy: 'parallel',
        childNodeIds: ['check'],
        forEach: '{{item.parts}}',
        itemVariable: 'part',
      },
    },
    {
      id: 'check',
      type: 'VARIABLE',
      config: { variableName: 'ok', variableType: 'boolean', expression: 'partIndex >= 0' },
    },
    { id: 'parts-done', type: 'JOIN', config: { forkPathIds: ['part'], joinStrategy: 'ALL_COMPLETED' } },
    {
      id: 'merge',
      type: 'JOIN',
      config: { forkPathIds: ['case'], joinStrategy: 'SUCCESS_COUNT_THRESHOLD', threshold: 3, mainItem: 0 },
    },
    { id: 'end', type: 'END' },
  ],
  [...chain('start', 'each'), ...chain('review', 'parts'), ...chain('check', 'parts-done', 'merge', 'end')],
);

export const ownWorkflows: Readonly<Record<string, Workflow>> = {
  everyNodeType,
  forkInFork,
  forkInLoop,
  loopInFork,
  serialWithTimeout,
  routesInFork,
  awkwardNames,
  listWithTimeout,
  distributedList,
};
