/**
 * A TOOL node's `arguments` checked against its tool's `parameters` where they are written out:
 * a required argument left out, an argument the schema does not allow, or a literal value (or a
 * lone `{{ }}` whose type is fixed, such as `{{ len(x) }}`) of a type its property refuses would
 * fail every call with TOOL_ARGUMENTS_INVALID, so `validate` reports them. Only the top level and
 * the `type`, `required`, `properties` and `additionalProperties` keywords are read; the tool's
 * full JSON Schema check still runs before every call (functions/tools/arguments.ts).
 */
import { staticTypeOfSource, type ValueType } from '../expression/index.ts';
import { hasTemplate, isWholeTemplate } from '../expression/template-syntax.ts';
import { isRecord } from '../model/paths.ts';

/** JSON Schema's type names, as the types a value of that name can be. */
const SCHEMA_TYPES: Record<string, readonly ValueType[]> = {
  string: ['string'],
  number: ['number'],
  integer: ['number'],
  boolean: ['boolean'],
  array: ['array'],
  object: ['object'],
  null: ['null'],
};

function schemaTypes(schema: unknown): Set<ValueType> | undefined {
  if (!isRecord(schema)) return undefined;
  const names = typeof schema.type === 'string' ? [schema.type] : schema.type;
  if (!Array.isArray(names) || !names.every((name) => typeof name === 'string' && name in SCHEMA_TYPES)) {
    return undefined;
  }
  return new Set(names.flatMap((name) => SCHEMA_TYPES[name as string] ?? []));
}

/** The types an argument's value can have; undefined when a template makes it a run-time matter. */
function argumentTypes(value: unknown): ReadonlySet<ValueType> | undefined {
  if (typeof value === 'string') {
    if (!hasTemplate(value)) return new Set(['string']);
    if (!isWholeTemplate(value)) return new Set(['string']); // text around a template renders as text
    const known = staticTypeOfSource(value);
    return known === 'unknown' ? undefined : known;
  }
  if (value === null) return new Set(['null']);
  if (Array.isArray(value)) return new Set(['array']);
  if (typeof value === 'object') return new Set(['object']);
  return new Set([typeof value as ValueType]);
}

function describe(types: Iterable<string>): string {
  return [...types].join(' or ');
}

/** What is wrong with `args` for `parameters`, one sentence each; [] when nothing is certain. */
export function toolArgumentProblems(args: Record<string, unknown>, parameters: unknown): string[] {
  if (!isRecord(parameters)) return [];
  const problems: string[] = [];
  const properties = isRecord(parameters.properties) ? parameters.properties : {};
  if (Array.isArray(parameters.required)) {
    for (const name of parameters.required) {
      // ajv fills a property's `default` in (useDefaults) before `required` is checked.
      const hasDefault = isRecord(properties[name]) && Object.hasOwn(properties[name] as object, 'default');
      if (typeof name === 'string' && !Object.hasOwn(args, name) && !hasDefault) {
        problems.push(`argument "${name}" is required by the tool's parameters but not given`);
      }
    }
  }
  for (const [name, value] of Object.entries(args)) {
    if (!Object.hasOwn(properties, name)) {
      if (parameters.additionalProperties === false) {
        problems.push(
          `argument "${name}" is not among the tool's parameters (${
            Object.keys(properties)
              .map((key) => `"${key}"`)
              .join(', ') || 'none'
          })`,
        );
      }
      continue;
    }
    const accepted = schemaTypes(properties[name]);
    const given = argumentTypes(value);
    if (accepted === undefined || given === undefined) continue;
    if ([...given].some((type) => accepted.has(type))) continue;
    const wanted = [(properties[name] as { type: string | string[] }).type].flat();
    problems.push(
      `argument "${name}" is ${JSON.stringify(value)} (${describe(given)}), but the tool's parameters want ${describe(wanted)}`,
    );
  }
  return problems;
}
