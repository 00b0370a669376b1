/**
 * Watching what reaches an EventBridge bus in moto: an SQS queue as a rule's target, read through
 * SQS's JSON protocol by hand (the project has no SQS client; these are for observing only).
 */
import { type EventBridgeClient, PutRuleCommand, PutTargetsCommand } from '@aws-sdk/client-eventbridge';
import { REGION } from './moto.ts';

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

export interface BusWatch {
  /** SQS `action` on moto (its JSON 1.0 protocol). */
  sqs(action: string, body: Record<string, unknown>): Promise<Record<string, unknown>>;
  /** A new queue, by name. */
  queue(name: string): Promise<{ url: string; arn: string }>;
  /** A queue that receives what the rule `rule` matches on the bus. */
  observeBus(queueName: string, rule: string, pattern: unknown): Promise<{ url: string }>;
  /** Every message the queue holds now, as parsed JSON. */
  drain(url: string): Promise<Record<string, unknown>[]>;
  /** The details of the events on the queue about `threadId`, waiting up to 10 s for the first. */
  eventsOfThread(url: string, threadId: string): Promise<Record<string, unknown>[]>;
}

export function busWatch(endpoint: string, events: EventBridgeClient, bus = 'stepthread-events'): BusWatch {
  const sqs: BusWatch['sqs'] = async (action, body) => {
    const response = await fetch(endpoint, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-amz-json-1.0',
        'x-amz-target': `AmazonSQS.${action}`,
        // moto routes by the credential scope of the signature; it does not verify the signature.
        authorization: `AWS4-HMAC-SHA256 Credential=test/20260101/${REGION}/sqs/aws4_request, SignedHeaders=host, Signature=0`,
      },
      body: JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`SQS ${action}: ${response.status} ${text}`);
    return text ? (JSON.parse(text) as Record<string, unknown>) : {};
  };
  const queue: BusWatch['queue'] = async (name) => {
    const { QueueUrl } = (await sqs('CreateQueue', { QueueName: name })) as { QueueUrl: string };
    const { Attributes } = (await sqs('GetQueueAttributes', {
      QueueUrl,
      AttributeNames: ['QueueArn'],
    })) as { Attributes: { QueueArn: string } };
    return { url: QueueUrl, arn: Attributes.QueueArn };
  };
  const drain: BusWatch['drain'] = async (url) => {
    const messages: Record<string, unknown>[] = [];
    for (;;) {
      const { Messages } = (await sqs('ReceiveMessage', { QueueUrl: url, MaxNumberOfMessages: 10 })) as {
        Messages?: { Body: string; ReceiptHandle: string }[];
      };
      if (!Messages?.length) return messages;
      for (const message of Messages) {
        messages.push(JSON.parse(message.Body) as Record<string, unknown>);
        await sqs('DeleteMessage', { QueueUrl: url, ReceiptHandle: message.ReceiptHandle });
      }
    }
  };
  return {
    sqs,
    queue,
    drain,
    async observeBus(queueName, rule, pattern) {
      const observed = await queue(queueName);
      await events.send(
        new PutRuleCommand({ Name: rule, EventBusName: bus, EventPattern: JSON.stringify(pattern) }),
      );
      await events.send(
        new PutTargetsCommand({
          Rule: rule,
          EventBusName: bus,
          Targets: [{ Id: 'observed', Arn: observed.arn }],
        }),
      );
      return observed;
    },
    async eventsOfThread(url, threadId) {
      for (let waited = 0; ; waited += 250) {
        const details = (await drain(url)).map((event) => event.detail as Record<string, unknown>);
        const about = details.filter((detail) => detail.threadId === threadId);
        if (about.length > 0 || waited >= 10_000) return about;
        await sleep(250);
      }
    },
  };
}
