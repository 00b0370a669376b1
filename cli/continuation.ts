/**
 * The continue-as-new threshold a command compiles with: `--continue-after-events <n|off>`, else
 * `$STEPTHREAD_CONTINUE_AFTER_EVENTS`, else the compiler's default (20,000 history events).
 */
import {
  CONTINUE_AFTER_EVENTS_ENV,
  checkContinueAfterEvents,
  continueAfterEventsFromEnv,
  MAX_CONTINUE_AFTER_EVENTS,
  MIN_CONTINUE_AFTER_EVENTS,
} from '../engine/asl/continuation.ts';
import { StepthreadError } from '../engine/errors.ts';
import { type CliIo, EXIT } from './io.ts';

export interface ContinueAfterOption {
  continueAfterEvents?: string;
}

export type Threshold =
  | { ok: true; value: number | false | undefined }
  | { ok: false; code: 'CONTINUE_AFTER_EVENTS_INVALID'; message: string };

export function continueAfterEventsOf(options: ContinueAfterOption, io: CliIo): Threshold {
  try {
    const raw = options.continueAfterEvents;
    if (raw === undefined) return { ok: true, value: continueAfterEventsFromEnv(io.env ?? process.env) };
    if (/^(off|false)$/i.test(raw.trim())) return { ok: true, value: false };
    return { ok: true, value: checkContinueAfterEvents(numberOf(raw)) };
  } catch (error) {
    if (!(error instanceof StepthreadError)) throw error;
    const source =
      options.continueAfterEvents === undefined ? CONTINUE_AFTER_EVENTS_ENV : '--continue-after-events';
    return { ok: false, code: 'CONTINUE_AFTER_EVENTS_INVALID', message: `${source}: ${error.message}` };
  }
}

/** The flag's number (`20_000` reads as 20000); text that is none is refused as itself, not as NaN. */
function numberOf(raw: string): number {
  const text = raw.trim().replaceAll('_', '');
  if (/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(text)) return Number(text);
  throw new StepthreadError(
    'CONTINUE_AFTER_EVENTS_INVALID',
    `"${raw}" is not a number: give an integer from ${MIN_CONTINUE_AFTER_EVENTS} to ${MAX_CONTINUE_AFTER_EVENTS}, or off`,
  );
}

/** Says why the threshold is refused, coded; a usage error (exit 2). */
export function reportThresholdRefused(threshold: Extract<Threshold, { ok: false }>, io: CliIo): number {
  io.stderr(`stepthread: ${threshold.code}: ${threshold.message}\n`);
  return EXIT.usage;
}

export const CONTINUE_AFTER_HELP =
  'continue a run in a new execution once one has about this many history events (default: $STEPTHREAD_CONTINUE_AFTER_EVENTS or 20000; off: never)';
