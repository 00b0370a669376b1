/**
 * LOOP_START / LOOP_END. The loop's progress lives on the thread (contextData.loops, innermost
 * last) beside the loop variable scope, so a retried or resumed step continues the same iteration.
 *
 * LOOP_START runs on first entry and again from LOOP_END's back edge. On entry it evaluates the
 * data source once: an array iterates its items, an object its entries (`{key, value}`), a number
 * counts (0..n-1), a string its characters; absent, or giving null or undefined, it counts up to
 * maxIterations (the examples and their tests run route-loop with no input that way). maxIterations
 * is always enforced: the loop exits after that many iterations, items left or not. Each iteration gets a fresh loop scope holding the item variable and `index`.
 */
import { StepthreadError } from '../../engine/errors.ts';
import { evaluateCondition, renderTemplate } from '../../engine/expression/index.ts';
import { loopEndConfigSchema, loopStartConfigSchema } from '../../engine/model/schema.ts';
import { deepCopy, popScope, pushScope } from '../../engine/thread/index.ts';
import type { Thread } from '../../engine/thread/types.ts';
import type { NodeBehaviour, StepContext } from '../handlers/pipeline.ts';
import { parseConfig } from './config.ts';

export interface LoopProgress {
  loopId: string;
  /** Index of the current iteration. */
  index: number;
  /** Iterations the data allows (maxIterations applied). */
  count: number;
  /** The items; absent when counting. */
  items?: unknown[];
  iterationVariable: string;
}

const DEFAULT_ITERATION_VARIABLE = 'item';

function loopsOf(thread: Thread): LoopProgress[] {
  const loops = thread.contextData.loops;
  return Array.isArray(loops) ? (loops as LoopProgress[]) : [];
}

function setLoops(thread: Thread, loops: LoopProgress[]): void {
  if (loops.length === 0) {
    const { loops: _dropped, ...rest } = thread.contextData;
    thread.contextData = rest;
  } else {
    thread.contextData = { ...thread.contextData, loops };
  }
}

/** The items of a resolved data source; undefined = count. */
export function loopItems(data: unknown, nodeId: string): unknown[] | number {
  if (data === undefined || data === null) return Number.POSITIVE_INFINITY;
  if (Array.isArray(data)) return data;
  if (typeof data === 'string') return [...data];
  if (typeof data === 'number' && Number.isInteger(data) && data >= 0) return data;
  if (typeof data === 'object') return Object.entries(data).map(([key, value]) => ({ key, value }));
  throw new StepthreadError(
    'EXPRESSION_ERROR',
    `loop data source of ${nodeId} is not iterable: ${JSON.stringify(data)}; a dataSource gives an array, an object, a whole number ≥ 0 or a string (or null to count up to maxIterations)`,
    {
      nodeId,
    },
  );
}

function itemAt(progress: LoopProgress): unknown {
  return progress.items ? progress.items[progress.index] : progress.index;
}

function enterIteration(ctx: StepContext, progress: LoopProgress): void {
  // Declared loop variables start from their initial value in every iteration.
  pushScope(
    ctx.thread.variables,
    'loop',
    { [progress.iterationVariable]: deepCopy(itemAt(progress)), index: progress.index },
    ctx.node.variables ?? [],
  );
}

export const loopStartNode: NodeBehaviour = {
  logic(ctx) {
    const { node, thread } = ctx;
    const config = parseConfig(loopStartConfigSchema, node);
    if (config.maxIterations < 1) {
      throw new StepthreadError('INVALID_MAX_ITERATIONS', `loop ${config.loopId} needs maxIterations >= 1`, {
        nodeId: node.id,
      });
    }
    const loops = loopsOf(thread);
    const top = loops.at(-1);
    let progress: LoopProgress;
    if (top?.loopId === config.loopId) {
      // Back edge: leave the finished iteration's scope, move on.
      popScope(thread.variables, 'loop');
      progress = { ...top, index: top.index + 1 };
      loops.pop();
    } else {
      const data =
        config.dataSource === undefined ? undefined : renderTemplate(config.dataSource, ctx.scope());
      const resolved = loopItems(data, node.id);
      const available = typeof resolved === 'number' ? resolved : resolved.length;
      progress = {
        loopId: config.loopId,
        index: 0,
        count: Math.min(available, config.maxIterations),
        iterationVariable: config.iterationVariable ?? DEFAULT_ITERATION_VARIABLE,
        ...(Array.isArray(resolved) ? { items: resolved } : {}),
      };
    }
    if (progress.index >= progress.count) {
      setLoops(thread, loops);
      ctx.out.loop = { exit: true };
      return { output: { exit: true, iterations: progress.index } };
    }
    setLoops(thread, [...loops, progress]);
    enterIteration(ctx, progress);
    ctx.out.loop = { exit: false };
    return { output: { exit: false, index: progress.index } };
  },
};

export const loopEndNode: NodeBehaviour = {
  logic(ctx) {
    const { node, thread } = ctx;
    const config = parseConfig(loopEndConfigSchema, node);
    const loops = loopsOf(thread);
    const top = loops.at(-1);
    if (top?.loopId !== config.loopId) {
      throw new StepthreadError('INVALID_LOOP', `LOOP_END ${node.id} reached outside loop ${config.loopId}`, {
        nodeId: node.id,
      });
    }
    const brk = config.breakCondition !== undefined && evaluateCondition(config.breakCondition, ctx.scope());
    if (brk) {
      popScope(thread.variables, 'loop');
      setLoops(thread, loops.slice(0, -1));
    }
    ctx.out.loop = { exit: brk };
    return { output: { exit: brk, index: top.index } };
  },
};
