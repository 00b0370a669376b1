import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { sha256Hex } from '../../../engine/asl/sha256.ts';

describe('sha256Hex (the node table names itself with it, engine/ imports no node:crypto)', () => {
  it("equals node:crypto's SHA-256 of the UTF-8 bytes, at every padding boundary and beyond one block", () => {
    const texts = [
      '',
      'abc',
      ...[55, 56, 63, 64, 65, 119, 120].map((n) => 'x'.repeat(n)),
      'é€😀'.repeat(500),
    ];
    texts.push('y'.repeat(1_000_003));
    for (const text of texts) {
      expect(sha256Hex(text), `${text.length} characters`).toBe(
        createHash('sha256').update(text).digest('hex'),
      );
    }
  });
});
