/**
 * dynalite parses every request's expressions with its PEG parsers, afresh each time: about a tenth of
 * the CPU of a step on the embedded runtime. The stores send a few expression shapes over and over
 * (`SET #n0 = :v0, … ` with the version condition, `attribute_not_exists(pk)`), so the parse of a shape
 * is kept and reused: parsed once with stand-ins for the attribute values — each of the same DynamoDB
 * type as the value it stands for — and the values put in place of their stand-ins in a copy of the
 * tree for each request. What the parsers check of a value is its type, except BETWEEN's bounds and
 * attribute_type's type name, which compare the values themselves: expressions using either are
 * parsed afresh. So is one a parser refuses (the refusal comes from the parse, as before), and the
 * names and values the parse marks used are marked used again on every reuse (dynalite refuses unused
 * ones after the parse).
 */
import conditionParser from 'dynalite/db/conditionParser.js';
import projectionParser from 'dynalite/db/projectionParser.js';
import updateParser from 'dynalite/db/updateParser.js';

interface ParseContext {
  attrNames?: Record<string, string>;
  attrVals?: Record<string, Record<string, unknown>>;
  unusedAttrNames?: Record<string, boolean>;
  unusedAttrVals?: Record<string, boolean>;
  isKeyCondition?: boolean;
  [key: string]: unknown;
}

type Parser = import('dynalite/db/updateParser.js').Parser<ParseContext>;

/** A shape's parse: the tree with stand-ins, which stand-in is which value, what it marked used. */
interface Parsed {
  readonly tree: unknown;
  readonly standIns: ReadonlyMap<object, string>;
  readonly usedNames: readonly string[];
  readonly usedValues: readonly string[];
}

/** DynamoDB's attribute value types, in the order dynalite's parsers look for them. */
const TYPES = ['S', 'N', 'B', 'NULL', 'BOOL', 'SS', 'NS', 'BS', 'L', 'M'] as const;
const SAMPLE: Record<(typeof TYPES)[number], unknown> = {
  S: 's',
  N: '0',
  B: 'AA==',
  NULL: true,
  BOOL: false,
  SS: ['s'],
  NS: ['0'],
  BS: ['AA=='],
  L: [],
  M: {},
};

/** Expressions whose parse reads values themselves, not only their types. */
const READS_VALUES = /between|attribute_type/i;
/** Shapes kept per parser: the stores send a handful; a bound for anything else. */
const SHAPES_KEPT = 2_000;

function typeOf(value: unknown): string | undefined {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
  return TYPES.find((type) => (value as Record<string, unknown>)[type] != null);
}

/** A copy of `tree` with each stand-in replaced by the value it stands for. */
function instantiate(
  tree: unknown,
  standIns: ReadonlyMap<object, string>,
  values: ParseContext['attrVals'],
): unknown {
  if (tree === null || typeof tree !== 'object') return tree;
  const key = standIns.get(tree);
  if (key !== undefined) return values![key];
  if (Array.isArray(tree)) {
    const copy = new Array(tree.length);
    for (let i = 0; i < tree.length; i++) copy[i] = instantiate(tree[i], standIns, values);
    return copy;
  }
  const out: Record<string, unknown> = {};
  // The parsers build plain objects: no inherited members to skip.
  for (const name in tree) out[name] = instantiate((tree as Record<string, unknown>)[name], standIns, values);
  return out;
}

/** `parser.parse` with the parses of its shapes kept (see above). */
export function cachingParse(parser: Parser): Parser['parse'] {
  const original = parser.parse.bind(parser);
  const shapes = new Map<string, Parsed>();
  return (input, options) => {
    const context = options.context;
    const values = context.attrVals ?? {};
    const valueKeys = Object.keys(values).sort();
    const types = valueKeys.map((key) => typeOf(values[key]));
    if (READS_VALUES.test(input) || types.includes(undefined)) return original(input, options);
    const shape = JSON.stringify([
      input,
      context.isKeyCondition === true,
      context.attrNames ?? null,
      valueKeys.map((key, i) => `${key}:${types[i]}`),
    ]);
    let parsed = shapes.get(shape);
    if (parsed === undefined) {
      const standIns = new Map<object, string>();
      const standInValues: Record<string, Record<string, unknown>> = {};
      valueKeys.forEach((key, i) => {
        const type = types[i] as (typeof TYPES)[number];
        const standIn = { [type]: structuredClone(SAMPLE[type]) };
        standIns.set(standIn, key);
        standInValues[key] = standIn;
      });
      const unusedNames = Object.fromEntries(Object.keys(context.attrNames ?? {}).map((k) => [k, true]));
      const unusedValues = Object.fromEntries(valueKeys.map((k) => [k, true]));
      let tree: unknown;
      try {
        tree = original(input, {
          context: {
            ...context,
            attrVals: standInValues,
            unusedAttrNames: unusedNames,
            unusedAttrVals: unusedValues,
          },
        });
      } catch {
        tree = undefined;
      }
      // A refusal (an error string, a syntax error) is the parse's to give, with the real values.
      if (tree === undefined || typeof tree === 'string') return original(input, options);
      parsed = {
        tree,
        standIns,
        usedNames: Object.keys(context.attrNames ?? {}).filter((k) => !(k in unusedNames)),
        usedValues: valueKeys.filter((k) => !(k in unusedValues)),
      };
      if (shapes.size >= SHAPES_KEPT) shapes.clear();
      shapes.set(shape, parsed);
    }
    for (const name of parsed.usedNames) delete context.unusedAttrNames?.[name];
    for (const key of parsed.usedValues) delete context.unusedAttrVals?.[key];
    return instantiate(parsed.tree, parsed.standIns, values);
  };
}

let installed = false;

/**
 * Makes dynalite's update, condition and projection parsers keep their parses (once per process): the
 * modules its validations call `parse` on, so every dynalite of the process uses the cached parses.
 */
export function cacheDynaliteParses(): void {
  if (installed) return;
  installed = true;
  for (const parser of [updateParser, conditionParser, projectionParser] as Parser[]) {
    parser.parse = cachingParse(parser);
  }
}
