/** An LLM node's step output from its code tools' calls: each under its heading, bounded as a whole. */
import { describe, expect, it } from 'vitest';
import { MAX_LOG_ENTRIES, MAX_LOG_TOTAL_CHARS } from '../../../functions/sandbox/guest-harness.ts';
import { ToolCallLogs } from '../../../functions/tools/tool-logs.ts';

describe('ToolCallLogs', () => {
  it('is nothing until a call printed', () => {
    expect(new ToolCallLogs().logs()).toBeUndefined();
  });

  it('puts each call’s lines under a line naming the tool and the call, in order', () => {
    const logs = new ToolCallLogs();
    logs.add('weigh', 'call_1', { lines: ['a', 'b'] });
    logs.add('weigh', 'call_2', { lines: ['c'] });
    expect(logs.logs()).toEqual({
      lines: ['[tool weigh, call call_1]', 'a', 'b', '[tool weigh, call call_2]', 'c'],
    });
  });

  it('sums what each call’s own cap cut', () => {
    const logs = new ToolCallLogs();
    logs.add('a', '1', { lines: ['x'], cut: { lines: 3, chars: 0 } });
    logs.add('b', '2', { lines: ['y'], cut: { lines: 1, chars: 7 } });
    expect(logs.logs()?.cut).toEqual({ lines: 4, chars: 7 });
  });

  it('keeps the step to a CODE node’s line cap however many calls print, counting what it drops', () => {
    const logs = new ToolCallLogs();
    const lines = Array.from({ length: 600 }, (_, i) => String(i));
    logs.add('a', '1', { lines });
    logs.add('a', '2', { lines });
    const kept = logs.logs()!;
    expect(kept.lines).toHaveLength(MAX_LOG_ENTRIES);
    // 2 headings + 1,200 lines, 1,000 kept.
    expect(kept.cut).toEqual({ lines: 202, chars: 0 });
  });

  it('keeps the step to a CODE node’s character cap, cutting the line that reaches it', () => {
    const logs = new ToolCallLogs();
    const long = 'x'.repeat(2000);
    const lines = Array.from({ length: 40 }, () => long);
    logs.add('a', '1', { lines });
    const kept = logs.logs()!;
    expect(kept.lines.join('').length).toBe(MAX_LOG_TOTAL_CHARS);
    expect(kept.lines.at(-1)!.endsWith('…')).toBe(true);
    const heading = '[tool a, call 1]'.length;
    // What did not fit: the total minus the room, plus one character for the ellipsis.
    const dropped = 40 - (kept.lines.length - 1);
    const cutChars = 2000 - (kept.lines.at(-1)!.length - 1);
    expect(kept.cut).toEqual({ lines: dropped, chars: cutChars });
    expect(heading + 2000 * (kept.lines.length - 2) + kept.lines.at(-1)!.length).toBe(MAX_LOG_TOTAL_CHARS);
  });
});
