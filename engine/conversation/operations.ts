/**
 * The five context-processor operations (seed 004) over a ConversationView.
 *
 * All of them work on *visible positions* (what the model sees), never on log positions, and none
 * edits or removes a logged message: the log is shared with forks and copies. Each operation checks
 * its runtime values before changing anything, so a failed operation leaves the view untouched.
 */
import { StepthreadError } from '../errors.ts';
import {
  type ClearConfig,
  CONTEXT_OPERATIONS,
  type ContextOperation,
  type ContextProcessorConfig,
  type FilterConfig,
  type InsertConfig,
  type Message,
  type ReplaceConfig,
  type TruncateConfig,
} from '../model/schema.ts';
import { concatRuns, positionsOf, runsFromPositions, sliceRuns } from './runs.ts';
import { type ConversationView, parseMessage } from './view.ts';

export interface ContextOperationResult {
  readonly operation: ContextOperation;
  /** Visible messages after the operation. */
  readonly visibleCount: number;
}

function assertCount(name: string, value: unknown): asserts value is number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    throw new StepthreadError(
      'INVALID_CONTEXT_INDEX',
      `${name} must be a non-negative integer, got ${value}`,
    );
  }
}

function missing(operation: ContextOperation, why: string): StepthreadError {
  return new StepthreadError('MISSING_OPERATION_CONFIG', `${operation}: ${why}`);
}

/**
 * Keeps part of the visible messages. Options combine and apply in the seed's order — keepFirst,
 * keepLast, removeFirst, removeLast, range — each to the result of the previous. Counts larger
 * than what is visible clamp (keepLast 5 of 3 keeps 3); range is `[start, end)` and clamps too.
 * Starts a new batch.
 */
export function truncateConversation(view: ConversationView, config: TruncateConfig | undefined): void {
  if (config === undefined) throw missing('truncate', 'the truncate config is required');
  const { keepFirst, keepLast, removeFirst, removeLast, range } = config;
  if ([keepFirst, keepLast, removeFirst, removeLast, range].every((v) => v === undefined)) {
    throw missing('truncate', 'give at least one of keepFirst, keepLast, removeFirst, removeLast, range');
  }
  let runs = [...view.visibleRuns()];
  const count = () => runs.reduce((n, [s, e]) => n + e - s, 0);
  if (keepFirst !== undefined) {
    assertCount('truncate.keepFirst', keepFirst);
    runs = sliceRuns(runs, 0, keepFirst);
  }
  if (keepLast !== undefined) {
    assertCount('truncate.keepLast', keepLast);
    // Explicit bounds: slice(-0) would keep everything.
    const n = count();
    runs = sliceRuns(runs, Math.max(0, n - keepLast), n);
  }
  if (removeFirst !== undefined) {
    assertCount('truncate.removeFirst', removeFirst);
    runs = sliceRuns(runs, removeFirst, count());
  }
  if (removeLast !== undefined) {
    assertCount('truncate.removeLast', removeLast);
    runs = sliceRuns(runs, 0, Math.max(0, count() - removeLast));
  }
  if (range !== undefined) {
    assertCount('truncate.range.start', range.start);
    assertCount('truncate.range.end', range.end);
    if (range.start > range.end) {
      throw new StepthreadError(
        'INVALID_CONTEXT_INDEX',
        `truncate.range start ${range.start} is after end ${range.end}`,
      );
    }
    runs = sliceRuns(runs, range.start, range.end);
  }
  view.setVisible(runs, { newBatch: true });
}

/**
 * Appends the messages to the log and shows them at visible `position` (−1: at the end). A position
 * past the visible count is an error rather than a silent append. Does not start a batch.
 */
export function insertMessages(view: ConversationView, config: InsertConfig | undefined): void {
  if (config === undefined) throw missing('insert', 'the insert config is required');
  if (!Array.isArray(config.messages)) throw missing('insert', 'insert.messages must be a list of messages');
  const count = view.visibleCount();
  const { position } = config;
  if (position !== -1) assertCount('insert.position', position);
  if (position > count) {
    throw new StepthreadError(
      'INVALID_CONTEXT_INDEX',
      `insert.position ${position} is past the ${count} visible messages (use -1 to append)`,
    );
  }
  const at = position === -1 ? count : position;
  const messages: Message[] = config.messages.map((m, i) => parseMessage(m, `insert.messages[${i}]`));
  const inserted = view.appendHidden(messages);
  if (inserted === undefined) return;
  const runs = view.visibleRuns();
  view.setVisible(concatRuns(sliceRuns(runs, 0, at), [inserted], sliceRuns(runs, at, count)), {
    newBatch: false,
  });
}

/**
 * Shows `message` in place of the visible message at `index`. Unlike the seed, which overwrote the
 * logged message, the new message is appended and the slot points at it: the old entry stays intact
 * for forks, copies and rollback, and what the model sees is the same. Does not start a batch.
 */
export function replaceMessage(view: ConversationView, config: ReplaceConfig | undefined): void {
  if (config === undefined) throw missing('replace', 'the replace config is required');
  const count = view.visibleCount();
  assertCount('replace.index', config.index);
  if (config.index >= count) {
    throw new StepthreadError(
      'INVALID_CONTEXT_INDEX',
      `replace.index ${config.index} is outside the ${count} visible messages`,
    );
  }
  const original = view.positionAt(config.index)!;
  const replacement = view.appendHidden([parseMessage(config.message, 'replace.message')])!;
  view.recordReplacement(original, replacement[0]);
  const runs = view.visibleRuns();
  view.setVisible(
    concatRuns(sliceRuns(runs, 0, config.index), [replacement], sliceRuns(runs, config.index + 1, count)),
    { newBatch: false },
  );
}

/**
 * Hides the conversation. With keepSystemMessage (default true) every system message of the log
 * shows, in log order, as seed 004 §4 takes them from all messages (`getAllMessages()`): one an earlier
 * truncate or filter hid comes back. Either way the tool-description message, if set, stays visible
 * (once), so the model can still call tools: it is a system message of the log, so with
 * keepSystemMessage it shows in its log place, after the system messages before it (the seed's
 * startNewBatchWithInitialTools appends it with addMessage), and without it alone. Starts a new batch.
 * The log is read as the seed's in-place replace would have left it: a replaced message counts as
 * its replacement, in the original's place (so a system message replaced by a user one is not kept,
 * and one replaced by another system message shows once, the new text).
 */
export function clearConversation(view: ConversationView, config: ClearConfig | undefined): void {
  const keepSystemMessage = config?.keepSystemMessage ?? true;
  const toolDescription = view.toolDescriptionPosition();
  const positions = keepSystemMessage
    ? view.resolvedLogPositions().filter((p) => view.messageAt(p)?.role === 'system')
    : [];
  // A replace may have put another message in the description's place; the seed would add it again.
  if (toolDescription !== undefined && !positions.includes(toolDescription)) positions.push(toolDescription);
  view.setVisible(runsFromPositions(positions), { newBatch: true });
}

/**
 * Keeps the visible messages that pass every given condition (AND):
 * - roles: the message's role is one of them (an empty list keeps nothing);
 * - contentContains: the content includes *every* keyword — the seed's check, which rejected a
 *   message as soon as one keyword was missing; we keep its semantics so workflows behave the same;
 * - contentExcludes: the content includes none of the keywords.
 * Matching is case-sensitive substring matching, as in the seed. Starts a new batch.
 */
export function filterConversation(view: ConversationView, config: FilterConfig | undefined): void {
  if (config === undefined) throw missing('filter', 'the filter config is required');
  const { roles, contentContains, contentExcludes } = config;
  if (roles === undefined && contentContains === undefined && contentExcludes === undefined) {
    throw missing('filter', 'give at least one of roles, contentContains, contentExcludes');
  }
  const keep = (message: Message): boolean =>
    (roles === undefined || roles.includes(message.role)) &&
    (contentContains === undefined || contentContains.every((k) => message.content.includes(k))) &&
    (contentExcludes === undefined || !contentExcludes.some((k) => message.content.includes(k)));
  const positions = positionsOf(view.visibleRuns()).filter((p) => keep(view.messageAt(p)!));
  view.setVisible(runsFromPositions(positions), { newBatch: true });
}

/** Applies a CONTEXT_PROCESSOR node's operation to the view. */
export function applyContextOperation(
  view: ConversationView,
  config: ContextProcessorConfig,
): ContextOperationResult {
  const { operation } = config;
  switch (operation) {
    case 'truncate':
      truncateConversation(view, config.truncate);
      break;
    case 'insert':
      insertMessages(view, config.insert);
      break;
    case 'replace':
      replaceMessage(view, config.replace);
      break;
    case 'clear':
      clearConversation(view, config.clear);
      break;
    case 'filter':
      filterConversation(view, config.filter);
      break;
    default:
      throw new StepthreadError(
        'INVALID_CONTEXT_OPERATION',
        `unknown context operation ${JSON.stringify(operation)} (expected one of ${CONTEXT_OPERATIONS.join(', ')})`,
      );
  }
  return { operation, visibleCount: view.visibleCount() };
}
