/**
 * examples/support-triage with a real provider: the same file with its profile switched to `openai`,
 * against a local chat-completions server that asks for the `tenure` tool, then answers. The tool
 * runs in the sandbox, a person approves, CODE computes the credit, and the reply is the model's.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Workflow } from '../../engine/model/schema.ts';
import { textReply, toolCallReply } from '../functions/llm/servers/openai-replies.ts';
import { type ScriptedServer, startScriptedServer } from '../functions/llm/servers/scripted-server.ts';
import { type E2e, example, startE2e } from './helpers.ts';

let e2e: E2e;
let model: ScriptedServer;
beforeAll(async () => {
  [e2e, model] = await Promise.all([startE2e('support-triage-openai'), startScriptedServer()]);
});
afterAll(async () => {
  await Promise.all([e2e.close(), model.close()]);
});

const TICKET = { ticket: { subject: 'Charged twice this month', customer: 'Ada', monthlyFee: 30 } };

function withOpenAi(workflow: Workflow, baseUrl: string): Workflow {
  return { ...workflow, profiles: { default: { provider: 'openai', model: 'test-model', baseUrl } } };
}

describe('examples/support-triage on the openai provider', () => {
  it('runs the tool call, the approval, the CODE node and the model reply', async () => {
    model.reply(
      toolCallReply([{ id: 'call_1', name: 'tenure', arguments: { since: 2019, now: 2025 } }], {
        prompt: 50,
        completion: 9,
      }),
      textReply('billing', { prompt: 70, completion: 1 }),
      textReply('Refunded, plus a 6 EUR credit. Sorry, Ada!', { prompt: 90, completion: 12 }),
    );
    const workflow = withOpenAi(example('support-triage'), `${model.url}/v1`);
    const outcome = await e2e.runtime
      .prepare(workflow)
      .run(TICKET, { answerInteraction: async () => ({ kind: 'approve' }) });

    expect(outcome.error).toBeUndefined();
    expect(outcome.output).toEqual({
      category: 'billing',
      approved: true,
      credit: { amount: 6, currency: 'EUR' },
      reply: 'Refunded, plus a 6 EUR credit. Sorry, Ada!',
    });
    const conversation = await e2e.conversation(outcome.threadId);
    expect(conversation.map(({ role, content }) => ({ role, content }))).toEqual([
      { role: 'user', content: 'Classify this ticket as billing or technical: Charged twice this month' },
      { role: 'assistant', content: '' },
      { role: 'tool', content: '{"years":6}' },
      { role: 'assistant', content: 'billing' },
      { role: 'user', content: 'Approved.' },
      { role: 'user', content: 'Write the reply to Ada. Credit granted: 6 EUR.' },
      { role: 'assistant', content: 'Refunded, plus a 6 EUR credit. Sorry, Ada!' },
    ]);

    // Three chat-completions calls: the tool was offered to the classifier only, and its result went back
    // in the wire format the API expects.
    expect(model.requests).toHaveLength(3);
    const bodies = model.requests.map(
      (r) => r.body as { tools?: { function: { name: string } }[]; messages: { role: string }[] },
    );
    expect(bodies[0]!.tools?.map((t) => t.function.name)).toEqual(['tenure']);
    expect(bodies[1]!.messages.at(-1)).toMatchObject({
      role: 'tool',
      tool_call_id: 'call_1',
      content: '{"years":6}',
    });
    expect(bodies[2]!.tools).toBeUndefined();
  });
});
