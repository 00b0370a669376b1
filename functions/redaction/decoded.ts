/**
 * Text with its common escapes decoded, remembering where each decoded character came from, so a
 * secret found in the decoded text can be cut out of the original (redactor.ts). Servers and
 * libraries escape differently — Python's `quote`, Go's `QueryEscape` and PHP's `urlencode` encode
 * `!*'()` (and `~`) that `encodeURIComponent` leaves, any of them may write hex in either case, HTML
 * escapes as entities, JSON encoders as `\u0026` — so rather than derive every form of a secret, the
 * text is decoded and compared with the forms that are left.
 *
 * One layer decodes, wherever they stand: percent escapes (`%XX`, UTF-8, either case; `+` as a
 * space when asked), JavaScript and JSON escapes (`\uXXXX`, `\u{…}`, `\xXX`, `\/`, `\"`, `\n`, …) and
 * HTML character references (`&#39;`, `&#x27;`, `&quot;`, …). Layers stack (`%2527`, JSON inside
 * JSON). Unwrapping joins base64 broken over lines (MIME at 76 characters, PEM at 64).
 */

/** Decoded text; `starts[i]`/`ends[i]`: the original range the decoded unit `i` came from. */
export interface Decoded {
  readonly text: string;
  readonly starts: Int32Array;
  readonly ends: Int32Array;
}

export function undecoded(text: string): Decoded {
  const starts = new Int32Array(text.length);
  const ends = new Int32Array(text.length);
  for (let i = 0; i < text.length; i += 1) {
    starts[i] = i;
    ends[i] = i + 1;
  }
  return { text, starts, ends };
}

/**
 * Builds a Decoded from units, each mapped to a range of the text it was decoded from. Decoding never
 * lengthens a text, so the source's length bounds what is built.
 */
class Builder {
  readonly #units: Uint16Array;
  readonly #starts: Int32Array;
  readonly #ends: Int32Array;
  #length = 0;
  changed = false;

  constructor(private readonly from: Decoded) {
    const capacity = from.text.length;
    this.#units = new Uint16Array(capacity);
    this.#starts = new Int32Array(capacity);
    this.#ends = new Int32Array(capacity);
  }

  /** Units decoded from `from.text[start, end)`. */
  push(units: readonly number[], start: number, end: number): void {
    const origin = this.from.starts[start]!;
    const until = this.from.ends[end - 1]!;
    for (const unit of units) {
      this.#units[this.#length] = unit;
      this.#starts[this.#length] = origin;
      this.#ends[this.#length] = until;
      this.#length += 1;
    }
  }

  /** `from.text[index]` as it is. */
  keep(index: number): void {
    this.#units[this.#length] = this.from.text.charCodeAt(index);
    this.#starts[this.#length] = this.from.starts[index]!;
    this.#ends[this.#length] = this.from.ends[index]!;
    this.#length += 1;
  }

  build(): Decoded {
    let text = '';
    for (let i = 0; i < this.#length; i += 8192) {
      text += String.fromCharCode(...this.#units.subarray(i, Math.min(i + 8192, this.#length)));
    }
    return {
      text,
      starts: this.#starts.subarray(0, this.#length),
      ends: this.#ends.subarray(0, this.#length),
    };
  }
}

const HEX = /^[0-9a-fA-F]+$/;

/** Named references a server may write for ASCII punctuation (HTML's and XML's). */
const NAMED: Readonly<Record<string, string>> = {
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  apos: "'",
  nbsp: '\u00a0',
  excl: '!',
  num: '#',
  dollar: '$',
  percnt: '%',
  lpar: '(',
  rpar: ')',
  ast: '*',
  plus: '+',
  comma: ',',
  period: '.',
  sol: '/',
  colon: ':',
  semi: ';',
  equals: '=',
  quest: '?',
  commat: '@',
  lsqb: '[',
  bsol: '\\',
  rsqb: ']',
  hat: '^',
  lowbar: '_',
  grave: '`',
  lcub: '{',
  verbar: '|',
  rcub: '}',
  tilde: '~',
};

const SIMPLE_ESCAPES: Readonly<Record<string, number>> = {
  '/': 0x2f,
  '\\': 0x5c,
  '"': 0x22,
  "'": 0x27,
  n: 0x0a,
  r: 0x0d,
  t: 0x09,
  b: 0x08,
  f: 0x0c,
};

/** The UTF-16 units of a code point, or undefined for none. */
function unitsOf(codePoint: number): number[] | undefined {
  if (!Number.isInteger(codePoint) || codePoint < 0 || codePoint > 0x10ffff) return undefined;
  if (codePoint < 0x10000) return [codePoint];
  const offset = codePoint - 0x10000;
  return [0xd800 + (offset >> 10), 0xdc00 + (offset & 0x3ff)];
}

/** The bytes of the run of `%XX` escapes at `index`, and where each starts. */
function percentRun(text: string, index: number): { bytes: number[]; at: number[] } {
  const bytes: number[] = [];
  const at: number[] = [];
  for (
    let i = index;
    i + 2 < text.length && text.charCodeAt(i) === 0x25 && HEX.test(text.slice(i + 1, i + 3));
    i += 3
  ) {
    bytes.push(Number.parseInt(text.slice(i + 1, i + 3), 16));
    at.push(i);
  }
  return { bytes, at };
}

/** Length of the UTF-8 sequence a lead byte starts (0: not a lead byte). */
function sequenceLength(lead: number): number {
  if (lead < 0x80) return 1;
  if (lead >= 0xc2 && lead <= 0xdf) return 2;
  if (lead >= 0xe0 && lead <= 0xef) return 3;
  if (lead >= 0xf0 && lead <= 0xf4) return 4;
  return 0;
}

/** Decodes a run of percent escapes as UTF-8; a byte that is no part of a character stays as written. */
function decodePercentRun(out: Builder, run: { bytes: number[]; at: number[] }): void {
  const { bytes, at } = run;
  for (let b = 0; b < bytes.length; ) {
    const length = sequenceLength(bytes[b]!);
    let codePoint = length === 1 ? bytes[b]! : bytes[b]! & (0xff >> (length + 1));
    let valid = length > 0 && b + length <= bytes.length;
    for (let k = 1; valid && k < length; k += 1) {
      const next = bytes[b + k]!;
      if ((next & 0xc0) !== 0x80) valid = false;
      codePoint = (codePoint << 6) | (next & 0x3f);
    }
    const units = valid ? unitsOf(codePoint) : undefined;
    if (units === undefined) {
      for (let i = at[b]!; i < at[b]! + 3; i += 1) out.keep(i);
      b += 1;
      continue;
    }
    out.push(units, at[b]!, at[b + length - 1]! + 3);
    out.changed = true;
    b += length;
  }
}

/** A `\` escape at `index`: its units and length, or undefined when it is none. */
function backslashEscape(text: string, index: number): { units: number[]; length: number } | undefined {
  const kind = text[index + 1];
  if (kind === undefined) return undefined;
  if (kind === 'u' && text[index + 2] === '{') {
    // Looked for within the longest such escape (`\u{10FFFF}`), so a long text is read once.
    const close = text.slice(index, index + 10).indexOf('}', 3);
    const hex = close < 0 ? '' : text.slice(index + 3, index + close);
    const units = hex.length > 0 && HEX.test(hex) ? unitsOf(Number.parseInt(hex, 16)) : undefined;
    return units && { units, length: close + 1 };
  }
  if (kind === 'u' || kind === 'x') {
    const digits = kind === 'u' ? 4 : 2;
    const hex = text.slice(index + 2, index + 2 + digits);
    return hex.length === digits && HEX.test(hex)
      ? { units: [Number.parseInt(hex, 16)], length: 2 + digits }
      : undefined;
  }
  const unit = SIMPLE_ESCAPES[kind];
  return unit === undefined ? undefined : { units: [unit], length: 2 };
}

/** An HTML character reference at `index` (`&…;`): its units and length, or undefined. */
function characterReference(text: string, index: number): { units: number[]; length: number } | undefined {
  // Looked for within the longest reference known here, so a long text is read once.
  const end = text.slice(index, index + 12).indexOf(';', 2);
  if (end < 0) return undefined;
  const body = text.slice(index + 1, index + end);
  let units: number[] | undefined;
  if (/^#[0-9]{1,7}$/.test(body)) units = unitsOf(Number.parseInt(body.slice(1), 10));
  else if (/^#[xX][0-9a-fA-F]{1,6}$/.test(body)) units = unitsOf(Number.parseInt(body.slice(2), 16));
  else if (Object.hasOwn(NAMED, body)) units = [NAMED[body]!.charCodeAt(0)];
  return units && { units, length: end + 1 };
}

/** One layer of escapes decoded, or undefined when the text has none. */
export function decodeLayer(from: Decoded, plusIsSpace: boolean): Decoded | undefined {
  const { text } = from;
  const out = new Builder(from);
  for (let i = 0; i < text.length; ) {
    const unit = text.charCodeAt(i);
    if (unit === 0x25) {
      const run = percentRun(text, i);
      if (run.bytes.length > 0) {
        decodePercentRun(out, run);
        i = run.at.at(-1)! + 3;
        continue;
      }
    } else if (unit === 0x2b && plusIsSpace) {
      out.push([0x20], i, i + 1);
      out.changed = true;
      i += 1;
      continue;
    } else if (unit === 0x5c || unit === 0x26) {
      const escaped = unit === 0x5c ? backslashEscape(text, i) : characterReference(text, i);
      if (escaped !== undefined) {
        out.push(escaped.units, i, i + escaped.length);
        out.changed = true;
        i += escaped.length;
        continue;
      }
    }
    out.keep(i);
    i += 1;
  }
  return out.changed ? out.build() : undefined;
}

const BASE64_UNIT = /[A-Za-z0-9+/=_-]/;

function isBlank(unit: string | undefined): boolean {
  return unit === ' ' || unit === '\t' || unit === '\r' || unit === '\n';
}

/**
 * The text with line breaks (and the spaces around them) removed where base64 or base64url
 * characters stand on both sides, or undefined when there are none.
 */
export function unwrapped(from: Decoded): Decoded | undefined {
  const { text } = from;
  if (!text.includes('\n')) return undefined;
  const out = new Builder(from);
  for (let i = 0; i < text.length; ) {
    if (!isBlank(text[i])) {
      out.keep(i);
      i += 1;
      continue;
    }
    let end = i;
    while (isBlank(text[end])) end += 1;
    const lineBreak = text.slice(i, end).includes('\n');
    if (lineBreak && i > 0 && BASE64_UNIT.test(text[i - 1]!) && BASE64_UNIT.test(text[end] ?? '')) {
      out.changed = true;
    } else {
      for (let k = i; k < end; k += 1) out.keep(k);
    }
    i = end;
  }
  return out.changed ? out.build() : undefined;
}

/** How many layers are decoded at most (a value escaped in JSON inside JSON inside a url: three). */
const MAX_LAYERS = 3;

/** Whether a text holds anything `decodeLayer` decodes (`+` aside). */
const ANY_ESCAPE = /%[0-9a-fA-F]{2}|\\(?:[ux/\\"'nrtbf])|&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[a-z]{2,6});/;

/**
 * The decoded readings of `text` to look for secrets in: each layer of escapes decoded, each also
 * with wrapped base64 joined. With `plusIsSpace` (a secret has a space, which form encoding writes as
 * `+`) the layers are decoded a second time reading `+` as a space.
 */
export function decodedReadings(text: string, plusIsSpace = false): Decoded[] {
  const readings: Decoded[] = [];
  const plain = undecoded(text);
  const joined = unwrapped(plain);
  if (joined) readings.push(joined);
  const escaped = ANY_ESCAPE.test(text);
  const plus = plusIsSpace && text.includes('+');
  if (!escaped && !plus) return readings;
  for (const asSpace of plus ? [false, true] : [false]) {
    let current = plain;
    for (let layer = 0; layer < MAX_LAYERS; layer += 1) {
      if (!ANY_ESCAPE.test(current.text) && !(asSpace && current.text.includes('+'))) break;
      const next = decodeLayer(current, asSpace);
      if (next === undefined) break;
      readings.push(next);
      const nextJoined = unwrapped(next);
      if (nextJoined) readings.push(nextJoined);
      current = next;
    }
  }
  return readings;
}
