/**
 * bench/profile-breakdown.ts: a sample goes to its function's part, or, in Node's modules and native
 * code, to its nearest caller's; the profiler, idle time and LangGraph.js's frames are left out.
 */
import { describe, expect, it } from 'vitest';
import { breakdownOf, type CpuProfile, PARTS, partOfScript } from '../../bench/profile-breakdown.ts';

const ROOT = 'file:///work/repo/';
const frame = (id: number, url: string, functionName = 'f', children: number[] = []) => ({
  id,
  callFrame: { url, functionName },
  children,
});

describe('profile breakdown', () => {
  it("names each script's part", () => {
    expect(partOfScript(`${ROOT}node_modules/dynalite/actions/updateItem.js`)).toBe(PARTS[0]);
    expect(partOfScript(`${ROOT}node_modules/level-transcoder/lib/formats.js`)).toBe(PARTS[0]);
    expect(partOfScript(`${ROOT}functions/local/dynalite-direct.ts`)).toBe(PARTS[0]);
    expect(partOfScript(`${ROOT}node_modules/@koa/router/lib/router.js`)).toBe(PARTS[1]);
    expect(partOfScript(`${ROOT}node_modules/@aws-sdk/util-dynamodb/dist-cjs/index.js`)).toBe(PARTS[2]);
    expect(partOfScript(`${ROOT}functions/aws/wire-clients.ts`)).toBe(PARTS[2]);
    expect(partOfScript(`${ROOT}node_modules/aws-local-stepfunctions/build/main.node.esm.js`)).toBe(PARTS[3]);
    expect(partOfScript(`${ROOT}functions/local/runtime.ts`)).toBe(PARTS[3]);
    expect(partOfScript(`${ROOT}functions/handlers/pipeline.ts`)).toBe(PARTS[4]);
    expect(partOfScript(`${ROOT}engine/lifecycle.ts`)).toBe(PARTS[4]);
    expect(partOfScript('node:fs')).toBeUndefined();
    expect(partOfScript('')).toBeUndefined();
  });

  it("counts Node's and native frames to their nearest caller with a part, and leaves out the profiler, idle and LangGraph", () => {
    const profile: CpuProfile = {
      nodes: [
        frame(1, '', '(root)', [2, 4, 6, 7, 8, 10, 12]),
        frame(2, `${ROOT}node_modules/s3rver/lib/controllers/object.js`, 'putObject', [3]),
        frame(3, 'node:fs', 'writeFileSync'),
        frame(4, `${ROOT}node_modules/dynalite/db/index.js`, 'get', [5]),
        frame(5, '', 'parse'),
        frame(6, '', '(garbage collector)'),
        frame(7, '', '(idle)'),
        frame(8, 'node:inspector', 'post', [9]),
        frame(9, `${ROOT}functions/handlers/pipeline.ts`, 'executeStep'),
        frame(10, `${ROOT}bench/langgraph/control.mjs`, 'runLangGraphChat', [11]),
        frame(11, `${ROOT}bench/langgraph/node_modules/better-sqlite3/lib/methods/wrappers.js`, 'run'),
        frame(12, `${ROOT}functions/handlers/pipeline.ts`, 'executeStep'),
      ],
      // Deltas in microseconds: s3rver 300 (its own 100, the write 200), dynalite 400 (JSON.parse),
      // GC 100, stepthread 200; idle 1,000, the profiler 500 and LangGraph 700 left out.
      samples: [2, 3, 5, 6, 7, 8, 9, 10, 11, 12],
      timeDeltas: [100, 200, 400, 100, 1000, 200, 300, 300, 400, 200],
    };
    const { shares, ms } = breakdownOf(profile);
    expect(ms).toBeCloseTo(1);
    expect(shares[PARTS[0]]).toBeCloseTo(0.4);
    expect(shares[PARTS[1]]).toBeCloseTo(0.3);
    expect(shares[PARTS[2]]).toBe(0);
    expect(shares[PARTS[3]]).toBe(0);
    expect(shares[PARTS[4]]).toBeCloseTo(0.2);
    expect(shares[PARTS[5]]).toBeCloseTo(0.1);
  });
});
