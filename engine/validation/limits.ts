/**
 * Limits checked before anything else reads a workflow file, iteratively, so no nesting can overflow
 * the stack of the recursive checks that follow: WORKFLOW_TOO_DEEP past MAX_WORKFLOW_DEPTH levels of
 * JSON nesting anywhere in the file, SUBGRAPH_TOO_DEEP past MAX_SUBGRAPH_NESTING levels of SUBGRAPH
 * inside SUBGRAPH. Either stops validation there, with that one error.
 */
import type { CodedError } from '../errors.ts';
import { valueDepth } from '../model/json-values.ts';
import { isRecord } from '../model/paths.ts';
import { codedError } from './report.ts';

export const MAX_WORKFLOW_DEPTH = 256;
export const MAX_SUBGRAPH_NESTING = 32;

export function checkFileLimits(data: unknown): CodedError[] {
  let level: unknown[] = [data];
  for (let nesting = 0; level.length > 0; nesting++) {
    if (nesting > MAX_SUBGRAPH_NESTING) {
      return [
        codedError(
          'SUBGRAPH_TOO_DEEP',
          `SUBGRAPH nodes are nested more than ${MAX_SUBGRAPH_NESTING} levels deep`,
          [],
        ),
      ];
    }
    const next: unknown[] = [];
    for (const workflow of level) {
      const nodes = isRecord(workflow) && Array.isArray(workflow.nodes) ? workflow.nodes : [];
      for (const node of nodes) {
        const config = isRecord(node) && isRecord(node.config) ? node.config : undefined;
        if (node?.type === 'SUBGRAPH' && isRecord(config?.workflow)) next.push(config.workflow);
      }
    }
    level = next;
  }
  const depth = valueDepth(data, MAX_WORKFLOW_DEPTH);
  if (depth > MAX_WORKFLOW_DEPTH) {
    return [
      codedError(
        'WORKFLOW_TOO_DEEP',
        `the workflow file nests arrays and objects more than ${MAX_WORKFLOW_DEPTH} levels deep`,
        [],
      ),
    ];
  }
  return [];
}
