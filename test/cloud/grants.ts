/**
 * What the cloud suite concludes from the SDK calls the bridge checked (lambda-bridge.ts): the calls a
 * role refused (a missing grant), and the grants no call used (an excessive one, unless it is one
 * every handler holds for a path of the shared pipeline that the suite's workflows do not take).
 */
import { evaluate, type PolicyStatement } from './iam.ts';
import type { CheckedRequest } from './sdk-calls.ts';

export type Checked = CheckedRequest & { count: number };

/** Refused authorisations, one line each: `<function> <action> <resources>`. */
export function deniedCalls(calls: readonly Checked[]): string[] {
  return calls
    .filter((call) => !call.allowed)
    .map(
      (call) => `${call.principal} ${call.action} ${call.resources.join(' ') || '(any)'} (${call.command})`,
    )
    .sort();
}

/**
 * Grants held by every role because the shared step pipeline (functions/handlers/pipeline.ts) may need
 * them in any handler, on paths the deployed workflows need not take. Each must still be used by at
 * least one function in the suite (so the entry cannot outlive the grant's reason), unless
 * `neverInASoundRun`.
 */
export const PIPELINE_GRANTS: Readonly<Record<string, { reason: string; neverInASoundRun?: boolean }>> = {
  'ThreadTable dynamodb:BatchGetItem': {
    reason:
      'a fork child loads its root thread with its own head; a node reading other nodes loads their results',
  },
  'ThreadTable dynamodb:Query': {
    reason: "a node that reads `nodes` as a whole queries its thread's results",
  },
  'ThreadTable dynamodb:PutItem': { reason: 'a node whose result a later node reads keeps it' },
  'LargeValues s3:PutObject': { reason: 'any node may produce a value over the inline limit (by reference)' },
  'LargeValues s3:GetObject': { reason: 'any node may read a value stored by reference' },
  'MapItemSources s3:GetObject': {
    reason:
      'an item of a FORK over a list creates its thread on its first step, whatever its first node is, or in its failure report',
  },
  'ConversationSegments s3:GetObject': {
    reason: "a large LLM output is stored as a reference into the conversation's segments",
  },
  'MissingKeysAreNotFound s3:ListBucket': {
    reason: 'only S3 uses it, to answer a GetObject of a missing key with NoSuchKey rather than AccessDenied',
    neverInASoundRun: true,
  },
};

/** Statements the platform uses on the function's behalf (Lambda's log agent, X-Ray), not its code. */
const PLATFORM_ACTIONS = /^(logs|xray):/;

const actionsOf = (statement: PolicyStatement) =>
  [statement.Action ?? []].flat().filter((action) => !PLATFORM_ACTIONS.test(action));

/**
 * Grants of one function that the suite cannot exercise, by `<function kind> <Sid> <action>`: what
 * moto cannot run. Keep each with its reason; remove it once the suite covers the path.
 */
export const UNEXERCISED_GRANTS: Readonly<Record<string, string>> = {};

/** `RuntimeJoinFunction7FD340C9` → `Join`. */
export function functionKind(logicalId: string): string {
  return /^Runtime(\w+?)Function[0-9A-F]{8}$/.exec(logicalId)?.[1] ?? logicalId;
}

/**
 * Each `<function kind> <Sid> <action>` of a role that no allowed call used, beyond PIPELINE_GRANTS and
 * UNEXERCISED_GRANTS; and each PIPELINE_GRANTS entry no function used at all (except those never used
 * in a sound run).
 */
export function unusedGrants(
  roles: ReadonlyMap<string, { logicalId: string; statements: readonly PolicyStatement[] }>,
  calls: readonly Checked[],
): string[] {
  const used = new Set<string>();
  for (const call of calls) {
    if (!call.allowed) continue;
    for (const sid of call.by) used.add(`${call.principal} ${sid} ${call.action}`);
  }
  const usedAnywhere = new Set([...used].map((entry) => entry.split(' ').slice(1).join(' ')));
  const unused: string[] = [];
  for (const [name, { logicalId, statements }] of roles) {
    const kind = functionKind(logicalId);
    for (const statement of statements) {
      for (const action of actionsOf(statement)) {
        const grant = `${statement.Sid ?? '(no Sid)'} ${action}`;
        if (
          used.has(`${name} ${grant}`) ||
          PIPELINE_GRANTS[grant] ||
          UNEXERCISED_GRANTS[`${kind} ${grant}`]
        ) {
          continue;
        }
        unused.push(`${kind} ${grant}`);
      }
    }
  }
  for (const [grant, { neverInASoundRun }] of Object.entries(PIPELINE_GRANTS)) {
    if (!neverInASoundRun && !usedAnywhere.has(grant)) unused.push(`(no function) ${grant}`);
  }
  return unused.sort();
}

/**
 * The grants the calls needed, each removed in turn: the calls that removal would refuse. A grant
 * whose removal refuses nothing is unused.
 */
export function refusedWithout(
  statements: readonly PolicyStatement[],
  remove: { sid: string; action: string },
  calls: readonly Checked[],
): Checked[] {
  const reduced = statements.map((statement) =>
    statement.Sid === remove.sid
      ? { ...statement, Action: [statement.Action ?? []].flat().filter((action) => action !== remove.action) }
      : statement,
  );
  return calls.filter((call) => call.allowed && !evaluate(reduced, call).allowed);
}
