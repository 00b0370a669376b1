/**
 * A second line-by-line pass over seeds 003 and 004 (and seed 001's rules), from what a user writes
 * rather than what the seed lists: the obvious mistakes in a CONTEXT_PROCESSOR, USER_INTERACTION or
 * JOIN config each get a coded error from validate (or a documented result at run time), and the
 * contents a CONTEXT_PROCESSOR inserts are templates, as validate already read them.
 * seed-audit-context.test.ts holds the first pass; this file does not repeat it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateWorkflow } from '../../engine/validation/validate.ts';
import { assistant, type E2e, plain, startE2e, system, user, valid } from './helpers.ts';

let e2e: E2e;
beforeAll(async () => {
  e2e = await startE2e('seed-audit-003-004');
});
afterAll(async () => {
  await e2e.close();
});

type NodeSpec = { id: string; type: string; config?: unknown };
const cp = (id: string, config: Record<string, unknown>): NodeSpec => ({
  id,
  type: 'CONTEXT_PROCESSOR',
  config,
});

/** START → nodes… → END, with `extra` top-level fields (variables, profiles). */
function linear(
  id: string,
  nodes: NodeSpec[],
  extra: Record<string, unknown> = {},
  output: unknown = 'done',
) {
  const all = [{ id: 'start', type: 'START' }, ...nodes, { id: 'end', type: 'END', config: { output } }];
  return {
    id,
    version: 1,
    profiles: { default: { provider: 'scripted', responses: ['ok'] } },
    ...extra,
    nodes: all,
    edges: all.slice(1).map((node, i) => ({ from: all[i]!.id, to: node.id })),
  };
}

const SEED = [system('S'), user('u0'), assistant('a0'), user('u1'), assistant('a1')];
const seed = cp('seed', { operation: 'insert', insert: { position: -1, messages: SEED } });

/** The codes and paths validate reports for one node `n` of the given type. */
function problems(type: string, config: unknown, extra: Record<string, unknown> = {}) {
  return validateWorkflow(linear('v', [{ id: 'n', type, config }], extra)).errors.map(
    (error) => `${error.code} ${error.path ?? ''}`,
  );
}

async function run(workflow: unknown, input: Record<string, unknown> = {}) {
  const outcome = await e2e.runtime.prepare(valid(workflow)).run(input);
  return { outcome, conversation: plain(await e2e.conversation(outcome.threadId)) };
}

describe('CONTEXT_PROCESSOR mistakes a user makes (seed 003 §5.1)', () => {
  it.each([
    [
      "another operation's object next to the one run (it would be ignored)",
      { operation: 'truncate', truncate: { keepLast: 2 }, filter: { roles: ['user'] } },
      ['INVALID_NODE_CONFIG nodes[1].config.filter'],
    ],
    [
      'every object given, as if each applied',
      { operation: 'clear', clear: {}, insert: { position: 0, messages: [user('x')] } },
      ['INVALID_NODE_CONFIG nodes[1].config.insert'],
    ],
    [
      'an empty contentContains keyword (every content contains it: keeps everything)',
      { operation: 'filter', filter: { contentContains: [''] } },
      ['INVALID_NODE_CONFIG nodes[1].config.filter.contentContains[0]'],
    ],
    [
      'an empty contentExcludes keyword (would keep nothing)',
      { operation: 'filter', filter: { roles: ['user'], contentExcludes: ['x', ''] } },
      ['INVALID_NODE_CONFIG nodes[1].config.filter.contentExcludes[1]'],
    ],
    [
      'a broken template in an inserted message',
      { operation: 'insert', insert: { position: 0, messages: [system('Hi {{input.name')] } },
      ['INVALID_EXPRESSION nodes[1].config.insert.messages[0].content'],
    ],
    [
      'a broken template in a replacement message',
      { operation: 'replace', replace: { index: 0, message: system('{{ 1 + }}') } },
      ['INVALID_EXPRESSION nodes[1].config.replace.message.content'],
    ],
    // Already refused before this pass; kept here so the whole list of mistakes is in one place.
    [
      'a misspelt option',
      { operation: 'truncate', truncate: { keeplast: 2 } },
      ['UNKNOWN_KEY nodes[1].config.truncate.keeplast', 'MISSING_OPERATION_CONFIG nodes[1].config.truncate'],
    ],
    [
      '"message" for insert\'s "messages"',
      { operation: 'insert', insert: { position: 0, message: user('x') } },
      ['MISSING_OPERATION_CONFIG nodes[1].config.insert.messages'],
    ],
    [
      'one message where a list is wanted',
      { operation: 'insert', insert: { position: 0, messages: user('x') } },
      ['INVALID_MESSAGE nodes[1].config.insert.messages'],
    ],
    [
      'a count as a string',
      { operation: 'truncate', truncate: { keepLast: '2' } },
      ['INVALID_NODE_CONFIG nodes[1].config.truncate.keepLast'],
    ],
    [
      'a range as an array',
      { operation: 'truncate', truncate: { range: [1, 3] } },
      ['INVALID_NODE_CONFIG nodes[1].config.truncate.range'],
    ],
    [
      'a range without its end',
      { operation: 'truncate', truncate: { range: { start: 1 } } },
      ['INVALID_NODE_CONFIG nodes[1].config.truncate.range.end'],
    ],
    [
      'a negative replace index',
      { operation: 'replace', replace: { index: -1, message: user('x') } },
      ['INVALID_NODE_CONFIG nodes[1].config.replace.index'],
    ],
    [
      'insert at "end"',
      { operation: 'insert', insert: { position: 'end', messages: [user('x')] } },
      ['INVALID_NODE_CONFIG nodes[1].config.insert.position'],
    ],
    [
      'keepSystemMessage as a string',
      { operation: 'clear', clear: { keepSystemMessage: 'false' } },
      ['INVALID_NODE_CONFIG nodes[1].config.clear.keepSystemMessage'],
    ],
    [
      'a role with a capital',
      { operation: 'filter', filter: { roles: ['User'] } },
      ['INVALID_NODE_CONFIG nodes[1].config.filter.roles[0]'],
    ],
    [
      'the operation in capitals',
      { operation: 'TRUNCATE', truncate: { keepLast: 2 } },
      ['INVALID_CONTEXT_OPERATION nodes[1].config.operation'],
    ],
  ])('%s', (_title, config, expected) => {
    expect(problems('CONTEXT_PROCESSOR', config)).toEqual(expected);
  });

  it('names read by an inserted message must exist, as in any template', () => {
    expect(
      problems('CONTEXT_PROCESSOR', {
        operation: 'insert',
        insert: { position: 0, messages: [system('Customer: {{customr}}')] },
      }),
    ).toEqual(['UNKNOWN_VARIABLE_REFERENCE nodes[1]']);
  });
});

describe('CONTEXT_PROCESSOR results at the edges (seed 004)', () => {
  it('inserted and replacement contents are templates over input, variables and node outputs', async () => {
    const { outcome, conversation } = await run(
      linear(
        'cp-templates',
        [
          seed,
          {
            id: 'who',
            type: 'VARIABLE',
            config: { variableName: 'tier', variableType: 'string', expression: "'gold'" },
          },
          cp('rules', {
            operation: 'insert',
            insert: {
              position: 0,
              messages: [
                system('Customer {{input.name}} ({{tier}}) after {{nodes.seed.messageCount}} messages'),
              ],
            },
          }),
          cp('edit', {
            operation: 'replace',
            replace: { index: 2, message: user('{{upper(input.name)}} asks') },
          }),
        ],
        { variables: [{ name: 'tier', type: 'string', scope: 'thread' }] },
      ),
      { name: 'Ann' },
    );
    expect(outcome.status).toBe('COMPLETED');
    expect(conversation.slice(0, 3)).toEqual([
      system('Customer Ann (gold) after 5 messages'),
      system('S'),
      user('ANN asks'),
    ]);
  });

  it('contents without a template are kept exactly, braces and all', async () => {
    const { conversation } = await run(
      linear('cp-no-template', [
        cp('add', { operation: 'insert', insert: { position: -1, messages: [user('a } b { c')] } }),
      ]),
    );
    expect(conversation).toEqual([user('a } b { c')]);
  });

  it('a truncate larger than the conversation clamps: keepFirst keeps all, removeFirst leaves none', async () => {
    const kept = await run(
      linear('cp-keep-big', [seed, cp('t', { operation: 'truncate', truncate: { keepFirst: 100 } })]),
    );
    expect(kept.conversation).toEqual(SEED);
    const removed = await run(
      linear(
        'cp-remove-big',
        [seed, cp('t', { operation: 'truncate', truncate: { removeFirst: 100 } })],
        {},
        '{{nodes.t}}',
      ),
    );
    expect(removed.outcome.output).toEqual({ operation: 'truncate', messageCount: 0, visibleCount: 0 });
    expect(removed.conversation).toEqual([]);
  });

  it('filter reads the visible messages only: a system message an earlier truncate hid stays hidden', async () => {
    const { conversation } = await run(
      linear('cp-filter-visible', [
        seed,
        cp('trim', { operation: 'truncate', truncate: { keepLast: 2 } }),
        cp('rules', { operation: 'filter', filter: { roles: ['system', 'assistant'] } }),
      ]),
    );
    expect(conversation).toEqual([assistant('a1')]);
  });

  it('a filter matching nothing leaves an empty conversation; the next LLM node sends its prompt alone', async () => {
    const { outcome, conversation } = await run(
      linear(
        'cp-filter-nothing',
        [
          seed,
          cp('keep', { operation: 'filter', filter: { contentContains: ['zzz'] } }),
          { id: 'ask', type: 'LLM', config: { prompt: 'start over' } },
        ],
        {},
        '{{nodes.keep.messageCount}}',
      ),
    );
    expect(outcome.status).toBe('COMPLETED');
    expect(outcome.output).toBe(0);
    expect(conversation).toEqual([user('start over'), assistant('ok')]);
  });
});

describe('USER_INTERACTION mistakes a user makes (seed 003 §5.2)', () => {
  const ui = (config: Record<string, unknown>) => problems('USER_INTERACTION', config);

  it.each([
    [
      'options on an approval',
      { userInteractionType: 'ask_for_approval', options: ['yes', 'no'] },
      'INVALID_SELECTION_OPTIONS nodes[1].config.options',
    ],
    [
      'options on an input',
      { userInteractionType: 'ask_for_input', options: ['a'] },
      'INVALID_SELECTION_OPTIONS nodes[1].config.options',
    ],
    [
      'userInput on show_message',
      { userInteractionType: 'show_message', showMessage: 'hi', userInput: 'hi' },
      'INVALID_NODE_CONFIG nodes[1].config.userInput',
    ],
    [
      'a userInput that is no option',
      { userInteractionType: 'ask_for_selection', options: ['a', 'b'], userInput: 'c' },
      'INVALID_INTERACTION_ANSWER nodes[1].config.userInput',
    ],
    [
      'a userInput index past the options',
      { userInteractionType: 'ask_for_selection', options: ['a', 'b'], userInput: 2 },
      'INVALID_INTERACTION_ANSWER nodes[1].config.userInput',
    ],
    [
      'a userInput index written as digits, past the options',
      { userInteractionType: 'ask_for_selection', options: ['a', 'b'], userInput: '7' },
      'INVALID_INTERACTION_ANSWER nodes[1].config.userInput',
    ],
    [
      'a userInput of the wrong kind for a selection',
      { userInteractionType: 'ask_for_selection', options: ['a'], userInput: { choice: 'a' } },
      'INVALID_INTERACTION_ANSWER nodes[1].config.userInput',
    ],
    [
      'a userInput approval that is no yes or no',
      { userInteractionType: 'ask_for_approval', userInput: 'maybe' },
      'INVALID_INTERACTION_ANSWER nodes[1].config.userInput',
    ],
    // Already refused before this pass.
    [
      'options given as {id, label} objects',
      { userInteractionType: 'ask_for_selection', options: [{ id: 'a', label: 'A' }] },
      'INVALID_SELECTION_OPTIONS nodes[1].config.options[0]',
    ],
    [
      '"type" for userInteractionType',
      { type: 'ask_for_input' },
      'INVALID_USER_INTERACTION_TYPE nodes[1].config.userInteractionType',
    ],
    [
      '"message" for showMessage',
      { userInteractionType: 'ask_for_input', message: 'hi' },
      'UNKNOWN_KEY nodes[1].config.message',
    ],
  ])('%s', (_title, config, expected) => {
    expect(ui(config)).toEqual([expected]);
  });

  it.each([
    { userInteractionType: 'ask_for_selection', options: ['a', 'b'], userInput: 'b' },
    { userInteractionType: 'ask_for_selection', options: ['a', 'b'], userInput: 1 },
    { userInteractionType: 'ask_for_selection', options: ['a', 'b'], userInput: '1' },
    // A template is known only at run time; {fail} fails the run on purpose.
    { userInteractionType: 'ask_for_selection', options: ['a', 'b'], userInput: '{{input.pick}}' },
    { userInteractionType: 'ask_for_approval', userInput: { fail: 'not today' } },
    { userInteractionType: 'ask_for_approval', userInput: 'Yes' },
    { userInteractionType: 'ask_for_input', userInput: ['any', { json: 1 }] },
  ])('a userInput that can answer is valid: %j', (config) => {
    expect(ui(config)).toEqual([]);
  });
});

describe('JOIN mistakes a user makes (seed 001 §2)', () => {
  const forkJoin = (join: Record<string, unknown>) =>
    validateWorkflow({
      id: 'fj',
      version: 1,
      nodes: [
        { id: 'start', type: 'START' },
        {
          id: 'split',
          type: 'FORK',
          config: { forkPathIds: ['p', 'q'], forkStrategy: 'parallel', childNodeIds: ['a', 'b'] },
        },
        { id: 'a', type: 'VARIABLE', config: { variableName: 'x', variableType: 'number', expression: '1' } },
        { id: 'b', type: 'VARIABLE', config: { variableName: 'y', variableType: 'number', expression: '2' } },
        { id: 'merge', type: 'JOIN', config: { forkPathIds: ['p', 'q'], timeout: 0, ...join } },
        { id: 'end', type: 'END' },
      ],
      edges: [
        { from: 'start', to: 'split' },
        { from: 'a', to: 'merge' },
        { from: 'b', to: 'merge' },
        { from: 'merge', to: 'end' },
      ],
    }).errors.map((error) => `${error.code} ${error.path ?? ''}`);

  it.each(['ALL_COMPLETED', 'ANY_COMPLETED', 'ALL_FAILED', 'ANY_FAILED'])(
    'a threshold with %s (which counts no successes) is INVALID_JOIN_THRESHOLD, not ignored',
    (joinStrategy) => {
      expect(forkJoin({ joinStrategy, threshold: 1 })).toEqual([
        'INVALID_JOIN_THRESHOLD nodes[4].config.threshold',
      ]);
    },
  );

  it('SUCCESS_COUNT_THRESHOLD with its threshold stays valid', () => {
    expect(forkJoin({ joinStrategy: 'SUCCESS_COUNT_THRESHOLD', threshold: 2 })).toEqual([]);
  });
});

describe('seed 001 §7 MAIN_THREAD_NOT_FOUND: a valid workflow never meets it', () => {
  const serial = (id: string, join: Record<string, unknown>, failFirst = false) => ({
    id,
    version: 1,
    profiles: { default: { provider: 'scripted', responses: ['ok'] } },
    nodes: [
      { id: 'start', type: 'START' },
      {
        id: 'split',
        type: 'FORK',
        config: { forkPathIds: ['p', 'q'], forkStrategy: 'serial', childNodeIds: ['a', 'b'] },
      },
      failFirst
        ? { id: 'a', type: 'CODE', config: { code: 'throw new Error("boom")' } }
        : { id: 'a', type: 'LLM', config: { prompt: 'from a' } },
      { id: 'b', type: 'LLM', config: { prompt: 'from b' } },
      {
        id: 'merge',
        type: 'JOIN',
        config: { forkPathIds: ['p', 'q'], timeout: 0, mainPathId: 'q', ...join },
      },
      { id: 'end', type: 'END', config: { output: '{{nodes.merge}}' } },
    ],
    edges: [
      { from: 'start', to: 'split' },
      { from: 'a', to: 'merge' },
      { from: 'b', to: 'merge' },
      { from: 'merge', to: 'end' },
    ],
  });

  it.each([
    ['ANY_COMPLETED', { joinStrategy: 'ANY_COMPLETED' }, false],
    ['SUCCESS_COUNT_THRESHOLD 1', { joinStrategy: 'SUCCESS_COUNT_THRESHOLD', threshold: 1 }, false],
    ['ANY_FAILED', { joinStrategy: 'ANY_FAILED' }, true],
  ])(
    'serial, %s decided by the first path: the later main path still runs and its conversation is restored',
    async (_title, join, failFirst) => {
      const { outcome, conversation } = await run(
        serial(`serial-main-${join.joinStrategy.toLowerCase()}`, join, failFirst),
      );
      expect(outcome.status).toBe('COMPLETED');
      expect(conversation).toEqual([user('from b'), assistant('ok')]);
    },
  );
});

describe('FORK mistakes a user makes (seed 001 §2)', () => {
  it('a child node listed twice is named as such (INVALID_FORK_PATH_IDS), beside what follows from it', () => {
    const errors = validateWorkflow({
      id: 'fork-dup-child',
      version: 1,
      nodes: [
        { id: 'start', type: 'START' },
        {
          id: 'split',
          type: 'FORK',
          config: { forkPathIds: ['p', 'q'], forkStrategy: 'parallel', childNodeIds: ['a', 'a'] },
        },
        { id: 'a', type: 'VARIABLE', config: { variableName: 'x', variableType: 'number', expression: '1' } },
        { id: 'merge', type: 'JOIN', config: { forkPathIds: ['p', 'q'], joinStrategy: 'ALL_COMPLETED' } },
        { id: 'end', type: 'END' },
      ],
      edges: [
        { from: 'start', to: 'split' },
        { from: 'a', to: 'merge' },
        { from: 'merge', to: 'end' },
      ],
    }).errors;
    expect(errors).toContainEqual(
      expect.objectContaining({
        code: 'INVALID_FORK_PATH_IDS',
        path: 'nodes[1].config.childNodeIds[1]',
        message: expect.stringContaining('"a" twice'),
      }),
    );
  });
});
