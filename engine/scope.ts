/**
 * The names expressions and templates see while a node runs (conditions, prompts, END output,
 * hooks, mappings). One place, so every node type resolves `{{...}}` the same way:
 *
 * - every visible variable by its name, inner scopes shadowing outer ones:
 *   loop (every frame, innermost first) → subgraph (top frame) → thread → global;
 * - `input`: the run's input;
 * - `nodes`: node id → that node's latest output (`{{nodes.classify}}`), ids as the node's own level
 *   writes them (inside a subgraph its child nodes; a SUBGRAPH's id gives its output);
 * - `thread`: `{ id, forkPathId }` (forkPathId is the author's path id inside a fork branch).
 *
 * The reserved names (`input`, `nodes`, `thread`) win over variables of the same name: a variable
 * silently hiding the run's input would make templates mean different things in different runs.
 */
import type { Thread } from './thread/types.ts';
import { variableView } from './thread/variables.ts';

export type ExpressionScope = Record<string, unknown>;

/** The outputs of the nodes that ran on this thread (or before its fork), by node id. */
export function nodeOutputs(thread: Pick<Thread, 'nodeResults'>): Record<string, unknown> {
  const outputs: Record<string, unknown> = {};
  for (const [nodeId, result] of Object.entries(thread.nodeResults)) {
    Object.defineProperty(outputs, nodeId, {
      value: result.output,
      writable: true,
      enumerable: true,
      configurable: true,
    });
  }
  return outputs;
}

/**
 * `nodes` as the node's own level names them: each alias (a reference inside a subgraph, or a
 * SUBGRAPH's id) reads the first of its built ids that has a result.
 */
function aliasedOutputs(
  thread: Pick<Thread, 'nodeResults'>,
  aliases: Readonly<Record<string, readonly string[]>> | undefined,
): Record<string, unknown> {
  const outputs = nodeOutputs(thread);
  for (const [reference, ids] of Object.entries(aliases ?? {})) {
    const id = ids.find((candidate) => Object.hasOwn(thread.nodeResults, candidate));
    Object.defineProperty(outputs, reference, {
      value: id === undefined ? undefined : thread.nodeResults[id]?.output,
      writable: true,
      enumerable: true,
      configurable: true,
    });
  }
  return outputs;
}

export function buildExpressionScope(
  thread: Pick<Thread, 'id' | 'input' | 'variables' | 'nodeResults' | 'contextData'>,
  nodeAliases?: Readonly<Record<string, readonly string[]>>,
): ExpressionScope {
  const forkPathId = thread.contextData.authorForkPathId ?? thread.contextData.forkPathId;
  return {
    ...variableView(thread.variables),
    input: thread.input,
    nodes: aliasedOutputs(thread, nodeAliases),
    thread: { id: thread.id, ...(forkPathId === undefined ? {} : { forkPathId }) },
  };
}
