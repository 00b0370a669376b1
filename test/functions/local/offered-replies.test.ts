/** Polling for an answer another process offers: a question may wait for days, so nothing may pile up. */
import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { offeredReply } from '../../../functions/local/offered-replies.ts';
import type { Interaction, InteractionStore } from '../../../functions/stores/interaction-store.ts';

describe('offeredReply', () => {
  it('keeps at most one abort listener on the run signal however long it polls, and takes an offer', async () => {
    let polls = 0;
    const store = {
      takeLocalReply: async () => {
        polls += 1;
        return polls === 6 ? { reply: JSON.stringify({ kind: 'approve' }), until: '' } : undefined;
      },
    } as unknown as InteractionStore;
    const controller = new AbortController();
    const listeners: number[] = [];
    const watch = setInterval(() => listeners.push(getEventListeners(controller.signal, 'abort').length), 50);
    try {
      const reply = await offeredReply(store, {} as Interaction, controller.signal);
      expect(reply).toEqual({ kind: 'approve' });
      expect(polls).toBe(6);
      expect(Math.max(...listeners)).toBeLessThanOrEqual(1);
      expect(listeners.length).toBeGreaterThan(0);
    } finally {
      clearInterval(watch);
    }
  });
});
