/**
 * Strings as the language counts them: by character (Unicode code point), as a LOOP_START over a
 * string iterates them, so an emoji is one character and no function cuts a surrogate pair in half.
 * JavaScript strings count UTF-16 code units; these helpers translate.
 *
 * Most text has no surrogate at all, and a regular-expression search finds that at memory speed, so
 * such text keeps the code-unit fast path; walking a text that has them is charged to the evaluation's
 * budget by the characters walked.
 */
import { charge } from './budget.ts';

/** Walking a character takes about a quarter of a unit's time (10,000,000 units take ~0.4 s: bench/expressions.ts). */
const CHARACTERS_PER_UNIT = 4;

function chargeWalk(units: number): void {
  charge(Math.ceil(units / CHARACTERS_PER_UNIT));
}

const SURROGATE = /[\uD800-\uDFFF]/;

function isHigh(unit: number): boolean {
  return unit >= 0xd800 && unit <= 0xdbff;
}

function isLow(unit: number): boolean {
  return unit >= 0xdc00 && unit <= 0xdfff;
}

/** Index of the first surrogate code unit, or -1: before it, units and characters coincide. */
function firstSurrogate(text: string): number {
  return text.search(SURROGATE);
}

/** Whether a code-unit pair starts at `offset` (a lone surrogate counts as one character). */
function pairAt(text: string, offset: number): boolean {
  return isHigh(text.charCodeAt(offset)) && isLow(text.charCodeAt(offset + 1));
}

/** Number of characters (code points) in `text`. */
export function characterCount(text: string): number {
  const first = firstSurrogate(text);
  if (first < 0) return text.length;
  chargeWalk(text.length - first);
  let count = first;
  for (let offset = first; offset < text.length; offset += pairAt(text, offset) ? 2 : 1) count += 1;
  return count;
}

/**
 * The code-unit offset of character `index`, JavaScript `slice` style: a negative index counts from
 * the end, and the result is clamped to the text.
 */
function offsetOf(text: string, index: number, first: number): number {
  if (index >= 0) {
    if (index <= first) return index;
    let offset = first;
    let walked = first;
    while (walked < index && offset < text.length) {
      offset += pairAt(text, offset) ? 2 : 1;
      walked += 1;
    }
    chargeWalk(offset - first);
    return offset;
  }
  let offset = text.length;
  for (let walked = 0; walked < -index && offset > 0; walked += 1) {
    offset -= offset >= 2 && pairAt(text, offset - 2) ? 2 : 1;
  }
  chargeWalk(text.length - offset);
  return offset;
}

/** `text.slice(start, end)` counted in characters. */
export function sliceCharacters(text: string, start: number, end?: number): string {
  const first = firstSurrogate(text);
  if (first < 0) return text.slice(start, end);
  const from = offsetOf(text, start, first);
  const to = end === undefined ? text.length : offsetOf(text, end, first);
  return to > from ? text.slice(from, to) : '';
}

/** Character `index` of `text` (a whole code point), or undefined past its end. */
export function characterAt(text: string, index: number): string | undefined {
  const first = firstSurrogate(text);
  if (first < 0 || index < first) return index < text.length ? text[index] : undefined;
  const offset = offsetOf(text, index, first);
  if (offset >= text.length) return undefined;
  return text.slice(offset, pairAt(text, offset) ? offset + 2 : offset + 1);
}

/**
 * Whether a match of `needle` could cut a character in half (it starts with a low surrogate or ends
 * with a high one), so each match must be checked for the pair around it.
 */
function mayCutPair(needle: string): boolean {
  return needle !== '' && (isLow(needle.charCodeAt(0)) || isHigh(needle.charCodeAt(needle.length - 1)));
}

/**
 * Past this many code units a needle is searched for here, not natively: V8's Boyer-Moore tables
 * cover a needle's last 250 units only and compare the rest one position at a time, so a crafted
 * 2,000-character query took seconds per call over a few MB (bench/expressions.ts).
 */
const NATIVE_NEEDLE_UNITS = 250;

/**
 * Code-unit offsets of the leftmost non-overlapping matches of `needle` (not empty) in `text` that
 * cut no pair, at most `limit`: Knuth-Morris-Pratt, so time grows with the two lengths added, never
 * multiplied, whatever the texts (a lone-surrogate needle over lone surrogates included).
 */
function wholeMatches(text: string, needle: string, limit: number): number[] {
  const m = needle.length;
  const fallback = new Int32Array(m);
  for (let i = 1, k = 0; i < m; i += 1) {
    const unit = needle.charCodeAt(i);
    while (k > 0 && needle.charCodeAt(k) !== unit) k = fallback[k - 1]!;
    if (needle.charCodeAt(k) === unit) k += 1;
    fallback[i] = k;
  }
  const startsLow = isLow(needle.charCodeAt(0));
  const endsHigh = isHigh(needle.charCodeAt(m - 1));
  const offsets: number[] = [];
  for (let i = 0, k = 0; i < text.length && offsets.length < limit; i += 1) {
    const unit = text.charCodeAt(i);
    while (k > 0 && needle.charCodeAt(k) !== unit) k = fallback[k - 1]!;
    if (needle.charCodeAt(k) === unit) k += 1;
    if (k < m) continue;
    const start = i - m + 1;
    const cuts =
      (startsLow && start > 0 && isHigh(text.charCodeAt(start - 1))) ||
      (endsHigh && isLow(text.charCodeAt(i + 1)));
    if (cuts) {
      k = fallback[m - 1]!;
    } else {
      offsets.push(start);
      k = 0;
    }
  }
  return offsets;
}

/** Whether the native search is both right (no pair to check) and linear (a short needle). */
function nativeSearch(needle: string): boolean {
  return needle.length <= NATIVE_NEEDLE_UNITS && !mayCutPair(needle);
}

/** `text.split(separator, limit)` on whole characters (an empty separator splits into characters). */
export function splitCharacters(text: string, separator: string, limit?: number): string[] {
  if (separator === '') return Array.from(text).slice(0, limit);
  if (nativeSearch(separator)) return text.split(separator, limit);
  const parts: string[] = [];
  let from = 0;
  for (const offset of wholeMatches(text, separator, limit ?? Number.POSITIVE_INFINITY)) {
    parts.push(text.slice(from, offset));
    from = offset + separator.length;
  }
  parts.push(text.slice(from));
  return parts.slice(0, limit);
}

/** Whether `needle` occurs in `text` on whole characters. */
export function containsCharacters(text: string, needle: string): boolean {
  if (nativeSearch(needle)) return text.includes(needle);
  return needle.length <= text.length && wholeMatches(text, needle, 1).length > 0;
}

/** Whether `text` starts with `prefix`, which may not end inside one of its characters. */
export function startsWithCharacters(text: string, prefix: string): boolean {
  if (!text.startsWith(prefix)) return false;
  return prefix === '' || !pairAt(text, prefix.length - 1);
}

/** Whether `text` ends with `suffix`, which may not begin inside one of its characters. */
export function endsWithCharacters(text: string, suffix: string): boolean {
  if (!text.endsWith(suffix)) return false;
  const start = text.length - suffix.length;
  return suffix === '' || start === 0 || !pairAt(text, start - 1);
}
