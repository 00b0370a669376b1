/**
 * Keeps secret values (http tool secrets, LLM API keys) out of everything stepthread stores or
 * prints. A secret can come back in another encoding than the one it was sent in: a server that
 * reflects a url re-encodes it (`a b/c` → `a+b%2Fc`), a JSON body escapes it, a header echo may
 * carry it base64-encoded (`Basic …`). A Redactor derives every such form of each secret once, when
 * the secret is added, and replaces any of them with `[REDACTED]` in text or JSON data.
 *
 * Forms derived per secret:
 * - raw;
 * - URL-encoded: encodeURIComponent, encodeURI, and form encoding (`+` for a space, as
 *   URLSearchParams and most server frameworks write it), each with upper- and lower-case hex;
 * - JSON-escaped: each of the above as it appears inside a JSON string, also with `\/` for `/`
 *   and with non-ASCII as `\uXXXX` (how PHP and Python escape by default), and escaped twice (JSON
 *   text kept inside a JSON string);
 * - base64 and base64url: the run of characters a secret always encodes to, at each of the three
 *   alignments it can have inside a longer encoded value (e.g. `user:secret` in Basic auth).
 *
 * Text with escapes in it is then decoded (decoded.ts: percent escapes of any character in either
 * case, `+` as a space, `\uXXXX` and other JSON and JavaScript escapes, HTML character references, up
 * to three layers, base64 wrapped over lines joined) and the span of the original that decodes to a
 * form is redacted too, however its characters were escaped.
 *
 * What no redactor can catch: a secret split over two values (two replies of a model, two fields of
 * a response) or transformed beyond encoding (reversed, hashed, spelled out). Secrets belong in
 * headers and urls a tool sends, never in anything a model sees.
 */
import { decodedReadings } from './decoded.ts';

export const REDACTED = '[REDACTED]';

/** What any escape or wrapped line starts with: text without them has no other reading. */
const ESCAPE_SIGNS = /[%&\\+\n]/;

/** Base64 runs shorter than this are not matched: they would match unrelated text too often. */
const MIN_BASE64_RUN = 8;

export class Redactor {
  readonly #secrets = new Set<string>();
  /** Every form of every secret, longest first so a secret containing another is replaced whole. */
  #forms: string[] = [];
  /**
   * What is looked for in decoded text: each secret and its base64 runs. Each layer of escapes is
   * decoded and read in turn, so the url and JSON forms are found as the secret at the layer below.
   */
  #decodedForms: string[] = [];
  /** Whether a secret has a space (form encoding writes it `+`). */
  #spaced = false;

  constructor(secrets: Iterable<string | undefined> = []) {
    for (const secret of secrets) this.add(secret);
  }

  /** Adds a secret (and derives its forms); empty and undefined values are ignored. */
  add(secret: string | undefined): this {
    if (secret === undefined || secret === '' || this.#secrets.has(secret)) return this;
    this.#secrets.add(secret);
    const forms = new Set(this.#forms);
    for (const form of secretForms(secret)) forms.add(form);
    this.#forms = [...forms].sort((a, b) => b.length - a.length);
    this.#decodedForms = [...new Set([...this.#decodedForms, secret, ...base64Runs(secret)])];
    this.#spaced ||= secret.includes(' ');
    return this;
  }

  /** True when no secret was added (redaction would change nothing). */
  get empty(): boolean {
    return this.#secrets.size === 0;
  }

  /** The text with every form of every secret replaced, written plainly or escaped. */
  text(text: string): string {
    let out = text;
    for (const form of this.#forms) if (out.includes(form)) out = out.split(form).join(REDACTED);
    return ESCAPE_SIGNS.test(out) ? this.#redactDecoded(out) : out;
  }

  /** The text with each span that decodes to a form of a secret replaced. */
  #redactDecoded(text: string): string {
    const spans: [number, number][] = [];
    for (const reading of decodedReadings(text, this.#spaced)) {
      for (const form of this.#decodedForms) {
        for (
          let at = reading.text.indexOf(form);
          at >= 0;
          at = reading.text.indexOf(form, at + form.length)
        ) {
          spans.push([reading.starts[at]!, reading.ends[at + form.length - 1]!]);
        }
      }
    }
    if (spans.length === 0) return text;
    spans.sort((a, b) => a[0] - b[0] || b[1] - a[1]);
    let out = '';
    let from = 0;
    for (const [start, end] of spans) {
      if (end <= from) continue;
      // A span that overlaps the one before extends it.
      if (start >= from) out += text.slice(from, start) + REDACTED;
      from = end;
    }
    return out + text.slice(from);
  }

  /** A copy of JSON data with every string (object keys included) redacted. */
  value<T>(value: T): T {
    if (this.empty) return value;
    const visit = (item: unknown): unknown => {
      if (typeof item === 'string') return this.text(item);
      if (Array.isArray(item)) return item.map(visit);
      if (item !== null && typeof item === 'object') {
        // fromEntries defines own properties: a "__proto__" key stays a key.
        return Object.fromEntries(Object.entries(item).map(([key, entry]) => [this.text(key), visit(entry)]));
      }
      return item;
    };
    return visit(value) as T;
  }
}

/** Every form `secret` may take in stored or printed data (see the module comment). */
export function secretForms(secret: string): string[] {
  const urlForms = new Set<string>([secret]);
  for (const encoded of [encodeURIComponent(secret), encodeURI(secret), formEncode(secret)]) {
    urlForms.add(encoded);
    urlForms.add(encoded.replace(/%[0-9A-F]{2}/g, (hex) => hex.toLowerCase()));
  }
  const forms = new Set<string>();
  for (const form of urlForms) {
    forms.add(form);
    const json = JSON.stringify(form).slice(1, -1);
    forms.add(json);
    forms.add(json.replaceAll('/', '\\/'));
    const ascii = json.replace(
      /[^\x20-\x7e]/g,
      (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`,
    );
    forms.add(ascii);
    forms.add(ascii.replaceAll('/', '\\/'));
    // JSON text inside a JSON string (a tool's JSON reply kept as text, then stored as JSON).
    forms.add(JSON.stringify(json).slice(1, -1));
  }
  for (const run of base64Runs(secret)) forms.add(run);
  forms.delete('');
  return [...forms];
}

/**
 * Text bound for an error message or a log from an LLM provider: every form of the given secrets,
 * and anything shaped like a bearer token or an OpenAI-style key (servers echo a rejected key back,
 * sometimes masked as `sk-ab***yz`). Values shorter than 4 characters are not treated as secrets.
 */
export function redactErrorText(text: string, secrets: readonly (string | undefined)[] = []): string {
  const redactor = new Redactor(secrets.filter((secret) => secret !== undefined && secret.length >= 4));
  return redactor
    .text(text)
    .replace(/\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]+/gi, `$1 ${REDACTED}`)
    .replace(/\bsk-[A-Za-z0-9_*-]{6,}/g, REDACTED);
}

function formEncode(secret: string): string {
  return new URLSearchParams({ s: secret }).toString().slice(2);
}

/**
 * The base64 (and base64url) characters determined by the secret's bytes alone, at each alignment
 * (0, 1 or 2 bytes before it in its 3-byte group): whatever surrounds the secret, its encoding
 * contains one of these runs.
 */
function base64Runs(secret: string): string[] {
  const bytes = Buffer.from(secret, 'utf8');
  const runs: string[] = [];
  for (let offset = 0; offset < 3; offset++) {
    const padded = Buffer.concat([Buffer.alloc(offset), bytes]);
    const whole = Math.floor(padded.length / 3);
    // The first group holds `offset` foreign bytes unless offset is 0; a trailing partial group
    // depends on what follows the secret.
    const start = offset === 0 ? 0 : 4;
    const run = padded.toString('base64').slice(start, whole * 4);
    if (run.length < MIN_BASE64_RUN) continue;
    runs.push(run, run.replaceAll('+', '-').replaceAll('/', '_'));
  }
  // A secret encoded on its own ends with its final partial group and padding.
  const alone = bytes.toString('base64');
  if (alone.length >= MIN_BASE64_RUN) runs.push(alone, alone.replace(/=+$/, ''), bytes.toString('base64url'));
  return runs;
}
