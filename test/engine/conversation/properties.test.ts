/**
 * Property tests: random sequences of appends, context operations, tool-description changes and
 * rollbacks, run against the real view and against a plain-array model of the visible positions.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  applyContextOperation,
  type ConversationView,
  createConversation,
  type Message,
  openConversation,
  positionsOf,
  restoreConversation,
  rollbackToBatch,
  snapshotConversation,
} from '../../../engine/conversation/index.ts';
import { isNormalised, runsProblem } from '../../../engine/conversation/runs.ts';
import { StepthreadError } from '../../../engine/errors.ts';
import type { ContextProcessorConfig, FilterConfig, TruncateConfig } from '../../../engine/model/schema.ts';

const roleArb = fc.constantFrom('system', 'user', 'assistant', 'tool') as fc.Arbitrary<Message['role']>;
const wordArb = fc.constantFrom('alpha', 'beta', 'gamma');
const messageArb: fc.Arbitrary<Message> = fc.record({
  role: roleArb,
  content: fc.array(wordArb, { maxLength: 3 }).map((w) => w.join(' ')),
});
const small = fc.nat({ max: 12 });

type Command =
  | { kind: 'append'; messages: Message[] }
  | { kind: 'op'; config: ContextProcessorConfig }
  | { kind: 'tools'; content: string }
  | { kind: 'rollback'; batch: number }
  | { kind: 'reopen' };

const truncateArb: fc.Arbitrary<TruncateConfig> = fc.record(
  {
    keepFirst: small,
    keepLast: small,
    removeFirst: small,
    removeLast: small,
    range: fc.record({ start: small, end: small }),
  },
  { requiredKeys: [] },
);
const filterArb: fc.Arbitrary<FilterConfig> = fc.record(
  {
    roles: fc.uniqueArray(roleArb, { maxLength: 4 }),
    contentContains: fc.array(wordArb, { maxLength: 2 }),
    contentExcludes: fc.array(wordArb, { maxLength: 2 }),
  },
  { requiredKeys: [] },
);
const opArb: fc.Arbitrary<ContextProcessorConfig> = fc.oneof(
  truncateArb.map((truncate) => ({ operation: 'truncate' as const, truncate })),
  fc
    .record({ position: fc.integer({ min: -1, max: 12 }), messages: fc.array(messageArb, { maxLength: 3 }) })
    .map((insert) => ({ operation: 'insert' as const, insert })),
  fc
    .record({ index: small, message: messageArb })
    .map((replace) => ({ operation: 'replace' as const, replace })),
  fc.boolean().map((keepSystemMessage) => ({ operation: 'clear' as const, clear: { keepSystemMessage } })),
  filterArb.map((filter) => ({ operation: 'filter' as const, filter })),
);
const commandArb: fc.Arbitrary<Command> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc
      .array(messageArb, { maxLength: 4 })
      .map((messages) => ({ kind: 'append' as const, messages })),
  },
  { weight: 4, arbitrary: opArb.map((config) => ({ kind: 'op' as const, config })) },
  { weight: 1, arbitrary: wordArb.map((content) => ({ kind: 'tools' as const, content })) },
  { weight: 1, arbitrary: fc.nat({ max: 4 }).map((batch) => ({ kind: 'rollback' as const, batch })) },
  { weight: 1, arbitrary: fc.constant({ kind: 'reopen' as const }) },
);

/** Reference semantics on plain position arrays (what the seed did, with keepLast fixed). */
function modelTruncate(positions: number[], t: TruncateConfig): number[] {
  let p = positions;
  if (t.keepFirst !== undefined) p = p.slice(0, t.keepFirst);
  if (t.keepLast !== undefined) p = t.keepLast === 0 ? [] : p.slice(-t.keepLast);
  if (t.removeFirst !== undefined) p = p.slice(t.removeFirst);
  if (t.removeLast !== undefined) p = p.slice(0, p.length - Math.min(t.removeLast, p.length));
  if (t.range !== undefined) p = p.slice(t.range.start, t.range.end);
  return p;
}

const isSubsequence = (sub: readonly number[], of: readonly number[]): boolean => {
  let i = 0;
  for (const p of of) if (i < sub.length && sub[i] === p) i++;
  return i === sub.length;
};

function checkInvariants(view: ConversationView): void {
  const state = view.state();
  expect(runsProblem(state.index.visible, state.log.length)).toBeUndefined();
  expect(isNormalised(state.index.visible)).toBe(true);
  for (const [i, batch] of state.index.batches.entries()) {
    expect(runsProblem(batch.visibleBefore, batch.boundary)).toBeUndefined();
    if (i > 0) expect(isNormalised(batch.visibleBefore)).toBe(true);
  }
  expect(state.index.currentBatch).toBe(state.index.batches.length - 1);
  // Snapshot → restore round-trips exactly, also through JSON.
  const snapshot = JSON.parse(JSON.stringify(snapshotConversation(state)));
  expect(restoreConversation(snapshot, state.threadId)).toStrictEqual(state);
}

describe('conversation properties', () => {
  it('random command sequences keep the index valid and agree with the array model', () => {
    fc.assert(
      fc.property(fc.array(commandArb, { maxLength: 25 }), (commands) => {
        let view = openConversation(createConversation({ threadId: 't', logId: 'l' }), []);
        let log: Message[] = [];
        let model: number[] = [];
        let modelBatches: number[][] = []; // visibleBefore of batches 1..n
        let tool: number | undefined;
        // What each replaced log position now stands for (seed 004 §3 overwrites in place).
        const latest = new Map<number, number>();
        const replacements = new Set<number>();
        const replaced = (original: number, replacement: number) => {
          latest.set(original, replacement);
          replacements.add(replacement);
        };
        const resolve = (p: number): number => (latest.has(p) ? resolve(latest.get(p)!) : p);

        for (const command of commands) {
          const before = [...model];
          const stateBefore = view.state();
          switch (command.kind) {
            case 'append': {
              const start = view.logLength();
              view.append(...command.messages);
              model.push(...command.messages.map((_, i) => start + i));
              break;
            }
            case 'reopen':
              // What a handler does between nodes: store state + log, open again.
              log = view.allMessages();
              view = openConversation(view.state(), log);
              break;
            case 'tools': {
              const previous = tool;
              const changed = previous === undefined || view.messageAt(previous)?.content !== command.content;
              view.setToolDescription({ role: 'system', content: command.content });
              if (changed) {
                tool = view.logLength() - 1;
                if (previous !== undefined) replaced(previous, tool);
                const slot = previous === undefined ? -1 : model.indexOf(previous);
                if (slot < 0) model.push(tool);
                else model[slot] = tool;
              }
              break;
            }
            case 'rollback': {
              if (command.batch > stateBefore.index.currentBatch) {
                expect(() => rollbackToBatch(stateBefore, command.batch)).toThrow(StepthreadError);
                break;
              }
              const rolled = rollbackToBatch(stateBefore, command.batch);
              if (command.batch < stateBefore.index.currentBatch) {
                // Exactly the visible list recorded right before batch k + 1 started.
                model = [...modelBatches[command.batch]!];
                modelBatches = modelBatches.slice(0, command.batch);
              }
              view = openConversation(rolled, view.allMessages());
              break;
            }
            case 'op': {
              const { config } = command;
              try {
                applyContextOperation(view, config);
              } catch (error) {
                expect(error).toBeInstanceOf(StepthreadError);
                expect(['INVALID_CONTEXT_INDEX', 'MISSING_OPERATION_CONFIG']).toContain(
                  (error as StepthreadError).code,
                );
                expect(view.state()).toEqual(stateBefore); // failed operations change nothing
                break;
              }
              const logStart = stateBefore.log.length;
              const message = (p: number) => view.messageAt(p)!;
              switch (config.operation) {
                case 'truncate':
                  model = modelTruncate(model, config.truncate!);
                  break;
                case 'insert': {
                  const { position, messages } = config.insert!;
                  const at = position === -1 ? model.length : position;
                  model.splice(at, 0, ...messages.map((_, i) => logStart + i));
                  break;
                }
                case 'replace':
                  replaced(model[config.replace!.index]!, logStart);
                  model[config.replace!.index] = logStart;
                  break;
                case 'clear': {
                  // Seed 004 §4: every system message of the log, hidden ones included, the log read as
                  // the seed's in-place replace would have left it.
                  const kept = config.clear!.keepSystemMessage
                    ? Array.from({ length: view.logLength() }, (_, p) => p)
                        .filter((p) => !replacements.has(p))
                        .map(resolve)
                        .filter((p) => message(p).role === 'system')
                    : [];
                  // The tool description is one of them, in its log place; alone without keepSystemMessage.
                  model = tool === undefined || kept.includes(tool) ? kept : [...kept, tool];
                  break;
                }
                case 'filter': {
                  const { roles, contentContains, contentExcludes } = config.filter!;
                  model = model.filter(
                    (p) =>
                      (!roles || roles.includes(message(p).role)) &&
                      (!contentContains || contentContains.every((k) => message(p).content.includes(k))) &&
                      (!contentExcludes || contentExcludes.every((k) => !message(p).content.includes(k))),
                  );
                  break;
                }
              }
              if (['truncate', 'clear', 'filter'].includes(config.operation)) {
                modelBatches.push(before);
                // Truncate and filter only hide: survivors keep their relative order (clear may bring
                // hidden system messages back, and the tool description).
                if (config.operation !== 'clear') expect(isSubsequence(model, before)).toBe(true);
              }
              break;
            }
          }
          expect(positionsOf(view.state().index.visible)).toEqual(model);
          expect(
            view
              .state()
              .index.batches.slice(1)
              .map((b) => positionsOf(b.visibleBefore)),
          ).toEqual(modelBatches);
          checkInvariants(view);
        }
      }),
      { numRuns: 300 },
    );
  });
});
