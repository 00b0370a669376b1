import { describe, expect, it } from 'vitest';
import { jsonErrorOffset, jsonErrorPosition } from '../../cli/json-error-position.ts';
import { generator } from '../support/seeded-random.ts';

const SAMPLES = [
  '{"a": [1, 2.5e-3, -0, true, false, null, {"b": "x\\u00e9\\n"}], "c": {}}',
  '[]',
  ' "s" ',
  '{\n  "d": "°é😀",\n  "e": [[], {}]\n}\n',
];
const PIECES = ['{', '}', '[', ']', ',', ':', '"', '1', 'a', ' ', '\n', '-', '.', 'e', 't', '\\', '°', '😀'];

/** V8's offset where its message gives one (some mistakes have none). */
function v8Offset(text: string): number | 'valid' | undefined {
  try {
    JSON.parse(text);
    return 'valid';
  } catch (error) {
    const position = /at position (\d+)/.exec((error as Error).message);
    return position ? Number(position[1]) : undefined;
  }
}

describe('jsonErrorOffset', () => {
  it('agrees with JSON.parse: the text length when valid, the position V8 gives when it gives one', () => {
    const random = generator(25);
    let compared = 0;
    for (let round = 0; round < 3000; round += 1) {
      let text = SAMPLES[random(SAMPLES.length)]!;
      for (let edit = random(3); edit >= 0; edit -= 1) {
        const at = random(text.length + 1);
        const piece = PIECES[random(PIECES.length)]!;
        const kind = random(3);
        text = text.slice(0, at) + (kind === 1 ? '' : piece) + text.slice(kind === 0 ? at : at + 1);
      }
      const expected = v8Offset(text);
      if (expected === undefined) continue;
      compared += 1;
      expect([text, jsonErrorOffset(text)]).toEqual([text, expected === 'valid' ? text.length : expected]);
    }
    expect(compared).toBeGreaterThan(1000);
  });

  it('finds what V8 gives no position for, and counts columns in characters', () => {
    expect(jsonErrorPosition('{\n  "a": [1,]\n}')).toEqual({ line: 2, column: 11 });
    expect(jsonErrorPosition('{"😀é°": tru}')).toEqual({ line: 1, column: 12 });
    expect(jsonErrorPosition('{"a": 1')).toEqual({ line: 1, column: 8 });
    // No nesting depth overflows the scanner.
    expect(jsonErrorPosition(`${'['.repeat(200_000)}x`)).toEqual({ line: 1, column: 200_001 });
  });
});
