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

/**
 * Loads QuickJS with linear memory capped at `capBytes`. QuickJS's own memory limit does not cover
 * every allocation (typed arrays, ArrayBuffers and long strings passed it: an 8 MB job grew the process
 * by 1 GB), but the WebAssembly memory cannot grow past its maximum, so an allocation beyond it fails
 * inside QuickJS as "out of memory", whatever allocated it.
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

function cappedMemory(capBytes: number): WasmMemory {
  return new Memory({
    initial: INITIAL_PAGES,
    maximum: Math.max(INITIAL_PAGES, Math.ceil(capBytes / WASM_PAGE_BYTES)),
  });
}

/** Size of the instance's linear memory; it only grows, which is why workers get recycled. */
export function wasmMemoryBytes(quickjs: QuickJSWASMModule): number {
  try {
    return quickjs.getWasmMemory().buffer.byteLength;
  } catch {
    return 0;
  }
}
