/**
 * Answers across processes on one data directory: `stepthread respond` in one terminal, the run that
 * waits in another (`stepthread run` at its prompt, `stepthread dev`). A local run has no task token
 * that Step Functions could take an answer for, and the processes share nothing but the stores, so
 * respond leaves its reply on the interaction's item (an offer) and the waiting process, which polls
 * that item while it waits, takes it — exactly one taker, by a conditional remove. An offer nobody
 * takes in time (the run was interrupted, or stopped at the question) is withdrawn, and respond says
 * how to answer instead.
 */
import { StepthreadError } from '../../engine/errors.ts';
import type { InteractionReply } from '../nodes/user-interaction.ts';
import type { Interaction, InteractionStore, LocalReplyOffer } from '../stores/interaction-store.ts';

/** How often a waiting run looks for an offer (ms). */
export const OFFER_POLL_MS = 250;
/** How long respond waits for its offer to be taken (ms): many polls, so a busy process still takes it. */
export const OFFER_WAIT_MS = 5000;

/** The abort reason a waiting run gives its own answer source when respond answered instead. */
export class AnsweredElsewhere extends Error {
  constructor() {
    super('answered by stepthread respond');
    this.name = 'AnsweredElsewhere';
  }
}

/** `ms`, or less if `signal` aborts; its listener goes with it (a question may be polled for days). */
const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });

/**
 * The reply respond offers for this visit, once one is there; never settles once `signal` aborts
 * (the run's own source answered, or the run ended).
 */
export async function offeredReply(
  store: InteractionStore,
  interaction: Interaction,
  signal: AbortSignal,
): Promise<InteractionReply> {
  for (;;) {
    // The first look waits a poll too: a question its own source answers at once (`--answers`, a
    // script, the bench) then costs no read, and respond waits many polls for its offer to be taken.
    await sleep(OFFER_POLL_MS, signal);
    if (signal.aborted) return new Promise<never>(() => {});
    // A failed look is only a missed poll: a question may wait for days, and its own source still asks.
    const offer = await store.takeLocalReply(interaction).catch(() => undefined);
    if (offer !== undefined) return JSON.parse(offer.reply) as InteractionReply;
  }
}

/**
 * Hands `reply` to the process waiting on this PENDING interaction. INTERACTION_NOT_DELIVERED when
 * no process takes it in time (nothing on this machine waits on it) or another answer is on its way;
 * `howToAnswer` then says what to do instead.
 */
export async function offerReply(
  store: InteractionStore,
  interaction: Interaction,
  reply: InteractionReply,
  howToAnswer: string,
): Promise<void> {
  const now = Date.now();
  const offer: LocalReplyOffer = {
    reply: JSON.stringify(reply),
    until: new Date(now + OFFER_WAIT_MS).toISOString(),
  };
  if (!(await store.offerLocalReply(interaction, offer, new Date(now).toISOString()))) {
    throw new StepthreadError(
      'INTERACTION_NOT_DELIVERED',
      `interaction ${interaction.interactionId} was answered, asked again, or another answer to it is on its way; \`stepthread pending\` lists what still waits`,
      { nodeId: interaction.nodeId },
    );
  }
  while (Date.now() < now + OFFER_WAIT_MS) {
    await sleep(OFFER_POLL_MS);
    if (!(await store.hasLocalReply(interaction))) return;
  }
  // Taken at the last moment: the withdrawal finds nothing, and the answer went through.
  if (!(await store.withdrawLocalReply(interaction, offer))) return;
  throw new StepthreadError(
    'INTERACTION_NOT_DELIVERED',
    `no process on this machine is waiting on interaction ${interaction.interactionId} (its run was interrupted, or stopped at the question); ${howToAnswer}`,
    { nodeId: interaction.nodeId },
  );
}
