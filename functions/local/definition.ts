/**
 * Definition surgery for resuming a thread: the same compiled machine, started at a node's Task
 * instead of START, with the states it can no longer reach dropped (validators reject unreachable
 * states, and they would only add noise to the console graph).
 */
import type { AslDefinition, AslState, AslStateMachine } from '../../engine/asl/index.ts';
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
  const reachable = new Set<string>();
  const pending = [stateName];
  while (pending.length > 0) {
    const name = pending.pop()!;
    if (reachable.has(name)) continue;
    const state = definition.States[name];
    if (state === undefined) continue;
    reachable.add(name);
    pending.push(...successors(state));
  }
  const States: AslStateMachine['States'] = {};
  // Keep definition order so the result reads like the original.
  for (const [name, state] of Object.entries(definition.States)) {
    if (reachable.has(name)) States[name] = structuredClone(state);
  }
  return { ...structuredClone(definition), StartAt: stateName, States };
}
