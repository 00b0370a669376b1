/**
 * How long ended runs are kept: `prune --older-than <duration>`, else STEPTHREAD_RETENTION_DAYS, else
 * forever. Checked before any store is opened; a bad value is INVALID_DURATION.
 */
import { StepthreadError } from '../engine/errors.ts';

export const RETENTION_DAYS_VARIABLE = 'STEPTHREAD_RETENTION_DAYS';

const UNIT_MS: Readonly<Record<string, number>> = {
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 7 * 86_400_000,
};

/** `30d`, `12h`, `90m`, `45s`, `2w`, or several together (`1d12h`), in milliseconds. */
export function parseDuration(text: string): number {
  const trimmed = text.trim();
  const parts = [...trimmed.matchAll(/(\d+)([smhdw])/g)];
  const whole = parts.map((part) => part[0]).join('');
  if (parts.length === 0 || whole !== trimmed) {
    throw new StepthreadError(
      'INVALID_DURATION',
      `--older-than takes a duration such as 30d, 12h, 90m, 45s or 2w (or several: 1d12h), got ${JSON.stringify(text)}`,
    );
  }
  const ms = parts.reduce((sum, part) => sum + Number(part[1]) * UNIT_MS[part[2]!]!, 0);
  if (!Number.isSafeInteger(ms)) {
    throw new StepthreadError('INVALID_DURATION', `--older-than ${text} is too long`);
  }
  return ms;
}

/** STEPTHREAD_RETENTION_DAYS as milliseconds; undefined when unset or empty (keep forever). */
export function retentionFromEnv(env: Readonly<Record<string, string | undefined>>): number | undefined {
  const text = env[RETENTION_DAYS_VARIABLE]?.trim();
  if (text === undefined || text === '') return undefined;
  const days = /^\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!(Number.isSafeInteger(days) && days >= 1)) {
    throw new StepthreadError(
      'INVALID_DURATION',
      `${RETENTION_DAYS_VARIABLE} takes a whole number of days from 1 (unset: keep forever), got ${JSON.stringify(text)}`,
    );
  }
  return days * UNIT_MS.d!;
}
