/**
 * Ids that become Step Functions state names, or keys of plain objects at run time:
 *
 * - INVALID_STATE_NAME: a node id or fork path id with a control character (U+0000–U+001F,
 *   U+007F–U+009F), which Step Functions refuses in a state name, or one whose state names, with the
 *   SUBGRAPH prefixes it gets when inlined (`<subgraph>.<id>`) and the suffixes the compiler adds
 *   (`:choice`, `:continue`, `:answer`, `<fork>:<path>:serial`, `<join>:<path>:failed`, …), would pass 80
 *   characters, Step Functions' limit;
 * - RESERVED_ID: a node id, fork path id, loop id or variable name (declared, or written by a node's
 *   `variableName` / `outputVariable`) equal to a property of Object.prototype (`__proto__`,
 *   `constructor`, `hasOwnProperty`, …), which would read as that property instead of the
 *   workflow's own entry (a `__proto__` variable's value would be lost).
 */
import type { CodedError } from '../errors.ts';
import type { Path } from '../model/paths.ts';
import type { NodeType } from '../model/schema.ts';
import { codedError } from './report.ts';
import type { WorkflowView } from './view.ts';

export const MAX_STATE_NAME_LENGTH = 80;

/** The longest suffix the compiler appends to a node's id, by its type (engine/asl/compile.ts). */
const SUFFIX_LENGTH: Partial<Record<NodeType, number>> = {
  ROUTE: ':no-route'.length,
  LOOP_START: ':choice'.length,
  LOOP_END: ':continue'.length,
  USER_INTERACTION: ':answer'.length,
  // Only with a tool that requires approval; counted for every LLM node, so adding one never breaks the id.
  LLM: ':approval'.length,
  FORK: ':paths'.length,
  JOIN: ':timed-out'.length,
};
/** `<fork>:<path>:serial` and `<join>:<path>:failed`. */
const PATH_SUFFIX_LENGTH = ':serial'.length;

const RESERVED = new Set([...Object.getOwnPropertyNames(Object.prototype), 'prototype']);
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** Code points, as Step Functions counts a name's length. */
function length(text: string): number {
  return Array.from(text).length;
}

export function checkIds(root: WorkflowView): CodedError[] {
  const errors: CodedError[] = [];
  const levels: { view: WorkflowView; prefix: string }[] = [{ view: root, prefix: '' }];
  while (levels.length > 0) {
    const { view, prefix } = levels.pop()!;
    for (const { path, declaration } of view.variables) {
      errors.push(...checkName(declaration.name, 'variable name', [...path, 'name'], undefined, false));
    }
    const builtIds = new Map(view.nodes.map(({ id }) => [id, prefix + id]));
    for (const { id, type, path, node, child } of view.nodes) {
      if (type === 'SUBGRAPH' && child) levels.push({ view: child, prefix: `${prefix}${id}.` });
      errors.push(...checkName(id, 'node id', [...path, 'id'], id));
      const built = prefix + id;
      const longest = length(built) + (SUFFIX_LENGTH[type] ?? 0);
      if (type !== 'SUBGRAPH' && longest > MAX_STATE_NAME_LENGTH) {
        errors.push(
          codedError(
            'INVALID_STATE_NAME',
            `node id "${built}" makes a state name of ${longest} characters with the suffix its ${type} state gets; Step Functions allows ${MAX_STATE_NAME_LENGTH}: shorten it to at most ${MAX_STATE_NAME_LENGTH - longest + length(id)} characters`,
            [...path, 'id'],
            id,
          ),
        );
      }
      const config =
        node && 'config' in node ? (node.config as Record<string, unknown> | undefined) : undefined;
      for (const field of ['variableName', 'outputVariable'] as const) {
        const name = config?.[field];
        if (typeof name === 'string') {
          errors.push(...checkName(name, 'variable name', [...path, 'config', field], id, false));
        }
      }
      if (typeof config?.loopId === 'string') {
        errors.push(...checkName(config.loopId, 'loop id', [...path, 'config', 'loopId'], id, false));
      }
      if ((type === 'FORK' || type === 'JOIN') && Array.isArray(config?.forkPathIds)) {
        (config.forkPathIds as unknown[]).forEach((pathId, index) => {
          if (typeof pathId !== 'string') return;
          const where = [...path, 'config', 'forkPathIds', index];
          if (type === 'FORK') errors.push(...checkName(pathId, 'fork path id', where, id));
          const owner = builtIds.get(id) ?? id;
          const longestPath = length(owner) + 1 + length(pathId) + PATH_SUFFIX_LENGTH;
          if (longestPath > MAX_STATE_NAME_LENGTH) {
            errors.push(
              codedError(
                'INVALID_STATE_NAME',
                `fork path id "${pathId}" makes the state name "${owner}:${pathId}:${type === 'FORK' ? 'serial' : 'failed'}" of ${longestPath} characters; Step Functions allows ${MAX_STATE_NAME_LENGTH}: shorten the path id or the ${type}'s id`,
                where,
                id,
              ),
            );
          }
        });
      }
    }
  }
  return errors;
}

function checkName(
  name: string,
  what: string,
  path: Path,
  nodeId: string | undefined,
  stateName = true,
): CodedError[] {
  const errors: CodedError[] = [];
  if (stateName && CONTROL.test(name)) {
    errors.push(
      codedError(
        'INVALID_STATE_NAME',
        `${what} ${JSON.stringify(name)} contains a control character, which Step Functions does not accept in a state name`,
        path,
        nodeId,
      ),
    );
  }
  if (RESERVED.has(name)) {
    errors.push(
      codedError(
        'RESERVED_ID',
        `${what} "${name}" is the name of a built-in object property; choose another`,
        path,
        nodeId,
      ),
    );
  }
  return errors;
}
