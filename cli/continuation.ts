/**
 * The continue-as-new threshold a command compiles with: `--continue-after-events <n|off>`, else
 * `$STEPTHREAD_CONTINUE_AFTER_EVENTS`, else the compiler's default (20,000 history events).
 */
import {
  CONTINUE_AFTER_EVENTS_ENV,
  checkContinueAfterEvents,
  continueAfterEventsFromEnv,
} from '../engine/asl/continuation.ts';
import { StepthreadError } from '../engine/errors.ts';
import type { CliIo } from './io.ts';

export interface ContinueAfterOption {
  continueAfterEvents?: string;
}

export type Threshold = { ok: true; value: number | false | undefined } | { ok: false; message: string };

export function continueAfterEventsOf(options: ContinueAfterOption, io: CliIo): Threshold {
  try {
    const raw = options.continueAfterEvents;
    if (raw === undefined) return { ok: true, value: continueAfterEventsFromEnv(io.env ?? process.env) };
    if (/^(off|false)$/i.test(raw.trim())) return { ok: true, value: false };
    return { ok: true, value: checkContinueAfterEvents(Number(raw.replaceAll('_', ''))) };
  } catch (error) {
    if (!(error instanceof StepthreadError)) throw error;
    const source =
      options.continueAfterEvents === undefined ? CONTINUE_AFTER_EVENTS_ENV : '--continue-after-events';
    return { ok: false, message: `${source}: ${error.message}` };
  }
}

export const CONTINUE_AFTER_HELP =
  'continue a run in a new execution once one has about this many history events (default: $STEPTHREAD_CONTINUE_AFTER_EVENTS or 20000; off: never)';
