/**
 * What an interaction's item keeps of its resolution: the answer itself, or its digest when over
 * 16 KB (the item holds 400 KB at most); either way a reply sent again is recognised as the same.
 */
import { describe, expect, it } from 'vitest';
import {
  answersMatch,
  type InteractionAnswer,
  storedResolution,
} from '../../functions/stores/interaction-store.ts';

describe('stored interaction resolutions', () => {
  const small: InteractionAnswer = { kind: 'input', value: { a: 1, b: 'x' } };
  const large: InteractionAnswer = { kind: 'input', value: 'v'.repeat(600_000) };

  it('keeps a small answer as it is, and matches it whatever the key order', () => {
    const stored = storedResolution({ outcome: 'ANSWERED', answer: small });
    expect(stored).toEqual({ outcome: 'ANSWERED', answer: small });
    expect(answersMatch(stored, { kind: 'input', value: { b: 'x', a: 1 } })).toBe(true);
    expect(answersMatch(stored, { kind: 'input', value: { a: 2, b: 'x' } })).toBe(false);
  });

  it('keeps a 600 KB answer as its digest, small enough for the item, and still matches it', () => {
    const stored = storedResolution({ outcome: 'ANSWERED', answer: large });
    expect(stored).toEqual({
      outcome: 'ANSWERED',
      answerDigest: { sha256: expect.stringMatching(/^[0-9a-f]{64}$/), bytes: 600_027 },
    });
    expect(JSON.stringify(stored).length).toBeLessThan(200);
    expect(answersMatch(stored, { kind: 'input', value: 'v'.repeat(600_000) })).toBe(true);
    expect(answersMatch(stored, { kind: 'input', value: `${'v'.repeat(599_999)}w` })).toBe(false);
  });

  it('a failure is kept as it is and matches no answer', () => {
    const failed = { outcome: 'FAILED', code: 'INTERACTION_TIMED_OUT', reason: 'late' } as const;
    expect(storedResolution(failed)).toBe(failed);
    expect(answersMatch(failed, small)).toBe(false);
  });
});
