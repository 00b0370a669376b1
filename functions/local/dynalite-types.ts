/**
 * dynalite's request type checks (its `checkTypes`), compiled once per request shape, on a request as
 * the client marshalled it (byte arrays as Uint8Array, members left undefined). dynalite walks
 * each request against its type descriptions afresh: for every attribute value it matches the type's
 * name against a regular expression and builds the AttributeValue description as a new object, then
 * looks for each of its ten members — the largest share of its CPU on the embedded runtime after the
 * parse cache (dynalite-parse-cache.ts). Here each description is compiled once into a checker that
 * takes the values it accepts as they are: strings as String, booleans as Boolean, finite numbers as
 * the number types, byte arrays (as base64) and canonical base64 as Blob, arrays as lists and plain
 * objects as maps and structures; it builds the same result as dynalite's checks of the request's JSON
 * form (wireForm), and so replaces making that form too: members in the order of the description,
 * unknown and undefined members left out, numbers of integer types floored, nulls as dynalite keeps
 * them, every object and array fresh. Anything else — a value dynalite converts (`"true"` as a
 * Boolean) or refuses — makes the request's JSON form go through dynalite's own `checkTypes`, so
 * conversions and refusals are its own, word for word.
 */
import validations from 'dynalite/validations/index.js';
import { wireForm } from '../aws/wire-http.ts';

/** A value the compiled checks do not take as it is: dynalite's checks decide. */
const UNCHECKED: unique symbol = Symbol('unchecked');
type Checked = unknown | typeof UNCHECKED;
type Check = (value: unknown) => Checked;

/** A type as dynalite's validations describe it: a name, or a name with its children's type. */
type TypeSpec = string | { readonly type?: string; readonly children?: unknown };

/** The members of an AttributeValue, as dynalite checks them. */
const ATTRIBUTE_VALUE: Record<string, TypeSpec> = {
  S: 'String',
  B: 'Blob',
  N: 'String',
  BOOL: 'Boolean',
  NULL: 'Boolean',
  BS: { type: 'List', children: 'Blob' },
  NS: { type: 'List', children: 'String' },
  SS: { type: 'List', children: 'String' },
  L: { type: 'List', children: 'AttrStruct<ValueStruct>' },
  M: { type: 'Map<AttributeValue>', children: 'AttrStruct<ValueStruct>' },
};

/** An object JSON renders member by member (not an array, a byte array, a Date, a Set …). */
function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const prototype = Object.getPrototypeOf(value);
  return (prototype === Object.prototype || prototype === null) && !('toJSON' in value);
}

/** JSON has no -0, NaN or infinities: those are dynalite's (as null, or its refusal). */
const isJsonNumber = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value);

/** By description: dynalite's module constants, and the few this module derives from them once. */
const compiled = new Map<TypeSpec, Check>();
const requestChecks = new Map<object, Check>();

/** The check of one type description (kept: descriptions are module constants of dynalite's). */
function checkOf(spec: TypeSpec): Check {
  let check = compiled.get(spec);
  if (check === undefined) {
    check = compile(spec);
    compiled.set(spec, check);
  }
  return check;
}

function compile(spec: TypeSpec): Check {
  let children = typeof spec === 'string' ? undefined : spec.children;
  if (typeof children === 'string') children = { type: children };
  const name = typeof spec === 'string' ? spec : (spec.type ?? '');
  const generic = /(.+?)<(.+)>$/.exec(name);
  const type = generic ? generic[1] : name;
  const subtype = generic?.[2];
  if (type === 'AttrStruct')
    return checkOf({ type: `${subtype}<AttributeValue>`, children: ATTRIBUTE_VALUE });
  switch (type) {
    case 'String':
      return (value) => (typeof value === 'string' ? value : UNCHECKED);
    case 'Boolean':
      return (value) => (typeof value === 'boolean' ? value : UNCHECKED);
    case 'Short':
    case 'Integer':
    case 'Long':
      return (value) => (isJsonNumber(value) ? Math.floor(value) + 0 : UNCHECKED);
    case 'Double':
      return (value) => (isJsonNumber(value) ? value + 0 : UNCHECKED);
    case 'Blob':
      return (value) => {
        if (value instanceof Uint8Array)
          return Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64');
        return typeof value === 'string' &&
          value.length % 4 === 0 &&
          Buffer.from(value, 'base64').toString('base64') === value
          ? value
          : UNCHECKED;
      };
    case 'List':
    case 'ParameterizedList':
      return listCheck(children as TypeSpec | undefined);
    case 'Map':
    case 'ParameterizedMap':
      return mapCheck(children as TypeSpec | undefined);
    case 'ValueStruct':
    case 'FieldStruct':
      return isPlainObject(children) ? structCheck(children as Record<string, TypeSpec>) : () => UNCHECKED;
    default:
      return () => UNCHECKED;
  }
}

function listCheck(children: TypeSpec | undefined): Check {
  if (children === undefined) return () => UNCHECKED;
  const child = checkOf(children);
  return (value) => {
    if (!Array.isArray(value)) return UNCHECKED;
    const out: unknown[] = new Array(value.length);
    for (let i = 0; i < value.length; i++) {
      const item = value[i];
      // JSON writes an undefined element as null.
      const checked = item == null ? null : child(item);
      if (checked === UNCHECKED) return UNCHECKED;
      out[i] = checked;
    }
    return out;
  };
}

function mapCheck(children: TypeSpec | undefined): Check {
  if (children === undefined) return () => UNCHECKED;
  const child = checkOf(children);
  return (value) => {
    if (!isPlainObject(value)) return UNCHECKED;
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value)) {
      // dynalite assigns each key as it comes; one named __proto__ is its business.
      if (key === '__proto__') return UNCHECKED;
      const item = value[key];
      // JSON leaves an undefined member out, and keeps a null one.
      if (item === undefined) continue;
      const checked = item === null ? null : child(item);
      if (checked === UNCHECKED) return UNCHECKED;
      out[key] = checked;
    }
    return out;
  };
}

/**
 * Members in the description's order; members it does not name, and nulls, left out. Its members'
 * checks are compiled at its first use: AttributeValue's L and M hold AttributeValues.
 */
function structCheck(members: Record<string, TypeSpec>): Check {
  const names = Object.keys(members);
  let checks: Check[] | undefined;
  return (value) => {
    if (!isPlainObject(value)) return UNCHECKED;
    checks ??= names.map((name) => checkOf(members[name] as TypeSpec));
    const out: Record<string, unknown> = {};
    for (let i = 0; i < names.length; i++) {
      const name = names[i] as string;
      const item = value[name];
      if (item == null) continue;
      const checked = (checks[i] as Check)(item);
      if (checked === UNCHECKED) return UNCHECKED;
      if (checked != null) out[name] = checked;
    }
    return out;
  };
}

/**
 * A request's members checked as dynalite's `checkTypes(wireForm(input), types)` checks them, with the
 * same result; `input` is left as it is.
 */
export function checkRequestTypes(input: Record<string, unknown>, types: object): Record<string, unknown> {
  let check = requestChecks.get(types);
  if (check === undefined) {
    check = structCheck(types as Record<string, TypeSpec>);
    requestChecks.set(types, check);
  }
  const checked = check(input);
  return checked === UNCHECKED
    ? validations.checkTypes(wireForm(input) as Record<string, unknown>, types)
    : (checked as Record<string, unknown>);
}
