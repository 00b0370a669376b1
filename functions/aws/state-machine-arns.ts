/**
 * State machine ARNs of a pinned deploy (docs/deploy.md, "Runs are pinned to their code"): each deploy
 * publishes a state machine version and points the alias `live` at it; runs start on the alias, so
 * each execution runs the version that was live when it started. Pure: shared by the stack
 * (infra/workflow.ts), the CLI and the cloud suite's IAM check.
 */

/** The alias each deploy points at the version it published; executions start on it. */
export const STATE_MACHINE_ALIAS = 'live';

/** `arn:…:stateMachine:<name>[:<version or alias>]` → its parts; undefined for another ARN. */
export function parseStateMachineArn(
  arn: string,
): { unqualified: string; qualifier: string | undefined } | undefined {
  const parts = arn.split(':');
  if (parts[0] !== 'arn' || parts[2] !== 'states' || parts[5] !== 'stateMachine') return undefined;
  if (parts.length !== 7 && parts.length !== 8) return undefined;
  return { unqualified: parts.slice(0, 7).join(':'), qualifier: parts[7] };
}

/** The state machine an ARN names, without a version or alias (IAM authorises against this one). */
export function unqualifiedStateMachineArn(arn: string): string {
  return parseStateMachineArn(arn)?.unqualified ?? arn;
}

/** The alias ARN executions of a deployed workflow start on. */
export function liveAliasArn(stateMachineArn: string): string {
  return `${unqualifiedStateMachineArn(stateMachineArn)}:${STATE_MACHINE_ALIAS}`;
}

/** The version number a version ARN ends in (`…:stateMachine:<name>:3` → 3); undefined otherwise. */
export function stateMachineVersionOf(versionArn: string | undefined): number | undefined {
  const qualifier = versionArn === undefined ? undefined : parseStateMachineArn(versionArn)?.qualifier;
  return qualifier !== undefined && /^[1-9]\d*$/.test(qualifier) ? Number(qualifier) : undefined;
}
