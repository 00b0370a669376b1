import { describe, expect, it } from 'vitest';
import {
  applyContextOperation,
  type ConversationView,
  openConversation,
  setToolDescription,
  withThreadId,
} from '../../../engine/conversation/index.ts';
import type { ErrorCode } from '../../../engine/errors.ts';
import type { ContextProcessorConfig } from '../../../engine/model/schema.ts';
import { assistant, contents, numbered, system, user, viewWith } from './helpers.ts';

function expectCode(fn: () => unknown, code: ErrorCode): void {
  expect(fn).toThrow(expect.objectContaining({ code }));
}

const names = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => `m${from + i}`);

describe('truncate', () => {
  it('keepLast 2 on 10 messages keeps the last 2 (the seed threw here)', () => {
    const view = viewWith(numbered(10));
    const result = applyContextOperation(view, { operation: 'truncate', truncate: { keepLast: 2 } });
    expect(result).toEqual({ operation: 'truncate', visibleCount: 2 });
    expect(contents(view)).toEqual(['m8', 'm9']);
  });

  it.each([
    [{ keepFirst: 3 }, names(0, 3)],
    [{ keepLast: 0 }, []],
    [{ keepLast: 50 }, names(0, 10)],
    [{ removeFirst: 7 }, names(7, 10)],
    [{ removeLast: 7 }, names(0, 3)],
    [{ removeLast: 0 }, names(0, 10)],
    [{ range: { start: 2, end: 5 } }, names(2, 5)],
    [{ range: { start: 8, end: 40 } }, names(8, 10)],
  ])('%j', (truncate, expected) => {
    const view = viewWith(numbered(10));
    applyContextOperation(view, { operation: 'truncate', truncate });
    expect(contents(view)).toEqual(expected);
  });

  it('combines options in the order keepFirst, keepLast, removeFirst, removeLast, range', () => {
    const view = viewWith(numbered(20));
    // keepFirst 15 → m0..m14; keepLast 10 → m5..m14; removeFirst 1 → m6..m14;
    // removeLast 2 → m6..m12; range [1, 4) → m7 m8 m9
    applyContextOperation(view, {
      operation: 'truncate',
      truncate: { range: { start: 1, end: 4 }, removeLast: 2, removeFirst: 1, keepLast: 10, keepFirst: 15 },
    });
    expect(contents(view)).toEqual(['m7', 'm8', 'm9']);
  });

  it('works on visible positions after earlier operations, not log positions', () => {
    const view = viewWith(numbered(6));
    applyContextOperation(view, { operation: 'insert', insert: { position: 0, messages: [system('S')] } });
    applyContextOperation(view, { operation: 'truncate', truncate: { keepFirst: 2 } });
    expect(contents(view)).toEqual(['S', 'm0']);
  });

  it('starts a new batch', () => {
    const view = viewWith(numbered(4));
    applyContextOperation(view, { operation: 'truncate', truncate: { keepLast: 1 } });
    const { index } = view.state();
    expect(index.currentBatch).toBe(1);
    expect(index.batches[1]).toEqual({ boundary: 4, visibleBefore: [[0, 4]] });
  });

  it('rejects a missing or empty config and bad values without changing anything', () => {
    const view = viewWith(numbered(4));
    const before = view.state();
    expectCode(() => applyContextOperation(view, { operation: 'truncate' }), 'MISSING_OPERATION_CONFIG');
    expectCode(
      () => applyContextOperation(view, { operation: 'truncate', truncate: {} }),
      'MISSING_OPERATION_CONFIG',
    );
    expectCode(
      () => applyContextOperation(view, { operation: 'truncate', truncate: { keepLast: -1 } }),
      'INVALID_CONTEXT_INDEX',
    );
    expectCode(
      () => applyContextOperation(view, { operation: 'truncate', truncate: { range: { start: 3, end: 1 } } }),
      'INVALID_CONTEXT_INDEX',
    );
    expect(view.state()).toEqual(before);
  });
});

describe('insert', () => {
  it.each([
    [0, ['X', 'Y', 'm0', 'm1', 'm2']],
    [2, ['m0', 'm1', 'X', 'Y', 'm2']],
    [3, ['m0', 'm1', 'm2', 'X', 'Y']],
    [-1, ['m0', 'm1', 'm2', 'X', 'Y']],
  ])('at %i', (position, expected) => {
    const view = viewWith(numbered(3));
    const result = applyContextOperation(view, {
      operation: 'insert',
      insert: { position, messages: [user('X'), assistant('Y')] },
    });
    expect(contents(view)).toEqual(expected);
    expect(result.visibleCount).toBe(5);
    // The messages went to the end of the log; only the index places them.
    expect(view.allMessages().map((m) => m.content)).toEqual(['m0', 'm1', 'm2', 'X', 'Y']);
    expect(view.state().index.currentBatch).toBe(0);
  });

  it('keeps a contiguous conversation as one run when inserting at the end', () => {
    const view = viewWith(numbered(3));
    applyContextOperation(view, { operation: 'insert', insert: { position: -1, messages: [user('X')] } });
    expect(view.state().index.visible).toEqual([[0, 4]]);
  });

  it('rejects a position past the visible count and invalid messages', () => {
    const view = viewWith(numbered(3));
    expectCode(
      () =>
        applyContextOperation(view, { operation: 'insert', insert: { position: 4, messages: [user('X')] } }),
      'INVALID_CONTEXT_INDEX',
    );
    expectCode(
      () =>
        applyContextOperation(view, {
          operation: 'insert',
          insert: { position: 0, messages: [{ role: 'robot', content: 'x' }] },
        } as unknown as ContextProcessorConfig),
      'INVALID_MESSAGE',
    );
    expectCode(() => applyContextOperation(view, { operation: 'insert' }), 'MISSING_OPERATION_CONFIG');
    expect(view.logLength()).toBe(3);
    expect(contents(view)).toEqual(['m0', 'm1', 'm2']);
  });
});

describe('replace', () => {
  it('shows the new message in the slot and leaves the logged original intact for sharers', () => {
    const parent = viewWith(numbered(4));
    const parentState = parent.state();
    const log = parent.allMessages();
    // A fork child shares the log by pointer and replaces in its own view.
    const child = openConversation(withThreadId(parentState, 'child'), log);
    applyContextOperation(child, {
      operation: 'replace',
      replace: { index: 1, message: assistant('edited') },
    });
    expect(contents(child)).toEqual(['m0', 'edited', 'm2', 'm3']);
    expect(child.appendedMessages()).toEqual([assistant('edited')]);
    expect(log[1]).toEqual(assistant('m1'));
    expect(contents(openConversation(parentState, child.allMessages()))).toEqual(['m0', 'm1', 'm2', 'm3']);
    expect(child.state().index.currentBatch).toBe(0);
  });

  it('indexes among visible messages', () => {
    const view = viewWith(numbered(6));
    applyContextOperation(view, { operation: 'truncate', truncate: { keepLast: 3 } });
    applyContextOperation(view, { operation: 'replace', replace: { index: 0, message: user('new') } });
    expect(contents(view)).toEqual(['new', 'm4', 'm5']);
  });

  it('rejects an index outside the visible messages', () => {
    const view = viewWith(numbered(3));
    expectCode(
      () => applyContextOperation(view, { operation: 'replace', replace: { index: 3, message: user('x') } }),
      'INVALID_CONTEXT_INDEX',
    );
    expectCode(() => applyContextOperation(view, { operation: 'replace' }), 'MISSING_OPERATION_CONFIG');
    expect(view.logLength()).toBe(3);
  });
});

describe('clear', () => {
  const conversation = () => viewWith([system('rules'), ...numbered(3), system('late note'), user('q')]);

  it('keeps the visible system messages by default', () => {
    const view = conversation();
    const result = applyContextOperation(view, { operation: 'clear' });
    expect(contents(view)).toEqual(['rules', 'late note']);
    expect(result.visibleCount).toBe(2);
    expect(view.state().index.currentBatch).toBe(1);
  });

  it('brings back system messages an earlier operation hid (seed 004 §4: from all messages)', () => {
    const view = conversation();
    applyContextOperation(view, { operation: 'truncate', truncate: { removeFirst: 1 } });
    applyContextOperation(view, { operation: 'clear', clear: { keepSystemMessage: true } });
    expect(contents(view)).toEqual(['rules', 'late note']);
  });

  it('hides everything with keepSystemMessage false', () => {
    const view = conversation();
    applyContextOperation(view, { operation: 'clear', clear: { keepSystemMessage: false } });
    expect(contents(view)).toEqual([]);
  });

  it('keeps the tool description once, in both modes: in its log place, after the system messages before it', () => {
    for (const keepSystemMessage of [true, false]) {
      const view = conversation();
      setToolDescription(view, system('Tools: lookup'));
      applyContextOperation(view, { operation: 'clear', clear: { keepSystemMessage } });
      expect(contents(view)).toEqual(
        keepSystemMessage ? ['rules', 'late note', 'Tools: lookup'] : ['Tools: lookup'],
      );
    }
  });

  it('shows the tool description even when it had been hidden', () => {
    const view = conversation();
    setToolDescription(view, system('Tools: lookup'));
    applyContextOperation(view, { operation: 'truncate', truncate: { keepFirst: 1 } });
    applyContextOperation(view, { operation: 'clear', clear: { keepSystemMessage: false } });
    expect(contents(view)).toEqual(['Tools: lookup']);
  });
});

describe('filter', () => {
  const conversation = () =>
    viewWith([
      system('sys: weather tools'),
      user('what is the weather in Paris'),
      assistant('sunny in Paris'),
      user('and the weather in Rome?'),
      assistant('rain in Rome, sorry'),
      { role: 'tool', content: 'weather api: Rome rain', toolCallId: 'c1' },
    ]);

  it('by roles', () => {
    const view = conversation();
    applyContextOperation(view, { operation: 'filter', filter: { roles: ['user', 'assistant'] } });
    expect(view.visibleMessages().map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
    expect(view.state().index.currentBatch).toBe(1);
  });

  it('by contentContains: every keyword must appear', () => {
    const view = conversation();
    applyContextOperation(view, { operation: 'filter', filter: { contentContains: ['weather', 'Rome'] } });
    expect(contents(view)).toEqual(['and the weather in Rome?', 'weather api: Rome rain']);
  });

  it('by contentExcludes: no keyword may appear', () => {
    const view = conversation();
    applyContextOperation(view, { operation: 'filter', filter: { contentExcludes: ['Rome', 'sys'] } });
    expect(contents(view)).toEqual(['what is the weather in Paris', 'sunny in Paris']);
  });

  it('ANDs the conditions', () => {
    const view = conversation();
    applyContextOperation(view, {
      operation: 'filter',
      filter: { roles: ['user', 'tool'], contentContains: ['weather'], contentExcludes: ['Paris'] },
    });
    expect(contents(view)).toEqual(['and the weather in Rome?', 'weather api: Rome rain']);
  });

  it('only considers visible messages', () => {
    const view = conversation();
    applyContextOperation(view, { operation: 'truncate', truncate: { keepLast: 2 } });
    applyContextOperation(view, { operation: 'filter', filter: { roles: ['assistant', 'system'] } });
    expect(contents(view)).toEqual(['rain in Rome, sorry']);
  });

  it('needs at least one condition', () => {
    const view = conversation();
    expectCode(
      () => applyContextOperation(view, { operation: 'filter', filter: {} }),
      'MISSING_OPERATION_CONFIG',
    );
  });
});

it('rejects an unknown operation', () => {
  const view: ConversationView = viewWith(numbered(2));
  expectCode(
    () => applyContextOperation(view, { operation: 'compress' } as unknown as ContextProcessorConfig),
    'INVALID_CONTEXT_OPERATION',
  );
});
