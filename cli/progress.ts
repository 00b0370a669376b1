/**
 * `run`'s progress on stderr, from the local runtime's state events (aws-local-stepfunctions'
 * eventLogs): a line as each node starts (→) and ends (✓, ⚠ when its tool calls failed, ✗, ↻ when
 * retried, ⇥ when its path decided the join), named by node id. The compiler's own states (a
 * FORK's Parallel or Map, a path's report to its JOIN, the failure bookkeeping) are read through
 * state-roles.ts: their lines are the nodes', or none. A line inside a FORK's path or list item, or
 * a loop's iteration, says which: `→ summarise [item 1]`, `→ facts [path facts]`,
 * `→ classify (iteration 2)`.
 */
import { FAIL_TASK } from '../engine/asl/compile.ts';
import type { NodeTable } from '../engine/asl/node-table.ts';
import { ASL_ERRORS, JOIN_DECIDED_KEY } from '../engine/asl/task-input.ts';
import type { AslDefinition } from '../engine/asl/types.ts';
import type { NodeResult, ToolCallCounts } from '../engine/thread/types.ts';
import type { NodeResultEntry } from '../functions/handlers/deps.ts';
import { codedErrorFromAsl } from '../functions/handlers/task.ts';
import type { LocalEvent } from '../functions/local/state-machine.ts';
import type { CliIo } from './io.ts';
import { type StateRole, stateRolesOf } from './state-roles.ts';

/** Prints the progress of the events it is given. */
export interface ProgressPrinter {
  (event: LocalEvent): void;
  /**
   * A node's result, before its Task exits: a node whose tool calls failed is marked ⚠, not ✓; a
   * LOOP_START says which iteration it starts.
   */
  onNodeResult(entry: NodeResultEntry): void;
  /** The definition the events come from, before its first event: what its states are (state-roles.ts). */
  onDefinition(definition: AslDefinition, nodeTable?: NodeTable): void;
  /** Where a thread runs, as its lines say it after the node's name (` [path facts]`), or ''. */
  placeOf(threadId: string): string;
}

/**
 * What a failed state's line says: a node's coded error (its code, and its message cut to one line),
 * which the Task's error carries as its cause; else the ASL error name.
 */
function failureOf(event: LocalEvent): string {
  if (event.error !== ASL_ERRORS.nodeFailed) return event.error ?? 'failed';
  const coded = codedErrorFromAsl({ Error: event.error, Cause: event.cause as string | undefined });
  // A cause that is no coded error comes back as the error name and the cause: the name says it.
  if (coded.message.startsWith(event.error)) return event.error;
  const message = coded.message.split('\n')[0]!;
  return `${coded.code}: ${message.length > 120 ? `${message.slice(0, 120)}…` : message}`;
}

/** `2 of 2 tool calls failed`. */
function toolCallsFailed({ calls, failed }: ToolCallCounts): string {
  return `${failed} of ${calls} tool call${calls === 1 ? '' : 's'} failed`;
}

/** The thread a state's envelope runs on. */
function threadOf(envelope: unknown): string | undefined {
  const threadId = (envelope as { threadId?: unknown } | null | undefined)?.threadId;
  return typeof threadId === 'string' ? threadId : undefined;
}

/** What a state is without a definition to read (a printer given events only): as its type says. */
/** A join report's result that decided the join (functions/nodes/join.ts): the branch ends by design. */
function decidedJoin(output: unknown): boolean {
  return typeof output === 'object' && output !== null && JOIN_DECIDED_KEY in output;
}

function roleByType(event: LocalEvent): StateRole {
  const name = event.stateName ?? '';
  const shown =
    (event.stateType === 'Task' && name !== FAIL_TASK) ||
    event.stateType === 'Parallel' ||
    event.stateType === 'Map';
  return shown ? { kind: 'node', nodeId: name, nodeType: '', enters: true, exits: true } : { kind: 'hidden' };
}

/** A successor's resume is shown as a node would be, named after the node the run continued at. */
function asShown(role: StateRole, event: LocalEvent): StateRole {
  if (role.kind !== 'resume') return role;
  const at = (event.input as { resume?: { node?: { id?: unknown } } } | undefined)?.resume?.node?.id;
  return {
    kind: 'node',
    nodeId: `resume at ${typeof at === 'string' ? at : '?'}`,
    nodeType: '',
    enters: true,
    exits: true,
  };
}

/** The loop iterations a thread is in, innermost last. */
type LoopFrames = { loopId: string; iteration: number }[];

export function progressPrinter(io: CliIo): ProgressPrinter {
  let roles = new Map<string, StateRole>();
  let rolesOf: AslDefinition | undefined;
  // By thread and node: when a node started, whether its failure was shown, its result (until its Task exits).
  const started = new Map<string, number>();
  const failed = new Set<string>();
  const results = new Map<string, NodeResult>();
  // A fork path's or list item's thread → where it runs (`item 1`, `path facts`, its parent's first).
  const labels = new Map<string, string>();
  // A list FORK's item threads are `<base>-<index>`: the thread that forked them, by base.
  const forkedFrom = new Map<string, string>();
  const loops = new Map<string, LoopFrames>();

  const iterationOf = (thread: string | undefined, skip?: string): number | undefined => {
    const frames = loops.get(thread ?? '') ?? [];
    const top = frames.at(-1);
    return top === undefined || top.loopId === skip ? frames.at(-2)?.iteration : top.iteration;
  };
  /** ` [item 1]` and what goes in the parentheses after a node's name: the iteration, then the time. */
  const where = (thread: string | undefined, extra: (string | undefined)[], skipLoop?: string) => {
    const label = labels.get(thread ?? '');
    const iteration = iterationOf(thread, skipLoop);
    const inParentheses = [iteration === undefined ? undefined : `iteration ${iteration}`, ...extra].filter(
      (part) => part !== undefined,
    );
    return `${label ? ` [${label}]` : ''}${inParentheses.length > 0 ? ` (${inParentheses.join(', ')})` : ''}`;
  };
  const elapsed = (key: string, event: LocalEvent) => {
    const start = started.get(key);
    return start === undefined ? undefined : `${Date.parse(event.timestamp) - start} ms`;
  };

  /** A path's or item's thread starts: name it after its parent's place and its own. */
  const pathStarted = (role: Extract<StateRole, { kind: 'path' }>, event: LocalEvent) => {
    const child = threadOf(event.output);
    if (child === undefined) return;
    const base = /^(.*)-(\d+)$/.exec(child);
    const parent = role.item ? forkedFrom.get(base?.[1] ?? '') : threadOf(event.input);
    const iteration = iterationOf(parent);
    const own = role.item ? `item ${event.index ?? base?.[2] ?? '?'}` : `path ${role.pathId}`;
    const parts = [
      labels.get(parent ?? ''),
      iteration === undefined ? undefined : `iteration ${iteration}`,
      own,
    ];
    labels.set(child, parts.filter((part) => part !== undefined).join(', '));
  };

  /**
   * A LOOP_START that goes on starts an iteration of its loop, the one its result gives (its index,
   * from 0: a resumed run counts on from where it was), else the one after the last seen; a
   * LOOP_START or LOOP_END that exits leaves the loop.
   */
  const loopStep = (
    role: Extract<StateRole, { kind: 'node' }>,
    thread: string | undefined,
    output: unknown,
    result: NodeResult | undefined,
  ) => {
    if (role.loopId === undefined || thread === undefined) return;
    const exit = (output as { loop?: { exit?: boolean } } | undefined)?.loop?.exit;
    if (exit === undefined) return;
    const frames = loops.get(thread) ?? [];
    const at = frames.findLastIndex((frame) => frame.loopId === role.loopId);
    if (exit) {
      if (at >= 0) frames.splice(at);
    } else if (role.nodeType === 'LOOP_START') {
      const index = (result?.output as { index?: unknown } | undefined)?.index;
      const current = at >= 0 && at === frames.length - 1 ? frames[at] : undefined;
      const iteration = typeof index === 'number' ? index + 1 : (current?.iteration ?? 0) + 1;
      if (current) current.iteration = iteration;
      else frames.push({ loopId: role.loopId, iteration });
    }
    loops.set(thread, frames);
  };

  const print = (event: LocalEvent) => {
    const role = asShown(roles.get(event.stateName ?? '') ?? roleByType(event), event);
    const thread = threadOf(event.input);
    if (role.kind === 'path') {
      if (event.type === 'StateExited') pathStarted(role, event);
      return;
    }
    if (role.kind === 'fork') {
      const forked = (event.input as { fork?: { base?: unknown } } | undefined)?.fork?.base;
      if (event.type === 'StateEntered' && typeof forked === 'string' && thread)
        forkedFrom.set(forked, thread);
      if (event.type !== 'StateFailed' || event.error === ASL_ERRORS.joinDecided) return;
      if (event.error === ASL_ERRORS.joinTimeout)
        io.stderr(`  ⇥ ${role.joinId ?? role.forkId}${where(thread, [])}: join timed out\n`);
      else io.stderr(`  ✗ ${role.forkId}${where(thread, [])}: ${failureOf(event)}\n`);
      return;
    }
    if (role.kind === 'join-report') {
      if (event.type === 'StateExited' && decidedJoin(event.output)) {
        io.stderr(`  ⇥ ${role.joinId}${where(thread, [])}: join decided\n`);
        return;
      }
      if (event.type !== 'StateFailed') return;
      const why =
        event.error === ASL_ERRORS.joinDecided
          ? 'join decided'
          : event.error === ASL_ERRORS.joinTimeout
            ? 'join timed out'
            : failureOf(event);
      io.stderr(`  ${why.startsWith('join ') ? '⇥' : '✗'} ${role.joinId}${where(thread, [])}: ${why}\n`);
      return;
    }
    if (role.kind === 'hidden' || role.kind === 'resume') return;

    const key = `${thread}/${role.nodeId}`;
    // A LOOP_START's own lines belong to no iteration of its loop but the one it starts.
    const skipLoop = role.nodeType === 'LOOP_START' ? role.loopId : undefined;
    switch (event.type) {
      case 'StateEntered':
        // An LLM node back from a tool call's approval goes on: it was shown entering already.
        if (!role.enters || approvalOf(event.input)?.answered) break;
        started.set(key, Date.parse(event.timestamp));
        io.stderr(`  → ${role.nodeId}${where(thread, [], skipLoop)}\n`);
        break;
      case 'StateExited': {
        // An LLM node stopped before a tool call held for approval has not ended: its question says so.
        if (!role.exits || approvalOf(event.output) !== undefined) break;
        const time = elapsed(key, event);
        // Told before the Task exits (START's thread is in its output only).
        const resultKey = `${thread ?? threadOf(event.output)}/${role.nodeId}`;
        const result = results.get(resultKey);
        results.delete(resultKey);
        // A LOOP_END's line is its iteration's, before the loop goes on or ends.
        const line = role.nodeType === 'LOOP_START' ? undefined : where(thread, [time]);
        loopStep(role, thread, event.output, result);
        if (failed.delete(key)) break;
        const shownAt = line ?? where(thread, [time]);
        // A report that decided its join ends the branch by design (read by type, without a definition).
        if (decidedJoin(event.output) && role.reportsTo === undefined) {
          io.stderr(`  ⇥ ${role.nodeId}${shownAt}: join decided\n`);
          break;
        }
        const calls = result?.toolCalls;
        if (calls !== undefined && calls.failed > 0) {
          io.stderr(`  ⚠ ${role.nodeId}${shownAt}: ${toolCallsFailed(calls)}\n`);
        } else {
          io.stderr(`  ✓ ${role.nodeId}${shownAt}\n`);
        }
        // The path's last node reported the path to its JOIN, and that decided it.
        if (role.reportsTo !== undefined && decidedJoin(event.output)) {
          io.stderr(`  ⇥ ${role.reportsTo}${where(thread, [])}: join decided\n`);
        }
        break;
      }
      case 'StateFailed': {
        if (!role.exits) break;
        const time = elapsed(key, event);
        // A branch that decides its join ends the Parallel through an error by design: not a failure.
        if (event.error === ASL_ERRORS.joinDecided || event.error === ASL_ERRORS.joinTimeout) {
          // Read by type (no definition): a Parallel ends so after the path's line said it.
          if (event.stateType !== 'Task') break;
          const why = event.error === ASL_ERRORS.joinDecided ? 'join decided' : 'join timed out';
          io.stderr(`  ⇥ ${role.nodeId}${where(thread, [time], skipLoop)}: ${why}\n`);
          break;
        }
        io.stderr(`  ✗ ${role.nodeId}${where(thread, [time], skipLoop)}: ${failureOf(event)}\n`);
        failed.add(key);
        break;
      }
      case 'StateRetried':
        failed.delete(key);
        io.stderr(`  ↻ ${role.nodeId}${where(thread, [], skipLoop)}: retry ${event.retryAttempt ?? ''}\n`);
        break;
      default:
        break;
    }
  };
  return Object.assign(print, {
    onNodeResult: ({ threadId, result }: NodeResultEntry) => {
      results.set(`${threadId}/${result.nodeId}`, result);
    },
    onDefinition: (definition: AslDefinition, nodeTable?: NodeTable) => {
      if (definition === rolesOf) return;
      rolesOf = definition;
      roles = stateRolesOf(definition, nodeTable);
    },
    placeOf: (threadId: string) => where(threadId, []),
  });
}

/** An LLM node's envelope marked for a tool call's approval; `answered` once the answer is in it. */
function approvalOf(envelope: unknown): { answered: boolean } | undefined {
  if (typeof envelope !== 'object' || envelope === null || !('approval' in envelope)) return undefined;
  return { answered: 'answer' in envelope || 'error' in envelope };
}
