/**
 * `{{ expression }}` templates in prompts, tool arguments, hook payloads and END output.
 * A string that is exactly one template yields the raw value (so `"{{items}}"` is the array);
 * otherwise each template is evaluated and interpolated as text.
 */
import { type CodedError, StepthreadError } from '../errors.ts';
import type { Expression } from './ast.ts';
import { charge, withBudget } from './budget.ts';
import { evaluateParsed, type Scope } from './evaluate.ts';
import { MAX_TEMPLATE_DEPTH } from './limits.ts';
import { parseExpression } from './parse.ts';
import { hasTemplate, splitTemplate, type TemplateSegment } from './template-syntax.ts';
import { checkStringLength, runtimeError, toText } from './values.ts';

function parseSegment(segment: Extract<TemplateSegment, { kind: 'expression' }>): Expression {
  try {
    return parseExpression(segment.source);
  } catch (error) {
    if (!(error instanceof StepthreadError)) throw error;
    throw new StepthreadError(
      'INVALID_EXPRESSION',
      `${error.message} (in the template at character ${segment.start})`,
      { cause: error },
    );
  }
}

/** Renders one string: the raw value for a lone `{{ expr }}`, else the interpolated text. */
function renderStringValue(template: string, scope: Scope): unknown {
  if (!hasTemplate(template)) return template;
  const segments = splitTemplate(template);
  const [only] = segments;
  if (segments.length === 1 && only?.kind === 'expression') return evaluateParsed(parseSegment(only), scope);
  return interpolate(segments, scope);
}

function interpolate(segments: readonly TemplateSegment[], scope: Scope): string {
  const parts: string[] = [];
  let length = 0;
  for (const segment of segments) {
    const text =
      segment.kind === 'text' ? segment.text : toText(evaluateParsed(parseSegment(segment), scope));
    length += text.length;
    checkStringLength(length, 'rendered template');
    charge(text.length);
    parts.push(text);
  }
  return parts.join('');
}

/** Interpolates every `{{ expr }}` in a string as text (null/undefined → "", objects → JSON). */
export function renderString(template: string, scope: Scope): string {
  if (!hasTemplate(template)) return template;
  return withBudget(() => interpolate(splitTemplate(template), scope));
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function render(value: unknown, scope: Scope, depth: number): unknown {
  if (typeof value === 'string') return renderStringValue(value, scope);
  if (typeof value !== 'object' || value === null) return value;
  if (depth >= MAX_TEMPLATE_DEPTH) {
    throw runtimeError(
      `template structure is nested deeper than ${MAX_TEMPLATE_DEPTH} levels (or is cyclic)`,
    );
  }
  if (Array.isArray(value)) return value.map((item) => render(item, scope, depth + 1));
  if (!isPlainObject(value)) return value;
  // fromEntries defines properties, so a "__proto__" key stays an own key and never sets a prototype.
  return Object.fromEntries(
    Object.entries(value).map(([key, item]) => [key, render(item, scope, depth + 1)]),
  );
}

/**
 * Renders templates deep inside arrays and plain objects; other values pass through unchanged.
 * Throws INVALID_EXPRESSION for a malformed template, EXPRESSION_ERROR when evaluation fails.
 */
/** Renders with one budget for the whole value (budget.ts). */
export function renderTemplate(value: unknown, scope: Scope): unknown {
  return withBudget(() => render(value, scope, 0));
}

function childPath(path: string, key: string | number): string {
  if (typeof key === 'number') return `${path}[${key}]`;
  const name = /^[A-Za-z_$][\w$]*$/.test(key) ? key : JSON.stringify(key);
  if (name !== key) return `${path}[${name}]`;
  return path === '' ? key : `${path}.${key}`;
}

function collectProblems(value: unknown, path: string, depth: number, problems: CodedError[]): void {
  const at = path === '' ? {} : { path };
  if (typeof value === 'string') {
    if (!hasTemplate(value)) return;
    try {
      for (const segment of splitTemplate(value)) if (segment.kind === 'expression') parseSegment(segment);
    } catch (error) {
      if (!(error instanceof StepthreadError)) throw error;
      problems.push({ ...error.toJSON(), ...at });
    }
    return;
  }
  if (typeof value !== 'object' || value === null) return;
  if (depth >= MAX_TEMPLATE_DEPTH) {
    problems.push({
      code: 'INVALID_EXPRESSION',
      message: `template structure is nested deeper than ${MAX_TEMPLATE_DEPTH} levels (or is cyclic)`,
      ...at,
    });
    return;
  }
  if (Array.isArray(value)) {
    value.forEach((item, index) => {
      collectProblems(item, childPath(path, index), depth + 1, problems);
    });
    return;
  }
  if (!isPlainObject(value)) return;
  for (const [key, item] of Object.entries(value))
    collectProblems(item, childPath(path, key), depth + 1, problems);
}

/**
 * Static check of every template in a value (deep), for workflow validation. `path` is the
 * location of `value` in the workflow file; problems carry the path of the offending string.
 */
export function validateTemplate(value: unknown, path = ''): CodedError[] {
  const problems: CodedError[] = [];
  collectProblems(value, path, 0, problems);
  return problems;
}
