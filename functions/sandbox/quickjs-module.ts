/** Loads the QuickJS WebAssembly module (synchronous release build) once per worker. */

import {
  type EmscriptenModuleLoaderOptions,
  newQuickJSWASMModuleFromVariant,
  newVariant,
  type QuickJSWASMModule,
  RELEASE_SYNC,
} from 'quickjs-emscripten';
import { embeddedWasm } from './embedded-wasm.ts';

/**
 * Memory a QuickJS instance needs besides the guest's own allocations (the engine's initial heap of
 * 16 MB included): a job's WebAssembly memory may grow to its limit plus this, and no further.
 */
export const ENGINE_OVERHEAD_BYTES = 16 * 1048576;
const WASM_PAGE_BYTES = 65_536;
/** The release build starts with 16 MB of linear memory (its INITIAL_MEMORY). */
const INITIAL_PAGES = 256;

/** The WebAssembly memory cap of a job with this memory limit: limit + overhead, in whole pages. */
export function wasmCapBytes(memoryLimitBytes: number): number {
  const pages = Math.ceil((memoryLimitBytes + ENGINE_OVERHEAD_BYTES) / WASM_PAGE_BYTES);
  return Math.max(pages, INITIAL_PAGES) * WASM_PAGE_BYTES;
}

/** Allocations up to this size never fail QuickJS's own check before the heap runs out. */
const COUNT_MARGIN_BYTES = 65_536;

/**
 * The limit to give QuickJS's own allocation check (`setMemoryLimit`) for a job's memory limit.
 * QuickJS's emscripten build cannot measure allocations (its malloc_usable_size is 0), so the check
 * adds up 8 bytes per live allocation plus the size asked for: it bounds single allocations and the
 * number of allocations, not bytes. Every allocation takes at least 16 bytes of the heap, so with
 * this at least half the WebAssembly cap (plus a margin), allocations of up to COUNT_MARGIN_BYTES
 * always find the heap exhausted before the count, and an exhausted heap is seen
 * (failedHeapResizes). With the plain limit, small limits ran out of count first on many small
 * objects, where nothing records it, and QuickJS, with no room left for its "out of memory" error,
 * threw null. Only limits up to 16 MB change (looser single allocations), within the cap of limit
 * + 16 MB.
 */
export function quickjsLimitBytes(memoryLimitBytes: number): number {
  return Math.max(memoryLimitBytes, wasmCapBytes(memoryLimitBytes) / 2 + COUNT_MARGIN_BYTES);
}

/**
 * Loads QuickJS with linear memory capped at `capBytes`. QuickJS's own memory limit does not cover
 * every allocation (typed arrays, ArrayBuffers and long strings passed it: an 8 MB job grew the process
 * by 1 GB), but the WebAssembly memory cannot grow past its maximum, so an allocation beyond it fails
 * inside QuickJS as "out of memory", whatever allocated it (or as null, when not even that error
 * fits: failedHeapResizes tells the two apart from code throwing null).
 */
export function loadQuickJS(capBytes?: number): Promise<QuickJSWASMModule> {
  // Emscripten prints aborts to stderr; the worker reports them in results instead (execute.ts).
  const emscriptenModule = { print: ignore, printErr: ignore } as EmscriptenModuleLoaderOptions;
  const memory = capBytes === undefined ? {} : { wasmMemory: cappedMemory(capBytes) };
  const bytes = embeddedWasm;
  const wasmBinary = bytes?.buffer.slice(
    bytes.byteOffset,
    bytes.byteOffset + bytes.byteLength,
  ) as ArrayBuffer;
  return newQuickJSWASMModuleFromVariant(
    newVariant(
      RELEASE_SYNC,
      bytes ? { wasmBinary, ...memory, emscriptenModule } : { ...memory, emscriptenModule },
    ),
  );
}

function ignore(): void {}

type WasmMemory = NonNullable<EmscriptenModuleLoaderOptions['wasmMemory']>;

/** The typings here know WebAssembly only as a namespace of types; the constructor is a global. */
const { Memory } = (
  globalThis as unknown as {
    WebAssembly: { Memory: new (descriptor: { initial: number; maximum: number }) => WasmMemory };
  }
).WebAssembly;

/**
 * Emscripten's heap resize (emscripten_resize_heap in the glue) asks the memory to grow up to three
 * times, by 20, 10 and 5 % over what it needs, and stops at the first that succeeds: three failures
 * in a row are a resize that failed, after which malloc returns NULL. (Fewer in a row are a resize
 * that succeeded at a smaller over-growth, which happens near the cap without anything failing.)
 */
const GROW_ATTEMPTS_PER_RESIZE = 3;

/** Failed heap resizes per capped memory, counted since the memory was made. */
const failedResizes = new WeakMap<object, { count: number }>();

/** A WebAssembly memory of at most `capBytes` that counts its failed heap resizes (exported for tests). */
export function cappedMemory(capBytes: number): WasmMemory {
  const memory = new Memory({
    initial: INITIAL_PAGES,
    maximum: Math.max(INITIAL_PAGES, Math.ceil(capBytes / WASM_PAGE_BYTES)),
  });
  // The glue calls grow on this object, so an own property sees every attempt and its outcome.
  const grow = memory.grow.bind(memory);
  const failed = { count: 0 };
  let failuresInARow = 0;
  Object.defineProperty(memory, 'grow', {
    value(pages: number): number {
      try {
        const previousPages = grow(pages);
        failuresInARow = 0;
        return previousPages;
      } catch (error) {
        failuresInARow += 1;
        if (failuresInARow % GROW_ATTEMPTS_PER_RESIZE === 0) failed.count += 1;
        throw error;
      }
    },
  });
  failedResizes.set(memory, failed);
  return memory;
}

/**
 * How many times the instance's heap could not grow, so an allocation failed at the WebAssembly cap:
 * a job compares this before and after. Always 0 for an instance loaded without a cap.
 */
export function failedHeapResizes(quickjs: QuickJSWASMModule): number {
  try {
    return failedResizesOf(quickjs.getWasmMemory());
  } catch {
    return 0;
  }
}

/** Failed heap resizes of a memory made by cappedMemory; 0 for any other. */
export function failedResizesOf(memory: object): number {
  return failedResizes.get(memory)?.count ?? 0;
}

/** Size of the instance's linear memory; it only grows, which is why workers get recycled. */
export function wasmMemoryBytes(quickjs: QuickJSWASMModule): number {
  try {
    return quickjs.getWasmMemory().buffer.byteLength;
  } catch {
    return 0;
  }
}
