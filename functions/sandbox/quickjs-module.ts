/** Loads the QuickJS WebAssembly module (synchronous release build) once per worker. */

import {
  type EmscriptenModuleLoaderOptions,
  newQuickJSWASMModuleFromVariant,
  newVariant,
  type QuickJSWASMModule,
  RELEASE_SYNC,
} from 'quickjs-emscripten';
import { embeddedWasm } from './embedded-wasm.ts';

export function loadQuickJS(): Promise<QuickJSWASMModule> {
  // Emscripten prints aborts to stderr; the worker reports them in results instead (execute.ts).
  const emscriptenModule = { print: ignore, printErr: ignore } as EmscriptenModuleLoaderOptions;
  const bytes = embeddedWasm;
  const wasmBinary = bytes?.buffer.slice(
    bytes.byteOffset,
    bytes.byteOffset + bytes.byteLength,
  ) as ArrayBuffer;
  return newQuickJSWASMModuleFromVariant(
    newVariant(RELEASE_SYNC, bytes ? { wasmBinary, emscriptenModule } : { emscriptenModule }),
  );
}

function ignore(): void {}

/** Size of the instance's linear memory; it only grows, which is why workers get recycled. */
export function wasmMemoryBytes(quickjs: QuickJSWASMModule): number {
  try {
    return quickjs.getWasmMemory().buffer.byteLength;
  } catch {
    return 0;
  }
}
