/**
 * The trace context a run carries (functions/telemetry/trace-context.ts), without the SDK: what a Task
 * passes on when nothing is traced in its process, so a definition compiled with the trace context
 * never meets a FORK output without `fork.traceparent`.
 */
import { describe, expect, it } from 'vitest';
import { taskInfoOf } from '../../../functions/telemetry/task-info.ts';
import {
  formatTraceparent,
  parseTraceparent,
  runSpanOf,
  withTraceContext,
} from '../../../functions/telemetry/trace-context.ts';

const envelope = {
  executionId: 'exec-1',
  workflowId: 'w',
  workflowVersion: 1,
  rootThreadId: 't',
  threadId: 't',
  step: 2,
  maxSteps: 10,
};

describe('the trace context a run carries', () => {
  it('reads only well-formed version-00 traceparents', () => {
    const text = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    expect(parseTraceparent(text)).toEqual({
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
      spanId: '00f067aa0ba902b7',
      flags: 1,
    });
    expect(formatTraceparent(parseTraceparent(text)!)).toBe(text);
    for (const bad of [
      undefined,
      42,
      '01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      '00-00000000000000000000000000000000-00f067aa0ba902b7-01',
      '00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01',
    ]) {
      expect(parseTraceparent(bad), String(bad)).toBeUndefined();
    }
  });

  it('derives a run’s span from its execution id, in the caller’s trace when given', () => {
    expect(runSpanOf('exec-1')).toEqual(runSpanOf('exec-1'));
    expect(runSpanOf('exec-1').traceId).not.toBe(runSpanOf('exec-2').traceId);
    const caller = parseTraceparent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00')!;
    expect(runSpanOf('exec-1', caller)).toEqual({
      traceId: caller.traceId,
      spanId: runSpanOf('exec-1').spanId,
      flags: 0,
    });
  });

  it('untraced: a FORK compiled with the trace context still gives its branches one', () => {
    const event = { action: 'execute', node: { id: 'split', type: 'FORK' }, envelope, traceContext: true };
    const out = withTraceContext(
      taskInfoOf(event),
      { ...envelope, step: 3, fork: { children: ['c0', 'c1'] } },
      false,
    );
    const run = formatTraceparent(runSpanOf('exec-1'));
    expect(out).toMatchObject({ traceparent: run, fork: { children: ['c0', 'c1'], traceparent: run } });
  });

  it('untraced: the thread’s traceparent is passed on, and a run without one is left as it is', () => {
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const next = { ...envelope, step: 3 };
    const carried = {
      action: 'execute',
      node: { id: 'n', type: 'LLM' },
      envelope: { ...envelope, traceparent },
    };
    expect(withTraceContext(taskInfoOf(carried), next, false)).toEqual({ ...next, traceparent });
    const plain = { action: 'execute', node: { id: 'n', type: 'LLM' }, envelope };
    expect(withTraceContext(taskInfoOf(plain), next, false)).toBe(next);
  });
});
