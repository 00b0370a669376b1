/**
 * Where a CPU profile's time goes, by part of the system rather than by function: the control-steps
 * bench's workloads spend it across a few dozen functions of several packages (the profile is flat),
 * so a list of functions hides what a reader wants to know — how much is the emulated stores, how
 * much stepthread's own code, how much the interpreter.
 *
 * Each sample goes to the part of its function's script. A sample in Node's own modules or in native
 * code (JSON.parse, a file write, a promise hook) goes to the nearest caller that is in a part, so a
 * file write s3rver makes counts as s3rver's; samples with no such caller (the garbage collector,
 * V8's own work, microtask turns) are Node and V8's. The profiler's own samples, idle time and
 * LangGraph.js's runs beside stepthread's are left out of the whole.
 */

/** The parts, in the order they are printed. */
export const PARTS = [
  'DynamoDB emulator (dynalite, level)',
  'S3 emulator (s3rver, koa)',
  'store clients (marshalling, in-process wire)',
  'ASL interpreter and runtime',
  "stepthread's handlers, stores and engine",
  'Node and V8 (GC, promises, buffers)',
] as const;

export type Part = (typeof PARTS)[number];

/** A V8 CPU profile (`Profiler.stop`'s, or a `.cpuprofile` file) — the members this reads. */
export interface CpuProfile {
  nodes: readonly {
    id: number;
    callFrame: { url: string; functionName: string };
    children?: readonly number[];
  }[];
  samples: readonly number[];
  timeDeltas: readonly number[];
}

const PACKAGE_PARTS: Record<string, Part> = {
  dynalite: PARTS[0],
  'level-transcoder': PARTS[0],
  'abstract-level': PARTS[0],
  'memory-level': PARTS[0],
  'functional-red-black-tree': PARTS[0],
  'big.js': PARTS[0],
  lock: PARTS[0],
  async: PARTS[0],
  s3rver: PARTS[1],
  koa: PARTS[1],
  '@koa/router': PARTS[1],
  'koa-compose': PARTS[1],
  delegates: PARTS[1],
  'on-finished': PARTS[1],
  'ee-first': PARTS[1],
  parseurl: PARTS[1],
  'cache-content-type': PARTS[1],
  winston: PARTS[1],
  'fast-xml-parser': PARTS[1],
  xmlbuilder: PARTS[1],
  'aws-local-stepfunctions': PARTS[3],
  'jsonpath-plus': PARTS[3],
  lodash: PARTS[3],
  'p-limit': PARTS[3],
  'yocto-queue': PARTS[3],
  zod: PARTS[4],
};

/** This repository's modules that belong to a part other than stepthread's own code. */
const SOURCE_PARTS: readonly [RegExp, Part][] = [
  [/\/functions\/local\/dynalite-[^/]*$/, PARTS[0]],
  [/\/functions\/local\/s3-store\.ts$/, PARTS[1]],
  [/\/functions\/local\/in-process\.ts$/, PARTS[2]],
  [/\/functions\/aws\//, PARTS[2]],
  [/\/functions\/local\/(runtime|state-machine|history)\.ts$/, PARTS[3]],
  [/\/(functions|engine)\//, PARTS[4]],
];

/** The part a script belongs to; undefined for Node's modules, native code and anything unknown. */
export function partOfScript(url: string): Part | undefined {
  const inPackage = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (inPackage) {
    const name = inPackage[1]!;
    if (name.startsWith('@aws-sdk/') || name.startsWith('@smithy/')) return PARTS[2];
    return PACKAGE_PARTS[name];
  }
  for (const [pattern, part] of SOURCE_PARTS) if (pattern.test(url)) return part;
  return undefined;
}

/**
 * Left out of the whole: the profiler's own work, the time nothing ran, and LangGraph.js's runs beside
 * stepthread's in the same rounds (bench/langgraph), with whatever they call.
 */
function leftOut(node: CpuProfile['nodes'][number]): boolean {
  const { url, functionName } = node.callFrame;
  return url === 'node:inspector' || functionName === '(idle)' || url.includes('/bench/langgraph/');
}

/** Each part's share of the profile's time (0–1, summing to 1), and the milliseconds counted. */
export function breakdownOf(profile: CpuProfile): { shares: Record<Part, number>; ms: number } {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const partOf = new Map<number, Part | null>();
  const resolve = (id: number): Part | null => {
    const known = partOf.get(id);
    if (known !== undefined) return known;
    const node = byId.get(id)!;
    const up = parent.get(id);
    const above = up === undefined ? PARTS[5] : resolve(up);
    // Under a left-out frame (the profiler's `post`, LangGraph's run), a sample is left out whatever it calls.
    const part = leftOut(node) || above === null ? null : (partOfScript(node.callFrame.url) ?? above);
    partOf.set(id, part);
    return part;
  };
  const totals = new Map<Part, number>(PARTS.map((part) => [part, 0]));
  let whole = 0;
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0;
    const part = resolve(id);
    if (part === null) return;
    totals.set(part, totals.get(part)! + delta);
    whole += delta;
  });
  const shares = Object.fromEntries(
    PARTS.map((part) => [part, whole === 0 ? 0 : totals.get(part)! / whole]),
  ) as Record<Part, number>;
  return { shares, ms: whole / 1000 };
}
