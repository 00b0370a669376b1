import { describe, expect, it } from 'vitest';
import {
  type AslDefinition,
  type AslMapState,
  type AslParallelState,
  type AslRetrier,
  type AslState,
  type AslStateMachine,
  type AslTaskState,
  FAIL_TASK,
  FAILED_STATE,
  MAX_STATE_NAME_LENGTH,
  START_EXECUTION_RESOURCE,
  substituteResources,
  taskStateIndex,
} from '../../../engine/asl/index.ts';
import { StepthreadError } from '../../../engine/errors.ts';
import { buildGraph } from '../../../engine/graph/build.ts';
import type { Workflow } from '../../../engine/model/schema.ts';
import { valid } from '../../e2e/helpers.ts';
import { compiledOf, compileWorkflow, corpus, describedNode, loadWorkflow } from './corpus.ts';
import { awkwardNames, distributedList, everyNodeType, listWithTimeout, routesInFork } from './workflows.ts';

interface Located {
  name: string;
  state: AslState;
  /** The Parallel (and Map) states around it, innermost last. */
  parallels: (AslParallelState | AslMapState)[];
}

function located(machine: AslStateMachine, parallels: (AslParallelState | AslMapState)[] = []): Located[] {
  return Object.entries(machine.States).flatMap(([name, state]) => [
    { name, state, parallels },
    ...(state.Type === 'Parallel'
      ? state.Branches.flatMap((branch) => located(branch, [...parallels, state]))
      : state.Type === 'Map'
        ? located(state.ItemProcessor, [...parallels, state])
        : []),
  ]);
}

function stateOf(definition: AslDefinition, name: string): AslState {
  const found = located(definition).find((entry) => entry.name === name);
  if (!found) throw new Error(`no state ${name}`);
  return found.state;
}

function task(definition: AslDefinition, name: string): AslTaskState {
  const state = stateOf(definition, name);
  if (state.Type !== 'Task') throw new Error(`${name} is a ${state.Type}`);
  return state;
}

function parallel(definition: AslDefinition, name: string): AslParallelState {
  const state = stateOf(definition, name);
  if (state.Type !== 'Parallel') throw new Error(`${name} is a ${state.Type}`);
  return state;
}

/** The Task's input template, unwrapping a waitForTaskToken Payload, as written in the definition. */
function written(state: AslTaskState): Record<string, unknown> {
  const parameters = state.Parameters as unknown as Record<string, unknown>;
  return (parameters.Payload as Record<string, unknown> | undefined) ?? parameters;
}

/** The Task's input template with its node described, as the handler sees it. */
function input(state: AslTaskState): Record<string, unknown> {
  const template = written(state);
  // As the dispatch reads it: a node's own Task names no action, execute being the default.
  return 'node' in template
    ? { action: 'execute', ...template, node: describedNode(template.node) }
    : template;
}

/** The node description the Task's handler gets. */
function node(definition: AslDefinition, name: string): Record<string, unknown> {
  return input(task(definition, name)).node as Record<string, unknown>;
}

/** The Task's `node` as written: a `{ id, ref }` reference into the node table, or a bookkeeping description. */
function writtenNode(definition: AslDefinition, name: string): unknown {
  return written(task(definition, name)).node;
}

/** What a Task retries: the Lambda service's failures (throttling above all) and the handlers' transient ones. */
/** The most a retrier waits in all, before jitter: each wait is IntervalSeconds × BackoffRate^n, capped. */
function longestBackoffSeconds(retrier: AslRetrier): number {
  let total = 0;
  for (let n = 0; n < retrier.MaxAttempts; n += 1) {
    // ASL's defaults: IntervalSeconds 1, BackoffRate 2.
    total += Math.min(
      (retrier.IntervalSeconds ?? 1) * (retrier.BackoffRate ?? 2) ** n,
      retrier.MaxDelaySeconds ?? Infinity,
    );
  }
  return total;
}

describe.each(corpus.map(([name]) => [name]))('compiled %s', (name) => {
  const { definition } = compiledOf(name);
  const workflow = corpus.find(([candidate]) => candidate === name)![1];
  const graph = buildGraph(workflow);
  const states = located(definition);

  it('names states uniquely across the machine, within 80 characters, node states after their node', () => {
    const names = states.map((entry) => entry.name);
    expect(new Set(names).size).toBe(names.length);
    expect(names.filter((stateName) => Array.from(stateName).length > MAX_STATE_NAME_LENGTH)).toEqual([]);
    const short = graph.order.filter(
      (id) => id.length <= MAX_STATE_NAME_LENGTH && !id.startsWith('stepthread:'),
    );
    expect(short.filter((id) => !names.includes(id))).toEqual([]);
    for (const id of short) {
      expect(input(task(definition, id)).node).toMatchObject({ id, type: graph.nodes.get(id)!.type });
    }
  });

  it('gives every Task the transient Retry; node Tasks a Catch; bookkeeping Tasks rely on their Parallel', () => {
    for (const { name: stateName, state, parallels } of states) {
      // `<node>:continue` (states:startExecution) is checked with continue-as-new below.
      if (state.Type !== 'Task' || state.Resource === START_EXECUTION_RESOURCE) continue;
      // Rides out a throttling burst: over a minute of backoff in all, jittered. Any failure of the Task
      // is retried (throttling, a crash, stepthread.Transient) but the node's own and a timed-out function.
      expect(state.Retry, stateName).toEqual([
        { ErrorEquals: ['stepthread.NodeFailed', 'Sandbox.Timedout'], MaxAttempts: 0 },
        { ErrorEquals: ['States.TaskFailed'], MaxAttempts: 8, JitterStrategy: 'FULL' },
      ]);
      expect(longestBackoffSeconds(state.Retry![1]!)).toBeGreaterThanOrEqual(120);
      const action = input(state).action;
      if (
        action === 'execute' ||
        action === 'answer' ||
        action === 'approval' ||
        action === 'fail' ||
        action === 'resume'
      ) {
        expect(state.Catch, stateName).toEqual([
          expect.objectContaining({
            ErrorEquals: ['States.ALL'],
            ResultPath: expect.stringMatching(/^\$\./),
          }),
        ]);
      } else {
        expect(state.Catch, stateName).toBeUndefined();
        // The nearest Parallel with a Catch handles it (a serial chain under a timer propagates outwards).
        // A Distributed Map also routes its failed item execution (the deciding one) to the JOIN.
        const around = parallels.findLast((candidate) => candidate.Catch !== undefined);
        const distributed = around?.Type === 'Map' && around.ItemReader !== undefined;
        expect(
          around?.Catch?.map((catcher) => catcher.ErrorEquals),
          stateName,
        ).toEqual([
          [
            'stepthread.JoinDecided',
            'stepthread.JoinTimeout',
            ...(distributed ? ['States.ExceedToleratedFailureThreshold'] : []),
          ],
          ['States.ALL'],
        ]);
      }
    }
  });

  it('lets only the envelope flow: no state selects content, outputs replace or keep the envelope', () => {
    for (const { name: stateName, state } of states) {
      const fields = Object.keys(state);
      expect(fields, stateName).not.toContain('InputPath');
      expect(fields, stateName).not.toContain('OutputPath');
      expect(fields, stateName).not.toContain('ResultSelector');
      expect(fields, stateName).not.toContain('QueryLanguage');
      if (state.Type === 'Parallel') expect(state.ResultPath, stateName).toBeNull();
      if (state.Type === 'Task' && state.Resource === START_EXECUTION_RESOURCE) {
        // Continue-as-new: the whole envelope goes to the successor; StartExecution's answer goes next to it.
        expect(state.ResultPath, stateName).toBe('$.continuation');
        expect(state.Parameters, stateName).toMatchObject({ Input: { resume: { 'envelope.$': '$' } } });
      } else if (state.Type === 'Task') {
        // A waiting USER_INTERACTION adds its answer next to the envelope; nothing else adds anything.
        const resultPaths = state.Resource.includes('waitForTaskToken') ? ['$.answer'] : [undefined, null];
        expect(resultPaths, stateName).toContain('ResultPath' in state ? state.ResultPath : undefined);
        const paths = Object.entries(input(state)).filter(([key]) => key.endsWith('.$'));
        const expected =
          input(state).node &&
          (input(state).node as { type: string }).type === 'START' &&
          input(state).action === 'execute'
            ? [
                ['executionId.$', '$$.Execution.Id'],
                ['input.$', '$'],
              ]
            : input(state).action === 'resume'
              ? [
                  ['executionId.$', '$$.Execution.Id'],
                  ['envelope.$', '$.resume.envelope'],
                  ['resume.$', '$.resume'],
                ]
              : state.Resource.includes('waitForTaskToken')
                ? [
                    ['envelope.$', '$'],
                    ['taskToken.$', '$$.Task.Token'],
                  ]
                : [['envelope.$', '$']];
        expect(paths, stateName).toEqual(expected);
      }
    }
    expect(definition.QueryLanguage).toBe('JSONPath');
    expect(JSON.stringify(definition)).not.toContain('{%');
  });

  it('invokes the function of the node type through a placeholder', () => {
    for (const entry of taskStateIndex(definition)) {
      const state = task(definition, entry.stateName);
      if (entry.action === 'continue') {
        expect(entry.invocation).toBe('startExecution');
        expect(state.Resource).toBe(START_EXECUTION_RESOURCE);
        continue;
      }
      const expectedType =
        entry.action === 'execute' ||
        entry.action === 'answer' ||
        entry.action === 'resume' ||
        entry.action === 'approval'
          ? (input(state).node as { type: string }).type
          : entry.action === 'fail'
            ? 'END'
            : 'JOIN';
      expect(entry.nodeType).toBe(expectedType);
      const placeholder = `\${Fn_${expectedType}}`;
      if ('FunctionName' in state.Parameters) {
        expect(entry.invocation).toBe('waitForTaskToken');
        expect([state.Resource, state.Parameters.FunctionName]).toEqual([
          'arn:aws:states:::lambda:invoke.waitForTaskToken',
          placeholder,
        ]);
      } else {
        expect(entry.invocation).toBe('direct');
        expect(state.Resource).toBe(placeholder);
      }
    }
  });

  it('is deterministic: compiling again (or a copy of the workflow) gives byte-identical JSON', () => {
    const again = compileWorkflow(structuredClone(workflow));
    expect(JSON.stringify(again.definition)).toBe(JSON.stringify(definition));
  });
});

describe('node types', () => {
  const { definition, substitutionKeys, nodeTable } = compiledOf('own:everyNodeType');

  it("names each node's description in the node table, by content: a Task carries only { id, ref }", () => {
    const table = JSON.parse(nodeTable.json) as { workflowId: string; version: number; nodes: object };
    expect(table).toMatchObject({ workflowId: 'every-node-type', version: 1 });
    expect(nodeTable.ref).toMatch(/^[0-9a-f]{12}$/);
    for (const entry of taskStateIndex(definition)) {
      if (entry.action !== 'execute' && entry.action !== 'answer' && entry.action !== 'approval') continue;
      const reference = writtenNode(definition, entry.stateName);
      expect(reference, entry.stateName).toEqual({ id: entry.nodeId, ref: nodeTable.ref });
      expect(Object.keys(table.nodes)).toContain(entry.nodeId);
    }
    // No prompt, message or code of the workflow is in the definition.
    expect(JSON.stringify(definition)).not.toContain('Look up {{n}}');
    expect(JSON.stringify(definition)).not.toContain('return input.n * 2;');
    // The same workflow compiles to the same table; any change to a config names another.
    expect(compileWorkflow(everyNodeType).nodeTable).toEqual(nodeTable);
    const changed = structuredClone(everyNodeType);
    (changed.nodes.find((n) => n.id === 'calc')!.config as { code: string }).code = 'return 1;';
    expect(compileWorkflow(changed).nodeTable.ref).not.toBe(nodeTable.ref);
  });

  it('lists one placeholder per node type that occurs, in node-type order', () => {
    expect(substitutionKeys).toEqual([
      'Fn_START',
      'Fn_END',
      'Fn_VARIABLE',
      'Fn_CODE',
      'Fn_FORK',
      'Fn_JOIN',
      'Fn_ROUTE',
      'Fn_LOOP_START',
      'Fn_LOOP_END',
      'Fn_LLM',
      'Fn_TOOL',
      'Fn_USER_INTERACTION',
      'Fn_CONTEXT_PROCESSOR',
      'Fn_SUBGRAPH',
    ]);
  });

  it('START gets the workflow facts, the execution id and the execution input', () => {
    const start = task(definition, 'start');
    expect(start.Parameters).toMatchObject({
      action: 'execute',
      'executionId.$': '$$.Execution.Id',
      'input.$': '$',
    });
    expect(writtenNode(definition, 'start')).toEqual({ id: 'start', ref: nodeTable.ref });
    expect(node(definition, 'start')).toMatchObject({
      id: 'start',
      type: 'START',
      workflow: { id: 'every-node-type', version: 1, maxSteps: 1000, variables: everyNodeType.variables },
    });
    // START may fail before any thread exists: straight to the Fail state.
    expect(start.Catch).toEqual([{ ErrorEquals: ['States.ALL'], ResultPath: '$.error', Next: FAILED_STATE }]);
  });

  it('marks only the nodes whose output no expression reads as resultUnread', () => {
    const workflow: Workflow = {
      id: 'reads',
      version: 1,
      variables: [{ name: 'x', type: 'number', initial: 0 }],
      nodes: [
        { id: 'start', type: 'START' },
        { id: 'a', type: 'VARIABLE', config: { variableName: 'x', variableType: 'number', expression: '1' } },
        { id: 'b', type: 'VARIABLE', config: { variableName: 'x', variableType: 'number', expression: '2' } },
        { id: 'end', type: 'END', config: { output: '{{nodes.a}}' } },
      ],
      edges: [
        { from: 'start', to: 'a' },
        { from: 'a', to: 'b' },
        { from: 'b', to: 'end' },
      ],
    };
    const compiled = compileWorkflow(workflow).definition;
    expect(node(compiled, 'a')).not.toHaveProperty('resultUnread');
    expect(node(compiled, 'b')).toMatchObject({ resultUnread: true });
  });

  it('describes VARIABLE, CODE and LLM with the declarations they write; LLM with its profile and tools', () => {
    expect(node(definition, 'count')).toEqual({
      id: 'count',
      resultUnread: true,
      type: 'VARIABLE',
      hooks: [{ hookType: 'AFTER_EXECUTE', eventName: 'counted' }],
      config: { variableName: 'n', variableType: 'number', expression: 'n + 1' },
      variables: [{ name: 'n', type: 'number', initial: 0 }],
    });
    expect(node(definition, 'calc')).not.toHaveProperty('variables'); // `doubled` is not declared
    expect(node(definition, 'ask')).toEqual({
      id: 'ask',
      resultUnread: true,
      type: 'LLM',
      config: { prompt: 'Look up {{n}}', tools: ['lookup'], outputVariable: 'answer', profileId: 'default' },
      // byNode keeps only this node's script: each LLM task would otherwise repeat every node's.
      profile: { provider: 'scripted', responses: ['ok'], byNode: { ask: ['a1'] } },
      tools: { lookup: everyNodeType.tools!.lookup },
      variables: [{ name: 'answer', type: 'string' }],
    });
    expect(node(definition, 'call')).toMatchObject({ type: 'TOOL', tool: everyNodeType.tools!.lookup });
  });

  it('runs a waiting USER_INTERACTION as waitForTaskToken (answer at $.answer) then `<id>:answer`', () => {
    const confirm = task(definition, 'confirm');
    expect(confirm).toEqual({
      Type: 'Task',
      Resource: 'arn:aws:states:::lambda:invoke.waitForTaskToken',
      Parameters: {
        FunctionName: `\${Fn_USER_INTERACTION}`,
        Payload: {
          action: 'execute',
          node: { id: 'confirm', ref: nodeTable.ref },
          'envelope.$': '$',
          'taskToken.$': '$$.Task.Token',
        },
      },
      ResultPath: '$.answer',
      TimeoutSeconds: 600,
      Retry: task(definition, 'tidy').Retry,
      // A SendTaskFailure or a timeout goes to the answer Task too, which records it and closes the item.
      Catch: [{ ErrorEquals: ['States.ALL'], ResultPath: '$.error', Next: 'confirm:answer' }],
      Next: 'confirm:answer',
    });
    expect(task(definition, 'confirm:answer')).toEqual({
      Type: 'Task',
      Resource: `\${Fn_USER_INTERACTION}`,
      // The wait Task's history events (6) are counted with this one (5): its result is not the envelope.
      Parameters: {
        action: 'answer',
        node: { id: 'confirm', ref: nodeTable.ref },
        'envelope.$': '$',
        historyEvents: 11,
      },
      Retry: task(definition, 'tidy').Retry,
      Catch: [{ ErrorEquals: ['States.ALL'], ResultPath: '$.error', Next: FAIL_TASK }],
      Next: 'tidy',
    });
    const approve = task(compiledOf('test/fixtures/valid/route-loop.yaml').definition, 'approve');
    expect(approve).toMatchObject({ TimeoutSeconds: 86_400 });
  });

  it('runs an LLM node with a tool that requires approval as its Task, a Choice on $.approval and a waitForTaskToken Task back to it', () => {
    const compiled = compiledOf('examples/refund-approval.json').definition;
    const agent = { id: 'agent', ref: compiledOf('examples/refund-approval.json').nodeTable.ref };
    const retry = task(compiled, 'agent').Retry;
    expect(task(compiled, 'agent')).toEqual({
      Type: 'Task',
      Resource: `\${Fn_LLM}`,
      Parameters: { action: 'execute', node: agent, 'envelope.$': '$' },
      Retry: retry,
      Catch: [{ ErrorEquals: ['States.ALL'], ResultPath: '$.error', Next: FAIL_TASK }],
      Next: 'agent:asks',
    });
    expect(stateOf(compiled, 'agent:asks')).toEqual({
      Type: 'Choice',
      Choices: [{ Variable: '$.approval', IsPresent: true, Next: 'agent:approval' }],
      Default: 'end',
    });
    expect(task(compiled, 'agent:approval')).toEqual({
      Type: 'Task',
      Resource: 'arn:aws:states:::lambda:invoke.waitForTaskToken',
      Parameters: {
        FunctionName: `\${Fn_LLM}`,
        Payload: {
          action: 'approval',
          node: agent,
          'envelope.$': '$',
          'taskToken.$': '$$.Task.Token',
        },
      },
      ResultPath: '$.answer',
      TimeoutSeconds: 86_400,
      Retry: retry,
      // The answer, a SendTaskFailure or a timeout: back to the LLM Task, which goes on or fails the node.
      Catch: [{ ErrorEquals: ['States.ALL'], ResultPath: '$.error', Next: 'agent' }],
      Next: 'agent',
    });
    // Without such a tool, an LLM node is one Task as before.
    expect(JSON.stringify(compiledOf('examples/support-triage.json').definition)).not.toContain('$.approval');
  });

  it('runs a USER_INTERACTION that needs nobody (show_message, a config userInput) as one plain Task', () => {
    const workflow: Workflow = {
      id: 'immediate',
      version: 1,
      nodes: [
        { id: 'start', type: 'START' },
        {
          id: 'tell',
          type: 'USER_INTERACTION',
          config: { userInteractionType: 'show_message', showMessage: 'Hi' },
        },
        {
          id: 'given',
          type: 'USER_INTERACTION',
          config: { userInteractionType: 'ask_for_approval', userInput: true },
        },
        { id: 'end', type: 'END' },
      ],
      edges: [
        { from: 'start', to: 'tell' },
        { from: 'tell', to: 'given' },
        { from: 'given', to: 'end' },
      ],
    };
    const { definition: immediate } = compileWorkflow(workflow);
    for (const id of ['tell', 'given']) {
      expect(task(immediate, id)).toMatchObject({
        Resource: `\${Fn_USER_INTERACTION}`,
        Parameters: { 'envelope.$': '$' },
      });
      expect(input(task(immediate, id)).action).toBe('execute');
      expect(Object.keys(immediate.States)).not.toContain(`${id}:answer`);
    }
    expect(JSON.stringify(immediate)).not.toContain('waitForTaskToken');
  });

  it('turns a ROUTE into a Task and a Choice on $.route, one rule per distinct target', () => {
    expect(task(definition, 'pick').Next).toBe('pick:choice');
    expect(stateOf(definition, 'pick:choice')).toEqual({
      Type: 'Choice',
      Choices: [
        { Not: { Variable: '$.route', IsPresent: true }, Next: 'each' },
        { Variable: '$.route', StringEquals: 'nested.begin', Next: 'nested.begin' },
        { Variable: '$.route', StringEquals: 'each', Next: 'each' },
      ],
      Default: 'each',
    });
    // The route target is the subgraph's entry: the handler must set route to the built id.
    expect(node(definition, 'pick')).toMatchObject({
      config: {
        routes: [{ targetNodeId: 'nested.begin' }, { targetNodeId: 'each' }],
        defaultTargetNodeId: 'each',
      },
    });
  });

  it('turns LOOP_START / LOOP_END into Task + Choice on $.loop.exit, with the back edge to LOOP_START', () => {
    const exit = {
      And: [
        { Variable: '$.loop.exit', IsPresent: true },
        { Variable: '$.loop.exit', BooleanEquals: true },
      ],
    };
    expect(stateOf(definition, 'each:choice')).toEqual({
      Type: 'Choice',
      Choices: [{ ...exit, Next: 'nested.begin' }],
      Default: 'body',
    });
    // The loop is a cycle: its LOOP_END's Choice may continue the run (continue-as-new, tested below).
    expect(stateOf(definition, 'again:choice')).toEqual({
      Type: 'Choice',
      Choices: [
        {
          And: [
            { Variable: '$.history', IsPresent: true },
            { Variable: '$.history', NumericGreaterThanEquals: 20_000 },
          ],
          Next: 'again:continue',
        },
        { ...exit, Next: 'nested.begin' },
      ],
      Default: 'each',
    });
    expect(node(definition, 'each')).toEqual({
      id: 'each',
      resultUnread: true,
      type: 'LOOP_START',
      config: { loopId: 'l', dataSource: [1, 2, 3], maxIterations: 5 },
    });
  });

  it('inlines a SUBGRAPH as boundary Tasks that carry the mappings and the child declarations', () => {
    expect(node(definition, 'nested.begin')).toEqual({
      id: 'nested.begin',
      resultUnread: true,
      authorId: 'begin',
      type: 'SUBGRAPH',
      boundary: 'ENTER',
      subgraphNodeId: 'nested',
      config: {
        workflowId: 'inner',
        workflowVersion: 2,
        variables: [{ name: 'm', type: 'number', initial: 0 }],
        inputMapping: { m: 'n' },
      },
      // A failure at the boundary fails the SUBGRAPH: its events name it (engine/lifecycle.ts).
      enclosingSubgraphs: [{ subgraphId: 'nested' }],
    });
    expect(node(definition, 'nested.bump')).toMatchObject({ enclosingSubgraphs: [{ subgraphId: 'nested' }] });
    // Inside the subgraph, `m` is the child's declaration; the EXIT writes the parent's `n`.
    expect(node(definition, 'nested.bump')).toMatchObject({ variables: [{ name: 'm', initial: 0 }] });
    expect(node(definition, 'nested.finish')).toEqual({
      id: 'nested.finish',
      resultUnread: true,
      authorId: 'finish',
      type: 'SUBGRAPH',
      boundary: 'EXIT',
      subgraphNodeId: 'nested',
      config: { output: '{{m}}', outputMapping: { n: 'm' } },
      variables: [{ name: 'n', type: 'number', initial: 0 }],
      enclosingSubgraphs: [{ subgraphId: 'nested' }],
    });
    expect(task(definition, 'nested.finish').Next).toBe('split');
  });

  it('ends at END Tasks and sends failures to :fail, which keeps $.error for the Fail state', () => {
    expect(task(definition, 'end')).toMatchObject({ End: true, Parameters: { node: { id: 'end' } } });
    expect(node(definition, 'end')).toMatchObject({ config: { output: { n: '{{n}}' } } });
    expect(task(definition, ':fail')).toMatchObject({
      Resource: `\${Fn_END}`,
      Parameters: { action: 'fail', 'envelope.$': '$' },
      ResultPath: null,
      Catch: [{ ErrorEquals: ['States.ALL'], ResultPath: '$.failError', Next: 'stepthread:failed' }],
      Next: 'stepthread:failed',
    });
    expect(stateOf(definition, 'stepthread:failed')).toEqual({
      Type: 'Fail',
      ErrorPath: '$.error.Error',
      CausePath: '$.error.Cause',
    });
  });
});

describe('fork and join', () => {
  it('tells a JOIN which branch results an expression reads: only those are merged into the parent', () => {
    // The example reads the JOIN's output and the report's, no branch node's.
    const { definition } = compiledOf('examples/fork-join-research.json');
    expect(node(definition, 'merge')).toMatchObject({ branchResults: [] });
    const example = loadWorkflow('examples/fork-join-research.json');
    const readsFacts: Workflow = {
      ...example,
      nodes: example.nodes.map((n) =>
        n.id === 'end' ? { id: 'end', type: 'END', config: { output: '{{nodes.facts}}' } } : n,
      ),
    };
    expect(node(compileWorkflow(readsFacts).definition, 'merge')).toMatchObject({ branchResults: ['facts'] });
    // `nodes` as a whole: every result the branches kept, as before the field existed.
    const readsAll: Workflow = {
      ...example,
      nodes: example.nodes.map((n) =>
        n.id === 'end' ? { id: 'end', type: 'END', config: { output: '{{nodes}}' } } : n,
      ),
    };
    expect(node(compileWorkflow(readsAll).definition, 'merge')).not.toHaveProperty('branchResults');
  });

  it('compiles a parallel FORK to one Parallel whose branches enter the child threads and whose last nodes report to the join', () => {
    const { definition } = compiledOf('examples/fork-join-research.json');
    expect(task(definition, 'split').Next).toBe('split:paths');
    const paths = parallel(definition, 'split:paths');
    expect(paths.Catch).toEqual([
      {
        ErrorEquals: ['stepthread.JoinDecided', 'stepthread.JoinTimeout'],
        ResultPath: '$.joinEnd',
        Next: 'merge',
      },
      { ErrorEquals: ['States.ALL'], ResultPath: '$.error', Next: ':fail' },
    ]);
    expect(paths).toMatchObject({ ResultPath: null, Next: 'merge' });
    expect(paths.Branches.map((branch) => Object.keys(branch.States))).toEqual([
      ['split:facts', 'facts', 'merge:facts:failed', ...reported(1)],
      ['split:risks', 'risks', 'merge:risks:failed', ...reported(2)],
      ['split:summary', 'summary', 'merge:summary:failed', ...reported(3)],
    ]);
    // An ALL_COMPLETED join (no timeout): a completed path ends at its report, which decides only
    // once every path reported; a failed path's report may decide early, and a report that decided
    // ends its path with a Fail state: a result routed on, not a thrown error.
    const first = paths.Branches[0]!.States;
    expect(first.facts).toMatchObject({ End: true });
    expect(first.facts).not.toHaveProperty('Next');
    expect(first['merge:facts:failed']).toMatchObject({ Next: 'merge:1:reported' });
    expect(first['merge:1:reported']).toEqual({
      Type: 'Choice',
      Choices: [{ Variable: '$.joinDecided', IsPresent: true, Next: 'merge:1:decides' }],
      Default: 'merge:1:ends',
    });
    expect(first['merge:1:decides']).toEqual({
      Type: 'Fail',
      Error: 'stepthread.JoinDecided',
      Cause: 'JOIN merge decided',
    });
    expect(first['merge:1:ends']).toEqual({ Type: 'Pass', End: true });
    const [, second] = paths.Branches;
    expect(second!.StartAt).toBe('split:risks');
    expect(second!.States['split:risks']).toEqual({
      Type: 'Pass',
      Parameters: {
        'executionId.$': '$.executionId',
        'workflowId.$': '$.workflowId',
        'workflowVersion.$': '$.workflowVersion',
        'rootThreadId.$': '$.rootThreadId',
        'threadId.$': '$.fork.children[1]',
        step: 0,
        'maxSteps.$': '$.maxSteps',
      },
      Next: 'risks',
    });
    // The path's last node reports the path itself (no `branch-done` Task): its step finishes the
    // path's thread and records its outcome, and the path ends there (an ALL_COMPLETED join).
    const last = task(definition, 'risks');
    expect(last).toMatchObject({
      Resource: `\${Fn_LLM}`,
      End: true,
      Catch: [{ ErrorEquals: ['States.ALL'], ResultPath: '$.error', Next: 'merge:risks:failed' }],
    });
    expect(last.Parameters).not.toHaveProperty('action');
    const failed = task(definition, 'merge:risks:failed');
    expect(failed).toMatchObject({ Resource: `\${Fn_JOIN}`, Next: 'merge:2:reported' });
    expect(failed.Parameters).toMatchObject({ action: 'branch-failed' });
    // The path lists are left out: every path's tasks carry this, so it must not grow with the width.
    const report = written(last).report;
    expect(input(failed).node).toEqual(report);
    expect(report).toEqual({
      id: 'merge',
      type: 'JOIN',
      config: { joinStrategy: 'ALL_COMPLETED', timeout: 0, mainPathId: 'split/summary' },
      paths: 3,
      forkId: 'split',
      forkStrategy: 'parallel',
      path: { index: 1, pathId: 'split/risks', authorPathId: 'risks' },
    });
    expect(node(definition, 'split')).toEqual({
      id: 'split',
      resultUnread: true,
      type: 'FORK',
      config: {
        forkPathIds: ['split/facts', 'split/risks', 'split/summary'],
        forkStrategy: 'parallel',
        childNodeIds: ['facts', 'risks', 'summary'],
      },
      authorForkPathIds: ['facts', 'risks', 'summary'],
      joinId: 'merge',
      joinConfig: {
        forkPathIds: ['split/facts', 'split/risks', 'split/summary'],
        joinStrategy: 'ALL_COMPLETED',
        timeout: 0,
        mainPathId: 'split/summary',
      },
    });
    expect(task(definition, 'merge')).toMatchObject({
      Next: 'report',
      Parameters: { node: { id: 'merge' } },
    });
    expect(input(task(definition, 'merge')).action).toBe('execute');
  });

  it('chains one-branch Parallels for a serial FORK, each ending at the JOIN when the join is decided', () => {
    const { definition } = compiledOf('own:forkInLoop');
    expect(task(definition, 'split').Next).toBe('split:a:serial');
    const first = parallel(definition, 'split:a:serial');
    const second = parallel(definition, 'split:b:serial');
    expect(first).toMatchObject({ ResultPath: null, Next: 'split:b:serial' });
    expect(second).toMatchObject({ ResultPath: null, Next: 'merge' });
    for (const state of [first, second]) {
      expect(state.Branches).toHaveLength(1);
      expect(state.Catch?.[0]).toEqual({
        ErrorEquals: ['stepthread.JoinDecided', 'stepthread.JoinTimeout'],
        ResultPath: '$.joinEnd',
        Next: 'merge',
      });
    }
    expect(second.Branches[0]!.StartAt).toBe('split:b');
    expect(input(task(definition, 'merge:b:failed')).node).toMatchObject({
      forkStrategy: 'serial',
      path: { index: 1 },
    });
    // The fork sits in the loop body: the JOIN continues to LOOP_END, whose Choice goes back to LOOP_START.
    expect(task(definition, 'merge').Next).toBe('next-round');
    expect(stateOf(definition, 'next-round:choice')).toMatchObject({ Default: 'round' });
    expect(stateOf(definition, 'round:choice')).toMatchObject({
      Default: 'split',
      Choices: [{ Next: 'end' }],
    });
  });

  it('adds a timer branch when the JOIN has a timeout; a serial chain then runs inside that Parallel', () => {
    const nested = compiledOf('own:forkInFork').definition;
    const outer = parallel(nested, 'outer:paths');
    expect(outer.Branches).toHaveLength(3);
    expect(outer.Branches[2]).toMatchObject({
      StartAt: 'outer-join:timer',
      States: {
        'outer-join:timer': { Type: 'Wait', Seconds: 30, Next: 'outer-join:timeout' },
        'outer-join:timeout': {
          Type: 'Task',
          Resource: `\${Fn_JOIN}`,
          Parameters: { action: 'timeout', node: { id: 'outer-join', forkId: 'outer' } },
          Next: 'outer-join:timed-out',
        },
        'outer-join:timed-out': { Type: 'Fail', Error: 'stepthread.JoinTimeout' },
      },
    });
    // The inner fork is a Parallel inside the outer path; its failures fail the outer path.
    const inner = parallel(nested, 'inner:paths');
    expect(inner.Branches).toHaveLength(2);
    expect(inner.Catch).toEqual([
      expect.objectContaining({ Next: 'inner-join' }),
      { ErrorEquals: ['States.ALL'], ResultPath: '$.error', Next: 'outer-join:p:failed' },
    ]);
    expect(task(nested, 'inner-join').Next).toBe('p2');
    // p2, the outer path's last node, reports the path itself: no `branch-done` Task after it.
    expect(task(nested, 'p2').Next).toBe('outer-join:1:reported');
    expect(task(nested, 'p2').Parameters).toMatchObject({ report: { id: 'outer-join', path: { index: 0 } } });

    const serial = compiledOf('own:serialWithTimeout').definition;
    expect(task(serial, 'split').Next).toBe('split:paths');
    const wrapper = parallel(serial, 'split:paths');
    expect(wrapper.Branches.map((branch) => branch.StartAt)).toEqual(['split:a:serial', 'merge:timer']);
    expect(wrapper.Branches[1]!.States['merge:timer']).toMatchObject({ Seconds: 5 });
    const chain = wrapper.Branches[0]!.States;
    expect(Object.keys(chain)).toEqual(['split:a:serial', 'split:b:serial', 'split:c:serial']);
    // JoinDecided must reach the outer Parallel (and stop the timer): the inner ones do not catch.
    expect(Object.values(chain).map((state) => 'Catch' in state)).toEqual([false, false, false]);
    expect(chain['split:c:serial']).toMatchObject({ End: true });
  });

  it('handles an empty path (the FORK child is the JOIN) and a ROUTE to the JOIN or to no target', () => {
    const loops = compiledOf('own:loopInFork').definition;
    const idle = parallel(loops, 'split:paths').Branches[1]!;
    // Nothing can fail: no failed task, and under an ALL_COMPLETED join the report ends the path.
    expect(Object.keys(idle.States)).toEqual(['split:idle', 'merge:idle']);
    expect(idle.States['split:idle']).toMatchObject({ Next: 'merge:idle' });
    expect(idle.States['merge:idle']).toMatchObject({ End: true });
    expect(stateOf(loops, 'spun:choice')).toMatchObject({
      Choices: [{ Next: 'merge:looping' }],
      Default: 'spin',
    });

    const routes = compiledOf('own:routesInFork').definition;
    expect(stateOf(routes, 'choose:choice')).toEqual({
      Type: 'Choice',
      Choices: [
        { Not: { Variable: '$.route', IsPresent: true }, Next: 'choose:no-route' },
        { Variable: '$.route', StringEquals: 'r1', Next: 'r1' },
        { Variable: '$.route', StringEquals: 'merge', Next: 'merge:r' },
      ],
      Default: 'choose:no-route',
    });
    expect(stateOf(routes, 'choose:no-route')).toEqual({
      Type: 'Pass',
      Result: {
        Error: 'stepthread.NoRoute',
        Cause: JSON.stringify({
          code: 'NO_ROUTE_MATCHED',
          message: 'ROUTE choose: no condition held and there is no defaultTargetNodeId',
          nodeId: 'choose',
        }),
      },
      ResultPath: '$.error',
      Next: 'merge:r:failed',
    });
    expect(routesInFork.nodes.map((n) => n.id)).toContain('choose');
  });

  it('names subgraph states by built id and fork helpers by author path id', () => {
    const { definition } = compiledOf('test/fixtures/valid/subgraph.json');
    expect(task(definition, 'first.split').Next).toBe('first.split:a:serial');
    expect(parallel(definition, 'first.split:a:serial').Branches[0]!.StartAt).toBe('first.split:a');
    expect(task(definition, 'second.split').Next).toBe('second.split:paths');
    expect(node(definition, 'first.style')).toMatchObject({
      config: { profileId: 'first.strict' },
      profile: { provider: 'scripted', responses: ['no'] },
    });
    expect(task(definition, 'first.finish').Next).toBe('second.begin');
  });
});

describe('state names', () => {
  const { definition } = compiledOf('own:awkwardNames');
  const index = taskStateIndex(definition);

  it('keeps long ids as they are and colliding helper names apart, within 80 characters', () => {
    // Ids whose state names would pass 80 characters are refused by validation (INVALID_STATE_NAME).
    const longRoute = awkwardNames.nodes[1]!.id;
    const entry = index.find((candidate) => candidate.nodeId === longRoute)!;
    expect(entry.stateName).toBe(longRoute);
    // A node named `<loop>:choice` keeps its name; the LOOP_START's Choice moves aside, still ≤ 80.
    const loopChoice = task(definition, awkwardNames.nodes[2]!.id).Next!;
    expect(loopChoice).toMatch(/~[0-9a-f]{8}$/);
    expect(Array.from(loopChoice).length).toBeLessThanOrEqual(MAX_STATE_NAME_LENGTH);
    // A node named like a helper keeps its name; the helper moves aside.
    expect(index.find((candidate) => candidate.nodeId === ':fail')?.stateName).toBe(':fail');
    const fail = index.find((candidate) => candidate.action === 'fail')!;
    expect(fail.stateName).toMatch(/^:fail~[0-9a-f]{8}$/);
    expect(stateOf(definition, 'pick:choice')).toMatchObject({ Type: 'Task' });
    expect(task(definition, 'pick').Next).not.toBe('pick:choice');
    expect(stateOf(definition, task(definition, 'pick').Next!)).toMatchObject({ Type: 'Choice' });
  });
});

describe('taskStateIndex and substituteResources', () => {
  const { definition } = compiledOf('examples/fork-join-research.json');

  it('lists every Task, branch tasks included, with its function, action and node', () => {
    expect(taskStateIndex(definition)).toEqual([
      { stateName: 'stepthread:resume', nodeType: 'START', action: 'resume', invocation: 'direct' },
      { stateName: 'start', nodeType: 'START', action: 'execute', nodeId: 'start', invocation: 'direct' },
      { stateName: 'plan', nodeType: 'LLM', action: 'execute', nodeId: 'plan', invocation: 'direct' },
      { stateName: 'split', nodeType: 'FORK', action: 'execute', nodeId: 'split', invocation: 'direct' },
      ...['facts', 'risks', 'summary'].flatMap((path) => [
        // Each path's last node reports the path itself: no `branch-done` Task.
        { stateName: path, nodeType: 'LLM', action: 'execute', nodeId: path, invocation: 'direct' },
        {
          stateName: `merge:${path}:failed`,
          nodeType: 'JOIN',
          action: 'branch-failed',
          nodeId: 'merge',
          invocation: 'direct',
        },
      ]),
      { stateName: 'merge', nodeType: 'JOIN', action: 'execute', nodeId: 'merge', invocation: 'direct' },
      { stateName: 'report', nodeType: 'LLM', action: 'execute', nodeId: 'report', invocation: 'direct' },
      { stateName: 'end', nodeType: 'END', action: 'execute', nodeId: 'end', invocation: 'direct' },
      { stateName: ':fail', nodeType: 'END', action: 'fail', invocation: 'direct' },
    ]);
    const confirm = taskStateIndex(compiledOf('own:everyNodeType').definition).filter(
      (entry) => entry.nodeId === 'confirm',
    );
    expect(confirm).toEqual([
      {
        stateName: 'confirm',
        nodeType: 'USER_INTERACTION',
        action: 'execute',
        nodeId: 'confirm',
        invocation: 'waitForTaskToken',
      },
      {
        stateName: 'confirm:answer',
        nodeType: 'USER_INTERACTION',
        action: 'answer',
        nodeId: 'confirm',
        invocation: 'direct',
      },
    ]);
  });

  it('fills placeholders (FunctionName included) in a copy and refuses a missing one', () => {
    const source = compiledOf('own:everyNodeType').definition;
    const before = JSON.stringify(source);
    const arns = Object.fromEntries(
      compiledOf('own:everyNodeType').substitutionKeys.map((key) => [
        key,
        `arn:aws:lambda:us-east-1:1:function:${key}`,
      ]),
    );
    const filled = substituteResources(source, arns);
    expect(JSON.stringify(source)).toBe(before);
    expect(JSON.stringify(filled)).not.toContain('${Fn_');
    expect(task(filled, 'confirm').Parameters).toMatchObject({
      FunctionName: 'arn:aws:lambda:us-east-1:1:function:Fn_USER_INTERACTION',
    });
    expect(task(filled, 'merge:left:failed').Resource).toBe('arn:aws:lambda:us-east-1:1:function:Fn_JOIN');
    const { Fn_LLM: _dropped, ...partial } = arns;
    expect(() => substituteResources(source, partial)).toThrowError(
      expect.objectContaining({ code: 'ASL_COMPILE_ERROR', message: expect.stringContaining(`\${Fn_LLM}`) }),
    );
    expect(() => taskStateIndex(filled)).toThrowError(expect.objectContaining({ code: 'ASL_COMPILE_ERROR' }));
  });
});

describe('refusals', () => {
  it('reports an invalid workflow with its validation code before compiling anything', () => {
    const invalid = loadWorkflow(`${import.meta.dirname}/../../fixtures/invalid/fork-without-join.json`);
    expect(() => compileWorkflow(invalid)).toThrowError(StepthreadError);
    expect(() => compileWorkflow(invalid)).toThrowError(expect.objectContaining({ code: 'UNPAIRED_FORK' }));
  });

  it('keeps node data with a key ending in ".$" out of the definition: the node table holds it as written', () => {
    const workflow: Workflow = {
      id: 'dollar-keys',
      version: 1,
      variables: [{ name: 'n', type: 'number', initial: 0 }],
      nodes: [
        { id: 'start', type: 'START' },
        { id: 'end', type: 'END', config: { output: { 'total.$': '{{n}}' } } },
      ],
      edges: [{ from: 'start', to: 'end' }],
    };
    const { definition } = compileWorkflow(workflow);
    // Step Functions would read such a key in Parameters as a path; the table is not Parameters.
    expect(JSON.stringify(definition)).not.toContain('total');
    expect(node(definition, 'end')).toMatchObject({ config: { output: { 'total.$': '{{n}}' } } });
  });

  it('keeps the definition linear in fork width: each path adds the same bytes', () => {
    const sizes = [10, 20, 40].map((width) => definitionBytes(forkOf(width)));
    const perPath = (sizes[1]! - sizes[0]!) / 10;
    expect((sizes[2]! - sizes[1]!) / 20).toBeCloseTo(perPath, 0);
    // 394 KB with the Retry every Task carries and the Choice after each path's report (docs/deploy.md,
    // "Limits and quotas"); each path's last node reports the path, so there is no report Task.
    expect(definitionBytes(forkOf(150))).toBeLessThan(400_000);
  });

  it("leaves the nodes' text out of the definition size: only the graph can make it too large", () => {
    const padded = compileWorkflow(forkOf(150, 'x'.repeat(4000)));
    expect(padded.definitionBytes).toBeLessThan(600_000);
    expect(padded.nodeTable.json.length).toBeGreaterThan(150 * 4000);
  });

  it('refuses a definition over 1 MiB (with function ARNs in place) with DEFINITION_TOO_LARGE', () => {
    expect(() => compileWorkflow(forkOf(450))).toThrowError(
      expect.objectContaining({ code: 'DEFINITION_TOO_LARGE' }),
    );
  });
});

/** A parallel FORK of `width` VARIABLE paths with 60-character path ids; `prompt` pads each path. */
function forkOf(width: number, pad = ''): Workflow {
  const paths = Array.from({ length: width }, (_, i) => `path-${i}`.padEnd(60, '-'));
  const children = paths.map((_, i) => ({
    id: `child-${i}`,
    type: 'VARIABLE' as const,
    config: { variableName: 'v', variableType: 'string' as const, expression: `'${pad}'` },
  }));
  return {
    id: 'wide',
    version: 1,
    variables: [{ name: 'v', type: 'string', scope: 'thread', initial: '' }],
    nodes: [
      { id: 'start', type: 'START' },
      {
        id: 'split',
        type: 'FORK',
        config: { forkPathIds: paths, forkStrategy: 'parallel', childNodeIds: children.map((c) => c.id) },
      },
      ...children,
      {
        id: 'merge',
        type: 'JOIN',
        config: { forkPathIds: paths, joinStrategy: 'ALL_COMPLETED', timeout: 0 },
      },
      { id: 'end', type: 'END' },
    ],
    edges: [
      { from: 'start', to: 'split' },
      ...children.map((c) => ({ from: c.id, to: 'merge' })),
      { from: 'merge', to: 'end' },
    ],
  };
}

/** The states after a path's report to JOIN `merge` (its index from 1): Choice, Fail, Pass. */
function reported(path: number, join = 'merge'): string[] {
  return [`${join}:${path}:reported`, `${join}:${path}:decides`, `${join}:${path}:ends`];
}

function definitionBytes(workflow: Workflow): number {
  return Buffer.byteLength(JSON.stringify(compileWorkflow(workflow).definition));
}

describe('FORK over a list', () => {
  function mapState(definition: AslDefinition, name: string): AslMapState {
    const state = stateOf(definition, name);
    if (state.Type !== 'Map') throw new Error(`${name} is a ${state.Type}`);
    return state;
  }

  it('compiles to an inline Map over the items’ byte ranges in the envelope, each item envelope naming its thread by index and where its item is', () => {
    const { definition } = compiledOf('examples/map-reduce.json');
    expect(task(definition, 'each-doc').Next).toBe('each-doc:items');
    const map = mapState(definition, 'each-doc:items');
    expect(map).toMatchObject({
      ItemsPath: '$.fork.items',
      MaxConcurrency: 10,
      ResultPath: null,
      Next: 'merge',
      ItemProcessor: { ProcessorConfig: { Mode: 'INLINE' }, StartAt: 'each-doc:doc' },
    });
    expect(map.ItemSelector).toMatchObject({
      'threadId.$': "States.Format('{}-{}', $.fork.base, $$.Map.Item.Index)",
      step: 0,
      'rootThreadId.$': '$.rootThreadId',
      // The item's first step creates its thread from these (functions/nodes/map-items.ts).
      item: { 'at.$': '$$.Map.Item.Value', 'source.$': '$.fork.source' },
    });
    expect(map.Catch?.[0]).toMatchObject({
      ErrorEquals: ['stepthread.JoinDecided', 'stepthread.JoinTimeout'],
      Next: 'merge',
    });
    expect(Object.keys(map.ItemProcessor.States)).toEqual([
      'each-doc:doc',
      'summarise',
      'note',
      'merge:doc:failed',
      ...reported(1),
    ]);
    expect(node(definition, 'merge:doc:failed')).toMatchObject({ overList: true });
    expect(task(definition, 'note').Parameters).toMatchObject({ report: { id: 'merge', overList: true } });
  });

  it('wraps the Map in a Parallel with the timer when the JOIN has a timeout; serial means MaxConcurrency 1', () => {
    const { definition } = compileWorkflow(listWithTimeout);
    const wrapper = parallel(definition, 'each:paths');
    expect(wrapper.Branches.map((branch) => branch.StartAt)).toEqual(['each:items', 'merge:timer']);
    const map = mapState(definition, 'each:items');
    expect(map).toMatchObject({ MaxConcurrency: 1, End: true });
    expect(map.Catch).toBeUndefined();
  });

  it('compiles mode "distributed" to a Distributed Map over an S3 item list, Standard when an item waits for a person', () => {
    const { definition } = compileWorkflow(distributedList);
    const map = mapState(definition, 'each:items');
    expect(map.ItemsPath).toBeUndefined();
    expect(map).toMatchObject({
      ItemReader: {
        Resource: 'arn:aws:states:::s3:getObject',
        ReaderConfig: { InputType: 'JSON' },
        Parameters: { 'Bucket.$': '$.fork.list.bucket', 'Key.$': '$.fork.list.key' },
      },
      ItemProcessor: { ProcessorConfig: { Mode: 'DISTRIBUTED', ExecutionType: 'STANDARD' } },
      MaxConcurrency: 500,
      ToleratedFailureCount: 0,
      ResultWriter: {
        Resource: 'arn:aws:states:::s3:putObject',
        Parameters: { 'Bucket.$': '$.fork.list.bucket', 'Prefix.$': '$.fork.list.results' },
      },
    });
    expect(map.Catch?.[0]?.ErrorEquals).toContain('States.ExceedToleratedFailureThreshold');
    // The nested list is an inline Map inside each item.
    expect(mapState(definition, 'parts:items').ItemProcessor.ProcessorConfig).toEqual({ Mode: 'INLINE' });
  });

  it('runs distributed items as Express only when every step fits its 5 minutes, at most 100 at once unless maxConcurrency says', () => {
    const over = (itemNode: Record<string, unknown>, maxConcurrency?: number) =>
      valid({
        id: 'over',
        version: 1,
        profiles: { default: { provider: 'scripted', responses: ['ok'] } },
        nodes: [
          { id: 'start', type: 'START' },
          {
            id: 'each',
            type: 'FORK',
            config: {
              forkPathIds: ['one'],
              childNodeIds: ['work'],
              forEach: '{{input.list}}',
              mode: 'distributed',
              ...(maxConcurrency === undefined ? {} : { maxConcurrency }),
            },
          },
          { id: 'work', ...itemNode },
          { id: 'done', type: 'JOIN', config: { forkPathIds: ['one'], joinStrategy: 'ALL_COMPLETED' } },
          { id: 'end', type: 'END' },
        ],
        edges: [
          { from: 'start', to: 'each' },
          { from: 'work', to: 'done' },
          { from: 'done', to: 'end' },
        ],
      });
    const itemMap = (workflow: Workflow) => mapState(compileWorkflow(workflow).definition, 'each:items');
    const quick = itemMap(
      over({ type: 'VARIABLE', config: { variableName: 'x', variableType: 'number', expression: '1' } }),
    );
    expect(quick.ItemProcessor.ProcessorConfig).toEqual({ Mode: 'DISTRIBUTED', ExecutionType: 'EXPRESS' });
    expect(quick.MaxConcurrency).toBe(100);
    for (const slow of [
      over({ type: 'LLM', config: { prompt: 'hi' } }),
      over({ type: 'CODE', config: { code: 'return 1', timeoutMs: 600_000 } }),
    ]) {
      expect(itemMap(slow).ItemProcessor.ProcessorConfig).toEqual({
        Mode: 'DISTRIBUTED',
        ExecutionType: 'STANDARD',
      });
    }
    // An explicit 0 is no limit of ours (AWS's own applies).
    const unlimited = itemMap(over({ type: 'CODE', config: { code: 'return 1' } }, 0));
    expect(unlimited.MaxConcurrency).toBeUndefined();
  });
});
