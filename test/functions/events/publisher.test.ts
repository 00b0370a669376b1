import type { PutEventsCommandInput, PutEventsCommandOutput } from '@aws-sdk/client-eventbridge';
import { describe, expect, it, vi } from 'vitest';
import { createEvent, type StepthreadEvent } from '../../../engine/events.ts';
import {
  createEventBridgePublisher,
  noopPublisher,
  type PutEvents,
  publishCommitted,
  publisherFromEnvironment,
} from '../../../functions/events/publisher.ts';

const base = { threadId: 't1', workflowId: 'wf', at: '2025-01-01T00:00:00.000Z' };

function variableEvents(count: number): StepthreadEvent[] {
  return Array.from({ length: count }, (_, i) =>
    createEvent('VARIABLE_CHANGED', { ...base, nodeId: 'v', name: `x${i}`, scope: 'thread' }),
  );
}

/** A stub PutEvents recording each request; `fail(n)` says which entries of a request to reject. */
function stubPutEvents(fail: (index: number) => boolean = () => false) {
  const requests: PutEventsCommandInput[] = [];
  const send: PutEvents = async (input) => {
    requests.push(input);
    const entries = (input.Entries ?? []).map((_, i) =>
      fail(i) ? { ErrorCode: 'InternalFailure', ErrorMessage: 'nope' } : { EventId: `e${i}` },
    );
    const failed = entries.filter((e) => 'ErrorCode' in e).length;
    return { FailedEntryCount: failed, Entries: entries, $metadata: {} } as PutEventsCommandOutput;
  };
  return { requests, send };
}

describe('EventBridge publisher', () => {
  it('sends events in PutEvents requests of at most 10 entries, in order, to the configured bus', async () => {
    const stub = stubPutEvents();
    const publisher = createEventBridgePublisher({ busName: 'bus-1', load: async () => stub.send });
    const events = variableEvents(23);
    await publisher.publish(events, { executionId: 'exec-1' });

    expect(stub.requests.map((r) => r.Entries?.length)).toEqual([10, 10, 3]);
    const entries = stub.requests.flatMap((r) => r.Entries ?? []);
    expect(entries[0]).toEqual({
      EventBusName: 'bus-1',
      Source: 'stepthread',
      DetailType: 'VARIABLE_CHANGED',
      Detail: JSON.stringify(events[0]),
    });
    expect(entries.map((e) => JSON.parse(e.Detail!))).toEqual(events);
  });

  it('loads the client on the first publish only, and only once', async () => {
    const stub = stubPutEvents();
    const load = vi.fn(async () => stub.send);
    const publisher = createEventBridgePublisher({ busName: 'bus', load });
    expect(load).not.toHaveBeenCalled();
    await publisher.publish(variableEvents(1), {});
    await publisher.publish(variableEvents(2), {});
    expect(load).toHaveBeenCalledTimes(1);
    expect(stub.requests).toHaveLength(2);
  });

  it('logs rejected entries by their ids, without payloads, and does not throw', async () => {
    const stub = stubPutEvents((i) => i === 1);
    const warn = vi.fn();
    const publisher = createEventBridgePublisher({ busName: 'bus', load: async () => stub.send, warn });
    await expect(publisher.publish(variableEvents(3), { executionId: 'exec-2' })).resolves.toBeUndefined();

    expect(warn).toHaveBeenCalledTimes(1);
    const [, fields] = warn.mock.calls[0]!;
    expect(fields).toEqual({
      executionId: 'exec-2',
      failedEntryCount: 1,
      failed: [{ type: 'VARIABLE_CHANGED', threadId: 't1', nodeId: 'v', errorCode: 'InternalFailure' }],
    });
    expect(JSON.stringify(fields)).not.toContain('x1');
  });

  it('keeps publishing the other chunks when one request throws, and a failed load is retried later', async () => {
    const stub = stubPutEvents();
    let calls = 0;
    const flaky: PutEvents = async (input) => {
      calls += 1;
      if (calls === 1) throw Object.assign(new Error('throttled'), { name: 'ThrottlingException' });
      return stub.send(input);
    };
    const warn = vi.fn();
    const publisher = createEventBridgePublisher({ busName: 'bus', load: async () => flaky, warn });
    await publisher.publish(variableEvents(12), {});
    expect(stub.requests.map((r) => r.Entries?.length)).toEqual([2]);
    expect(warn.mock.calls[0]![1]).toMatchObject({ errorName: 'ThrottlingException' });

    const load = vi
      .fn<() => Promise<PutEvents>>()
      .mockRejectedValueOnce(new Error('import failed'))
      .mockResolvedValue(stub.send);
    const retrying = createEventBridgePublisher({ busName: 'bus', load, warn });
    await retrying.publish(variableEvents(1), {});
    await retrying.publish(variableEvents(1), {});
    expect(load).toHaveBeenCalledTimes(2);
    expect(stub.requests.map((r) => r.Entries?.length)).toEqual([2, 1]);
  });

  it('is a no-op without STEPTHREAD_EVENT_BUS (local runs)', () => {
    expect(publisherFromEnvironment({}, { kind: 'aws' })).toBe(noopPublisher);
    expect(publisherFromEnvironment({ STEPTHREAD_EVENT_BUS: 'b' }, { kind: 'aws' })).not.toBe(noopPublisher);
  });
});

describe('publishCommitted', () => {
  it('swallows a publisher that throws', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const publisher = { publish: vi.fn(async () => Promise.reject(new Error('down'))) };
    await expect(publishCommitted(publisher, variableEvents(1), {})).resolves.toBeUndefined();
    expect(publisher.publish).toHaveBeenCalledTimes(1);
    expect(warn).toHaveBeenCalledTimes(1);
    warn.mockRestore();
  });
});
