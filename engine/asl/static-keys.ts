/**
 * Keys ending in `.$` inside a Task's static Parameters would be read by Step Functions as JSONPaths
 * (and fail the definition or the state), so user data such as `{"price.$": 3}` in an END output or a
 * tool's schema is escaped by the compiler and restored by the handler:
 *
 * - a key ending in `.$` followed by zero or more `~` gets one more `~` (`a.$` → `a.$~`, `a.$~` →
 *   `a.$~~`), so no escaped key ends in `.$` and the mapping is reversible;
 * - the description carries `"stepthread:escapedKeys": true`, and only then does the handler unescape.
 */

export const ESCAPED_KEYS = 'stepthread:escapedKeys';

const ESCAPABLE = /\.\$~*$/;

/** Whether any key in `value` ends in `.$`. Iterative: data may be deep. */
export function needsKeyEscape(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const item = stack.pop();
    if (Array.isArray(item)) stack.push(...item);
    else if (typeof item === 'object' && item !== null) {
      for (const [key, inner] of Object.entries(item)) {
        if (key.endsWith('.$')) return true;
        stack.push(inner);
      }
    }
  }
  return false;
}

/** `value` with every key matching `.$~*` at its end given one more `~`. */
export function escapeStaticKeys<T>(value: T): T {
  return mapKeys(value, (key) => (ESCAPABLE.test(key) ? `${key}~` : key)) as T;
}

/** Undoes escapeStaticKeys. */
export function unescapeStaticKeys<T>(value: T): T {
  return mapKeys(value, (key) => (ESCAPABLE.test(key) && key.endsWith('~') ? key.slice(0, -1) : key)) as T;
}

function mapKeys(value: unknown, rename: (key: string) => string): unknown {
  if (Array.isArray(value)) return value.map((item) => mapKeys(item, rename));
  if (typeof value !== 'object' || value === null) return value;
  // fromEntries defines own properties, so a `__proto__` key stays data.
  return Object.fromEntries(
    Object.entries(value).map(([key, inner]) => [rename(key), mapKeys(inner, rename)]),
  );
}
