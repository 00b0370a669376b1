/**
 * Node configs by reference: the compiler puts each node's static description (prompts, tools,
 * messages, code: node-description.ts) in one node table per compiled workflow, and each Task names only
 * `{ id, ref }`, so the definition holds the graph alone and its size no longer grows with the workflow's
 * text. The table is named by its content (`ref`, a SHA-256 prefix of its JSON text): a deploy stores it
 * under that name and never overwrites it, so a run pinned to an older definition still finds its own.
 */

import { sha256Hex } from './sha256.ts';
import type { NodeDescription } from './task-input.ts';
import type { AslDefinition } from './types.ts';

/** Hex digits of the table's SHA-256 a Task names it by: 48 bits (bytes in every Task), checked on load. */
export const NODE_TABLE_REF_LENGTH = 12;

export interface NodeTable {
  workflowId: string;
  version: number;
  /** Each node's description, by built node id, for its `execute` (and `answer`, `approval`) Tasks. */
  nodes: Record<string, NodeDescription>;
}

/** The table as compiled: the exact JSON text `ref` names (what a deploy stores, byte for byte). */
export interface CompiledNodeTable {
  ref: string;
  json: string;
}

/** What a Task's `node` is when its description is in the node table. */
export interface NodeRef {
  id: string;
  ref: string;
}

export function nodeTableRef(json: string): string {
  return sha256Hex(json).slice(0, NODE_TABLE_REF_LENGTH);
}

export function compiledNodeTable(table: NodeTable): CompiledNodeTable {
  const json = JSON.stringify(table);
  return { ref: nodeTableRef(json), json };
}

/** Whether a Task's `node` names its description in a node table instead of carrying it. */
export function isNodeRef(node: unknown): node is NodeRef {
  if (typeof node !== 'object' || node === null) return false;
  const candidate = node as Record<string, unknown>;
  return typeof candidate.id === 'string' && typeof candidate.ref === 'string' && !('type' in candidate);
}

/**
 * The definition with each Task's node reference replaced by its description in `table` (named `ref`; a copy, the
 * definition left as it is), for readers of a deployed definition that look at its Tasks' nodes:
 * the copy checks and a copy's start (deployed-workflow-edits.ts, copy-start.ts). A reference to
 * another table, or to a node the table lacks, stays as it is.
 */
export function describedDefinition<T>(definition: T, ref: string, table: NodeTable): T {
  const visit = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(visit);
    if (typeof value !== 'object' || value === null) return value;
    const copy: Record<string, unknown> = {};
    for (const [key, child] of Object.entries(value)) {
      const described =
        key === 'node' && isNodeRef(child) && child.ref === ref && Object.hasOwn(table.nodes, child.id)
          ? table.nodes[child.id]
          : undefined;
      copy[key] = described ?? visit(child);
    }
    return copy;
  };
  return visit(definition) as T;
}

/** A compiled workflow's definition with its nodes described from its own node table. */
export function describedCompiled(compiled: {
  definition: AslDefinition;
  nodeTable: CompiledNodeTable;
}): AslDefinition {
  const table = JSON.parse(compiled.nodeTable.json) as NodeTable;
  return describedDefinition(compiled.definition, compiled.nodeTable.ref, table);
}
