/**
 * Seed 001 §6 on the real runtime: single-path fork/join without mainPathId, multi-path with
 * mainPathId (the parent continues with the main path's conversation), serial forks, and an
 * ANY_COMPLETED join that does not wait for a 30 s branch.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assistant, type E2e, PAYLOAD_LIMIT_BYTES, plain, startE2e, user } from './helpers.ts';
import { forkWorkflow } from './workflows.ts';

let e2e: E2e;
beforeAll(async () => {
  e2e = await startE2e('forkjoin');
});
afterAll(() => e2e.close());

const prefix = [user('intro prompt'), assistant('intro reply')];

describe('seed 001 §6 scenarios', () => {
  it("single path without mainPathId: the parent continues with the only child's conversation and output", async () => {
    const outcome = await e2e.runtime.prepare(forkWorkflow('single', { paths: ['solo'] })).run();
    expect(outcome.status).toBe('COMPLETED');
    expect(outcome.output).toEqual({ merged: 'solo reply', after: 'after reply' });
    expect(plain(await e2e.conversation(outcome.threadId))).toEqual([
      ...prefix,
      user('solo prompt'),
      assistant('solo reply'),
      user('after prompt'),
      assistant('after reply'),
    ]);
    expect(outcome.largestPayloadBytes).toBeLessThan(PAYLOAD_LIMIT_BYTES);
  });

  it("several paths with mainPathId: outputs keyed per path, the main path's conversation restored", async () => {
    const workflow = forkWorkflow('multi', { paths: ['a', 'b', 'c'], join: { mainPathId: 'b' } });
    const outcome = await e2e.runtime.prepare(workflow).run();
    expect(outcome.status).toBe('COMPLETED');
    expect(outcome.output).toEqual({
      merged: { a: 'a reply', b: 'b reply', c: 'c reply' },
      after: 'after reply',
    });
    expect(plain(await e2e.conversation(outcome.threadId))).toEqual([
      ...prefix,
      user('b prompt'),
      assistant('b reply'),
      user('after prompt'),
      assistant('after reply'),
    ]);
    // Each child kept its own conversation; the parent's copy did not touch them.
    const root = await e2e.thread(outcome.threadId);
    const children = (await e2e.runtime.stores.threads.listThreadsOfExecution(outcome.executionId))
      .map((entry) => entry.thread)
      .filter((thread) => thread.id !== root.id);
    expect(children).toHaveLength(3);
    for (const child of children) {
      const path = child.contextData.authorForkPathId ?? '';
      expect(child.status).toBe('COMPLETED');
      expect(plain(await e2e.runtime.conversationOf(child))).toEqual([
        ...prefix,
        user(`${path} prompt`),
        assistant(`${path} reply`),
      ]);
    }
    expect(outcome.largestPayloadBytes).toBeLessThan(PAYLOAD_LIMIT_BYTES);
  });

  it("several paths without mainPathId restore the first path's conversation", async () => {
    const outcome = await e2e.runtime.prepare(forkWorkflow('multi-default', { paths: ['x', 'y'] })).run();
    expect(outcome.status).toBe('COMPLETED');
    expect(plain(await e2e.conversation(outcome.threadId))).toEqual([
      ...prefix,
      user('x prompt'),
      assistant('x reply'),
      user('after prompt'),
      assistant('after reply'),
    ]);
  });

  it('a serial fork runs its paths one at a time and joins the same way', async () => {
    const workflow = forkWorkflow('serial', {
      paths: ['p', 'q'],
      strategy: 'serial',
      join: { mainPathId: 'q' },
    });
    const outcome = await e2e.runtime.prepare(workflow).run();
    expect(outcome.status).toBe('COMPLETED');
    expect(outcome.output).toEqual({ merged: { p: 'p reply', q: 'q reply' }, after: 'after reply' });
    const entered = outcome.events.filter((e) => e.type === 'StateEntered').map((e) => e.stateName);
    const exited = outcome.events.filter((e) => e.type === 'StateExited').map((e) => e.stateName);
    // q starts only after p finished.
    expect(entered.indexOf('q-work')).toBeGreaterThan(exited.indexOf('p-work'));
    expect(plain(await e2e.conversation(outcome.threadId)).slice(2, 4)).toEqual([
      user('q prompt'),
      assistant('q reply'),
    ]);
  });
});

describe('ANY_COMPLETED', () => {
  it('finishes without waiting for a 30 s branch', async () => {
    const workflow = forkWorkflow('any', {
      paths: ['fast', 'slow'],
      join: { joinStrategy: 'ANY_COMPLETED', mainPathId: 'fast' },
      profiles: { slow: 'sluggish' },
      extraProfiles: { sluggish: { provider: 'scripted', responses: ['slow reply'], delayMs: 30_000 } },
    });
    const outcome = await e2e.runtime.prepare(workflow).run();
    expect(outcome.status).toBe('COMPLETED');
    expect(outcome.output).toEqual({ merged: 'fast reply', after: 'after reply' });
    const succeeded = (name: string) =>
      outcome.events.some((e) => e.type === 'StateExited' && e.stateName === name);
    const entered = (name: string) =>
      outcome.events.some((e) => e.type === 'StateEntered' && e.stateName === name);
    expect(entered('slow-work')).toBe(true);
    expect(succeeded('slow-work')).toBe(false);
    expect(succeeded('fast-work')).toBe(true);
    expect(succeeded('merge')).toBe(true);
    expect(succeeded('end')).toBe(true);
    // The join cancelled the branch it no longer needed.
    const threads = (await e2e.runtime.stores.threads.listThreadsOfExecution(outcome.executionId)).map(
      (entry) => entry.thread,
    );
    const slow = threads.find((thread) => thread.contextData.authorForkPathId === 'slow');
    expect(slow?.status).toBe('CANCELLED');
    expect(slow?.nodeResults['slow-work']).toBeUndefined();
  });
});

describe('the main path decides which conversation the parent continues with, never the race', () => {
  const slow = { provider: 'scripted', responses: ['a reply'], delayMs: 300 };
  const broken = { provider: 'scripted', responses: [] };
  const texts = async (threadId: string) => (await e2e.conversation(threadId)).map((m) => m.content);

  for (const strategy of ['parallel', 'serial'] as const) {
    for (const [joinStrategy, extra] of [
      ['ALL_COMPLETED', {}],
      ['ANY_COMPLETED', {}],
      ['SUCCESS_COUNT_THRESHOLD', { threshold: 1 }],
    ] as const) {
      it(`${joinStrategy}, ${strategy}: the main path finishing last is still the one restored`, async () => {
        const workflow = forkWorkflow(
          `main-slow-${joinStrategy}-${strategy}`.toLowerCase().replaceAll('_', '-'),
          {
            paths: ['a', 'b', 'c'],
            strategy,
            join: { joinStrategy, ...extra, mainPathId: 'a' },
            profiles: { a: 'slow' },
            extraProfiles: { slow },
          },
        );
        const outcome = await e2e.runtime.prepare(workflow).run();
        expect(outcome.status, JSON.stringify(outcome.error)).toBe('COMPLETED');
        const conversation = await texts(outcome.threadId);
        expect(conversation).toContain('a reply');
        expect(conversation).not.toContain('b reply');
      });
    }

    it(`ANY_FAILED, ${strategy}: a failed main path's conversation is never restored`, async () => {
      const workflow = forkWorkflow(`main-failed-${strategy}`, {
        paths: ['a', 'b'],
        strategy,
        join: { joinStrategy: 'ANY_FAILED', mainPathId: 'a' },
        profiles: { a: 'broken' },
        extraProfiles: { broken },
      });
      const outcome = await e2e.runtime.prepare(workflow).run();
      expect(outcome.status, JSON.stringify(outcome.error)).toBe('COMPLETED');
      const conversation = await texts(outcome.threadId);
      expect(conversation).not.toContain('a prompt');
      expect(conversation).not.toContain('b reply');
      expect(conversation.slice(0, 2)).toEqual(['intro prompt', 'intro reply']);
    });
  }
});

describe('every strategy, the main path fast, slow or failing: the outcome never depends on timing', () => {
  const profiles = {
    fast: { provider: 'scripted', responses: ['a reply'] },
    slow: { provider: 'scripted', responses: ['a reply'], delayMs: 250 },
    broken: { provider: 'scripted', responses: [] },
  };
  // What each strategy gives with b and c completing and the main path a completing or failing.
  const expected: Record<string, { completes: 'COMPLETED' | 'FAILED'; fails: 'COMPLETED' | 'FAILED' }> = {
    ALL_COMPLETED: { completes: 'COMPLETED', fails: 'FAILED' },
    ANY_COMPLETED: { completes: 'COMPLETED', fails: 'COMPLETED' },
    SUCCESS_COUNT_THRESHOLD: { completes: 'COMPLETED', fails: 'COMPLETED' },
    ALL_FAILED: { completes: 'FAILED', fails: 'FAILED' },
    ANY_FAILED: { completes: 'FAILED', fails: 'COMPLETED' },
  };
  for (const strategy of ['parallel', 'serial'] as const) {
    for (const [joinStrategy, outcome] of Object.entries(expected)) {
      it(`${joinStrategy}, ${strategy}`, async () => {
        for (const main of ['fast', 'slow', 'broken'] as const) {
          const workflow = forkWorkflow(
            `matrix-${joinStrategy}-${strategy}-${main}`.toLowerCase().replaceAll('_', '-'),
            {
              paths: ['a', 'b', 'c'],
              strategy,
              join: {
                joinStrategy,
                mainPathId: 'a',
                ...(joinStrategy === 'SUCCESS_COUNT_THRESHOLD' ? { threshold: 2 } : {}),
              },
              profiles: { a: main },
              extraProfiles: profiles,
            },
          );
          const run = await e2e.runtime.prepare(workflow).run();
          const want = main === 'broken' ? outcome.fails : outcome.completes;
          expect(run.status, `${main}: ${JSON.stringify(run.error)}`).toBe(want);
          if (run.status === 'COMPLETED') {
            const texts = (await e2e.conversation(run.threadId)).map((m) => m.content);
            // The completed main path's conversation, or the parent's own: never b's or c's.
            expect(texts.includes('a reply'), main).toBe(main !== 'broken');
            expect(texts).not.toContain('b reply');
            expect(texts).not.toContain('c reply');
          }
          // ANY_COMPLETED merges one branch and the threshold (2) two: a completed main path's first,
          // whichever finished first (before, a slow main path gave every branch's output keyed by
          // path, a fast one fewer).
          if (joinStrategy === 'ANY_COMPLETED' && main !== 'broken') {
            expect(run.output, main).toEqual({ merged: 'a reply', after: 'after reply' });
          }
          if (joinStrategy === 'SUCCESS_COUNT_THRESHOLD' && main !== 'broken') {
            const { merged } = run.output as { merged: Record<string, unknown> };
            expect(Object.keys(merged).length, main).toBe(2);
            expect(merged.a, main).toBe('a reply');
          }
        }
      });
    }
  }
});

describe('ANY_FAILED merges every completed branch, however slow', () => {
  for (const strategy of ['parallel', 'serial'] as const) {
    it(`${strategy}: a branch still running when another failed is waited for and merged`, async () => {
      const workflow = forkWorkflow(`any-failed-merge-${strategy}`, {
        paths: ['a', 'b', 'c'],
        strategy,
        join: { joinStrategy: 'ANY_FAILED', mainPathId: 'a' },
        profiles: { b: 'broken', c: 'slow' },
        extraProfiles: {
          broken: { provider: 'scripted', responses: [] },
          slow: { provider: 'scripted', responses: ['c reply'], delayMs: 1_000 },
        },
      });
      const outcome = await e2e.runtime.prepare(workflow).run();
      expect(outcome.status, JSON.stringify(outcome.error)).toBe('COMPLETED');
      // Before, b's failure decided the join at once: c was cancelled and the merge held a's output
      // alone (not keyed), so its shape depended on whether c had finished by then.
      expect(outcome.output).toEqual({ merged: { a: 'a reply', c: 'c reply' }, after: 'after reply' });
      const texts = (await e2e.conversation(outcome.threadId)).map((m) => m.content);
      expect(texts).toEqual([
        'intro prompt',
        'intro reply',
        'a prompt',
        'a reply',
        'after prompt',
        'after reply',
      ]);
    });
  }
});

describe('JOIN_FAILED names the branches that failed', () => {
  it('gives the first three failed paths with their error code and message, and how many more', async () => {
    const workflow = forkWorkflow('failed-branches', {
      paths: ['a', 'b', 'c', 'd'],
      // Decided once every branch has failed: which ones failed does not depend on timing.
      join: { joinStrategy: 'ANY_COMPLETED' },
      profiles: { a: 'broken', b: 'broken', c: 'broken', d: 'broken' },
      extraProfiles: { broken: { provider: 'scripted', responses: [] } },
    });
    const outcome = await e2e.runtime.prepare(workflow).run();
    expect(outcome.status).toBe('FAILED');
    expect(outcome.error).toMatchObject({ code: 'JOIN_FAILED', nodeId: 'merge' });
    const branch = (path: string) => `path "${path}": LLM_PROVIDER_ERROR at node ${path}-work: [^;]+`;
    expect(outcome.error?.message).toMatch(
      new RegExp(
        `^all 4 branches failed; ${branch('a')}; ${branch('b')}; ${branch('c')}; and 1 more failed$`,
      ),
    );
  });
});

describe("a join's decision is no Lambda error", () => {
  /** Each Task invocation of a run and whether it failed (the function's error, as Lambda would count it). */
  async function invocations(workflow: ReturnType<typeof forkWorkflow>) {
    const calls: { state: string; action: string; failed: string | undefined }[] = [];
    const outcome = await e2e.runtime.prepare(workflow).run(undefined, {
      interceptTask: async (call, invoke) => {
        try {
          const result = await invoke();
          calls.push({ state: call.entry.stateName, action: call.entry.action, failed: undefined });
          return result;
        } catch (error) {
          calls.push({
            state: call.entry.stateName,
            action: call.entry.action,
            failed: (error as Error).name,
          });
          throw error;
        }
      },
    });
    return { outcome, calls };
  }

  it('a fork whose join decides: every invocation succeeds, the decision is a result the definition routes on', async () => {
    // A timeout's timer branch must be stopped by the decision: the reports go on to the Choice.
    const workflow = forkWorkflow('decides', { paths: ['a', 'b'], join: { timeout: 3600 } });
    const { outcome, calls } = await invocations(workflow);
    expect(outcome.status).toBe('COMPLETED');
    expect(calls.filter((call) => call.failed !== undefined)).toEqual([]);
    // Each path's last node reported its path (no `branch-done` Task); the last report decided: its
    // path ended in the Fail state after the Choice, which the Parallel caught.
    expect(calls.filter((call) => call.action === 'branch-done')).toHaveLength(0);
    expect(
      outcome.events.filter((event) => event.type === 'StateFailed' && event.stateType === 'Fail'),
    ).toEqual([expect.objectContaining({ error: 'stepthread.JoinDecided' })]);
  });

  it('an ALL_COMPLETED join without a timeout: each completed path ends at its report, nothing fails', async () => {
    const { outcome, calls } = await invocations(forkWorkflow('ends', { paths: ['a', 'b', 'c'] }));
    expect(outcome.status).toBe('COMPLETED');
    expect(calls.filter((call) => call.failed !== undefined)).toEqual([]);
    expect(calls.filter((call) => call.action === 'branch-done')).toHaveLength(0);
    // The last report decided, with every path reported: nothing was left to stop, so no Fail state,
    // no Choice after the reports, and the JOIN merged all three.
    expect(outcome.events.filter((event) => event.type === 'StateFailed')).toEqual([]);
    const entered = outcome.events.flatMap((event) =>
      event.type === 'StateEntered' ? [String(event.stateName)] : [],
    );
    expect(entered).toEqual(expect.arrayContaining(['split:paths', 'a-work', 'b-work', 'c-work', 'merge']));
    expect(entered.filter((name) => name.startsWith('merge:'))).toEqual([]);
  });

  it('a branch failure the join absorbs fails only the failing node’s invocation, not the join’s bookkeeping', async () => {
    // Serial, the failing path first: it reports before the other completes and decides.
    const workflow = forkWorkflow('absorbs', {
      paths: ['broken', 'ok'],
      strategy: 'serial',
      join: { joinStrategy: 'ANY_COMPLETED', mainPathId: 'ok' },
      profiles: { broken: 'failing' },
      extraProfiles: { failing: { provider: 'scripted', responses: [] } },
    });
    const { outcome, calls } = await invocations(workflow);
    expect(outcome.status).toBe('COMPLETED');
    // The failing node's own error (retried by the ASL, then caught into its path's branch-failed).
    const failed = calls.filter((call) => call.failed !== undefined);
    expect(new Set(failed.map((call) => `${call.state} ${call.failed}`))).toEqual(
      new Set(['broken-work stepthread.NodeFailed']),
    );
    const bookkeeping = calls.filter((call) => ['branch-done', 'branch-failed'].includes(call.action));
    // The failed path reports through `branch-failed`; the other's last node reports its path itself.
    expect(bookkeeping.map((call) => call.action)).toEqual(['branch-failed']);
    expect(bookkeeping.every((call) => call.failed === undefined)).toBe(true);
  });
});
