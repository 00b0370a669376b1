/**
 * Seed 004, operation by operation, at the edges a checker deriving cases from it would try:
 * counts at 0, at the length and past it, combined options, positions, replace then clear, several
 * system messages, the tool description, batches and rollback after several operations.
 */
import { describe, expect, it } from 'vitest';
import {
  applyContextOperation,
  type ConversationView,
  openConversation,
  restoreConversation,
  rollbackToBatch,
  setToolDescription,
  snapshotConversation,
} from '../../../engine/conversation/index.ts';
import type { ContextProcessorConfig } from '../../../engine/model/schema.ts';
import { assistant, contents, numbered, system, user, viewWith } from './helpers.ts';

const apply = (view: ConversationView, config: ContextProcessorConfig) => applyContextOperation(view, config);
const names = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => `m${from + i}`);

describe('truncate at the edges (seed 004 §1)', () => {
  it.each([
    ['keepFirst 0 keeps nothing', { keepFirst: 0 }, []],
    ['keepFirst = length keeps all', { keepFirst: 5 }, names(0, 5)],
    ['keepFirst past the length keeps all', { keepFirst: 99 }, names(0, 5)],
    // The seed's slice(-0) would keep everything: "keep the last 0" keeps none here (README).
    ['keepLast 0 keeps nothing', { keepLast: 0 }, []],
    ['keepLast = length keeps all', { keepLast: 5 }, names(0, 5)],
    ['keepLast past the length keeps all (the seed threw here)', { keepLast: 6 }, names(0, 5)],
    ['removeFirst 0 removes nothing', { removeFirst: 0 }, names(0, 5)],
    ['removeFirst = length removes all', { removeFirst: 5 }, []],
    ['removeFirst past the length removes all', { removeFirst: 9 }, []],
    ['removeLast 0 removes nothing', { removeLast: 0 }, names(0, 5)],
    ['removeLast = length removes all', { removeLast: 5 }, []],
    ['removeLast past the length removes all', { removeLast: 9 }, []],
    ['range [0, 0) is empty', { range: { start: 0, end: 0 } }, []],
    ['range [0, length) keeps all', { range: { start: 0, end: 5 } }, names(0, 5)],
    ['range past the length is empty', { range: { start: 7, end: 9 } }, []],
    ['keepFirst 3 then keepLast 2', { keepFirst: 3, keepLast: 2 }, ['m1', 'm2']],
    [
      'keepLast 4 then removeFirst 1 then removeLast 1',
      { keepLast: 4, removeFirst: 1, removeLast: 1 },
      ['m2', 'm3'],
    ],
  ])('%s', (_title, truncate, expected) => {
    const view = viewWith(numbered(5));
    const result = apply(view, { operation: 'truncate', truncate });
    expect(contents(view)).toEqual(expected);
    expect(result.visibleCount).toBe(expected.length);
    // Non-destructive: every message is still in the log.
    expect(view.allMessages()).toHaveLength(5);
  });

  it('keepLast counts visible positions, never log indices, after earlier operations', () => {
    // The SDK defect: keepLast passed a message index where a position was expected.
    const view = viewWith(numbered(10));
    apply(view, { operation: 'filter', filter: { roles: ['user'] } }); // m0 m2 m4 m6 m8
    apply(view, { operation: 'insert', insert: { position: 0, messages: [system('S')] } });
    apply(view, { operation: 'truncate', truncate: { keepLast: 2 } });
    expect(contents(view)).toEqual(['m6', 'm8']);
    apply(view, { operation: 'truncate', truncate: { keepLast: 1 } });
    expect(contents(view)).toEqual(['m8']);
  });
});

describe('insert at the edges (seed 004 §2)', () => {
  it.each([
    [0, ['N', 'm0', 'm1']],
    [1, ['m0', 'N', 'm1']],
    [2, ['m0', 'm1', 'N']],
    [-1, ['m0', 'm1', 'N']],
  ])('position %i with each role', (position, expected) => {
    for (const role of ['system', 'user', 'assistant', 'tool'] as const) {
      const view = viewWith(numbered(2));
      apply(view, { operation: 'insert', insert: { position, messages: [{ role, content: 'N' }] } });
      expect(contents(view)).toEqual(expected);
      expect(view.visibleMessages()[expected.indexOf('N')]?.role).toBe(role);
    }
  });

  it('into an empty conversation at 0 and at -1', () => {
    for (const position of [0, -1]) {
      const view = viewWith([]);
      apply(view, { operation: 'insert', insert: { position, messages: [user('a'), user('b')] } });
      expect(contents(view)).toEqual(['a', 'b']);
    }
  });

  it('refuses a position past the visible messages with INVALID_CONTEXT_INDEX and changes nothing', () => {
    const view = viewWith(numbered(2));
    expect(() =>
      apply(view, { operation: 'insert', insert: { position: 3, messages: [user('x')] } }),
    ).toThrow(expect.objectContaining({ code: 'INVALID_CONTEXT_INDEX' }));
    expect(() =>
      apply(view, { operation: 'insert', insert: { position: -2, messages: [user('x')] } }),
    ).toThrow(expect.objectContaining({ code: 'INVALID_CONTEXT_INDEX' }));
    expect(contents(view)).toEqual(['m0', 'm1']);
    expect(view.logLength()).toBe(2);
  });

  it('after a truncate, positions count the visible messages only', () => {
    const view = viewWith(numbered(6));
    apply(view, { operation: 'truncate', truncate: { keepLast: 2 } }); // m4 m5
    apply(view, { operation: 'insert', insert: { position: 1, messages: [system('S')] } });
    expect(contents(view)).toEqual(['m4', 'S', 'm5']);
    apply(view, { operation: 'insert', insert: { position: 3, messages: [user('end')] } });
    expect(contents(view)).toEqual(['m4', 'S', 'm5', 'end']);
    // Appended to the log's end whatever the position (seed 004 §2 step 4).
    expect(view.allMessages().map((m) => m.content)).toEqual([...names(0, 6), 'S', 'end']);
  });
});

describe('replace (seed 004 §3)', () => {
  it('replaces the first and the last visible message', () => {
    const view = viewWith(numbered(3));
    apply(view, { operation: 'replace', replace: { index: 0, message: system('first') } });
    apply(view, { operation: 'replace', replace: { index: 2, message: user('last') } });
    expect(contents(view)).toEqual(['first', 'm1', 'last']);
    expect(view.visibleMessages()[0]?.role).toBe('system');
  });

  it('replacing a system message with a user one: clear no longer keeps it', () => {
    const view = viewWith([system('old rules'), ...numbered(2)]);
    apply(view, { operation: 'replace', replace: { index: 0, message: user('not a rule') } });
    apply(view, { operation: 'clear', clear: { keepSystemMessage: true } });
    expect(contents(view)).toEqual([]);
  });

  it('replacing a system message with another: clear keeps the new text once, in its place', () => {
    const view = viewWith([system('rules v1'), user('q'), system('note')]);
    apply(view, { operation: 'replace', replace: { index: 0, message: system('rules v2') } });
    apply(view, { operation: 'replace', replace: { index: 0, message: system('rules v3') } });
    apply(view, { operation: 'clear', clear: { keepSystemMessage: true } });
    expect(contents(view)).toEqual(['rules v3', 'note']);
  });

  it('replacing a user message with a system one: clear keeps it', () => {
    const view = viewWith([user('q'), system('note')]);
    apply(view, { operation: 'replace', replace: { index: 0, message: system('promoted') } });
    apply(view, { operation: 'clear', clear: {} });
    expect(contents(view)).toEqual(['promoted', 'note']);
  });

  it('the replacements survive a snapshot and restore (a join restoring a path)', () => {
    const view = viewWith([system('rules v1'), user('q')]);
    apply(view, { operation: 'replace', replace: { index: 0, message: user('gone') } });
    const restored = restoreConversation(snapshotConversation(view.state()), 'parent');
    const again = openConversation(restored, view.allMessages());
    apply(again, { operation: 'clear', clear: {} });
    expect(contents(again)).toEqual([]);
  });
});

describe('clear (seed 004 §4)', () => {
  it('with no system message, keepSystemMessage true or false leaves nothing visible', () => {
    for (const keepSystemMessage of [true, false]) {
      const view = viewWith(numbered(3));
      const result = apply(view, { operation: 'clear', clear: { keepSystemMessage } });
      expect(result.visibleCount).toBe(0);
      expect(view.allMessages()).toHaveLength(3);
    }
  });

  it('keeps several system messages in log order, and keepSystemMessage defaults to true', () => {
    const view = viewWith([system('a'), user('q'), system('b'), assistant('r'), system('c')]);
    apply(view, { operation: 'clear', clear: {} });
    expect(contents(view)).toEqual(['a', 'b', 'c']);
  });

  it('the tool description stays visible (in its log place), and an outdated one does not come back', () => {
    const view = viewWith([system('rules'), user('q')]);
    setToolDescription(view, system('Available tools: lookup'));
    setToolDescription(view, system('Available tools: lookup, refund'));
    expect(contents(view)).toEqual(['rules', 'q', 'Available tools: lookup, refund']);
    apply(view, { operation: 'clear', clear: { keepSystemMessage: true } });
    expect(contents(view)).toEqual(['rules', 'Available tools: lookup, refund']);
    apply(view, { operation: 'clear', clear: { keepSystemMessage: false } });
    expect(contents(view)).toEqual(['Available tools: lookup, refund']);
  });

  it('adds no tool description when the conversation already holds one (a system message starting "Available tools:")', () => {
    const view = viewWith([system('rules'), user('q'), system('Available tools:\n- lookup'), assistant('r')]);
    setToolDescription(view, system('Available tools:\n- lookup: Look a thing up'));
    expect(view.allMessages()).toHaveLength(4);
    apply(view, { operation: 'clear', clear: { keepSystemMessage: true } });
    expect(contents(view)).toEqual(['rules', 'Available tools:\n- lookup']);
    setToolDescription(view, system('Available tools:\n- lookup: Look a thing up'));
    apply(view, { operation: 'clear', clear: { keepSystemMessage: false } });
    expect(contents(view)).toEqual([]);
    expect(view.allMessages()).toHaveLength(4);
  });

  it('messages appended after a clear show after what it kept', () => {
    const view = viewWith([system('rules'), ...numbered(4)]);
    apply(view, { operation: 'clear', clear: {} });
    view.append(user('next'));
    expect(contents(view)).toEqual(['rules', 'next']);
  });
});

describe('filter (seed 004 §5)', () => {
  const view = () =>
    viewWith([
      system('S weather'),
      user('U weather'),
      assistant('A'),
      { role: 'tool', content: 'T weather' },
    ]);

  it.each([
    [{ roles: ['system'] }, ['S weather']],
    [{ roles: ['tool'] }, ['T weather']],
    [{ roles: [] }, []],
    [{ contentContains: ['weather'] }, ['S weather', 'U weather', 'T weather']],
    [{ contentContains: ['nothing like it'] }, []],
    [{ contentExcludes: ['weather'] }, ['A']],
    [{ roles: ['user', 'assistant'], contentExcludes: ['U'] }, ['A']],
  ] as const)('%j', (filter, expected) => {
    const v = view();
    apply(v, { operation: 'filter', filter } as unknown as ContextProcessorConfig);
    expect(contents(v)).toEqual(expected);
  });
});

describe('batches and rollback after several operations (seed 004, batch management)', () => {
  it('truncate, filter and clear each start a batch; insert and replace do not; rollback restores each', () => {
    const view = viewWith([system('S'), ...numbered(6)]);
    apply(view, { operation: 'truncate', truncate: { removeFirst: 1 } }); // batch 1
    apply(view, { operation: 'insert', insert: { position: 0, messages: [system('I')] } });
    apply(view, { operation: 'replace', replace: { index: 1, message: user('R') } });
    expect(view.state().index.currentBatch).toBe(1);
    const afterBatch1 = contents(view);
    apply(view, { operation: 'filter', filter: { roles: ['system', 'user'] } }); // batch 2
    const afterBatch2 = contents(view);
    apply(view, { operation: 'clear', clear: { keepSystemMessage: false } }); // batch 3
    const state = view.state();
    expect(state.index.currentBatch).toBe(3);
    expect(contents(view)).toEqual([]);
    const contentsOf = (s: typeof state) => openConversation(s, view.allMessages());
    expect(contents(contentsOf(rollbackToBatch(state, 2)))).toEqual(afterBatch2);
    expect(contents(contentsOf(rollbackToBatch(state, 1)))).toEqual(afterBatch1);
    expect(contents(contentsOf(rollbackToBatch(state, 0)))).toEqual(['S', ...names(0, 6)]);
    // The log never lost a message.
    expect(view.allMessages()).toHaveLength(9);
  });
});

describe('on an empty conversation', () => {
  it.each([
    [{ operation: 'truncate', truncate: { keepLast: 2 } }],
    [{ operation: 'truncate', truncate: { removeFirst: 1 } }],
    [{ operation: 'clear', clear: {} }],
    [{ operation: 'filter', filter: { roles: ['user'] } }],
  ] as const)('%j leaves it empty', (config) => {
    const view = viewWith([]);
    expect(apply(view, config as unknown as ContextProcessorConfig).visibleCount).toBe(0);
  });

  it('replace has no message to replace (INVALID_CONTEXT_INDEX); insert at 0 works', () => {
    const view = viewWith([]);
    expect(() => apply(view, { operation: 'replace', replace: { index: 0, message: user('x') } })).toThrow(
      expect.objectContaining({ code: 'INVALID_CONTEXT_INDEX' }),
    );
    expect(view.logLength()).toBe(0);
    apply(view, { operation: 'insert', insert: { position: 0, messages: [user('x')] } });
    expect(contents(view)).toEqual(['x']);
  });
});
