/**
 * Where a Task's node description comes from when the Task names it by reference (`node: { id, ref }`,
 * engine/asl/node-table.ts): the dispatch puts the description from the node table in its place before
 * anything reads the event, so handlers see the same `node` as ever. A Lambda reads tables from the
 * stack's bucket (functions/stores/node-tables.ts), the local runtime from the workflows it compiled.
 */
import { createHash } from 'node:crypto';
import { isNodeRef, NODE_TABLE_REF_LENGTH, type NodeTable } from '../../engine/asl/node-table.ts';
import { StepthreadError } from '../../engine/errors.ts';

export interface NodeTableSource {
  /** The table `ref` names; NODE_TABLE_NOT_FOUND when there is none. */
  table(ref: string): Promise<NodeTable>;
}

/** Tables this process holds (the local runtime compiled them), by ref. */
export function memoryNodeTables(): NodeTableSource & { add(ref: string, json: string): NodeTable } {
  const tables = new Map<string, NodeTable>();
  return {
    add(ref, json) {
      let table = tables.get(ref);
      if (table === undefined) {
        table = parseNodeTable(ref, json);
        tables.set(ref, table);
      }
      return table;
    },
    async table(ref) {
      const table = tables.get(ref);
      if (table === undefined) throw notFound(ref, 'this process compiled no such workflow');
      return table;
    },
  };
}

/** The table as stored, checked against the ref that names it (a prefix of its SHA-256). */
export function parseNodeTable(ref: string, json: string): NodeTable {
  const digest = createHash('sha256').update(json).digest('hex').slice(0, NODE_TABLE_REF_LENGTH);
  if (digest !== ref) throw notFound(ref, `the stored table's content is ${digest}`);
  return JSON.parse(json) as NodeTable;
}

export function notFound(ref: string, why: string): StepthreadError {
  return new StepthreadError(
    'NODE_TABLE_NOT_FOUND',
    `node table ${ref}, which this state machine's Tasks name, cannot be read: ${why}; deploy the workflow again (the deploy stores it)`,
  );
}

/**
 * The Task event with its node's description in place of a reference; an event whose node is already
 * described (join bookkeeping, `fail`, `resume`, hand-built events) is returned as it is.
 */
export async function withNodeDescription(
  event: unknown,
  source: NodeTableSource | undefined,
): Promise<unknown> {
  if (typeof event !== 'object' || event === null) return event;
  const { node } = event as { node?: unknown };
  if (!isNodeRef(node)) return event;
  if (source === undefined) {
    throw new StepthreadError(
      'INVALID_TASK_INPUT',
      `node ${node.id} is named by reference, and no node table is at hand`,
      {
        nodeId: node.id,
      },
    );
  }
  const table = await source.table(node.ref);
  const description = Object.hasOwn(table.nodes, node.id) ? table.nodes[node.id] : undefined;
  if (description === undefined) {
    throw new StepthreadError('NODE_TABLE_NOT_FOUND', `node table ${node.ref} has no node ${node.id}`, {
      nodeId: node.id,
    });
  }
  return { ...event, node: description };
}
