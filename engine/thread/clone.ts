/**
 * Deep copy of plain thread data (objects, arrays, primitives).
 *
 * structuredClone is a language-level global (no I/O, deterministic), and it keeps `undefined`
 * values and shared sub-objects, which a JSON round trip would not.
 */
export function deepCopy<T>(value: T): T {
  return structuredClone(value);
}
