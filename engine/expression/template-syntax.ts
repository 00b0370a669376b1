/**
 * Splits a string into literal text and `{{ expression }}` segments. The closing `}}` is found
 * outside string literals, so `{{ "}}" }}` works.
 */
import { StepthreadError } from '../errors.ts';

export type TemplateSegment =
  | { readonly kind: 'text'; readonly text: string }
  /** `start` is the offset of `source` (the text between the braces) in the template. */
  | { readonly kind: 'expression'; readonly source: string; readonly start: number };

const OPEN = '{{';
const CLOSE = '}}';

export function hasTemplate(text: string): boolean {
  return text.includes(OPEN);
}

/** Index of the `}}` closing an expression that starts at `from`, or -1. */
function findClose(text: string, from: number): number {
  let i = from;
  while (i < text.length) {
    const ch = text[i];
    if (ch === '"' || ch === "'") {
      i += 1;
      while (i < text.length && text[i] !== ch) i += text[i] === '\\' ? 2 : 1;
      i += 1;
    } else if (text.startsWith(CLOSE, i)) {
      return i;
    } else {
      i += 1;
    }
  }
  return -1;
}

/**
 * True when the whole string (ignoring surrounding whitespace) is one `{{ expr }}` — the form
 * that renders to the raw value and that parseExpression accepts as the expression `expr`.
 * `"{{a}} + {{b}}"` is not: it has text between two templates.
 */
export function isWholeTemplate(text: string): boolean {
  const trimmed = text.trim();
  if (!trimmed.startsWith(OPEN)) return false;
  const close = findClose(trimmed, OPEN.length);
  return close === trimmed.length - CLOSE.length;
}

/** Throws INVALID_EXPRESSION for a `{{` without its `}}`. */
export function splitTemplate(text: string): TemplateSegment[] {
  const segments: TemplateSegment[] = [];
  let position = 0;
  while (position < text.length) {
    const open = text.indexOf(OPEN, position);
    if (open === -1) break;
    if (open > position) segments.push({ kind: 'text', text: text.slice(position, open) });
    const start = open + OPEN.length;
    const close = findClose(text, start);
    if (close === -1) {
      throw new StepthreadError(
        'INVALID_EXPRESSION',
        `Invalid template: "{{" at character ${open} has no closing "}}" (write {{ '{{' }} for a literal "{{")`,
      );
    }
    segments.push({ kind: 'expression', source: text.slice(start, close), start });
    position = close + CLOSE.length;
  }
  if (position < text.length) segments.push({ kind: 'text', text: text.slice(position) });
  return segments;
}

/** The expression sources of a template's `{{ }}` segments. Throws INVALID_EXPRESSION like splitTemplate. */
export function templateExpressionSources(text: string): string[] {
  return splitTemplate(text).flatMap((segment) => (segment.kind === 'expression' ? [segment.source] : []));
}
