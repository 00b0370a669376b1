/**
 * A lazy, shared promise: `make` runs on the first call and later calls get the same promise. A
 * failure is not kept (a transient import error must not poison a warm container for good).
 *
 * For lazily imported SDK modules: `import()` of a module already loaded still resolves its
 * specifier through the ESM loader on every call (under tsx, a round trip to the loader's hooks
 * thread), which a per-request call site paid each time.
 */
export function once<T>(make: () => Promise<T>): () => Promise<T> {
  let made: Promise<T> | undefined;
  return () => {
    made ??= make().catch((error: unknown) => {
      made = undefined;
      throw error;
    });
    return made;
  };
}
