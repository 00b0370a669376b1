import { describe, expect, it } from 'vitest';
import { REDACTED, Redactor, secretForms } from '../../../functions/redaction/redactor.ts';

/** The example: a secret with spaces, a slash, an equals sign, a quote and a non-ASCII letter. */
const SECRET = 'abc /="SECRET789" xé';

/** Every way a server or a store might write the secret back. */
function encodings(secret: string): Record<string, string> {
  const form = new URLSearchParams({ s: secret }).toString().slice(2);
  const basic = Buffer.from(`user:${secret}`).toString('base64');
  return {
    raw: secret,
    component: encodeURIComponent(secret),
    componentLower: encodeURIComponent(secret).replace(/%[0-9A-F]{2}/g, (h) => h.toLowerCase()),
    uri: encodeURI(secret),
    form,
    formLower: form.replace(/%[0-9A-F]{2}/g, (h) => h.toLowerCase()),
    json: JSON.stringify(secret).slice(1, -1),
    jsonInJson: JSON.stringify(JSON.stringify(secret)).slice(1, -1),
    jsonSlashes: JSON.stringify(secret).slice(1, -1).replaceAll('/', '\\/'),
    jsonAscii: JSON.stringify(secret).slice(1, -1).replace('é', '\\u00e9'),
    jsonOfForm: JSON.stringify(form).slice(1, -1),
    base64: Buffer.from(secret).toString('base64'),
    base64url: Buffer.from(secret).toString('base64url'),
    basicAuth: basic,
    basicAuthOffset: Buffer.from(`u:${secret}!`).toString('base64'),
    basicAuthOffset2: Buffer.from(`us:${secret}!!`).toString('base64url'),
  };
}

describe('Redactor', () => {
  it('replaces every encoding of a secret inside longer text, leaving no copy of it', () => {
    const redactor = new Redactor([SECRET]);
    for (const [name, encoded] of Object.entries(encodings(SECRET))) {
      const out = redactor.text(`before ${encoded} after`);
      expect(out, name).toContain(REDACTED);
      // What is left carries none of the secret's distinctive part, in any encoding.
      expect(out, name).not.toContain('SECRET789');
      const decoded = [out, decodeURIComponentSafe(out.replaceAll('+', ' '))];
      for (const base64 of out.match(/[A-Za-z0-9+/_-]{12,}/g) ?? [])
        decoded.push(Buffer.from(base64, 'base64').toString('latin1'));
      for (const text of decoded) expect(text, name).not.toContain('SECRET789');
    }
  });

  it('redacts JSON data deeply, keys included, and leaves other values alone', () => {
    const redactor = new Redactor([SECRET, undefined, '']);
    const value = { [SECRET]: [encodeURIComponent(SECRET), 3, null, { ok: 'plain' }] };
    expect(redactor.value(value)).toEqual({ [REDACTED]: [REDACTED, 3, null, { ok: 'plain' }] });
    expect(new Redactor().value(value)).toBe(value);
  });

  it('derives the forms once per secret and replaces the longest first', () => {
    const redactor = new Redactor(['token-123', 'token-12345']).add('token-123');
    expect(redactor.text('a token-12345 b token-123')).toBe(`a ${REDACTED} b ${REDACTED}`);
    expect(new Set(secretForms(SECRET)).size).toBe(secretForms(SECRET).length);
  });
});

/** A secret with every character some encoder escapes and encodeURIComponent does not. */
const PUNCTUATED = `k3y!*'()~ & <x> "q"/é+z`;

/** Each way a server in another language might write the secret back (issue 31 item 5). */
function otherEncoders(secret: string): Record<string, string> {
  const bytes = [...Buffer.from(secret, 'utf8')];
  const hex = (byte: number) => byte.toString(16).padStart(2, '0');
  const unreserved = (byte: number) => /[A-Za-z0-9_.-]/.test(String.fromCharCode(byte));
  const percent = (keep: (byte: number) => boolean, upper: boolean, plus = false) =>
    bytes
      .map((byte) =>
        plus && byte === 0x20
          ? '+'
          : keep(byte)
            ? String.fromCharCode(byte)
            : `%${upper ? hex(byte).toUpperCase() : hex(byte)}`,
      )
      .join('');
  const units = [...secret].flatMap((ch) => [...ch].map((unit) => unit.charCodeAt(0)));
  const html = (ch: string) =>
    ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#x27;' })[ch] ?? ch;
  const base64 = Buffer.from(`user:${secret}`).toString('base64');
  return {
    // Python quote(s, safe=''): ~ kept since 3.7, !*'() escaped.
    python: percent((byte) => unreserved(byte) || byte === 0x7e, true),
    // Go url.QueryEscape: space as +, ~ kept, !*'() escaped.
    go: percent((byte) => unreserved(byte) || byte === 0x7e, true, true),
    // PHP urlencode: space as +, ~ escaped too.
    php: percent(unreserved, true, true),
    // Every byte escaped, hex case alternating.
    mixedCase: bytes.map((byte, i) => `%${i % 2 ? hex(byte) : hex(byte).toUpperCase()}`).join(''),
    htmlEscaped: [...secret].map(html).join(''),
    htmlDecimal: units.map((unit) => `&#${unit};`).join(''),
    htmlHex: units.map((unit) => `&#X${unit.toString(16)};`).join(''),
    // Go's encoding/json writes & < > as \u0026 \u003c \u003e, inside any text.
    goJson: JSON.stringify(secret)
      .slice(1, -1)
      .replace(/[&<>]/g, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`),
    unicodeEscapesUpper: units
      .map((unit) => `\\u${unit.toString(16).toUpperCase().padStart(4, '0')}`)
      .join(''),
    percentInJson: JSON.stringify(percent(unreserved, false)).slice(1, -1).replaceAll('%', '\\u0025'),
    percentTwice: percent(unreserved, true).replaceAll('%', '%25'),
    base64Wrapped: base64.replace(/(.{8})/g, '$1\r\n'),
    base64Mime: Buffer.from(`${'x'.repeat(70)}${secret}${'y'.repeat(70)}`)
      .toString('base64')
      .replace(/(.{76})/g, '$1\n'),
  };
}

describe('Redactor, after decoding', () => {
  it('replaces a secret escaped by other encoders, in any case, in layers or wrapped, leaving nothing of it', () => {
    const redactor = new Redactor([PUNCTUATED]);
    for (const [name, encoded] of Object.entries(otherEncoders(PUNCTUATED))) {
      // Encoded differently from every form derived from the secret.
      if (!name.startsWith('base64')) expect(secretForms(PUNCTUATED), name).not.toContain(encoded);
      const out = redactor.text(`before ${encoded} after`);
      expect(out, name).toContain(REDACTED);
      expect(out, name).toMatch(/^before /);
      expect(out, name).toMatch(/ after$/);
      expect(out.replace(/\s/g, ''), name).not.toContain('k3y');
      // Nothing decodes to it either.
      expect(new Redactor([PUNCTUATED]).text(out), name).toBe(out);
      for (const base64 of out.replace(/\s/g, '').match(/[A-Za-z0-9+/]{12,}/g) ?? []) {
        expect(Buffer.from(base64, 'base64').toString('latin1'), name).not.toContain('k3y');
      }
    }
  });

  it('redacts escaped secrets inside JSON data too, and leaves other escapes as they are', () => {
    const redactor = new Redactor([PUNCTUATED]);
    const { htmlEscaped, python, goJson } = otherEncoders(PUNCTUATED);
    const value = { page: `<p>${htmlEscaped}</p>`, url: `/x?k=${python}&n=%20`, [goJson as string]: 'v' };
    expect(redactor.value(value)).toEqual({
      page: `<p>${REDACTED}</p>`,
      url: `/x?k=${REDACTED}&n=%20`,
      [REDACTED]: 'v',
    });
    const innocent = 'a &amp; b %41 \\u0026 c+d\nQUJD';
    expect(redactor.text(innocent)).toBe(innocent);
  });
});

function decodeURIComponentSafe(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
