/**
 * A loop that can never fit in maxSteps: its iteration count is fixed by the file (a literal
 * dataSource, or none: it counts to maxIterations), nothing can end it early (no breakCondition, no
 * ROUTE out of its body to END), and even the shortest way through its body runs it past maxSteps.
 * Every such run fails with MAX_STEPS_EXCEEDED, so validate reports that code up front. Counts are
 * lower bounds (functions/nodes/loop.ts): n iterations run LOOP_START, the body and LOOP_END n times,
 * then LOOP_START once more to exit; a FORK's branches run in threads of their own, a nested loop
 * whose count is unknown may run zero times, a SUBGRAPH counts one step. Anything uncertain makes the
 * loop count less, never more, so a loop that might fit is never refused.
 */
import type { CodedError } from '../errors.ts';
import { type Flow, successorsOf } from '../graph/flow.ts';
import { analyzeForks } from '../graph/fork-regions.ts';
import type { LoopRegion } from '../graph/loops.ts';
import type { Path } from '../model/paths.ts';
import { isRecord } from '../model/paths.ts';
import type { WorkflowNode } from '../model/schema.ts';

type NodeOf<T extends WorkflowNode['type']> = Extract<WorkflowNode, { type: T }>;

export interface LoopStepsInput {
  flow: Flow;
  loops: ReadonlyMap<string, LoopRegion>;
  nodes: ReadonlyMap<string, WorkflowNode>;
  maxSteps: number;
  /** Whether maxSteps was left to its default (the message says so). */
  defaulted: boolean;
  /** Top level: START runs before, and END after, any loop outside a FORK branch. */
  topLevel: boolean;
}

type Report = (code: CodedError['code'], message: string, id: string, path?: Path) => void;

/** Iterations a LOOP_START runs whatever the run's input, or undefined when the file does not fix it. */
export function fixedIterations(config: NodeOf<'LOOP_START'>['config']): number | undefined {
  const source = config.dataSource;
  let available: number | undefined;
  if (source === undefined || source === null) available = Number.POSITIVE_INFINITY;
  else if (Array.isArray(source)) available = source.length;
  else if (typeof source === 'number' && Number.isInteger(source) && source >= 0) available = source;
  else if (typeof source === 'string' && !source.includes('{{')) available = [...source].length;
  else if (isRecord(source)) available = Object.keys(source).length;
  return available === undefined ? undefined : Math.min(available, config.maxIterations);
}

export function checkLoopSteps(input: LoopStepsInput, report: Report): void {
  const { flow, loops, nodes, maxSteps } = input;
  const forks = analyzeForks(flow);
  const inBranch = new Set(
    [...forks.regions.values()].flatMap((r) => r.branches.flatMap((b) => [...b.nodes])),
  );
  const byStart = new Map([...loops.values()].map((loop) => [loop.startId, loop]));
  const memo = new Map<string, { steps: number; perIteration: number; iterations: number } | undefined>();

  /** The fewest steps a loop runs from its first LOOP_START to its exit, when the file fixes them. */
  const fixedSteps = (loop: LoopRegion) => {
    if (memo.has(loop.loopId)) return memo.get(loop.loopId);
    memo.set(loop.loopId, undefined); // a loop reached again while being measured: not counted
    const start = nodes.get(loop.startId);
    const end = nodes.get(loop.endId);
    if (start?.type !== 'LOOP_START' || end?.type !== 'LOOP_END') return undefined;
    if (end.config.breakCondition !== undefined) return undefined;
    const iterations = fixedIterations(start.config);
    const body = iterations === undefined ? undefined : shortestBody(loop);
    const result =
      iterations === undefined || body === undefined
        ? undefined
        : { iterations, perIteration: body + 2, steps: iterations * (body + 2) + 1 };
    memo.set(loop.loopId, result);
    return result;
  };

  /** Steps of the shortest way from the LOOP_START to its LOOP_END, both excluded; undefined if it can leave. */
  const shortestBody = (loop: LoopRegion): number | undefined => {
    const distance = new Map<string, number>();
    const queue: Array<[string, number]> = [];
    for (const id of successorsOf(flow, loop.startId)) enqueue(queue, id, 0);
    while (queue.length > 0) {
      const [id, before] = queue.shift()!;
      if (id === loop.endId) return before;
      // A way out other than the LOOP_END (a ROUTE to END) may end the loop early.
      if (!loop.body.has(id)) return undefined;
      if (distance.has(id)) continue;
      distance.set(id, before);
      const { cost, next } = stepOver(id);
      if (next === undefined) return undefined;
      for (const target of next) if (!distance.has(target)) enqueue(queue, target, before + cost);
    }
    return undefined;
  };

  /** What running node `id` costs at least in this thread, and where this thread goes next. */
  const stepOver = (id: string): { cost: number; next: readonly string[] | undefined } => {
    const node = nodes.get(id);
    if (node === undefined) return { cost: 0, next: undefined };
    if (node.type === 'FORK') {
      // The branches run in threads of their own; this one goes on at the JOIN.
      const join = forks.regions.get(id)?.joinId;
      return { cost: 1, next: join === undefined ? undefined : [join] };
    }
    const inner = byStart.get(id);
    if (inner !== undefined) {
      const exits = successorsOf(flow, inner.endId).filter((target) => target !== inner.startId);
      return { cost: fixedSteps(inner)?.steps ?? 1, next: exits };
    }
    return { cost: 1, next: successorsOf(flow, id) };
  };

  for (const loop of loops.values()) {
    const fixed = fixedSteps(loop);
    if (fixed === undefined) continue;
    const around = input.topLevel && !inBranch.has(loop.startId) ? 2 : 0;
    const total = fixed.steps + around;
    if (total <= maxSteps) continue;
    const setting = `maxSteps is ${maxSteps}${input.defaulted ? ' (the default)' : ''}`;
    report(
      'MAX_STEPS_EXCEEDED',
      `loop "${loop.loopId}" always runs ${fixed.iterations} iterations of at least ${fixed.perIteration} node executions (LOOP_START, the body, LOOP_END), so every run needs at least ${total} steps${around ? ' counting START and END' : ''}, but ${setting}: set "maxSteps" at the top of the workflow file to at least ${total}, or make the loop shorter (dataSource, maxIterations, or a breakCondition on its LOOP_END)`,
      loop.startId,
    );
  }
}

/** Inserts keeping the queue ordered by distance (stable for equal distances). */
function enqueue(queue: Array<[string, number]>, id: string, distance: number): void {
  let low = 0;
  let high = queue.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (queue[middle]![1] <= distance) low = middle + 1;
    else high = middle;
  }
  queue.splice(low, 0, [id, distance]);
}
