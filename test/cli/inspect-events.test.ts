/**
 * `inspect --events`: each thread's events, in the order they were recorded (seed 003 §2.1: around
 * every node NODE_STARTED, the BEFORE_EXECUTE hooks, the node's own events, the AFTER_EXECUTE hooks,
 * NODE_COMPLETED or NODE_FAILED), in text and JSON; without the flag none are shown.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InspectReport } from '../../cli/commands/inspect.ts';
import { runCli } from '../support/cli.ts';

const WORKFLOW = {
  id: 'inspect-events',
  version: 1,
  nodes: [
    { id: 'start', type: 'START' },
    {
      id: 'note',
      type: 'CONTEXT_PROCESSOR',
      config: { operation: 'insert', insert: { position: -1, messages: [{ role: 'user', content: 'hi' }] } },
      hooks: [
        { hookType: 'BEFORE_EXECUTE', eventName: 'before-note', eventPayload: { x: 1 } },
        {
          hookType: 'AFTER_EXECUTE',
          eventName: 'after-note',
          eventPayload: { visible: '{{result.output.visibleCount}}' },
        },
      ],
    },
    { id: 'ok', type: 'USER_INTERACTION', config: { userInteractionType: 'ask_for_approval' } },
    { id: 'end', type: 'END', config: { output: 'done' } },
  ],
  edges: [
    { from: 'start', to: 'note' },
    { from: 'note', to: 'ok' },
    { from: 'ok', to: 'end' },
  ],
};

let dir: string;
let executionId: string;
let threadId: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'stepthread-inspect-events-'));
  await writeFile(join(dir, 'workflow.json'), JSON.stringify(WORKFLOW));
  const run = await cli('run', join(dir, 'workflow.json'), '--answers', '{"ok": true}', '--json');
  expect(run.code, run.stderr).toBe(0);
  ({ executionId, threadId } = JSON.parse(run.stdout));
}, 60_000);
afterAll(() => rm(dir, { recursive: true, force: true }));

const cli = (...args: string[]) => runCli([...args, '--data-dir', join(dir, 'data')], { cwd: dir });

describe('inspect --events', () => {
  it('lists each event on a line: its type, its node, then its other fields', async () => {
    const text = await cli('inspect', executionId, '--events', '--no-conversation');
    expect(text.code, text.stderr).toBe(0);
    const lines = text.stdout.split('\n');
    const from = lines.indexOf('  events (16):');
    expect(from).toBeGreaterThan(0);
    expect(lines.slice(from + 1, from + 17)).toEqual([
      '    THREAD_CREATED workflowVersion=1',
      '    THREAD_STARTED from=CREATED to=RUNNING',
      '    NODE_STARTED start nodeType=START',
      '    NODE_COMPLETED start nodeType=START status=COMPLETED',
      '    NODE_STARTED note nodeType=CONTEXT_PROCESSOR attempt=1',
      '    HOOK_TRIGGERED note hookType=BEFORE_EXECUTE eventName=before-note payload={"x":1}',
      '    CONTEXT_PROCESSED note operation=insert visibleCount=1',
      '    HOOK_TRIGGERED note hookType=AFTER_EXECUTE eventName=after-note payload={"visible":1}',
      '    NODE_COMPLETED note nodeType=CONTEXT_PROCESSOR status=COMPLETED',
      '    NODE_STARTED ok nodeType=USER_INTERACTION attempt=1',
      '    USER_INTERACTION_REQUESTED ok interactionType=ask_for_approval',
      '    USER_INTERACTION_RESPONDED ok interactionType=ask_for_approval',
      '    NODE_COMPLETED ok nodeType=USER_INTERACTION status=COMPLETED',
      '    NODE_STARTED end nodeType=END attempt=1',
      '    NODE_COMPLETED end nodeType=END status=COMPLETED',
      '    THREAD_COMPLETED from=RUNNING to=COMPLETED',
    ]);
  });

  it('--json gives each thread its events as recorded', async () => {
    const result = await cli('inspect', executionId, '--events', '--json');
    expect(result.code, result.stderr).toBe(0);
    const report = JSON.parse(result.stdout) as InspectReport;
    const events = report.threads[0]!.events!;
    expect(events.every((event) => event.threadId === threadId && typeof event.at === 'string')).toBe(true);
    expect(events.filter((event) => event.type === 'HOOK_TRIGGERED')).toEqual([
      expect.objectContaining({
        nodeId: 'note',
        hookType: 'BEFORE_EXECUTE',
        eventName: 'before-note',
        payload: { x: 1 },
      }),
      expect.objectContaining({
        nodeId: 'note',
        hookType: 'AFTER_EXECUTE',
        eventName: 'after-note',
        payload: { visible: 1 },
      }),
    ]);
  });

  it('without --events, no events are shown', async () => {
    const text = await cli('inspect', executionId, '--no-conversation');
    expect(text.stdout).not.toContain('events (');
    expect(text.stdout).not.toContain('HOOK_TRIGGERED');
    const report = JSON.parse((await cli('inspect', executionId, '--json')).stdout) as InspectReport;
    expect(report.threads[0]!.events).toBeUndefined();
  });
});
