/**
 * Continue-as-new in the compiled ASL: a definition whose graph has a top-level cycle starts at a
 * dispatcher (start, or resume a continuing run), every Task counts its history events, and each
 * cyclic ROUTE / LOOP_END Choice may hand the run to a successor execution first.
 */
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { countingLoop } from '../../../bench/head-size.ts';
import {
  checkContinueAfterEvents,
  continueAfterEventsFromEnv,
  DEFAULT_CONTINUE_AFTER_EVENTS,
  INLINE_MAP_ITEM_HISTORY_EVENTS,
  inlineMapOverflow,
  RESUME_HISTORY_EVENTS,
  SUCCESSOR_NAME_EXPRESSION,
} from '../../../engine/asl/continuation.ts';
import {
  type AslDefinition,
  type AslState,
  type AslStateMachine,
  compileWorkflow,
  forEachState,
  substituteResources,
  taskStateIndex,
} from '../../../engine/asl/index.ts';
import { NODE_TYPES, type Workflow } from '../../../engine/model/schema.ts';
import { compiledOf, corpus } from './corpus.ts';
import { forkInLoop, loopInFork } from './workflows.ts';

const validate = createRequire(import.meta.url)('asl-validator') as (
  definition: unknown,
  options?: { checkArn?: boolean; checkPaths?: boolean },
) => { isValid: boolean; errorsText(separator?: string): string };

function check(definition: AslDefinition, options?: { checkArn?: boolean; checkPaths?: boolean }) {
  const result = validate(structuredClone(definition), options);
  return { isValid: result.isValid, errors: result.isValid ? '' : result.errorsText('\n') };
}

/** A ROUTE that sends the run back (a cycle without any loop node). */
const routeCycle: Workflow = {
  id: 'retry-until',
  version: 1,
  variables: [{ name: 'tries', type: 'number', scope: 'thread', initial: 0 }],
  nodes: [
    { id: 'start', type: 'START' },
    {
      id: 'try',
      type: 'VARIABLE',
      config: { variableName: 'tries', variableType: 'number', expression: 'tries + 1' },
    },
    {
      id: 'again',
      type: 'ROUTE',
      config: { routes: [{ condition: 'tries < 3', targetNodeId: 'try' }], defaultTargetNodeId: 'end' },
    },
    { id: 'end', type: 'END' },
  ],
  edges: [
    { from: 'start', to: 'try' },
    { from: 'try', to: 'again' },
  ],
};

function topState(definition: AslDefinition, name: string): AslState {
  const state = definition.States[name];
  if (!state) throw new Error(`no top-level state ${name}`);
  return state;
}

function historyEventsOf(definition: AslStateMachine): Record<string, number | undefined> {
  const found: Record<string, number | undefined> = {};
  forEachState(definition, (name, state) => {
    // A node's own Task names no action (execute is the default), but its node.
    if (state.Type !== 'Task' || !('action' in state.Parameters || 'node' in state.Parameters)) return;
    found[name] = state.Parameters.historyEvents;
  });
  return found;
}

describe('continue-as-new in the compiled definition', () => {
  const { definition } = compileWorkflow(countingLoop(10, 'counter'), { continueAfterEvents: 1_000 });

  it('starts at a dispatcher: START for a new run, stepthread:resume for an execution that continues one', () => {
    expect(definition.StartAt).toBe('stepthread:dispatch');
    expect(Object.keys(definition.States).slice(0, 4)).toEqual([
      'stepthread:dispatch',
      'stepthread:resume',
      'stepthread:resume-at',
      'stepthread:no-resume-point',
    ]);
    expect(topState(definition, 'stepthread:dispatch')).toEqual({
      Type: 'Choice',
      Choices: [{ Variable: '$.resume', IsPresent: true, Next: 'stepthread:resume' }],
      Default: 'start',
    });
    expect(topState(definition, 'stepthread:resume')).toMatchObject({
      Type: 'Task',
      Resource: `\${Fn_START}`,
      Parameters: {
        action: 'resume',
        node: { id: 'stepthread:resume', type: 'START', workflowId: 'counter' },
        'executionId.$': '$$.Execution.Id',
        'envelope.$': '$.resume.envelope',
        'resume.$': '$.resume',
        historyEvents: RESUME_HISTORY_EVENTS,
      },
      // The thread still belongs to the run that continued: nothing marks it FAILED from here.
      Catch: [{ ErrorEquals: ['States.ALL'], ResultPath: '$.error', Next: 'stepthread:failed' }],
      Next: 'stepthread:resume-at',
    });
    // The Choice that continued first; then each top-level node but START, where a copy may start.
    expect(topState(definition, 'stepthread:resume-at')).toEqual({
      Type: 'Choice',
      Choices: ['next:choice', 'loop', 'inc', 'next', 'end'].map((at) => ({
        Variable: '$.resumeAt',
        StringEquals: at,
        Next: at,
      })),
      Default: 'stepthread:no-resume-point',
    });
    expect(topState(definition, 'stepthread:no-resume-point')).toMatchObject({
      Type: 'Fail',
      Error: 'stepthread.NoResumePoint',
    });
  });

  it("checks the history in the LOOP_END's Choice (no extra state) and continues through states:startExecution", () => {
    expect(topState(definition, 'next:choice')).toEqual({
      Type: 'Choice',
      Choices: [
        {
          And: [
            { Variable: '$.history', IsPresent: true },
            { Variable: '$.history', NumericGreaterThanEquals: 1_000 },
          ],
          Next: 'next:continue',
        },
        {
          And: [
            { Variable: '$.loop.exit', IsPresent: true },
            { Variable: '$.loop.exit', BooleanEquals: true },
          ],
          Next: 'end',
        },
      ],
      Default: 'loop',
    });
    expect(topState(definition, 'next:continue')).toEqual({
      Type: 'Task',
      Resource: 'arn:aws:states:::states:startExecution',
      Parameters: {
        'StateMachineArn.$': '$$.StateMachine.Id',
        'Name.$': SUCCESSOR_NAME_EXPRESSION,
        Input: {
          resume: { at: 'next:choice', node: { id: 'next', type: 'LOOP_END' }, 'envelope.$': '$' },
          'AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID.$': '$$.Execution.Id',
        },
      },
      ResultPath: '$.continuation',
      Retry: [
        { ErrorEquals: ['StepFunctions.ExecutionAlreadyExistsException'], MaxAttempts: 0 },
        { ErrorEquals: ['States.ALL'], MaxAttempts: 8, JitterStrategy: 'FULL' },
      ],
      Catch: [
        {
          ErrorEquals: ['StepFunctions.ExecutionAlreadyExistsException'],
          ResultPath: '$.error',
          Next: 'stepthread:continued',
        },
        { ErrorEquals: ['States.ALL'], ResultPath: '$.error', Next: ':fail' },
      ],
      Next: 'stepthread:continued',
    });
    // The old execution succeeds, saying it continued and naming its successor.
    expect(topState(definition, 'stepthread:continued')).toEqual({
      Type: 'Pass',
      Parameters: {
        status: 'CONTINUED',
        'continuedAs.$': SUCCESSOR_NAME_EXPRESSION,
        'threadId.$': '$.rootThreadId',
        'step.$': '$.step',
      },
      End: true,
    });
    expect(taskStateIndex(definition).filter((entry) => entry.invocation === 'startExecution')).toEqual([
      {
        stateName: 'next:continue',
        nodeType: 'LOOP_END',
        action: 'continue',
        nodeId: 'next',
        invocation: 'startExecution',
      },
    ]);
  });

  it('counts each Task with the Choice after it; START with the execution start and the dispatcher', () => {
    expect(historyEventsOf(definition)).toEqual({
      'stepthread:resume': RESUME_HISTORY_EVENTS, // start 1 + dispatch 2 + Task 5 + resume-at 2 + the Choice 2
      start: 8, // execution start 1 + dispatch 2 + Task 5
      loop: 7, // Task 5 + its Choice 2
      inc: 5,
      next: 7,
      end: 5,
      ':fail': undefined, // the run ends there: nothing to count
    });
    expect(RESUME_HISTORY_EVENTS).toBe(12);
  });

  it('is accepted by asl-validator, placeholders and all, and once the placeholders are ARNs', () => {
    expect(check(definition)).toEqual({ isValid: true, errors: '' });
    const arns = Object.fromEntries(
      NODE_TYPES.map((type) => [`Fn_${type}`, `arn:aws:lambda:eu-west-1:123456789012:function:st-${type}`]),
    );
    const filled = substituteResources(definition, arns);
    expect(topState(filled, 'next:continue')).toMatchObject({
      Resource: 'arn:aws:states:::states:startExecution',
    });
    expect(check(filled, { checkArn: true, checkPaths: true })).toEqual({ isValid: true, errors: '' });
  });

  it('defaults to 20,000 events and accepts only a threshold that leaves room (or off)', () => {
    const defaults = compileWorkflow(countingLoop(10, 'counter')).definition;
    expect(JSON.stringify(topState(defaults, 'next:choice'))).toContain(
      `"NumericGreaterThanEquals":${DEFAULT_CONTINUE_AFTER_EVENTS}`,
    );
    for (const bad of [50, 24_001, 1.5, Number.NaN]) {
      expect(() => compileWorkflow(countingLoop(10, 'counter'), { continueAfterEvents: bad })).toThrowError(
        expect.objectContaining({ code: 'CONTINUE_AFTER_EVENTS_INVALID' }),
      );
    }
    expect(checkContinueAfterEvents(100)).toBe(100);
    expect(continueAfterEventsFromEnv({})).toBeUndefined();
    expect(continueAfterEventsFromEnv({ STEPTHREAD_CONTINUE_AFTER_EVENTS: '2_000' })).toBe(2_000);
    expect(continueAfterEventsFromEnv({ STEPTHREAD_CONTINUE_AFTER_EVENTS: 'off' })).toBe(false);
    expect(() => continueAfterEventsFromEnv({ STEPTHREAD_CONTINUE_AFTER_EVENTS: 'lots' })).toThrowError(
      expect.objectContaining({ code: 'CONTINUE_AFTER_EVENTS_INVALID' }),
    );
  });

  it('leaves a workflow without a top-level cycle (and any workflow with continuing off) without counting or continuing', () => {
    for (const [name, workflow] of corpus) {
      const off = compileWorkflow(workflow, { continueAfterEvents: false }).definition;
      // The entry stays (a copied thread starts through it); nothing counts history or continues.
      expect(off.StartAt, name).toBe('stepthread:dispatch');
      expect(JSON.stringify(off), name).not.toMatch(/historyEvents|"history"|startExecution/);
      const on = compiledOf(name).definition;
      const cyclic = JSON.stringify(on).includes('startExecution');
      if (!cyclic) expect(JSON.stringify(on), name).toBe(JSON.stringify(off));
    }
    // The examples: only route-loop loops.
    const cyclic = corpus
      .filter(([name]) => JSON.stringify(compiledOf(name).definition).includes('startExecution'))
      .map(([name]) => name);
    expect(cyclic).toEqual(expect.arrayContaining(['examples/route-loop.json', 'own:forkInLoop']));
    expect(cyclic).not.toContain('examples/support-triage.json'); // a ROUTE, but no cycle
    expect(cyclic).not.toContain('examples/fork-join-research.json');
  });

  it('continues at a ROUTE that closes a cycle', () => {
    const { definition: routed } = compileWorkflow(routeCycle, { continueAfterEvents: 500 });
    const choice = topState(routed, 'again:choice');
    if (choice.Type !== 'Choice') throw new Error('again:choice is not a Choice');
    expect(choice.Choices[0]).toMatchObject({ Next: 'again:continue' });
    const resumeAt = topState(routed, 'stepthread:resume-at');
    if (resumeAt.Type !== 'Choice') throw new Error('stepthread:resume-at is not a Choice');
    expect(resumeAt.Choices[0]).toMatchObject({ StringEquals: 'again:choice', Next: 'again:choice' });
    expect(check(routed)).toEqual({ isValid: true, errors: '' });
  });

  it('never continues inside a fork branch: a Parallel cannot be left half-way', () => {
    // A loop inside a branch: no top-level cycle, nothing to continue; the branch's Choice is unchanged.
    const inBranch = compileWorkflow(loopInFork, { continueAfterEvents: 500 }).definition;
    expect(JSON.stringify(inBranch)).not.toContain(':continue');
    // A fork inside a loop: the LOOP_END continues; the branches count from 0 and the JOIN adds them.
    const around = compileWorkflow(forkInLoop, { continueAfterEvents: 500 }).definition;
    const continues: string[] = [];
    forEachState(around, (name) => {
      if (name.endsWith(':continue')) continues.push(name);
    });
    expect(continues).toEqual(['next-round:continue']);
    // A serial fork: one Parallel per path.
    const first = topState(around, 'split:a:serial');
    if (first.Type !== 'Parallel') throw new Error('split:a:serial is not a Parallel');
    expect(first.Branches[0]!.States['split:a']).toMatchObject({ Type: 'Pass', Parameters: { history: 0 } });
    const counts = historyEventsOf(around);
    // FORK: its Task 5 + per path (Parallel 4 + entry Pass 2 + bookkeeping Task 5 + the Choice and
    // Pass after it 4 + slack 2).
    expect(counts.split).toBe(5 + 2 * 17);
    expect(counts.merge).toBe(5);
    expect(counts.a1).toBe(5);
    expect(counts['merge:a']).toBeUndefined(); // bookkeeping: counted by the FORK
    expect(check(around)).toEqual({ isValid: true, errors: '' });
  });
});

describe('inline Map history budget', () => {
  it('lets a list through while its items fit in one execution, and says how many fit when they do not', () => {
    // 9 events per item at the least (the path's node reports the item itself and, under an
    // ALL_COMPLETED join, ends the path): 2,777 items fit in 25,000 from a fresh execution.
    expect(INLINE_MAP_ITEM_HISTORY_EVENTS).toBe(9);
    expect(inlineMapOverflow(2777, 0)).toBeUndefined();
    expect(inlineMapOverflow(2778, 0)).toEqual({ needed: 25_002, fits: 2777 });
    // What the execution recorded before the FORK counts too.
    expect(inlineMapOverflow(1555, 11_000)).toBeUndefined();
    expect(inlineMapOverflow(1556, 11_000)).toEqual({ needed: 25_004, fits: 1555 });
    expect(inlineMapOverflow(1, 25_000)).toEqual({ needed: 25_009, fits: 0 });
  });
});
