/**
 * What someone used to Jinja, Python or JavaScript naturally writes, and how this language writes
 * it: parse.ts adds these to its INVALID_EXPRESSION messages, so `a and b` or `x.toUpperCase()`
 * says what to write instead of only that it is not supported.
 */
import { BUILTIN_NAMES, type BuiltinName, builtinSignature, isBuiltinName } from './builtins.ts';

/** Words that are operators elsewhere; jsep reads them as names side by side. */
const KEYWORDS: Readonly<Record<string, string>> = {
  and: '"and" is written && (a && b)',
  or: '"or" is written || (a || b)',
  not: '"not x" is written !x',
  in: '"a in b" is written contains(b, a)',
  is: '"is" is written == ((x ?? null) == null holds for null and for a missing value, x == null for null only)',
  if: '"a if c else b" is written c ? a : b',
  else: '"a if c else b" is written c ? a : b',
  typeof: '"typeof x" is written type(x)',
  instanceof: '"instanceof" is written with type(x) (type(x) == \'array\')',
  new: '"new" is not supported',
};

/** Names of other languages' functions and methods, and the built-in that does the same. */
const FUNCTION_ALIASES: ReadonlyMap<string, BuiltinName> = new Map<string, BuiltinName>([
  ['length', 'len'],
  ['size', 'len'],
  ['count', 'len'],
  ['toLowerCase', 'lower'],
  ['toUpperCase', 'upper'],
  ['includes', 'contains'],
  ['str', 'string'],
  ['String', 'string'],
  ['toString', 'string'],
  ['int', 'number'],
  ['float', 'number'],
  ['Number', 'number'],
  ['parseInt', 'number'],
  ['parseFloat', 'number'],
  ['bool', 'boolean'],
  ['Boolean', 'boolean'],
  ['stringify', 'json'],
  ['tojson', 'json'],
  ['parse', 'parseJson'],
  ['replaceAll', 'replace'],
  ['substring', 'slice'],
  ['substr', 'slice'],
  ['strip', 'trim'],
  ['lstrip', 'trim'],
  ['rstrip', 'trim'],
]);

/** The hints for the keywords among the names of a jsep Compound (`a and b` is a, and, b), or []. */
export function keywordHints(names: readonly string[]): string[] {
  const hints = names.flatMap((name) => (Object.hasOwn(KEYWORDS, name) ? [KEYWORDS[name]!] : []));
  return [...new Set(hints)];
}

/** The built-in that does what the function or method `name` does elsewhere, if any. */
export function builtinFor(name: string): BuiltinName | undefined {
  if (isBuiltinName(name)) return name;
  const alias = FUNCTION_ALIASES.get(name);
  if (alias !== undefined) return alias;
  const lower = name.toLowerCase();
  return BUILTIN_NAMES_LOWER.get(lower);
}

const BUILTIN_NAMES_LOWER: ReadonlyMap<string, BuiltinName> = new Map(
  BUILTIN_NAMES.map((name) => [name.toLowerCase(), name]),
);

/** "call the built-in upper(text)" for a name another language calls, or undefined. */
export function builtinSuggestion(name: string): string | undefined {
  const builtin = builtinFor(name);
  return builtin === undefined ? undefined : `use the built-in ${builtinSignature(builtin)}`;
}

/**
 * For `x | name` or `x | name(args)`, Jinja's filter: how it is written here (`default` is `??`).
 * Undefined when the right side names nothing, as in a bitwise `n | 1`.
 */
export function filterHint(name: string | undefined): string | undefined {
  if (name === undefined) return undefined;
  if (name === 'default' || name === 'd') return 'a filter is a call here: x | default(v) is written x ?? v';
  const builtin = builtinFor(name);
  return builtin === undefined
    ? 'filters (x | f) are not supported: call a built-in function, f(x)'
    : `a filter is a call here: x | ${name} is written ${builtin}(x)`;
}
