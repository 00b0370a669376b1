/**
 * Publishes thread and node events to EventBridge for consumers outside the run.
 *
 * Best effort, after the commit: the commit point of a step is its thread update, which records
 * the events with the thread. Publishing comes after it and never fails the node — a lost or
 * rejected entry is logged (by ids, never its payload) and the run goes on; the thread keeps the
 * authoritative record. A retry of a step that already committed publishes its events again, so
 * delivery is at least once, which is what EventBridge consumers handle anyway (EventBridge itself
 * delivers at least once).
 */
import type { PutEventsCommandInput, PutEventsCommandOutput } from '@aws-sdk/client-eventbridge';
import type { StepthreadEvent } from '../../engine/events.ts';
import { type AwsTarget, clientConfig } from '../aws/target.ts';

export interface PublishContext {
  readonly executionId?: string;
}

export interface EventPublisher {
  publish(events: readonly StepthreadEvent[], context: PublishContext): Promise<void>;
}

/** One PutEvents call; loaded on first use so a handler's init loads no EventBridge client. */
export type PutEvents = (input: PutEventsCommandInput) => Promise<PutEventsCommandOutput>;

export type Warn = (message: string, fields: Record<string, unknown>) => void;

/** PutEvents accepts at most 10 entries per request. */
export const PUT_EVENTS_BATCH = 10;
export const EVENT_SOURCE = 'stepthread';
export const EVENT_BUS_ENV = 'STEPTHREAD_EVENT_BUS';

const consoleWarn: Warn = (message, fields) => console.warn(JSON.stringify({ message, ...fields }));

export const noopPublisher: EventPublisher = { publish: async () => {} };

/** What identifies an event in a log line: no payload (a hook's payload may carry anything). */
function idsOf(event: StepthreadEvent): Record<string, string> {
  return {
    type: event.type,
    threadId: event.threadId,
    ...('nodeId' in event && event.nodeId !== undefined ? { nodeId: event.nodeId } : {}),
  };
}

export function createEventBridgePublisher(options: {
  readonly busName: string;
  /** Loads (once) what sends PutEvents; called on the first publish, not before. */
  readonly load: () => Promise<PutEvents>;
  readonly warn?: Warn;
}): EventPublisher {
  const warn = options.warn ?? consoleWarn;
  let loaded: Promise<PutEvents> | undefined;
  const putEvents = () => {
    loaded ??= options.load().catch((error: unknown) => {
      loaded = undefined; // a failed import must not disable publishing for the container's life
      throw error;
    });
    return loaded;
  };
  return {
    async publish(events, context) {
      for (let i = 0; i < events.length; i += PUT_EVENTS_BATCH) {
        const chunk = events.slice(i, i + PUT_EVENTS_BATCH);
        try {
          const send = await putEvents();
          const output = await send({
            Entries: chunk.map((event) => ({
              EventBusName: options.busName,
              Source: EVENT_SOURCE,
              DetailType: event.type,
              Detail: JSON.stringify(event),
            })),
          });
          if ((output.FailedEntryCount ?? 0) === 0) continue;
          // Entries come back in request order; a failed one carries an ErrorCode.
          const failed = chunk.flatMap((event, n) => {
            const code = output.Entries?.[n]?.ErrorCode;
            return code === undefined ? [] : [{ ...idsOf(event), errorCode: code }];
          });
          warn('events not published', { ...context, failedEntryCount: output.FailedEntryCount, failed });
        } catch (error) {
          warn('events not published', {
            ...context,
            errorName: error instanceof Error ? error.name : 'unknown',
            failed: chunk.map(idsOf),
          });
        }
      }
    },
  };
}

/** PutEvents through an EventBridge client, imported and built on the first call. */
export function loadPutEvents(target: AwsTarget): () => Promise<PutEvents> {
  return async () => {
    const { EventBridgeClient, PutEventsCommand } = await import('@aws-sdk/client-eventbridge');
    const client = new EventBridgeClient(clientConfig(target, 'events'));
    return (input) => client.send(new PutEventsCommand(input));
  };
}

/** The EventBridge publisher when STEPTHREAD_EVENT_BUS names a bus; a no-op otherwise (local runs). */
export function publisherFromEnvironment(
  env: Readonly<Record<string, string | undefined>>,
  target: AwsTarget,
  warn?: Warn,
): EventPublisher {
  const busName = env[EVENT_BUS_ENV]?.trim();
  if (!busName) return noopPublisher;
  return createEventBridgePublisher({ busName, load: loadPutEvents(target), ...(warn ? { warn } : {}) });
}

/**
 * Publishes what a commit just recorded. Every writer of events calls this right after its commit;
 * a publisher that throws is logged, never the node's failure.
 */
export async function publishCommitted(
  publisher: EventPublisher | undefined,
  events: readonly StepthreadEvent[],
  context: PublishContext,
): Promise<void> {
  if (publisher === undefined || events.length === 0) return;
  try {
    await publisher.publish(events, context);
  } catch (error) {
    consoleWarn('events not published', {
      ...context,
      errorName: error instanceof Error ? error.name : 'unknown',
      count: events.length,
    });
  }
}
