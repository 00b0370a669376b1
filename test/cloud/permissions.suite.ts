/**
 * The stack's IAM, judged over every SDK call both cloud suites made (run.sh runs this file after
 * them; each suite leaves its calls in CALLS_DIR, checked against the caller's policy as synthesized):
 * no call was refused (a missing grant), and no grant went unused (an excessive one), beyond the
 * pipeline's shared grants and what moto cannot run (grants.ts, each with its reason).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type Checked, deniedCalls, functionKind, refusedWithout, unusedGrants } from './grants.ts';
import { CALLS_DIR, type CallsFile, SYNTHESIZED } from './setup.ts';

const SUITES = ['cloud', 'cloud-stack'];
const ENABLED = SYNTHESIZED && process.env.STEPTHREAD_CLOUD_PERMISSIONS === '1';

/**
 * Operator policy grants no in-process `--stack` command of the suites uses, each with its reason:
 * the command that uses it runs as a child process, whose calls this suite does not see.
 */
const OPERATOR_UNEXERCISED: Readonly<Record<string, string>> = {
  'ExecutionsPrefixed states:GetExecutionHistory':
    "dev --target aws reads an execution's Step Functions history for its page (cloud.suite.ts runs it as a child process)",
};

describe.skipIf(!ENABLED)('the stack’s IAM over every call of the cloud suites', () => {
  const files = () =>
    SUITES.map((suite) => {
      const path = join(CALLS_DIR!, `${suite}.json`);
      if (!existsSync(path)) throw new Error(`no calls from the ${suite} suite (${path}): did it run?`);
      return JSON.parse(readFileSync(path, 'utf8')) as CallsFile;
    });
  const functionCalls = (): Checked[] => files().flatMap((file) => file.functions);

  it('no SDK call of any function was refused by its role', () => {
    const calls = functionCalls();
    expect(calls.length).toBeGreaterThan(0);
    expect(deniedCalls(calls)).toEqual([]);
  });

  it("every action a function's role grants was used by that function (or is the pipeline's, or cannot run in moto)", () => {
    const [first] = files();
    expect(unusedGrants(new Map(first!.roles), functionCalls())).toEqual([]);
  });

  it('a grant removed from a role refuses the calls that needed it: the JOIN without BatchWriteItem', () => {
    const [first] = files();
    const [name, role] = first!.roles.find(([, role]) => functionKind(role.logicalId) === 'Join')!;
    const refused = refusedWithout(
      role.statements,
      { sid: 'ThreadTable', action: 'dynamodb:BatchWriteItem' },
      functionCalls().filter((call) => call.principal === name),
    );
    expect(refused.map((call) => call.action)).toContain('dynamodb:BatchWriteItem');
  });

  it('every action of the operator policy was used by a --stack command', () => {
    const [first] = files();
    const used = new Set(
      files()
        .flatMap((file) => file.operator)
        .filter((call) => call.allowed)
        .flatMap((call) => call.by.map((sid) => `${sid} ${call.action}`)),
    );
    const unused = first!.operatorStatements.flatMap((statement) =>
      [statement.Action ?? []]
        .flat()
        .map((action) => `${statement.Sid} ${action}`)
        .filter((grant) => !used.has(grant) && !OPERATOR_UNEXERCISED[grant]),
    );
    expect(unused).toEqual([]);
    // An entry whose grant is used now has no reason left.
    expect(Object.keys(OPERATOR_UNEXERCISED).filter((grant) => used.has(grant))).toEqual([]);
  });
});
