/**
 * Definition surgery for resuming a thread: the same compiled machine, started at a node's Task
 * instead of START, with the states it can no longer reach dropped (validators reject unreachable
 * states, and they would only add noise to the console graph). A definition that continues runs keeps
 * its `stepthread:dispatch` entry, now defaulting to that node, so such a run can continue too.
 */
import type { AslChoiceState, AslDefinition, AslState, AslStateMachine } from '../../engine/asl/index.ts';
import { StepthreadError } from '../../engine/errors.ts';

/** Top-level states a state can go to next (Parallel branches are self-contained machines). */
function successors(state: AslState): string[] {
  const next: string[] = [];
  const s = state as {
    Next?: string;
    Default?: string;
    Choices?: { Next: string }[];
    Catch?: { Next: string }[];
  };
  if (s.Next) next.push(s.Next);
  if (s.Default) next.push(s.Default);
  for (const choice of s.Choices ?? []) next.push(choice.Next);
  for (const catcher of s.Catch ?? []) next.push(catcher.Next);
  return next;
}

/** The definition with `StartAt` = `stateName` (a top-level state) and only the states reachable from it. */
export function definitionStartingAt(definition: AslDefinition, stateName: string): AslDefinition {
  if (!Object.hasOwn(definition.States, stateName)) {
    throw new StepthreadError('INVALID_STATE_MACHINE', `no top-level state named ${stateName}`);
  }
  const entry = definition.States[definition.StartAt];
  const dispatch =
    entry?.Type === 'Choice' &&
    entry.Choices.some((rule) => 'Variable' in rule && rule.Variable === '$.resume' && 'IsPresent' in rule);
  const startAt = dispatch ? definition.StartAt : stateName;
  const reachable = new Set<string>();
  const pending = [startAt];
  const stateOf = (name: string): AslState | undefined =>
    dispatch && name === startAt
      ? { ...(entry as AslChoiceState), Default: stateName }
      : definition.States[name];
  while (pending.length > 0) {
    const name = pending.pop()!;
    if (reachable.has(name)) continue;
    const state = stateOf(name);
    if (state === undefined) continue;
    reachable.add(name);
    pending.push(...successors(state));
  }
  const States: AslStateMachine['States'] = {};
  // Keep definition order so the result reads like the original.
  for (const name of Object.keys(definition.States)) {
    if (reachable.has(name)) States[name] = structuredClone(stateOf(name)!);
  }
  return { ...structuredClone(definition), StartAt: startAt, States };
}
