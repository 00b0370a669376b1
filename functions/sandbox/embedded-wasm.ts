/**
 * The QuickJS WebAssembly bytes, when built into the worker bundle (build.ts swaps this module for
 * one that embeds them), so a bundled worker is one file. From source it is undefined and QuickJS
 * reads its .wasm from node_modules.
 */
export const embeddedWasm: Uint8Array | undefined = undefined;
