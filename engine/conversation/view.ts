/**
 * A working view over a conversation: its state plus the messages of its log. Handlers open one,
 * read and append messages, apply context operations, then take `state()` (to store with the
 * thread) and `appendedMessages()` (the one new segment the conversation store persists).
 */
import { StepthreadError } from '../errors.ts';
import { type Message, messageSchema } from '../model/schema.ts';
import {
  concatRuns,
  indexOfPosition,
  positionAt,
  positionsOf,
  runsLength,
  runsProblem,
  sliceRuns,
} from './runs.ts';
import { TOOL_DESCRIPTION_HEADING } from './tool-description.ts';
import type { BatchRecord, ConversationState, Run } from './types.ts';

/** Parses a message into a private copy, so later edits to the caller's object cannot reach the log. */
export function parseMessage(value: unknown, where: string): Message {
  const parsed = messageSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const detail = issue ? `${issue.path.join('.') || 'message'}: ${issue.message}` : 'invalid';
    throw new StepthreadError('INVALID_MESSAGE', `${where} is not a valid message (${detail})`);
  }
  return parsed.data;
}

export class ConversationView {
  readonly #base: readonly Message[];
  readonly #appended: Message[] = [];
  #state: ConversationState;
  /** Working copy of the visible runs; mutated in place so appending is O(1). */
  #visible: Run[];

  private constructor(state: ConversationState, base: readonly Message[]) {
    this.#state = state;
    this.#base = base;
    this.#visible = [...state.index.visible];
  }

  /** Opens a view. `log` must hold at least the state's `log.length` messages; any beyond are ignored. */
  static open(state: ConversationState, log: readonly Message[]): ConversationView {
    if (log.length < state.log.length) {
      throw new StepthreadError(
        'CONVERSATION_LOG_MISMATCH',
        `conversation of thread ${state.threadId} needs ${state.log.length} log messages, got ${log.length}`,
      );
    }
    // Messages past our length belong to another conversation sharing the log's prefix.
    const base = log.length === state.log.length ? log : log.slice(0, state.log.length);
    return new ConversationView(state, base);
  }

  /** The current state (plain data, safe to store). */
  state(): ConversationState {
    return { ...this.#state, index: { ...this.#state.index, visible: [...this.#visible] } };
  }

  logLength(): number {
    return this.#base.length + this.#appended.length;
  }

  /** Message at a log position. */
  messageAt(position: number): Message | undefined {
    const baseLength = this.#base.length;
    return position < baseLength ? this.#base[position] : this.#appended[position - baseLength];
  }

  /** The messages the model sees, in display order. */
  visibleMessages(): Message[] {
    return positionsOf(this.#visible).map((p) => this.messageAt(p)!);
  }

  visibleCount(): number {
    return runsLength(this.#visible);
  }

  /** Every message in the log, visible or not. */
  allMessages(): Message[] {
    return [...this.#base, ...this.#appended];
  }

  /** Messages appended since the view was opened: exactly what the store must persist. */
  appendedMessages(): readonly Message[] {
    return [...this.#appended];
  }

  /** Appends messages to the log and shows them at the end of the visible list. */
  append(...messages: readonly Message[]): void {
    const run = this.appendHidden(messages);
    if (run === undefined) return;
    const last = this.#visible[this.#visible.length - 1];
    if (last !== undefined && last[1] === run[0]) this.#visible[this.#visible.length - 1] = [last[0], run[1]];
    else this.#visible.push(run);
  }

  // The methods below edit the index directly; context operations are built from them.

  /** Appends messages to the log without showing them; returns their log positions as a run. */
  appendHidden(messages: readonly Message[]): Run | undefined {
    const start = this.logLength();
    const parsed = messages.map((m, i) => parseMessage(m, `message ${i}`));
    if (parsed.length === 0) return undefined;
    this.#appended.push(...parsed);
    this.#state = { ...this.#state, log: { ...this.#state.log, length: this.logLength() } };
    return [start, this.logLength()];
  }

  visibleRuns(): readonly Run[] {
    return this.#visible;
  }

  /**
   * Replaces the visible runs (normalised on the way in). With `newBatch`, first records a batch
   * boundary holding the runs visible before this change, so a rollback can restore them.
   */
  setVisible(runs: readonly Run[], options: { newBatch: boolean }): void {
    const next = concatRuns(runs);
    const problem = runsProblem(next, this.logLength());
    if (problem !== undefined) throw new StepthreadError('INVALID_CONTEXT_INDEX', problem);
    if (options.newBatch) {
      const { index } = this.#state;
      const record: BatchRecord = { boundary: this.logLength(), visibleBefore: [...this.#visible] };
      this.#state = {
        ...this.#state,
        index: { ...index, batches: [...index.batches, record], currentBatch: index.currentBatch + 1 },
      };
    }
    this.#visible = next;
  }

  /** Log position of the tool-description message, if one was set. */
  toolDescriptionPosition(): number | undefined {
    return this.#state.toolDescription;
  }

  /**
   * Sets the tool-description system message (the one `clear` keeps). It is appended to the log;
   * if the previous description is visible, its slot now shows the new one, otherwise the new one
   * is shown at the end (where the seed's addMessage put it). Setting an equal message is a no-op,
   * so handlers can call this on every LLM turn. Until one is set, a system message of the log that
   * starts with "Available tools:" is the description (seed 004 §4 adds one only when none exists):
   * then nothing is added, and `clear` treats that message as the system message it is.
   */
  setToolDescription(message: Message): void {
    const parsed = parseMessage(message, 'tool description');
    if (parsed.role !== 'system') {
      throw new StepthreadError('INVALID_MESSAGE', 'the tool description must be a system message');
    }
    const previous = this.#state.toolDescription;
    if (
      previous === undefined &&
      this.resolvedLogPositions().some((p) => isToolDescription(this.messageAt(p)))
    )
      return;
    const current = previous === undefined ? undefined : this.messageAt(previous);
    if (current !== undefined && sameMessage(current, parsed)) return;
    const run = this.appendHidden([parsed])!;
    const position = run[0];
    const slot = previous === undefined ? undefined : indexOfPosition(this.#visible, previous);
    const runs =
      slot === undefined
        ? concatRuns(this.#visible, [run])
        : concatRuns(sliceRuns(this.#visible, 0, slot), [run], sliceRuns(this.#visible, slot + 1, Infinity));
    this.setVisible(runs, { newBatch: false });
    this.#state = { ...this.#state, toolDescription: position };
    if (previous !== undefined) this.recordReplacement(previous, position);
  }

  /**
   * Records that the message at log position `original` is superseded by the one at `replacement`
   * (see ConversationState#replaced).
   */
  recordReplacement(original: number, replacement: number): void {
    const replaced = [...(this.#state.replaced ?? []), [original, replacement] as const];
    this.#state = { ...this.#state, replaced };
  }

  /**
   * The log as the seed's in-place replace would have left it: one log position per message, in log
   * order, each original resolved to its latest replacement and the replacements themselves left out.
   */
  resolvedLogPositions(): number[] {
    const pairs = this.#state.replaced ?? [];
    const latest = new Map<number, number>();
    const replacements = new Set<number>();
    for (const [original, replacement] of pairs) {
      latest.set(original, replacement);
      replacements.add(replacement);
    }
    const resolve = (position: number): number => {
      let current = position;
      // Pairs only point forward in the log, so this ends.
      for (let next = latest.get(current); next !== undefined; next = latest.get(current)) current = next;
      return current;
    };
    const out: number[] = [];
    for (let p = 0; p < this.logLength(); p++) if (!replacements.has(p)) out.push(resolve(p));
    return out;
  }

  /** Log position shown at a visible position, if any. */
  positionAt(index: number): number | undefined {
    return positionAt(this.#visible, index);
  }
}

function isToolDescription(message: Message | undefined): boolean {
  return message?.role === 'system' && message.content.startsWith(TOOL_DESCRIPTION_HEADING);
}

function sameMessage(a: Message, b: Message): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** Opens a working view over `state` whose log holds (at least) its first `state.log.length` messages. */
export function openConversation(state: ConversationState, log: readonly Message[]): ConversationView {
  return ConversationView.open(state, log);
}

/** Sets the tool-description system message of the conversation (see ConversationView#setToolDescription). */
export function setToolDescription(view: ConversationView, message: Message): void {
  view.setToolDescription(message);
}
